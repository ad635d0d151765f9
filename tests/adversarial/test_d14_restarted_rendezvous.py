"""D14: aggregates cached from before their rendezvous restarted with a new key.

The attack (an accident, mostly): a rendezvous node restarts without
--data-dir, so with a new key; the aggregates cached downstream are signed by
the old key, which nobody serves any more.  Before the fix the next `reduce`
failed "cannot retrieve its signing key" from the cache instead of asking the
rendezvous to recompute.  Now the consumer evicts that exact aggregate from its
node's Content Store and asks again past the caches (MustBeFresh); and a node
without --data-dir says at start-up (log level info, the default) that its
identity is ephemeral.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import trio

from icnd import Name
from icnd.codec import encode
from icnd.daemon.config import NodeConfig
from icnd.daemon.node import Node
from icnd.errors import VerificationError
from icnd.packet import Data, Interest
from icnd.reduction import consumer
from icnd.reduction.group import GroupDescriptor
from icnd.reduction.segment import SegmentMeta, pack
from tests.fakes import FakeNodeEndpoint

OLD_KEY = Name("/node/r/KEY/old-key!")
NEW_KEY = Name("/node/r/KEY/new-key!")
ARRAY = np.arange(4, dtype=np.float64)


def _aggregate(interest: Interest, key: Name) -> Data:
    content = pack(SegmentMeta("<f8", (4,), 1, 0, members=(0, 1)), ARRAY)
    return Data(interest.name, content, freshness_ms=3_600_000, key_locator=key, sig_value=b"s" * 64)


def _fetcher(ep: FakeNodeEndpoint) -> consumer._Fetcher:
    desc = GroupDescriptor.create("g", ["w1", "w2"])
    wire = encode(desc.to_data())
    return consumer._Fetcher(ep, desc, wire, "sum", 1, False, trio.current_time() + 2.0)  # type: ignore[arg-type]


async def test_reduce_recomputes_past_a_cached_aggregate_of_the_old_key() -> None:
    computed = []

    def rendezvous(interest: Interest) -> Data:  # restarted: signs with its new key
        computed.append(interest.must_be_fresh)
        return _aggregate(interest, NEW_KEY)

    ep = FakeNodeEndpoint(rendezvous, lambda d: d.key_locator == NEW_KEY)
    fetcher = _fetcher(ep)
    # what the node cached from before the restart, under the very name the consumer asks for
    first = consumer.reduce_interest(fetcher.wire, "g", "sum", 1, 0)
    ep.cs.insert(_aggregate(first, OLD_KEY), trio.current_time())
    meta, view = await fetcher.segment(0)
    assert meta.members == (0, 1) and np.array_equal(view, ARRAY)
    assert computed == [True]  # asked once more, past the caches
    assert ep.cs.evicted_unverified == 1


async def test_unverifiable_recomputation_still_raises() -> None:
    ep = FakeNodeEndpoint(lambda i: _aggregate(i, OLD_KEY), lambda d: d.key_locator == NEW_KEY)
    fetcher = _fetcher(ep)
    ep.cs.insert(_aggregate(consumer.reduce_interest(fetcher.wire, "g", "sum", 1, 0), OLD_KEY),
                 trio.current_time())
    with pytest.raises(VerificationError):
        await fetcher.segment(0)


async def _start_and_stop(cfg: NodeConfig, caplog: pytest.LogCaptureFixture) -> list[str]:
    with caplog.at_level(logging.INFO, logger="icnd.node"):
        node = Node(cfg)
        await node.bind()
        async with trio.open_nursery() as nursery:
            await nursery.start(node.serve)
            nursery.cancel_scope.cancel()
    return [r.getMessage() for r in caplog.records]


async def test_node_without_data_dir_says_its_identity_is_ephemeral(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    cfg = NodeConfig(name="/node/r", socket=str(tmp_path / "n.sock"), listen=["tcp://127.0.0.1:0"])
    lines = await _start_and_stop(cfg, caplog)
    assert any("--data-dir" in m and "ephemeral" in m for m in lines), lines


async def test_node_with_data_dir_does_not(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg = NodeConfig(name="/node/r", socket=str(tmp_path / "n.sock"), listen=["tcp://127.0.0.1:0"],
                     data_dir=str(tmp_path / "d"))
    lines = await _start_and_stop(cfg, caplog)
    assert any("ready" in m for m in lines) and not any("ephemeral" in m for m in lines), lines
