"""The topology simulator (icnd.topology.simulate): the real forwarding core
on a virtual clock, driven by topology files, fetches and timed scenarios."""

from __future__ import annotations

import dataclasses
import json
import random
import time
from pathlib import Path

import pytest

from icnd import Data, Name
from icnd.sim.network import SimNetwork
from icnd.topology import derive_routes, load, originated_prefixes, parse
from icnd.topology.routes import RouteOracle
from icnd.sim.scenario import (
    ScenarioError,
    Step,
    format_report,
    grid_spec,
    load_scenario,
    report_json,
    simulate,
)

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
GRID9 = TOPOLOGIES / "grid9.toml"
LINE3 = TOPOLOGIES / "line3.toml"


def line(n: int, **defaults) -> object:
    names = [chr(ord("a") + i) for i in range(n)]
    return parse({"defaults": defaults, "nodes": {x: {} for x in names},
                  "links": [{"ends": [x, y]} for x, y in zip(names, names[1:])]})


def stable(report) -> dict:
    """The report without wall-clock measurements."""
    data = report_json(report)
    for key in ("wall_s", "run_wall_s", "routes_s", "forwarding_wall_s", "packets_per_s"):
        data.pop(key)
    return data


# --------------------------------------------------------------------------- fetches


def test_line3_fetch_crosses_two_hops_then_the_middle_node_answers_from_its_cache() -> None:
    report = simulate(LINE3, [("a", "c"), ("b", "c")])
    first, second = report.fetches
    assert (first.ok, first.hops, first.path, first.served_by, first.cache_hit) == (True, 2, ["a", "b", "c"], "c", False)
    assert first.name == "/node/c/sim/object" and first.attempts == 1 and first.error is None
    assert (second.ok, second.hops, second.path, second.served_by, second.cache_hit) == (True, 0, ["b"], "b", True)
    assert report.counters["b"]["cs_hits"] == 1
    assert report.counters["c"]["interests_in"] == 1  # the producer was asked once
    assert report.ok and report.exit_code == 0


@pytest.mark.parametrize("src,dst", [("n00", "n22"), ("n22", "n00"), ("n02", "n20"), ("n20", "n02")])
def test_grid9_corner_to_corner_is_four_hops(src: str, dst: str) -> None:
    report = simulate(GRID9, [(src, dst)])
    (fetch,) = report.fetches
    assert fetch.ok and fetch.hops == 4 and fetch.path[0] == src and fetch.path[-1] == dst
    assert len(set(fetch.path)) == 5
    spec = load(GRID9)
    assert all(spec.link(a, b) is not None for a, b in zip(fetch.path, fetch.path[1:]))
    # exactly the nodes on the path saw the Interest
    assert {n for n, c in report.counters.items() if c["interests_in"]} == set(fetch.path)


def test_grid9_second_fetch_from_another_node_hits_the_cache_on_the_first_path() -> None:
    report = simulate(GRID9, [("n00", "n22"), ("n10", "n22")])
    first, second = report.fetches
    assert first.path == ["n00", "n01", "n02", "n12", "n22"]  # equal-cost ties: spec link order
    # n10 -> n11 -> n12, whose Content Store holds the object since the first fetch
    assert second.ok and second.cache_hit and second.served_by == "n12"
    assert second.path == ["n10", "n11", "n12"] and second.hops == 2
    assert report.counters["n12"]["cs_hits"] == 1
    assert report.counters["n22"]["interests_in"] == 1


def test_twenty_ms_links_give_forty_ms_per_hop_of_round_trip() -> None:
    report = simulate(line(3, delay_ms=20), [("a", "b"), ("a", "c")], routes="full")  # fetches from time 0
    one, two = report.fetches
    assert one.rtt_s >= 0.040 and one.rtt_s == pytest.approx(0.040)
    assert two.rtt_s == pytest.approx(0.080)
    assert report.sim_time_s == pytest.approx(0.120)


def test_bandwidth_adds_serialization_time() -> None:
    fast = simulate(line(2, delay_ms=5), [("a", "b")]).fetches[0]
    slow = simulate(line(2, delay_ms=5, bandwidth_mbps=1), [("a", "b")], object_size=4000).fetches[0]
    assert fast.rtt_s == pytest.approx(0.010)
    # the 4 kB Data alone takes > 32 ms at 1 Mbit/s
    assert slow.ok and slow.rtt_s > 0.010 + 4000 * 8 / 1e6


def test_lossy_link_still_delivers_with_retransmissions() -> None:
    spec = line(3, loss=0.05)
    fetches = [("a", "c", f"obj{i}") for i in range(40)]
    report = simulate(spec, fetches, seed=1)
    assert report.ok, [f for f in report.fetches if not f.ok]
    assert sum(f.attempts for f in report.fetches) > 40  # some Interest or Data was lost
    assert sum(s["dropped_loss"] for s in report.links.values()) > 0
    assert report.counters["a"]["retransmissions"] > 0


def test_results_are_deterministic_for_a_seed() -> None:
    spec = line(4, loss=0.1, delay_ms=3)
    fetches = [("a", "d", f"o{i}") for i in range(20)]
    one, two = simulate(spec, fetches, seed=5), simulate(spec, fetches, seed=5)
    assert stable(one) == stable(two)
    other = simulate(spec, fetches, seed=6)
    assert [f.attempts for f in other.fetches] != [f.attempts for f in one.fetches]


# --------------------------------------------------------------------------- failures


def test_failover_after_the_node_on_the_path_is_killed() -> None:
    before = simulate(GRID9, [("n00", "n22")]).fetches[0]
    victim = before.path[2]  # the middle of the shortest path
    report = simulate(GRID9, scenario=[  # derived routes, which stay: best-route's failover alone
        ("fetch", "n00", "n22", 0.0, "a"),
        ("kill", victim, 1.0),
        ("fetch", "n00", "n22", 2.0, "b"),
    ], routes="full")
    a, b = report.fetches
    assert a.ok and victim in a.path
    assert b.ok and victim not in b.path and b.hops == 4  # another shortest path
    assert b.attempts > 1  # the first Interest vanished into the dead node
    assert 1.0 <= b.rtt_s < 4.0
    assert report.dead == [victim]
    assert [s["action"] for s in report.steps] == ["fetch", "kill", "fetch"]
    assert report.exit_code == 0


def test_cut_link_fails_over_and_heal_restores_the_path() -> None:
    report = simulate(GRID9, scenario=[
        ("cut", "n00", "n01", 0.0),
        ("fetch", "n00", "n22", 0.5, "a"),
        ("heal", "n00", "n01", 10.0),
        ("fetch", "n00", "n22", 11.0, "b"),
    ], routes="full")  # derived routes, which stay: best-route's failover alone
    a, b = report.fetches
    assert a.ok and a.path[1] == "n10" and a.attempts == 2
    assert b.ok and b.path[1] == "n01" and b.attempts == 1
    assert report.links["n00-n01"]["dropped_down"] == 1


def test_restart_brings_a_node_back_with_empty_tables() -> None:
    report = simulate(LINE3, scenario=[
        ("fetch", "a", "c", 0.0),
        ("kill", "b", 1.0),
        ("fetch", "a", "c", 2.0, "x"),
        ("restart", "b", 10.0),
        ("fetch", "a", "c", 11.0, "y"),
    ], routes="full")  # derived routes, kept across the restart
    first, during, after = report.fetches
    assert first.ok and after.ok and after.path == ["a", "b", "c"]
    assert not during.ok and during.error == "timeout" and during.attempts == 4
    assert report.counters["b"]["interests_in"] == 1  # counted since the restart only
    assert report.exit_code == 1


def test_fetch_toward_a_cut_off_node_fails_and_the_exit_code_says_so() -> None:
    spec = parse({"nodes": {"a": {}, "b": {}, "z": {}}, "links": [{"ends": ["a", "b"]}]})
    report = simulate(spec, [("a", "z"), ("a", "b")])
    bad, good = report.fetches
    assert not bad.ok and bad.error == "nack no-route" and bad.hops is None and bad.path == []
    assert good.ok
    assert not report.ok and report.exit_code == 1
    assert "FAILED (nack no-route)" in format_report(report)


def test_until_stops_the_simulation_and_unfinished_fetches_fail() -> None:
    report = simulate(line(3, delay_ms=100), [("a", "c"), ("a", "b")], until=0.1)
    first, second = report.fetches
    assert first.error == "unfinished" and not first.ok
    assert second.error == "unfinished"
    assert report.sim_time_s == pytest.approx(0.1) and report.exit_code == 1


# --------------------------------------------------------------------------- scale and routes


def test_400_node_grid_corner_to_corner_is_fast() -> None:
    t0 = time.perf_counter()
    report = simulate(grid_spec(20, 20, routing="static"), [("r0c0", "r19c19"), ("r19c0", "r0c19")])
    wall = time.perf_counter() - t0
    assert report.ok and [f.hops for f in report.fetches] == [38, 38]
    assert report.node_count == 400 and report.routes == "lazy"
    assert wall < 30, wall  # typically well under a second


@pytest.mark.parametrize("spec_or_path", [GRID9, "grid6"])
def test_route_modes_give_identical_outcomes(spec_or_path) -> None:
    if spec_or_path == "grid6":
        spec = grid_spec(6, 6, delay_ms=2)
        scenario = [("fetch", "r0c0", "r5c5", 0.0), ("kill", "r2c2", 0.5), ("kill", "r0c1", 0.5),
                    ("fetch", "r0c0", "r5c5", 1.0, "b"), ("fetch", "r5c0", "r5c5", 1.0),
                    ("cut", "r4c5", "r5c5", 7.0), ("fetch", "r3c3", "r5c5", 8.0, "c")]
    else:
        spec = load(spec_or_path)
        scenario = [("fetch", "n00", "n22", 0.0), ("fetch", "n10", "n22", 0.5), ("kill", "n11", 1.0),
                    ("fetch", "n20", "n02", 2.0)]
    reports = {mode: simulate(spec, scenario=scenario, routes=mode) for mode in ("full", "destinations", "lazy")}
    outcomes = {mode: (stable(r)["fetches"], r.counters) for mode, r in reports.items()}
    assert outcomes["full"] == outcomes["destinations"] == outcomes["lazy"]
    assert all(f.ok for f in reports["full"].fetches)


def random_spec(seed: int, n: int):
    rng = random.Random(seed)
    names = [f"v{i}" for i in range(n)]
    links, seen = [], set()
    for i in range(1, n):
        if rng.random() < 0.9:  # sometimes disconnected
            j = rng.randrange(i)
            seen.add(frozenset((i, j)))
            links.append({"ends": [names[i], names[j]], "cost": rng.randint(1, 3)})
    for _ in range(n):
        i, j = rng.sample(range(n), 2)
        if frozenset((i, j)) not in seen:
            seen.add(frozenset((i, j)))
            links.append({"ends": [names[i], names[j]], "cost": 1 if seed % 2 else rng.randint(1, 4)})
    nodes = {x: ({"functions": ["m:f=/fn/any"]} if rng.random() < 0.3 else {}) for x in names}
    return parse({"nodes": nodes, "links": links})


def all_specs():
    yield from (load(p) for p in sorted(TOPOLOGIES.glob("*.toml")))
    yield from (random_spec(seed, 6 + seed % 25) for seed in range(30))
    yield grid_spec(5, 7)


def test_derive_routes_toward_destinations_is_the_full_derivation_restricted() -> None:
    for spec in all_specs():
        full = derive_routes(spec)
        originated = originated_prefixes(spec)
        names = list(spec.nodes)
        for dests in ([names[0]], names[-2:], names[::3]):
            wanted = {p for d in dests for p in originated[d]}
            expected = {n: [r for r in routes if r.prefix in wanted] for n, routes in full.items()}
            assert derive_routes(spec, destinations=dests) == expected, (spec.source, dests)
        assert derive_routes(spec, destinations=names) == full
        oracle = RouteOracle(spec)
        for n, routes in full.items():
            for prefix in oracle.prefixes():
                assert oracle.routes(n, prefix) == sorted(
                    (r for r in routes if r.prefix == prefix), key=lambda r: (r.cost, r.via))
    with pytest.raises(KeyError):
        derive_routes(load(LINE3), destinations=["nope"])


# --------------------------------------------------------------------------- scenarios and output


def test_scenario_from_a_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "failover.toml"
    path.write_text(
        '[[step]]\nat = 2.0\naction = "fetch"\nfrom = "n00"\nto = "n22"\nobject = "b"\n\n'
        '[[step]]\nat = 0\naction = "fetch"\nfrom = "n00"\nto = "n22"\n\n'
        '[[step]]\nat = 1.0\naction = "kill"\nnode = "n12"\n\n'
        '[[step]]\nat = 1.5\naction = "cut"\nends = ["n10", "n20"]\n'
    )
    steps = load_scenario(path, load(GRID9))
    assert steps == [Step(0.0, "fetch", ("n00", "n22")), Step(1.0, "kill", ("n12",)),
                     Step(1.5, "cut", ("n10", "n20")), Step(2.0, "fetch", ("n00", "n22"), "b")]
    report = simulate(GRID9, scenario=str(path), routes="full")  # a fetch at time 0
    assert [f.name for f in report.fetches] == ["/node/n22/sim/object", "/node/n22/b"]
    assert report.ok


@pytest.mark.parametrize("steps,problem", [
    ([("kill", "nope", 1.0)], "step[0]: unknown node 'nope'"),
    ([("explode", "n00", 1.0)], "step[0]: action must be one of"),
    ([("cut", "n00", "n22", 1.0)], "step[0].ends: no link between 'n00' and 'n22'"),
    ([("kill", "n00", -1)], "step[0].at: must be a number of seconds >= 0"),
    ([("fetch", "n00", 1.0)], "step[0]: expected ('fetch', FROM, TO, AT[, OBJECT])"),
    ([{"at": 1, "action": "kill", "nodes": "n00"}], "step[0].nodes: unknown key for kill"),
    ([{"action": "kill", "node": "n00"}], "step[0]: missing at"),
    ({"steps": []}, "steps: unknown key"),
])
def test_bad_scenarios_are_rejected_with_the_step_named(steps, problem: str) -> None:
    with pytest.raises(ScenarioError) as err:
        simulate(GRID9, scenario=steps)
    assert problem in str(err.value)


def test_bad_fetches_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown node 'zz'"):
        simulate(GRID9, [("n00", "zz")])
    with pytest.raises(ValueError, match="routes must be"):
        simulate(GRID9, routes="magic")


def test_report_formats() -> None:
    report = simulate(GRID9, [("n00", "n22"), ("n10", "n22")], scenario=[("kill", "n20", 0.0)])
    text = format_report(report)
    assert "fetch n00 -> n22 /node/n22/sim/object: ok, 4 hops (n00 n01 n02 n12 n22), producer at n22" in text
    assert "cache hit at n12" in text and "2/2 fetches ok" in text
    assert "interests_in" in text and "pit_aggregated" in text and "nacks_out" in text
    rows = [ln.split()[0] for ln in text.splitlines()[text.splitlines().index("") + 2:]]
    assert rows == ["n00", "n01", "n02", "n10", "n11", "n12", "n22"]  # only nodes that saw traffic
    data = json.loads(json.dumps(report_json(report)))
    assert data["ok"] is True and data["nodes"] == 9 and data["dead"] == ["n20"]
    assert data["fetches"][0]["from"] == "n00" and data["fetches"][0]["hops"] == 4
    assert data["fetches"][1]["cache_hit"] is True
    assert data["counters"]["n12"]["cs_hits"] == 1


def test_no_fetches_is_success() -> None:
    report = simulate(LINE3, routes="full")  # link-state would run until routes converge
    assert report.fetches == [] and report.exit_code == 0 and report.sim_time_s == 0


# --------------------------------------------------------------------------- icnd.sim additions


def test_sim_network_links_use_the_link_model_and_can_be_cut() -> None:
    net = SimNetwork(seed=2)
    for n in "ab":
        net.add_node(n)
    link = net.link("a", "b", delay=0.010, bandwidth_mbps=8)
    assert link.delay == pytest.approx(0.010) and link.params.bandwidth_mbps == 8
    producer = net.app("b")
    producer.serve("/p", lambda i: Data(i.name, b"x" * 1000, freshness_ms=1000))
    face = next(iter(net.nodes["a"].peers))
    net.nodes["a"].fw.add_route(Name("/p"), face)
    consumer = net.app("a")
    f1 = consumer.fetch("/p/1", lifetime_ms=500, retries=0)
    net.run(until=0.015)  # the Data is on its way back
    net.cut("a", "b")
    net.run(until=1)
    assert f1.result is None and f1.finished  # lost in flight when the link was cut
    assert link.dropped_in_flight == 1
    net.heal("a", "b")
    f2 = consumer.fetch("/p/2", lifetime_ms=500, retries=0)
    net.run(until=2)
    assert f2.done and f2.path == ["a", "b"] and f2.origin == "app"
    # 1 kB at 8 Mbit/s is ~1 ms of serialization on top of 20 ms of propagation
    assert 0.021 < f2.rtt < 0.023


# --------------------------------------------------------------------------- against the launcher

COMPARED = ("interests_in", "interests_out", "data_in", "data_out", "cs_hits", "cs_misses", "pit_aggregated",
            "retransmissions", "nacks_in", "nacks_out", "unsolicited_data")


async def test_simulator_reproduces_the_launcher_on_grid9(workdir) -> None:
    """Same paths, same cache hits, same forwarder counters as real daemons."""
    import trio

    from icnd.topology.launcher import launch

    spec = dataclasses.replace(load(GRID9), routing="static")  # routes at time 0, in both
    sim = simulate(spec, scenario=[
        ("fetch", "n00", "n22", 0.0), ("fetch", "n10", "n22", 0.1), ("fetch", "n20", "n22", 0.2),
        ("kill", "n12", 1.0), ("fetch", "n00", "n22", 2.0, "b"),
    ])
    assert sim.ok
    with trio.fail_after(60):
        async with launch(spec, workdir=workdir) as net:
            producer = await net.connect("n22")
            for suffix in ("sim/object", "b"):  # digest-signed: no key fetch to verify
                await producer.publish(f"/node/n22/{suffix}", b"x" * 1024, freshness=3600, sign_by="client")
            for src in ("n00", "n10", "n20"):
                await (await net.connect(src)).fetch("/node/n22/sim/object", verify=False)
            holders = set()
            for name in spec.nodes:
                entries = await (await net.connect(name)).command("cs", "list", prefix="/node/n22/sim")
                if any(e["name"] == "/node/n22/sim/object" for e in entries):
                    holders.add(name)
            await net.kill("n12")
            await (await net.connect("n00")).fetch("/node/n22/b", verify=False)
            # the fetch returns on the first Data; a duplicate (e.g. an unsolicited copy from the other
            # path) may still be in flight on a loaded machine: read until equal, for at most 3 s
            with trio.move_on_after(3):
                while True:
                    real = {name: (await net.status(name))["counters"] for name in spec.nodes if name != "n12"}
                    if all({k: c[k] for k in COMPARED} == {k: sim.counters[n][k] for k in COMPARED}
                           for n, c in real.items()):
                        break
                    await trio.sleep(0.1)
    # the Data of the first three fetches was cached along their paths, nowhere else
    assert holders == {n for f in sim.fetches[:3] for n in f.path} | {"n22"}
    assert [f.served_by for f in sim.fetches] == ["n22", "n12", "n22", "n22"]
    for name, counters in real.items():
        assert {k: counters[k] for k in COMPARED} == {k: sim.counters[name][k] for k in COMPARED}, name
