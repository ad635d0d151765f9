"""A communicator: a reduction group seen as ranks, and the MPI collectives by name.

Written against `icnd.endpoint.Endpoint` and used through
`Client.communicator` (interface §15; the design: docs/collectives.md).

Rules (the names and who fetches what):

1. **Ranks** are the group descriptor's members in order; a communicator is
   bound to one descriptor version, read once when it is made.
2. **Every call takes the next sequence number `k` when it is called**
   (synchronously, so nonblocking calls keep call order), and its round is
   ``version << 32 | k``: names of one group version never repeat, and a new
   version starts new names (`icnd.reduction.contrib.EPOCH_BITS`).  A
   communicator refuses to start on a version its member already used
   (`reduce/rounds`), so a rerun can never read an earlier run's data.
3. **Reductions** (allreduce, reduce, reduce_scatter, barrier) are the
   in-network reduction of that round: every rank contributes, the askers
   fetch the aggregate by name (requests merge in PITs, one computation).
   ``reduce_scatter`` fetches only the segments of its own block.
4. **Value-moving collectives** (bcast, gather, allgather, scatter,
   alltoall): each rank taking part contributes one *part* to the round
   (`icnd.collective.packing`), signed by its node's key; the others fetch
   the parts they need by name from the contributor's node (which holds
   early Interests until the part is there), through caches and PITs, and
   verify them through their validator.
5. **Deadlines**: every call ends by its deadline (``timeout``, else the
   group's ``deadline_ms``, else 30 s): a rank whose part or contribution
   has not arrived by then is named in `icnd.Timeout` (``.missing``: member
   ids, ``.ranks``), unless ``partial=True`` (reductions: an
   `icnd.Reduced`, flagged; gather and allgather: None in its place).
6. **Local ranks share the node's copy**: a large aggregate (64 KiB and up),
   and the values of bcast and allgather (every local rank reads the same
   ones), are fetched and verified once by the rank's node for all its local
   ranks and handed to each in one sealed memory file, mapped copy-on-write
   (`icnd.daemon.mgmt.results`), where the node's check is at least as
   strict as the rank's own would be (`Communicator._shared_results`).
"""

from __future__ import annotations

import math
import os
from functools import partial as bind
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
import trio

from icnd.compute.values import DecodeError, decode_value, encode_value
from icnd.collective import packing
from icnd.endpoint import Endpoint
from icnd.errors import CommandError, Error, Nacked, Timeout
from icnd.faces import shm
from icnd.excgroups import run_bounded
from icnd.name import Name
from icnd.objects.fetch import verified
from icnd.packet import Data, Interest, NackReason
from icnd.reduction.consumer import (SHM_MIN, STALE, WINDOW_BYTES, Reduced, _Fetcher, contribute, group_descriptor,
                                     member_of, node_id, pushable, reduce)
from icnd.reduction.contrib import EPOCH_BITS
from icnd.reduction.group import CONSUMER_OPS, GroupDescriptor, contrib_name, missing_members
from icnd.reduction.segment import SegmentError, SegmentMeta, check_dtype, plan, unpack

DEFAULT_TIMEOUT = 30.0
RETX = 0.5  # seconds between re-sent requests for a part (the contributor's node holds them meanwhile)
NO_ROUTE_WAIT = 0.1  # a part whose node the network has no route to yet: asked again after this
PARTS_AT_ONCE = 16  # parts fetched concurrently
SEGMENTS_AT_ONCE = 8  # segments of one part fetched concurrently
MAX_SEQUENCE = 1 << EPOCH_BITS
SHARED_KINDS = ("bcast", "allgather")  # where a node's local ranks all read the same values (rule 6)


class Request:
    """A nonblocking collective in flight (``comm.i<name>(...)``).

    ``await r.wait()`` returns its result or raises its error; ``r.test()``
    says whether it has finished.  The call has its deadline like a blocking
    one, so `wait` never hangs; if the client closes first, it raises
    `icnd.Error`."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._done = trio.Event()
        self._result: Any = None
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def test(self) -> bool:
        """True once the call has finished (`wait` then returns at once)."""
        return self._done.is_set()

    async def wait(self) -> Any:
        await self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result

    async def _run(self, call: Callable[[], Awaitable[Any]]) -> None:
        try:
            self._result = await call()
        except Exception as exc:  # the caller's to see, through wait()
            self._error = exc
        self._done.set()

    def _closed(self) -> None:
        if not self._done.is_set():
            self._error = Error(f"{self.what}: the client closed before the call finished")
            self._done.set()


class Communicator:
    """See the module docstring; made by `Client.communicator`."""

    def __init__(self, ep: Endpoint, nursery: trio.Nursery | None, desc: GroupDescriptor, wire: bytes,
                 member: str) -> None:
        self._ep = ep
        self._nursery = nursery
        self._desc = desc
        self._wire = wire
        self.group = desc.group
        self.version = desc.version
        self.member = member
        self.members = [m.id for m in desc.members]
        self.rank = self.members.index(member)
        self.size = len(self.members)
        self._seq = 0

    def __repr__(self) -> str:
        return f"<Communicator {self.group} v{self.version} rank {self.rank} of {self.size}>"

    # --- the bookkeeping every call shares ----------------------------------------------------
    def _round(self) -> int:
        k = self._seq
        if k >= MAX_SEQUENCE:
            raise Error(f"communicator of {self.group} made {k} calls, the most one group version names")
        self._seq += 1
        return self.version << EPOCH_BITS | k

    def _deadline(self, timeout: float | None) -> float:
        if timeout is None:
            timeout = self._desc.deadline_ms / 1000 if self._desc.deadline_ms else DEFAULT_TIMEOUT
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
        return trio.current_time() + timeout

    def _root(self, root: int) -> int:
        if type(root) is not int or not 0 <= root < self.size:
            raise ValueError(f"root {root!r} is out of range: {self.group} has ranks 0..{self.size - 1}")
        return root

    def _op(self, op: str) -> str:
        if op not in CONSUMER_OPS:
            raise ValueError(f"unknown op {op!r}; known: {', '.join(CONSUMER_OPS)}")
        if (op if op != "mean" else "sum") not in self._desc.ops:
            raise ValueError(f"group {self.group} allows the ops {', '.join(self._desc.ops)}, not {op}")
        return op

    def _spawn(self, what: str, call: Callable[[], Awaitable[Any]]) -> Request:
        request = Request(what)

        async def run() -> None:
            try:
                await request._run(call)
            finally:
                request._closed()

        if self._nursery is None:
            raise Error("this communicator only reads results (collective_result): it starts no calls")
        self._nursery.start_soon(run)
        return request

    def _who(self, ranks: Sequence[int]) -> str:
        return ", ".join(f"{r} ({self.members[r]})" for r in ranks)

    def _timeout(self, what: str, rnd: int, ranks: Sequence[int]) -> Timeout:
        ranks = sorted(ranks)
        return Timeout(f"{self.group} {what} (call {rnd & (MAX_SEQUENCE - 1)}): rank{'s' if len(ranks) > 1 else ''} "
                       f"{self._who(ranks)} did not take part by the deadline",
                       missing=[self.members[r] for r in ranks], ranks=ranks)

    # --- reductions ------------------------------------------------------------------------------
    async def _contribute(self, rnd: int, x: Any, deadline: float, *, sign: bool = False) -> None:
        await contribute(self._ep, self.group, rnd, x, self.member, max(0.1, deadline - trio.current_time()),
                         described=(self._desc, self._wire), sign=sign)

    async def _contributed_and_reduced(self, what: str, rnd: int, x: np.ndarray, op: str, deadline: float,
                                       partial: bool, out: Any = None) -> Reduced:
        """This rank's `x` contributed to call `rnd` and the aggregate fetched: a
        small array rides with the request for it (one request, pushed up
        toward the rendezvous: docs/reduction.md#pushed-contributions), unless
        the node knows a newer group version than this communicator's (it
        refuses the push then) or the array is not small."""
        push = await pushable(self._ep, self._desc, self.group, rnd, x, self.member)
        if push is not None:
            try:
                return await self._reduced(what, rnd, op, deadline, partial, out, push=push)
            except CommandError as exc:
                if exc.status != STALE:
                    raise
        await self._contribute(rnd, x, deadline)
        return await self._reduced(what, rnd, op, deadline, partial, out, x.nbytes)

    async def _reduced(self, what: str, rnd: int, op: str, deadline: float, partial: bool,
                       out: Any = None, nbytes: int = 0, *, push: bytes | None = None) -> Reduced:
        """The aggregate of call `rnd` (an array of about `nbytes` bytes): from the
        node in shared memory when that is allowed (`_shared_results`), else
        fetched and verified here (`push`: this rank's contribution with the request)."""
        try:
            if push is None and self._shared_results(nbytes):
                return await self._reduced_shm(rnd, op, deadline, partial, out)
            return await reduce(self._ep, self.group, rnd, op, timeout=max(0.1, deadline - trio.current_time()),
                                partial=partial, described=(self._desc, self._wire), out=out, push=push)
        except Timeout as exc:
            if exc.missing:
                raise self._timeout(what, rnd, [self.members.index(m) for m in exc.missing
                                                if m in self.members]) from None
            raise

    def _shared_results(self, nbytes: int) -> bool:
        """Rule 6: take a large aggregate from the node's hand-over (verified once by
        the node for all its local ranks, `icnd.daemon.mgmt.results`) only where
        the node's check is at least as strict as this client's own: when the
        client has no trust schema of its own (the node's validator, schema or
        not, also requires a valid signature by a key it can fetch)."""
        validator = getattr(self._ep, "validator", None)
        return (nbytes >= SHM_MIN and self._ep.passes_fds() and validator is not None
                and getattr(validator, "schema", None) is None)

    async def _reduced_shm(self, rnd: int, op: str, deadline: float, partial: bool, out: Any) -> Reduced:
        remaining = max(0.1, deadline - trio.current_time())
        try:
            info, fd = await self._ep.command_fd("reduce", "fetch-shm", timeout=remaining + 1.0, group=self.group,
                                                 round=rnd, op=op, version=self.version, partial=partial,
                                                 wait=remaining)
        except CommandError as exc:
            if exc.status == 504:
                raise Timeout(str(exc), missing=missing_members(str(exc))) from None
            raise Error(f"{self.group}: {exc}") from None
        dt = np.dtype(info["dtype"])
        shape = tuple(info["shape"])
        size = math.prod(shape)
        try:
            if out is None:  # mapped copy-on-write: nothing copied until the rank writes to it
                array = np.frombuffer(shm.map_private(fd, int(info["size"])), dtype=dt, count=size).reshape(shape)
            else:  # read straight into the rank's buffer: one copy, no mapping to set up
                if out.dtype != dt or out.size != size or not out.flags.c_contiguous or not out.flags.writeable:
                    os.close(fd)
                    raise ValueError(f"out= is {out.dtype} of {out.size} elements; the aggregate is {dt} of "
                                     f"{size} (C-contiguous and writable)")
                shm.read_sealed(fd, memoryview(out.reshape(-1).view(np.uint8).data), int(info["size"]))
                array = out.reshape(shape)
        except shm.ShmError as exc:
            raise Error(f"{self.group}: the node's aggregate could not be read: {exc}") from None
        return Reduced(array, list(info["contributors"]), bool(info["complete"]), int(info["count"]), self.group,
                       rnd, op, self.version, bool(info["nonfinite"]), bool(info["overflow"]),
                       [list(m) for m in info["segment_contributors"]])

    @staticmethod
    def _array(x: Any, what: str) -> np.ndarray:
        arr = np.asarray(x)
        try:
            check_dtype(arr.dtype)
        except SegmentError as exc:
            raise TypeError(f"{what} takes numpy arrays of numeric dtype: {exc}") from None
        return arr

    async def allreduce(self, x: Any, op: str = "sum", *, timeout: float | None = None, partial: bool = False,
                        out: Any = None) -> Any:
        """The element-wise `op` of every rank's `x` (same dtype and shape everywhere):
        a numpy array of that shape (an `icnd.Reduced` with ``partial``)."""
        arr, op, deadline = self._array(x, "allreduce"), self._op(op), self._deadline(timeout)
        return await self._allreduce(self._round(), arr, op, deadline, partial, out)

    async def _allreduce(self, rnd: int, x: np.ndarray, op: str, deadline: float, partial: bool,
                         out: Any = None) -> Any:
        result = await self._contributed_and_reduced("allreduce", rnd, x, op, deadline, partial, out)
        return result if partial else result.array

    def iallreduce(self, x: Any, op: str = "sum", *, timeout: float | None = None, partial: bool = False,
                   out: Any = None) -> Request:
        arr, op, deadline = self._array(x, "allreduce"), self._op(op), self._deadline(timeout)
        rnd = self._round()
        return self._spawn("allreduce", lambda: self._allreduce(rnd, arr, op, deadline, partial, out))

    async def reduce(self, x: Any, op: str = "sum", root: int = 0, *, timeout: float | None = None,
                     partial: bool = False) -> Any:
        """As `allreduce` at `root`; None at the other ranks, once their part is handed over."""
        arr, op, root, deadline = self._array(x, "reduce"), self._op(op), self._root(root), self._deadline(timeout)
        return await self._reduce(self._round(), arr, op, root, deadline, partial)

    async def _reduce(self, rnd: int, x: np.ndarray, op: str, root: int, deadline: float, partial: bool) -> Any:
        await self._contribute(rnd, x, deadline)
        if self.rank != root:
            return None
        result = await self._reduced("reduce", rnd, op, deadline, partial, nbytes=x.nbytes)
        return result if partial else result.array

    def ireduce(self, x: Any, op: str = "sum", root: int = 0, *, timeout: float | None = None,
                partial: bool = False) -> Request:
        arr, op, root, deadline = self._array(x, "reduce"), self._op(op), self._root(root), self._deadline(timeout)
        rnd = self._round()
        return self._spawn("reduce", lambda: self._reduce(rnd, arr, op, root, deadline, partial))

    async def barrier(self, *, timeout: float | None = None) -> None:
        """Returns once every rank has called it: a one-byte allreduce."""
        deadline = self._deadline(timeout)
        await self._barrier(self._round(), deadline)

    async def _barrier(self, rnd: int, deadline: float) -> None:
        await self._contributed_and_reduced("barrier", rnd, np.zeros(1, np.uint8), self._desc.ops[0], deadline, False)

    def ibarrier(self, *, timeout: float | None = None) -> Request:
        deadline = self._deadline(timeout)
        rnd = self._round()
        return self._spawn("barrier", lambda: self._barrier(rnd, deadline))

    async def reduce_scatter(self, x: Any, op: str = "sum", *, timeout: float | None = None) -> Any:
        """Block `rank` of the element-wise `op` of every rank's `x`, split along
        axis 0 as ``numpy.array_split(result, size)``: only that block's
        segments are fetched, so each block is combined once, at its own rendezvous."""
        arr, op, deadline = self._array(x, "reduce_scatter"), self._op(op), self._deadline(timeout)
        return await self._reduce_scatter(self._round(), arr, op, deadline)

    async def _reduce_scatter(self, rnd: int, x: np.ndarray, op: str, deadline: float) -> Any:
        if x.ndim == 0:
            raise ValueError("reduce_scatter splits axis 0: a 0-d array has none")
        await self._contribute(rnd, x, deadline)
        dt = check_dtype(x.dtype)
        rows = x.shape[0]
        per, extra = divmod(rows, self.size)
        r0 = self.rank * per + min(self.rank, extra)
        r1 = r0 + per + (1 if self.rank < extra else 0)
        row = math.prod(x.shape[1:])
        block = np.empty((r1 - r0,) + x.shape[1:], dtype=dt if op != "mean" else
                         (dt if dt.kind == "f" else np.dtype(np.float64)))
        if block.size == 0:
            return block
        seg_elems, nseg, _ = plan(dt, x.shape, self._desc.seg_bytes)
        lo, hi = r0 * row, r1 * row
        net_op = "sum" if op == "mean" else op
        fetch = _Fetcher(self._ep, self._desc, self._wire, net_op, rnd, False, deadline)
        flat = block.reshape(-1)
        layout = (dt.str, x.shape)

        async def one(s: int) -> None:
            try:
                meta, view = await fetch.segment(s)
            except Timeout as exc:
                if exc.missing:
                    raise self._timeout("reduce_scatter", rnd, [self.members.index(m) for m in exc.missing
                                                                if m in self.members]) from None
                raise
            if meta.layout() != layout:
                raise Error(f"{self.group} reduce_scatter: the ranks' arrays are {meta.describe()}, this rank's "
                            f"is {dt} {x.shape}")
            a, b = s * seg_elems, s * seg_elems + len(view)
            a2, b2 = max(a, lo), min(b, hi)
            part = view[a2 - a:b2 - a]
            if op == "mean":
                np.divide(part, len(meta.members), out=flat[a2 - lo:b2 - lo], casting="unsafe")
            else:
                flat[a2 - lo:b2 - lo] = part

        await run_bounded([bind(one, s) for s in range(lo // seg_elems, min(nseg, -(-hi // seg_elems)))],
                   SEGMENTS_AT_ONCE)
        return block

    def ireduce_scatter(self, x: Any, op: str = "sum", *, timeout: float | None = None) -> Request:
        arr, op, deadline = self._array(x, "reduce_scatter"), self._op(op), self._deadline(timeout)
        rnd = self._round()
        return self._spawn("reduce_scatter", lambda: self._reduce_scatter(rnd, arr, op, deadline))

    # --- value-moving collectives -------------------------------------------------------------
    @staticmethod
    def _encode(kind: str, values: Sequence[Any]) -> list[bytes]:
        """`values` as function values (`icnd.compute.values`), before the call takes its number."""
        try:
            return [encode_value(v) for v in values]
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{kind}: {exc}") from None

    async def _put(self, rnd: int, kind: str, root: int, encoded: Sequence[bytes], deadline: float) -> None:
        """This rank's part of call `rnd`: `encoded` laid out (`packing`), signed by its node."""
        prefix, total = packing.pack(kind, root, encoded)
        buf = np.empty(total, np.uint8)
        at = len(prefix)
        buf[:at] = np.frombuffer(prefix, np.uint8)
        for e in encoded:
            buf[at:at + len(e)] = np.frombuffer(e, np.uint8)
            at += len(e)
        await self._contribute(rnd, buf, deadline, sign=True)

    async def _get(self, rnd: int, kind: str, root: int, rank: int, count: int, index: int, deadline: float,
                   window: trio.Semaphore) -> Any:
        """Value `index` of rank `rank`'s part of call `rnd` (made by `kind` with `root`, `count` values)."""
        if kind in SHARED_KINDS and self._shared_results(SHM_MIN):
            return await self._get_shared(rnd, kind, root, rank, count, index, deadline)
        part = PartReader(self._ep, self._desc, self.members[rank], rnd, deadline, window)
        whose = f"rank {rank} ({self.members[rank]})"
        try:
            header = await part.header()
            header.check(kind, root, count, whose)
            raw = await part.read(*header.span(index))
        except packing.PackingError as exc:
            raise Error(f"{self.group} {kind}: {exc}") from None
        try:
            return decode_value(raw)
        except DecodeError as exc:
            raise Error(f"{self.group} {kind}: {whose} sent a malformed value: {exc}") from None

    async def _all_values(self, rnd: int, kind: str, root: int, rank: int, deadline: float) -> list[Any]:
        """Every value of rank `rank`'s part of call `rnd` (one per rank: scatter, alltoall), its header read once."""
        reader = PartReader(self._ep, self._desc, self.members[rank], rnd, deadline,
                            trio.Semaphore(max(1, WINDOW_BYTES // self._desc.seg_bytes)))
        whose = f"rank {rank} ({self.members[rank]})"
        try:
            header = await reader.header()
            header.check(kind, root, self.size, whose)
            raws = [await reader.read(*header.span(d)) for d in range(self.size)]
        except packing.PackingError as exc:
            raise Error(f"{self.group} {kind}: {exc}") from None
        except Timeout:
            raise self._timeout(kind, rnd, [rank]) from None
        try:
            return [decode_value(raw) for raw in raws]
        except DecodeError as exc:
            raise Error(f"{self.group} {kind}: {whose} sent a malformed value: {exc}") from None

    async def _get_shared(self, rnd: int, kind: str, root: int, rank: int, count: int, index: int,
                          deadline: float) -> Any:
        """`_get` through the node (rule 6): the value fetched and verified once for all its local ranks."""
        remaining = max(0.1, deadline - trio.current_time())
        whose = f"rank {rank} ({self.members[rank]})"
        try:
            info, fd = await self._ep.command_fd("collective", "part-shm", timeout=remaining + 1.0, group=self.group,
                                                 version=self.version, round=rnd, member=self.members[rank],
                                                 kind=kind, root=root, count=count, index=index, wait=remaining)
        except CommandError as exc:
            if exc.status == 504:
                raise Timeout(str(exc), missing=[self.members[rank]]) from None
            raise Error(f"{self.group} {kind}: {exc}") from None
        try:
            return decode_value(memoryview(shm.map_private(fd, int(info["size"]))))
        except shm.ShmError as exc:
            raise Error(f"{self.group} {kind}: the node's copy of {whose}'s part could not be mapped: {exc}") from None
        except DecodeError as exc:
            raise Error(f"{self.group} {kind}: {whose} sent a malformed value: {exc}") from None

    async def _gets(self, rnd: int, kind: str, root: int, ranks: Sequence[int], count: int, index: int,
                    deadline: float, partial: bool) -> dict[int, Any]:
        """`_get` from each of `ranks` concurrently; missing ones raise one Timeout naming all of them
        (with `partial`: left out)."""
        got: dict[int, Any] = {}
        missing: list[int] = []
        # segments outstanding for this call, in bytes: at most half a stream face's send queue,
        # as for aggregates (icnd.reduction.consumer.WINDOW_BYTES), so the node never drops answers
        window = trio.Semaphore(max(1, WINDOW_BYTES // self._desc.seg_bytes))

        async def one(r: int) -> None:
            try:
                got[r] = await self._get(rnd, kind, root, r, count, index, deadline, window)
            except Timeout:
                missing.append(r)

        await run_bounded([bind(one, r) for r in ranks], PARTS_AT_ONCE)
        if missing and not partial:
            raise self._timeout(kind, rnd, missing)
        return got

    def _per_rank(self, values: Any, what: str) -> list[Any]:
        try:
            items = list(values)
        except TypeError:
            raise TypeError(f"{what} takes a sequence of {self.size} values (one per rank), "
                            f"not {type(values).__name__}") from None
        if len(items) != self.size:
            raise ValueError(f"{what} takes {self.size} values (one per rank), got {len(items)}")
        return items

    def _others(self) -> list[int]:
        return [r for r in range(self.size) if r != self.rank]

    async def bcast(self, value: Any, root: int = 0, *, timeout: float | None = None) -> Any:
        """`root`'s `value` at every rank (the others pass anything, e.g. None)."""
        return await self._start_bcast(value, root, timeout)()

    def ibcast(self, value: Any, root: int = 0, *, timeout: float | None = None) -> Request:
        return self._spawn("bcast", self._start_bcast(value, root, timeout))

    def _start_bcast(self, value: Any, root: int, timeout: float | None) -> Callable[[], Awaitable[Any]]:
        root, deadline = self._root(root), self._deadline(timeout)
        encoded = self._encode("bcast", [value]) if self.rank == root else []
        rnd = self._round()

        async def call() -> Any:
            if self.rank == root:
                await self._put(rnd, "bcast", root, encoded, deadline)
                return value
            return (await self._gets(rnd, "bcast", root, [root], 1, 0, deadline, False))[root]
        return call

    async def gather(self, value: Any, root: int = 0, *, timeout: float | None = None,
                     partial: bool = False) -> list[Any] | None:
        """Every rank's `value`, in rank order, at `root` (None elsewhere)."""
        return await self._start_gather(value, root, timeout, partial)()

    def igather(self, value: Any, root: int = 0, *, timeout: float | None = None, partial: bool = False) -> Request:
        return self._spawn("gather", self._start_gather(value, root, timeout, partial))

    def _start_gather(self, value: Any, root: int, timeout: float | None,
                      partial: bool) -> Callable[[], Awaitable[list[Any] | None]]:
        root, deadline = self._root(root), self._deadline(timeout)
        encoded = self._encode("gather", [value])
        rnd = self._round()

        async def call() -> list[Any] | None:
            # every rank's part is named data, the root's too: a late reader gets all of them
            await self._put(rnd, "gather", root, encoded, deadline)
            if self.rank != root:
                return None
            got = await self._gets(rnd, "gather", root, self._others(), 1, 0, deadline, partial)
            got[root] = value
            return [got.get(r) for r in range(self.size)]
        return call

    async def allgather(self, value: Any, *, timeout: float | None = None, partial: bool = False) -> list[Any]:
        """Every rank's `value`, in rank order, at every rank."""
        return await self._start_allgather(value, timeout, partial)()

    def iallgather(self, value: Any, *, timeout: float | None = None, partial: bool = False) -> Request:
        return self._spawn("allgather", self._start_allgather(value, timeout, partial))

    def _start_allgather(self, value: Any, timeout: float | None,
                         partial: bool) -> Callable[[], Awaitable[list[Any]]]:
        deadline = self._deadline(timeout)
        encoded = self._encode("allgather", [value])
        rnd = self._round()

        async def call() -> list[Any]:
            await self._put(rnd, "allgather", -1, encoded, deadline)
            got = await self._gets(rnd, "allgather", -1, self._others(), 1, 0, deadline, partial)
            got[self.rank] = value
            return [got.get(r) for r in range(self.size)]
        return call

    async def scatter(self, values: Any, root: int = 0, *, timeout: float | None = None) -> Any:
        """``values[rank]`` of `root`'s `values` (a sequence of `size` values; ignored elsewhere)."""
        return await self._start_scatter(values, root, timeout)()

    def iscatter(self, values: Any, root: int = 0, *, timeout: float | None = None) -> Request:
        return self._spawn("scatter", self._start_scatter(values, root, timeout))

    def _start_scatter(self, values: Any, root: int, timeout: float | None) -> Callable[[], Awaitable[Any]]:
        root, deadline = self._root(root), self._deadline(timeout)
        items = self._per_rank(values, "scatter") if self.rank == root else []
        encoded = self._encode("scatter", items)
        rnd = self._round()

        async def call() -> Any:
            if self.rank == root:
                await self._put(rnd, "scatter", root, encoded, deadline)
                return items[root]
            return (await self._gets(rnd, "scatter", root, [root], self.size, self.rank, deadline, False))[root]
        return call

    async def alltoall(self, values: Any, *, timeout: float | None = None) -> list[Any]:
        """``result[j]`` = what rank j sent to this rank (its ``values[rank]``)."""
        return await self._start_alltoall(values, timeout)()

    def ialltoall(self, values: Any, *, timeout: float | None = None) -> Request:
        return self._spawn("alltoall", self._start_alltoall(values, timeout))

    def _start_alltoall(self, values: Any, timeout: float | None) -> Callable[[], Awaitable[list[Any]]]:
        items, deadline = self._per_rank(values, "alltoall"), self._deadline(timeout)
        encoded = self._encode("alltoall", items)
        rnd = self._round()

        async def call() -> list[Any]:
            await self._put(rnd, "alltoall", -1, encoded, deadline)
            got = await self._gets(rnd, "alltoall", -1, self._others(), self.size, self.rank, deadline, False)
            got[self.rank] = items[self.rank]
            return [got[r] for r in range(self.size)]
        return call


class PartReader:
    """One rank's part of one call, fetched segment by segment from its node (rule 4)."""

    def __init__(self, ep: Endpoint, desc: GroupDescriptor, member: str, rnd: int, deadline: float,
                 window: trio.Semaphore) -> None:
        self.ep, self.desc, self.rnd, self.deadline, self.window = ep, desc, rnd, deadline, window
        m = desc.members[desc.index(member)]
        self.node, self.member = m.node, m.id
        self.segments: dict[int, memoryview] = {}
        self.meta: SegmentMeta | None = None

    def _name(self, seg: int) -> Name:
        return contrib_name(self.node, self.member, self.desc.group, self.rnd, seg)

    async def _ask(self, name: Name) -> tuple[Interest, Data] | None:
        """One request for `name` within the call's window of outstanding segments;
        None to ask again (no answer yet, or no route toward the contributor's node
        yet); Timeout naming the contributor at the deadline."""
        data = None
        with trio.move_on_at(self.deadline):
            async with self.window:
                remaining = self.deadline - trio.current_time()
                interest = Interest(name, lifetime_ms=max(10, int(remaining * 1000)))
                try:
                    data = await self.ep.express(interest, timeout=max(0.01, remaining), retx=RETX)
                except Timeout:
                    return None
                except Nacked as exc:
                    if exc.reason != NackReason.NO_ROUTE.label or "no longer kept" in (exc.detail or ""):
                        raise Error(f"{name}: {exc}") from None
            if data is None:  # the contributor's node is not reachable (yet)
                await trio.sleep(NO_ROUTE_WAIT)
                return None
            return interest, data
        raise Timeout(f"{name}: not there by the deadline", missing=[self.member])

    async def segment(self, seg: int) -> memoryview:
        if seg in self.segments:
            return self.segments[seg]
        name = self._name(seg)
        while True:
            answer = await self._ask(name)
            if answer is None:  # no answer within RETX... or not routed yet: ask again until the deadline
                continue
            interest, data = answer
            data = await verified(self.ep, interest, data, max(0.1, self.deadline - trio.current_time()))
            try:
                meta, view = unpack(data.content, seg_bytes=self.desc.seg_bytes, max_bytes=self.desc.max_bytes,
                                    n_members=len(self.desc.members))
            except SegmentError as exc:
                raise packing.PackingError(f"rank {self.member}'s part is malformed: {exc}") from None
            if meta.seg != seg or np.dtype(meta.dtype) != np.uint8 or len(meta.shape) != 1:
                raise packing.PackingError(f"{self.member} contributed {meta.describe()} to this call: it took "
                                           "part in a reduction where this rank called a collective that moves "
                                           "values")
            if self.meta is None:
                self.meta = meta
            elif (meta.nseg, meta.shape) != (self.meta.nseg, self.meta.shape):
                raise packing.PackingError(f"{self.member}'s part: segment {seg} disagrees with segment 0")
            self.segments[seg] = view.data
            return view.data

    async def header(self) -> packing.Header:
        first = await self.segment(0)
        assert self.meta is not None
        total = self.meta.shape[0]
        n = packing.header_length(first)
        prefix = first if n <= len(first) else await self.read(0, n)
        return packing.parse(prefix[:n], total)

    async def read(self, a: int, b: int) -> memoryview | bytes:
        """Bytes [a, b) of the part: a view when one segment holds them."""
        await self.segment(0)
        assert self.meta is not None
        per = self.desc.seg_bytes  # uint8: one element per byte
        s0, s1 = a // per, (b - 1) // per
        await run_bounded([bind(self.segment, s) for s in range(s0, s1 + 1)], SEGMENTS_AT_ONCE)
        if s0 == s1:
            return self.segments[s0][a - s0 * per:b - s0 * per]
        return b"".join(self.segments[s][max(a - s * per, 0):min(b - s * per, per)]
                        for s in range(s0, s1 + 1))


async def communicator(ep: Endpoint, nursery: trio.Nursery, group: str, member: str | None = None, *,
                       version: int | None = None) -> Communicator:
    """`Client.communicator`: group `group` (its latest version, or `version`) as ranks, this client
    taking part as `member` (default: this node's name), which must live on this client's node."""
    desc, wire = await group_descriptor(ep, group, version)
    me = await node_id(ep)
    member = member or me
    m = member_of(desc, member)
    if m.node != me:
        raise ValueError(f"member {member} of {group} lives on node {m.node}; a rank attaches to its own node's "
                         f"socket, and this client is attached to {me}")
    newest = (await ep.command("reduce", "rounds", group=group, member=member))["newest"]
    if newest is not None and newest >> EPOCH_BITS >= desc.version:
        raise Error(f"{member} already took part in collectives of {group} version {desc.version} (or a later "
                    "one): a communicator names its calls by the group version, so a new run needs a new version "
                    "or a new group (icnd exec makes a fresh group for every job)")
    return Communicator(ep, nursery, desc, wire, member)


RESULT_KINDS = ("allreduce", "reduce", "reduce_scatter", "bcast", "gather", "allgather", "scatter", "alltoall")


async def collective_result(ep: Endpoint, group: str, seq: int, kind: str, *, op: str = "sum", root: int = 0,
                            version: int | None = None, timeout: float = 10.0) -> Any:
    """`Client.collective_result`: what call `seq` (0 = a communicator's first call) of `group`'s
    `version` (default: the latest) produced, fetched by name without the ranks (docs/collectives.md):

    - ``allreduce``, ``reduce``, ``reduce_scatter``: the whole aggregate under `op` (numpy array);
    - ``bcast``: `root`'s value; ``scatter``: `root`'s list of values, one per rank;
    - ``gather``, ``allgather``: the list of every rank's value;
    - ``alltoall``: ``result[j][d]``, what rank j sent to rank d.

    Answered from caches while they hold it, else from the contributors'
    nodes while they keep the call's round (16 rounds per member); after that
    `icnd.Nacked`/`icnd.Error` saying the round is no longer kept, never a hang
    (Timeout at `timeout`)."""
    if kind not in RESULT_KINDS:
        raise ValueError(f"unknown collective {kind!r}; known: {', '.join(RESULT_KINDS)}")
    if type(seq) is not int or not 0 <= seq < MAX_SEQUENCE:
        raise ValueError(f"seq must be 0..{MAX_SEQUENCE - 1}, not {seq!r}")
    desc, wire = await group_descriptor(ep, group, version)
    reader = Communicator(ep, None, desc, wire, desc.members[0].id)
    rnd = desc.version << EPOCH_BITS | seq
    deadline = reader._deadline(timeout)
    if kind in ("allreduce", "reduce", "reduce_scatter"):
        return (await reader._reduced(kind, rnd, reader._op(op), deadline, False)).array
    everyone = list(range(reader.size))
    if kind == "bcast":
        return (await reader._gets(rnd, kind, reader._root(root), [root], 1, 0, deadline, False))[root]
    if kind in ("gather", "allgather"):
        got = await reader._gets(rnd, kind, reader._root(root) if kind == "gather" else -1, everyone, 1, 0,
                                 deadline, False)
        return [got[r] for r in everyone]
    if kind == "scatter":
        return await reader._all_values(rnd, kind, reader._root(root), root, deadline)
    return [await reader._all_values(rnd, kind, -1, j, deadline) for j in everyone]
