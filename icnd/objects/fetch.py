"""Fetching and publishing named data through an `Endpoint` (the I/O half of objects).

`fetch` gets one Data (verified, an ERROR Data raised as its exception);
`fetch_object` discovers an object's newest version, fetches its signed
manifest and then its segments through `_SegmentPipeline`: a window of
outstanding segment Interests (AIMD, never more bytes in flight than a
stream face's send queue holds), an RTO from SRTT + 4·RTTVAR with backoff,
retransmission with fresh nonces, out-of-order placement into a sink (a
buffer or a file), and a digest check of every segment against the
manifest.  `publish` hands one Data to the node's repo, `publish_object`
uploads bytes or a file of any size as a versioned object the node cuts,
stores and serves (see `icnd.objects.manifest` for the names).

`icnd.Client` offers each of these as a method; function hosts use
`fetch_segments` to pull arguments and `publish_object` to store results.

A consumer with time left waits for a route: a ``no-route``
Nack (nobody serves the name yet, or routing has not come back after a
fault) is not the end while the consumer's timeout runs.  `RouteWait` asks
again after 50 ms, doubling to 1 s, never past the deadline, and at the
deadline raises one `Nacked` ("nobody serves it") that says how many times
it asked and for how long.  `express_routed` is that around one exchange;
`fetch`, `fetch_object` (every step and every segment), function calls
(`icnd.compute.caller`) and reductions use it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import stat
import tempfile
from typing import Any, BinaryIO, Callable, Iterator

import trio

from icnd.codec import MAX_PARAMS_SIZE, encode, full_name, implicit_digest
from icnd.endpoint import DEFAULT_TIMEOUT, RETX_INTERVAL, Endpoint
from icnd.errors import CommandError, Error, Nacked, NotFound, Timeout, VerificationError, raise_for_error
from icnd.faces import shm
from icnd.name import T_DIGEST, T_VERSION, Name, NameLike
from icnd.objects.manifest import (
    DEFAULT_SEGMENT_SIZE,
    MANIFEST,
    MANIFEST_FRESHNESS_MS,
    CongestionWindow,
    Manifest,
    check_segment,
    check_sizes,
    manifest_name,
    parse_versioned,
    segment_index,
)
from icnd.packet import ContentType, Data, Interest, Nack, NackReason, new_nonce
from icnd.rtt import RttEstimator

# A published Data travels to the node inside a management Interest's
# parameters (codec.MAX_PARAMS_SIZE), less room for the command's framing.
MAX_PUBLISH_CONTENT = MAX_PARAMS_SIZE - 16 * 1024
UPLOAD_CHUNK = MAX_PUBLISH_CONTENT  # bytes per object/append command
SHM_MIN = 64 * 1024  # an object this large goes to the client's own node in shared memory
MAX_BYTES_IN_FLIGHT = 8 * 1024 * 1024  # half a stream face's send queue (16 MiB)
MAX_SEGMENT_ATTEMPTS = 8
MAX_CORRUPT_ATTEMPTS = 3

ROUTE_WAIT_FIRST = 0.05  # seconds before asking again after the first no-route Nack
ROUTE_WAIT_MAX = 1.0  # the wait doubles up to this
ROUTE_WAIT_MARGIN = 0.1  # the last ask leaves this much of the deadline for its (local) Nack to come back
NO_ROUTE = NackReason.NO_ROUTE.label

Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


# --- waiting for a route --------------------------------------------------------------------------
class RouteWait:
    """How a consumer waits for a route to `name` until `deadline` (trio
    time): after each no-route Nack, `retry` returns when it is time to ask
    again (50 ms, doubling to 1 s, never later than `ROUTE_WAIT_MARGIN`
    before the deadline), or raises the final error once no time is left.
    One per consumer operation; `retries` counts the asks after a Nack.

        wait = RouteWait(name, deadline)
        while True:
            try:
                return await ep.express(interest, timeout=deadline - trio.current_time())
            except Nacked as exc:
                await wait.retry(exc)      # other reasons are raised as they are
            interest = fresh(interest)     # a new nonce"""

    def __init__(self, name: NameLike, deadline: float) -> None:
        self.name = Name(name)
        self.deadline = deadline
        self.started = trio.current_time()
        self.retries = 0
        self._backoff = ROUTE_WAIT_FIRST
        self._detail = ""

    async def retry(self, exc: Nacked) -> None:
        """Return when it is time to ask again after `exc`; raise `exc` itself
        if it is not a no-route Nack, and `error()` if the deadline is near."""
        await trio.sleep(self.delay(exc))

    def delay(self, exc: Nacked) -> float:
        """`retry` for a caller that cannot sleep there (a pipeline): the
        seconds to wait before asking again, counted as one retry."""
        if exc.reason != NO_ROUTE:
            raise exc
        self._detail = exc.detail
        left = self.deadline - ROUTE_WAIT_MARGIN - trio.current_time()
        if left <= 0:
            raise self.error()
        wait = min(self._backoff, left)
        self._backoff = min(self._backoff * 2, ROUTE_WAIT_MAX)
        self.retries += 1
        return wait

    def routed(self) -> None:
        """An answer came (a pipeline's segment): the next no-route waits the shortest time again."""
        self._backoff = ROUTE_WAIT_FIRST

    def error(self) -> Nacked:
        """The no-route error that ends the wait: one sentence with the facts
        (who, how many asks over how long, the last refusing node's words)."""
        waited = trio.current_time() - self.started
        said = f": {self._detail}" if self._detail else ""
        return Nacked(NO_ROUTE, f"{self.name}: nobody serves it (no route after {self.retries} "
                                f"{'retry' if self.retries == 1 else 'retries'} over {waited:.1f}s{said})",
                      name=self.name, detail=self._detail, retries=self.retries)


def nacked(nack: Nack) -> Nacked:
    """The exception for a Nack that answered an Interest: one sentence
    (the name, the reason, the refusing node's words once), the facts as
    attributes."""
    label = nack.reason.label
    said = f" ({nack.detail})" if nack.detail else ""
    return Nacked(label, f"{nack.name}: nacked {label}{said}", name=nack.name, detail=nack.detail)


def fresh(interest: Interest) -> Interest:
    """`interest` with a new nonce: the same question, asked again."""
    return interest.forwarded(interest.hop_limit, nonce=new_nonce())


async def express_routed(ep: Endpoint, interest: Interest, *, timeout: float, retx: float | None = RETX_INTERVAL,
                         routes_until: float | None = None, what: NameLike | None = None) -> Data:
    """`ep.express(interest)`, waiting for a route: after a no-route Nack the
    Interest goes again (new nonce) as `RouteWait` paces it, until
    `routes_until` (trio time; default: `timeout` from now), then the final
    no-route `Nacked` naming `what` (default: the Interest's name).  Each
    attempt waits at most `timeout` for an answer, never past that deadline.
    Other Nacks and `Timeout` are raised as they come."""
    wait = RouteWait(interest.name if what is None else what,
                     trio.current_time() + timeout if routes_until is None else routes_until)
    while True:
        try:
            return await ep.express(interest, retx=retx,
                                    timeout=max(min(timeout, wait.deadline - trio.current_time()), 0.01))
        except Nacked as exc:
            await wait.retry(exc)
        interest = fresh(interest)


# --- one Data -------------------------------------------------------------------------------------
async def fetch(ep: Endpoint, name: NameLike, *, timeout: float = DEFAULT_TIMEOUT, can_be_prefix: bool = False,
                must_be_fresh: bool = False, verify: bool = True, lifetime: float | None = None,
                app_params: bytes | None = None, routes_until: float | None = None) -> Data:
    """Fetch one Data by name; raises Timeout, Nacked, RemoteError (an
    ERROR Data) or VerificationError.  A name with no route is asked for
    again until `timeout` (or `routes_until`, trio time: see
    `express_routed`) before it is Nacked no-route."""
    name = Name(name)
    lifetime_ms = int(1000 * (lifetime if lifetime is not None else min(timeout, 60.0)))
    if app_params is not None:
        interest = Interest.with_params(name, app_params, lifetime_ms=lifetime_ms,
                                        can_be_prefix=can_be_prefix, must_be_fresh=must_be_fresh)
    else:
        interest = Interest(name, lifetime_ms=lifetime_ms, can_be_prefix=can_be_prefix,
                            must_be_fresh=must_be_fresh)
    data = await express_routed(ep, interest, timeout=timeout, routes_until=routes_until, what=name)
    if verify:
        data = await verified(ep, interest, data, timeout)
    raise_for_error(data)
    return data


def vouched_by(interest: Interest, data: Data) -> bool:
    """True if `interest` named `data` by its implicit digest (``.../sha256digest=…``):
    then the asker already knew exactly which Data it wanted, and a
    DigestSha256 signature is enough (`icnd.trust.validator`)."""
    comps = interest.name.comps
    if not comps or comps[-1][0] != T_DIGEST or len(comps) != len(data.name.comps) + 1:
        return False
    return comps[-1][1:] == implicit_digest(data) and comps[:-1] == data.name.comps


async def _verify(ep: Endpoint, interest: Interest, data: Data, timeout: float) -> None:
    if vouched_by(interest, data):
        await ep.verify(data, timeout=timeout, vouched=True)
    else:  # an endpoint written before `vouched` existed is called as it expects
        await ep.verify(data, timeout=timeout)


async def verified(ep: Endpoint, interest: Interest, data: Data, timeout: float) -> Data:
    """`data` (the answer to `interest`) if the endpoint's validator accepts
    it -- a digest-only Data only when `interest` named its implicit digest
    (`vouched_by`); a manifest goes through here, so a digest-only manifest
    is refused and with it every segment it would vouch for --; else, once, the
    answer from past the caches: the node evicts that exact Data (by its
    implicit digest, so a good Data of the same name is kept) and the
    Interest goes again with MustBeFresh and a new nonce, so a poisoned cache
    entry costs one retry, never the fetch.
    Raises VerificationError if the second answer does not verify either,
    or is the same bad Data again; never returns unverified data."""
    try:
        await _verify(ep, interest, data, timeout)
        return data
    except VerificationError:
        again = await refetch_past_cache(ep, interest, data, timeout)
        if again is None:
            raise
    await _verify(ep, interest, again, timeout)
    return again


async def evict_unverified(ep: Endpoint, data: Data) -> bool:
    """Ask the node to drop exactly `data` from its Content Store (best effort),
    before asking again; counted in the endpoint's ``counters`` if it has them."""
    counters = getattr(ep, "counters", None)
    if isinstance(counters, dict):
        counters["unverified_retries"] = counters.get("unverified_retries", 0) + 1
    command = getattr(ep, "command", None)  # a minimal endpoint (a test's) may have no management
    if command is None:
        return False
    try:
        result = await command("cs", "evict", name=full_name(data).to_uri(), timeout=2.0)
    except Error:
        return False
    return bool(result and result.get("evicted"))


async def refetch_past_cache(ep: Endpoint, interest: Interest, bad: Data, timeout: float) -> Data | None:
    """After `bad` (an answer to `interest`) failed verification: evict it from
    the node's Content Store and ask once more, MustBeFresh, with a new nonce.
    None when the retry brings the same bad Data or no answer."""
    await evict_unverified(ep, bad)
    retry = dataclasses.replace(interest, must_be_fresh=True, nonce=Interest(interest.name).nonce)
    try:
        again = await ep.express(retry, timeout=timeout)
    except (Nacked, Timeout):
        return None
    if implicit_digest(again) == implicit_digest(bad):
        return None
    return again


async def publish(ep: Endpoint, name: NameLike, content: bytes, *, freshness: float | None = None,
                  content_type: int = ContentType.BLOB, sign_by: str = "auto") -> Data:
    """Hand a Data to the node, which stores and serves it (see `Client.publish`)."""
    if sign_by not in ("auto", "client", "node"):
        raise ValueError("sign_by must be 'auto', 'client' or 'node'")
    if len(content) > MAX_PUBLISH_CONTENT:
        raise ValueError(
            f"{name}: {len(content)} bytes is more than one published packet holds "
            f"({MAX_PUBLISH_CONTENT} bytes); publish larger content as a segmented object"
        )
    by_node = sign_by == "node" or (sign_by == "auto" and ep.key is None)
    freshness_ms = 3_600_000 if freshness is None else int(freshness * 1000)
    data = Data(Name(name), bytes(content), content_type, freshness_ms)
    if not by_node:
        data = ep.sign(data)
    result = await ep.command("repo", "publish", packets=[encode(data)], sign=by_node)
    if result["published"] != 1:
        raise Error(f"{name}: the node did not publish it")
    return data


# --- objects ---------------------------------------------------------------------------------------
class _SegmentDigests:
    """SHA-256 of each segment's content, fed the object's bytes in order."""

    def __init__(self, segment_size: int) -> None:
        self.segment_size = segment_size
        self.digests: list[bytes] = []
        self._hash = hashlib.sha256()
        self._filled = 0

    def update(self, chunk: bytes | memoryview) -> None:
        view = memoryview(chunk)
        while view:
            take = min(len(view), self.segment_size - self._filled)
            self._hash.update(view[:take])
            self._filled += take
            view = view[take:]
            if self._filled == self.segment_size:
                self.digests.append(self._hash.digest())
                self._hash = hashlib.sha256()
                self._filled = 0

    def finish(self) -> bytes:
        if self._filled or not self.digests:  # the short last segment (or the one empty segment)
            self.digests.append(self._hash.digest())
        return b"".join(self.digests)


async def publish_object(ep: Endpoint, name: NameLike, source: bytes | bytearray | memoryview | str | os.PathLike[str],
                         *, segment_size: int = DEFAULT_SEGMENT_SIZE, freshness: float | None = None,
                         progress: Progress | None = None, kind: str = "bytes") -> Manifest:
    """Upload bytes or a file as a segmented, versioned object (see
    `Client.publish_object`); `kind` ``"value"`` marks bytes that are one
    encoded value (`Client.publish_value`), in the signed manifest."""
    name = Name(name)
    freshness_ms = 3_600_000 if freshness is None else int(freshness * 1000)
    if isinstance(source, (str, os.PathLike)):
        path = os.fsdecode(source)
        size = os.path.getsize(path)
        reader = open(path, "rb")
    else:
        view = memoryview(source).cast("B")
        size = len(view)
        reader = None
    check_sizes(size, segment_size)
    extra: dict[str, Any] = {} if kind == "bytes" else {"kind": kind}  # (a node from before kinds: plain ones)
    begun = await ep.command("object", "begin", name=name.to_uri(), size=size,
                             segment_size=segment_size, freshness_ms=freshness_ms, **extra)
    upload = begun["upload"]
    # A publisher with a key signs the manifest itself (so a schema can require the
    # publisher's key for its names): it hashes each segment as it uploads it, and the
    # node keeps this manifest only if it describes exactly the bytes it received.
    digests: _SegmentDigests | None = _SegmentDigests(segment_size) if ep.key is not None else None
    try:
        offset = 0
        if size >= SHM_MIN and ep.passes_fds():  # the whole object in shared memory, one command
            if reader is not None:
                src = reader.fileno()
                fd = shm.create_sealed(size, lambda fd: _sendfile_all(fd, src, size), name="icnd-object")
            else:
                fd = shm.create_sealed(size, lambda fd: shm.write_all(fd, [view], 0), name="icnd-object")
            try:
                await ep.command("object", "append-shm", fds=[fd], upload=upload, size=size,
                                 timeout=max(DEFAULT_TIMEOUT, size / 50e6))
            finally:
                os.close(fd)
            if digests is not None:
                if reader is not None:
                    reader.seek(0)
                    while chunk := reader.read(UPLOAD_CHUNK):
                        digests.update(chunk)
                else:
                    digests.update(view)
            offset = size
            if progress is not None:
                progress(size, size)
        while offset < size:
            if reader is not None:
                chunk = reader.read(UPLOAD_CHUNK)
                if not chunk:
                    raise Error(f"{path}: file shrank while it was being published")
            else:
                chunk = bytes(view[offset:offset + UPLOAD_CHUNK])
            if digests is not None:
                digests.update(chunk)
            await ep.command("object", "append", upload=upload, offset=offset, data=chunk)
            offset += len(chunk)
            if progress is not None:
                progress(offset, size)
        signed = b""
        if digests is not None:
            mine = Manifest(name, begun["version"], size, segment_size, digests.finish(), kind)
            signed = encode(ep.sign(Data(mine.manifest_name(), mine.encode(), ContentType.MANIFEST,
                                         MANIFEST_FRESHNESS_MS)))
        info = await ep.command("object", "commit", upload=upload, manifest=signed)
    except BaseException:
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            try:
                await ep.command("object", "abort", upload=upload)
            except Error:
                pass
        raise
    finally:
        if reader is not None:
            reader.close()
    if progress is not None and size == 0:
        progress(0, 0)
    return Manifest(name, info["version"], size, segment_size, b"\0" * (32 * info["segments"]), kind)


def _sendfile_all(out: int, src: int, size: int) -> None:
    done = 0
    while done < size:
        got = os.sendfile(out, src, done, size - done)
        if got <= 0:
            raise Error(f"short read publishing a file: {done} of {size} bytes")
        done += got


async def discover(ep: Endpoint, name: Name, timeout: float, routes_until: float | None = None) -> Data:
    """What the network has under `name`: its newest manifest, a segment, or
    a single Data.  NotFound when nobody serves it (after waiting for a
    route until `routes_until`, default `timeout` from now)."""
    try:
        return await fetch(ep, name, timeout=timeout, can_be_prefix=True, must_be_fresh=True, verify=False,
                           routes_until=routes_until)
    except Nacked as exc:
        if exc.reason == NO_ROUTE:
            raise NotFound(f"{name}: no such object: {str(exc).removeprefix(f'{name}: ')}") from None
        raise


async def fetch_manifest(ep: Endpoint, name: NameLike, *, timeout: float = DEFAULT_TIMEOUT,
                         verify: bool = True, routes_until: float | None = None) -> Manifest:
    """The manifest of the newest version of object `name` (or of the
    version named, when `name` ends with ``v=…``); a name with no route is
    waited for until `timeout` from now, or `routes_until` (trio time)."""
    name = Name(name)
    comps = name.comps
    if comps and comps[-1][0] == T_VERSION:
        base, ver = name[:-1], int.from_bytes(comps[-1][1:], "big")
    else:
        found = await discover(ep, name, timeout, routes_until)
        parsed = parse_versioned(found.name, name)
        if parsed is None:
            raise NotFound(f"{name} is not a published object ({found.name} answered)")
        base, ver = name, parsed[0]
        if parsed[1] == MANIFEST and found.content_type == ContentType.MANIFEST:
            if verify:  # a bad one is evicted and asked for again by its name (`verified`)
                found = await verified(ep, Interest(found.name, lifetime_ms=int(1000 * min(timeout, 60.0))),
                                       found, timeout)
                if found.content_type != ContentType.MANIFEST:
                    raise NotFound(f"{found.name} is not a manifest")
            return Manifest.decode(base, found.content)
    data = await fetch(ep, manifest_name(base, ver), timeout=timeout, verify=verify, routes_until=routes_until)
    if data.content_type != ContentType.MANIFEST:
        raise NotFound(f"{data.name} is not a manifest")
    return Manifest.decode(base, data.content)


@dataclasses.dataclass
class FetchStats:
    """What one `fetch_object` took, as ndncatchunks reports at its end.

    Filled in by the fetch it is handed to (``stats=``); `seconds` is set
    once the object is complete (it stays 0 on failure).  `interests`
    counts every segment Interest sent, `retransmissions` those that asked
    again for a segment (after a timeout, a congestion Nack or a corrupt
    copy), so ``interests == segments + retransmissions`` on success over the
    network; `shared_memory`: the object came from the client's own node in
    shared memory instead (`icnd.faces.shm`), no Interest sent."""

    segments: int = 0
    bytes: int = 0
    interests: int = 0
    retransmissions: int = 0
    seconds: float = 0.0
    shared_memory: bool = False

    @property
    def goodput_mbps(self) -> float:
        """Content bits delivered per second, in 10^6 bit/s (0 before the end)."""
        return self.bytes * 8 / self.seconds / 1e6 if self.seconds > 0 else 0.0


async def fetch_object(ep: Endpoint, name: NameLike, *, timeout: float = 60.0, verify: bool = True,
                       out: str | os.PathLike[str] | bytearray | None = None,
                       progress: Progress | None = None, stats: FetchStats | None = None) -> bytes | bytearray:
    """Fetch a segmented object, each segment checked against the signed
    manifest (see `Client.fetch_object`); never hangs past `timeout`.  With
    `out` a path, the file appears (or is replaced) only complete: see
    `_output_file`.  `stats`, if given, is filled in (`FetchStats`)."""
    name = Name(name)
    started = trio.current_time()
    result = await _fetch_object(ep, name, timeout, verify, out, progress, stats)
    if stats is not None:
        stats.seconds = trio.current_time() - started
    return result


async def _fetch_object(ep: Endpoint, name: Name, timeout: float, verify: bool,
                        out: str | os.PathLike[str] | bytearray | None, progress: Progress | None,
                        stats: FetchStats | None) -> bytes | bytearray:
    deadline = trio.current_time() + timeout
    try:
        with trio.fail_at(deadline):
            # each step waits `step_timeout` for an answer, and for a route until the deadline
            step_timeout = min(timeout, DEFAULT_TIMEOUT)
            if not (name.comps and name.comps[-1][0] == T_VERSION):
                found = await discover(ep, name, step_timeout, deadline)
                if found.name == name and found.content_type != ContentType.MANIFEST:
                    if stats is not None:
                        stats.segments, stats.bytes, stats.interests = 1, len(found.content), 1
                    return await _single(ep, found, out, verify, step_timeout, progress)
            manifest = await fetch_manifest(ep, name, timeout=step_timeout, verify=verify, routes_until=deadline)
            if manifest.size >= SHM_MIN and ep.passes_fds():  # stored by our own node? shared memory
                whole = await _from_shared_memory(ep, manifest, out, progress, stats, step_timeout)
                if whole is not None:
                    return whole
            if out is None or isinstance(out, bytearray):
                buffer = bytearray(manifest.size) if out is None else out
                if len(buffer) != manifest.size:
                    buffer[manifest.size:] = b""
                    buffer.extend(bytes(manifest.size - len(buffer)))
                await _fetch_into(ep, manifest, _BufferSink(buffer), progress, stats, deadline)
                return bytes(buffer) if out is None else buffer
            with _output_file(out) as f:
                f.truncate(manifest.size)
                await _fetch_into(ep, manifest, _FileSink(f.fileno()), progress, stats, deadline)
            return b""
    except trio.TooSlowError:
        raise Timeout(f"{name}: object not complete within {timeout:g}s") from None


async def _from_shared_memory(ep: Endpoint, manifest: Manifest, out: str | os.PathLike[str] | bytearray | None,
                              progress: Progress | None, stats: FetchStats | None,
                              timeout: float) -> bytes | bytearray | None:
    """The object from the client's own node without a segment crossing the
    socket (`object/read-shm`: a read-only descriptor of the node's file).
    It is copied out first, then every segment of the copy is checked against
    the verified manifest exactly as on the network path (SHA-256, two
    threads: hashing releases the GIL), so what is returned is what was
    checked.  None: the node does not store it; the caller fetches it over
    the network."""
    try:
        _, fd = await ep.command_fd("object", "read-shm", prefix=manifest.prefix.to_uri(), timeout=timeout)
    except CommandError as exc:
        if exc.status == 404:
            return None
        raise
    try:
        view = shm.map_file(fd, manifest.size)
    except shm.ShmError:  # not what the manifest describes: the network path decides
        return None
    try:
        if out is None:
            whole: bytes | bytearray = bytes(view)
        elif isinstance(out, bytearray):
            out[:] = view
            whole = out
        else:
            whole = bytes(view)
    finally:
        view.release()
    copy = memoryview(whole)

    def check(indices: range) -> int | None:
        for i in indices:
            start, end = manifest.segment_range(i)
            if not check_segment(manifest, i, copy[start:end]):
                return i
        return None

    bad: list[int | None] = []

    async def run(indices: range) -> None:
        bad.append(await trio.to_thread.run_sync(check, indices))

    async with trio.open_nursery() as nursery:
        for half in (range(0, manifest.segments, 2), range(1, manifest.segments, 2)):
            nursery.start_soon(run, half)
    copy.release()
    wrong = [i for i in bad if i is not None]
    if wrong:  # the node's copy is corrupt: never returned (the network path would not either)
        if isinstance(out, bytearray):
            out[:] = bytes(len(out))  # the caller's buffer keeps nothing unchecked
        raise VerificationError(f"{manifest.segment_name(min(wrong))}: content does not match the manifest")
    if stats is not None:
        stats.segments, stats.bytes, stats.interests = manifest.segments, manifest.size, 0
        stats.shared_memory = True
    if progress is not None:
        progress(manifest.size, manifest.size)
    if out is None or isinstance(out, bytearray):
        return whole
    with _output_file(out) as f:
        f.write(whole)
    return b""


async def _single(ep: Endpoint, data: Data, out: str | os.PathLike[str] | bytearray | None, verify: bool,
                  timeout: float, progress: Progress | None) -> bytes | bytearray:
    """A plain (unsegmented) Data where an object was asked for."""
    if verify:
        data = await verified(ep, Interest(data.name, lifetime_ms=int(1000 * min(timeout, 60.0))), data, timeout)
    raise_for_error(data)
    if progress is not None:
        progress(len(data.content), len(data.content))
    if isinstance(out, bytearray):
        out[:] = data.content
        return out
    if out is None:
        return bytes(data.content)  # (no copy when it is bytes already)
    with _output_file(out) as f:
        f.write(data.content)
    return b""


@contextlib.contextmanager
def _output_file(out: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A file to write an object into, all or nothing: a regular file (or a
    new name) is written as a temporary file in the same directory and
    renamed over `out` only when the body succeeds; on any failure
    (timeout, verification, cancellation) the temporary file is removed and
    `out` is left as it was.  A non-regular file (/dev/null, a pipe) is
    written in place, as it cannot be replaced."""
    path = os.path.realpath(os.fspath(out))
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "wb") as f:
            yield f
        return
    directory, base = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".part", dir=directory or ".")
    try:
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(fd, mode)  # as open() would have made it, not mkstemp's 0600
        with os.fdopen(fd, "wb") as f:
            fd = -1
            yield f
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


async def fetch_segments(ep: Endpoint, manifest: Manifest) -> bytes:
    """The segments `manifest` describes, pipelined and checked, as bytes."""
    buffer = bytearray(manifest.size)
    await _fetch_into(ep, manifest, _BufferSink(buffer), None)
    return bytes(buffer)


async def _fetch_into(ep: Endpoint, manifest: Manifest, sink: "_Sink", progress: Progress | None,
                      stats: FetchStats | None = None, routes_until: float | None = None) -> None:
    pipeline = _SegmentPipeline(ep, manifest, sink, progress, routes_until)
    with ep.stream(manifest.prefix, pipeline.on_packet):
        await pipeline.run()
    if stats is not None:
        stats.segments, stats.bytes = pipeline.done, pipeline.bytes_done
        stats.interests, stats.retransmissions = pipeline.interests_sent, pipeline.retransmissions


class _Sink:
    def write(self, offset: int, content: bytes | memoryview) -> None:
        raise NotImplementedError


class _BufferSink(_Sink):
    def __init__(self, buffer: bytearray) -> None:
        self.view = memoryview(buffer)

    def write(self, offset: int, content: bytes | memoryview) -> None:
        self.view[offset:offset + len(content)] = content


class _FileSink(_Sink):
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, offset: int, content: bytes | memoryview) -> None:
        os.pwrite(self.fd, content, offset)


class _SegmentPipeline:
    """One object fetch: a window of outstanding segment Interests (AIMD),
    RTO from SRTT + 4·RTTVAR with backoff, retransmission with fresh nonces,
    out-of-order placement into the sink, digest check of every segment.

    With `routes_until` (trio time), a segment Nacked no-route is parked,
    not failed (its asks not counted against `MAX_SEGMENT_ATTEMPTS`): while
    segments are parked, nothing is sent but one probe, a parked segment
    asked again when `RouteWait` says; the first Data that arrives sends
    every parked segment again; at `routes_until`, the final no-route error.
    Without it (a host pulling a call's arguments, whose caller is gone
    when there is no route back) no-route fails at once."""

    def __init__(self, ep: Endpoint, manifest: Manifest, sink: _Sink, progress: Progress | None,
                 routes_until: float | None = None) -> None:
        self.ep = ep
        self.manifest = manifest
        self.sink = sink
        self.progress = progress
        self.rtt = RttEstimator()
        # never more Data in flight than a face's send queue can hold: beyond
        # that the node drops segments and only timeouts would recover them
        self.window = CongestionWindow(maximum=max(2.0, MAX_BYTES_IN_FLIGHT / manifest.segment_size))
        self.next_index = 0
        self.retx: list[int] = []
        self.outstanding: dict[int, tuple[float, int, int]] = {}  # index -> (sent_at, nonce, attempt)
        self.attempts: dict[int, int] = {}
        self.corrupt: dict[int, int] = {}
        self.to_evict: list[Data] = []  # corrupt segments the node is to drop before they are asked again
        self.done = 0
        self.bytes_done = 0
        self.wakeup = trio.Event()
        self.arrived: list[Data | Nack] = []
        self.lifetime_ms = 4000
        self.interests_sent = 0
        self.retransmissions = 0  # Interests for a segment asked before (`FetchStats`)
        self.route_wait = None if routes_until is None else RouteWait(manifest.prefix, routes_until)
        self.parked: list[int] = []  # segments Nacked no-route, waiting for the route
        self.parked_until: float | None = None  # when to probe again (None: a probe is out, or nothing parked)

    def on_packet(self, packet: Data | Nack) -> None:
        self.arrived.append(packet)
        self.wakeup.set()

    def _send(self, index: int, now: float) -> None:
        attempt = self.attempts.get(index, 0) + 1
        if attempt > MAX_SEGMENT_ATTEMPTS:
            raise Timeout(f"{self.manifest.segment_name(index)}: no answer after {MAX_SEGMENT_ATTEMPTS} attempts")
        self.attempts[index] = attempt
        self.interests_sent += 1
        self.retransmissions += attempt > 1
        interest = Interest(self.manifest.segment_name(index), lifetime_ms=self.lifetime_ms,
                            must_be_fresh=index in self.corrupt)
        self.outstanding[index] = (now, interest.nonce, attempt)
        self.ep.send(interest)

    async def run(self) -> None:
        total = self.manifest.segments
        while self.done < total:
            now = trio.current_time()
            if self.parked_until is not None and now >= self.parked_until:  # time to probe the route
                self.retx.append(self.parked.pop())
                self.parked_until = None
            window = 1 if self.parked else self.window.size  # no route: the probe alone
            while (self.parked_until is None and len(self.outstanding) < window
                   and (self.retx or self.next_index < total)):
                if self.retx:
                    index = self.retx.pop()
                else:
                    index = self.next_index
                    self.next_index += 1
                self._send(index, now)
            rto = self.rtt.timeout()
            earliest = min((sent for sent, _, _ in self.outstanding.values()), default=None)
            wake = now + rto if earliest is None else earliest + rto
            if self.parked_until is not None and (earliest is None or self.parked_until < wake):
                wake = self.parked_until
            with trio.move_on_at(wake):
                await self.wakeup.wait()
            self.wakeup = trio.Event()
            arrived, self.arrived = self.arrived, []
            now = trio.current_time()
            for packet in arrived:
                self._on_arrival(packet, now)
            self._check_timeouts(now)
            if self.to_evict:  # a corrupt copy in the node's cache would answer the retry again
                bad, self.to_evict = self.to_evict, []
                for data in bad:
                    await evict_unverified(self.ep, data)

    def _index_of(self, packet: Data | Nack) -> int | None:
        index = segment_index(packet.name.comps[-1])
        if index is None or index not in self.outstanding:
            return None
        return index

    def _on_arrival(self, packet: Data | Nack, now: float) -> None:
        index = self._index_of(packet)
        if index is None:
            return  # a late duplicate of a segment already placed
        sent_at, nonce, attempt = self.outstanding[index]
        if isinstance(packet, Nack):
            if packet.nonce != nonce:
                return
            del self.outstanding[index]
            if packet.reason in (NackReason.CONGESTION, NackReason.NO_RESOURCES):
                self.window.on_loss(now, self.rtt.srtt or self.rtt.rto)
                self.retx.append(index)
                return
            if packet.reason is not NackReason.NO_ROUTE or self.route_wait is None:
                raise nacked(packet)
            if self.parked_until is None:  # one wait for every segment the outage Nacks
                self.parked_until = now + self.route_wait.delay(nacked(packet))
            self.parked.append(index)
            self.attempts[index] -= 1
            return
        del self.outstanding[index]
        if self.route_wait is not None:
            self.route_wait.routed()
            if self.parked:  # the route is back
                self.retx.extend(self.parked)
                self.parked, self.parked_until = [], None
        manifest = self.manifest
        if not check_segment(manifest, index, packet.content):
            bad = self.corrupt[index] = self.corrupt.get(index, 0) + 1
            if bad >= MAX_CORRUPT_ATTEMPTS:
                raise VerificationError(
                    f"{packet.name}: content does not match the manifest's digest "
                    f"({bad} copies received, all corrupt)"
                )
            self.to_evict.append(packet)
            self.retx.append(index)
            return
        if attempt == 1:
            self.rtt.sample(now - sent_at)
        else:
            self.rtt.reset_backoff()  # the path delivers again: stop stretching the timer
        self.window.on_answer()
        start, _ = manifest.segment_range(index)
        self.sink.write(start, packet.content)
        self.done += 1
        self.bytes_done += len(packet.content)
        if self.progress is not None:
            self.progress(self.bytes_done, manifest.size)

    def _check_timeouts(self, now: float) -> None:
        rto = self.rtt.timeout()
        expired = [i for i, (sent, _, _) in self.outstanding.items() if now - sent >= rto]
        if not expired:
            return
        self.rtt.back_off()
        self.window.on_loss(now, self.rtt.srtt or rto)
        for index in expired:
            del self.outstanding[index]
            self.retx.append(index)
