"""Topologies: describe a network in TOML, derive its routes, launch or simulate it (interface §6).

    spec.py       the description: nodes, links, groups; parse/load/validate (pure)
    routes.py     the routes every node gets, derived from the graph (pure)
    launcher.py   ``launch()``: one ``icnd run`` daemon per node; ``icnd topo up/down``
    netns.py      the launcher's network-namespace mode (root only)

and `simulate` & co, which live with the simulator in `icnd.sim.scenario`
(the same description, run on the forwarding core on a virtual clock).

This package is only a façade: every public name is looked up on first use
(PEP 562 ``__getattr__``), not imported here, for two reasons.  The layering
stays one-way: the simulator (`icnd.sim`) imports this package's pure
description modules, so importing `icnd.topology.spec` must not import the
simulator back, nor the launcher's client and trio; the façade's table names
the simulator only as the place to find `simulate`, and no module of this
package imports it.  And a tool that only reads topology files pays for
`spec` and `routes` alone.  (This is also why the launcher module is
`launcher`, not `launch`: a submodule named like the `launch` function would
replace the function on this package as soon as anyone imported it.)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from icnd.topology.launcher import LaunchError, Network, NodeHandle, launch, topo_down, topo_up
    from icnd.topology.netns import NetnsUnavailable
    from icnd.topology.routes import Route, RouteOracle, derive_routes, originated_prefixes, shortest_distances
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

_HOMES = {
    "icnd.topology.spec": (
        "GroupMember", "GroupSpec", "LinkParams", "LinkSpec", "NodeSpec", "TopologyError", "TopologySpec", "load",
        "node_prefix", "parse",
    ),
    "icnd.topology.routes": ("Route", "RouteOracle", "derive_routes", "originated_prefixes", "shortest_distances"),
    "icnd.topology.launcher": ("LaunchError", "Network", "NodeHandle", "launch", "topo_down", "topo_up"),
    "icnd.topology.netns": ("NetnsUnavailable",),
    "icnd.sim.scenario": (
        "FetchResult", "ScenarioError", "SimReport", "Step", "format_report", "grid_spec", "load_scenario",
        "report_json", "simulate",
    ),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    try:
        module = _HOME[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
