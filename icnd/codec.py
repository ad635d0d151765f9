"""The wire codec: one msgpack array per packet.

Layout (see docs/protocol.md for the full table)::

    Interest: [VERSION, 1, name, nonce, lifetime_ms, hop_limit, flags, app_params|nil, [hint...]]
    Data:     [VERSION, 2, name, content_type, freshness_ms, final_block_id|nil,
               content, sig_type, key_locator|nil, sig_value]
    Nack:     [VERSION, 3, name, nonce, reason, detail]

A name is an array of wire-form components (bin).  The *signed portion* of a
Data is its encoding up to, not including, the final ``sig_value`` element:
every byte of the array header and of the nine fields before it.  A Data's
encoding is cached on the packet (`Data.wire`, set by `decode`,
`with_signature` or the first `encode`); `implicit_digest` and `full_name`
hash it.

`decode` trusts nothing: msgpack runs with explicit limits (so a claimed
length never makes it allocate), every field's type and range is checked, and
any failure at all raises `DecodeError` and nothing else.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import msgpack

from icnd.errors import DecodeError
from icnd.name import T_DIGEST, T_PARAMS, Name, params_digest, valid_wire_comps
from icnd.packet import (Data, Interest, Nack, NackReason, Packet, SigType, _d_content, _d_ctype, _d_fbid, _d_fresh,
                         _d_kl, _d_name, _d_sig, _d_stype, _d_wire, _i_cbp, _i_hint, _i_hop, _i_life, _i_mbf,
                         _i_name, _i_nonce, _i_params, _i_wire, _new, new_data)

VERSION = 1
T_INTEREST = 1
T_DATA = 2
T_NACK = 3

MAX_PACKET_SIZE = 8 * 1024 * 1024 + 65536  # stream faces
MAX_CONTENT_SIZE = 8 * 1024 * 1024
MAX_PARAMS_SIZE = 1024 * 1024
MAX_SIG_SIZE = 512
MAX_HINTS = 8
MAX_DETAIL_LEN = 1024
LARGE_CONTENT = 64 * 1024  # a Data with more content is encoded by joining its parts (`signed_parts`)

_FLAG_CBP = 1
_FLAG_MBF = 2
_U32 = (1 << 32) - 1
_SIG_TYPES = frozenset(int(s) for s in SigType)
_NACK_REASONS = {int(r): r for r in NackReason}


def encode(packet: Packet) -> bytes:
    """Encode a packet; a Data's encoding is cached on the object, and an
    Interest reuses the encoding it was decoded from (`Interest.wire`)."""
    if type(packet) is Data:
        wire = packet.wire
        if wire is None:
            content = packet.content
            if type(content) is bytes and len(content) < LARGE_CONTENT:
                wire = _pack([*_data_fields(packet), packet.sig_value])
            else:  # one copy of the content (the packer would copy it in, then out again)
                wire = b"".join((*signed_parts(packet), msgpack.packb(packet.sig_value, use_bin_type=True)))
                if type(content) is memoryview:
                    # a view of memory held elsewhere (shared memory): the encoding is not kept
                    # on the packet, where it would double what the holder accounts for
                    return wire
            object.__setattr__(packet, "wire", wire)
        return wire
    if type(packet) is Interest:
        wire = packet.wire
        if wire is not None:
            return wire
        flags = (_FLAG_CBP if packet.can_be_prefix else 0) | (_FLAG_MBF if packet.must_be_fresh else 0)
        return _pack([
            VERSION,
            T_INTEREST,
            packet.name.comps,
            packet.nonce,
            packet.lifetime_ms,
            packet.hop_limit,
            flags,
            packet.app_params,
            [h.comps for h in packet.forwarding_hint],
        ])
    if type(packet) is Nack:
        return _pack([VERSION, T_NACK, packet.name.comps, packet.nonce, int(packet.reason), packet.detail])
    raise TypeError(f"not a packet: {type(packet).__name__}")


_MAIN_THREAD = threading.main_thread().ident
_main_packer = msgpack.Packer(use_bin_type=True)


def _pack(obj: list[Any]) -> bytes:
    """``msgpack.packb(obj, use_bin_type=True)``; the main thread (the
    forwarder's) reuses one Packer instead of building one per call."""
    if _get_ident() == _MAIN_THREAD:
        return _main_packer.pack(obj)
    return msgpack.packb(obj, use_bin_type=True)


def _data_fields(d: Data) -> list[Any]:
    return [
        VERSION,
        T_DATA,
        d.name.comps,
        int(d.content_type),
        d.freshness_ms,
        d.final_block_id,
        d.content,
        int(d.sig_type),
        None if d.key_locator is None else d.key_locator.comps,
    ]


def signed_portion(data: Data) -> bytes:
    """The bytes a Data's signature covers (its encoding minus `sig_value`)."""
    return b"".join(signed_parts(data))


def signed_parts(data: Data) -> tuple[bytes, bytes | memoryview, bytes]:
    """The signed portion as (head, content, tail), without copying the
    content: ``head + content + tail == signed_portion(data)``.  Signing and
    hashing feed the three parts to the hash one after the other, so a large
    content is read once and never copied to be signed (issue #18)."""
    packer = msgpack.Packer(use_bin_type=True, autoreset=False)
    packer.pack_array_header(10)
    for f in (VERSION, T_DATA, data.name.comps, int(data.content_type), data.freshness_ms, data.final_block_id):
        packer.pack(f)
    content = data.content
    if type(content) is memoryview and (content.format != "B" or content.ndim != 1):
        content = content.cast("B")  # its length in bytes, as the packer counts it
    head = packer.bytes() + bin_header(len(content))
    kl = data.key_locator
    tail = _pack([int(data.sig_type), None if kl is None else kl.comps])[1:]  # the two fields, not the array
    return head, content, tail


def signed_portion_of_wire(data: Data) -> memoryview:
    """The signed portion of a decoded Data, sliced from its wire bytes."""
    wire = encode(data)
    tail = len(msgpack.packb(data.sig_value, use_bin_type=True))
    return memoryview(wire)[: len(wire) - tail]


def bin_header(n: int) -> bytes:
    """msgpack's bin 8/16/32 header for `n` bytes (what the packer writes
    before a bytes object; its Python API has no call for the header alone)."""
    if n < 0x100:
        return bytes((0xC4, n))
    if n < 0x10000:
        return b"\xc5" + n.to_bytes(2, "big")
    return b"\xc6" + n.to_bytes(4, "big")


def with_signature(data: Data, sig_value: bytes, portion: bytes | tuple[bytes, bytes | memoryview, bytes]) -> Data:
    """Attach `sig_value` to a Data whose signed portion is `portion` (the
    bytes, or the parts `signed_parts` gives: the content is copied once,
    into the encoding)."""
    parts = (portion,) if isinstance(portion, bytes) else portion
    wire = b"".join((*parts, msgpack.packb(sig_value, use_bin_type=True)))
    return new_data(data.name, data.content, data.content_type, data.freshness_ms, data.final_block_id,
                    data.sig_type, data.key_locator, sig_value, wire)


def implicit_digest(data: Data) -> bytes:
    """SHA-256 of the Data's encoding: what a ``sha256digest=`` component holds."""
    return hashlib.sha256(encode(data)).digest()


def full_name(data: Data) -> Name:
    """The Data's name plus its implicit digest component."""
    return data.name.append_wire(bytes((T_DIGEST,)) + implicit_digest(data))


def _name(comps: object, what: str) -> Name:
    if not valid_wire_comps(comps):
        raise DecodeError(f"invalid {what}")
    return Name.from_wire(comps)


def _uint(value: object, limit: int, what: str) -> int:
    if type(value) is not int or value < 0 or value > limit:
        raise DecodeError(f"invalid {what}: {value!r}")
    return value


_unpackb = msgpack.unpackb
_get_ident = threading.get_ident
_n_comps = Name.__dict__["comps"].__set__
_n_hash = Name.__dict__["_hash"].__set__


def decode(buf: bytes | memoryview) -> Packet:
    """Decode one packet; raises `DecodeError` (only) on malformed input.

    `buf` may be a read-only memoryview of bytes (a stream face hands a
    large frame over in its own buffer): a large Data then keeps it as its
    encoding and its content is a view of it; any other packet, and any
    writable or non-byte view, is decoded from a copy."""
    if type(buf) is memoryview and not (buf.readonly and buf.format == "B" and buf.ndim == 1 and buf.contiguous):
        buf = bytes(buf)
    n = len(buf)
    if n > MAX_PACKET_SIZE:
        raise DecodeError(f"packet of {n} bytes exceeds {MAX_PACKET_SIZE}")
    if n >= LARGE_CONTENT and buf[1:3] == _DATA_START and (type(buf) is bytes or type(buf) is memoryview):
        fields = _large_data_fields(buf)
        if fields is not None:
            try:
                return _decode_fields(fields, buf)
            except DecodeError:
                raise
            except Exception as exc:
                raise DecodeError(f"malformed packet: {exc.__class__.__name__}: {exc}") from None
    if type(buf) is not bytes:
        buf = bytes(buf)
    try:
        obj = _unpackb(
            buf,
            use_list=False,
            raw=False,
            max_bin_len=n if n < MAX_CONTENT_SIZE else MAX_CONTENT_SIZE,
            max_str_len=n if n < MAX_DETAIL_LEN else MAX_DETAIL_LEN,
            max_array_len=n if n < 64 else 64,
            max_map_len=0,
            max_ext_len=0,
        )
    except Exception as exc:  # msgpack raises several types; all mean "malformed"
        raise DecodeError(f"not a msgpack packet: {exc.__class__.__name__}: {exc}") from None
    try:
        return _decode_fields(obj, buf)
    except DecodeError:
        raise
    except Exception as exc:  # defensive: a field check we did not foresee
        raise DecodeError(f"malformed packet: {exc.__class__.__name__}: {exc}") from None


_DATA_START = bytes((VERSION, T_DATA))  # after a Data's array header (fixarray of 10: 0x9a)
DATA_FRAME_START = b"\x9a" + _DATA_START  # the first bytes of every encoded Data
_BIN_LENGTH_BYTES = {0xC4: 1, 0xC5: 2, 0xC6: 4}  # bin 8/16/32: bytes of the length after the marker
_HEAD_PROBE = 16 * 1024  # a large Data's fields before its content are looked for in this many bytes


def _large_data_fields(buf: bytes | memoryview) -> tuple[Any, ...] | None:
    """The ten fields of a large Data with its content as a read-only view of
    `buf`, not a copy (issue #18); None if `buf` does not look like one (the
    general path then decodes it, and refuses it if malformed).  msgpack
    parses the small fields before and after the content; only the content's
    bin header is read here (msgpack-python has no call that skips a bin)."""
    view = memoryview(buf)
    head = msgpack.Unpacker(use_list=False, raw=False, max_bin_len=_HEAD_PROBE, max_str_len=0,
                            max_array_len=64, max_map_len=0, max_ext_len=0)
    head.feed(view[:_HEAD_PROBE])
    try:
        if buf[0] != 0x9A or head.read_array_header() != 10:
            return None
        first = tuple(head.unpack() for _ in range(6))
        at = head.tell()
    except Exception:  # out of data (a long name), or malformed: the general path decides
        return None
    size = _BIN_LENGTH_BYTES.get(buf[at]) if at < len(buf) else None
    if size is None:
        return None
    start = at + 1 + size
    end = start + int.from_bytes(buf[at + 1:start], "big")
    if end > len(buf):
        return None
    tail = msgpack.Unpacker(use_list=False, raw=False, max_bin_len=MAX_SIG_SIZE, max_str_len=0,
                            max_array_len=64, max_map_len=0, max_ext_len=0)
    tail.feed(view[end:])
    try:
        last = (tail.unpack(), tail.unpack(), tail.unpack())
        if tail.tell() != len(buf) - end:
            return None  # bytes after the packet: the general path refuses them
    except Exception:
        return None
    return (*first, view[start:end].toreadonly(), *last)


def _decode_fields(obj: object, buf: bytes | memoryview) -> Packet:
    if type(obj) is not tuple or len(obj) < 2:
        raise DecodeError("packet is not an array with version and type")
    version, ptype = obj[0], obj[1]
    if version != VERSION or type(version) is not int:
        raise DecodeError(f"unsupported packet version {version!r}")
    if type(ptype) is not int:
        raise DecodeError(f"unknown packet type {ptype!r}")
    if ptype == T_INTEREST:
        if len(obj) != 9:
            raise DecodeError("Interest must have 9 elements")
        _, _, comps, nonce, lifetime, hop, flags, params, hints = obj
        if not valid_wire_comps(comps):
            raise DecodeError("invalid Interest name")
        if type(nonce) is not int or not 0 <= nonce <= _U32:
            raise DecodeError(f"invalid nonce: {nonce!r}")
        if type(lifetime) is not int or not 0 <= lifetime <= _U32:
            raise DecodeError(f"invalid lifetime: {lifetime!r}")
        if type(hop) is not int or not 0 <= hop <= 255:
            raise DecodeError(f"invalid hop limit: {hop!r}")
        if type(flags) is not int or not 0 <= flags <= 3:
            raise DecodeError(f"invalid flags: {flags!r}")
        if hints:
            if type(hints) is not tuple or len(hints) > MAX_HINTS:
                raise DecodeError("invalid forwarding hint")
            hints = tuple(_name(h, "forwarding hint") for h in hints)
        elif hints != ():
            raise DecodeError("invalid forwarding hint")
        if params is not None:
            if type(params) is not bytes or len(params) > MAX_PARAMS_SIZE:
                raise DecodeError("invalid application parameters")
            if not comps or comps[-1] != params_digest(hashlib.sha256(params).digest()):
                raise DecodeError("application parameters do not match params-sha256 component")
        elif comps and comps[-1][0] == T_PARAMS:
            raise DecodeError("params-sha256 component without application parameters")
        # new_interest and Name.from_wire, inlined: every packet takes this path
        name = _new(Name)
        _n_comps(name, comps)
        _n_hash(name, None)
        i = _new(Interest)
        _i_name(i, name)
        _i_nonce(i, nonce)
        _i_life(i, lifetime)
        _i_hop(i, hop)
        _i_cbp(i, flags & _FLAG_CBP == _FLAG_CBP)
        _i_mbf(i, flags & _FLAG_MBF == _FLAG_MBF)
        _i_params(i, params)
        _i_hint(i, hints)
        # the received bytes, for re-sending without re-encoding; not with
        # parameters, whose bytes the wire would hold a second copy of while
        # the Interest waits in the PIT (and whose hop limit is never patched)
        _i_wire(i, buf if params is None and type(buf) is bytes else None)
        return i
    if ptype == T_DATA:
        if len(obj) != 10:
            raise DecodeError("Data must have 10 elements")
        _, _, comps, ctype, fresh, fbid, content, sig_type, kl, sig_value = obj
        if not valid_wire_comps(comps):
            raise DecodeError("invalid Data name")
        if type(ctype) is not int or not 0 <= ctype <= 0xFFFF:
            raise DecodeError(f"invalid content type: {ctype!r}")
        if type(fresh) is not int or not 0 <= fresh <= _U32:
            raise DecodeError(f"invalid freshness: {fresh!r}")
        if fbid is not None and (type(fbid) is not bytes or not valid_wire_comps((fbid,))):
            raise DecodeError("invalid final block id")
        if type(content) is not bytes and type(content) is not memoryview:  # (a view: `_large_data_fields`)
            raise DecodeError("Data content is not bytes")
        if type(sig_type) is not int or sig_type not in _SIG_TYPES:
            raise DecodeError(f"unknown signature type {sig_type!r}")
        key_locator = None if kl is None else _name(kl, "key locator")
        if type(sig_value) is not bytes or len(sig_value) > MAX_SIG_SIZE:
            raise DecodeError("invalid signature value")
        # new_data and Name.from_wire, inlined as for the Interest
        name = _new(Name)
        _n_comps(name, comps)
        _n_hash(name, None)
        d = _new(Data)
        _d_name(d, name)
        _d_content(d, content)
        _d_ctype(d, ctype)
        _d_fresh(d, fresh)
        _d_fbid(d, fbid)
        _d_stype(d, sig_type)
        _d_kl(d, key_locator)
        _d_sig(d, sig_value)
        _d_wire(d, buf if type(buf) is memoryview else bytes(buf))  # (a view: a frame handed over)
        return d
    if ptype == T_NACK:
        if len(obj) != 6:
            raise DecodeError("Nack must have 6 elements")
        _, _, comps, nonce, reason, detail = obj
        name = _name(comps, "Nack name")
        _uint(nonce, _U32, "nonce")
        r = _NACK_REASONS.get(reason) if type(reason) is int else None
        if r is None:
            raise DecodeError(f"unknown Nack reason {reason!r}")
        if type(detail) is not str:
            raise DecodeError("Nack detail is not a string")
        return Nack(name, nonce, r, detail)
    raise DecodeError(f"unknown packet type {ptype!r}")
