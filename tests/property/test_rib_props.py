"""Property test for the RIB (icnd.core.tables.rib): any sequence of changes,
refused or not, keeps the FIB equal to the RIB's min-cost view, checked
against a plain model of the routes."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from icnd.core.tables.fib import Fib, TableFull
from icnd.core.tables.rib import ORIGINS, Rib
from icnd.name import Name

prefix_st = st.lists(st.sampled_from(["a", "b"]), min_size=0, max_size=2).map(lambda cs: Name(cs))
face_st = st.integers(1, 4)
origin_st = st.sampled_from(ORIGINS)
cost_st = st.integers(0, 5)
Model = dict[tuple[Name, int, str], int]


class RibMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        # small bounds, so refusals (the RIB's and the FIB's) happen often
        self.rib = Rib(Fib(max_entries=5, max_nexthops=3), max_routes=12)
        self.model: Model = {}
        self.changed: list[Name] = []
        self.rib.on_change.append(self.changed.append)

    def _attempt(self, change, model: Model) -> None:
        """Apply `change` to the RIB; the model follows unless it was refused (nothing changes then)."""
        before = dict(self.model)
        self.changed.clear()
        try:
            change()
        except TableFull:
            assert self._rib_view() == before
            assert self.changed == []
            return
        touched = {k[0] for k in set(before) ^ set(model)} | {
            k[0] for k in set(before) & set(model) if before[k] != model[k]}
        assert set(self.changed) == touched and len(self.changed) == len(set(self.changed))
        self.model = model

    def _rib_view(self) -> Model:
        return {(r.prefix, r.face, r.origin): r.cost for r in self.rib}

    @rule(prefix=prefix_st, face=face_st, cost=cost_st, origin=origin_st)
    def add(self, prefix, face, cost, origin):
        model = dict(self.model)
        model[(prefix, face, origin)] = cost
        self._attempt(lambda: self.rib.add(prefix, face, cost, origin), model)

    @rule(prefix=prefix_st, face=face_st, origin=origin_st)
    def remove(self, prefix, face, origin):
        model = dict(self.model)
        had = model.pop((prefix, face, origin), None) is not None
        self._attempt(lambda: self._expect(self.rib.remove(prefix, face, origin), had), model)

    @rule(face=face_st)
    def remove_face(self, face):
        model = {k: c for k, c in self.model.items() if k[1] != face}
        count = len(self.model) - len(model)
        self._attempt(lambda: self._expect(self.rib.remove_face(face), count), model)

    @rule(origin=origin_st)
    def remove_origin(self, origin):
        model = {k: c for k, c in self.model.items() if k[2] != origin}
        count = len(self.model) - len(model)
        self._attempt(lambda: self._expect(self.rib.remove_origin(origin), count), model)

    @rule(prefix=prefix_st, origin=origin_st, hops=st.dictionaries(face_st, cost_st, max_size=4))
    def set_routes(self, prefix, origin, hops):
        model = {k: c for k, c in self.model.items() if not (k[0] == prefix and k[2] == origin)}
        model.update({(prefix, f, origin): c for f, c in hops.items()})
        self._attempt(lambda: self.rib.set_routes(prefix, origin, hops), model)

    @staticmethod
    def _expect(got, want) -> None:
        assert got == want

    @invariant()
    def rib_is_the_model(self):
        assert self._rib_view() == self.model
        assert len(self.rib) == len(self.model) <= self.rib.max_routes

    @invariant()
    def fib_is_the_min_cost_view(self):
        view: dict[Name, dict[int, int]] = {}
        for (prefix, face, _), cost in self.model.items():
            hops = view.setdefault(prefix, {})
            hops[face] = min(cost, hops.get(face, cost))
        assert {e.prefix: dict(e.costs) for e in self.rib.fib} == view
        for entry in self.rib.fib:
            assert list(entry.nexthops) == sorted(entry.costs.items(), key=lambda fc: (fc[1], fc[0]))

    @invariant()
    def routes_are_sorted(self):
        for prefix in self.rib.prefixes():
            routes = self.rib.routes(prefix)
            assert routes and [r.sort_key() for r in routes] == sorted(r.sort_key() for r in routes)


TestRib = RibMachine.TestCase
TestRib.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
