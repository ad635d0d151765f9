"""Topologies: describe a network in TOML, derive its routes, launch or simulate it (interface §6)."""

from .launch import LaunchError, Network, NodeHandle, launch, topo_down, topo_up
from .netns import NetnsUnavailable
from .routes import Route, RouteOracle, derive_routes, originated_prefixes, shortest_distances
from .simulate import (
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
from .spec import (
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
