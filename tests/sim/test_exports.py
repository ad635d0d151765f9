"""`icnd.sim` exports the scenario runner; `icnd.topology` offers the same objects (interface §6)."""

from __future__ import annotations

import icnd.sim
import icnd.topology
from icnd.sim import scenario


def test_the_simulator_package_exports_simulate_and_the_topology_facade_offers_the_same() -> None:
    for name in icnd.sim.__all__:
        assert getattr(icnd.sim, name) is getattr(scenario, name)
        assert getattr(icnd.topology, name) is getattr(icnd.sim, name)
