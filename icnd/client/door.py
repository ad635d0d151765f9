"""The client library: the one door applications use to reach their node.

    async with icnd.connect() as c:
        data = await c.fetch("/demo/hello")
        await c.publish("/demo/hello", b"hi", freshness=10.0)
        async with c.serve("/demo/echo", handler):
            ...

A `Client` is a local face of the node (a Unix stream connection) plus a
receive task that matches incoming Data and Nacks to pending Interests and
hands incoming Interests to served handlers.

What `fetch` verifies (``verify=True``, the default): a DigestSha256 Data
must match its digest; an Ed25519 or HMAC Data must verify with the key its
key locator names, taken from the client's `KeyChain` or, for Ed25519 keys
the client does not know yet, fetched once by name from the network and
remembered.  A fetched key is not yet checked against a trust anchor (trust
schemas are future work): this catches corruption and mismatched keys, not a
forger who also serves a forged key.  See docs/security.md.
"""

from __future__ import annotations

import inspect
import logging
import os
import secrets
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, Sequence, Union

import msgpack
import trio

from icnd.codec import MAX_PARAMS_SIZE, decode, encode
from icnd.compute.rice import CallerSessions
from icnd.daemon.config import resolve_socket_path
from icnd.errors import DecodeError, Error, Nacked, NotFound, RemoteError, Timeout, VerificationError
from icnd.faces.stream import StreamFace, connect_stream
from icnd.name import T_RNP, T_VERSION, Name, NameLike
from icnd.objects.manifest import (
    DEFAULT_SEGMENT_SIZE,
    MANIFEST,
    CongestionWindow,
    Manifest,
    RttEstimator,
    check_segment,
    check_sizes,
    manifest_name,
    parse_versioned,
    segment_index,
)
from icnd.packet import ContentType, Data, Interest, Nack, NackReason, Packet, SigType
from icnd.security import DigestKey, Ed25519Key, Ed25519VerifyKey, KeyChain, SigningKey

log = logging.getLogger("icnd.client")

DEFAULT_TIMEOUT = 4.0
# A published Data travels to the node inside a management Interest's
# parameters (codec.MAX_PARAMS_SIZE), less room for the command's framing.
MAX_PUBLISH_CONTENT = MAX_PARAMS_SIZE - 16 * 1024
RETX_INTERVAL = 1.0  # retransmit with a fresh nonce while the deadline allows

Handler = Callable[[Interest], Union[bytes, Data, Nack, None, Awaitable[Union[bytes, Data, Nack, None]]]]
_DIGEST_KEY = DigestKey()


class CommandFailed(RemoteError):
    """A management command was refused by the node (code is HTTP-like)."""


class _Pending:
    __slots__ = ("interest", "event", "result")

    def __init__(self, interest: Interest) -> None:
        self.interest = interest
        self.event = trio.Event()
        self.result: Data | Nack | None = None


class Client:
    def __init__(self, face: StreamFace, nursery: trio.Nursery, *, key: SigningKey | None = None,
                 keychain: KeyChain | None = None, socket_path: str = "") -> None:
        self.face = face
        self.socket_path = socket_path
        self._nursery = nursery
        self.keychain = keychain or KeyChain()
        self.key = key
        if key is not None:
            self.keychain.add_signing_key(key)
        self._pending: dict[tuple[bytes, ...], list[_Pending]] = {}
        self._prefix_pending = 0
        # object fetches in progress: N/v=V -> callback(packet) for its segments
        self._streams: dict[tuple[bytes, ...], Callable[[Data | Nack], None]] = {}
        # calls in progress: rnp= component -> answers the host's reflexive Interests
        self._reflexive: dict[bytes, Handler] = {}
        self._call_key: Ed25519Key | None = None
        self.call_sessions = CallerSessions()  # session keys function hosts granted (small calls)
        self._served: list[tuple[Name, Handler]] = []
        self.node_id: str | None = None  # the node's name (its last component), once asked
        self.closed = False

    # --- plumbing --------------------------------------------------------------------
    def _on_receive(self, face: StreamFace, wire: bytes) -> None:
        try:
            packet = decode(wire)
        except DecodeError as exc:
            log.warning("malformed packet from node: %s", exc)
            return
        if type(packet) is Interest:
            self._on_interest(packet)
        elif type(packet) is Data:
            self._on_data(packet)
        else:
            self._on_nack(packet)  # type: ignore[arg-type]

    def _on_data(self, data: Data) -> None:
        comps = data.name.comps
        if self._streams:
            stream = self._streams.get(comps[:-1])
            if stream is not None:
                stream(data)
                return
        waiters = self._pending.pop(comps, [])
        if self._prefix_pending:
            for n in range(len(comps)):
                cands = self._pending.get(comps[:n])
                if cands:
                    keep = [p for p in cands if not p.interest.can_be_prefix]
                    waiters.extend(p for p in cands if p.interest.can_be_prefix)
                    if keep:
                        self._pending[comps[:n]] = keep
                    else:
                        del self._pending[comps[:n]]
        for p in waiters:
            self._resolve(p, data)

    def _on_nack(self, nack: Nack) -> None:
        if self._streams:
            stream = self._streams.get(nack.name.comps[:-1])
            if stream is not None:
                stream(nack)
                return
        waiters = self._pending.get(nack.name.comps)
        if not waiters:
            return
        for p in list(waiters):
            if p.interest.nonce == nack.nonce:
                waiters.remove(p)
                self._resolve(p, nack)
        if not waiters:
            self._pending.pop(nack.name.comps, None)

    def _resolve(self, p: _Pending, result: Data | Nack) -> None:
        if p.interest.can_be_prefix:
            self._prefix_pending -= 1
        p.result = result
        p.event.set()

    def _add_pending(self, p: _Pending) -> None:
        self._pending.setdefault(p.interest.name.comps, []).append(p)
        if p.interest.can_be_prefix:
            self._prefix_pending += 1

    def _drop_pending(self, p: _Pending) -> None:
        waiters = self._pending.get(p.interest.name.comps)
        if waiters and p in waiters:
            waiters.remove(p)
            if not waiters:
                del self._pending[p.interest.name.comps]
            if p.interest.can_be_prefix:
                self._prefix_pending -= 1

    def send(self, packet: Packet) -> None:
        if self.face.closed:
            raise Error(f"connection to the node at {self.socket_path} is closed")
        self.face.send(encode(packet))

    # --- consumer ---------------------------------------------------------------------------
    async def express(self, interest: Interest, *, timeout: float = DEFAULT_TIMEOUT,
                      retx: float | None = RETX_INTERVAL) -> Data:
        """Send `interest` (retransmitting with fresh nonces) until Data, a Nack, or the deadline."""
        deadline = trio.current_time() + timeout
        while True:
            p = _Pending(interest)
            self._add_pending(p)
            try:
                self.send(interest)
                wait = deadline - trio.current_time()
                if retx:
                    wait = min(wait, retx)
                with trio.move_on_after(max(wait, 0)):
                    await p.event.wait()
            finally:
                if p.result is None:
                    self._drop_pending(p)
            result = p.result
            if isinstance(result, Data):
                return result
            if isinstance(result, Nack):
                detail = f" ({result.detail})" if result.detail else ""
                raise Nacked(result.reason.label, f"{interest.name}: nacked {result.reason.label}{detail}")
            if trio.current_time() >= deadline:
                raise Timeout(f"no answer for {interest.name} within {timeout:g}s")
            interest = interest.forwarded(interest.hop_limit, nonce=Interest(interest.name).nonce)

    async def fetch(self, name: NameLike, *, timeout: float = DEFAULT_TIMEOUT, can_be_prefix: bool = False,
                    must_be_fresh: bool = False, verify: bool = True, lifetime: float | None = None,
                    app_params: bytes | None = None) -> Data:
        """Fetch one Data by name; raises Timeout, Nacked, RemoteError or VerificationError."""
        name = Name(name)
        lifetime_ms = int(1000 * (lifetime if lifetime is not None else min(timeout, 60.0)))
        if app_params is not None:
            interest = Interest.with_params(name, app_params, lifetime_ms=lifetime_ms,
                                            can_be_prefix=can_be_prefix, must_be_fresh=must_be_fresh)
        else:
            interest = Interest(name, lifetime_ms=lifetime_ms, can_be_prefix=can_be_prefix,
                                must_be_fresh=must_be_fresh)
        data = await self.express(interest, timeout=timeout)
        if verify:
            await self.verify(data, timeout=timeout)
        if data.content_type == ContentType.ERROR:
            raise _remote_error(data)
        return data

    async def verify(self, data: Data, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Check `data`'s signature (see the module docstring for what is checked)."""
        chain = self.keychain
        if not chain.can_verify(data):
            if data.sig_type != SigType.ED25519 or data.key_locator is None:
                raise VerificationError(f"{data.name}: signed by unknown key {data.key_locator}")
            try:
                key_data = await self.express(Interest(data.key_locator, can_be_prefix=True), timeout=timeout)
            except (Nacked, Timeout) as exc:
                raise VerificationError(
                    f"{data.name}: cannot retrieve its signing key {data.key_locator} ({exc}); "
                    "is there a route to the signer's prefix?"
                ) from None
            if key_data.content_type != ContentType.KEY or len(key_data.content) != 32:
                raise VerificationError(f"{data.name}: {data.key_locator} is not an Ed25519 public key")
            chain.add_trusted(data.key_locator, Ed25519VerifyKey.from_bytes(key_data.content))
        chain.verify(data)

    # --- producer ----------------------------------------------------------------------------
    def sign(self, data: Data) -> Data:
        return self.keychain.sign(data, self.key)

    def sign_digest(self, data: Data) -> Data:
        """DigestSha256 only (for packets checked against a signed manifest)."""
        return _DIGEST_KEY.sign(data)

    def call_key(self) -> Ed25519Key:
        """The key that proves who is calling a function: this client's own
        Ed25519 key, or an ephemeral identity made once per client."""
        if isinstance(self.key, Ed25519Key):
            return self.key
        if self._call_key is None:
            self._call_key = Ed25519Key.generate(Name(["client", secrets.token_hex(8)]))
        return self._call_key

    @contextmanager
    def reflexive(self, component: bytes, handler: Handler) -> Iterator[None]:
        """Answer reflexive Interests starting with `component` (an rnp=) meanwhile."""
        self._reflexive[component] = handler
        try:
            yield
        finally:
            del self._reflexive[component]

    # --- named functions ---------------------------------------------------------------------
    async def call(self, fn: NameLike, *args: Any, timeout: float = 60.0, pure: bool = False,
                   lifetime: float = 4.0, reflexive: bool = False) -> Any:
        """Invoke the named function `fn` with `args` (RICE: the host pulls the
        arguments over reflexive forwarding, long work comes back as a thunk).

        ``pure=True`` names the call by the digest of its arguments so that
        Content Stores can answer equal calls (for `icnd.function(pure=True)`).
        `lifetime` is the trigger Interest's lifetime: work that takes longer
        comes back as a thunk.  Arguments up to 8 KiB (encoded) ride in the
        signed trigger itself (one round trip); larger ones, or any with
        ``reflexive=True``, are pulled by the host over reflexive forwarding.  Raises RemoteError (the function raised or
        refused), Unauthorized, Nacked (e.g. no-route: nobody serves `fn`),
        Timeout."""
        from icnd.compute.rice import call

        return await call(self, Name(fn), args, timeout=timeout, pure=pure, lifetime=lifetime,
                          reflexive=reflexive)

    @asynccontextmanager
    async def host(self, functions: dict[str, Callable[..., Any]], *, allow: dict[str, list[str]] | None = None,
                   max_jobs: int = 32, workers: int = 4, retention: float = 60.0,
                   pool: str = "threads") -> AsyncIterator[Any]:
        """Serve named functions from this process while the block runs:
        ``{"/fn/double": double}``; ``allow`` maps a prefix to the key-name
        prefixes allowed to call it (default: any validly signed caller);
        a finished call's result stays fetchable `retention` seconds, then
        its thunk name answers a signed "gone" error.  Synchronous functions
        run in `workers` threads, or with ``pool="processes"`` in as many
        worker processes (then each must be a module-level function,
        importable by name; ValueError otherwise)."""
        from icnd.compute.registry import hosted
        from icnd.compute.rice import FunctionHost, HostLimits

        allow = allow or {}
        specs = [hosted(prefix, fn, allow.get(prefix, ())) for prefix, fn in functions.items()]
        node_name = Name((await self.status())["name"])
        host = FunctionHost(self, specs, node_name, limits=HostLimits(max_jobs=max_jobs, retention=retention),
                            workers=workers, pool=pool)
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            try:
                yield host
            finally:
                nursery.cancel_scope.cancel()

    async def fetch_segments(self, manifest: Manifest) -> bytes:
        """The segments `manifest` describes, pipelined and checked, as bytes."""
        buffer = bytearray(manifest.size)
        await self._fetch_segments(manifest, _BufferSink(buffer), None)
        return bytes(buffer)

    async def publish(self, name: NameLike, content: bytes, *, freshness: float | None = None,
                      content_type: int = ContentType.BLOB, sign_by: str = "auto") -> Data:
        """Hand a Data to the node, which stores and serves it (persistently with --data-dir).

        ``sign_by``: "client" (this client's key; digest if it has none),
        "node" (the node's identity key) or "auto" (client key if any, else the node's)."""
        if sign_by not in ("auto", "client", "node"):
            raise ValueError("sign_by must be 'auto', 'client' or 'node'")
        if len(content) > MAX_PUBLISH_CONTENT:
            raise ValueError(
                f"{name}: {len(content)} bytes is more than one published packet holds "
                f"({MAX_PUBLISH_CONTENT} bytes); publish larger content as a segmented object"
            )
        by_node = sign_by == "node" or (sign_by == "auto" and self.key is None)
        freshness_ms = 3_600_000 if freshness is None else int(freshness * 1000)
        data = Data(Name(name), bytes(content), content_type, freshness_ms)
        if not by_node:
            data = self.sign(data)
        result = await self.command("repo", "publish", packets=[encode(data)], sign=by_node)
        if result["published"] != 1:
            raise Error(f"{name}: the node did not publish it")
        return data

    async def unpublish(self, name: NameLike) -> None:
        await self.command("repo", "unpublish", name=Name(name).to_uri())

    @asynccontextmanager
    async def serve(self, prefix: NameLike, handler: Handler, *, cost: int = 0) -> AsyncIterator[None]:
        """Answer Interests under `prefix` with `handler` while the block runs.

        The handler returns bytes (wrapped in a Data signed by this client),
        a Data, or None (no answer); it may be a coroutine function.  If it
        raises, the consumer gets an error Data (`RemoteError`)."""
        prefix = Name(prefix)
        entry = (prefix, handler)
        await self.command("route", "add", prefix=prefix.to_uri(), face="self", cost=cost)
        self._served.append(entry)
        try:
            yield
        finally:
            self._served.remove(entry)
            if not self.face.closed:
                with trio.CancelScope(shield=True), trio.move_on_after(2):
                    try:
                        await self.command("route", "remove", prefix=prefix.to_uri(), face="self")
                    except Error:
                        pass

    def _on_interest(self, interest: Interest) -> None:
        comps = interest.name.comps
        if comps and comps[0][0] == T_RNP:
            handler = self._reflexive.get(comps[0])
            if handler is None:  # a finished (or never made) call: stop the host asking
                self.send(Nack.for_interest(interest, NackReason.PROHIBITED, "no call in progress"))
            else:
                self._nursery.start_soon(self._answer, handler, interest)
            return
        best: tuple[Name, Handler] | None = None
        for prefix, handler in self._served:
            if prefix.is_prefix_of(interest.name) and (best is None or len(prefix) > len(best[0])):
                best = (prefix, handler)
        if best is None:
            self.send(Nack.for_interest(interest, NackReason.NO_ROUTE, "not served by this application"))
            return
        self._nursery.start_soon(self._answer, best[1], interest)

    async def _answer(self, handler: Handler, interest: Interest) -> None:
        try:
            reply = handler(interest)
            if inspect.isawaitable(reply):
                reply = await reply
        except Exception as exc:
            log.warning("handler for %s raised %s", interest.name, exc)
            payload = msgpack.packb({"code": type(exc).__name__, "message": str(exc)})
            reply = Data(interest.name, payload, ContentType.ERROR)
        if reply is None:
            return
        if isinstance(reply, Nack):
            if not self.face.closed:
                self.send(reply)
            return
        if isinstance(reply, (bytes, bytearray, memoryview)):
            reply = Data(interest.name, bytes(reply))
        if not isinstance(reply, Data):
            log.warning("handler for %s returned %s, not bytes/Data/None", interest.name, type(reply).__name__)
            return
        if not reply.sig_value:
            reply = self.sign(reply)
        if not self.face.closed:
            self.send(reply)

    # --- large objects -----------------------------------------------------------------------
    async def publish_object(self, name: NameLike, source: bytes | bytearray | memoryview | str | os.PathLike,
                             *, segment_size: int = DEFAULT_SEGMENT_SIZE, freshness: float | None = None,
                             progress: Callable[[int, int], None] | None = None) -> Manifest:
        """Publish bytes or a file of any size as a segmented, versioned object.

        The node stores it (in ``--data-dir`` when it has one) and serves its
        manifest and segments; the manifest is signed by the node's key.
        ``progress(done, total)`` is called as bytes are uploaded."""
        name = Name(name)
        freshness_ms = 3_600_000 if freshness is None else int(freshness * 1000)
        if isinstance(source, (str, os.PathLike)):
            size = os.path.getsize(source)
            reader = open(source, "rb")
        else:
            view = memoryview(source).cast("B")
            size = len(view)
            reader = None
        check_sizes(size, segment_size)
        begun = await self.command("object", "begin", name=name.to_uri(), size=size,
                                   segment_size=segment_size, freshness_ms=freshness_ms)
        upload = begun["upload"]
        try:
            offset = 0
            while offset < size:
                if reader is not None:
                    chunk = reader.read(UPLOAD_CHUNK)
                    if not chunk:
                        raise Error(f"{source}: file shrank while it was being published")
                else:
                    chunk = bytes(view[offset:offset + UPLOAD_CHUNK])
                await self.command("object", "append", upload=upload, offset=offset, data=chunk)
                offset += len(chunk)
                if progress is not None:
                    progress(offset, size)
            info = await self.command("object", "commit", upload=upload)
        except BaseException:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                try:
                    await self.command("object", "abort", upload=upload)
                except Error:
                    pass
            raise
        finally:
            if reader is not None:
                reader.close()
        if progress is not None and size == 0:
            progress(0, 0)
        return Manifest(name, info["version"], size, segment_size, b"\0" * (32 * info["segments"]))

    async def fetch_manifest(self, name: NameLike, *, timeout: float = DEFAULT_TIMEOUT,
                             verify: bool = True) -> Manifest:
        """The manifest of the newest version of object `name` (or of the
        version named, when `name` ends with ``v=…``)."""
        name = Name(name)
        comps = name.comps
        if comps and comps[-1][0] == T_VERSION:
            base, ver = name[:-1], int.from_bytes(comps[-1][1:], "big")
        else:
            found = await self._discover(name, timeout)
            parsed = parse_versioned(found.name, name)
            if parsed is None:
                raise NotFound(f"{name} is not a published object ({found.name} answered)")
            base, ver = name, parsed[0]
            if parsed[1] == MANIFEST and found.content_type == ContentType.MANIFEST:
                if verify:
                    await self.verify(found, timeout=timeout)
                return Manifest.decode(base, found.content)
        data = await self.fetch(manifest_name(base, ver), timeout=timeout, verify=verify)
        if data.content_type != ContentType.MANIFEST:
            raise NotFound(f"{data.name} is not a manifest")
        return Manifest.decode(base, data.content)

    async def _discover(self, name: Name, timeout: float) -> Data:
        """What the network has under `name`: its newest manifest, a segment, or a single Data."""
        try:
            return await self.fetch(name, timeout=timeout, can_be_prefix=True, must_be_fresh=True, verify=False)
        except Nacked as exc:
            if exc.reason == "no-route":
                raise NotFound(f"{name}: no such object (nobody serves it: {exc})") from None
            raise

    async def fetch_object(self, name: NameLike, *, timeout: float = 60.0, verify: bool = True,
                           out: str | os.PathLike | bytearray | None = None,
                           progress: Callable[[int, int], None] | None = None) -> bytes | bytearray:
        """Fetch a segmented object, checking every segment against the
        signed manifest; returns its bytes.  With `out` a path, the object is
        written to that file (and b"" returned); with `out` a bytearray, it is
        resized and filled in place and returned (no copy of the whole object:
        the fastest way to fetch large objects).  Raises NotFound, Nacked,
        Timeout or VerificationError (naming the segment) — never hangs past
        `timeout`."""
        name = Name(name)
        deadline = trio.current_time() + timeout
        try:
            with trio.fail_at(deadline):
                step_timeout = min(timeout, DEFAULT_TIMEOUT)
                if not (name.comps and name.comps[-1][0] == T_VERSION):
                    found = await self._discover(name, step_timeout)
                    if found.name == name and found.content_type != ContentType.MANIFEST:
                        return await self._single(found, out, verify, step_timeout, progress)
                manifest = await self.fetch_manifest(name, timeout=step_timeout, verify=verify)
                if out is None or isinstance(out, bytearray):
                    buffer = bytearray(manifest.size) if out is None else out
                    if len(buffer) != manifest.size:
                        buffer[manifest.size:] = b""
                        buffer.extend(bytes(manifest.size - len(buffer)))
                    await self._fetch_segments(manifest, _BufferSink(buffer), progress)
                    return bytes(buffer) if out is None else buffer
                with open(out, "wb") as f:
                    f.truncate(manifest.size)
                    await self._fetch_segments(manifest, _FileSink(f.fileno()), progress)
                return b""
        except trio.TooSlowError:
            raise Timeout(f"{name}: object not complete within {timeout:g}s") from None

    async def _single(self, data: Data, out: str | os.PathLike | None, verify: bool, timeout: float,
                      progress: Callable[[int, int], None] | None) -> bytes:
        """A plain (unsegmented) Data where an object was asked for."""
        if verify:
            await self.verify(data, timeout=timeout)
        if data.content_type == ContentType.ERROR:
            raise _remote_error(data)
        if progress is not None:
            progress(len(data.content), len(data.content))
        if isinstance(out, bytearray):
            out[:] = data.content
            return out
        if out is None:
            return data.content
        with open(out, "wb") as f:
            f.write(data.content)
        return b""

    async def _fetch_segments(self, manifest: Manifest, sink: "_Sink",
                              progress: Callable[[int, int], None] | None) -> None:
        pipeline = _SegmentPipeline(self, manifest, sink, progress)
        key = manifest.prefix.comps
        self._streams[key] = pipeline.on_packet
        try:
            await pipeline.run()
        finally:
            self._streams.pop(key, None)

    # --- collective reduction (icnd.reduction) ------------------------------------------------
    async def create_group(self, name: str, members: Sequence[str], *, rendezvous: Sequence[str] | None = None,
                           ops: Sequence[str] | None = None, segment_bytes: int | None = None,
                           deadline: float | None = None, timeout: float = 10.0) -> dict:
        """Make (a new version of) reduction group `name`: a descriptor signed by
        the node and announced to every member's node and rendezvous.  Members
        are ids (``"w1"``: member w1 on node w1) or ``"id@node"``; `rendezvous`
        lists the nodes where segments' splits start (default: the members'
        nodes, segment s at node s mod n); `deadline` (seconds) caps how long an
        aggregation waits for stragglers.  The same contents again return the
        current version.  Returns the descriptor's fields."""
        from icnd.reduction.consumer import create_group

        return await create_group(self, name, members, rendezvous=rendezvous, ops=ops,
                                  segment_bytes=segment_bytes, deadline=deadline, timeout=timeout)

    async def group(self, name: str, version: int | None = None) -> dict:
        """The descriptor of group `name` as the node knows it (latest version by default)."""
        info = await self.command("group", "show", name=name, **({} if version is None else {"version": version}))
        info.pop("descriptor", None)
        return info

    async def contribute(self, group: str, round: int, array: Any, member: str | None = None, *,
                         timeout: float = 30.0) -> dict:
        """Make `array` member `member`'s (default: this node's name) contribution
        to `round` of `group`, served by this node (segmented, never pickled);
        all of it handed over within `timeout` seconds."""
        from icnd.reduction.consumer import contribute

        return await contribute(self, group, round, array, member, timeout)

    async def reduce(self, group: str, round: int, op: str = "sum", *, timeout: float = 10.0,
                     partial: bool = False, version: int | None = None) -> Any:
        """The aggregate of `round` of `group` under `op` (sum, max, min, mean),
        combined in the network: an `icnd.Reduced`.  Without `partial`, a
        round some member has not contributed to raises Timeout at the
        deadline; with it, what arrived comes back flagged (``complete=False``).
        Contributions that disagree in dtype or shape raise RemoteError naming
        the odd members.  `version` picks a group version other than the
        latest (the aggregate of an old round under its old membership)."""
        from icnd.reduction.consumer import reduce

        return await reduce(self, group, round, op, timeout=timeout, partial=partial, version=version)

    async def allreduce(self, group: str, round: int, array: Any, op: str = "sum", *, member: str | None = None,
                        timeout: float = 10.0) -> Any:
        """Contribute `array` and fetch the aggregate every member fetches
        (one computation in the network for all of them): a numpy array."""
        deadline = trio.current_time() + timeout
        await self.contribute(group, round, array, member, timeout=timeout)
        result = await self.reduce(group, round, op, timeout=max(0.1, deadline - trio.current_time()))
        return result.array

    # --- management -------------------------------------------------------------------------
    async def command(self, module: str, verb: str, *, timeout: float = 10.0, **args: Any) -> Any:
        """Run a management command on the node; raises CommandFailed if refused."""
        name = Name([b"localhost", b"icnd", module.encode(), verb.encode()])
        params = msgpack.packb(args, use_bin_type=True)
        interest = Interest.with_params(name, params, lifetime_ms=int(timeout * 1000))
        data = await self.express(interest, timeout=timeout, retx=None)
        try:
            reply = msgpack.unpackb(data.content, raw=False)
        except Exception:
            raise Error(f"{module} {verb}: malformed reply from the node") from None
        if not reply.get("ok"):
            raise CommandFailed(str(reply.get("code", 500)), reply.get("error", "command failed"))
        return reply.get("result")

    async def status(self) -> dict:
        return await self.command("status", "get")

    async def aclose(self) -> None:
        self.closed = True
        await self.face.aclose()


def _remote_error(data: Data) -> RemoteError:
    try:
        body = msgpack.unpackb(data.content, raw=False)
        return RemoteError(str(body.get("code", "error")), str(body.get("message", "")))
    except Exception:
        return RemoteError("error", data.content[:200].decode("utf-8", "replace"))


@asynccontextmanager
async def connect(path: str | None = None, *, key: SigningKey | None = None,
                  keychain: KeyChain | None = None, timeout: float = 5.0) -> AsyncIterator[Client]:
    """Connect to the local node (socket path resolved as `icnd run` does)."""
    socket_path = resolve_socket_path(path)
    try:
        with trio.fail_after(timeout):
            face = await connect_stream(f"unix://{socket_path}")
    except (OSError, trio.TooSlowError) as exc:
        raise Error(f"cannot connect to icnd at {socket_path}: {exc}. Is `icnd run` running?") from None
    try:
        async with trio.open_nursery() as nursery:
            client = Client(face, nursery, key=key, keychain=keychain, socket_path=socket_path)
            nursery.start_soon(face.run, client._on_receive)
            try:
                yield client
            finally:
                await client.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise unwrap(group) from None


def unwrap(group: BaseExceptionGroup) -> BaseException:
    """The lone exception inside nested single-member groups (else the group).

    The client's receive task lives in a nursery; an error raised by the
    application's own code inside ``async with connect()`` should reach it
    as itself (``except icnd.Timeout``), not wrapped in an ExceptionGroup."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


__all__ = ["Client", "CommandFailed", "connect"]


UPLOAD_CHUNK = MAX_PUBLISH_CONTENT  # bytes per object/append command
MAX_BYTES_IN_FLIGHT = 8 * 1024 * 1024  # half a stream face's send queue (16 MiB)
MAX_SEGMENT_ATTEMPTS = 8
MAX_CORRUPT_ATTEMPTS = 3


class _Sink:
    def write(self, offset: int, content: bytes) -> None:
        raise NotImplementedError


class _BufferSink(_Sink):
    def __init__(self, buffer: bytearray) -> None:
        self.view = memoryview(buffer)

    def write(self, offset: int, content: bytes) -> None:
        self.view[offset:offset + len(content)] = content


class _FileSink(_Sink):
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, offset: int, content: bytes) -> None:
        os.pwrite(self.fd, content, offset)


class _SegmentPipeline:
    """One object fetch: a window of outstanding segment Interests (AIMD),
    RTO from SRTT + 4·RTTVAR with backoff, retransmission with fresh nonces,
    out-of-order placement into the sink, digest check of every segment."""

    def __init__(self, client: Client, manifest: Manifest, sink: _Sink,
                 progress: Callable[[int, int], None] | None) -> None:
        self.client = client
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
        self.done = 0
        self.bytes_done = 0
        self.wakeup = trio.Event()
        self.arrived: list[Data | Nack] = []
        self.lifetime_ms = 4000

    def on_packet(self, packet: Data | Nack) -> None:
        self.arrived.append(packet)
        self.wakeup.set()

    def _send(self, index: int, now: float) -> None:
        attempt = self.attempts.get(index, 0) + 1
        if attempt > MAX_SEGMENT_ATTEMPTS:
            raise Timeout(f"{self.manifest.segment_name(index)}: no answer after {MAX_SEGMENT_ATTEMPTS} attempts")
        self.attempts[index] = attempt
        interest = Interest(self.manifest.segment_name(index), lifetime_ms=self.lifetime_ms)
        self.outstanding[index] = (now, interest.nonce, attempt)
        self.client.send(interest)

    async def run(self) -> None:
        total = self.manifest.segments
        while self.done < total:
            now = trio.current_time()
            while len(self.outstanding) < self.window.size and (self.retx or self.next_index < total):
                if self.retx:
                    index = self.retx.pop()
                else:
                    index = self.next_index
                    self.next_index += 1
                self._send(index, now)
            rto = self.rtt.timeout()
            earliest = min((sent for sent, _, _ in self.outstanding.values()), default=now)
            with trio.move_on_at(earliest + rto):
                await self.wakeup.wait()
            self.wakeup = trio.Event()
            arrived, self.arrived = self.arrived, []
            now = trio.current_time()
            for packet in arrived:
                self._on_arrival(packet, now)
            self._check_timeouts(now)

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
            raise Nacked(packet.reason.label, f"{packet.name}: nacked {packet.reason.label}"
                         + (f" ({packet.detail})" if packet.detail else ""))
        del self.outstanding[index]
        manifest = self.manifest
        if not check_segment(manifest, index, packet.content):
            bad = self.corrupt[index] = self.corrupt.get(index, 0) + 1
            if bad >= MAX_CORRUPT_ATTEMPTS:
                raise VerificationError(
                    f"{packet.name}: content does not match the manifest's digest "
                    f"({bad} copies received, all corrupt)"
                )
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
