"""Link-state routing, sans-IO: records and their database (``lsdb.py``),
multipath shortest paths (``paths.py``) and the router state machine
(``router.py``: hellos, sync, route computation; its rules at its top)."""

from icnd.core.routing.router import ROUTING_PREFIX, Hop, RouteUpdate, Router, RouterConfig, Transmit, is_routing_name

__all__ = ["ROUTING_PREFIX", "Hop", "RouteUpdate", "Router", "RouterConfig", "Transmit", "is_routing_name"]
