"""Collectives under a trust schema (docs/collectives.md#security-what-is-verified-where-and-what-it-costs):
aggregates and ranks' parts verified by each rank's validator through the
node's certificate; and the node's shared copy of an aggregate
(`reduce/fetch-shm`) used only by ranks whose own check it is at least as
strict as -- never by a rank with a trust schema of its own."""

from __future__ import annotations

import time
from contextlib import AsyncExitStack

import numpy as np

import icnd
from icnd.keyfiles import save_certificate
from icnd.testing.processes import Daemon
from tests.fakes import each

from ._pki import DAY, anchor, certified, write_schema

NOW = time.time()
SCHEMA = """\
anchors = ["anchor.cert"]
[[rule]]
name = "node-certs"
data = "/node/<n>/KEY/<**>"
signer = "/net/KEY/<*>"
[[rule]]
name = "groups"
data = "/group/<**>"
signer = "/node/<*>/KEY/<*>"
[[rule]]
name = "aggregates"
data = "/reduce/<**>"
signer = "/node/<*>/KEY/<*>"
[[rule]]
name = "parts"
data = "/node/<n>/member/<**>"
signer = "/node/<n>/KEY/<*>"
"""


async def test_ranks_with_a_schema_verify_themselves_and_keyless_ones_share_the_nodes_copy(tmp_path) -> None:
    anchor_key, anchor_cert = anchor(now=NOW - DAY)
    schema = str(write_schema(tmp_path, SCHEMA, {"anchor.cert": anchor_cert}))
    node_key, node_cert = certified("/node/s", anchor_key, now=NOW - 60, days=1)
    (tmp_path / "node.key").write_bytes(node_key.to_bytes())
    save_certificate(node_cert, tmp_path / "node.cert")
    daemon = Daemon(tmp_path, "--name", "/node/s", "--key", str(tmp_path / "node.key"), "--cert",
                    str(tmp_path / "node.cert"), "--trust", schema, "--listen", "udp://127.0.0.1:0", name="s")
    try:
        await daemon.until_ready(15)
        async with AsyncExitStack() as stack:
            async def job(group: str, trust: str | None) -> list:
                clients = [await stack.enter_async_context(icnd.connect(daemon.socket, trust=trust))
                           for _ in range(3)]
                await clients[0].create_group(group, members=[f"r{i}@s" for i in range(3)])
                return [await c.communicator(group, member=f"r{i}") for i, c in enumerate(clients)]

            status = await stack.enter_async_context(icnd.connect(daemon.socket))
            xs = [np.arange(20_000.0) * (r + 1) for r in range(3)]
            strict = await job("strict", schema)
            before = (await status.status())["counters"]["result_shm_fetches"]
            for y in await each(strict, lambda c: c.allreduce(xs[c.rank])):
                np.testing.assert_array_equal(y, xs[0] * 6)
            assert (await status.status())["counters"]["result_shm_fetches"] == before, \
                "a rank with its own schema must verify the aggregate itself"
            assert await each(strict, lambda c: c.allgather(c.rank)) == [[0, 1, 2]] * 3
            plain = await job("plain", None)
            for y in await each(plain, lambda c: c.allreduce(xs[c.rank])):
                np.testing.assert_array_equal(y, xs[0] * 6)
            assert (await status.status())["counters"]["result_shm_fetches"] == before + 1
    finally:
        daemon.stop()
