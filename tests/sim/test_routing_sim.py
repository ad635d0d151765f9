"""Link-state routing in the simulator (icnd.sim.routing, ``routes="link-state"``):
the daemon's router on the virtual clock, convergence, failures and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icnd.cli.app import main as cli_main
from icnd.core.routing import RouterConfig
from icnd.core.tables.rib import ORIGIN_ROUTING
from icnd.sim.network import SimNetwork
from icnd.sim.routing import ConvergenceLog, SimRouting
from icnd.sim.scenario import ROUTING_HORIZON_S, format_report, grid_spec, report_json, simulate
from icnd.topology.routes import derive_routes, originated_prefixes
from icnd.topology.spec import TopologyError, TopologySpec, parse

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
GRID9 = TOPOLOGIES / "grid9.toml"


def build(spec: TopologySpec, config: RouterConfig | None = None) -> tuple[SimNetwork, SimRouting, ConvergenceLog]:
    """What `simulate` builds for link-state, to look at the RIBs."""
    net = SimNetwork(seed=1)
    for name in spec.nodes:
        net.add_node(name)
    for link in spec.links:
        net.link(link.a, link.b, delay=link.delay_ms / 1000)
    routing = SimRouting(net, originated_prefixes(spec), costs={frozenset(l.ends): l.cost for l in spec.links},
                         config=config)
    log = ConvergenceLog(routing)
    log.converged(net.stop)
    routing.start()
    return net, routing, log


def installed(net: SimNetwork) -> dict[str, set[tuple[str, str, int]]]:
    """node -> {(prefix, neighbour, cost)} of its routing-origin routes."""
    out: dict[str, set[tuple[str, str, int]]] = {}
    for name, node in net.nodes.items():
        rows = set()
        for route in node.fw.rib:
            if route.origin == ORIGIN_ROUTING:
                rows.add((route.prefix.to_uri(), node.peers[route.face][1].name, route.cost))
        out[name] = rows
    return out


def derived(spec: TopologySpec) -> dict[str, set[tuple[str, str, int]]]:
    return {n: {(r.prefix, r.via, r.cost) for r in routes} for n, routes in derive_routes(spec).items()}


def weighted_grid(rows: int, cols: int) -> TopologySpec:
    """A grid with uneven costs and delays and a function hosted twice (anycast)."""
    spec = grid_spec(rows, cols)
    links = [{"ends": [l.a, l.b], "cost": 1 + (i * 7) % 4, "delay_ms": 1 + i % 3} for i, l in enumerate(spec.links)]
    nodes = {n: {} for n in spec.nodes}
    nodes["r0c0"] = {"functions": ["m:f=/fn/f"]}
    nodes[f"r{rows - 1}c{cols - 1}"] = {"functions": ["m:f=/fn/f"]}
    return parse({"nodes": nodes, "links": links}, f"<weighted {rows}x{cols}>")


@pytest.mark.parametrize("spec", [grid_spec(3, 3), grid_spec(5, 5, delay_ms=2), weighted_grid(5, 5)],
                         ids=["grid3x3", "grid5x5", "weighted5x5"])
def test_grids_converge_to_exactly_the_derived_routes(spec: TopologySpec) -> None:
    net, routing, log = build(spec)
    net.run(until=30)
    assert log.convergence_s is not None and log.convergence_s < 2
    net.run(until=net.now + 2)  # function prefixes follow the same records: let every computation land
    assert installed(net) == derived(spec)
    assert routing.consistent and routing.refused() == 0


def test_a_cut_reconverges_and_a_fetch_across_it_then_goes_around_at_once() -> None:
    report = simulate(GRID9, scenario=[("cut", "n00", "n01", 2.0), ("fetch", "n00", "n01", 8.0)])
    (fetch,) = report.fetches
    assert fetch.ok and fetch.attempts == 1 and fetch.hops == 3 and fetch.path[:2] == ["n00", "n10"]
    section = report.routing
    assert section is not None and section["converged"]
    (cut,) = section["failures"]
    assert cut["action"] == "cut" and cut["nodes"] == ["n00", "n01"] and cut["at"] == 2.0
    # noticed when hellos stop: within the dead interval (3 s) after the last hello, plus a computation
    assert 2.0 <= cut["reconvergence_s"] <= 3.0 + 0.5


def test_a_killed_node_loses_its_routes_everywhere_and_other_fetches_still_work() -> None:
    spec = grid_spec(3, 3)
    net, routing, log = build(spec)
    net.run(until=10)
    assert log.convergence_s is not None
    assert all("/node/r1c1" in {p for p, _, _ in rows} for n, rows in installed(net).items() if n != "r1c1")
    done: list[float] = []
    log.failure("kill", ["r1c1"], lambda: done.append(net.now))
    killed_at = net.now
    routing.kill("r1c1")
    net.run(until=killed_at + 1.0)  # within the dead interval: still routed toward
    assert any("/node/r1c1" in {p for p, _, _ in rows} for n, rows in installed(net).items() if n != "r1c1")
    net.run(until=killed_at + 10)
    assert done and killed_at + 2.0 <= done[0] <= killed_at + 3.5
    for name, rows in installed(net).items():
        if name != "r1c1":
            assert not any(p == "/node/r1c1" or via == "r1c1" for p, via, _ in rows), name
    report = simulate(spec, scenario=[("kill", "r1c1", 1.0), ("fetch", "r0c1", "r2c1", 6.0)])
    (fetch,) = report.fetches
    assert fetch.ok and fetch.attempts == 1 and "r1c1" not in fetch.path and fetch.hops == 4
    assert report.routing is not None and report.routing["failures"][0]["reconvergence_s"] is not None


def test_a_restarted_node_comes_back_with_a_newer_record() -> None:
    spec = parse({"nodes": {"a": {}, "b": {}, "c": {}}, "links": [{"ends": ["a", "b"]}, {"ends": ["b", "c"]}]})
    net, routing, log = build(spec)
    net.run(until=5)
    before = routing.router("b").version
    routing.kill("b")
    net.run(until=10)
    assert not any(p == "/node/c" for p, _, _ in installed(net)["a"])
    routing.restart("b")
    assert not installed(net)["b"] and not routing.router("b").lsdb.get("/node/a")  # fresh: no routes, no records
    net.run(until=20)
    assert routing.router("b").version > before  # past its previous life's record (Rule 2)
    assert ("/node/c", "b", 2) in installed(net)["a"] and routing.consistent
    report = simulate(spec, scenario=[("kill", "b", 1.0), ("restart", "b", 6.0), ("fetch", "a", "c", 12.0)])
    (fetch,) = report.fetches
    assert fetch.ok and fetch.path == ["a", "b", "c"]
    assert report.routing is not None
    assert [f["action"] for f in report.routing["failures"]] == ["kill", "restart"]
    assert all(f["reconvergence_s"] is not None for f in report.routing["failures"])


def test_fetches_wait_for_convergence_and_the_report_has_a_routing_section() -> None:
    report = simulate(grid_spec(4, 4, delay_ms=1), [("r0c0", "r3c3")], steady_s=5)
    assert report.routes == "link-state" and report.ok
    section = report_json(report)["routing"]
    json.dumps(section)
    assert section["converged"] and section["consistent"]
    assert report.fetches[0].started_s == pytest.approx(section["convergence_s"])
    cold, whole = section["cold_start"], section["whole_run"]
    assert 0 < cold["messages_per_node"]["mean"] <= cold["messages_per_node"]["max"]
    assert whole["bytes_per_node"]["mean"] > cold["bytes_per_node"]["mean"] > 0
    assert cold["route_computations"]["total"] >= 16
    steady = section["steady"]
    assert steady["window_s"] == 5
    # hellos only: one Interest and one answer per neighbour per second (2 to 4 neighbours)
    assert 4 <= steady["messages_per_s_per_node"]["mean"] <= 8.5
    assert steady["bytes_per_s_per_node"]["max"] > 0
    assert report.sim_time_s == pytest.approx(report.fetches[0].started_s + report.fetches[0].rtt_s + 5)


def test_routes_auto_follows_the_topology_and_static_keeps_derived_routes() -> None:
    static = simulate(grid_spec(3, 3, routing="static"), [("r0c0", "r2c2")])
    assert static.routes == "full" and static.routing is None and static.fetches[0].started_s == 0
    assert simulate(grid_spec(3, 3), [("r0c0", "r2c2")]).routes == "link-state"
    forced = simulate(grid_spec(3, 3, routing="static"), [("r0c0", "r2c2")], routes="link-state", steady_s=0)
    assert forced.routes == "link-state" and forced.routing is not None and forced.routing["steady"] is None


def test_simulations_repeat_exactly_for_a_seed() -> None:
    spec = grid_spec(4, 4, delay_ms=1, loss=0.05)
    runs = [simulate(spec, [("r0c0", "r3c3")], scenario=[("cut", "r0c0", "r0c1", 3.0)], seed=3, steady_s=2)
            for _ in range(2)]
    assert runs[0].routing == runs[1].routing
    assert runs[0].routing is not None and runs[0].routing["converged"]


def test_routing_never_converging_stops_at_the_horizon() -> None:
    spec = parse({"nodes": {"a": {}, "b": {}}, "links": [{"ends": ["a", "b"], "loss": 1.0}]})
    report = simulate(spec, [("a", "b")])
    assert report.routing is not None and not report.routing["converged"]
    assert report.sim_time_s == ROUTING_HORIZON_S and report.routing["steady"] is None
    assert report.fetches[0].error == "unfinished" and report.exit_code == 1
    alone = simulate(spec, until=30)  # no fetch to fail: the exit code still says routing never converged
    assert alone.ok and alone.routing is not None and not alone.routing["converged"] and alone.exit_code == 1
    assert "NOT converged" in format_report(alone)


def test_topology_routing_key() -> None:
    nodes = {"a": {}}
    assert parse({"nodes": nodes}).routing == "link-state"
    assert parse({"routing": "static", "nodes": nodes}).routing == "static"
    with pytest.raises(TopologyError, match=r"t.toml: routing: must be one of link-state, static, got 'ospf'"):
        parse({"routing": "ospf", "nodes": nodes}, "t.toml")


def test_cli_topo_sim_prints_the_routing_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "cut.toml"
    scenario.write_text('[[step]]\nat = 2.0\naction = "cut"\nends = ["n00", "n01"]\n')
    assert cli_main(["topo", "sim", str(GRID9), "--fetch", "n00", "n22", "--scenario", str(scenario)]) == 0
    text = capsys.readouterr().out
    assert "routing link-state (hello 1 s, dead 3 s, hold-down 0.2 s): converged at" in text
    assert "cold start:" in text and "messages/node" in text and "route computations" in text
    assert "cut n00 n01 at 2.000 s: routes consistent again after" in text
    assert "steady state over 10 s:" in text
    assert cli_main(["topo", "sim", str(GRID9), "--fetch", "n00", "n22", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["routes"] == "link-state" and data["routing"]["converged"] is True
    assert set(data["routing"]) >= {"convergence_s", "cold_start", "whole_run", "failures", "steady", "config"}


def test_route_updates_a_full_rib_refuses_are_counted_not_raised() -> None:
    report = simulate(grid_spec(3, 3), forwarder_options={"rib_max_routes": 4}, until=5)
    assert report.routing is not None and report.routing["routes_refused"] > 0
    assert not report.routing["converged"] and report.exit_code == 1
