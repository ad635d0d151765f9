"""``reduce/fetch-shm`` and ``collective/part-shm``: an aggregate, or a value
of a rank's part (bcast, allgather), fetched and verified once by the node,
handed to each of its local ranks in one sealed memory file.

Why: when many ranks of a collective live on one node (the normal
placement), each asking for the aggregate over its own socket costs a copy
through the socket and a signature check (a hash of every byte) per rank.
Here the node asks once (its in-process client, `Node.collective_client`,
verifies under the node's own validator: its trust schema when it has one),
writes the array into a sealed memory file once, and every local rank that
asks for the same aggregate -- while the fetch is in flight or for
`ttl` seconds after -- gets a descriptor of that same file.

What a rank then trusts, and why: the node's check, as NFD's local
applications trust what their own forwarder hands them over a local face.
A client uses this path only when the node's check is at least as strict as
its own would be: when the client has no trust schema of its own (then it
would accept any valid signature by a key it can fetch, which the node's
validator also requires) -- see `icnd.collective.communicator`.

Bounded: at most `max_entries` files and `max_bytes` of them kept (the
oldest go first; a file a rank has mapped stays alive in that rank until it
lets go), `ttl` seconds each; a request for an aggregate larger than
`max_bytes` is refused (507) and the rank fetches over its socket instead.
Counters: ``result_shm_fetches`` (aggregates fetched by the node),
``result_shm_handovers`` (descriptors handed to ranks), ``result_shm_refused``.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import trio

from icnd.daemon.mgmt.args import arg
from icnd.daemon.mgmt.dispatcher import Commands, WithFds
from icnd.endpoint import Endpoint
from icnd.errors import CommandError, Error, Timeout
from icnd.faces import shm
from icnd.faces.base import Face
from icnd.collective import packing
from icnd.collective.communicator import PartReader
from icnd.reduction.consumer import WINDOW_BYTES, group_descriptor, reduce
from icnd.reduction.contrib import ReductionError
from icnd.reduction.group import CONSUMER_OPS

MAX_ENTRIES = 64
MAX_BYTES = 1 << 30
TTL = 10.0  # seconds an aggregate's file is kept for ranks that ask later
MAX_TIMEOUT = 3600.0

Key = tuple[Any, ...]  # ("aggregate", group, version, round, op, partial) or ("part", group, version, round, ...)


@dataclass
class _Held:
    fd: int
    info: dict[str, Any]
    nbytes: int
    expires: float


class ResultHandOver:
    def __init__(self, client: Callable[[], Awaitable[Endpoint]], *, max_entries: int = MAX_ENTRIES,
                 max_bytes: int = MAX_BYTES, ttl: float = TTL) -> None:
        self._client = client
        self.max_entries, self.max_bytes, self.ttl = max_entries, max_bytes, ttl
        self._held: OrderedDict[Key, _Held] = OrderedDict()
        self._inflight: dict[Key, trio.Event] = {}
        self.bytes_held = 0
        self.counters = {"result_shm_fetches": 0, "result_shm_handovers": 0, "result_shm_refused": 0}

    def commands(self) -> Commands:
        return {("reduce", "fetch-shm"): self.fetch_shm, ("collective", "part-shm"): self.part_shm}

    def tables(self) -> dict[str, int]:
        self._expire(trio.current_time())
        return {"result_shm_files": len(self._held), "result_shm_bytes": self.bytes_held}

    async def fetch_shm(self, face: Face, args: dict[str, Any]) -> Any:
        """``group``, ``round``, ``op``, ``version``, ``partial`` (default false), ``wait``
        (seconds, the call's deadline): the aggregate as `Client.reduce` returns it, its
        array in the sealed memory file passed with the reply; the reply
        carries ``dtype``, ``shape``, ``contributors``, ``complete``, ``count``,
        ``nonfinite``, ``overflow``, ``segment_contributors``.  504 when the
        round is incomplete at the deadline (the message names the missing
        members as the reduction's does), 507 over the bound, 400 for a
        connection that cannot pass descriptors."""
        async def fetch(deadline: float) -> tuple[memoryview, dict[str, Any]]:
            return await self._aggregate(group, version, rnd, op, partial, deadline)

        try:
            _fds_passable(face)
            group, rnd, op = arg(args, "group", str), arg(args, "round", int), arg(args, "op", str)
            version, partial = arg(args, "version", int), arg(args, "partial", bool, False)
            timeout = _wait(args)
            if op not in CONSUMER_OPS or not 0 <= rnd < 1 << 63:
                raise CommandError(400, f"bad arguments: op {op!r} (one of {', '.join(CONSUMER_OPS)}), "
                                        f"round {rnd} (0..2^63-1)")
            held = await self._get(("aggregate", group, version, rnd, op, partial), timeout, fetch)
        except CommandError:
            self.counters["result_shm_refused"] += 1
            raise
        self.counters["result_shm_handovers"] += 1
        return WithFds(held.info, [os.dup(held.fd)])

    async def part_shm(self, face: Face, args: dict[str, Any]) -> Any:
        """``group``, ``version``, ``round``, ``member``, ``kind``, ``root``, ``count``,
        ``index``, ``wait``: value `index` of `member`'s part of that collective call
        (`icnd.collective.packing`), fetched and verified once by the node for all
        its local ranks, its encoded bytes in the sealed memory file passed with the
        reply (``{size}``).  504 when the part has not come by the deadline, 409
        when the member called another collective (the message says which), 507
        over the bound, 400 for bad arguments or a connection that cannot pass
        descriptors."""
        async def fetch(deadline: float) -> tuple[memoryview, dict[str, Any]]:
            return await self._part(group, version, rnd, member, kind, root, count, index, deadline)

        try:
            _fds_passable(face)
            group, version, rnd = arg(args, "group", str), arg(args, "version", int), arg(args, "round", int)
            member, kind = arg(args, "member", str), arg(args, "kind", str)
            root, count, index = arg(args, "root", int), arg(args, "count", int), arg(args, "index", int)
            timeout = _wait(args)
            if kind not in packing.KINDS or not 0 <= rnd < 1 << 63 or not 0 <= index < count <= 256:
                raise CommandError(400, f"bad arguments: kind {kind!r} (one of {', '.join(packing.KINDS)}), "
                                        f"round {rnd}, index {index} of {count} values")
            held = await self._get(("part", group, version, rnd, member, kind, root, count, index), timeout, fetch)
        except CommandError:
            self.counters["result_shm_refused"] += 1
            raise
        self.counters["result_shm_handovers"] += 1
        return WithFds(held.info, [os.dup(held.fd)])

    async def _get(self, key: Key, timeout: float,
                   fetch: Callable[[float], Awaitable[tuple[memoryview, dict[str, Any]]]]) -> _Held:
        deadline = trio.current_time() + timeout
        while True:
            now = trio.current_time()
            self._expire(now)
            held = self._held.get(key)
            if held is not None:
                return held
            event = self._inflight.get(key)
            if event is None:
                break
            with trio.move_on_at(deadline):  # another rank's request is fetching it: share that
                await event.wait()
            if trio.current_time() >= deadline:
                raise CommandError(504, f"{key[1]} round {key[3]}: nothing by the deadline")
        self._inflight[key] = event = trio.Event()
        try:
            self.counters["result_shm_fetches"] += 1
            raw, info = await fetch(deadline)
            if len(raw) > self.max_bytes:
                raise CommandError(507, f"{len(raw)} bytes exceed the node's hand-over bound ({self.max_bytes})")
            size = max(1, len(raw))
            fd = shm.create_sealed(size, lambda fd: shm.write_all(fd, [raw], 0) if len(raw) else None,
                                   name=f"icnd-result-{key[1]}")
            held = _Held(fd, {**info, "size": size}, len(raw), trio.current_time() + self.ttl)
            self._keep(key, held)
            return held
        finally:
            del self._inflight[key]
            event.set()

    async def _aggregate(self, group: str, version: int, rnd: int, op: str, partial: bool,
                         deadline: float) -> tuple[memoryview, dict[str, Any]]:
        ep = await self._client()
        try:
            result = await reduce(ep, group, rnd, op, timeout=max(0.05, deadline - trio.current_time()),
                                  partial=partial, version=version)
        except Timeout as exc:
            raise CommandError(504, str(exc)) from None
        except (Error, ReductionError, ValueError) as exc:
            raise CommandError(502, f"{group} round {rnd}: {exc}") from None
        array = np.ascontiguousarray(result.array)
        info = {"dtype": array.dtype.str, "shape": list(array.shape),
                "contributors": result.contributors, "complete": result.complete, "count": result.count,
                "nonfinite": result.nonfinite, "overflow": result.overflow,
                "segment_contributors": result.segment_contributors, "version": result.version}
        return memoryview(array.reshape(-1).view(np.uint8).data), info

    async def _part(self, group: str, version: int, rnd: int, member: str, kind: str, root: int, count: int,
                    index: int, deadline: float) -> tuple[memoryview, dict[str, Any]]:
        ep = await self._client()
        try:
            desc, _ = await group_descriptor(ep, group, version)
            if member not in [m.id for m in desc.members]:
                raise CommandError(400, f"{member} is not a member of {group} version {version}")
            reader = PartReader(ep, desc, member, rnd, deadline,
                                trio.Semaphore(max(1, WINDOW_BYTES // desc.seg_bytes)))
            header = await reader.header()
            header.check(kind, root, count, f"rank {desc.index(member)} ({member})")
            raw = await reader.read(*header.span(index))
        except Timeout as exc:
            raise CommandError(504, str(exc)) from None
        except packing.PackingError as exc:
            raise CommandError(409, str(exc)) from None
        except (Error, ReductionError, ValueError) as exc:
            raise CommandError(502, f"{group} round {rnd}, {member}'s part: {exc}") from None
        return memoryview(raw), {}

    def _keep(self, key: Key, held: _Held) -> None:
        while self._held and (len(self._held) >= self.max_entries or self.bytes_held + held.nbytes > self.max_bytes):
            self._drop(next(iter(self._held)))
        self._held[key] = held
        self.bytes_held += held.nbytes

    def _drop(self, key: Key) -> None:
        held = self._held.pop(key)
        self.bytes_held -= held.nbytes
        os.close(held.fd)

    def _expire(self, now: float) -> None:
        for key in [k for k, h in self._held.items() if h.expires <= now]:
            self._drop(key)

    def close(self) -> None:
        for key in list(self._held):
            self._drop(key)


def _fds_passable(face: Face) -> None:
    if not getattr(face, "can_pass_fds", False):
        raise CommandError(400, "this connection cannot pass descriptors (not a local Unix socket)")


def _wait(args: dict[str, Any]) -> float:
    wait = float(arg(args, "wait", (int, float)))
    if not 0 < wait <= MAX_TIMEOUT:
        raise CommandError(400, f"wait {wait} is outside 0..{MAX_TIMEOUT:g} s")
    return wait
