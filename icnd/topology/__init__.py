"""Topologies: describe a network in TOML, derive its routes, launch or simulate it (interface §6).

    spec.py       the description: nodes, links, groups; parse/load/validate (pure)
    routes.py     the routes every node gets, derived from the graph (pure)
    launcher.py   ``launch()``: one ``icnd run`` daemon per node; ``icnd topo up/down``
    netns.py      the launcher's network-namespace mode (root only)

and `simulate` & co, which live with the simulator (`icnd.sim`, which
exports them: the same description, run on the forwarding core on a
virtual clock).

This package is only a façade: every public name is imported on first use
(PEP 562 ``__getattr__``), not when the package is, for two reasons.  The
simulator (`icnd.sim`) imports this package's pure description modules, so
importing `icnd.topology.spec` must not import the simulator back, nor the
launcher's client and trio; the façade's ``simulate`` comes from `icnd.sim`
only when asked for (the layering contract lets this one import of the
façade through: ``[tool.importlinter]`` in pyproject.toml).  And a tool that
only reads topology files pays for `spec` and `routes` alone.  (This is also
why the launcher module is `launcher`, not `launch`: a submodule named like
the `launch` function would replace the function on this package as soon as
anyone imported it.)
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from icnd.sim import (
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
    "spec": (
        "GroupMember", "GroupSpec", "LinkParams", "LinkSpec", "NodeSpec", "TopologyError", "TopologySpec", "load",
        "node_prefix", "parse",
    ),
    "routes": ("Route", "RouteOracle", "derive_routes", "originated_prefixes", "shortest_distances"),
    "launcher": ("LaunchError", "Network", "NodeHandle", "launch", "topo_down", "topo_up"),
    "netns": ("NetnsUnavailable",),
    "sim": (
        "FetchResult", "ScenarioError", "SimReport", "Step", "format_report", "grid_spec", "load_scenario",
        "report_json", "simulate",
    ),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_HOME)


def _import(module: str) -> ModuleType:
    """The module `_HOMES` names, imported now (each import spelled out, so the linter sees it)."""
    if module == "spec":
        from icnd.topology import spec
        return spec
    if module == "routes":
        from icnd.topology import routes
        return routes
    if module == "launcher":
        from icnd.topology import launcher
        return launcher
    if module == "netns":
        from icnd.topology import netns
        return netns
    import icnd.sim
    return icnd.sim


def __getattr__(name: str) -> Any:
    try:
        module = _HOME[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(_import(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
