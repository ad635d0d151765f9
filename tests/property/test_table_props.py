"""Property tests for the forwarding tables: random operation sequences keep
each table's documented invariants."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from icnd.codec import encode, full_name
from icnd.core.tables.cs import ContentStore, data_size
from icnd.core.tables.fib import Fib, TableFull
from icnd.core.fw.forwarder import Forwarder
from icnd.name import T_DIGEST, Name
from icnd.packet import Data, Interest, Nack, NackReason

# A small name space so random operations collide often.
COMPONENTS = ["a", "b", "c"]
name_st = st.lists(st.sampled_from(COMPONENTS), min_size=0, max_size=3).map(lambda cs: Name(cs))
nonempty_name_st = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=3).map(lambda cs: Name(cs))


# --- Content Store ---------------------------------------------------------------------

CS_CAPACITY = 600


class ContentStoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.cs = ContentStore(CS_CAPACITY)
        self.now = 0.0

    @rule(
        name=name_st,
        content_size=st.integers(0, 700),
        freshness_ms=st.sampled_from([0, 100, 1000, 10_000]),
    )
    def insert(self, name, content_size, freshness_ms):
        d = Data(name, b"x" * content_size, freshness_ms=freshness_ms)
        size = data_size(d)
        stored = self.cs.insert(d, self.now)
        assert stored == (size <= CS_CAPACITY)
        if stored:
            # a stored Data is immediately retrievable
            assert self.cs.lookup(Interest(name, nonce=1), self.now) is d

    @rule(name=name_st, cbp=st.booleans(), mbf=st.booleans())
    def lookup(self, name, cbp, mbf):
        found = self.cs.lookup(Interest(name, nonce=1, can_be_prefix=cbp, must_be_fresh=mbf), self.now)
        if found is not None:
            if cbp:
                assert name.is_prefix_of(found.name)
            else:
                assert found.name == name
            if mbf:
                entry = self.cs.by_name[found.name.comps]
                assert entry.fresh_until > self.now
            # a hit makes it the most recently used
            assert next(reversed(self.cs.by_name)) == found.name.comps
        elif not cbp and not mbf:
            assert name.comps not in self.cs.by_name

    @rule(name=name_st)
    def erase(self, name):
        expected = sum(1 for k in self.cs.by_name if k[: len(name.comps)] == name.comps)
        assert self.cs.erase(name.comps) == expected
        assert not any(k[: len(name.comps)] == name.comps for k in self.cs.by_name)

    @rule(dt=st.sampled_from([0.0, 0.05, 0.5, 2.0]))
    def advance(self, dt):
        self.now += dt

    @invariant()
    def bytes_accounted(self):
        cs = self.cs
        assert cs.bytes_used == sum(e.size for e in cs.by_name.values())
        assert cs.bytes_used <= cs.capacity_bytes
        for e in cs.by_name.values():
            assert e.size == data_size(e.data)

    @invariant()
    def lru_and_index_agree(self):
        cs = self.cs
        assert list(cs._ordered()) == sorted(cs.by_name)
        assert len(cs._ordered()) == len(set(cs._ordered()))
        for key, e in cs.by_name.items():
            assert e.data.name.comps == key


ContentStoreMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestContentStore = ContentStoreMachine.TestCase


# --- FIB ---------------------------------------------------------------------------------


def reference_longest_match(ref: dict[tuple, dict[int, int]], comps: tuple) -> tuple | None:
    best = None
    for prefix in ref:
        if comps[: len(prefix)] == prefix and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


class FibMachine(RuleBasedStateMachine):
    MAX_ENTRIES = 8
    MAX_NEXTHOPS = 3

    def __init__(self) -> None:
        super().__init__()
        self.fib = Fib(max_entries=self.MAX_ENTRIES, max_nexthops=self.MAX_NEXTHOPS)
        self.ref: dict[tuple, dict[int, int]] = {}

    @rule(prefix=name_st, face=st.integers(1, 5), cost=st.integers(0, 3))
    def add(self, prefix, face, cost):
        key = prefix.comps
        hops = self.ref.get(key)
        should_fail = (hops is None and len(self.ref) >= self.MAX_ENTRIES) or (
            hops is not None and face not in hops and len(hops) >= self.MAX_NEXTHOPS
        )
        try:
            self.fib.add(prefix, face, cost)
        except TableFull:
            assert should_fail
            return
        assert not should_fail
        self.ref.setdefault(key, {})[face] = cost

    @rule(prefix=name_st, face=st.integers(1, 5))
    def remove(self, prefix, face):
        key = prefix.comps
        expected = face in self.ref.get(key, {})
        assert self.fib.remove(prefix, face) == expected
        if expected:
            del self.ref[key][face]
            if not self.ref[key]:
                del self.ref[key]

    @rule(face=st.integers(1, 5))
    def remove_face(self, face):
        expected = 0
        for key in list(self.ref):
            if face in self.ref[key]:
                expected += 1
                del self.ref[key][face]
                if not self.ref[key]:
                    del self.ref[key]
        assert self.fib.remove_face(face) == expected

    @rule(name=name_st)
    def longest_match(self, name):
        self.check_match(name.comps)

    def check_match(self, comps):
        expected = reference_longest_match(self.ref, comps)
        entry = self.fib.longest_match(comps)
        if expected is None:
            assert entry is None
        else:
            assert entry is not None
            assert entry.prefix.comps == expected
            assert entry.costs == self.ref[expected]

    @invariant()
    def agrees_with_reference(self):
        fib = self.fib
        assert len(fib) == len(self.ref)
        assert {e.prefix.comps for e in fib} == set(self.ref)
        for e in fib:
            hops = self.ref[e.prefix.comps]
            assert hops  # no entry without a next hop
            assert e.nexthops == tuple(sorted(hops.items(), key=lambda fc: (fc[1], fc[0])))
            assert len(e.nexthops) <= self.MAX_NEXTHOPS
        assert len(fib) <= self.MAX_ENTRIES
        # every name of the small name space (all lengths up to 4) matches like the reference
        for n0 in [()] + [(c,) for c in COMPONENTS]:
            base = Name(list(n0)).comps
            self.check_match(base)
            for c in COMPONENTS:
                self.check_match(Name(list(n0) + [c, c, "a"]).comps)


FibMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestFib = FibMachine.TestCase


# --- PIT through the Forwarder -------------------------------------------------------------

PIT_MAX = 8
PIT_MAX_PER_FACE = 4
FACES = [1, 2, 3, 4]

interest_op = st.tuples(
    st.just("interest"),
    st.sampled_from(FACES),
    nonempty_name_st,
    st.integers(0, 7),  # nonce from a small pool: loops and duplicates happen
    st.sampled_from([10, 50, 200, 1000, 5000, 20_000]),
    st.booleans(),
    st.booleans(),
)
data_op = st.tuples(
    st.just("data"),
    st.sampled_from(FACES),
    nonempty_name_st,
    st.sampled_from([0, 100, 1000]),
)
nack_op = st.tuples(
    st.just("nack"),
    st.sampled_from(FACES),
    nonempty_name_st,
    st.integers(0, 7),
    st.sampled_from(list(NackReason)),
)
# Answers aimed at a pending entry (chosen by index at run time) from one of
# its upstream faces, so Data and Nacks actually match rather than being
# unsolicited.  The Data name is the Interest name, one longer, or its
# implicit-digest form is requested.
reply_op = st.tuples(
    st.just("reply"),
    st.integers(0, 1000),
    st.integers(0, 1000),
    st.sampled_from(["data", "data_longer", "nack"]),
    st.sampled_from(list(NackReason)),
)
# Several Interests at the same instant, to push the PIT to its bounds.
burst_op = st.tuples(st.just("burst"), st.lists(interest_op, min_size=2, max_size=12))
digest_interest_op = st.tuples(st.just("digest_interest"), st.sampled_from(FACES), nonempty_name_st, st.integers(0, 7))
advance_op = st.tuples(st.just("advance"), st.sampled_from([0.0, 0.0, 0.005, 0.03, 0.1, 0.5, 2.0, 6.0]))
face_op = st.tuples(st.just("face_down"), st.sampled_from(FACES))
ops_st = st.lists(
    st.one_of(
        interest_op, interest_op, interest_op, reply_op, reply_op, data_op, nack_op,
        digest_interest_op, burst_op, advance_op, advance_op, face_op,
    ),
    min_size=10,
    max_size=100,
)


def new_forwarder(fast_best_route: bool = True) -> Forwarder:
    """A forwarder whose every action (sent face and bytes) is appended to
    its ``trace`` list."""
    fw = Forwarder(pit_max_entries=PIT_MAX, pit_max_per_face=PIT_MAX_PER_FACE, cs_capacity_bytes=4096)
    fw.fast_best_route = fast_best_route
    trace: list[tuple[int, bytes]] = []
    fw.trace = trace  # type: ignore[attr-defined]
    for method in ("on_packet", "on_timer", "on_face_down"):
        def recorded(*args, _call=getattr(fw, method)):
            out = _call(*args)
            trace.extend((s.face, encode(s.packet)) for s in out)
            return out
        setattr(fw, method, recorded)
    for f in FACES:
        fw.add_face(f, local=False)
    add_routes(fw)
    return fw


def add_routes(fw: Forwarder) -> None:
    for prefix, face, cost in [
        ("/a", 3, 1), ("/a", 4, 2), ("/a/b", 4, 0), ("/b", 2, 0), ("/b", 3, 5), ("/", 1, 9),
    ]:
        if face in fw.faces:
            fw.add_route(Name(prefix), face, cost)


def check_pit(fw: Forwarder) -> None:
    pit = fw.pit
    entries = list(pit)
    assert len(pit) == len(entries) <= PIT_MAX
    keys = [(e.comps, e.selectors()) for e in entries]
    assert len(keys) == len(set(keys)), "duplicate PIT entries for one name + selectors"
    per_face: dict[int, int] = {}
    for e in entries:
        assert not e.removed
        assert e.in_records, "a PIT entry without in-records"
        for face, rec in e.in_records.items():
            per_face[face] = per_face.get(face, 0) + 1
            assert e.expiry >= rec.expiry
    for face in set(per_face) | set(pit.per_face) | set(FACES):
        assert pit.face_records(face) == per_face.get(face, 0)
        assert pit.face_records(face) <= PIT_MAX_PER_FACE
    assert 0 not in pit.per_face.values()
    assert pit.prefix_entries == sum(1 for e in entries if e.interest.can_be_prefix)
    assert pit.digest_entries == sum(1 for e in entries if e.comps and e.comps[-1][0] == T_DIGEST)
    cs = fw.cs
    assert cs.bytes_used == sum(e.size for e in cs.by_name.values()) <= cs.capacity_bytes
    assert list(cs._ordered()) == sorted(cs.by_name)


def run_timers(fw: Forwarder, now: float) -> None:
    deadline = fw.next_deadline()
    if deadline is not None and now >= deadline:
        fw.on_timer(now)
        deadline = fw.next_deadline()
        assert deadline is None or deadline > now
        for e in fw.pit:
            assert e.expiry > now, f"PIT entry {e.interest} outlived its expiry {e.expiry} (now {now})"


def send_interest(fw: Forwarder, op, now: float) -> None:
    _, face, name, nonce, lifetime, cbp, mbf = op
    i = Interest(name, nonce=nonce, lifetime_ms=lifetime, can_be_prefix=cbp, must_be_fresh=mbf)
    fw.on_packet(face, i, now)


def run_ops(ops, fast_best_route: bool = True) -> Forwarder:
    fw = new_forwarder(fast_best_route)
    now = 0.0
    for op in ops:
        kind = op[0]
        if kind == "advance":
            now += op[1]
            run_timers(fw, now)
        elif kind == "interest":
            send_interest(fw, op, now)
        elif kind == "burst":
            for sub in op[1]:
                send_interest(fw, sub, now)
                check_pit(fw)
        elif kind == "digest_interest":
            _, face, name, nonce = op
            full = full_name(Data(name, b"d" * 20, freshness_ms=1000))
            fw.on_packet(face, Interest(full, nonce=nonce, lifetime_ms=1000), now)
        elif kind == "reply":
            _, idx, out_idx, what, reason = op
            entries = [e for e in fw.pit if e.out_records]
            if entries:
                e = entries[idx % len(entries)]
                outs = list(e.out_records.items())
                face, out = outs[out_idx % len(outs)]
                if what == "nack":
                    fw.on_packet(face, Nack(e.interest.name, out.nonce, reason), now)
                else:
                    name = e.interest.name
                    if what == "data_longer" and e.interest.can_be_prefix:
                        name = name.append("z")
                    if name.comps[-1][0] == T_DIGEST:  # implicit digest: answer with that Data
                        name = name.prefix(-1)
                    d = Data(name, b"d" * 20, freshness_ms=1000)
                    fw.on_packet(face, d, now)
        elif kind == "data":
            _, face, name, freshness = op
            fw.on_packet(face, Data(name, b"d" * 20, freshness_ms=freshness), now)
        elif kind == "nack":
            _, face, name, nonce, reason = op
            fw.on_packet(face, Nack(name, nonce, reason), now)
        elif kind == "face_down":
            face = op[1]
            fw.on_face_down(face, now)
            for e in fw.pit:
                assert face not in e.in_records and face not in e.out_records
            assert fw.pit.face_records(face) == 0
            fw.add_face(face, local=False)
            add_routes(fw)
        check_pit(fw)
    # drain: once every timer has run, nothing is left pending
    now += 100.0
    run_timers(fw, now)
    check_pit(fw)
    assert len(fw.pit) == 0
    assert all(fw.pit.face_records(f) == 0 for f in FACES)
    return fw


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops_st)
def test_pit_through_forwarder(ops):
    run_ops(ops)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops_st)
def test_composed_best_route_path_acts_as_the_general_path(ops):
    """`Forwarder.on_content_store_miss` composes best-route's first
    forwarding inline; the same operations through the general strategy
    path send the same bytes to the same faces and count the same."""
    fast = run_ops(ops, fast_best_route=True)
    general = run_ops(ops, fast_best_route=False)
    assert fast.trace == general.trace
    assert fast.counters.as_dict() == general.counters.as_dict()
