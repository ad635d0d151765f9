"""Link-state records and the link-state database.

A **record** is what one node says about itself: its adjacencies (neighbour
node name and link cost, only those it currently hears) and the prefixes it
announces (with, for function prefixes, the capacity and load of its
workers).  It travels as an ordinary signed Data named
``<node>/routing/ls/v=<version>`` whose content is a msgpack map::

    {"o": origin, "v": version, "t": lifetime_s,
     "a": [[neighbour, cost], ...],
     "p": [[prefix, capacity|None, load|None], ...],
     "c": [certificate wire, ...]}        # the signer's certificate chain

so that any node can verify it without fetching anything (the routes it
would need to fetch a certificate are what the record is for).

The **database** (`Lsdb`) keeps the newest record of each origin.
Invariants:

- at most one record per origin, the one with the highest version seen;
- at most ``max_nodes`` records and ``max_bytes`` of record wire bytes (a
  record that does not fit is refused, never an old one silently dropped
  for a stranger's);
- ``vector()`` maps every origin to its version; ``digest()`` is a hash of
  the sorted vector, equal on two nodes exactly when they hold the same
  versions (barring SHA-256 collisions), recomputed only after a change;
- ``listed_by_others(n)`` counts the records, other than ``n``'s own, whose
  adjacencies list ``n`` (kept on every put and remove);
- a record that expired leaves a *tombstone* (its origin and version) for
  the lifetime it had, at most ``max_nodes`` of them: a replay of that
  record (or an older one) is recognized and refused (`replayed`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from collections.abc import Iterator
from typing import Any

import msgpack

from icnd.errors import BoundsExceeded, DecodeError
from icnd.name import MAX_COMPONENTS, Name, generic, version

__all__ = ["Adjacency", "Announcement", "LinkState", "Lsdb", "MAX_VERSION", "StoredRecord", "checked_name",
           "decode_record", "encode_record", "record_name"]

_LS = (generic("routing"), generic("ls"))
MAX_NAME_CHARS = 512
# the names nearly every record carries: checked by this alone (tests/property/test_routing_fuzz.py
# checks it against the general path, Name(value).to_uri() == value)
_PLAIN = re.compile(r"(?:/(?=[A-Za-z0-9._~-]*[A-Za-z0-9_~-])[A-Za-z0-9._~-]+)+")
MAX_VERSION = 2**63 - 1  # a record's version; a node's own never reaches it (it grows by one per record)


@dataclass(frozen=True, slots=True)
class Adjacency:
    name: str  # the neighbour's node name (URI)
    cost: int


@dataclass(frozen=True, slots=True)
class Announcement:
    prefix: str  # URI
    capacity: int | None = None  # function prefixes: workers of the host
    load: int | None = None  # function prefixes: calls running or queued at the host


@dataclass(frozen=True, slots=True)
class LinkState:
    origin: str  # node name (URI)
    version: int
    lifetime: float  # seconds a copy stays valid after it arrives, unless refreshed
    adjacencies: tuple[Adjacency, ...] = ()
    prefixes: tuple[Announcement, ...] = ()


def record_name(origin: Name, ver: int) -> Name:
    return origin.append_wire(*_LS, version(ver))


def encode_record(state: LinkState, certs: tuple[bytes, ...] = ()) -> bytes:
    return msgpack.packb({
        "o": state.origin, "v": state.version, "t": state.lifetime,
        "a": [[a.name, a.cost] for a in state.adjacencies],
        "p": [[p.prefix, p.capacity, p.load] for p in state.prefixes],
        "c": list(certs),
    }, use_bin_type=True)


def checked_name(value: Any, what: str) -> str:
    """`value` if it is a name URI in canonical form (it parses, and prints
    back the same), not the root, at most ``MAX_NAME_CHARS``; else
    DecodeError.  Every name a routing message carries passes here once, at
    decode, so nothing deeper (route computation, FIB updates) can fail on one."""
    if type(value) is not str or not value.startswith("/") or len(value) > MAX_NAME_CHARS or value == "/":
        raise DecodeError(f"link-state: bad {what} {value!r:.60}")
    if _PLAIN.fullmatch(value) is not None and value.count("/") <= MAX_COMPONENTS:
        return value  # generic components of unreserved characters, none all dots: canonical as written
    try:
        canonical = Name(value).to_uri()
    except ValueError as exc:
        raise DecodeError(f"link-state: bad {what} {value!r:.60}: {exc}") from None
    if canonical != value:
        raise DecodeError(f"link-state: bad {what} {value!r:.60}: not in canonical form ({canonical!r:.60})")
    return value



def _int(value: Any, what: str, low: int = 0, high: int = MAX_VERSION) -> int:
    if type(value) is not int or not low <= value <= high:
        raise DecodeError(f"link-state record: bad {what} {value!r:.60}")
    return value


def _opt(value: Any, what: str) -> int | None:
    return None if value is None else _int(value, what, 0, 2**31)


def decode_record(data_name: Name, content: bytes | memoryview, *, max_adjacencies: int, max_prefixes: int
                  ) -> tuple[LinkState, tuple[bytes, ...]]:
    """The record a Data carries, checked against its name; raises DecodeError
    (malformed), or its subclass BoundsExceeded (more adjacencies/prefixes than
    allowed: an over-announcing node)."""
    try:
        obj = msgpack.unpackb(content, raw=False, strict_map_key=True, max_bin_len=len(content),
                              max_str_len=len(content), max_array_len=max(max_adjacencies, max_prefixes, 16),
                              max_map_len=16)
    except DecodeError:
        raise
    except Exception as exc:
        raise DecodeError(f"link-state record {data_name}: not msgpack: {exc}") from None
    if type(obj) is not dict:
        raise DecodeError(f"link-state record {data_name}: not a map")
    origin = checked_name(obj.get("o"), "origin")
    ver = _int(obj.get("v"), "version")
    lifetime = obj.get("t")
    if not isinstance(lifetime, (int, float)) or isinstance(lifetime, bool) or not 1 <= lifetime <= 7 * 86400:
        raise DecodeError(f"link-state record {data_name}: bad lifetime {lifetime!r:.30}")
    adj, pfx, certs = obj.get("a"), obj.get("p"), obj.get("c", [])
    if type(adj) is not list or type(pfx) is not list or type(certs) is not list:
        raise DecodeError(f"link-state record {data_name}: bad lists")
    if len(adj) > max_adjacencies:
        raise BoundsExceeded(f"link-state record of {origin}: {len(adj)} adjacencies, more than {max_adjacencies}")
    if len(pfx) > max_prefixes:
        raise BoundsExceeded(f"link-state record of {origin}: {len(pfx)} prefixes, more than {max_prefixes}")
    expected = record_name(Name(origin), ver)
    if expected != data_name:
        raise DecodeError(f"link-state record {data_name}: content names {expected}")
    adjacencies = []
    for item in adj:
        if type(item) is not list or len(item) != 2:
            raise DecodeError(f"link-state record of {origin}: bad adjacency {item!r:.60}")
        adjacencies.append(Adjacency(checked_name(item[0], "neighbour"), _int(item[1], "cost", 1, 2**31)))
    prefixes = []
    for item in pfx:
        if type(item) is not list or len(item) != 3:
            raise DecodeError(f"link-state record of {origin}: bad prefix {item!r:.60}")
        prefixes.append(Announcement(checked_name(item[0], "prefix"), _opt(item[1], "capacity"), _opt(item[2], "load")))
    if any(type(c) is not bytes for c in certs) or len(certs) > 8:
        raise DecodeError(f"link-state record of {origin}: bad certificates")
    state = LinkState(origin, ver, float(lifetime), tuple(adjacencies), tuple(prefixes))
    return state, tuple(certs)


@dataclass(slots=True)
class StoredRecord:
    state: LinkState
    wire: bytes  # the Data as received (signature and all), served to neighbours as is
    received_at: float
    expires_at: float
    key: tuple[bytes, ...] = ()  # the origin's name components (the record name less routing/ls/v=)
    neighbors: dict[str, int] = field(default_factory=dict)  # adjacencies, as route computation reads them
    signer: bytes = b""  # who signed it, as the shell's validator names the key (pinned per origin)


class Lsdb:
    """The newest record of each origin; see the module docstring."""

    def __init__(self, *, max_nodes: int = 10_000, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_nodes = max_nodes
        self.max_bytes = max_bytes
        self.bytes_used = 0
        self._records: dict[str, StoredRecord] = {}
        self._by_key: dict[tuple[bytes, ...], StoredRecord] = {}
        self._digest: bytes | None = None
        self._listed: dict[str, int] = {}  # node -> records of other origins listing it
        self._tombstones: dict[str, tuple[int, float]] = {}  # origin -> (expired version, kept until)

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[StoredRecord]:
        return iter(self._records.values())

    def __contains__(self, origin: object) -> bool:
        return origin in self._records

    def get(self, origin: str) -> StoredRecord | None:
        return self._records.get(origin)

    def by_key(self, key: tuple[bytes, ...]) -> StoredRecord | None:
        """The record of the origin whose name components are `key` (a stale
        record is recognized from its name alone, before it is decoded)."""
        return self._by_key.get(key)

    def version_of(self, origin: str) -> int:
        """The version held for `origin`, or -1."""
        record = self._records.get(origin)
        return -1 if record is None else record.state.version

    def fits(self, origin: str, size: int) -> bool:
        """Whether a record of `size` bytes from `origin` may be stored now."""
        old = self._records.get(origin)
        if old is None and len(self._records) >= self.max_nodes:
            return False
        return self.bytes_used - (len(old.wire) if old is not None else 0) + size <= self.max_bytes

    def put(self, record: StoredRecord) -> None:
        """Store `record` (the caller checked it is newer and `fits`)."""
        origin = record.state.origin
        old = self._records.get(origin)
        if old is not None:
            self.bytes_used -= len(old.wire)
            self._by_key.pop(old.key, None)
            self._unlist(old)
        if not record.key:
            record.key = Name(origin).comps
        if not record.neighbors:
            record.neighbors = {a.name: a.cost for a in record.state.adjacencies}
        listed = self._listed
        for name in record.neighbors:
            if name != origin:
                listed[name] = listed.get(name, 0) + 1
        self._tombstones.pop(origin, None)
        self._records[origin] = record
        self._by_key[record.key] = record
        self.bytes_used += len(record.wire)
        self._digest = None

    def remove(self, origin: str) -> bool:
        old = self._records.pop(origin, None)
        if old is None:
            return False
        self._by_key.pop(old.key, None)
        self._unlist(old)
        self.bytes_used -= len(old.wire)
        self._digest = None
        return True

    def _unlist(self, record: StoredRecord) -> None:
        listed = self._listed
        for name in record.neighbors:
            if name != record.state.origin:
                left = listed.get(name, 0) - 1
                if left > 0:
                    listed[name] = left
                else:
                    listed.pop(name, None)

    def listed_by_others(self, name: str) -> int:
        return self._listed.get(name, 0)

    def expired(self, now: float) -> list[str]:
        return [origin for origin, r in self._records.items() if r.expires_at <= now]

    def expire(self, origin: str, now: float) -> None:
        """Drop an expired record, leaving its tombstone."""
        record = self._records.get(origin)
        if record is None:
            return
        self.remove(origin)
        tombs = self._tombstones
        tombs[origin] = (record.state.version, now + max(0.0, record.expires_at - record.received_at))
        if len(tombs) > self.max_nodes:
            for gone in [o for o, (_, until) in tombs.items() if until <= now] or [next(iter(tombs))]:
                del tombs[gone]

    def replayed(self, origin: str, ver: int, now: float) -> bool:
        """Whether a record of `origin` at version `ver` is one that expired here (or older)."""
        tomb = self._tombstones.get(origin)
        if tomb is None:
            return False
        if tomb[1] <= now:
            del self._tombstones[origin]
            return False
        return ver <= tomb[0]

    def vector(self) -> dict[str, int]:
        return {origin: r.state.version for origin, r in self._records.items()}

    def digest(self) -> bytes:
        """16 bytes summarizing every (origin, version) held."""
        if self._digest is None:
            h = hashlib.sha256()
            for origin in sorted(self._records):
                h.update(origin.encode())
                h.update(b"\0")
                h.update(self._records[origin].state.version.to_bytes(8, "big"))
            self._digest = h.digest()[:16]
        return self._digest
