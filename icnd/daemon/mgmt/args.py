"""Command arguments: typed lookups in a command's msgpack map, and decoded packets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icnd.codec import decode
from icnd.errors import CommandError, DecodeError
from icnd.faces import shm
from icnd.name import Name
from icnd.packet import Data

MISSING: Any = ...


def arg(args: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any = MISSING) -> Any:
    """``args[key]``, checked to be of type `kind` (a bool is never an int);
    `default` when absent, else a 400 `CommandError`."""
    if key not in args:
        if default is MISSING:
            raise CommandError(400, f"missing argument {key!r}")
        return default
    value = args[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise CommandError(400, f"argument {key!r} has the wrong type")
    return value


def name_arg(text: str, what: str = "prefix") -> Name:
    """A name given as a URI argument (400 if malformed)."""
    try:
        return Name(text)
    except ValueError as exc:
        raise CommandError(400, f"bad {what} {text!r}: {exc}") from None


def data_packets(packets: list[Any]) -> list[Data]:
    """The encoded Data packets of a command's ``packets`` argument, decoded."""
    out = []
    for wire in packets:
        if not isinstance(wire, bytes):
            raise CommandError(400, "packets must be encoded Data (bytes)")
        try:
            data = decode(wire)
        except DecodeError as exc:
            raise CommandError(400, f"malformed Data: {exc}") from None
        if not isinstance(data, Data):
            raise CommandError(400, "packets must be Data, not Interests or Nacks")
        out.append(data)
    return out


def sealed_view(fd: int | None, size: int, max_bytes: int,
                check: Callable[[shm.Reader], object] | None = None) -> memoryview:
    """The read-only view of the sealed memory file that came with a command
    (`icnd.faces.shm.map_sealed`, which closes `fd`, and calls `check` on the
    file's bytes before mapping it); ``CommandError(400)`` if none came or
    the file is refused."""
    if fd is None:
        raise CommandError(400, "no shared-memory descriptor came with this command (it is passed over "
                                "the node's Unix socket with the command itself)")
    try:
        return shm.map_sealed(fd, size, max_bytes=max_bytes, check=check)
    except shm.ShmError as exc:
        raise CommandError(400, str(exc)) from None
