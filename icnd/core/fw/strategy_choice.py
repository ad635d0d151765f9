"""The strategy choice table: which strategy forwards which prefix.

It knows strategies by name only: `STRATEGIES` (`icnd.core.fw.strategy`),
where each strategy file registers its class.
"""

from __future__ import annotations

from collections.abc import Iterable

from icnd.core.fw.strategy import STRATEGIES, RouteHop, Strategy
from icnd.core.tables.fib import TableFull
from icnd.name import Name

__all__ = ["SINGLE_PATH", "STRATEGIES", "StrategyChoice"]

SINGLE_PATH = "best-route"  # forwards what must reach one next hop only, under a multipath strategy


class StrategyChoice:
    """Prefix -> strategy, longest match wins; the root always has one.

    Invariants: at most ``max_entries`` choices; `set` of an unknown strategy
    name raises ValueError naming the known ones; one instance per strategy
    name (its state is shared by every prefix using it); ``observed`` is True
    exactly when some choice is an observing strategy (``observes``), so the
    forwarder's observation hooks cost one attribute test otherwise.
    """

    def __init__(self, default: str = "best-route", max_entries: int = 10_000) -> None:
        self.max_entries = max_entries
        self._instances: dict[str, Strategy] = {}
        self._choices: dict[tuple[bytes, ...], Strategy] = {(): self._instance(default)}
        self._observing = int(self._choices[()].observes)  # choices with an observing strategy
        self.observed = self._observing > 0

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
        inst = self._instance(name)
        old = self._choices.get(prefix.comps)
        self._choices[prefix.comps] = inst
        self._count_observing(old, -1)
        self._count_observing(inst, +1)

    def unset(self, prefix: Name) -> bool:
        if not prefix.comps:
            return False  # the root keeps its strategy
        old = self._choices.pop(prefix.comps, None)
        if old is None:
            return False
        self._count_observing(old, -1)
        return True

    def _count_observing(self, inst: Strategy | None, delta: int) -> None:
        if inst is not None and inst.observes:
            self._observing += delta
            self.observed = self._observing > 0

    @staticmethod
    def single_path() -> Strategy:
        """A new instance of the `SINGLE_PATH` strategy, apart from the table's
        (the forwarder's, for trigger Interests under a ``multipath`` strategy)."""
        return STRATEGIES[SINGLE_PATH]()

    def instance(self, name: str) -> Strategy:
        """This table's instance of strategy `name` (created if need be)."""
        return self._instance(name)

    def route_hints(self, prefix: Name, hops: Iterable[RouteHop]) -> None:
        """Routing's hints for `prefix`, to every strategy that keeps them
        (``uses_route_hints``; its instance made now if need be, so a prefix
        given it later finds them)."""
        hops = tuple(hops)
        for name, cls in STRATEGIES.items():
            if cls.uses_route_hints:
                self._instance(name).route_hints(prefix, hops)

    def face_down(self, face: int) -> None:
        """Tell every observing strategy instance that `face` is gone."""
        for inst in self._instances.values():
            if inst.observes:
                inst.on_face_down(face)

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
