"""The simulator: the real forwarding core on a virtual clock, in one process.

    network.py    the engine: `SimNetwork`, forwarder cores joined by modelled links
                  (delay, loss, bandwidth, cuts), every packet encoded and decoded
    scenario.py   a topology (`icnd.topology.spec`) run on the engine: routes as the
                  launcher derives them, fetches, timed failures, a report
                  (``icnd topo sim``, `icnd.topology.simulate`)

The engine depends on the core and the link model only; the scenario
runner also reads the topology description (`icnd.topology.spec`,
`icnd.topology.routes`), never the launcher.  `icnd.topology` offers
`simulate` & co by name (PEP 562) without importing this package.
"""
