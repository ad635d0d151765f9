"""Topologies: describe a network in TOML, derive its routes, launch or simulate it (interface §6)."""

from icnd.topology.launch import LaunchError, Network, NodeHandle, launch, topo_down, topo_up
from icnd.topology.netns import NetnsUnavailable
from icnd.topology.routes import Route, RouteOracle, derive_routes, originated_prefixes, shortest_distances
from icnd.sim.scenario import (
    FetchResult,
    ScenarioError,
    SimReport,
    Step,
    format_report,
    grid_spec,
    load_scenario,
    report_json,
    simulate,
)
from icnd.topology.spec import (
    GroupMember,
    GroupSpec,
    LinkParams,
    LinkSpec,
    NodeSpec,
    TopologyError,
    TopologySpec,
    load,
    node_prefix,
    parse,
)

__all__ = [
    "FetchResult",
    "RouteOracle",
    "ScenarioError",
    "SimReport",
    "Step",
    "format_report",
    "grid_spec",
    "load_scenario",
    "report_json",
    "simulate",
    "LaunchError",
    "NetnsUnavailable",
    "Network",
    "NodeHandle",
    "launch",
    "topo_down",
    "topo_up",
    "GroupMember",
    "GroupSpec",
    "LinkParams",
    "LinkSpec",
    "NodeSpec",
    "Route",
    "TopologyError",
    "TopologySpec",
    "derive_routes",
    "load",
    "node_prefix",
    "originated_prefixes",
    "parse",
    "shortest_distances",
]
