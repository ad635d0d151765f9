"""``best-route``: the default strategy.

The cheapest eligible next hop.  A retransmission (a new nonce from
downstream after the suppression interval) goes to the cheapest hop not
tried yet, else to the one tried longest ago.  A Nack makes it try the next
cheapest untried hop; when every hop has Nacked, the least severe reason
goes downstream.

A new entry's first hop is what the forwarder's composed fast path computes
too (``sends_new_to_cheapest``); the other cases come here.
"""

from __future__ import annotations

from icnd.core.fw.strategy import Strategy, StrategyHost, reject_with
from icnd.core.tables.fib import FibEntry
from icnd.core.tables.pit import PitEntry
from icnd.packet import Interest, Nack, NackReason


class BestRoute(Strategy):
    name = "best-route"
    sends_new_to_cheapest = True

    def after_receive_interest(
        self, fw: StrategyHost, entry: PitEntry, in_face: int, interest: Interest,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        hops = fw.eligible_nexthops(entry, in_face, fib_entry)
        if not hops:
            fw.reject(entry, NackReason.NO_ROUTE, now)
            return
        outs = entry.out_records
        if not outs:
            fw.send_interest(entry, hops[0], interest, now)
            return
        choice = next((f for f in hops if f not in outs), None)
        if choice is None:  # all tried: the one tried longest ago
            choice = min(hops, key=lambda f: outs[f].sent_at)
        fw.send_interest(entry, choice, interest, now)

    def after_receive_nack(
        self, fw: StrategyHost, entry: PitEntry, in_face: int, nack: Nack,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        outs = entry.out_records
        pending = any(o.nacked is None and o.expiry > now for o in outs.values())
        if not pending:
            for face in fw.eligible_nexthops(entry, None, fib_entry):
                if face not in outs and face not in entry.in_records:
                    record = max(entry.in_records.values(), key=lambda r: r.expiry)
                    fw.send_interest(entry, face, record.interest, now)
                    return
        if entry.all_out_nacked():
            reject_with(fw, entry, nack, now)
