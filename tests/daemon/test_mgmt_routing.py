"""``routing/*`` management: `Client.announce/withdraw/routing` through the real
dispatcher to a `RoutingManager`, over an in-memory local face, with a fake
routing shell (`RoutingControl`) standing in for the node's.

What is checked here is the manager's part only: arguments parsed, the
shell's refusals carried to the client with their codes, withdraw of
something never announced is 404, and a node without routing answers 409
to every command.  The shell's own rules (bounds, scopes) are the lead's
tests; the whole path through a real daemon is tests/integration.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import pytest
import trio

from icnd.client.door import Client
from icnd.codec import decode
from icnd.daemon.mgmt.dispatcher import Dispatcher
from icnd.daemon.mgmt.routing import RoutingControl, RoutingManager
from icnd.errors import CommandError
from icnd.faces import Face, NativeLinkService, memory_face_pair
from icnd.name import Name
from icnd.packet import Interest

STATUS: dict[str, Any] = {
    "name": "/node/a", "routing": "link-state",
    "neighbors": [{"name": "/node/b", "uri": "tcp://127.0.0.1:6363", "face": 5, "state": "up", "cost": 1,
                   "last_hello_s": 0.4}],
    "lsdb": [{"origin": "/node/b", "version": 123, "age_s": 1.2, "expires_in_s": 1790.0,
              "adjacencies": [{"name": "/node/a", "cost": 1}], "prefixes": [{"prefix": "/node/b"}]}],
    "announced": ["/node/a"], "routes": 1, "counters": {"announce_refused": 0},
}


class FakeControl:
    """A routing shell with the documented refusals and a bound of `limit` prefixes."""

    def __init__(self, limit: int = 3) -> None:
        self.limit = limit
        self.announced: list[Name] = []

    def announce(self, prefix: Name) -> None:
        if prefix.comps[:1] in ((b"\x08localhost",), (b"\x08localhop",)):
            raise CommandError(400, f"{prefix}: /localhost and /localhop names are never announced")
        if prefix in self.announced:
            return
        if len(self.announced) >= self.limit:
            raise CommandError(409, f"{prefix}: this node announces {self.limit} prefixes already")
        self.announced.append(prefix)

    def withdraw(self, prefix: Name) -> bool:
        if prefix not in self.announced:
            return False
        self.announced.remove(prefix)
        return True

    def status(self) -> dict[str, Any]:
        return {**STATUS, "announced": [p.to_uri() for p in self.announced]}


@asynccontextmanager
async def attached(control: RoutingControl | None) -> AsyncIterator[Client]:
    """A client on a local memory face whose other end is a dispatcher with only the routing manager."""
    client_face, node_face = memory_face_pair(local=True)
    async with trio.open_nursery() as nursery:
        dispatcher = Dispatcher(nursery.start_soon)
        dispatcher.add(RoutingManager(control))
        link = NativeLinkService(node_face)

        def on_node_receive(face: Face, wire: bytes) -> None:
            packet = decode(wire)
            assert isinstance(packet, Interest)
            assert dispatcher.scopes(face)  # a local face: management is answered
            dispatcher.receive(face, link, packet)

        nursery.start_soon(node_face.run, on_node_receive)
        client = Client(client_face, nursery)
        nursery.start_soon(client_face.run, client.on_receive)
        try:
            with trio.fail_after(5):
                yield client
        finally:
            await client.aclose()
            nursery.cancel_scope.cancel()


async def test_announce_withdraw_and_status_reach_the_routing_shell() -> None:
    control = FakeControl()
    async with attached(control) as c:
        assert await c.announce("/videos") is None
        await c.announce(Name("/x/y"))
        await c.announce("/videos")  # again: no change, no error
        assert control.announced == [Name("/videos"), Name("/x/y")]
        status = await c.routing()
        assert status["announced"] == ["/videos", "/x/y"]
        assert status["neighbors"] == STATUS["neighbors"] and status["lsdb"] == STATUS["lsdb"]
        assert await c.command("routing", "announce", prefix="/z") == {"prefix": "/z"}
        assert await c.withdraw("/videos") is None
        assert control.announced == [Name("/x/y"), Name("/z")]
        assert await c.command("routing", "withdraw", prefix="/z") == {"prefix": "/z"}


async def test_withdraw_of_what_was_never_announced_is_404() -> None:
    control = FakeControl()
    async with attached(control) as c:
        await c.announce("/a")
        await c.withdraw("/a")
        for prefix in ("/a", "/never"):
            with pytest.raises(CommandError) as info:
                await c.withdraw(prefix)
            assert info.value.status == 404 and prefix in info.value.message
        assert control.announced == []


async def test_the_shells_refusals_reach_the_client_with_their_codes() -> None:
    control = FakeControl(limit=1)
    async with attached(control) as c:
        await c.announce("/one")
        with pytest.raises(CommandError) as info:
            await c.announce("/two")
        assert info.value.status == 409 and "/two" in info.value.message
        for local in ("/localhost/x", "/localhop/y"):
            with pytest.raises(CommandError) as info:
                await c.announce(local)
            assert info.value.status == 400
        assert control.announced == [Name("/one")]


@pytest.mark.parametrize("params", [{}, {"prefix": 7}, {"prefix": b"/x"}, {"prefix": "no-slash%zz"}])
async def test_bad_arguments_are_400_and_never_reach_the_shell(params: dict) -> None:
    control = FakeControl()
    async with attached(control) as c:
        for verb in ("announce", "withdraw"):
            with pytest.raises(CommandError) as info:
                await c.command("routing", verb, **params)
            assert info.value.status == 400, (verb, params, info.value)
        assert control.announced == []
        assert (await c.routing())["name"] == "/node/a"  # and the manager still answers


async def test_without_routing_every_command_is_409_routing_off() -> None:
    async with attached(None) as c:
        for call in (c.routing, lambda: c.announce("/x"), lambda: c.withdraw("/x")):
            with pytest.raises(CommandError) as info:
                await call()
            assert info.value.status == 409 and "routing is off on this node" in info.value.message


async def test_a_bug_in_the_shell_is_a_500_and_the_manager_keeps_answering() -> None:
    class Broken(FakeControl):
        def status(self) -> dict[str, Any]:
            raise RuntimeError("lsdb iterator invalidated")

    async with attached(Broken()) as c:
        with pytest.raises(CommandError) as info:
            await c.routing()
        assert info.value.status == 500 and "lsdb iterator invalidated" in info.value.message
        await c.announce("/still")  # the next command is answered
