"""D8: a poisoned Content Store entry must heal.

The attack: a Data with a bad signature claiming the producer's key and a
freshness of an hour is injected on the path and cached.  Before the fix every
later consumer (MustBeFresh too) got VerificationError from the cache for the
rest of the hour.  Now the consumer asks its node to evict that exact Data (by
implicit digest: a good Data of the same name is not touched, `cs evict`) and
asks once more past the cache; unverified data is still never accepted.

Sans-IO: a fake endpoint whose "node" is a real ContentStore behind the real
`cs` manager, with an upstream producer that answers the good Data.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
import trio

from icnd import Name
from icnd.codec import full_name
from icnd.core.tables.cs import ContentStore
from icnd.daemon.mgmt.cs import CsManager
from icnd.errors import Error, VerificationError
from icnd.objects import fetch as fetch_mod
from icnd.objects.manifest import Manifest, segment_index
from icnd.packet import ContentType, Data, Interest
from icnd.security import Ed25519Key
from tests.fakes import FakeNodeEndpoint

HOUR_MS = 3_600_000


def _good(data: Data) -> bool:
    return data.sig_value == b"good-signature"


GOOD = Data(Name("/prod/news"), b"the real news", ContentType.BLOB, HOUR_MS, sig_value=b"good-signature")
POISON = Data(Name("/prod/news"), b"forged", ContentType.BLOB, HOUR_MS, sig_value=b"x" * 64)


async def test_poisoned_entry_is_evicted_and_fetch_heals() -> None:
    ep = FakeNodeEndpoint(lambda i: GOOD if i.name == GOOD.name else None, _good)
    ep.cs.insert(POISON, trio.current_time())  # injected on the path, cached for an hour
    data = await fetch_mod.fetch(ep, "/prod/news", timeout=1.0)  # type: ignore[arg-type]
    assert data.content == b"the real news"
    assert ep.cs.evicted_unverified == 1
    assert ep.counters.get("unverified_retries") == 1
    # the cache now holds the good Data: the next consumer gets it from there
    again = await fetch_mod.fetch(ep, "/prod/news", timeout=1.0, must_be_fresh=True)  # type: ignore[arg-type]
    assert again.content == b"the real news" and ep.upstream_asked == 1


async def test_same_bad_data_upstream_still_raises() -> None:
    ep = FakeNodeEndpoint(lambda i: POISON, _good)  # upstream is poisoned too
    ep.cs.insert(POISON, trio.current_time())
    with pytest.raises(VerificationError):
        await fetch_mod.fetch(ep, "/prod/news", timeout=1.0)  # type: ignore[arg-type]
    assert ep.upstream_asked == 1  # retried once, not in a loop


async def test_other_bad_data_upstream_still_raises() -> None:
    other = dataclasses.replace(POISON, content=b"forged again")
    ep = FakeNodeEndpoint(lambda i: other, _good)
    ep.cs.insert(POISON, trio.current_time())
    with pytest.raises(VerificationError):
        await fetch_mod.fetch(ep, "/prod/news", timeout=1.0)  # type: ignore[arg-type]


async def test_single_object_heals() -> None:
    ep = FakeNodeEndpoint(lambda i: GOOD if i.name == GOOD.name else None, _good)
    ep.cs.insert(POISON, trio.current_time())
    body = await fetch_mod.fetch_object(ep, "/prod/news", timeout=2.0)  # type: ignore[arg-type]
    assert body == b"the real news"


def test_evict_by_digest_keeps_a_good_data_of_the_same_name() -> None:
    cs = ContentStore(1 << 20)
    cs.insert(GOOD, 0.0)
    assert not cs.discard_exact(full_name(POISON).comps)  # other bytes: kept
    assert cs.lookup(Interest(GOOD.name), 0.0) is GOOD
    assert not cs.discard_exact(GOOD.name.comps)  # no digest: refused
    assert cs.discard_exact(full_name(GOOD).comps)
    assert len(cs) == 0 and cs.bytes_used == 0 and cs.evicted_unverified == 1


async def test_cs_evict_command_needs_a_digest() -> None:
    mgr = CsManager(ContentStore(1 << 20))
    with pytest.raises(Error):
        await mgr.evict(None, {"name": "/prod/news"})  # type: ignore[arg-type]
    assert await mgr.evict(None, {"name": full_name(GOOD).to_uri()}) == {"evicted": 0}  # type: ignore[arg-type]


async def test_poisoned_segment_is_evicted_and_the_object_heals() -> None:
    seg, blob = 1024, bytes(range(256)) * 16  # 4 segments
    digests = b"".join(hashlib.sha256(blob[i:i + seg]).digest() for i in range(0, len(blob), seg))
    manifest = Manifest(Name("/p/obj"), 1, len(blob), seg, digests)

    def producer(interest: Interest) -> Data | None:
        index = segment_index(interest.name.comps[-1])
        if index is None:
            return None
        return Data(interest.name, blob[index * seg:(index + 1) * seg], freshness_ms=HOUR_MS)

    ep = FakeNodeEndpoint(producer, _good)
    poisoned = manifest.segment_name(2)
    ep.cs.insert(Data(poisoned, b"\0" * seg, freshness_ms=HOUR_MS), trio.current_time())
    with trio.fail_after(5):
        body = await fetch_mod.fetch_segments(ep, manifest)  # type: ignore[arg-type]
    assert body == blob
    assert ep.cs.evicted_unverified == 1 and ep.counters.get("unverified_retries") == 1


async def test_real_node_heals_a_poisoned_entry(tmp_path: Path) -> None:
    """The same over a real node (in-process, loopback): `cs/evict` through the
    management protocol, the retry past the cache to the producer."""
    from icnd.client.door import connect
    from icnd.daemon.config import NodeConfig
    from icnd.daemon.node import Node

    sock = str(tmp_path / "n.sock")
    node = Node(NodeConfig(name="/node/a", socket=sock, listen=["tcp://127.0.0.1:0"]))
    await node.bind()
    async with trio.open_nursery() as nursery:
        await nursery.start(node.serve)
        with trio.fail_after(10):
            key = Ed25519Key.generate(Name("/prod"))  # the consumer knows the producer's key
            async with connect(sock, key=key) as producer, connect(sock, key=key) as c:
                async with producer.serve("/prod/news", lambda i: b"the real news"):
                    good = await c.fetch("/prod/news", timeout=2.0)  # caches it
                    forged = Data(good.name, b"forged", ContentType.BLOB, HOUR_MS, sig_type=good.sig_type,
                                  key_locator=good.key_locator, sig_value=b"x" * 64)
                    node.fw.cs.insert(forged, trio.current_time())  # injected on the path
                    data = await c.fetch("/prod/news", timeout=2.0)
                    assert data.content == b"the real news"
                    assert node.fw.cs.evicted_unverified == 1 and c.counters["unverified_retries"] == 1
                    assert (await c.status())["counters"]["cs_evicted_unverified"] == 1
        nursery.cancel_scope.cancel()
