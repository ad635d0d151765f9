"""``round-robin``: one next hop per Interest, each in turn.

Blind to route cost, round-trip time and load: the k-th new Interest under
a prefix goes to eligible next hop ``k mod n`` (per strategy instance, so
per forwarder).  For producers known to be equivalent when nothing else is
known, and the capacity-blind even split that `bench/anycast.py` compares
load-aware anycast with.  Retransmissions and Nacks are handled as by
best-route (an untried hop next; the least severe reason downstream when
every hop has Nacked).
"""

from __future__ import annotations

from icnd.core.fw.best_route import BestRoute
from icnd.core.fw.strategy import StrategyHost
from icnd.core.tables.fib import FibEntry
from icnd.core.tables.pit import PitEntry
from icnd.packet import Interest, NackReason


class RoundRobin(BestRoute):
    name = "round-robin"
    sends_new_to_cheapest = False

    def __init__(self) -> None:
        self._turn = 0

    def after_receive_interest(
        self, fw: StrategyHost, entry: PitEntry, in_face: int, interest: Interest,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        if entry.out_records:  # a retransmission: as best-route
            super().after_receive_interest(fw, entry, in_face, interest, fib_entry, now)
            return
        hops = fw.eligible_nexthops(entry, in_face, fib_entry)
        if not hops:
            fw.reject(entry, NackReason.NO_ROUTE, now)
            return
        self._turn += 1
        fw.send_interest(entry, hops[self._turn % len(hops)], interest, now)
