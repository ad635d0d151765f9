"""Named arguments: `Ref` (named data) and `Future` (the named result of a call).

A call's argument may be a name instead of a value: ``icnd.Ref(name)`` (a
Data or a segmented object published under that name) or an
``icnd.Future`` (what `Client.submit` returned: the name a call's result
will be stored under).  The caller sends only the name; the function's host
fetches it through the network, verified under its own validator, and calls
the function with what it found (`icnd.compute.resolve`).

On the wire a named argument is one argument encoded as the msgpack ext
`EXT_NAMED` (4) whose payload is the msgpack array ``[kind, name]``: kind
``"ref"`` or ``"future"``, the name as its wire-form components.  It is
valid only as a whole argument: `icnd.compute.values.decode_value` refuses
ext 4 anywhere (a name nested in a list is not resolved, so it is not
accepted either); `decode_argument` is what a host decodes arguments with.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgpack

from icnd.errors import DecodeError
from icnd.name import Name, NameLike, valid_wire_comps
from icnd.compute.values import DEFAULT_LIMITS, ValueLimits, decode_value

EXT_NAMED = 4
KINDS = ("ref", "future")
MAX_NAMED_PAYLOAD = 9000  # bytes of a named argument's payload: a name, not data


@dataclass(frozen=True)
class Ref:
    """A named argument: the host fetches `name` itself (a Data or a
    segmented object, verified) and passes the function its content: the
    value it encodes for an object published with `Client.publish_value`,
    the bytes otherwise."""

    name: Name

    def __init__(self, name: NameLike) -> None:
        object.__setattr__(self, "name", Name(name))

    def __repr__(self) -> str:
        return f"icnd.Ref({self.name.to_uri()!r})"


class ResultSource(Protocol):
    """What a `Future` fetches its result through (a client)."""

    def result(self, name: NameLike, *, timeout: float = ...) -> Awaitable[Any]: ...


@dataclass(frozen=True)
class Future:
    """The result of a call started with `Client.submit`, by name.

    `name` is where the host stores the result when the call finishes;
    anyone the name reaches may fetch it (`Client.result`), until the host's
    retention time after it finished (then `icnd.NotFound`).  Passed as an
    argument of another call, the second call's host fetches it by name, so
    the result never comes back to the caller."""

    name: Name
    source: ResultSource | None = field(default=None, compare=False, repr=False)

    async def result(self, timeout: float = 60.0) -> Any:
        """The call's result, waiting for it at most `timeout` seconds
        (`icnd.Timeout`); the function's error as its exception."""
        if self.source is None:
            raise RuntimeError(f"{self.name}: this Future has no client to fetch through; use Client.result(name)")
        return await self.source.result(self.name, timeout=timeout)

    def __repr__(self) -> str:
        return f"icnd.Future({self.name.to_uri()!r})"


@dataclass(frozen=True, repr=False)
class SyncFuture(Future):
    """What the blocking façade's ``submit`` returns (`icnd.sync`): an
    `icnd.Future` whose `result` blocks, through the client it was submitted with."""

    owner: Any = field(default=None, compare=False)

    def result(self, timeout: float = 60.0) -> Any:  # blocking here, as every method of that façade
        """The call's result, waiting at most `timeout` seconds (as `icnd.Client.result`)."""
        return self.owner.result(self.name, timeout=timeout)


@dataclass(frozen=True, repr=False)
class AioFuture(Future):
    """What the asyncio façade's ``submit`` returns (`icnd.aio`): an
    `icnd.Future` whose `result` is awaited on the asyncio loop, through the
    client it was submitted with."""

    owner: Any = field(default=None, compare=False)

    async def result(self, timeout: float = 60.0) -> Any:
        """The call's result, waiting at most `timeout` seconds (as `icnd.Client.result`)."""
        return await self.owner.result(self.name, timeout=timeout)


@dataclass(frozen=True)
class NamedArg:
    """A named argument as a host decodes it."""

    kind: str  # "ref" or "future"
    name: Name


def is_named(value: object) -> bool:
    return isinstance(value, (Ref, Future))


def encode_named(value: Ref | Future) -> bytes:
    """One named argument in its wire form (the module docstring)."""
    kind = "ref" if isinstance(value, Ref) else "future"
    payload = msgpack.packb([kind, list(value.name.comps)], use_bin_type=True)
    if len(payload) > MAX_NAMED_PAYLOAD:
        raise ValueError(f"{value.name}: a name of {len(payload)} bytes is too long for an argument")
    return msgpack.packb(msgpack.ExtType(EXT_NAMED, payload), use_bin_type=True)


def decode_argument(buf: bytes | bytearray | memoryview, *, limits: ValueLimits = DEFAULT_LIMITS) -> Any:
    """One argument: a `NamedArg` for a named one, else `decode_value`'s value.
    Raises `DecodeError` (only) on malformed input."""
    mv = memoryview(buf).cast("B")
    if len(mv) >= 3 and len(mv) <= MAX_NAMED_PAYLOAD + 6 and mv[0] in (0xC7, 0xC8, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8):
        try:
            ext = msgpack.unpackb(mv, raw=False, max_ext_len=MAX_NAMED_PAYLOAD)
        except Exception:
            ext = None
        if isinstance(ext, msgpack.ExtType) and ext.code == EXT_NAMED:
            return _named(ext.data)
    return decode_value(mv, limits=limits)


def _named(payload: bytes) -> NamedArg:
    try:
        body = msgpack.unpackb(payload, raw=False, max_array_len=64, max_bin_len=MAX_NAMED_PAYLOAD)
        kind, comps = body
        comps = tuple(comps)
        if kind not in KINDS or not valid_wire_comps(comps) or not comps:
            raise ValueError
    except Exception:
        raise DecodeError("malformed named argument (expected [\"ref\" | \"future\", name components])") from None
    return NamedArg(kind, Name.from_wire(comps))
