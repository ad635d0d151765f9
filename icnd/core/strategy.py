"""Forwarding strategies and the per-prefix strategy choice.

A strategy decides where a pending Interest goes; it acts only through the
forwarder's `send_interest` and `reject` so every send is counted and leaves
an out-record.  Strategies keep no per-entry state of their own: everything
they need is in the PIT entry's out-records.

- ``best-route``: the cheapest eligible next hop.  A retransmission (a new
  nonce from downstream after the suppression interval) goes to the cheapest
  hop not tried yet, else to the one tried longest ago.  A Nack makes it try
  the next cheapest untried hop; when every hop has Nacked, the least severe
  reason goes downstream.
- ``multicast``: every eligible next hop at once; Nacks go downstream when
  all upstreams have Nacked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..name import Name
from ..packet import NACK_SEVERITY, Interest, Nack, NackReason
from .fib import FibEntry, TableFull
from .pit import PitEntry

if TYPE_CHECKING:
    from .forwarder import Forwarder


class Strategy:
    name = "abstract"

    def after_receive_interest(
        self, fw: "Forwarder", entry: PitEntry, in_face: int, interest: Interest,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        raise NotImplementedError

    def after_receive_nack(
        self, fw: "Forwarder", entry: PitEntry, in_face: int, nack: Nack,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        if entry.all_out_nacked():
            fw.reject(entry, least_severe(entry), now)


def least_severe(entry: PitEntry) -> NackReason:
    reasons = [o.nacked for o in entry.out_records.values() if o.nacked is not None]
    return min(reasons, key=NACK_SEVERITY.__getitem__) if reasons else NackReason.NO_ROUTE


class BestRoute(Strategy):
    name = "best-route"

    def after_receive_interest(self, fw, entry, in_face, interest, fib_entry, now):
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

    def after_receive_nack(self, fw, entry, in_face, nack, fib_entry, now):
        outs = entry.out_records
        pending = any(o.nacked is None and o.expiry > now for o in outs.values())
        if not pending:
            for face in fw.eligible_nexthops(entry, None, fib_entry):
                if face not in outs and face not in entry.in_records:
                    record = max(entry.in_records.values(), key=lambda r: r.expiry)
                    fw.send_interest(entry, face, record.interest, now)
                    return
        if entry.all_out_nacked():
            fw.reject(entry, least_severe(entry), now)


class Multicast(Strategy):
    name = "multicast"

    def after_receive_interest(self, fw, entry, in_face, interest, fib_entry, now):
        hops = fw.eligible_nexthops(entry, in_face, fib_entry)
        if not hops:
            fw.reject(entry, NackReason.NO_ROUTE, now)
            return
        for face in hops:
            fw.send_interest(entry, face, interest, now)


STRATEGIES: dict[str, type[Strategy]] = {s.name: s for s in (BestRoute, Multicast)}


class StrategyChoice:
    """Prefix -> strategy, longest match wins; the root always has one.

    Invariant: at most ``max_entries`` choices; `set` of an unknown strategy
    name raises ValueError naming the known ones.
    """

    def __init__(self, default: str = "best-route", max_entries: int = 10_000) -> None:
        self.max_entries = max_entries
        self._instances: dict[str, Strategy] = {}
        self._choices: dict[tuple[bytes, ...], Strategy] = {(): self._instance(default)}

    def _instance(self, name: str) -> Strategy:
        inst = self._instances.get(name)
        if inst is None:
            cls = STRATEGIES.get(name)
            if cls is None:
                raise ValueError(f"unknown strategy {name!r}; known: {', '.join(sorted(STRATEGIES))}")
            inst = self._instances[name] = cls()
        return inst

    def set(self, prefix: Name, name: str) -> None:
        if prefix.comps not in self._choices and len(self._choices) >= self.max_entries:
            raise TableFull(f"strategy choice table is full ({self.max_entries})")
        self._choices[prefix.comps] = self._instance(name)

    def unset(self, prefix: Name) -> bool:
        if not prefix.comps:
            return False  # the root keeps its strategy
        return self._choices.pop(prefix.comps, None) is not None

    def find(self, comps: tuple[bytes, ...]) -> Strategy:
        choices = self._choices
        if len(choices) == 1:
            return choices[()]
        for n in range(len(comps), -1, -1):
            s = choices.get(comps[:n])
            if s is not None:
                return s
        raise AssertionError("root strategy missing")

    def items(self) -> list[tuple[Name, str]]:
        return sorted((Name.from_wire(k), s.name) for k, s in self._choices.items())
