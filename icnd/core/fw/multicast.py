"""``multicast``: every eligible next hop at once.

Nacks go downstream when all upstreams have Nacked (the base class's
`Strategy.after_receive_nack`).  It is the one multipath strategy: trigger
Interests under it go by best-route instead (``multipath``).
"""

from __future__ import annotations

from icnd.core.fw.strategy import Strategy, StrategyHost
from icnd.core.tables.fib import FibEntry
from icnd.core.tables.pit import PitEntry
from icnd.packet import Interest, NackReason


class Multicast(Strategy):
    name = "multicast"
    multipath = True

    def after_receive_interest(
        self, fw: StrategyHost, entry: PitEntry, in_face: int, interest: Interest,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        hops = fw.eligible_nexthops(entry, in_face, fib_entry)
        if not hops:
            fw.reject(entry, NackReason.NO_ROUTE, now)
            return
        for face in hops:
            fw.send_interest(entry, face, interest, now)
