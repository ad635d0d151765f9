"""The client library's façade: `connect` and the `Client` applications use to reach their node.

    async with icnd.connect() as c:
        data = await c.fetch("/demo/hello")
        await c.publish("/demo/hello", b"hi", freshness=10.0)
        async with c.serve("/demo/echo", handler):
            ...

A `Client` is an `icnd.client.face_endpoint.FaceEndpoint` (a local face of
the node, a Unix stream connection, and the packets on it: the packet half
of the `icnd.endpoint.Endpoint` implementation) plus the rest of that
protocol (keys, trust, commands, serving) and the application's methods.
Each of those is a feature written against the `Endpoint` protocol, which
the client hands itself to: fetching and publishing objects
(`icnd.objects.fetch`), calling and hosting functions
(`icnd.compute.caller`, `icnd.compute.host`), reductions
(`icnd.reduction.consumer`).

What `Client.verify` accepts (and so what `Client.fetch` returns with
``verify=True``, the default) is decided by the client's one `icnd.trust.validator.Validator`
(``client.validator``), as everything else the client believes (objects'
manifests, call answers, reductions):

- **without a trust schema** (integrity only): an Ed25519 Data must verify
  with the key its key locator names -- known to the client's `KeyChain`, or
  fetched once by name (``Interest(key_name, CanBePrefix)``: a certificate
  or a bare key Data) and remembered, *not* checked against any anchor; an
  HMAC Data with a key the key chain holds.  This catches corruption and
  stale or mismatched keys, never a forger who also serves the key.
- **with a trust schema** (``connect(trust=...)``): a rule must match the
  Data's name and its signer, and the signer's certificate chain must reach
  one of the schema's anchors, each certificate valid now.
- **DigestSha256 Data** (no signer) is accepted only where something the
  client already trusts vouches for it: the Interest named its implicit
  digest (``.../sha256digest=...``), or a verified manifest lists its
  digest (segments of an object).  ``verify=True`` never returns a
  digest-only Data for a name nothing vouches for, with or without a schema:
  so a producer that must be fetched with ``verify=True`` needs a key
  (``connect(key=...)``); a client without one signs its answers with a
  digest only.

A client given a certificate (``connect(key=..., cert=...)``) hands it to
its node on connect (``cert/add``); the node serves it under the key name
while the client is connected (and for good once Data signed by that key
was published through the node), so that others can fetch it.  A client with a key
and no certificate publishes none: others verify what it signs only if they
know its key (their key chain) or get its certificate some other way (a
self-signed one, ``cert=self_signed(key, now=time.time())``, is enough for integrity-only
consumers; a schema never trusts it).  See docs/security.md.
"""

from __future__ import annotations

import os
import secrets
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, Sequence

import msgpack
import trio

from icnd.client.face_endpoint import FaceEndpoint
from icnd.collective import communicator as collective
from icnd.codec import encode
from icnd.compute.caller import Caller
from icnd.compute.host import FunctionHost, HostLimits
from icnd.compute.named import Future
from icnd.compute.values import encode_value
from icnd.compute.registry import hosted
from icnd.endpoint import DEFAULT_TIMEOUT, Handler, resolve_socket_path
from icnd.errors import CommandError, Error, Timeout
from icnd.excgroups import lone
from icnd.faces.base import Face
from icnd.faces.stream import StreamFace, connect_stream
from icnd.name import Name, NameLike
from icnd.objects import fetch as objects
from icnd.objects.manifest import DEFAULT_SEGMENT_SIZE, Manifest
from icnd.packet import ContentType, Data, Interest
from icnd.reduction import consumer as reduction
from icnd.security import DigestKey, Ed25519Key, KeyChain, SigningKey
from icnd.trust.cert import Certificate
from icnd.keyfiles import load_certificate, load_schema
from icnd.trust.schema import Schema
from icnd.trust.validator import Validator

_DIGEST_KEY = DigestKey()


class Client(FaceEndpoint):
    """A connection of this process to its node, the one door applications
    use: one Unix stream face plus a receive task that matches incoming Data
    and Nacks to pending Interests and hands incoming Interests to served
    handlers.  Made by `icnd.connect`, an async context manager: the client
    lives in its nursery and closes with it.  Call it from that trio run
    only; blocking code uses `icnd.sync`, asyncio code uses `icnd.aio`.

    The methods, by what they are for:

    - Data: `fetch`, `publish`, `unpublish`, `serve`; `verify`, `sign`.
    - Functions: `call`, `host`.
    - Objects: `publish_object`, `fetch_object`, `fetch_manifest`.
    - Reductions: `allreduce`, `contribute`, `reduce`, `create_group`, `group`.
    - Routing: `announce`, `withdraw`, `wait_routed`, `routing`.
    - The node: `node_name`, `status`, `command`; `aclose`.

    Attributes: `key` and `cert` (this client's signing key and
    certificate, if any), `keychain` (the keys it knows), `validator` (whom
    it believes), `counters`, `closed`."""

    def __init__(self, face: Face, nursery: trio.Nursery, *, key: SigningKey | None = None,
                 keychain: KeyChain | None = None, socket_path: str = "", cert: Certificate | None = None,
                 trust: Schema | None = None) -> None:
        super().__init__(face, nursery, socket_path=socket_path, sign=self.sign)
        self._fd_replies = trio.Lock()  # one command awaiting a descriptor at a time (command_fd)
        self.keychain = keychain or KeyChain()
        self.key = key
        if key is not None:
            self.keychain.add_signing_key(key)
        # whom this client believes: the one validator (module docstring)
        self.validator = Validator(trust, self.keychain, clock=time.time)
        self.cert = cert  # this client's certificate (served under its key name), if it has one
        self._key_fetches: dict[Name, list[Any]] = {}  # key name -> [done event, Data or Error]: shared fetches
        if cert is not None:
            self.validator.offer([cert])
        self._node_name: Name | None = None  # the node's name, once asked
        self._descriptors = reduction.DescriptorCache()  # groups' newest descriptors (allreduce)
        self.caller = Caller(self)  # this client's identity and sessions as a caller of functions
        # unverified_retries: answers that failed verification, evicted from the node's cache
        # and asked for once more past it (icnd.objects.fetch.verified) [issue #15, D8/D14]
        self.counters: dict[str, int] = {"unverified_retries": 0}
        self.closed = False

    # --- consumer ---------------------------------------------------------------------------
    async def fetch(self, name: NameLike, *, timeout: float = DEFAULT_TIMEOUT, can_be_prefix: bool = False,
                    must_be_fresh: bool = False, verify: bool = True, lifetime: float | None = None,
                    app_params: bytes | None = None) -> Data:
        """Fetch one Data by name; raises Timeout, Nacked, RemoteError or VerificationError.

        A name nobody serves yet (a no-route Nack) is asked for again, 50 ms
        later doubling to 1 s, until `timeout`: a producer that starts, or a
        route that comes back, within it is waited for.  Then `Nacked`
        (``.reason`` ``no-route``, ``.retries``) says nobody serves it."""
        return await objects.fetch(self, name, timeout=timeout, can_be_prefix=can_be_prefix,
                                   must_be_fresh=must_be_fresh, verify=verify, lifetime=lifetime,
                                   app_params=app_params)

    async def verify(self, data: Data, *, timeout: float = DEFAULT_TIMEOUT, vouched: bool = False) -> None:
        """Accept `data` or raise VerificationError: `self.validator` decides
        (see the module docstring).  `vouched`: something already trusted
        names this Data's digest (an implicit digest in the Interest's name, a
        verified manifest); only then is a DigestSha256 Data accepted.
        Certificates and keys the validator does not hold are fetched by key
        name (CanBePrefix) within `timeout`."""
        deadline = trio.current_time() + timeout

        async def fetch_key(key_name: Name) -> Data:
            return await self.fetch_key(key_name, timeout=max(deadline - trio.current_time(), 0.05))

        await self.validator.validate(data, fetch_key, vouched=vouched)

    async def fetch_key(self, key_name: Name, *, timeout: float = DEFAULT_TIMEOUT) -> Data:
        """The Data for `key_name` (a certificate or a key: Interest with
        CanBePrefix).  Concurrent verifications that need the same key share
        one fetch (e.g. the first answers of a burst of fetches)."""
        deadline = trio.current_time() + timeout
        while True:
            shared = self._key_fetches.get(key_name)
            if shared is None:
                break
            with trio.move_on_at(deadline):
                await shared[0].wait()
            result = shared[1]
            if isinstance(result, Data):
                return result
            if isinstance(result, Error):
                raise Error(str(result))  # (not the same instance: it is raised in its own task too)
            if not shared[0].is_set():
                raise Timeout(f"no answer for {key_name} within {timeout:g}s")
            # the fetch it shared was cancelled: ask again
        done = trio.Event()
        entry: list[Any] = [done, None]
        self._key_fetches[key_name] = entry
        try:
            left = max(deadline - trio.current_time(), 0.05)
            interest = Interest(key_name, can_be_prefix=True, lifetime_ms=int(1000 * min(left, 4.0)))
            entry[1] = await self.express(interest, timeout=left)
            return entry[1]
        except Error as exc:
            entry[1] = exc
            raise
        finally:
            del self._key_fetches[key_name]
            done.set()

    # --- producer ----------------------------------------------------------------------------
    def sign(self, data: Data) -> Data:
        """`data` signed with this client's key (a digest if it has none)."""
        return self.keychain.sign(data, self.key)

    def sign_digest(self, data: Data) -> Data:
        """DigestSha256 only (for packets checked against a signed manifest)."""
        return _DIGEST_KEY.sign(data)

    @asynccontextmanager
    async def serve(self, prefix: NameLike, handler: Handler, *, cost: int = 0) -> AsyncIterator[None]:
        """Answer Interests under `prefix` with `handler` while the block runs.

        The handler returns bytes (wrapped in a Data signed by this client),
        a Data, or None (no answer); it may be a coroutine function.  If it
        raises, the consumer gets an error Data (`RemoteError`).  A client
        without a key signs with a digest only, which consumers fetching with
        ``verify=True`` refuse: give it ``connect(key=..., cert=...)``.

        While the block runs, `prefix` is a route on the node to this client
        (cost `cost`), removed when the block ends, even if it raises.  The
        longest served prefix that matches an Interest picks its handler;
        each Interest is handled in its own task, concurrently."""
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

    async def _publish_own_cert(self) -> None:
        """Hand this client's certificate to its node (``cert/add``), which
        serves it under its key name while this client is connected: others
        fetch it to verify what this client signs.  Done by `connect` (one
        command)."""
        if self.cert is None:
            return
        await self.command("cert", "add", packets=[encode(self.cert.data)])

    # --- named functions ---------------------------------------------------------------------
    async def call(self, fn: NameLike, *args: Any, timeout: float = 60.0, pure: bool = False,
                   lifetime: float = 4.0, reflexive: bool = False, place: str = "near",
                   info: dict[str, Any] | None = None) -> Any:
        """Invoke the named function `fn` with `args` (RICE: the host pulls the
        arguments over reflexive forwarding, long work comes back as a thunk).

        ``pure=True`` names the call by the digest of its arguments so that
        Content Stores can answer equal calls (for `icnd.function(pure=True)`).
        `lifetime` is the trigger Interest's lifetime: work that takes longer
        comes back as a thunk.  Arguments up to 8 KiB (encoded) ride in the
        signed trigger itself (one round trip); larger ones, or any with
        ``reflexive=True``, are pulled by the host over reflexive
        forwarding.  Raises RemoteError (the function raised or refused),
        Unauthorized, Nacked (e.g. no-route: nobody serves `fn`, once the
        call has waited for a route until `timeout`, as `fetch` does),
        Timeout.

        An argument may be a name instead of a value: `icnd.Ref` (named
        data) or `icnd.Future` (another call's result, from `submit`); the
        host fetches it itself, never through this client (a RemoteError
        ``bad-ref`` names one it could not fetch).  `place`: where a call
        with named arguments runs when several nodes host `fn`: ``"near"``
        (default: the host with the least route cost to the arguments'
        producers, as this client's node sees the link-state database),
        ``"any"`` (the network picks, as for any call), or a node's name.
        `info`, if given, is filled with ``host``: the node the call was
        placed at (None when the network picked).  See docs/functions.md,
        "Composing computations"."""
        return await self.caller.call(Name(fn), args, timeout=timeout, pure=pure, lifetime=lifetime,
                                      reflexive=reflexive, place=place, info=info)

    async def submit(self, fn: NameLike, *args: Any, timeout: float = 60.0, lifetime: float = 4.0,
                     reflexive: bool = False, place: str = "near") -> Future:
        """Start a call of `fn` and return at once (once the host has taken
        it) with an `icnd.Future`: the name its result will be stored under.
        ``await fut.result()`` or `result` fetches it; passed as an argument
        of another call, that call's host fetches it by name.  `timeout`
        bounds starting the call; arguments and `place` are as for `call`.
        The result stays fetchable for the host's retention time after the
        call finished (60 s by default), then `result` raises NotFound."""
        name = await self.caller.call(Name(fn), args, timeout=timeout, pure=False, lifetime=lifetime,
                                      reflexive=reflexive, place=place, future=True)
        return Future(name, self)

    async def result(self, name: NameLike | Future, *, timeout: float = 60.0) -> Any:
        """The result of a submitted call, by its future's name (anyone the
        name reaches may ask): polled while the call runs, at most `timeout`
        seconds (Timeout); the function's error as its exception; NotFound
        once its host no longer keeps it."""
        if isinstance(name, Future):
            name = name.name
        return await self.caller.result(Name(name), timeout=timeout)

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
        importable by name; ValueError otherwise).  Answers are signed with
        this client's key: callers refuse digest-only answers, so a client
        that hosts functions needs ``connect(key=..., cert=...)``."""
        allow = allow or {}
        specs = [hosted(prefix, fn, allow.get(prefix, ())) for prefix, fn in functions.items()]
        host = FunctionHost(self, specs, await self.node_name(),
                            limits=HostLimits(max_jobs=max_jobs, retention=retention), workers=workers, pool=pool,
                            results_tag=secrets.token_hex(4))
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            try:
                yield host
            finally:
                nursery.cancel_scope.cancel()

    # --- named data and large objects (icnd.objects.fetch) ----------------------------------------
    async def publish(self, name: NameLike, content: bytes, *, freshness: float | None = None,
                      content_type: int = ContentType.BLOB, sign_by: str = "auto") -> Data:
        """Hand one Data named `name` to the node, which stores and serves it
        (persistently with --data-dir) until `unpublish`.  For one packet;
        files and large content go through `publish_object`.  `freshness`:
        seconds a cached copy counts as fresh (None: never stale).

        ``sign_by``: "client" (this client's key; digest if it has none),
        "node" (the node's identity key) or "auto" (client key if any, else
        the node's); consumers that verify need a key signature.  Returns the
        stored, signed Data; CommandError if the node refuses it."""
        return await objects.publish(self, name, content, freshness=freshness, content_type=content_type,
                                     sign_by=sign_by)

    async def publish_value(self, name: NameLike, value: Any, *, segment_size: int = DEFAULT_SEGMENT_SIZE,
                            freshness: float | None = None) -> Manifest:
        """Publish one value (a numpy array, or any function argument value,
        `icnd.compute.values`) as a segmented object marked as a value, so
        that a function given ``icnd.Ref(name)`` receives the value itself
        rather than its encoding's bytes."""
        return await objects.publish_object(self, name, encode_value(value), segment_size=segment_size,
                                            freshness=freshness, kind="value")

    async def unpublish(self, name: NameLike) -> None:
        """Have the node drop what `publish`/`publish_object` stored under `name`; CommandError if it refuses."""
        await self.command("repo", "unpublish", name=Name(name).to_uri())

    async def publish_object(self, name: NameLike, source: bytes | bytearray | memoryview | str | os.PathLike[str],
                             *, segment_size: int = DEFAULT_SEGMENT_SIZE, freshness: float | None = None,
                             progress: Callable[[int, int], None] | None = None) -> Manifest:
        """Publish bytes or a file of any size as a segmented, versioned object.

        The node stores it (in ``--data-dir`` when it has one) and serves its
        manifest and segments; the manifest is signed by the node's key.
        ``progress(done, total)`` is called as bytes are uploaded."""
        return await objects.publish_object(self, name, source, segment_size=segment_size, freshness=freshness,
                                            progress=progress)

    async def fetch_manifest(self, name: NameLike, *, timeout: float = DEFAULT_TIMEOUT,
                             verify: bool = True) -> Manifest:
        """The manifest of the newest version of object `name` (or of the
        version named, when `name` ends with ``v=…``)."""
        return await objects.fetch_manifest(self, name, timeout=timeout, verify=verify)

    async def fetch_object(self, name: NameLike, *, timeout: float = 60.0, verify: bool = True,
                           out: str | os.PathLike[str] | bytearray | None = None,
                           progress: Callable[[int, int], None] | None = None) -> bytes | bytearray:
        """Fetch a segmented object, checking every segment against the
        signed manifest; returns its bytes.  With `out` a path, the object is
        written to that file (and b"" returned); with `out` a bytearray, it is
        resized and filled in place and returned (no copy of the whole object:
        the fastest way to fetch large objects).  Raises NotFound, Nacked,
        Timeout or VerificationError (naming the segment) — never hangs past
        `timeout`.  Like `fetch`, it waits for a route within `timeout`, before
        the object is found and while its segments come."""
        return await objects.fetch_object(self, name, timeout=timeout, verify=verify, out=out, progress=progress)

    async def fetch_segments(self, manifest: Manifest) -> bytes:
        """The segments `manifest` describes, pipelined and checked, as bytes."""
        return await objects.fetch_segments(self, manifest)

    # --- collective reduction (icnd.reduction) ------------------------------------------------
    async def create_group(self, name: str, members: Sequence[str], *, rendezvous: Sequence[str] | None = None,
                           ops: Sequence[str] | None = None, segment_bytes: int | None = None,
                           deadline: float | None = None, timeout: float = 10.0) -> dict[str, Any]:
        """Make (a new version of) reduction group `name`: a descriptor signed by
        the node and announced to every member's node and rendezvous.  Members
        are ids (``"w1"``: member w1 on node w1) or ``"id@node"``; `rendezvous`
        lists the nodes where segments' splits start (default: the members'
        nodes, segment s at node s mod n); `deadline` (seconds) caps how long an
        aggregation waits for stragglers.  The same contents again return the
        current version.  Returns the descriptor's fields."""
        return await reduction.create_group(self, name, members, rendezvous=rendezvous, ops=ops,
                                            segment_bytes=segment_bytes, deadline=deadline, timeout=timeout)

    async def group(self, name: str, version: int | None = None) -> dict[str, Any]:
        """The descriptor of group `name` as the node knows it (latest version by default)."""
        args: dict[str, Any] = {} if version is None else {"version": version}
        info = await self.command("group", "show", name=name, **args)
        info.pop("descriptor", None)
        return info

    async def contribute(self, group: str, round: int, array: Any, member: str | None = None, *,
                         timeout: float = 30.0) -> dict[str, Any]:
        """Make `array` member `member`'s (default: this node's name) contribution
        to `round` of `group`, served by this node (segmented, never pickled);
        all of it handed over within `timeout` seconds."""
        return await reduction.contribute(self, group, round, array, member, timeout)

    async def reduce(self, group: str, round: int, op: str = "sum", *, timeout: float = 10.0,
                     partial: bool = False, version: int | None = None) -> Any:
        """The aggregate of `round` of `group` under `op` (sum, max, min, mean),
        combined in the network: an `icnd.Reduced`.  Without `partial`, a
        round some member has not contributed to raises Timeout at the
        deadline; with it, what arrived comes back flagged (``complete=False``).
        Contributions that disagree in dtype or shape raise RemoteError naming
        the odd members.  `version` picks a group version other than the
        latest (the aggregate of an old round under its old membership)."""
        return await reduction.reduce(self, group, round, op, timeout=timeout, partial=partial, version=version)

    async def allreduce(self, group: str, round: int, array: Any, op: str = "sum", *, member: str | None = None,
                        timeout: float = 10.0, out: Any = None, partial: bool = False) -> Any:
        """Contribute `array` and fetch the aggregate every member fetches
        (one computation in the network for all of them): a numpy array.
        `out`: a C-contiguous array of the result's dtype and size to write
        it into (reused across rounds, as an MPI receive buffer is: no fresh
        memory per round); ValueError if it does not fit.  As with `reduce`,
        a round some member has not contributed to raises Timeout at the
        deadline (``.missing`` names them), unless `partial`: then an
        `icnd.Reduced` of what arrived, flagged."""
        return await reduction.allreduce(self, group, round, array, op, member, timeout, out=out, partial=partial,
                                         cache=self._descriptors)

    # --- collective communication (icnd.collective, docs/collectives.md) ------------------------
    async def communicator(self, group: str, member: str | None = None, *,
                           version: int | None = None) -> collective.Communicator:
        """Group `group` (its latest version, or `version`) seen as ranks
        ``0..size-1`` in its members' order, this client taking part as
        `member` (default: this node's name; it must live on this client's
        node): an `icnd.collective.Communicator` with the MPI collectives
        (``barrier``, ``bcast``, ``allreduce``, ...) and their nonblocking
        ``i<name>`` forms.  Every rank calls the same collectives in the same
        order; each call is named by the communicator's sequence number.
        Error if `member` already took part in collectives of this version
        (a new run needs a new group version or group)."""
        return await collective.communicator(self, self._nursery, group, member, version=version)

    async def collective_result(self, group: str, seq: int, kind: str, *, op: str = "sum", root: int = 0,
                                version: int | None = None, timeout: float = 10.0) -> Any:
        """What call `seq` (0: a communicator's first) of `group` produced,
        fetched by name without the ranks: for ``kind`` ``allreduce``,
        ``reduce`` and ``reduce_scatter`` the whole aggregate under `op`;
        ``bcast`` `root`'s value; ``gather``/``allgather`` every rank's value;
        ``scatter`` `root`'s values; ``alltoall`` ``[j][d]``, what rank j sent
        to rank d.  From caches, or the contributors' nodes while they keep
        the round (docs/collectives.md#late-readers)."""
        return await collective.collective_result(self, group, seq, kind, op=op, root=root, version=version,
                                                  timeout=timeout)

    # --- routing (docs/management.md#routing) -----------------------------------------------
    async def announce(self, prefix: NameLike) -> None:
        """Have the node originate `prefix` network-wide: with link-state
        routing every node learns a route to it here.  Announcing it again is
        no change.  Raises CommandError: 400 for a /localhost or /localhop
        name, 409 beyond the node's bound of announced prefixes or on a node
        without routing."""
        await self.command("routing", "announce", prefix=Name(prefix).to_uri())

    async def withdraw(self, prefix: NameLike) -> None:
        """Undo `announce`.  Raises CommandError 404 when `prefix` was not
        announced that way (what an application serves is withdrawn when it
        stops serving), 409 on a node without routing."""
        await self.command("routing", "withdraw", prefix=Name(prefix).to_uri())

    async def routing(self) -> dict[str, Any]:
        """The node's routing state, as ``icnd routing --json`` prints it:
        neighbours, link-state database, announced prefixes, counters."""
        return await self.command("routing", "status")

    async def wait_routed(self, prefix: NameLike, *, timeout: float = 10.0) -> None:
        """Return once this client's node has a route that Interests under
        `prefix` follow: a route for `prefix` or for one of its prefixes
        (``icnd route list``).  For a program that hosts or serves a prefix
        at one node and uses it from another: routing takes a moment to
        spread a new prefix (``host()`` returns before it has).  Asks the
        node's route table every 50 ms, doubling to 1 s; raises `Timeout`
        after `timeout` seconds."""
        prefix = Name(prefix)
        covering = {prefix[:n].to_uri() for n in range(len(prefix) + 1)}
        pause = objects.ROUTE_WAIT_FIRST
        node: Name | str = f"the node at {self.socket_path}"
        with trio.move_on_after(timeout):
            node = await self.node_name()
            while True:
                if any(route["prefix"] in covering for route in await self.command("route", "list")):
                    return
                await trio.sleep(pause)
                pause = min(pause * 2, objects.ROUTE_WAIT_MAX)
        raise Timeout(f"{prefix}: no route at {node} within {timeout:g}s")

    # --- management -------------------------------------------------------------------------
    async def command(self, module: str, verb: str, *, timeout: float = 10.0, fds: Sequence[int] = (),
                      **args: Any) -> Any:
        """Run a management command on the node; raises CommandError if refused.
        `fds`: descriptors passed with the command (SCM_RIGHTS, e.g. a sealed
        shared-memory segment, `icnd.faces.shm`); the node gets copies, the
        caller keeps and closes its own."""
        name = Name([b"localhost", b"icnd", module.encode(), verb.encode()])
        params = msgpack.packb(args, use_bin_type=True)
        interest = Interest.with_params(name, params, lifetime_ms=int(timeout * 1000))
        data = await self._express(interest, timeout, None, fds)
        try:
            reply = msgpack.unpackb(data.content, raw=False)
        except Exception:
            raise Error(f"{module} {verb}: malformed reply from the node") from None
        if not reply.get("ok"):
            status = reply.get("code", 500)
            raise CommandError(status if type(status) is int else 500, reply.get("error", "command failed"))
        return reply.get("result")

    async def command_fd(self, module: str, verb: str, *, timeout: float = 10.0, **args: Any) -> tuple[Any, int]:
        """`command` whose reply carries one descriptor (e.g. ``object/read-shm``):
        (result, descriptor), the caller owns and closes it.  One such command
        at a time per client, so a reply and its descriptor always match.
        Endpoint plumbing (`icnd.endpoint`), @private: not in the API reference."""
        face = self.face
        if not isinstance(face, StreamFace) or not face.can_pass_fds:
            raise Error(f"the connection to {self.socket_path} cannot pass descriptors (not a Unix socket)")
        async with self._fd_replies:
            while (stale := face.take_fd()) is not None:  # from a reply that came after its command timed out
                os.close(stale)
            result = await self.command(module, verb, timeout=timeout, **args)
            fd = face.take_fd()
        if fd is None:
            raise Error(f"{module} {verb}: the node's reply carried no descriptor")
        return result, fd

    async def node_name(self) -> Name:
        """The name of the node this client is attached to (asked once)."""
        if self._node_name is None:
            self._node_name = Name((await self.status())["name"])
        return self._node_name

    async def status(self) -> dict[str, Any]:
        """The node's status as ``icnd status --json`` prints it (docs/management.md)."""
        return await self.command("status", "get")

    async def aclose(self) -> None:
        """Close the connection to the node; pending calls fail. `connect` does this when its block ends."""
        self.closed = True
        await self.face.aclose()


@asynccontextmanager
async def connect(path: str | None = None, *, key: SigningKey | str | os.PathLike[str] | None = None,
                  cert: Certificate | str | os.PathLike[str] | None = None, trust: Schema | str | os.PathLike[str] | None = None,
                  keychain: KeyChain | None = None, timeout: float = 5.0) -> AsyncIterator[Client]:
    """Connect to the local node (socket path resolved as `icnd run` does).

    `key`: this client's identity (an `Ed25519Key` or a key file, as written
    by ``icnd keygen``); `cert`: its certificate (a `Certificate` or a file
    from ``icnd cert issue``; must certify `key`), handed to the node and
    served under the key name so that others can fetch it; `trust`: a trust
    schema (`icnd.trust.Schema` or a schema file) that `fetch` and everything
    else the client believes is checked against.  A file that cannot be read
    or parsed raises ValueError (or OSError) naming it."""
    signing_key, certificate, schema = load_identity(key, cert, trust)
    socket_path = resolve_socket_path(path)
    try:
        with trio.fail_after(timeout):
            face = await connect_stream(f"unix://{socket_path}")
    except (OSError, trio.TooSlowError) as exc:
        raise Error(f"cannot connect to icnd at {socket_path}: {exc}. Is `icnd run` running?") from None
    try:
        async with trio.open_nursery() as nursery:
            client = Client(face, nursery, key=signing_key, keychain=keychain, socket_path=socket_path,
                            cert=certificate, trust=schema)
            nursery.start_soon(face.run, client.on_receive)
            try:
                if certificate is not None:  # the node keeps it and serves it under the key name
                    await client._publish_own_cert()
                yield client
            finally:
                await client.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise lone(group) from None


def load_identity(key: SigningKey | str | os.PathLike[str] | None, cert: Certificate | str | os.PathLike[str] | None,
                  trust: Schema | str | os.PathLike[str] | None) -> tuple[SigningKey | None, Certificate | None,
                                                                      Schema | None]:
    """`connect`'s key, cert and trust arguments loaded (paths read); ValueError
    (a `SchemaError` for the schema) or OSError naming the file or the mismatch."""
    if isinstance(key, (str, os.PathLike)):
        key = load_key(key)
    if isinstance(cert, (str, os.PathLike)):
        cert = load_certificate(cert)  # CertificateError (a ValueError) naming the file
    if cert is not None:
        if not isinstance(key, Ed25519Key):
            raise ValueError(f"a certificate ({cert.name}) needs the Ed25519 key it certifies (key=)")
        if cert.key_name != key.name or cert.public_key != key.public_bytes():
            raise ValueError(f"certificate {cert.name} does not certify the key {key.name} "
                             f"({'another public key' if cert.key_name == key.name else 'another key name'})")
    if isinstance(trust, (str, os.PathLike)):
        trust = load_schema(trust)
    return key, cert, trust


def load_key(path: str | os.PathLike[str]) -> Ed25519Key:
    """An Ed25519 key file (``icnd keygen``); ValueError or OSError naming it."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        buf = f.read(65536)
    try:
        return Ed25519Key.from_bytes(buf)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


__all__ = ["Client", "connect", "load_identity", "load_key"]
