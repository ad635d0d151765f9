"""The node's store of large published objects, served segment by segment.

Applications upload an object through management commands (begin, append
chunks in order, commit).  While the bytes arrive the store writes them to a
file and hashes them segment by segment: the SHA-256 of each segment's
content (for the manifest) and the DigestSha256 signature value of each
segment packet (`objects.SegmentBuilder`), so serving a segment later is one
``pread`` and one join, with no hashing and without the object in memory.
The manifest is signed once, at commit, by the node's key.

Objects live in ``<data-dir>/objects`` (an index in SQLite plus one file per
object) and survive restarts; without a data directory they live in a
temporary directory removed when the node stops.

Invariants: ``bytes_used`` (committed objects plus reservations of uploads
in progress) never exceeds ``capacity_bytes``; at most ``max_uploads``
uploads are in progress and one idle for ``upload_idle_s`` is aborted; a
committed object's file is never modified (a new upload makes a new version
in a new file).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass, field
from typing import BinaryIO

from icnd.codec import decode, encode
from icnd.errors import DecodeError, Error
from icnd.name import T_SEGMENT, Name
from icnd.objects.manifest import (
    KINDS,
    MANIFEST,
    MANIFEST_FRESHNESS_MS,
    Manifest,
    SegmentBuilder,
    check_sizes,
    segment_count,
)
from icnd.packet import ContentType, Data, Interest, SigType
from icnd.security import SigningKey



class ObjectStoreError(Error):
    """A refused upload (bad arguments, out of order, over capacity, unknown id)."""


@dataclass
class StoredObject:
    manifest: Manifest
    builder: SegmentBuilder
    sigs: bytes  # DigestSha256 value of every segment packet, concatenated
    path: str
    manifest_data: Data
    seq: int


@dataclass
class Upload:
    name: Name
    size: int
    segment_size: int
    freshness_ms: int
    path: str
    file: BinaryIO
    builder: SegmentBuilder
    received: int = 0
    touched: float = field(default_factory=time.monotonic)
    digests: list[bytes] = field(default_factory=list)
    sigs: list[bytes] = field(default_factory=list)
    filled: int = 0  # bytes of the current segment received so far
    # SHA-256 of the current segment's content, and of its packet (DigestSha256): see `_start_segment`
    content_hash: "hashlib._Hash" = field(default_factory=hashlib.sha256)
    sig_hash: "hashlib._Hash" = field(default_factory=hashlib.sha256)


class ObjectStore:
    def __init__(self, data_dir: str | None, capacity_bytes: int, *, max_uploads: int = 8,
                 upload_idle_s: float = 60.0) -> None:
        self._temporary = data_dir is None
        self.directory = tempfile.mkdtemp(prefix="icnd-objects-") if data_dir is None else os.path.join(
            data_dir, "objects")
        os.makedirs(self.directory, exist_ok=True)
        self.capacity_bytes = capacity_bytes
        self.max_uploads = max_uploads
        self.upload_idle_s = upload_idle_s
        self.bytes_used = 0
        # objects handed to local clients as a file descriptor, and uploads received in shared memory
        # (icnd.daemon.mgmt.objects)
        self.counters = {"object_shm_reads": 0, "object_shm_appends": 0, "object_shm_refused": 0}
        self._objects: dict[tuple[bytes, ...], StoredObject] = {}  # N/v=V -> object
        self._latest: dict[tuple[bytes, ...], tuple[bytes, ...]] = {}  # N -> N/v=V of the newest
        self._uploads: dict[str, Upload] = {}
        self._seq = 0
        self._db = sqlite3.connect(os.path.join(self.directory, "index.sqlite3"), isolation_level=None)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS objects (seq INTEGER PRIMARY KEY, manifest BLOB NOT NULL,"
            " sigs BLOB NOT NULL, freshness INTEGER NOT NULL, file TEXT NOT NULL)"
        )
        for seq, manifest_wire, sigs, freshness, path in self._db.execute(
            "SELECT seq, manifest, sigs, freshness, file FROM objects ORDER BY seq"
        ):
            data = decode(bytes(manifest_wire))
            assert isinstance(data, Data)
            manifest = Manifest.decode(data.name[:-2], data.content)
            self._add(StoredObject(manifest, SegmentBuilder(manifest, freshness), bytes(sigs),
                                   os.path.join(self.directory, path), data, seq))
        for name in os.listdir(self.directory):  # uploads a crash left behind
            if name.endswith(".part"):
                os.unlink(os.path.join(self.directory, name))

    def __len__(self) -> int:
        return len(self._objects)

    def _add(self, obj: StoredObject) -> None:
        key = obj.manifest.prefix.comps
        self._objects[key] = obj
        self._seq = max(self._seq, obj.seq)
        self.bytes_used += obj.manifest.size
        name = obj.manifest.name.comps
        latest = self._latest.get(name)
        if latest is None or self._objects[latest].manifest.version < obj.manifest.version:
            self._latest[name] = key

    def names(self) -> list[Name]:
        """The object names (without versions) the node must route to itself."""
        return [Name.from_wire(comps) for comps in self._latest]

    def objects(self) -> list[Manifest]:
        return [o.manifest for o in sorted(self._objects.values(), key=lambda o: o.seq)]

    # --- uploads -----------------------------------------------------------------------
    def begin(self, name: Name, size: int, segment_size: int, freshness_ms: int, kind: str = "bytes") -> str:
        self.expire_uploads()
        try:
            check_sizes(size, segment_size)
        except ValueError as exc:
            raise ObjectStoreError(str(exc)) from None
        if freshness_ms < 0:
            raise ObjectStoreError("freshness must be >= 0")
        if len(self._uploads) >= self.max_uploads:
            raise ObjectStoreError(f"{self.max_uploads} uploads already in progress; try again later")
        if self.bytes_used + size > self.capacity_bytes:
            raise ObjectStoreError(
                f"{size} bytes do not fit: {self.bytes_used} of {self.capacity_bytes} bytes in use"
            )
        ver = time.time_ns() // 1000
        latest = self._latest.get(name.comps)
        if latest is not None:
            ver = max(ver, self._objects[latest].manifest.version + 1)
        upload_id = secrets.token_hex(8)
        path = os.path.join(self.directory, f"{upload_id}.part")
        if kind not in KINDS:
            raise ObjectStoreError(f"object kind {kind!r}: expected one of {', '.join(KINDS)}")
        placeholder = Manifest(name, ver, size, segment_size, bytes(32 * segment_count(size, segment_size)), kind)
        builder = SegmentBuilder(placeholder, freshness_ms)
        upload = Upload(name, size, segment_size, freshness_ms, path, open(path, "wb"), builder)
        self._start_segment(upload)
        self._uploads[upload_id] = upload
        self.bytes_used += size  # reserved until commit or abort
        return upload_id

    def _start_segment(self, upload: Upload) -> None:
        index = len(upload.digests)
        upload.filled = 0
        upload.content_hash = hashlib.sha256()
        upload.sig_hash = upload.builder.sig_hasher(index, self._segment_length(upload, index))

    def check_append(self, upload_id: str, offset: int, length: int) -> Upload:
        """The upload `length` bytes at `offset` may be appended to, judged
        before they are read (`ObjectStoreError` if they may not)."""
        upload = self._upload(upload_id)
        if offset != upload.received:
            raise ObjectStoreError(f"upload {upload_id}: expected offset {upload.received}, got {offset}")
        if upload.received + length > upload.size:
            raise ObjectStoreError(f"upload {upload_id}: more than the declared {upload.size} bytes")
        return upload

    def append(self, upload_id: str, offset: int, chunk: bytes | memoryview) -> int:
        upload = self.check_append(upload_id, offset, len(chunk))
        upload.file.write(chunk)
        view = memoryview(chunk)
        while view:
            seg_len = self._segment_length(upload, len(upload.digests))
            take = min(len(view), seg_len - upload.filled)
            piece = view[:take]
            upload.content_hash.update(piece)
            upload.sig_hash.update(piece)
            upload.filled += take
            view = view[take:]
            if upload.filled == seg_len:
                self._finish_segment(upload)
        upload.received += len(chunk)
        upload.touched = time.monotonic()
        return upload.received

    @staticmethod
    def _segment_length(upload: Upload, index: int) -> int:
        start = index * upload.segment_size
        return min(upload.segment_size, upload.size - start)

    def _finish_segment(self, upload: Upload) -> None:
        upload.digests.append(upload.content_hash.digest())
        upload.sigs.append(upload.builder.finish_sig(upload.sig_hash))
        if len(upload.digests) < upload.builder.manifest.segments:
            self._start_segment(upload)

    def version_of(self, upload_id: str) -> int:
        """The version an upload in progress will have."""
        return self._upload(upload_id).builder.manifest.version

    def commit(self, upload_id: str, key: SigningKey, signed: Data | None = None) -> Manifest:
        """Finish an upload: its manifest is signed by `key`, or is `signed`,
        a manifest Data its publisher signed, accepted only if it describes
        exactly the bytes received (same name, version, sizes and segment
        digests) and is not digest-only.  Raises ObjectStoreError."""
        upload = self._upload(upload_id)
        if upload.received != upload.size:
            raise ObjectStoreError(f"upload {upload_id}: {upload.received} of {upload.size} bytes received")
        if upload.size == 0:
            self._finish_segment(upload)  # the one empty segment
        upload.file.close()
        del self._uploads[upload_id]
        placeholder = upload.builder.manifest
        manifest = Manifest(upload.name, placeholder.version, upload.size, upload.segment_size,
                            b"".join(upload.digests), placeholder.kind)
        if signed is not None:
            problem = _signed_manifest_problem(signed, manifest)
            if problem:
                self._drop_upload(upload_id, upload, closed=True)
                raise ObjectStoreError(f"{manifest.manifest_name()}: the publisher's manifest {problem}")
            manifest_data = signed
        else:
            manifest_data = key.sign(Data(manifest.manifest_name(), manifest.encode(), ContentType.MANIFEST,
                                          MANIFEST_FRESHNESS_MS))
        final = f"{upload_id}.obj"
        os.replace(upload.path, os.path.join(self.directory, final))
        sigs = b"".join(upload.sigs)
        self._seq += 1
        self._db.execute("INSERT INTO objects (seq, manifest, sigs, freshness, file) VALUES (?, ?, ?, ?, ?)",
                         (self._seq, encode(manifest_data), sigs, upload.freshness_ms, final))
        self.bytes_used -= upload.size  # the reservation becomes the object
        self._add(StoredObject(manifest, SegmentBuilder(manifest, upload.freshness_ms), sigs,
                               os.path.join(self.directory, final), manifest_data, self._seq))
        return manifest

    def abort(self, upload_id: str) -> None:
        upload = self._upload(upload_id)
        self._drop_upload(upload_id, upload)

    def _drop_upload(self, upload_id: str, upload: Upload, *, closed: bool = False) -> None:
        if not closed:
            upload.file.close()
        try:
            os.unlink(upload.path)
        except FileNotFoundError:
            pass
        self.bytes_used -= upload.size
        self._uploads.pop(upload_id, None)

    def _upload(self, upload_id: str) -> Upload:
        upload = self._uploads.get(upload_id)
        if upload is None:
            raise ObjectStoreError(f"no upload {upload_id!r} in progress (finished, aborted or idle too long)")
        return upload

    def expire_uploads(self) -> int:
        now = time.monotonic()
        stale = [(uid, u) for uid, u in self._uploads.items() if now - u.touched > self.upload_idle_s]
        for uid, upload in stale:
            self._drop_upload(uid, upload)
        return len(stale)

    # --- serving -----------------------------------------------------------------------
    def lookup(self, interest: Interest) -> Data | None:
        """The segment, manifest, or (discovery) newest manifest the Interest asks for."""
        comps = interest.name.comps
        if not comps:
            return None
        last = comps[-1]
        obj = self._objects.get(comps[:-1])
        if obj is not None:
            if last[0] == T_SEGMENT:
                return self._segment(obj, int.from_bytes(last[1:], "big"))
            if last == MANIFEST:
                return obj.manifest_data
        if interest.can_be_prefix:
            latest = self._latest.get(comps)
            if latest is not None:
                return self._objects[latest].manifest_data
        return None

    def stored(self, prefix: Name) -> StoredObject | None:
        """The committed object whose versioned name is `prefix`, if stored here."""
        return self._objects.get(prefix.comps)

    def _segment(self, obj: StoredObject, index: int) -> Data | None:
        manifest = obj.manifest
        if index >= manifest.segments:
            return None
        start, end = manifest.segment_range(index)
        fd = os.open(obj.path, os.O_RDONLY)
        try:
            return obj.builder.read(index, fd, start, end - start, obj.sigs[32 * index : 32 * index + 32])
        finally:
            os.close(fd)

    # --- removal -----------------------------------------------------------------------------
    def remove(self, name: Name) -> list[Manifest]:
        """Remove every version of `name`; returns their manifests."""
        gone = [o for key, o in self._objects.items() if o.manifest.name.comps == name.comps]
        for obj in gone:
            del self._objects[obj.manifest.prefix.comps]
            self._db.execute("DELETE FROM objects WHERE seq = ?", (obj.seq,))
            self.bytes_used -= obj.manifest.size
            try:
                os.unlink(obj.path)
            except FileNotFoundError:
                pass
        self._latest.pop(name.comps, None)
        return [o.manifest for o in gone]

    def close(self) -> None:
        for uid, upload in list(self._uploads.items()):
            self._drop_upload(uid, upload)
        self._db.close()
        if self._temporary:
            shutil.rmtree(self.directory, ignore_errors=True)


def _signed_manifest_problem(data: Data, manifest: Manifest) -> str | None:
    """Why `data` is not a signed manifest of exactly `manifest` (None if it is)."""
    if data.name != manifest.manifest_name():
        return f"is named {data.name}"
    if data.content_type != ContentType.MANIFEST:
        return f"has content type {data.content_type}"
    if data.sig_type == SigType.DIGEST_SHA256 or data.key_locator is None:
        return "is not signed by a key"
    try:
        theirs = Manifest.decode(manifest.name, data.content)
    except DecodeError as exc:
        return f"is malformed ({exc})"
    if theirs != manifest:
        return "does not describe the bytes uploaded (sizes or segment digests differ)"
    return None
