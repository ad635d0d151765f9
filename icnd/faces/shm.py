"""Sealed shared memory between a local application and its node (issue #18).

A large array or object handed to the node on the same host need not cross
the Unix socket: the application writes it once into an anonymous memory
file (``memfd_create``), *seals* it (no write, no resize, no further seals:
``F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL``) and passes the
descriptor over its Unix face with ``SCM_RIGHTS``
(`icnd.faces.stream.StreamFace.send_with_fds`) alongside the command that
says what it holds.  The node maps it read-only and serves views of it: no
copy, no hash, and nothing the application can change afterwards -- the
seals are what make a view safe to hold (an unsealed file could be rewritten
under a contribution already counted, or truncated so that reading it
faults), so a descriptor without them is refused.

Check first, then map (issue 26, S1): everything the node can judge
without the file's payload -- kind, size, seals, and the layout the command
declares (`map_sealed`'s ``check``: each segment's header, read with
``pread``, at most 8 KiB per segment) -- is checked before the file is
mapped, so a refused hand-over costs the node a few small reads, never the
file's size in memory or time.  A file that
passes is mapped with ``MAP_POPULATE`` (its pages mapped in one call) only
if every byte of it is written: a hole in a sparse file would be allocated
and zeroed by the node in that one call, on the event loop, so such a file
is mapped lazily and its pages cost only as they are read.

Lifetime: the node closes the descriptor it received as soon as it is
mapped (or refused); the mapping lives while anything still references a
view of it (the contribution store's Data, a Data in flight) and is unmapped
by the garbage collector after that.  Python's ``mmap`` keeps a descriptor
of its own per mapping, so live mappings are bounded (`MAX_MAPPINGS`, all
callers together): beyond that, a file is copied into the node's memory
(one copy at memory speed) and nothing stays open.  A client that dies after sending loses
nothing the node holds: the memory file lives while the node's mapping does.
The application closes its own descriptor once the command returns.

Why the descriptor, not a name in ``/dev/shm``: a descriptor is a
capability -- the node can only ever map what the application itself
passed, never another application's segment named by a guess.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import stat
import weakref
from collections.abc import Callable

from icnd.errors import Error

SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
REQUIRED_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
MAX_MAPPINGS = 256  # live mappings (each holds a descriptor); beyond, files are copied
_live = [0]


def live_mappings() -> int:
    """Mappings made by `map_sealed` not yet unmapped (each holds one descriptor)."""
    return _live[0]


def _unmapped() -> None:
    _live[0] -= 1


class ShmError(Error, ValueError):
    """A shared-memory descriptor that cannot be used (wrong kind, size or seals)."""


def available() -> bool:
    """True where sealed memory files exist (Linux)."""
    return hasattr(os, "memfd_create") and hasattr(fcntl, "F_ADD_SEALS")


def create_sealed(size: int, fill: Callable[[int], None], *, name: str = "icnd") -> int:
    """A sealed memory file of `size` bytes written by `fill`, given the
    file's descriptor (it writes with ``os.pwritev`` or ``os.copy_file_range``:
    the kernel allocates the pages as it copies, where writing through a
    mapping would take a page fault per 4 KiB); returns the descriptor,
    which the caller owns."""
    if size <= 0:
        raise ValueError("a shared-memory segment holds at least one byte")
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fill(fd)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_all(fd: int, buffers: list[bytes | memoryview], offset: int) -> None:
    """``pwritev`` every byte of `buffers` at `offset` (retrying short writes)."""
    for buf in buffers:
        view = memoryview(buf).cast("B")
        while view:
            n = os.pwrite(fd, view, offset)
            offset += n
            view = view[n:]


def map_file(fd: int, size: int) -> memoryview:
    """A read-only view of the regular file `fd` of exactly `size` bytes, as
    a client maps a committed object its own node passed it (not sealed: the
    node never changes a committed file, and the client checks every byte it
    returns against the verified manifest after copying it out).  Always
    closes `fd`; `ShmError` for anything else."""
    try:
        try:
            st = os.fstat(fd)
        except OSError as exc:
            raise ShmError(f"not a file: {exc.strerror or exc}") from None
        if not stat.S_ISREG(st.st_mode) or st.st_size != size or size <= 0:
            raise ShmError(f"the file passed holds {st.st_size} bytes, {size} expected")
        try:
            mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0), prot=mmap.PROT_READ)
        except (OSError, ValueError) as exc:
            raise ShmError(f"cannot map the file: {exc}") from None
        return memoryview(mm)
    finally:
        os.close(fd)


def _check_sealed(fd: int, size: int) -> None:
    """`fd` is a memory file of exactly `size` bytes, sealed against writes and resizing."""
    try:
        st = os.fstat(fd)
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError as exc:
        raise ShmError(f"not a sealed memory file: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode) or st.st_size != size or size <= 0:
        raise ShmError(f"the file passed holds {st.st_size} bytes, {size} expected")
    if seals & REQUIRED_SEALS != REQUIRED_SEALS:
        raise ShmError("the file passed is not sealed against writes and resizing")


def map_private(fd: int, size: int) -> mmap.mmap:
    """A copy-on-write mapping of the sealed memory file `fd` of exactly `size`
    bytes, as a rank maps an aggregate its node handed it: reads share the
    node's pages, a write copies only the page written (the file itself is
    sealed and never changes).  Always closes `fd`; `ShmError` for anything
    else (not a file, another size, not sealed against writes)."""
    try:
        _check_sealed(fd, size)
        try:
            return mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0),
                             prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except (OSError, ValueError) as exc:
            raise ShmError(f"cannot map the file: {exc}") from None
    finally:
        os.close(fd)


def read_sealed(fd: int, into: memoryview, size: int) -> None:
    """Read the sealed memory file `fd` of exactly `size` bytes into `into`
    (of that size), as a rank takes an aggregate its node handed it into its
    own buffer; always closes `fd`; `ShmError` for anything else."""
    try:
        _check_sealed(fd, size)
        if len(into) != size:
            raise ShmError(f"a buffer of {len(into)} bytes for a file of {size}")
        done = 0
        while done < size:
            n = os.preadv(fd, [into[done:]], done)
            if n <= 0:
                raise ShmError(f"the file ended after {done} of {size} bytes")
            done += n
    finally:
        os.close(fd)


Reader = Callable[[int, int], bytes]
"""``read(offset, n)``: exactly `n` bytes of a memory file from `offset`
(``os.pread``, nothing mapped); `ShmError` for bytes outside the file."""


def _reader(fd: int, size: int) -> Reader:
    def read(offset: int, n: int) -> bytes:
        if not (0 <= offset and 0 <= n and offset + n <= size):
            raise ShmError(f"bytes {offset}..{offset + n} are outside the {size}-byte memory file")
        try:
            got = os.pread(fd, n, offset)
        except OSError as exc:
            raise ShmError(f"cannot read the memory file: {exc.strerror or exc}") from None
        if len(got) != n:
            raise ShmError("short read from the memory file")
        return got
    return read


def map_sealed(fd: int, size: int, *, max_bytes: int,
               check: Callable[[Reader], object] | None = None) -> memoryview:
    """A read-only view of the `size`-byte sealed memory file `fd`.

    Always closes `fd` (the mapping outlives it).  Raises `ShmError` unless
    `fd` is a regular memory file of exactly `size` bytes (1..`max_bytes`)
    sealed against writing and resizing.  `check`, given a `Reader` of the
    file, checks the layout the command declares before anything is mapped
    or copied; whatever it raises is raised.
    """
    try:
        if not 0 < size <= max_bytes:
            raise ShmError(f"a shared-memory segment of {size} bytes is outside 1..{max_bytes}")
        try:
            st = os.fstat(fd)
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError as exc:
            raise ShmError(f"not a sealed memory file: {exc.strerror or exc}") from None
        if not stat.S_ISREG(st.st_mode):
            raise ShmError("the descriptor is not a memory file")
        if seals & REQUIRED_SEALS != REQUIRED_SEALS:
            raise ShmError("the memory file is not sealed against writing and resizing "
                           "(F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)")
        if st.st_size != size:
            raise ShmError(f"the memory file holds {st.st_size} bytes, the command says {size}")
        if check is not None:
            check(_reader(fd, size))
        if _live[0] >= MAX_MAPPINGS:  # copy instead of holding one more descriptor
            copy = bytearray(size)
            if os.preadv(fd, [copy], 0) != size:
                raise ShmError("short read from the memory file")
            return memoryview(copy).toreadonly()
        # PROT_READ alone: a read-only buffer (views cannot write).  MAP_POPULATE (the pages mapped
        # in one call, not one fault at a time) only for a file without holes (module docstring): a
        # memory file's blocks are its allocated pages, fewer than its size where some were never
        # written (st_blocks, not lseek(SEEK_HOLE), which would move the offset the client shares)
        written = st.st_blocks * 512 >= size
        flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if written else 0)
        try:
            mm = mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ)
        except (OSError, ValueError) as exc:
            raise ShmError(f"cannot map the memory file: {exc}") from None
        _live[0] += 1
        weakref.finalize(mm, _unmapped)
        return memoryview(mm)
    finally:
        os.close(fd)
