"""Issue #26 against real daemons: one datagram from any port, and the containment boundary."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import msgpack
import trio

from icnd.codec import encode
from icnd.core.routing.router import ROUTING_PREFIX
from icnd.packet import Interest
from icnd.testing.processes import free_ports


async def _until_routed(client: Any, prefix: str, timeout: float = 15) -> None:
    with trio.fail_after(timeout):
        while not any(r["prefix"] == prefix for r in await client.command("route", "list")):
            await trio.sleep(0.1)


async def test_r4_one_datagram_from_any_port_does_not_stop_a_node(daemons: Any) -> None:
    """Before: node a exited 1 (``number out of range for a name component``), or its own version
    became 2**63 and every receiver refused its records."""
    pa, pb = free_ports(2)
    a = await daemons.start("a", "--neighbor", f"udp://127.0.0.1:{pb}", listen=(f"udp://127.0.0.1:{pa}",))
    await daemons.start("b", "--neighbor", f"udp://127.0.0.1:{pa}", listen=(f"udp://127.0.0.1:{pb}",))
    async with a.connect() as c:
        await _until_routed(c, "/node/b")
        version = (await c.command("routing", "status"))["version"]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for ver in (2**64 - 1, 2**63 - 1):
            for claimed in ("/node/b", "/node/c"):
                body = msgpack.packb({"n": claimed, "v": [["/node/a", ver]]})
                s.sendto(encode(Interest.with_params(ROUTING_PREFIX.append("sync"), body)), ("127.0.0.1", pa))
    await trio.sleep(1.5)
    assert a.proc.poll() is None
    async with a.connect() as c:
        status = await c.command("routing", "status")
        assert status["version"] < version + 100
        assert status["counters"]["messages_not_neighbor"] >= 2
        await _until_routed(c, "/node/b", 5)


async def test_a_handler_that_raises_costs_one_packet_never_the_node(tmp_path: Path) -> None:
    """The containment boundary: whatever a handler raises on a received packet or a timer is
    counted by component and the node goes on (a defect is injected: nothing in icnd raises here)."""
    from icnd.client.door import connect
    from icnd.daemon.config import NodeConfig
    from icnd.daemon.node import Node

    (port,) = free_ports(1)
    sock = str(tmp_path / "n.sock")
    node = Node(NodeConfig(name="/node/a", socket=sock, listen=[f"udp://127.0.0.1:{port}"]))
    await node.bind()
    assert node.routing is not None

    def broken(*args: Any) -> Any:
        raise RuntimeError("injected defect")

    node.routing.router.on_interest = broken  # type: ignore[method-assign]
    async with trio.open_nursery() as nursery:
        await nursery.start(node.serve)
        with trio.fail_after(10):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                hello = Interest.with_params(ROUTING_PREFIX.append("hello"),
                                             msgpack.packb({"n": "/node/x", "d": b"", "c": b"c" * 16}))
                for _ in range(3):
                    s.sendto(encode(hello), ("127.0.0.1", port))
            await trio.sleep(0.3)
            node.routing.router.on_timer = broken  # type: ignore[method-assign]
            await trio.sleep(1.3)  # past the next hello (every second)
            async with connect(sock) as c:
                await c.publish("/still/here", b"yes")
                assert (await c.fetch("/still/here")).content == b"yes"
                counters = (await c.status())["counters"]
            assert counters["handler_errors_routing"] == 3
            assert counters["handler_errors_routing_timers"] >= 1
            assert counters["handler_errors"] >= 4
        nursery.cancel_scope.cancel()
