"""Fakes that tests in several folders share: endpoints without a client or a node.

- `FakeNodeEndpoint`: a local application's view of a node -- a real Content
  Store (and its `cs` manager) in front of an `upstream` producer.
- `StoreEndpoint`: an `icnd.endpoint.Endpoint` over an `ObjectStore`, in
  memory: what the fetch pipeline needs.
- `upload`: an object put into an `ObjectStore` the way the node's upload
  commands do.
- `each`: one coroutine per party, all at once (a collective's ranks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import trio

from icnd import Name
from icnd.codec import decode, encode
from icnd.core.tables.cs import ContentStore
from icnd.daemon.mgmt.cs import CsManager
from icnd.errors import CommandError, Nacked, Timeout, VerificationError
from icnd.objects.manifest import Manifest, segment_index
from icnd.objects.store import ObjectStore
from icnd.packet import Data, Interest, Nack, NackReason
from icnd.security import Ed25519Key, KeyChain


class FakeNodeEndpoint:
    """A local application's view of a node: its CS answers first, then `upstream`."""

    key = None

    def __init__(self, upstream: Callable[[Interest], Data | None], good: Callable[[Data], bool]) -> None:
        self.cs = ContentStore(1 << 20)
        self.mgr = CsManager(self.cs)
        self.upstream = upstream
        self.good = good
        self.counters: dict[str, int] = {}
        self.upstream_asked = 0
        self.streams: dict[tuple[bytes, ...], Callable[[Data], None]] = {}

    def passes_fds(self) -> bool:  # not a local Unix connection: no shared memory
        return False

    async def express(self, interest: Interest, *, timeout: float = 4.0, retx: float | None = 1.0) -> Data:
        now = trio.current_time()
        hit = self.cs.lookup(interest, now)
        if hit is not None:
            return hit
        self.upstream_asked += 1
        data = self.upstream(interest)
        if data is None:
            raise Timeout(f"no answer for {interest.name}")
        self.cs.insert(data, now)
        return data

    def send(self, interest: Interest) -> None:  # a segment pipeline's Interests: answered at once
        now = trio.current_time()
        data = self.cs.lookup(interest, now)
        if data is None:
            self.upstream_asked += 1
            data = self.upstream(interest)
            if data is None:
                return
            self.cs.insert(data, now)
        for prefix, on_packet in self.streams.items():
            if data.name.comps[:-1] == prefix:
                on_packet(data)

    @contextlib.contextmanager
    def stream(self, prefix: Name, on_packet: Callable[[Data], None]) -> Iterator[None]:
        self.streams[prefix.comps] = on_packet
        try:
            yield
        finally:
            del self.streams[prefix.comps]

    async def verify(self, data: Data, *, timeout: float = 4.0) -> None:
        if not self.good(data):
            raise VerificationError(f"{data.name}: bad signature")

    async def command(self, module: str, verb: str, *, timeout: float = 10.0, **args: Any) -> Any:
        handler = self.mgr.commands().get((module, verb))
        if handler is None:
            raise CommandError(404, f"no command {module} {verb}")
        return await handler(None, args)  # type: ignore[arg-type]


class StoreEndpoint:
    """An `icnd.endpoint.Endpoint` over an `ObjectStore`, in memory: what the
    fetch pipeline needs, without a client or a node (`corrupt`: segment
    indexes whose content arrives damaged)."""

    def __init__(self, store: ObjectStore, key: Ed25519Key, corrupt: frozenset[int] = frozenset()) -> None:
        self.store, self.corrupt, self.key = store, corrupt, None
        self.chain = KeyChain()
        self.chain.add_trusted(key.name, key.verify_key())
        self.streams: dict[tuple[bytes, ...], Any] = {}
        self.sent = 0

    def _answer(self, interest: Interest) -> Data | Nack:
        data = self.store.lookup(interest)
        if data is None:
            return Nack.for_interest(interest, NackReason.NO_ROUTE)
        index = segment_index(data.name.comps[-1])
        if index in self.corrupt:
            data = Data(data.name, b"\xff" * len(data.content), freshness_ms=data.freshness_ms)
        return decode(encode(data))  # type: ignore[return-value]

    def send(self, packet: Interest) -> None:
        self.sent += 1
        self.streams[packet.name.comps[:-1]](self._answer(packet))

    def passes_fds(self) -> bool:  # not a local Unix connection: no shared memory
        return False

    async def express(self, interest: Interest, **_: Any) -> Data:
        answer = self._answer(interest)
        if isinstance(answer, Nack):
            raise Nacked(answer.reason.label, detail=answer.detail)
        return answer

    async def verify(self, data: Data, **_: Any) -> None:
        self.chain.verify(data)

    @contextmanager
    def stream(self, prefix: Name, on_packet: Any) -> Iterator[None]:
        self.streams[prefix.comps] = on_packet
        try:
            yield
        finally:
            del self.streams[prefix.comps]


def upload(store: ObjectStore, name: str, blob: bytes, segment_size: int, chunk: int, key) -> Manifest:
    uid = store.begin(Name(name), len(blob), segment_size, 60_000)
    for offset in range(0, len(blob), chunk):
        store.append(uid, offset, blob[offset:offset + chunk])
    return store.commit(uid, key)


async def each(parties: Sequence[Any], fn: Callable[[Any], Awaitable[Any]]) -> list[Any]:
    """``fn(party)`` for every party at once (a collective's ranks, say); the results in order."""
    out: list[Any] = [None] * len(parties)

    async def one(i: int) -> None:
        out[i] = await fn(parties[i])

    async with trio.open_nursery() as nursery:
        for i in range(len(parties)):
            nursery.start_soon(one, i)
    return out
