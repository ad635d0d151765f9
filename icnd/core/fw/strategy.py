"""Forwarding strategies: the base class every strategy derives from.

A strategy decides where a pending Interest goes; it acts only through the
forwarder's `send_interest` and `reject` so every send is counted and leaves
an out-record.  Strategies keep no per-entry state of their own: everything
they need about an Interest is in the PIT entry's out-records (load-balance
keeps per-next-hop measurements, bounded, beside them).

Strategies see the forwarder only as a `StrategyHost` (its FIB,
`eligible_nexthops`, `send_interest`, `reject`), never the `Forwarder`
class, and the forwarder
reaches every strategy through `icnd.core.fw.strategy_choice.StrategyChoice`
by name, never by class.

One file per strategy, next to this one: ``best_route.py`` (the default),
``multicast.py``, ``load_balance.py``, ``round_robin.py``.  A `Strategy`
subclass that sets its own ``name`` registers itself in `STRATEGIES` under
that name when its class is defined; the package (``icnd/core/fw/__init__.py``)
imports every strategy file.  Adding a strategy is adding its file and its
import there.

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
- ``uses_route_hints``: the strategy keeps routing's capacity/load hints
  (`route_hints`); `StrategyChoice.route_hints` hands them to each such
  strategy, whether or not a prefix uses it yet.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Protocol

from icnd.core.tables.fib import Fib, FibEntry
from icnd.core.tables.pit import PitEntry
from icnd.name import Name
from icnd.packet import NACK_SEVERITY, Interest, Nack, NackReason


class StrategyHost(Protocol):
    """What a strategy may use of the forwarder (`icnd.core.fw.forwarder.Forwarder`)."""

    @property
    def fib(self) -> Fib: ...

    def eligible_nexthops(self, entry: PitEntry, in_face: int | None, fib_entry: FibEntry | None) -> list[int]:
        """The next hops of `fib_entry` `entry` may go to now, cheapest first."""

    def send_interest(self, entry: PitEntry, face: int, interest: Interest, now: float) -> None:
        """Send `interest` for `entry` to `face` (counted; leaves an out-record)."""

    def reject(self, entry: PitEntry, reason: NackReason, now: float, detail: str = "") -> None:
        """Nack `entry` downstream with `reason` and drop it."""


class RouteHop(Protocol):
    """What `Strategy.route_hints` reads of a routing next hop
    (`icnd.core.routing.router.Hop`)."""

    @property
    def face(self) -> int: ...
    @property
    def capacity(self) -> int | None: ...
    @property
    def load(self) -> int | None: ...


STRATEGIES: dict[str, type[Strategy]] = {}
"""Every strategy a prefix may be given (``icnd strategy set``, the config file), by name."""


class Strategy:
    name: ClassVar[str] = "abstract"
    multipath: ClassVar[bool] = False
    sends_new_to_cheapest: ClassVar[bool] = False
    observes: ClassVar[bool] = False
    uses_route_hints: ClassVar[bool] = False

    def __init_subclass__(cls) -> None:
        """A subclass that names itself registers in `STRATEGIES` (one class per name)."""
        super().__init_subclass__()
        if "name" in cls.__dict__:
            if cls.name in STRATEGIES:
                raise ValueError(f"two strategies are named {cls.name!r}")
            STRATEGIES[cls.name] = cls

    def after_receive_interest(
        self, fw: StrategyHost, entry: PitEntry, in_face: int, interest: Interest,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        raise NotImplementedError

    def after_receive_nack(
        self, fw: StrategyHost, entry: PitEntry, in_face: int, nack: Nack,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        if entry.all_out_nacked():
            reject_with(fw, entry, nack, now)

    # --- observation hooks (called only when ``observes`` is True) ---------------
    def after_receive_data(self, fw: StrategyHost, entry: PitEntry, face: int, now: float) -> None:
        """Data from `face` satisfied `entry` (which has an out-record on `face`)."""

    def on_interest_timeout(self, fw: StrategyHost, entry: PitEntry, now: float) -> None:
        """`entry` expired unsatisfied (called before it is removed)."""

    def on_face_down(self, face: int) -> None:
        """`face` is gone: forget anything kept about it."""

    def route_hints(self, prefix: Name, hops: Iterable[RouteHop]) -> None:
        """Routing's next hops of `prefix` with the capacity/load their hosts
        announced (called only when ``uses_route_hints`` is True)."""


def least_severe(entry: PitEntry) -> NackReason:
    reasons = [o.nacked for o in entry.out_records.values() if o.nacked is not None]
    return min(reasons, key=NACK_SEVERITY.__getitem__) if reasons else NackReason.NO_ROUTE


def reject_with(fw: StrategyHost, entry: PitEntry, nack: Nack, now: float) -> None:
    """Nack `entry` downstream with the least severe reason upstream gave, and
    the detail of `nack` (the last one) when it is that reason."""
    reason = least_severe(entry)
    fw.reject(entry, reason, now, nack.detail if nack.reason == reason else "")
