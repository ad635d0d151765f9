"""The load-balance strategy (icnd.core.fw.load_balance.LoadBalance) and the
forwarder's observation hooks, driven with explicit faces and times."""

from __future__ import annotations

from collections import Counter

import pytest

from icnd import Data, Interest, Nack, NackReason, Name
from icnd.core.fw.forwarder import Forwarder, Send
from icnd.core.fw.best_route import BestRoute
from icnd.core.fw.load_balance import LB_BUSY_BASE, LB_MIN_RTT, LoadBalance
from icnd.core.fw.strategy_choice import STRATEGIES, StrategyChoice
from icnd.name import rnp

APP, UP1, UP2, UP3, DOWN2 = 1, 2, 3, 4, 5
PREFIX = Name("/fn/f")
RTT = {UP1: 0.010, UP2: 0.050}


@pytest.fixture
def fw() -> Forwarder:
    f = Forwarder()
    f.add_face(APP, local=True)
    for face in (UP1, UP2, UP3, DOWN2):
        f.add_face(face)
    f.add_route(PREFIX, UP1, 1)
    f.add_route(PREFIX, UP2, 2)
    f.strategies.set(Name("/fn"), "load-balance")
    return f


def lb_of(fw: Forwarder) -> LoadBalance:
    lb = fw.strategies.instance("load-balance")
    assert isinstance(lb, LoadBalance)
    return lb


def interest(i: int | str, nonce: int | None = None, **kw) -> Interest:
    return Interest(PREFIX.append(str(i)), nonce=nonce if nonce is not None else hash(str(i)) & 0xFFFFFFFF, **kw)


def interests_out(actions: list[Send]) -> list[Send]:
    return [a for a in actions if isinstance(a.packet, Interest)]


def send(fw: Forwarder, i: int | str, now: float, nonce: int | None = None, face: int = APP) -> int:
    """Express Interest `i`; the one face it went out on."""
    out = interests_out(fw.on_packet(face, interest(i, nonce), now))
    assert len(out) == 1, out
    return out[0].face


def answer(fw: Forwarder, face: int, i: int | str, now: float) -> list[Send]:
    return fw.on_packet(face, Data(PREFIX.append(str(i)), b"r", freshness_ms=0), now)


def warm_up(fw: Forwarder, n: int = 40, t0: float = 0.0) -> tuple[Counter, float]:
    """Two concurrent calls (in-flight sends the second to the other hop, so
    both get measured), then `n` sequential ones, each answered after its
    hop's RTT."""
    used: Counter = Counter()
    t = t0
    if t0 == 0.0:
        assert (send(fw, "m1", 0.0), send(fw, "m2", 0.0)) == (UP1, UP2)
        answer(fw, UP1, "m1", RTT[UP1])
        answer(fw, UP2, "m2", RTT[UP2])
        t = 0.1
    for i in range(n):
        face = send(fw, f"w{t0}-{i}", t)
        used[face] += 1
        assert [a.face for a in answer(fw, face, f"w{t0}-{i}", t + RTT[face])] == [APP]
        t += 0.1
    return used, t


# --- registry and hooks ----------------------------------------------------------------------


def test_registered_and_settable_by_name() -> None:
    assert STRATEGIES["load-balance"] is LoadBalance
    sc = StrategyChoice()
    sc.set(Name("/fn/x"), "load-balance")
    assert sc.find(Name("/fn/x/call").comps).name == "load-balance"
    assert (Name("/fn/x"), "load-balance") in sc.items()


def test_observation_flag_only_while_an_observing_strategy_is_chosen() -> None:
    sc = StrategyChoice()
    assert not sc.observed and not BestRoute.observes
    sc.set(Name("/fn/a"), "load-balance")
    sc.set(Name("/fn/b"), "load-balance")
    assert sc.observed
    sc.unset(Name("/fn/a"))
    assert sc.observed
    sc.set(Name("/fn/b"), "multicast")  # replaced
    assert not sc.observed
    assert StrategyChoice(default="load-balance").observed


def test_hooks_cost_nothing_without_an_observing_strategy(fw: Forwarder, monkeypatch) -> None:
    fw.strategies.unset(Name("/fn"))
    assert not fw.strategies.observed
    calls = []
    real_find = fw.strategies.find
    monkeypatch.setattr(fw.strategies, "find", lambda comps: calls.append(comps) or real_find(comps))
    face = send(fw, 1, 0.0)
    assert len(calls) == 1  # the Interest's strategy lookup
    assert answer(fw, face, 1, 0.01)[0].face == APP
    send(fw, 2, 0.02)
    fw.on_timer(10.0)  # expiry
    assert fw.counters.pit_expired == 1
    assert len(calls) == 2  # no lookup for the Data nor for the expiry


# --- RTT and probing ---------------------------------------------------------------------------


def test_unmeasured_hops(fw: Forwarder) -> None:
    # nothing measured: the cheapest, then in-flight spreads to the other
    assert send(fw, "a", 0.0) == UP1
    assert send(fw, "b", 0.0) == UP2
    fw2 = Forwarder()
    for face in (APP, UP1, UP2):
        fw2.add_face(face, local=face == APP)
    fw2.add_route(PREFIX, UP1, 0)  # e.g. the host's own function
    fw2.add_route(PREFIX, UP2, 3)  # another host, further away
    fw2.strategies.set(PREFIX, "load-balance")
    lb = lb_of(fw2)
    # a measured cheap hop keeps the traffic: the unknown one is only given the best srtt (a tie) ...
    faces = []
    for i in range(60):
        faces.append(send(fw2, i, i * 0.1))
        answer(fw2, faces[-1], i, i * 0.1 + (0.005 if faces[-1] == UP1 else 0.020))
    assert faces[0] == UP1 and faces.count(UP1) >= 50
    # ... and the first probe goes to it (never used: first in line)
    first_probe = faces.index(UP2)
    assert lb.stats(PREFIX.comps, UP2).samples >= 1 and first_probe > 0


def test_prefers_the_faster_hop_and_probes_the_other(fw: Forwarder) -> None:
    used, t = warm_up(fw, 20)
    lb = lb_of(fw)
    s1, s2 = lb.stats(PREFIX.comps, UP1), lb.stats(PREFIX.comps, UP2)
    assert s1.srtt == pytest.approx(RTT[UP1]) and s2.srtt == pytest.approx(RTT[UP2])
    used, _ = warm_up(fw, 400, t0=t)
    assert used[UP1] + used[UP2] == 400
    assert used[UP1] >= 360  # ~95 %
    assert 5 <= used[UP2] <= 40  # probes keep the slow hop measured
    assert s2.samples > 1 and s1.srtt == pytest.approx(RTT[UP1])


def test_deterministic_for_a_seed() -> None:
    def run() -> list[int]:
        f = Forwarder()
        f.add_face(APP, local=True)
        for face in (UP1, UP2):
            f.add_face(face)
            f.add_route(PREFIX, face)
        f.strategies.set(PREFIX, "load-balance")
        faces = []
        for i in range(300):
            face = send(f, i, i * 0.1)
            faces.append(face)
            answer(f, face, i, i * 0.1 + RTT[face])
        return faces

    assert run() == run()


def test_rtt_sample_is_floored(fw: Forwarder) -> None:
    face = send(fw, 1, 1.0)
    answer(fw, face, 1, 1.0)
    assert lb_of(fw).stats(PREFIX.comps, face).srtt == LB_MIN_RTT


def test_in_flight_spreads_concurrent_interests(fw: Forwarder) -> None:
    _, t = warm_up(fw, 20)
    lb = lb_of(fw)
    lb.probe = 0.0
    # srtt 10 ms vs 50 ms: score = srtt * (1 + in_flight), so about 5 : 1
    faces = [send(fw, f"c{i}", t) for i in range(24)]
    used = Counter(faces)
    assert used[UP2] >= 3 and used[UP1] >= 15
    s1, s2 = lb.stats(PREFIX.comps, UP1), lb.stats(PREFIX.comps, UP2)
    assert (s1.in_flight(t), s2.in_flight(t)) == (used[UP1], used[UP2])
    # the answers bring in-flight back to zero
    for i, face in enumerate(faces):
        answer(fw, face, f"c{i}", t + 0.2)
    assert (s1.in_flight(t + 0.2), s2.in_flight(t + 0.2)) == (0, 0)


# --- Nacks ---------------------------------------------------------------------------------------


def test_busy_nack_tries_the_other_hop_for_the_same_entry(fw: Forwarder) -> None:
    assert send(fw, "x", 0.0, nonce=11) == UP1
    entry = next(iter(fw.pit))
    out = fw.on_packet(UP1, Nack(PREFIX.append("x"), 11, NackReason.NO_RESOURCES), 0.001)
    assert [(a.face, type(a.packet)) for a in out] == [(UP2, Interest)]
    assert out[0].packet.name == PREFIX.append("x")
    assert len(fw.pit) == 1 and next(iter(fw.pit)) is entry
    assert sorted(entry.out_records) == [UP1, UP2]
    assert [a.face for a in answer(fw, UP2, "x", 0.02)] == [APP]
    # the busy hop is avoided for a while, then used again
    s1 = lb_of(fw).stats(PREFIX.comps, UP1)
    assert s1.busy_until == pytest.approx(0.001 + LB_BUSY_BASE) and s1.in_flight(0.02) == 0
    assert send(fw, "y", 0.02) == UP2
    answer(fw, UP2, "y", 0.03)
    assert send(fw, "z", 0.001 + LB_BUSY_BASE + 0.001) == UP1  # never measured, no longer busy


def test_consecutive_busy_nacks_back_off_longer(fw: Forwarder) -> None:
    lb = lb_of(fw)
    lb.probe = 0.0  # every new Interest to the cheapest hop: no probe in between
    for k, t in enumerate((0.0, 0.2, 0.4)):
        assert send(fw, f"b{k}", t, nonce=100 + k) == UP1
        fw.on_packet(UP1, Nack(PREFIX.append(f"b{k}"), 100 + k, NackReason.NO_RESOURCES), t)
        answer(fw, UP2, f"b{k}", t + 0.05)
    s1 = lb.stats(PREFIX.comps, UP1)
    assert s1.busy_nacks == 3 and s1.busy_until == pytest.approx(0.4 + 4 * LB_BUSY_BASE)


def test_busy_hop_is_the_last_resort_and_data_clears_the_mark(fw: Forwarder) -> None:
    lb = lb_of(fw)
    s1 = lb._hop(PREFIX.comps, UP1)
    s1.busy_level, s1.busy_until = 3, 5.0
    assert all(send(fw, f"o{i}", 1.0 + i * 0.01) == UP2 for i in range(20))  # no probe to a busy hop
    assert send(fw, "u", 1.5, nonce=7) == UP2
    out = fw.on_packet(UP2, Nack(PREFIX.append("u"), 7, NackReason.NO_ROUTE), 1.5)
    assert [a.face for a in interests_out(out)] == [UP1]  # busy, but the only hop left
    answer(fw, UP1, "u", 1.52)
    assert (s1.busy_level, s1.busy_until) == (0, 0.0) and s1.srtt == pytest.approx(0.02)


def test_all_hops_nack_least_severe_goes_downstream(fw: Forwarder) -> None:
    assert send(fw, "x", 0.0, nonce=5) == UP1
    out = fw.on_packet(UP1, Nack(PREFIX.append("x"), 5, NackReason.NO_ROUTE), 0.001)
    assert [a.face for a in interests_out(out)] == [UP2]
    out = fw.on_packet(UP2, Nack(PREFIX.append("x"), 5, NackReason.NO_RESOURCES), 0.002)
    assert len(out) == 1 and out[0].face == APP
    assert isinstance(out[0].packet, Nack) and out[0].packet.reason is NackReason.NO_RESOURCES
    assert len(fw.pit) == 0
    lb = lb_of(fw)
    assert lb.stats(PREFIX.comps, UP1).in_flight(0.002) == 0
    assert lb.stats(PREFIX.comps, UP2).in_flight(0.002) == 0


def test_no_route_is_nacked(fw: Forwarder) -> None:
    out = fw.on_packet(APP, Interest(Name("/fn/none/x"), nonce=1), 0.0)
    assert len(out) == 1 and isinstance(out[0].packet, Nack) and out[0].packet.reason is NackReason.NO_ROUTE


# --- retransmissions and timeouts ---------------------------------------------------------------


def test_retransmission_prefers_an_untried_hop(fw: Forwarder) -> None:
    fw.add_route(PREFIX, UP3, 3)
    assert send(fw, "r", 0.0, nonce=1) == UP1
    assert send(fw, "r", 0.05, nonce=2) == UP2
    assert send(fw, "r", 0.20, nonce=3) == UP3
    entry = next(iter(fw.pit))
    assert sorted(entry.out_records) == [UP1, UP2, UP3]
    assert len(fw.pit) == 1


def test_retransmission_to_the_same_hop_gives_no_rtt_sample(fw: Forwarder) -> None:
    fw.fib.remove(PREFIX, UP2)
    assert send(fw, "k", 0.0, nonce=1) == UP1
    assert send(fw, "k", 0.5, nonce=2) == UP1
    answer(fw, UP1, "k", 0.51)
    s1 = lb_of(fw).stats(PREFIX.comps, UP1)
    assert s1.samples == 0 and s1.in_flight(0.51) == 0  # Karn: ambiguous


def test_timeout_penalizes_the_silent_hop(fw: Forwarder) -> None:
    _, t = warm_up(fw, 20)
    lb = lb_of(fw)
    lb.probe = 0.0
    s1 = lb.stats(PREFIX.comps, UP1)
    assert send(fw, "lost", t, nonce=9) == UP1
    assert s1.in_flight(t) == 1
    fw.on_timer(t + 4.0)  # the default lifetime: the entry expires unsatisfied
    assert len(fw.pit) == 0 and fw.counters.pit_expired == 1
    assert s1.timeouts == 1 and s1.in_flight(t + 4.0) == 0
    assert s1.srtt == pytest.approx(RTT[UP1] + (8.0 - RTT[UP1]) / 8)
    assert send(fw, "next", t + 4.1) == UP2


def test_silently_removed_entries_are_swept_from_in_flight(fw: Forwarder) -> None:
    lb = lb_of(fw)
    assert send(fw, "gone", 0.0, face=DOWN2) == UP1
    s1 = lb.stats(PREFIX.comps, UP1)
    assert s1.in_flight(0.0) == 1
    fw.on_face_down(DOWN2)  # the consumer went: its entry leaves the PIT without a hook
    assert len(fw.pit) == 0
    assert s1.in_flight(2.0) == 0 and s1.timeouts == 0


# --- reflexive forwarding -------------------------------------------------------------------------


def test_trigger_interests_go_to_exactly_one_hop(fw: Forwarder) -> None:
    fw.add_route(PREFIX, UP3, 3)
    used: Counter = Counter()
    for i in range(200):
        r = rnp(i.to_bytes(16, "big"))
        ti = Interest(PREFIX.append(f"call{i}").append_wire(r), nonce=1000 + i)
        out = interests_out(fw.on_packet(APP, ti, i * 0.01))
        assert len(out) == 1, out
        used[out[0].face] += 1
    assert set(used) == {UP1, UP2, UP3}  # spread by in-flight (nothing answers)
    # a busy host's Nack moves the trigger to one other host, and the reflexive entry follows it
    r = rnp(bytes(range(16)))
    ti = Interest(PREFIX.append("busy").append_wire(r), nonce=77)
    first = interests_out(fw.on_packet(APP, ti, 3.0))
    assert len(first) == 1
    out = fw.on_packet(first[0].face, Nack(ti.name, 77, NackReason.NO_RESOURCES), 3.001)
    assert len(interests_out(out)) == 1 and out[0].face != first[0].face
    assert fw.rf.get(r).producer_faces == {first[0].face, out[0].face}


def test_trigger_data_gives_an_rtt_sample(fw: Forwarder) -> None:
    r = rnp(bytes(range(16)))
    ti = Interest(PREFIX.append("c").append_wire(r), nonce=3)
    [out] = interests_out(fw.on_packet(APP, ti, 0.0))
    fw.on_packet(out.face, Data(ti.name, b"result"), 0.3)
    s = lb_of(fw).stats(PREFIX.comps, out.face)
    assert s.srtt == pytest.approx(0.3) and s.in_flight(0.3) == 0


# --- state -------------------------------------------------------------------------------------------


def test_face_down_forgets_its_state(fw: Forwarder) -> None:
    warm_up(fw, 20)
    lb = lb_of(fw)
    assert lb.stats(PREFIX.comps, UP2) is not None
    fw.on_face_down(UP2)
    assert lb.stats(PREFIX.comps, UP2) is None
    assert lb.stats(PREFIX.comps, UP1) is not None
    assert all(send(fw, f"after{i}", 10 + i) == UP1 for i in range(30))


def test_state_is_bounded() -> None:
    f = Forwarder()
    f.add_face(APP, local=True)
    f.add_face(UP1)
    f.add_face(UP2)
    f.strategies.set(Name("/fn"), "load-balance")
    lb = lb_of(f)
    lb.max_hops = 10
    for i in range(50):
        f.add_route(Name(f"/fn/p{i}"), UP1)
        f.add_route(Name(f"/fn/p{i}"), UP2)
        out = interests_out(f.on_packet(APP, Interest(Name(f"/fn/p{i}/x"), nonce=i + 1), i * 0.01))
        assert len(out) == 1
        f.on_packet(out[0].face, Data(Name(f"/fn/p{i}/x"), b""), i * 0.01 + 0.001)
        assert len(lb) <= 10
    assert len(lb) == 10
    assert lb.stats(Name("/fn/p49").comps, UP1) is not None  # the most recent stay
    assert lb.stats(Name("/fn/p0").comps, UP1) is None


def test_default_seed_and_reseed() -> None:
    a, b = LoadBalance(), LoadBalance()
    assert [a.rng.random() for _ in range(5)] == [b.rng.random() for _ in range(5)]
    a.reseed(7)
    b.reseed(7)
    assert a.rng.random() == b.rng.random()


# --- topologies -------------------------------------------------------------------------------------------


def test_simulated_topology_uses_load_balance_for_function_prefixes(monkeypatch) -> None:
    from icnd.sim.network import SimNetwork
    from icnd.topology import parse, simulate
    from icnd.topology.routes import derive_routes, function_route_prefixes

    spec = parse({
        "nodes": {"c": {}, "r": {}, "h1": {"functions": ["m:f=/fn/f"]}, "h2": {"functions": ["m:f=/fn/f"]}},
        "links": [{"ends": ["c", "r"]}, {"ends": ["r", "h1"]}, {"ends": ["r", "h2"]}],
    })
    assert function_route_prefixes(spec, derive_routes(spec)) == ["/fn/f"]
    built: list[Forwarder] = []
    real = SimNetwork.new_forwarder
    monkeypatch.setattr(SimNetwork, "new_forwarder", lambda self, name: built.append(real(self, name)) or built[-1])
    report = simulate(spec, [("c", "h2")], scenario=[("restart", "r", 0.5), ("fetch", "c", "h1", 1.0)],
                      routes="full")
    assert report.ok
    assert len(built) == 5  # four nodes and the restarted one
    for fw in built:
        assert (Name("/fn/f"), "load-balance") in fw.strategies.items()
        assert fw.strategies.find(Name("/fn/f/call/x").comps).name == "load-balance"
        assert fw.strategies.find(Name("/node/h1").comps).name == "best-route"
    # lazy routing derives no function routes, so it sets no strategy
    built.clear()
    simulate(spec, [("c", "h2")], routes="lazy")
    assert all(fw.strategies.items() == [(Name("/"), "best-route")] for fw in built)


# --- capacity/load hints from routing (compute-aware anycast) -------------------------------------------


def _split(fw: Forwarder, n: int = 1000, rtt: float = 0.05, gap: float = 0.001, tag: str = "s") -> Counter:
    """`n` Interests `gap` apart, each answered `rtt` after it left (the same
    RTT on every hop): the next hops they went to."""
    used: Counter = Counter()
    pending: list[tuple[float, int, str]] = []
    t = 1.0
    for i in range(n):
        while pending and pending[0][0] <= t:
            at, face, name = pending.pop(0)
            answer(fw, face, name, at)
        face = send(fw, f"{tag}{i}", t)
        used[face] += 1
        pending.append((t + rtt, face, f"{tag}{i}"))
        t += gap
    for at, face, name in pending:
        answer(fw, face, name, at)
    return used


def test_hints_split_calls_by_announced_capacity(fw: Forwarder) -> None:
    lb_of(fw).set_hints(PREFIX.comps, {UP1: (1, 0), UP2: (4, 0)})
    used = _split(fw)
    assert sum(used.values()) == 1000
    assert 3.0 <= used[UP2] / used[UP1] <= 5.0, used  # 4:1, though UP1 is the cheaper route


def test_without_hints_equal_hops_split_evenly(fw: Forwarder) -> None:
    used = _split(fw)
    assert 0.8 <= used[UP2] / used[UP1] <= 1.25, used


def test_announced_load_steers_calls_from_a_hop_not_measured_lately(fw: Forwarder) -> None:
    lb = lb_of(fw)
    lb.probe = 0.0
    # equal capacity, but UP2's hosts already run 30 calls of other nodes' callers
    lb.set_hints(PREFIX.comps, {UP1: (4, 0), UP2: (4, 30)})
    assert all(send(fw, f"a{i}", 1.0) == UP1 for i in range(20))  # 1 + 19/4 < 1 + 30/4
    lb.set_hints(PREFIX.comps, {UP1: (4, 0), UP2: (4, 0)})
    assert send(fw, "b", 1.0) == UP2
    answer(fw, UP2, "b", 1.01)  # a fresh RTT sample: its srtt now carries the hosts' queueing
    lb.set_hints(PREFIX.comps, {UP1: (4, 0), UP2: (4, 30)})  # the same announcement, now stale
    assert send(fw, "c", 1.02) == UP2  # in flight 20 at UP1, 0 at UP2
    assert send(fw, "d", 3.0) == UP1  # no sample from UP2 for over a second: its announced load counts again


def test_capacity_zero_is_a_last_resort_and_partial_hints_are_ignored(fw: Forwarder) -> None:
    lb = lb_of(fw)
    lb.set_hints(PREFIX.comps, {UP1: (0, 0), UP2: (4, 0)})
    assert all(send(fw, f"z{i}", 1.0) == UP2 for i in range(20))  # even with 20 in flight there
    fw.add_face(UP3)
    fw.add_route(PREFIX, UP3, 3)
    lb.set_hints(PREFIX.comps, {UP1: (4, 0), UP2: (1, 0)})  # UP3 has none: the RTT rule, cost order
    assert send(fw, "p0", 2.0) == UP1
    assert send(fw, "p1", 2.0) == UP3  # in flight: UP1 1, UP2 20, UP3 0


def test_route_hints_take_routing_hops_and_forget_faces_that_go_down(fw: Forwarder) -> None:
    from icnd.core.routing.router import Hop
    lb = lb_of(fw)
    lb.route_hints(PREFIX, (Hop(UP1, 10, 2, 1), Hop(UP2, 20, None, 5)))
    assert lb.hints(PREFIX.comps) == {UP1: (2, 1)}  # no capacity, no hint
    lb.route_hints(PREFIX, (Hop(UP1, 10, 2, None), Hop(UP2, 20, 8, 3)))
    assert lb.hints(PREFIX.comps) == {UP1: (2, 0), UP2: (8, 3)}
    fw.on_face_down(UP2)
    assert lb.hints(PREFIX.comps) == {UP1: (2, 0)}
    fw.on_face_down(UP1)
    assert lb.hints(PREFIX.comps) == {}
    lb.route_hints(PREFIX, (Hop(UP1, 10, 2, 0),))
    lb.route_hints(PREFIX, ())  # the route went
    assert lb.hints(PREFIX.comps) == {}


def test_hints_are_bounded() -> None:
    lb = LoadBalance()
    lb.max_hint_prefixes = 3
    for i in range(5):
        lb.set_hints((b"p%d" % i,), {1: (1, 0)})
    assert lb.hints_dropped == 2
    assert lb.hints((b"p4",)) == {}
    lb.set_hints((b"p0",), {1: (5, 0)})  # a known prefix is updated
    assert lb.hints((b"p0",)) == {1: (5, 0)}


# --- round-robin: the capacity-blind baseline -------------------------------------------------------

def test_round_robin_takes_each_next_hop_in_turn_whatever_it_costs(fw: Forwarder) -> None:
    fw.add_route(PREFIX, UP3, 9)
    fw.strategies.set(Name("/fn"), "round-robin")
    faces = [send(fw, i, 0.001 * i) for i in range(30)]
    assert Counter(faces) == {UP1: 10, UP2: 10, UP3: 10}
    assert faces[:3] != [UP1, UP1, UP1]  # not cheapest-first


def test_round_robin_retransmission_and_nack_go_to_an_untried_hop(fw: Forwarder) -> None:
    fw.strategies.set(Name("/fn"), "round-robin")
    first = send(fw, "r", 0.0, nonce=1)
    again = send(fw, "r", 0.5, nonce=2)  # a retransmission after the suppression interval
    assert {first, again} == {UP1, UP2}
    tried = send(fw, "n", 1.0, nonce=3)
    out = interests_out(fw.on_packet(tried, Nack(PREFIX.append("n"), 3, NackReason.NO_ROUTE), 1.01))
    assert [a.face for a in out] == [UP1 if tried == UP2 else UP2]
