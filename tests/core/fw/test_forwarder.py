"""Forwarder pipelines, one path per test, driven with explicit time."""

from __future__ import annotations

import pytest

from icnd import Data, Interest, Nack, NackReason, Name
from icnd.core.fw.forwarder import Forwarder, Send

APP, UP1, UP2, DOWN2, LOCAL2 = 1, 2, 3, 4, 5


@pytest.fixture
def fw() -> Forwarder:
    f = Forwarder()
    f.add_face(APP, local=True)
    f.add_face(UP1)
    f.add_face(UP2)
    f.add_face(DOWN2)
    f.add_face(LOCAL2, local=True)
    return f


def interest(uri: str, nonce: int, **kw) -> Interest:
    return Interest(Name(uri), nonce=nonce, **kw)


def sent(actions: list[Send], kind: type) -> list[Send]:
    return [a for a in actions if isinstance(a.packet, kind)]


def test_forwards_along_route_and_returns_data(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    out = fw.on_packet(APP, interest("/p/x", 1), 0.0)
    assert [(a.face, a.packet.name) for a in out] == [(UP1, Name("/p/x"))]
    assert out[0].packet.hop_limit == 31
    data = Data(Name("/p/x"), b"v")
    out = fw.on_packet(UP1, data, 0.01)
    assert out == [Send(APP, data)]
    assert len(fw.pit) == 0 and len(fw.cs) == 1
    c = fw.counters
    assert (c.interests_in, c.interests_out, c.data_in, c.data_out) == (1, 1, 1, 1)


def test_aggregation_two_consumers_one_upstream_interest(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    first = fw.on_packet(APP, interest("/p/x", 1), 0.0)
    second = fw.on_packet(DOWN2, interest("/p/x", 2), 0.001)
    assert len(first) == 1 and second == []
    assert fw.counters.pit_aggregated == 1
    out = fw.on_packet(UP1, Data(Name("/p/x"), b"v"), 0.002)
    assert sorted(a.face for a in out) == [APP, DOWN2]
    assert fw.counters.interests_out == 1


def test_duplicate_nonce_from_other_face_is_nacked_as_loop(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    fw.on_packet(APP, interest("/p/x", 7), 0.0)
    out = fw.on_packet(DOWN2, interest("/p/x", 7), 0.001)
    assert len(out) == 1 and out[0].face == DOWN2
    assert isinstance(out[0].packet, Nack) and out[0].packet.reason is NackReason.DUPLICATE
    assert fw.counters.duplicate_nonces == 1


def test_dead_nonce_list_catches_loop_after_satisfaction(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    fw.on_packet(APP, interest("/p/x", 9, must_be_fresh=True), 0.0)
    fw.on_packet(UP1, Data(Name("/p/x"), b"v", freshness_ms=0), 0.01)
    # the looping copy cannot be answered by the (stale) cached Data
    out = fw.on_packet(DOWN2, interest("/p/x", 9, must_be_fresh=True), 0.02)
    assert [type(a.packet) for a in out] == [Nack]
    assert out[0].packet.reason is NackReason.DUPLICATE
    assert fw.counters.dead_nonce_hits == 1


def test_cs_hit_and_must_be_fresh(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    fw.on_packet(APP, interest("/p/x", 1), 0.0)
    fw.on_packet(UP1, Data(Name("/p/x"), b"v", freshness_ms=1000), 0.0)
    hit = fw.on_packet(DOWN2, interest("/p/x", 2), 0.5)
    assert sent(hit, Data) and hit[0].face == DOWN2
    fresh_hit = fw.on_packet(DOWN2, interest("/p/x", 3, must_be_fresh=True), 0.9)
    assert sent(fresh_hit, Data)
    stale = fw.on_packet(DOWN2, interest("/p/x", 4, must_be_fresh=True), 1.5)
    assert [a.face for a in stale] == [UP1] and isinstance(stale[0].packet, Interest)
    stale_ok = fw.on_packet(APP, interest("/p/x", 5), 1.6)
    assert sent(stale_ok, Data)
    assert fw.counters.cs_hits == 3 and fw.counters.cs_misses == 2


def test_can_be_prefix(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    out = fw.on_packet(APP, interest("/p", 1, can_be_prefix=True), 0.0)
    assert out[0].packet.can_be_prefix
    data = Data(Name("/p/x/seg=0"), b"v", freshness_ms=1000)
    assert fw.on_packet(UP1, data, 0.01) == [Send(APP, data)]
    hit = fw.on_packet(DOWN2, interest("/p/x", 2, can_be_prefix=True), 0.02)
    assert hit == [Send(DOWN2, data)]
    exact_miss = fw.on_packet(DOWN2, interest("/p/x", 3), 0.03)
    assert sent(exact_miss, Interest)


def test_satisfied_fresh_data_skips_dead_nonce_list(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    fw.on_packet(APP, interest("/p/x", 9), 0.0)
    fw.on_packet(UP1, Data(Name("/p/x"), b"v", freshness_ms=60_000), 0.01)
    assert len(fw.dnl) == 0
    # a looping copy is answered from the cache instead
    assert sent(fw.on_packet(DOWN2, interest("/p/x", 9), 0.02), Data)


def test_expiry_cleans_pit(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    fw.on_packet(APP, interest("/p/x", 1, lifetime_ms=100), 0.0)
    assert len(fw.pit) == 1 and fw.next_deadline() == pytest.approx(0.1)
    assert fw.on_timer(0.05) == [] and len(fw.pit) == 1
    fw.on_timer(0.1)
    assert len(fw.pit) == 0 and fw.counters.pit_expired == 1
    late = fw.on_packet(UP1, Data(Name("/p/x"), b"v"), 0.2)
    assert late == [] and fw.counters.unsolicited_data == 1


def test_unsolicited_data_dropped_not_cached(fw: Forwarder) -> None:
    out = fw.on_packet(UP1, Data(Name("/q"), b"v"), 0.0)
    assert out == [] and fw.counters.unsolicited_data == 1 and len(fw.cs) == 0


def test_data_from_a_face_without_out_record_is_unsolicited(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    fw.on_packet(APP, interest("/p/x", 1), 0.0)
    assert fw.on_packet(UP2, Data(Name("/p/x"), b"v"), 0.01) == []
    assert fw.counters.unsolicited_data == 1 and len(fw.pit) == 1


def test_no_route_nack(fw: Forwarder) -> None:
    out = fw.on_packet(APP, interest("/nowhere", 1), 0.0)
    assert len(out) == 1 and out[0].packet.reason is NackReason.NO_ROUTE
    assert len(fw.pit) == 0 and fw.counters.no_route == 1


def test_best_route_fails_over_on_nack_then_nacks_downstream(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1, cost=1)
    fw.add_route(Name("/p"), UP2, cost=5)
    out = fw.on_packet(APP, interest("/p/x", 1), 0.0)
    assert [a.face for a in out] == [UP1]
    out = fw.on_packet(UP1, Nack(Name("/p/x"), 1, NackReason.NO_ROUTE), 0.01)
    assert [a.face for a in out] == [UP2] and isinstance(out[0].packet, Interest)
    out = fw.on_packet(UP2, Nack(Name("/p/x"), 1, NackReason.CONGESTION), 0.02)
    assert len(out) == 1 and out[0].face == APP
    assert out[0].packet.reason is NackReason.CONGESTION  # least severe of the two
    assert len(fw.pit) == 0


def test_multicast_nacks_downstream_only_when_all_upstreams_nacked(fw: Forwarder) -> None:
    fw.strategies.set(Name("/m"), "multicast")
    fw.add_route(Name("/m"), UP1)
    fw.add_route(Name("/m"), UP2)
    out = fw.on_packet(APP, interest("/m/x", 1), 0.0)
    assert sorted(a.face for a in out) == [UP1, UP2]
    assert fw.on_packet(UP1, Nack(Name("/m/x"), 1, NackReason.NO_ROUTE), 0.01) == []
    out = fw.on_packet(UP2, Nack(Name("/m/x"), 1, NackReason.NO_ROUTE), 0.02)
    assert [(a.face, a.packet.reason) for a in out] == [(APP, NackReason.NO_ROUTE)]


def test_retransmission_goes_to_untried_hop(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1, cost=1)
    fw.add_route(Name("/p"), UP2, cost=2)
    assert [a.face for a in fw.on_packet(APP, interest("/p/x", 1), 0.0)] == [UP1]
    assert fw.on_packet(APP, interest("/p/x", 2), 0.001) == []  # suppressed
    assert fw.counters.retx_suppressed == 1
    out = fw.on_packet(APP, interest("/p/x", 3), 0.5)
    assert [a.face for a in out] == [UP2] and out[0].packet.nonce == 3
    assert fw.counters.retransmissions == 1


def test_unknown_nack_is_counted(fw: Forwarder) -> None:
    assert fw.on_packet(UP1, Nack(Name("/p/x"), 1, NackReason.NO_ROUTE), 0.0) == []
    assert fw.counters.unsolicited_nacks == 1


def test_localhost_never_leaves_local_faces(fw: Forwarder) -> None:
    fw.add_route(Name("/localhost/svc"), UP1)
    fw.add_route(Name("/localhost/svc"), LOCAL2, cost=10)
    out = fw.on_packet(APP, interest("/localhost/svc/a", 1), 0.0)
    assert [a.face for a in out] == [LOCAL2]
    # from a non-local face: refused, never forwarded
    out = fw.on_packet(UP2, interest("/localhost/svc/b", 2), 0.0)
    assert [(a.face, a.packet.reason) for a in out] == [(UP2, NackReason.PROHIBITED)]
    assert fw.counters.scope_violations == 1
    # Data for /localhost from a non-local face is dropped too
    assert fw.on_packet(UP1, Data(Name("/localhost/svc/a"), b"x"), 0.0) == []
    assert fw.counters.scope_violations == 2
    fw.fib.remove(Name("/localhost/svc"), LOCAL2)
    out = fw.on_packet(APP, interest("/localhost/svc/c", 3), 0.0)
    assert [a.packet.reason for a in out] == [NackReason.NO_ROUTE]


def test_hop_limit_zero_dropped(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    assert fw.on_packet(UP2, interest("/p/x", 1, hop_limit=0), 0.0) == []
    assert fw.counters.hop_limit_drops == 1 and len(fw.pit) == 0
    out = fw.on_packet(UP2, interest("/p/y", 2, hop_limit=1), 0.0)
    assert out[0].packet.hop_limit == 0


def test_never_forwards_back_to_in_face(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    out = fw.on_packet(UP1, interest("/p/x", 1), 0.0)
    assert [a.packet.reason for a in out] == [NackReason.NO_ROUTE]


def test_face_down_cleans_pit_and_fib(fw: Forwarder) -> None:
    fw.add_route(Name("/p"), UP1)
    fw.on_packet(DOWN2, interest("/p/x", 1), 0.0)
    fw.on_packet(APP, interest("/p/y", 2), 0.0)
    fw.on_face_down(DOWN2)
    assert len(fw.pit) == 1 and fw.pit.face_records(DOWN2) == 0
    fw.on_face_down(UP1)
    assert len(fw.fib) == 0
    assert fw.on_packet(DOWN2, interest("/p/z", 3), 0.0) == []
    assert fw.counters.unknown_face_drops == 1


def test_pit_full_nacks_congestion() -> None:
    f = Forwarder(pit_max_entries=2)
    f.add_face(1)
    f.add_face(2)
    f.add_route(Name("/p"), 2)
    for i in range(2):
        assert isinstance(f.on_packet(1, interest(f"/p/{i}", i), 0.0)[0].packet, Interest)
    out = f.on_packet(1, interest("/p/9", 9), 0.0)
    assert out[0].packet.reason is NackReason.CONGESTION and f.counters.pit_full == 1
