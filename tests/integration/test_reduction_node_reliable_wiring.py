"""The node tells its aggregator which next hops are reliable (issue #30; needs
/tmp/h1/node_wiring.patch in icnd/daemon/node.py): a TCP face is one reliable
connection, a UDP face is not, nor is a face behind `face link`'s emulator."""

from __future__ import annotations

from pathlib import Path

import trio

from icnd.daemon.config import NodeConfig
from icnd.daemon.node import Node
from icnd.faces.link import LinkParams


async def test_the_aggregator_sees_which_faces_lose_nothing(tmp_path: Path) -> None:
    peer = Node(NodeConfig(name="/node/p", socket=str(tmp_path / "p.sock"),
                           listen=["tcp://127.0.0.1:0", "udp://127.0.0.1:0"]))
    node = Node(NodeConfig(name="/node/n", socket=str(tmp_path / "n.sock"), listen=["udp://127.0.0.1:0"]))
    await peer.bind()
    await node.bind()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(peer.serve)
            await nursery.start(node.serve)
            tcp_uri, udp_uri = (next(u for u in peer.listen_uris() if u.startswith(s)) for s in ("tcp", "udp"))
            tcp = await node.faces.open(tcp_uri)
            udp = await node.faces.open(udp_uri)
            assert node.aggregator.reliable_state(tcp.id) == (0, True)
            assert node.aggregator.reliable_state(udp.id) is None
            assert node.aggregator.reliable_state(999_999) is None  # no such face
            node.faces.set_link(tcp.id, LinkParams(loss=0.1))  # an emulated link may drop
            assert node.aggregator.reliable_state(tcp.id) is None
            nursery.cancel_scope.cancel()
