"""Fetching by name what calls refer to: named results (thunks, futures) and named arguments.

- `await_result`: a call's result stored under a name (a thunk's, a
  `Future`'s): polled while the host says it is running (`await_stored`;
  `MAX_POLL_WAIT` at most between polls), then fetched as an object and
  decoded; the caller's `Client.call`, `Client.result` and a host resolving
  a future argument (`await_stored`, then `fetch_ref` like any named
  argument) all wait the same way.  A result no longer kept (its host's
  retention ended, or a name no host knows) is `NotFound`.
- `fetch_ref`: an `icnd.Ref`'s content -- a Data or a segmented object,
  verified through the endpoint's validator, bounded in bytes -- with its
  *implicit digest*, what a pure function's memo is keyed by (the exact
  bytes, never the name, which may later name other bytes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import trio

from icnd.compute.rice import MAX_POLL_WAIT
from icnd.compute.values import decode_value
from icnd.endpoint import Endpoint
from icnd.errors import NotFound, RemoteError, error_exception, error_fields
from icnd.name import T_VERSION, Name
from icnd.objects.fetch import (
    DEFAULT_TIMEOUT,
    discover,
    express_routed,
    fetch_manifest,
    fetch_object,
    fetch_segments,
    verified,
)
from icnd.packet import ContentType, Data, Interest

POLL_LIFETIME = 4.0  # seconds one poll of a result's name waits for an answer
GONE = ("gone", "unknown-thunk")
REF_ROUTE_WAIT = 4.0  # seconds a host waits for a route to a ref's name (a producer starting) before NotFound  # a host's answer for a result it no longer keeps (or never had)


class ByteBudget:
    """Bytes a function host holds for named arguments at once: each fetch
    takes its size before its first segment and gives it back when its job
    ends; a fetch that does not fit waits (until its deadline) for others to
    end; one larger than the whole budget is refused at once."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._freed = trio.Event()

    async def take(self, size: int) -> None:
        if size > self.capacity:
            raise ValueError(f"{size} bytes exceed the host's budget for named arguments ({self.capacity})")
        while self.used + size > self.capacity:
            await self._freed.wait()
        self.used += size

    def give(self, size: int) -> None:
        self.used -= size
        self._freed.set()
        self._freed = trio.Event()


Reserve = Callable[[int], Awaitable[None]]


async def await_result(ep: Endpoint, name: Name, deadline: float, *, answer: Data | None = None,
                       what: Name | None = None) -> Any:
    """The decoded result stored under `name` (a thunk's name), polling until
    `deadline` (trio time; `trio.TooSlowError` past it).  `answer`: the
    verified THUNK that named it, if the caller has one (its ETA is waited
    first).  Errors name `what` (default `name`)."""
    await await_stored(ep, name, deadline, answer=answer, what=what)
    return decode_value(await fetch_object(ep, name, timeout=max(deadline - trio.current_time(), 0.05)))


async def await_stored(ep: Endpoint, name: Name, deadline: float, *, answer: Data | None = None,
                       what: Name | None = None) -> None:
    """Poll the result named `name` until it is stored as an object (then
    fetch it as any object: `await_result`, or a host's `fetch_ref`); the
    call's error as its exception, `NotFound` for a result no longer kept."""
    data = answer
    while True:
        if data is not None:
            if data.content_type == ContentType.ERROR:
                code, message = error_fields(data)
                if code in GONE:
                    raise NotFound(f"{what or name}: {message}")
                raise error_exception(data, what)
            if data.content_type != ContentType.THUNK:
                raise RemoteError("protocol", f"{data.name}: unexpected content type {data.content_type}")
            eta_ms = thunk_fields(data)[1]
            await trio.sleep(min(eta_ms / 1000.0, MAX_POLL_WAIT, max(deadline - trio.current_time(), 0)))
        remaining = max(deadline - trio.current_time(), 0.05)
        poll = Interest(name, can_be_prefix=True, must_be_fresh=True,
                        lifetime_ms=int(1000 * min(POLL_LIFETIME, remaining)))
        found = await express_routed(ep, poll, timeout=min(POLL_LIFETIME, remaining), routes_until=deadline,
                                     what=name)
        if found.content_type not in (ContentType.THUNK, ContentType.ERROR):
            return
        await ep.verify(found)  # (checked before it is believed)
        data = found


def thunk_fields(data: Data) -> tuple[Name, int]:
    """A thunk's (result name, ETA in ms); RemoteError if it is not one."""
    try:
        body = msgpack.unpackb(data.content, raw=False)
        if not isinstance(body.get("name"), str) or type(body.get("eta_ms")) is not int:
            raise ValueError
        return Name(body["name"]), body["eta_ms"]
    except Exception:
        raise RemoteError("protocol", f"{data.name}: malformed thunk") from None


async def fetch_ref(ep: Endpoint, name: Name, *, max_bytes: int, deadline: float,
                    reserve: Reserve | None = None) -> tuple[Any, bytes]:
    """(what the function gets, the implicit digest) for ``Ref(name)``:
    a single Data's content (bytes), or a segmented object's bytes -- its
    value when it was published as one (manifest kind ``"value"``).  Every
    piece verified through `ep` (its validator: the trust schema when it
    has one); an object larger than `max_bytes` is refused before any
    segment is fetched.  Raises `ValueError` for refusals of this host's
    own (too large, not a value), `icnd.Error` for what the network said."""
    now = trio.current_time()
    step = max(min(DEFAULT_TIMEOUT, deadline - now), 0.05)
    routes_until = min(deadline, now + REF_ROUTE_WAIT)
    if not (name.comps and name.comps[-1][0] == T_VERSION):
        found = await discover(ep, name, step, routes_until)
        if found.name == name and found.content_type != ContentType.MANIFEST:
            found = await verified(ep, Interest(name, lifetime_ms=int(step * 1000)), found, step)
            if found.content_type == ContentType.ERROR:
                raise error_exception(found)
            content = bytes(found.content)
            if len(content) > max_bytes:
                raise ValueError(f"{name}: {len(content)} bytes exceed the host's limit of {max_bytes}")
            if reserve is not None:
                await reserve(len(content))
            return content, hashlib.sha256(b"data\0" + content).digest()
    manifest = await fetch_manifest(ep, name, timeout=step, verify=True, routes_until=routes_until)
    if manifest.size > max_bytes:
        raise ValueError(f"{name}: an object of {manifest.size} bytes exceeds the host's limit of {max_bytes}")
    if reserve is not None:
        await reserve(manifest.size)
    content = await fetch_segments(ep, manifest)  # every segment checked against the signed manifest
    digest = hashlib.sha256(b"%s\0%d\0%d\0" % (manifest.kind.encode(), manifest.size, manifest.segment_size)
                            + manifest.digests).digest()
    if manifest.kind == "value":
        try:
            return decode_value(content), digest
        except Exception as exc:
            raise ValueError(f"{name}: published as a value, but {exc}") from None
    return content, digest
