"""The simulator: the real forwarding core on a virtual clock, in one process.

    network.py    the engine: `SimNetwork`, forwarder cores joined by modelled links
                  (delay, loss, bandwidth, cuts), every packet encoded and decoded
    routing.py    the link-state routing protocol (`icnd.core.routing`) on every node,
                  on the virtual clock; when routes are consistent; its traffic
    scenario.py   a topology (`icnd.topology.spec`) run on the engine: routes by the
                  protocol or as the launcher derives them, fetches, timed failures, a report
                  (``icnd topo sim``, `icnd.topology.simulate`)

The engine depends on the core and the link model only (the routing shell
also names nodes as `icnd.topology.spec.node_prefix` does); the scenario
runner also reads the topology description (`icnd.topology.spec`,
`icnd.topology.routes`), never the launcher.

The scenario runner's public names (`simulate` & co) are exported here;
`icnd.topology` offers them too (interface §6), imported from this package
when first used.
"""

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

__all__ = [
    "FetchResult", "ScenarioError", "SimReport", "Step", "format_report", "grid_spec", "load_scenario",
    "report_json", "simulate",
]
