"""Large named objects: versions, segments and manifests (pure, no I/O).

An object published under ``N`` gets a version ``v=V`` (microseconds since
the epoch, strictly increasing per name at a producer) and is cut into
segments::

    N/v=V/manifest          the manifest: size, segment size, SHA-256 of every
                            segment's content; signed by the producer (one
                            signature covers the whole object)
    N/v=V/seg=0 .. seg=K    the content, K = last segment (final_block_id);
                            DigestSha256 only: each is checked against the
                            manifest, so a large object costs one signature

A consumer discovers the latest version with an Interest for ``N``
(CanBePrefix, MustBeFresh): the producer answers with the manifest; a cache
may answer with any fresh segment, whose name still tells the version.
Re-publishing makes a new version, so old and new segments never mix.

This module holds the naming, the manifest codec, the segment packet
builder the node serves from and the consumer's congestion window, all
without I/O so they are unit-tested directly (the consumer's RTT estimator
is the one of `icnd.rtt`).
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass

import msgpack

from icnd.codec import MAX_CONTENT_SIZE, T_DATA, VERSION, bin_header
from icnd.errors import DecodeError
from icnd.name import T_SEGMENT, T_VERSION, Name, generic, segment, version
from icnd.packet import ContentType, Data, SigType, new_data

MANIFEST = generic("manifest")
DIGEST_LEN = 32
MIN_SEGMENT_SIZE = 1024
MAX_SEGMENT_SIZE = 4 * 1024 * 1024
DEFAULT_SEGMENT_SIZE = 1024 * 1024
MANIFEST_FRESHNESS_MS = 1000  # discovery asks MustBeFresh: new versions show within a second
MAX_SEGMENTS = 200_000  # manifest of at most 6.4 MB of digests
MAX_OBJECT_SIZE = 64 * 1024**3
KINDS = ("bytes", "value")  # a "value" object holds one encoded value (`Client.publish_value`, results)


@dataclass(frozen=True)
class Manifest:
    """What a consumer needs to fetch and check an object."""

    name: Name  # the object's name, without version
    version: int
    size: int
    segment_size: int
    digests: bytes  # SHA-256 of each segment's content, concatenated
    kind: str = "bytes"  # what the bytes are: "bytes", or "value" (one encoded value, `icnd.compute.values`)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"object kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if not MIN_SEGMENT_SIZE <= self.segment_size <= MAX_SEGMENT_SIZE:
            raise ValueError(f"segment size {self.segment_size} outside {MIN_SEGMENT_SIZE}..{MAX_SEGMENT_SIZE}")
        if not 0 <= self.size <= MAX_OBJECT_SIZE:
            raise ValueError(f"object size {self.size} outside 0..{MAX_OBJECT_SIZE}")
        if len(self.digests) != DIGEST_LEN * self.segments:
            raise ValueError(f"{self.segments} segments need {DIGEST_LEN * self.segments} digest bytes")

    @property
    def segments(self) -> int:
        return segment_count(self.size, self.segment_size)

    @property
    def prefix(self) -> Name:
        """``N/v=V``: every segment and the manifest live under it."""
        return self.name.append_wire(version(self.version))

    def segment_name(self, index: int) -> Name:
        return self.prefix.append_wire(segment(index))

    def manifest_name(self) -> Name:
        return manifest_name(self.name, self.version)

    def digest(self, index: int) -> bytes:
        return self.digests[DIGEST_LEN * index : DIGEST_LEN * (index + 1)]

    def segment_range(self, index: int) -> tuple[int, int]:
        start = index * self.segment_size
        return start, min(start + self.segment_size, self.size)

    def encode(self) -> bytes:
        body = {"v": 1, "version": self.version, "size": self.size, "segment_size": self.segment_size,
                "digests": self.digests}
        if self.kind != "bytes":  # (a plain object's manifest is what it always was)
            body["kind"] = self.kind
        return msgpack.packb(body, use_bin_type=True)

    @classmethod
    def decode(cls, name: Name, content: bytes | memoryview) -> "Manifest":
        """Parse a manifest's content; `name` is the object name (no version)."""
        try:
            body = msgpack.unpackb(content, raw=False, max_bin_len=MAX_SEGMENTS * DIGEST_LEN,
                                   max_array_len=0, max_map_len=16)
            if not isinstance(body, dict) or body.get("v") != 1:
                raise ValueError("not a version-1 manifest")
            fields = (body["version"], body["size"], body["segment_size"])
            if not all(type(f) is int for f in fields) or type(body["digests"]) is not bytes:
                raise ValueError("manifest fields have the wrong types")
            if segment_count(body["size"], body["segment_size"]) > MAX_SEGMENTS:
                raise ValueError("too many segments")
            kind = body.get("kind", "bytes")
            if kind not in KINDS:
                raise ValueError(f"unknown object kind {kind!r}")
            return cls(name, *fields, body["digests"], kind)
        except (KeyError, TypeError, ValueError, msgpack.UnpackException) as exc:
            raise DecodeError(f"{name}: malformed manifest: {exc}") from None


def segment_count(size: int, segment_size: int) -> int:
    """Segments of an object (an empty object still has one, empty, segment)."""
    return max(1, math.ceil(size / segment_size))


def manifest_name(name: Name, ver: int) -> Name:
    return name.append_wire(version(ver), MANIFEST)


def parse_versioned(name: Name, base: Name) -> tuple[int, bytes] | None:
    """For a Data name under `base`, its version and the component after it
    (``seg=…`` or ``manifest``); None if it is not ``base/v=V/<x>``."""
    comps, n = name.comps, len(base.comps)
    if len(comps) != n + 2 or comps[:n] != base.comps or comps[n][0] != T_VERSION:
        return None
    return int.from_bytes(comps[n][1:], "big"), comps[n + 1]


def segment_index(comp: bytes) -> int | None:
    return int.from_bytes(comp[1:], "big") if comp[:1] == bytes((T_SEGMENT,)) and len(comp) > 1 else None


class SegmentBuilder:
    """Builds the segment packets of one object, byte for byte the same
    every time, without hashing at serve time.

    ``digest_sig(i, content)`` (at publish) returns the DigestSha256 value of
    segment i; ``build(i, content, sig)`` (at serve) assembles the packet's
    wire bytes around the content with one join and no re-encoding.  The
    layout is exactly what `icnd.codec.encode` produces for the same Data.
    """

    def __init__(self, manifest: Manifest, freshness_ms: int) -> None:
        self.manifest = manifest
        self.freshness_ms = freshness_ms
        self._final = segment(manifest.segments - 1)
        self._suffix = msgpack.packb(int(SigType.DIGEST_SHA256)) + msgpack.packb(None)

    def _prefix(self, index: int, length: int) -> tuple[Name, bytes]:
        name = self.manifest.segment_name(index)
        packer = msgpack.Packer(use_bin_type=True, autoreset=False)
        packer.pack_array_header(10)
        for value in (VERSION, T_DATA, name.comps, int(ContentType.BLOB), self.freshness_ms, self._final):
            packer.pack(value)
        return name, packer.bytes() + bin_header(length)

    def sig_hasher(self, index: int, length: int) -> "hashlib._Hash":
        """A SHA-256 fed with everything before segment `index`'s content;
        update it with the content, then call `finish_sig`."""
        return hashlib.sha256(self._prefix(index, length)[1])

    def finish_sig(self, hasher: "hashlib._Hash") -> bytes:
        hasher.update(self._suffix)
        return hasher.digest()

    def digest_sig(self, index: int, content: bytes | memoryview) -> bytes:
        hasher = self.sig_hasher(index, len(content))
        hasher.update(content)
        return self.finish_sig(hasher)

    def build(self, index: int, content: bytes, sig: bytes) -> Data:
        name, prefix = self._prefix(index, len(content))
        wire = b"".join((prefix, content, self._suffix, msgpack.packb(sig, use_bin_type=True)))
        return new_data(name, content, int(ContentType.BLOB), self.freshness_ms, self._final,
                        int(SigType.DIGEST_SHA256), None, sig, wire)

    def read(self, index: int, fd: int, offset: int, length: int, sig: bytes) -> Data:
        """Like `build`, with the content read from `fd` straight into the
        packet's buffer: one copy from the page cache, none afterwards (the
        Data's content is a view of its wire bytes)."""
        name, prefix = self._prefix(index, length)
        tail = self._suffix + msgpack.packb(sig, use_bin_type=True)
        start = len(prefix)
        buffer = bytearray(start + length + len(tail))
        buffer[:start] = prefix
        view = memoryview(buffer)
        got = os.preadv(fd, [view[start:start + length]], offset)
        if got != length:
            raise OSError(f"{name}: short read ({got} of {length} bytes)")
        buffer[start + length:] = tail
        # content and wire are views of one buffer, not bytes objects (that would be two more copies)
        return new_data(name, view[start:start + length],
                        int(ContentType.BLOB), self.freshness_ms, self._final, int(SigType.DIGEST_SHA256), None, sig,
                        buffer)  # type: ignore[arg-type]  # bytes-like: the encoding is only ever sent


def check_segment(manifest: Manifest, index: int, content: bytes | memoryview) -> bool:
    start, end = manifest.segment_range(index)
    return len(content) == end - start and hashlib.sha256(content).digest() == manifest.digest(index)


class CongestionWindow:
    """AIMD window of outstanding Interests: slow start to `ssthresh`, then
    +1 per window of answers; a loss (timeout or congestion Nack) halves it,
    at most once per round trip so one burst of losses is one event."""

    def __init__(self, initial: float = 4.0, ssthresh: float = 64.0, maximum: float = 256.0) -> None:
        self.cwnd = initial
        self.ssthresh = ssthresh
        self.maximum = maximum
        self._recovery_until = -math.inf

    @property
    def size(self) -> int:
        return max(1, int(self.cwnd))

    def on_answer(self) -> None:
        if self.cwnd < self.ssthresh:
            self.cwnd += 1
        else:
            self.cwnd += 1 / self.cwnd
        if self.cwnd > self.maximum:
            self.cwnd = self.maximum

    def on_loss(self, now: float, rtt: float) -> None:
        if now < self._recovery_until:
            return
        self.ssthresh = max(self.cwnd / 2, 2.0)
        self.cwnd = self.ssthresh
        self._recovery_until = now + rtt


def check_sizes(size: int, segment_size: int) -> None:
    if not MIN_SEGMENT_SIZE <= segment_size <= min(MAX_SEGMENT_SIZE, MAX_CONTENT_SIZE):
        raise ValueError(f"segment size must be {MIN_SEGMENT_SIZE}..{MAX_SEGMENT_SIZE} bytes")
    if not 0 <= size <= MAX_OBJECT_SIZE:
        raise ValueError(f"object size must be at most {MAX_OBJECT_SIZE} bytes")
    if segment_count(size, segment_size) > MAX_SEGMENTS:
        raise ValueError(
            f"{size} bytes in {segment_size}-byte segments is more than {MAX_SEGMENTS} segments; "
            "use larger segments"
        )
