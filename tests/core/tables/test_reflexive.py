"""Reflexive forwarding in the core (rules: icnd/core/tables/reflexive.py), one rule
per test, driven with explicit faces and times."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icnd import Data, Interest, Nack, NackReason, Name
from icnd.core.tables.fib import Fib, TableFull
from icnd.core.fw.forwarder import Forwarder, Send
from icnd.core.tables.pit import PitEntry
from icnd.core.tables.reflexive import (
    MALFORMED, NOT_REFLEXIVE, REFLEXIVE, TI_MAX_EXTENDED_LIFETIME, TRIGGER, ReflexiveTable, classify,
)
from icnd.name import T_RNP, rnp
from icnd.sim.network import SimNetwork

APP, UP1, UP2, DOWN2 = 1, 2, 3, 4
R1 = rnp(bytes(range(16)))
R2 = rnp(bytes(range(16, 32)))
CALL = Name("/fn/f/call1")


@pytest.fixture
def fw() -> Forwarder:
    f = Forwarder()
    f.add_face(APP, local=True)
    f.add_face(UP1)
    f.add_face(UP2)
    f.add_face(DOWN2)
    f.add_route(Name("/fn"), UP1)
    return f


def ti_name(r: bytes = R1, prefix: Name = CALL) -> Name:
    return prefix.append_wire(r)


def ti(nonce: int, r: bytes = R1, prefix: Name = CALL, **kw) -> Interest:
    return Interest(ti_name(r, prefix), nonce=nonce, **kw)


def ri_name(suffix: str = "/arg/0", r: bytes = R1) -> Name:
    return Name.from_wire((r,)) + suffix


def ri(nonce: int, suffix: str = "/arg/0", r: bytes = R1, **kw) -> Interest:
    return Interest(ri_name(suffix, r), nonce=nonce, **kw)


def only(actions: list[Send]) -> Send:
    assert len(actions) == 1, actions
    return actions[0]


def nack_of(actions: list[Send]) -> tuple[int, NackReason]:
    a = only(actions)
    assert isinstance(a.packet, Nack), a
    return a.face, a.packet.reason


def start(fw: Forwarder, now: float = 0.0, **kw) -> None:
    """APP sends the TI; it goes to UP1."""
    out = fw.on_packet(APP, ti(1, **kw), now)
    assert [(a.face, a.packet.name) for a in out] == [(UP1, ti_name())]


# --- the happy path ----------------------------------------------------------------------


def test_single_hop_exchange(fw: Forwarder) -> None:
    start(fw)
    rf = fw.rf.get(R1)
    assert rf is not None and rf.consumer_faces == {APP} and rf.producer_faces == {UP1}
    assert rf.ti_entry.interest.name == ti_name() and rf.expiry == pytest.approx(4.0 + 1.0)
    assert fw.table_sizes()["rf_entries"] == 1 and fw.counters.rf_entries_created == 1
    # the producer pulls an argument from the consumer
    out = fw.on_packet(UP1, ri(10), 0.01)
    assert [(a.face, a.packet.name) for a in out] == [(APP, ri_name())]
    assert out[0].packet.hop_limit == 31
    rd = Data(ri_name(), b"argument", freshness_ms=10_000)
    assert fw.on_packet(APP, rd, 0.02) == [Send(UP1, rd)]
    assert len(fw.cs) == 0  # reflexive Data is never cached
    td = Data(ti_name(), b"result", freshness_ms=10_000)
    assert fw.on_packet(UP1, td, 0.03) == [Send(APP, td)]
    assert len(fw.pit) == 0 and len(fw.rf) == 0 and len(fw.cs) == 0
    assert fw.table_sizes()["rf_entries"] == 0


def consumer_app(net: SimNetwork, node: str, r: bytes):
    """An app that answers RIs under its RNP (no route: RNPs are never routed)."""
    app = net.app(node)
    app.handlers.append((Name.from_wire((r,)), lambda i: Data(i.name, b"arg:" + i.name.to_uri().encode())))
    return app


def test_three_forwarders_in_the_simulator() -> None:
    net = SimNetwork(seed=5)
    for n in "abc":
        net.add_node(n)
    net.link("a", "b", delay=0.002)
    net.link("b", "c", delay=0.002)
    for x, y in (("a", "b"), ("b", "c")):
        face = next(f for f, (_, p, _) in net.nodes[x].peers.items() if p.name == y)
        net.nodes[x].fw.add_route(Name("/fn"), face)
    consumer = consumer_app(net, "a", R1)
    producer = net.app("c")
    pulled = []

    def on_trigger(interest: Interest) -> None:
        def finish(fetch) -> None:
            pulled.append(fetch.result)
            producer.send(Data(interest.name, b"result", freshness_ms=10_000))

        producer.fetch(ri_name("/arg/0"), lifetime_ms=1000, on_done=finish)
        return None

    producer.serve("/fn", on_trigger)
    call = consumer.fetch(ti_name(), lifetime_ms=1000)
    net.run(until=5)
    assert isinstance(call.result, Data) and call.result.content == b"result"
    assert [p.content for p in pulled] == [b"arg:" + ri_name("/arg/0").to_uri().encode()]
    assert abs(call.rtt - 0.016) < 1e-9  # TI, RI, RD and TD: 4 crossings of 2 links
    for n in "abc":
        fw = net.nodes[n].fw
        assert len(fw.rf) == 0 and len(fw.pit) == 0 and len(fw.cs) == 0, n
        assert fw.counters.rf_entries_created == 1 and fw.counters.rf_extended == 1, n


# --- reflexive Interests -----------------------------------------------------------------


def test_ri_without_entry_gets_no_route_never_the_fib(fw: Forwarder) -> None:
    fw.add_route(Name("/"), UP2)  # the FIB would match anything
    assert nack_of(fw.on_packet(UP1, ri(10), 0.0)) == (UP1, NackReason.NO_ROUTE)
    assert fw.counters.rf_miss == 1 and fw.counters.interests_out == 0 and len(fw.pit) == 0


def test_ri_from_a_face_the_trigger_did_not_go_out_on_is_dropped(fw: Forwarder) -> None:
    start(fw)
    assert fw.on_packet(UP2, ri(10), 0.01) == []
    assert fw.on_packet(APP, ri(11), 0.01) == []  # not even from the consumer itself
    assert fw.counters.rf_wrong_ingress == 2 and len(fw.pit) == 1
    assert fw.rf.get(R1).ri_count == 0


def test_ri_duplicate_nonce_is_a_loop(fw: Forwarder) -> None:
    fw.add_route(Name("/fn"), UP2, cost=5)
    start(fw)
    fw.on_packet(UP1, Nack(ti_name(), 1, NackReason.NO_RESOURCES), 0.01)  # now also sent to UP2
    assert fw.rf.get(R1).producer_faces == {UP1, UP2}
    assert only(fw.on_packet(UP1, ri(10), 0.02)).face == APP
    assert nack_of(fw.on_packet(UP2, ri(10), 0.03)) == (UP2, NackReason.DUPLICATE)


def test_ri_extends_the_trigger(fw: Forwarder) -> None:
    start(fw, lifetime_ms=1000)
    rf = fw.rf.get(R1)
    fw.on_packet(UP1, ri(10, lifetime_ms=2000), 0.5)
    assert rf.ti_entry.expiry == pytest.approx(0.5 + 1.5 * 2.0)
    assert rf.expiry == pytest.approx(3.5 + 1.0) and fw.counters.rf_extended == 1
    fw.on_packet(UP1, ri(11, "/arg/1", lifetime_ms=100), 0.6)  # max(): never shortens
    assert rf.ti_entry.expiry == pytest.approx(3.5) and fw.counters.rf_extended == 1
    fw.on_timer(1.0)  # the TI's original expiry
    assert fw.rf.get(R1) is rf and rf.live(1.0)
    td = Data(ti_name(), b"result")
    assert fw.on_packet(UP1, td, 3.0) == [Send(APP, td)]  # the consumer's in-record lives too
    assert len(fw.rf) == 0


def test_extension_is_capped_from_the_trigger_arrival(fw: Forwarder) -> None:
    start(fw, now=10.0, lifetime_ms=4000)
    rf = fw.rf.get(R1)
    cap = 10.0 + TI_MAX_EXTENDED_LIFETIME
    fw.on_packet(UP1, ri(100, "/arg/0", lifetime_ms=10_000), 12.0)
    assert rf.ti_entry.expiry == pytest.approx(12.0 + 15.0)
    for i, t in enumerate((25.0, 65.0), 1):  # 25 + 90 and 65 + 90 are both past the cap
        fw.on_packet(UP1, ri(100 + i, f"/arg/{i}", lifetime_ms=60_000), t)
        fw.on_timer(t)
        assert rf.ti_entry.expiry == pytest.approx(cap) and rf.expiry == pytest.approx(cap + 1.0)
    assert fw.counters.rf_extended == 2
    fw.on_timer(cap)
    assert len(fw.rf) == 0 and fw.counters.pit_expired >= 1
    assert nack_of(fw.on_packet(UP1, ri(200, "/arg/9"), cap + 0.1)) == (UP1, NackReason.NO_ROUTE)


def test_ri_count_cap_nacks_prohibited(fw: Forwarder) -> None:
    fw.rf.max_ri_per_ti = 2
    start(fw)
    for i in range(2):
        assert only(fw.on_packet(UP1, ri(10 + i, f"/arg/{i}"), 0.01)).face == APP
    assert nack_of(fw.on_packet(UP1, ri(20, "/arg/9"), 0.02)) == (UP1, NackReason.PROHIBITED)
    assert fw.counters.rf_ri_limit == 1


def test_ri_retransmission_follows_the_usual_suppression(fw: Forwarder) -> None:
    start(fw)
    assert only(fw.on_packet(UP1, ri(10), 0.01)).face == APP
    assert fw.on_packet(UP1, ri(11), 0.012) == []  # suppressed
    out = fw.on_packet(UP1, ri(12), 0.5)
    assert only(out).face == APP and out[0].packet.nonce == 12
    assert fw.counters.retx_suppressed == 1 and fw.counters.retransmissions == 1
    assert fw.rf.get(R1).ri_count == 2


# --- cleanup -----------------------------------------------------------------------------


def test_trigger_data_closes_the_exchange(fw: Forwarder) -> None:
    start(fw)
    fw.on_packet(UP1, ri(10), 0.01)
    fw.on_packet(APP, Data(ri_name(), b"argument", freshness_ms=60_000), 0.02)
    fw.on_packet(UP1, Data(ti_name(), b"result", freshness_ms=60_000), 0.03)
    assert len(fw.rf) == 0 and len(fw.cs) == 0
    # an RI after the TD: no entry, and the RD is not served from a cache
    assert nack_of(fw.on_packet(UP1, ri(11), 0.04)) == (UP1, NackReason.NO_ROUTE)
    assert fw.counters.rf_miss == 1 and fw.counters.cs_hits == 0
    # nor is the TD
    assert only(fw.on_packet(APP, ti(2), 0.05)).face == UP1


def test_trigger_expiry_removes_the_entry(fw: Forwarder) -> None:
    start(fw, lifetime_ms=100)
    fw.on_packet(UP1, ri(10, lifetime_ms=20), 0.01)  # 0.01 + 0.03 < 0.1: no extension
    assert fw.next_deadline() == pytest.approx(0.03)
    fw.on_timer(0.05)
    assert len(fw.rf) == 1
    fw.on_timer(0.1)
    assert len(fw.rf) == 0 and len(fw.pit) == 0
    assert nack_of(fw.on_packet(UP1, ri(11), 0.11)) == (UP1, NackReason.NO_ROUTE)


def test_every_upstream_nacking_the_trigger_removes_the_entry(fw: Forwarder) -> None:
    start(fw)
    assert nack_of(fw.on_packet(UP1, Nack(ti_name(), 1, NackReason.NO_RESOURCES), 0.01)) == (
        APP, NackReason.NO_RESOURCES)
    assert len(fw.rf) == 0 and len(fw.pit) == 0


def test_face_down(fw: Forwarder) -> None:
    start(fw)
    fw.on_packet(DOWN2, ti(2), 0.001)  # the same TI over a second path: aggregated
    rf = fw.rf.get(R1)
    assert rf.consumer_faces == {APP, DOWN2} and fw.counters.pit_aggregated == 1
    assert sorted(a.face for a in fw.on_packet(UP1, ri(10), 0.01)) == [APP, DOWN2]
    fw.on_face_down(DOWN2, 0.02)
    assert rf.consumer_faces == {APP} and fw.rf.face_entries(DOWN2) == 0
    fw.on_face_down(UP1, 0.03)
    assert rf.producer_faces == set() and fw.rf.get(R1) is rf
    fw.on_face_down(APP, 0.04)
    assert len(fw.rf) == 0 and len(fw.pit) == 0 and fw.rf.face_entries(APP) == 0


# --- the consumer's kill switch ------------------------------------------------------------


def test_consumer_nack_prohibited_disables_further_ris(fw: Forwarder) -> None:
    start(fw)
    fw.on_packet(UP1, ri(10), 0.01)
    out = fw.on_packet(APP, Nack(ri_name(), 10, NackReason.PROHIBITED), 0.02)
    assert nack_of(out) == (UP1, NackReason.PROHIBITED)  # on toward the producer
    rf = fw.rf.get(R1)
    assert rf.prohibited and fw.counters.rf_killed == 1
    assert nack_of(fw.on_packet(UP1, ri(11, "/arg/1"), 0.03)) == (UP1, NackReason.NO_ROUTE)
    assert fw.counters.rf_prohibited == 1 and fw.counters.rf_miss == 0
    td = Data(ti_name(), b"result")  # the trigger itself may still be answered
    assert fw.on_packet(UP1, td, 0.04) == [Send(APP, td)] and len(fw.rf) == 0


def test_other_consumer_nacks_do_not_kill(fw: Forwarder) -> None:
    start(fw)
    fw.on_packet(UP1, ri(10), 0.01)
    assert nack_of(fw.on_packet(APP, Nack(ri_name(), 10, NackReason.CONGESTION), 0.02)) == (
        UP1, NackReason.CONGESTION)
    assert not fw.rf.get(R1).prohibited
    assert only(fw.on_packet(UP1, ri(11), 0.03)).face == APP


# --- trigger Interests -------------------------------------------------------------------------


def test_rnp_collision_is_prohibited_and_keeps_the_old_entry(fw: Forwarder) -> None:
    start(fw)
    other = Name("/fn/g/call2")
    assert nack_of(fw.on_packet(DOWN2, ti(2, prefix=other), 0.01)) == (DOWN2, NackReason.PROHIBITED)
    # the same name with other selectors is another PIT entry: a collision too
    assert nack_of(fw.on_packet(DOWN2, ti(3, must_be_fresh=True), 0.01)) == (DOWN2, NackReason.PROHIBITED)
    assert fw.counters.rf_collisions == 2 and len(fw.pit) == 1
    rf = fw.rf.get(R1)
    assert rf.ti_entry.interest.name == ti_name() and rf.consumer_faces == {APP}
    assert only(fw.on_packet(UP1, ri(10), 0.02)).face == APP


def test_trigger_retransmission_refreshes_without_a_second_forward(fw: Forwarder) -> None:
    start(fw, lifetime_ms=1000)
    rf = fw.rf.get(R1)
    assert fw.on_packet(APP, ti(2, lifetime_ms=1000), 0.005) == []  # suppressed
    assert fw.counters.retx_suppressed == 1 and fw.counters.rf_entries_created == 1
    assert rf.expiry == pytest.approx(0.005 + 1.0 + 1.0) and fw.rf.get(R1) is rf
    fw.on_packet(UP1, ri(10, lifetime_ms=4000), 0.1)  # extends the TI to 6.1
    out = fw.on_packet(APP, ti(3, lifetime_ms=1000), 0.5)  # past suppression: a retransmission
    assert only(out).face == UP1 and fw.counters.retransmissions == 1
    assert rf.ti_entry.expiry == pytest.approx(6.1)  # the retransmission did not undo it
    assert fw.rf.get(R1) is rf and rf.consumer_faces == {APP}


def test_trigger_goes_to_one_host_even_under_multicast(fw: Forwarder) -> None:
    fw.strategies.set(Name("/fn"), "multicast")
    fw.add_route(Name("/fn"), UP2, cost=1)
    assert sorted(a.face for a in fw.on_packet(APP, Interest(Name("/fn/plain"), nonce=9), 0.0)) == [UP1, UP2]
    start(fw)
    # a host refuses: another is tried, and both may now send RIs
    out = fw.on_packet(UP1, Nack(ti_name(), 1, NackReason.NO_RESOURCES), 0.01)
    assert only(out).face == UP2 and isinstance(out[0].packet, Interest)
    assert fw.rf.get(R1).producer_faces == {UP1, UP2}
    assert only(fw.on_packet(UP2, ri(10), 0.02)).face == APP
    out = fw.on_packet(UP2, Nack(ti_name(), 1, NackReason.CONGESTION), 0.03)
    assert nack_of(out) == (APP, NackReason.CONGESTION)
    assert len(fw.rf) == 0


def test_trigger_without_route_leaves_no_entry(fw: Forwarder) -> None:
    assert nack_of(fw.on_packet(APP, ti(1, prefix=Name("/nowhere")), 0.0)) == (APP, NackReason.NO_ROUTE)
    assert len(fw.rf) == 0 and len(fw.pit) == 0


@pytest.mark.parametrize("name", [ti_name(), Name("/fn").append_wire(R1).append("x")])
def test_data_with_an_rnp_anywhere_is_never_cached(fw: Forwarder, name: Name) -> None:
    # a plain can_be_prefix Interest is the only way such Data can arrive without a TI
    fw.on_packet(DOWN2, Interest(Name("/fn"), nonce=1, can_be_prefix=True), 0.0)
    data = Data(name, b"v", freshness_ms=60_000)
    assert fw.on_packet(UP1, data, 0.01) == [Send(DOWN2, data)]
    assert len(fw.cs) == 0 and fw.counters.cs_inserts == 0


def test_reflexive_table_full_nacks_no_resources() -> None:
    f = Forwarder(rf_max_per_face=1, rf_max_entries=2)
    for face in (APP, UP1, DOWN2):
        f.add_face(face)
    f.add_route(Name("/fn"), UP1)
    r3 = rnp(bytes(range(32, 48)))
    assert only(f.on_packet(APP, ti(1), 0.0)).face == UP1
    assert nack_of(f.on_packet(APP, ti(2, r=R2), 0.0)) == (APP, NackReason.NO_RESOURCES)  # per face
    assert only(f.on_packet(DOWN2, ti(3, r=R2), 0.0)).face == UP1
    assert nack_of(f.on_packet(UP1, ti(4, r=r3), 0.0)) == (UP1, NackReason.NO_RESOURCES)  # global
    # a second face for an existing trigger counts against that face too
    assert nack_of(f.on_packet(DOWN2, ti(5), 0.0)) == (DOWN2, NackReason.NO_RESOURCES)
    assert f.counters.rf_full == 3 and len(f.pit) == 2 and len(f.rf) == 2
    # the refused ones left nothing behind; existing exchanges go on
    assert only(f.on_packet(UP1, ri(10), 0.01)).face == APP


# --- placement and routes ------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    Name("/fn").append_wire(R1).append("x"),  # in the middle
    Name.from_wire((R1,)).append("x").append_wire(R2),  # an RI that is also a TI: recursion
    Name.from_wire((R1, R2)),  # two RNPs
    Name.from_wire((b"\x08fn", bytes((T_RNP,)) + bytes(15))),  # 15 bytes
])
def test_misplaced_rnp_is_malformed(fw: Forwarder, name: Name) -> None:
    fw.add_route(Name("/"), UP2)
    assert nack_of(fw.on_packet(APP, Interest(name, nonce=1), 0.0)) == (APP, NackReason.MALFORMED)
    assert fw.counters.rnp_malformed == 1 and len(fw.pit) == 0 and len(fw.rf) == 0


def test_high_component_types_that_are_not_rnp_forward_normally(fw: Forwarder) -> None:
    name = Name("/fn").append_wire(b"\xf1odd")
    assert only(fw.on_packet(APP, Interest(name, nonce=1), 0.0)).face == UP1
    data = Data(name, b"v", freshness_ms=1000)
    fw.on_packet(UP1, data, 0.01)
    assert len(fw.cs) == 1  # and cached as usual


def test_classify() -> None:
    assert classify(ti_name().comps) == (TRIGGER, "")
    assert classify(ri_name().comps) == (REFLEXIVE, "")
    assert classify((R1,)) == (REFLEXIVE, "")  # an RI may be the bare RNP
    assert classify(Name("/a/b").comps) == (NOT_REFLEXIVE, "")
    assert classify((b"\x08a", R1, b"\x08b"))[0] == MALFORMED


@pytest.mark.parametrize("prefix", [Name.from_wire((R1,)), ti_name(), Name("/a").append_wire(R1).append("b")])
def test_routes_with_an_rnp_are_refused(fw: Forwarder, prefix: Name) -> None:
    before = len(fw.fib)
    with pytest.raises(ValueError, match="rnp="):
        fw.add_route(prefix, UP2)
    with pytest.raises(ValueError, match="rnp="):
        Fib().add(prefix, UP2)
    assert len(fw.fib) == before


# --- the table alone ---------------------------------------------------------------------------


def pending(in_faces: tuple[int, ...], expiry: float = 4.0) -> PitEntry:
    entry = PitEntry(ti(1))
    for f in in_faces:
        entry.in_records[f] = None  # type: ignore[assignment]  # only the keys matter here
    entry.expiry = expiry
    return entry


def test_table_bounds_and_face_removal() -> None:
    table = ReflexiveTable(max_entries=2, max_per_face=1)
    a = table.insert(R1, pending((APP,)), 0.0)
    assert a.expiry == pytest.approx(5.0) and a.live(4.9) and not a.live(5.0)
    with pytest.raises(ValueError):
        table.insert(R1, pending((DOWN2,)), 0.0)
    with pytest.raises(TableFull):
        table.insert(R2, pending((APP,)), 0.0)
    with pytest.raises(TableFull):
        table.insert(R2, pending((DOWN2, APP)), 0.0)
    assert table.face_entries(DOWN2) == 0  # a refused insert takes nothing
    b = table.insert(R2, pending((DOWN2,)), 0.0)
    with pytest.raises(TableFull):
        table.insert(rnp(bytes(16)), pending((UP2,)), 0.0)
    b.producer_faces.add(UP1)
    assert table.remove_face(UP1) == [] and b.producer_faces == set()
    assert table.remove_face(DOWN2) == [b] and table.get(R2) is None
    assert table.face_entries(DOWN2) == 0 and table.face_entries(APP) == 1
    table.remove(a)
    table.remove(a)  # twice is harmless
    assert len(table) == 0 and table.per_face == {}


# --- random sequences keep the invariants ---------------------------------------------------------

FACES = (APP, UP1, UP2, DOWN2)
RNPS = (R1, R2)
PREFIXES = (Name("/fn/a"), Name("/fn/b"))

# weighted toward what makes exchanges progress: TIs from consumers, RIs from producers
ti_st = st.tuples(st.just("ti"), st.sampled_from((APP, APP, DOWN2, UP2)), st.sampled_from(PREFIXES),
                  st.sampled_from(RNPS), st.integers(0, 50), st.sampled_from([100, 1000, 4000]))
ri_st = st.tuples(st.just("ri"), st.sampled_from((UP1, UP1, UP2, APP)), st.sampled_from(RNPS),
                  st.sampled_from(["/a", "/b"]), st.integers(0, 50), st.sampled_from([100, 1000, 60_000]))
answer_st = st.tuples(st.just("answer"), st.integers(0, 20), st.sampled_from(["data", "nack", "nack"]),
                      st.sampled_from([NackReason.PROHIBITED, NackReason.NO_RESOURCES, NackReason.NO_ROUTE]))
op_st = st.one_of(
    ti_st, ti_st, ri_st, ri_st, ri_st, answer_st, answer_st,
    st.tuples(st.just("advance"), st.sampled_from([0.0, 0.005, 0.1, 0.5, 5.0, 30.0])),
    st.tuples(st.just("face_down"), st.sampled_from(FACES)),
)


def check_reflexive(fw: Forwarder, now: float) -> None:
    per_face: dict[int, int] = {}
    for rf in fw.rf:
        ti_entry = rf.ti_entry
        assert not ti_entry.removed and ti_entry in list(fw.pit)
        assert ti_entry.comps[-1] == rf.rnp
        assert rf.consumer_faces == set(ti_entry.in_records)
        assert rf.expiry >= ti_entry.expiry
        assert rf.producer_faces <= set(fw.faces)
        # RIs extend it at most to the cap; only the consumer (TI lifetimes <= 4 s) goes beyond
        assert ti_entry.expiry <= max(rf.created + TI_MAX_EXTENDED_LIFETIME, now + 4.0)
        for f in rf.consumer_faces:
            per_face[f] = per_face.get(f, 0) + 1
    assert fw.rf.per_face == per_face
    for e in fw.pit:
        if e.comps[-1][0] == T_RNP and e.comps[0][0] != T_RNP:
            rf = fw.rf.get(e.comps[-1])
            assert rf is not None and rf.ti_entry is e, "a trigger Interest without its entry"
    assert len(fw.cs) == 0  # every name here is reflexive


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op_st, min_size=5, max_size=60))
def test_random_exchanges_keep_the_invariants(ops) -> None:
    fw = Forwarder(rf_max_per_face=1)
    for f in FACES:
        fw.add_face(f, local=f == APP)
    fw.add_route(Name("/fn"), UP1, 1)
    fw.add_route(Name("/fn"), UP2, 2)
    now = 0.0
    nonce = 0
    for op in ops:
        kind = op[0]
        nonce += 1
        if kind == "ti":
            _, face, prefix, r, n, life = op
            fw.on_packet(face, Interest(prefix.append_wire(r), nonce=n, lifetime_ms=life), now)
        elif kind == "ri":
            _, face, r, suffix, n, life = op
            fw.on_packet(face, Interest(Name.from_wire((r,)) + suffix, nonce=n, lifetime_ms=life), now)
        elif kind == "answer":
            _, idx, what, reason = op
            entries = [e for e in fw.pit if e.out_records]
            if entries:
                e = entries[idx % len(entries)]
                face, out = sorted(e.out_records.items())[idx % len(e.out_records)]
                packet = Data(e.interest.name, b"x") if what == "data" else Nack(e.interest.name, out.nonce, reason)
                fw.on_packet(face, packet, now)
        elif kind == "advance":
            now += op[1]
            deadline = fw.next_deadline()
            if deadline is not None and now >= deadline:
                fw.on_timer(now)
        else:
            fw.on_face_down(op[1], now)
            fw.add_face(op[1], local=op[1] == APP)
            fw.add_route(Name("/fn"), UP1, 1)
            fw.add_route(Name("/fn"), UP2, 2)
        check_reflexive(fw, now)
    fw.on_timer(now + 1000.0)
    assert len(fw.pit) == 0 and len(fw.rf) == 0 and fw.rf.per_face == {}
