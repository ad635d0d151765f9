"""Forwarding strategies: the base class every strategy derives from.

A strategy decides where a pending Interest goes; it acts only through the
forwarder's `send_interest` and `reject` so every send is counted and leaves
an out-record.  Strategies keep no per-entry state of their own: everything
they need about an Interest is in the PIT entry's out-records (load-balance
keeps per-next-hop measurements, bounded, beside them).

One file per strategy, next to this one: ``best_route.py`` (the default),
``multicast.py``, ``load_balance.py``.  Adding a strategy is adding a file
with a `Strategy` subclass and naming it in the table of known strategies
(`icnd.core.fw.strategy_choice.STRATEGIES`), which also maps prefixes to
strategies.

Traits.  The forwarder never asks which class a strategy is; it reads class
attributes:

- ``multipath``: the strategy may send one Interest to several next hops.
  A trigger Interest of reflexive forwarding must reach ONE host
  (`icnd.core.tables.reflexive`, rule 2), so under such a strategy it is
  forwarded by best-route instead.
- ``sends_new_to_cheapest``: for a new PIT entry (no out-record yet)
  `after_receive_interest` does exactly this: send to the cheapest eligible
  next hop, or reject *no-route* when there is none.  The forwarder then
  takes its composed fast path instead of the call (`Forwarder.
  fast_best_route`; a hypothesis test compares the two).  A subclass that
  changes `after_receive_interest` must set it False again.
- ``observes``: the strategy is also told when Data satisfies one of its
  entries (`after_receive_data`), when an entry expires unsatisfied
  (`on_interest_timeout`) and when a face goes down (`on_face_down`).  The
  forwarder checks one flag, `StrategyChoice.observed`, before looking
  anything up, so while no prefix uses an observing strategy the Data and
  expiry pipelines pay nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icnd.core.tables.fib import FibEntry
from icnd.core.tables.pit import PitEntry
from icnd.packet import NACK_SEVERITY, Interest, Nack, NackReason

if TYPE_CHECKING:
    from icnd.core.fw.forwarder import Forwarder


class Strategy:
    name = "abstract"
    multipath = False
    sends_new_to_cheapest = False
    observes = False

    def after_receive_interest(
        self, fw: Forwarder, entry: PitEntry, in_face: int, interest: Interest,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        raise NotImplementedError

    def after_receive_nack(
        self, fw: Forwarder, entry: PitEntry, in_face: int, nack: Nack,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        if entry.all_out_nacked():
            reject_with(fw, entry, nack, now)

    # --- observation hooks (called only when ``observes`` is True) ---------------
    def after_receive_data(self, fw: Forwarder, entry: PitEntry, face: int, now: float) -> None:
        """Data from `face` satisfied `entry` (which has an out-record on `face`)."""

    def on_interest_timeout(self, fw: Forwarder, entry: PitEntry, now: float) -> None:
        """`entry` expired unsatisfied (called before it is removed)."""

    def on_face_down(self, face: int) -> None:
        """`face` is gone: forget anything kept about it."""


def least_severe(entry: PitEntry) -> NackReason:
    reasons = [o.nacked for o in entry.out_records.values() if o.nacked is not None]
    return min(reasons, key=NACK_SEVERITY.__getitem__) if reasons else NackReason.NO_ROUTE


def reject_with(fw: Forwarder, entry: PitEntry, nack: Nack, now: float) -> None:
    """Nack `entry` downstream with the least severe reason upstream gave, and
    the detail of `nack` (the last one) when it is that reason."""
    reason = least_severe(entry)
    fw.reject(entry, reason, now, nack.detail if nack.reason == reason else "")
