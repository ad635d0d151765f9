"""``routing/*``: what the node announces network-wide, and what its routing knows.

The manager is the management face of the node's routing shell
(`icnd.daemon.routing`), reached only through `RoutingControl`: it parses
arguments and turns the shell's answers into command results, nothing more.
The shell decides what may be announced (its bounds, the scope rules) and
counts what it refuses; keeping those decisions in one place means a prefix
refused through ``icnd announce`` is refused for the same reason and under
the same counter as one an application announces by serving it.

A node may run without routing (``control`` is None, e.g. a topology with
``routing = "static"``): every command then answers 409, so a script learns
that routing is off rather than that a prefix is unknown.
"""

from __future__ import annotations

from typing import Any, Protocol

from icnd.core.routing.placement import MAX_REFS
from icnd.core.routing.router import Router
from icnd.daemon.mgmt.args import arg, name_arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.errors import CommandError
from icnd.faces import Face
from icnd.name import Name

MAX_LOAD_VALUE = 1_000_000  # the largest capacity or load a function host may report

ROUTING_OFF = ("routing is off on this node (its configuration turns link-state routing off, "
               "e.g. a topology with routing = \"static\"): only static and application routes")


class RoutingControl(Protocol):
    """What the routing shell offers management (implemented by `icnd.daemon.routing`)."""

    def announce(self, prefix: Name) -> None:
        """Originate `prefix` from this node (idempotent: announcing it again
        is no change).  Raises CommandError(409, ...) when the node's bound of
        announced prefixes (or its record size) would be exceeded, and
        CommandError(400, ...) for a /localhost or /localhop name."""
        ...

    def withdraw(self, prefix: Name) -> bool:
        """Stop originating `prefix` as an explicit announcement.  False when it
        was not announced explicitly (a prefix announced because an application
        serves it stays until the application goes)."""
        ...

    def set_load(self, prefix: Name, capacity: int | None, load: int | None) -> None:
        """A function host's capacity (calls it runs at once) and load (calls
        running or queued) for `prefix`, announced with it.  Raises
        CommandError(404, ...) when no local application serves `prefix`."""
        ...

    @property
    def router(self) -> Router:
        """The node's sans-IO router, read for ``routing/place`` (`Router.place`)."""
        ...

    def status(self) -> dict[str, Any]:
        """The ``routing/status`` result (the ``icnd routing --json`` object,
        docs/management.md#routing): plain msgpack-able values only."""
        ...


class RoutingManager:
    def __init__(self, control: RoutingControl | None) -> None:
        self.control = control

    def commands(self) -> Commands:
        return {
            ("routing", "status"): self.status,
            ("routing", "announce"): self.announce,
            ("routing", "withdraw"): self.withdraw,
            ("routing", "load"): self.load,
            ("routing", "place"): self.place,
        }

    def _control(self) -> RoutingControl:
        if self.control is None:
            raise CommandError(409, ROUTING_OFF)
        return self.control

    async def status(self, face: Face, args: dict[str, Any]) -> Any:
        return self._control().status()

    async def announce(self, face: Face, args: dict[str, Any]) -> Any:
        control = self._control()
        prefix = name_arg(arg(args, "prefix", str))
        control.announce(prefix)
        return {"prefix": prefix.to_uri()}

    async def withdraw(self, face: Face, args: dict[str, Any]) -> Any:
        control = self._control()
        prefix = name_arg(arg(args, "prefix", str))
        if not control.withdraw(prefix):
            raise CommandError(404, f"{prefix} is not announced by 'icnd announce' on this node "
                                    "(a prefix an application serves is withdrawn when the application stops)")
        return {"prefix": prefix.to_uri()}

    async def load(self, face: Face, args: dict[str, Any]) -> Any:
        """A function host reports {prefix, capacity, load} (integers 0..`MAX_LOAD_VALUE`)."""
        control = self._control()
        prefix = name_arg(arg(args, "prefix", str))
        values = {}
        for key in ("capacity", "load"):
            value = arg(args, key, int)
            if not 0 <= value <= MAX_LOAD_VALUE:
                raise CommandError(400, f"{key} {value} is out of range (0..{MAX_LOAD_VALUE})")
            values[key] = value
        control.set_load(prefix, values["capacity"], values["load"])
        return {"prefix": prefix.to_uri(), **values}

    async def place(self, face: Face, args: dict[str, Any]) -> Any:
        """The hosts of function ``fn`` for a call with arguments ``refs`` (name URIs, at most
        `MAX_REFS`), best first: ``{"hosts": [{node, cost, capacity, load}, ...]}``, cost None
        for a host that is no candidate (`icnd.core.routing.placement`); empty when no node
        announces ``fn``."""
        control = self._control()
        fn = name_arg(arg(args, "fn", str), "function name")
        refs = arg(args, "refs", list, [])
        if len(refs) > MAX_REFS:
            raise CommandError(400, f"{len(refs)} refs, more than {MAX_REFS}")
        names = []
        for ref in refs:
            if not isinstance(ref, str):
                raise CommandError(400, "refs must be name URIs (strings)")
            names.append(name_arg(ref, "ref"))
        hosts = control.router.place(fn, names)
        return {"hosts": [{"node": h.node, "cost": h.cost, "capacity": h.capacity, "load": h.load}
                          for h in hosts]}
