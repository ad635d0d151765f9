"""The codec of function arguments and results.

Each value (one argument, or one result) is encoded on its own as **one
msgpack object**; the only additions to plain msgpack are three extension
types.  Nothing is ever pickled: ``np.load``/``allow_pickle`` are never used,
and the decoder builds only the types listed here.

What can be sent
----------------
==============================  =============================================
Python value                    wire form (decoded back to)
==============================  =============================================
``None``, ``bool``, ``float``   nil, bool, float64 (NaN, ±Inf, -0.0 and NaN
                                payloads round-trip bit for bit)
``int`` in [-2**63, 2**64)      msgpack int
other ``int``                   ext 3 (big int), up to `MAX_INT_BYTES` bytes
``str``                         str (UTF-8; lone surrogates are refused)
``bytes``                       bin (``bytearray``/``memoryview`` are sent as
                                bin too and come back as ``bytes``)
``list``                        array (decoded as ``list``)
``tuple``                       array whose first element is the tuple marker
                                ext 2 (decoded as ``tuple``)
``dict``                        map; keys may be ``str``, ``int``, ``float``,
                                ``bool``, ``None`` or ``bytes`` only
``numpy.ndarray``               ext 1 (decoded as a read-only ``ndarray``)
numpy scalar (``np.float32``)   ext 1 with nil shape (decoded as the same
                                numpy scalar type, in native byte order)
==============================  =============================================

Subclasses of the builtin types (``IntEnum``, ``OrderedDict``, named tuples,
``str`` subclasses...) are sent as their base type, except that numpy scalars
(``np.float64`` too, although it subclasses ``float``) keep their dtype;
``np.str_``/``np.bytes_`` are sent as str/bytes.  Other ndarray subclasses
(``np.matrix``, ``np.memmap``) are sent as plain ndarrays.
Anything else (sets, ``datetime``, custom classes, object/string/void/
datetime/longdouble arrays, masked arrays) raises ``TypeError("cannot send a
<type> as a function argument: ...")``; a value that has a supported type but
cannot be carried (a cycle or nesting deeper than `MAX_DEPTH`, an ``int``
beyond `MAX_INT_BYTES`, an array of more than `MAX_NDIM` dimensions, a str
with lone surrogates) raises ``ValueError``.  Both name where in the value the
problem is, e.g. ``(at value[2]['w'])``.

Numeric dtypes (`ALLOWED_DTYPES`): bool, int8..int64, uint8..uint64,
float16/32/64, complex64/128, in either byte order (big-endian arrays stay
big-endian).

Wire format of the extension types
----------------------------------
``ext 1`` — an ndarray or numpy scalar.  Payload = ``header || data`` where
``header`` is the msgpack array ``[dtype, shape, pad]``:

- ``dtype``: str, numpy's ``dtype.str`` (byte order, kind, item size), e.g.
  ``"<f4"``, ``">i8"``, ``"|b1"``; must be one of `ALLOWED_DTYPES`.
- ``shape``: array of uints (ndim ≤ 32, each dim ≤ 2**40; ``[]`` is a 0-d
  array), or nil for a numpy scalar.
- ``pad``: bin of 0–15 zero bytes, chosen by the encoder so that ``data``
  starts 16-byte aligned in the buffer the decoder views it from (decoders
  ignore its content; at most 63 bytes are accepted).
- ``data``: the raw C-order bytes of the array, exactly
  ``prod(shape) * itemsize`` bytes (``itemsize`` for a scalar); bool data
  must be 0/1 bytes.

The encoder always writes arrays as ext 32 (``c9 <u32 len> 01``) and numpy
scalars in msgpack's shortest ext form; a decoder accepts any ext form.

``ext 2`` — the tuple marker, empty payload (``c7 00 02``).  It is valid only
as the first element of an array, which then decodes as a tuple of the
remaining elements: ``(1, 2)`` → ``93 c7 00 02 01 02``.

``ext 3`` — a big int: its minimal two's-complement big-endian bytes, used
only for ints outside msgpack's range [-2**63, 2**64).

Any other ext type (including msgpack's timestamp, ext -1) is refused.
Encoding is deterministic, so equal values built the same way give equal
bytes (dict entries keep their insertion order: equal dicts built in a
different order encode differently).  Everything outside ext payloads is
standard msgpack as ``msgpack.packb(..., use_bin_type=True)`` writes it
(floats always as float64); a decoder accepts every msgpack form.

Decoding, copies and limits
---------------------------
`decode_value` trusts nothing.  Before msgpack builds anything, a structural
pass over the buffer checks that it is one complete, well-formed value and
enforces `ValueLimits` (nesting depth, container lengths, total items, array
and int sizes), ext types, tuple-marker placement and dict-key kinds; array
headers are checked (dtype allowlist, shape bounds, ``prod(shape) *
itemsize == len(data)``) before the array is made, so no claimed length or
shape ever causes an allocation.  Any malformed input raises
`icnd.errors.DecodeError` — nothing else.  Duplicate dict keys (including
``1``/``1.0``/``True``) and non-canonical big ints are refused.

An array that is the whole value (the usual case of an array argument or
result) is a zero-copy, **read-only** view onto the received buffer (which it
keeps alive, and which must not be modified afterwards); an array nested in a
container is a read-only view onto one private copy of its bytes made by the
msgpack parser.  ``writable=True`` gives every array its own writable copy
instead.  Encoding copies array data exactly once (into the returned
``bytes``), plus once more only for an array that is not C-contiguous.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from typing import Any, Iterable

import msgpack
import numpy as np

from icnd.errors import DecodeError

__all__ = [
    "ALLOWED_DTYPES",
    "DEFAULT_LIMITS",
    "EXT_ARRAY",
    "EXT_BIGINT",
    "EXT_TUPLE",
    "MAX_DEPTH",
    "MAX_DIM",
    "MAX_INT_BYTES",
    "MAX_NDIM",
    "ValueLimits",
    "decode_value",
    "describe",
    "encode_value",
    "encode_values",
]

EXT_ARRAY = 1
EXT_TUPLE = 2
EXT_BIGINT = 3

MAX_DEPTH = 32  # container nesting the encoder accepts (and the default decode limit)
MAX_NDIM = 32
MAX_DIM = 1 << 40
MAX_INT_BYTES = 4096  # a big int of up to 32767 bits
_MAX_PAD = 63
_HDR_MAX = 512  # an array header is < 370 bytes: 1 + 5 + 3 + 32*9 + 2 + 63
_ALIGN = 16
_EXT32_HDR = 6
_BIG_BYTES = 64 * 1024  # bytes-likes from this size are appended without going through the packer
_INT_MIN = -(1 << 63)
_INT_END = 1 << 64

_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128")
_DTYPES: dict[str, np.dtype] = {}
for _name in _NAMES:
    for _dt in (np.dtype(_name).newbyteorder("<"), np.dtype(_name).newbyteorder(">")):
        _DTYPES[_dt.str] = _dt
ALLOWED_DTYPES: frozenset[str] = frozenset(_DTYPES)
"""Every ``dtype.str`` an array may have, e.g. ``"<f4"``, ``">c16"``, ``"|b1"``."""
_NUMERIC = "bool, int8..int64, uint8..uint64, float16/32/64, complex64/128"
_SUPPORTED = ("only None, bool, int, float, str, bytes, lists, tuples and dicts of these, and numpy "
              f"arrays/scalars of numeric dtype ({_NUMERIC}) can be sent")


@dataclass(frozen=True, slots=True)
class ValueLimits:
    """What `decode_value` accepts; exceeding any limit raises `DecodeError`.

    ``max_length`` bounds one list/tuple/dict, ``max_items`` the elements of
    all containers of the value together, ``max_depth`` their nesting (a flat
    list has depth 1; arrays are leaves).
    """

    max_bytes: int = 1 << 30
    max_depth: int = MAX_DEPTH
    max_length: int = 1 << 20
    max_items: int = 1 << 22
    max_array_bytes: int = 1 << 30
    max_int_bytes: int = MAX_INT_BYTES

    def __post_init__(self) -> None:
        for field in ("max_bytes", "max_depth", "max_length", "max_items", "max_array_bytes", "max_int_bytes"):
            v = getattr(self, field)
            if type(v) is not int or v < 0:
                raise ValueError(f"ValueLimits.{field} must be a non-negative int, not {v!r}")


DEFAULT_LIMITS = ValueLimits()


# --------------------------------------------------------------------- describe


def _dtype_desc(dt: np.dtype) -> str:
    if dt.byteorder == ">" or (dt.byteorder == "=" and sys.byteorder == "big" and dt.itemsize > 1):
        return f"{dt.name} big-endian"
    return dt.name


def describe(value: Any) -> str:
    """A short description for logs and errors, e.g. ``"ndarray float32 (3, 4)"``."""
    if isinstance(value, np.ndarray):
        return f"ndarray {_dtype_desc(value.dtype)} {tuple(value.shape)}"
    if isinstance(value, np.generic):
        return f"numpy {_dtype_desc(value.dtype)} scalar"
    t = type(value)
    if value is None:
        return "None"
    if t is bool:
        return "bool"
    if isinstance(value, int):
        return "int" if _INT_MIN <= value < _INT_END else f"int ({value.bit_length()} bits)"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return f"str of {len(value)} chars"
    if isinstance(value, (bytes, bytearray)):
        return f"{t.__name__} of {len(value)} bytes"
    if isinstance(value, memoryview):
        return f"memoryview of {value.nbytes} bytes"
    if isinstance(value, (list, tuple, dict)):
        return f"{t.__name__} of {len(value)}"
    return _type_name(t)


def _type_name(t: type) -> str:
    mod = t.__module__
    return t.__qualname__ if mod in ("builtins", None) else f"{mod}.{t.__qualname__}"


# --------------------------------------------------------------------- encode


class _Refusal(Exception):
    """Internal: a value cannot be sent; collects the path to it on the way out."""

    def __init__(self, exc_type: type[Exception], what: str, why: str) -> None:
        super().__init__(why)
        self.exc_type = exc_type
        self.what = what
        self.why = why
        self.path: list[str] = []


def _refuse_type(what: str, why: str = _SUPPORTED) -> _Refusal:
    return _Refusal(TypeError, what, why)


def _refuse_value(what: str, why: str) -> _Refusal:
    return _Refusal(ValueError, what, why)


def _short_repr(key: Any) -> str:
    r = repr(key)
    return r if len(r) <= 40 else r[:37] + "..."


_PLAIN = frozenset({type(None), bool, int, float, str, bytes})  # exact types msgpack packs as they are
_KEY_TYPES = _PLAIN
_KEY_RULE = "it is a dict key, and dict keys may be str, int, float, bool, None or bytes only"


def _bigint_bytes(v: int) -> bytes:
    n = ((v if v >= 0 else ~v).bit_length() + 8) // 8
    if n > MAX_INT_BYTES:
        raise _refuse_value("int", f"it needs {n} bytes, more than the {MAX_INT_BYTES} an int may have")
    return v.to_bytes(n, "big", signed=True)


def _array_header(packb: Any, dstr: str, shape: list[int] | None, base: int) -> bytes:
    h0 = packb([dstr, shape, b""])
    pad = (-(base + len(h0))) % _ALIGN if shape is not None else 0
    return h0 if pad == 0 else packb([dstr, shape, bytes(pad)])


def _dtype_refusal(dt: np.dtype, what: str) -> _Refusal:
    kind = dt.kind
    if kind == "O":
        why = "object arrays could only be sent by pickling, which icnd never does; convert to a numeric dtype"
    elif kind in "US":
        why = "string arrays are not sent; send a list of str (arr.tolist()) instead"
    elif kind in "mM":
        why = "datetime64/timedelta64 is not a numeric dtype; send arr.astype('int64') and the unit"
    elif kind == "V":
        why = "structured/void arrays are not sent; send one array per field"
    elif kind in "fc":
        why = f"{dt.name} is not portable; use float64/complex128"
    else:
        why = "not a numeric dtype"
    return _refuse_type(what, f"{why} (numeric dtypes are {_NUMERIC})")


class _Encoder:
    """One per call (msgpack's Packer is not shareable between threads).

    Small items accumulate in `packer`; a large bytes or array is appended to
    `chunks` as a view, so its data is copied only by the final join.
    """

    __slots__ = ("chunks", "packer", "packb")

    def __init__(self) -> None:
        self.packer = msgpack.Packer(use_bin_type=True, autoreset=False)
        self.packb = msgpack.Packer(use_bin_type=True).pack  # autoreset: returns bytes
        self.chunks: list[Any] = []

    def flush(self) -> None:
        b = self.packer.bytes()
        if b:
            self.chunks.append(b)
            self.packer.reset()

    def result(self) -> bytes:
        self.flush()
        chunks = self.chunks
        if len(chunks) == 1 and type(chunks[0]) is bytes:
            return chunks[0]
        return b"".join(chunks)

    def value(self, v: Any, depth: int, top: bool) -> None:
        t = type(v)
        if t is int:
            self.enc_int(v)
        elif t is float or t is bool or v is None:
            self.packer.pack(v)
        elif t is str:
            self.enc_str(v)
        elif t is bytes:
            self.enc_bytes(v)
        elif t is list:
            self.seq(v, depth, False)
        elif t is tuple:
            self.seq(v, depth, True)
        elif t is dict:
            self.map(v, depth)
        elif t is np.ndarray:
            self.array(v, top)
        elif isinstance(v, np.generic):
            self.npscalar(v)
        else:
            self.other(v, depth, top)

    def other(self, v: Any, depth: int, top: bool) -> None:
        if isinstance(v, np.ndarray):
            ma = sys.modules.get("numpy.ma")
            if ma is not None and isinstance(v, ma.MaskedArray):
                raise _refuse_type("masked array", "its mask would be lost; send .filled() or data and mask")
            self.array(v.view(np.ndarray), top)
        elif isinstance(v, int):  # IntEnum, ...
            self.enc_int(int(v))
        elif isinstance(v, float):
            self.packer.pack(float(v))
        elif isinstance(v, str):
            self.enc_str(str.__str__(v))
        elif isinstance(v, (bytes, bytearray, memoryview)):
            self.enc_bytes(v)
        elif isinstance(v, tuple):
            self.seq(tuple(v), depth, True)
        elif isinstance(v, list):
            self.seq(list(v), depth, False)
        elif isinstance(v, dict):
            self.map(dict(v), depth)
        else:
            raise _refuse_type(_type_name(type(v)))

    def enc_int(self, v: int) -> None:
        if _INT_MIN <= v < _INT_END:
            self.packer.pack(v)
        else:
            self.packer.pack_ext_type(EXT_BIGINT, _bigint_bytes(v))

    def enc_str(self, v: str) -> None:
        try:
            self.packer.pack(v)
        except UnicodeEncodeError as exc:
            raise _refuse_value("str", f"it is not valid Unicode ({exc.reason} at index {exc.start})") from None

    def enc_bytes(self, v: Any) -> None:
        if type(v) is not bytes:
            mv = memoryview(v)
            if not mv.c_contiguous:
                mv = memoryview(mv.tobytes())
            v = mv.cast("B") if (mv.ndim != 1 or mv.format != "B") else mv
        n = len(v)
        if n < _BIG_BYTES:
            self.packer.pack(v)
        elif n > 0xFFFFFFFF:
            raise _refuse_value("bytes", f"{n} bytes is more than msgpack's 4 GiB limit")
        else:  # no copy until the final join
            self.flush()
            self.chunks.append(b"\xc6" + n.to_bytes(4, "big"))
            self.chunks.append(v)

    def seq(self, v: list[Any] | tuple[Any, ...], depth: int, is_tuple: bool) -> None:
        depth += 1
        if depth > MAX_DEPTH:
            raise _refuse_value(type(v).__name__, f"it is nested deeper than {MAX_DEPTH} levels (or contains itself)")
        n = len(v)
        if not is_tuple and n and set(map(type, v)) <= _PLAIN:
            try:  # flat list of plain scalars: one C call
                b = self.packb(v)
            except (OverflowError, UnicodeEncodeError):
                pass  # a big int or a bad str: the slow path handles/reports it
            else:
                self.flush()
                self.chunks.append(b)
                return
        p = self.packer
        if is_tuple:
            p.pack_array_header(n + 1)
            p.pack_ext_type(EXT_TUPLE, b"")
        else:
            p.pack_array_header(n)
        value = self.value
        for i, x in enumerate(v):
            try:
                value(x, depth, False)
            except _Refusal as r:
                r.path.append(f"[{i}]")
                raise

    def map(self, v: dict[Any, Any], depth: int) -> None:
        depth += 1
        if depth > MAX_DEPTH:
            raise _refuse_value("dict", f"it is nested deeper than {MAX_DEPTH} levels (or contains itself)")
        if v and set(map(type, v)) <= _PLAIN and set(map(type, v.values())) <= _PLAIN:
            try:  # flat dict of plain scalars: one C call
                b = self.packb(v)
            except (OverflowError, UnicodeEncodeError):
                pass  # the slow path handles/reports it
            else:
                self.flush()
                self.chunks.append(b)
                return
        self.packer.pack_map_header(len(v))
        value = self.value
        for k, x in v.items():
            tk = type(k)
            try:
                if tk in _KEY_TYPES:
                    value(k, depth, False)
                elif isinstance(k, (int, float, str, bytes)) and not isinstance(k, np.generic):
                    self.other(k, depth, False)
                else:
                    raise _refuse_type(_type_name(tk), _KEY_RULE)
            except _Refusal as r:
                r.path.append(f"[{_short_repr(k)}] (key)")
                raise
            try:
                value(x, depth, False)
            except _Refusal as r:
                r.path.append(f"[{_short_repr(k)}]")
                raise

    def npscalar(self, v: np.generic) -> None:
        dt = v.dtype
        dstr = dt.str
        if dstr in _DTYPES:
            self.packer.pack_ext_type(EXT_ARRAY, _array_header(self.packb, dstr, None, 0) + v.tobytes())
        elif isinstance(v, str):
            self.enc_str(str.__str__(v))
        elif isinstance(v, bytes):
            self.enc_bytes(bytes(v))
        else:
            raise _dtype_refusal(dt, f"numpy {dt.name} scalar")

    def array(self, a: np.ndarray, top: bool) -> None:
        dt = a.dtype
        dstr = dt.str
        if dstr not in _DTYPES:
            raise _dtype_refusal(dt, f"ndarray of dtype {dt}")
        shape = list(a.shape)
        if len(shape) > MAX_NDIM:
            raise _refuse_value("ndarray", f"it has {len(shape)} dimensions, more than {MAX_NDIM}")
        if shape and max(shape) > MAX_DIM:
            raise _refuse_value("ndarray", f"its shape {tuple(shape)} has a dimension above 2**40")
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)  # the only copy besides the final join (ndim >= 1 here)
        if dt.kind == "b" and a.size and a.view(np.uint8).max() > 1:
            a = a.view(np.uint8) != 0  # bool bytes other than 0/1 (from .view(bool)): normalise
        nbytes = a.nbytes
        hdr = _array_header(self.packb, dstr, shape, _EXT32_HDR if top else 0)
        plen = len(hdr) + nbytes
        if plen > 0xFFFFFFFF:
            raise _refuse_value("ndarray", f"its {nbytes} bytes are more than msgpack's 4 GiB limit")
        self.flush()
        self.chunks.append(b"\xc9" + plen.to_bytes(4, "big") + b"\x01" + hdr)
        if nbytes:
            self.chunks.append(a.reshape(-1).view(np.uint8).data)


def _encode(value: Any, root: str) -> bytes:
    enc = _Encoder()
    try:
        enc.value(value, 0, True)
    except _Refusal as r:
        where = root + "".join(reversed(r.path))
        what = r.what
        article = "an" if what[:1].lower() in "aeiou" or what.startswith("ndarray") else "a"
        raise r.exc_type(f"cannot send {article} {what} as a function argument: {r.why} (at {where})") from None
    return enc.result()


def encode_value(value: Any) -> bytes:
    """Encode one argument or result; raises `TypeError`/`ValueError` for what cannot be sent."""
    return _encode(value, "value")


def encode_values(values: Iterable[Any]) -> list[bytes]:
    """Encode each argument separately (one ``bytes`` per argument, in order)."""
    return [_encode(v, f"argument {i}: value") for i, v in enumerate(values)]


# --------------------------------------------------------------------- decode
#
# Decoding runs in two passes over the buffer.  `_scan` walks the msgpack
# structure without building anything: it checks that it is complete and
# well formed, enforces depth, lengths, item count, ext types and sizes, dict
# key kinds and the place of tuple markers.  Only then does msgpack's C
# parser build the value; as every container count it meets has been
# checked against the elements actually present, what it preallocates is
# bounded by the buffer's size (without the scan, nested headers each
# claiming a million elements make it reserve gigabytes).  The hooks left
# for msgpack only turn markers into tuples, catch duplicate keys and build
# arrays.

_K_ARR, _K_ARR16, _K_ARR32, _K_MAP, _K_MAP16, _K_MAP32 = 1, 2, 3, 4, 5, 6
_K_BIN8, _K_BIN16, _K_BIN32, _K_EXT8, _K_EXT16, _K_EXT32, _K_FIXEXT = 7, 8, 9, 10, 11, 12, 13


def _tables() -> tuple[tuple[int, ...], tuple[int, ...]]:
    size = [0] * 256  # total size of a fixed-size scalar (any valid dict key), else 0
    kind = [0] * 256  # how to read everything else; 0 = never valid (0xc1)
    for b in range(256):
        if b <= 0x7F or b >= 0xE0 or b in (0xC0, 0xC2, 0xC3):
            size[b] = 1
        elif b <= 0x8F:
            kind[b] = _K_MAP
        elif b <= 0x9F:
            kind[b] = _K_ARR
        elif b <= 0xBF:
            size[b] = 1 + (b & 31)
        elif b in (0xCA, 0xCE, 0xD2):
            size[b] = 5
        elif b in (0xCB, 0xCF, 0xD3):
            size[b] = 9
        elif b in (0xCC, 0xD0):
            size[b] = 2
        elif b in (0xCD, 0xD1):
            size[b] = 3
        elif 0xD4 <= b <= 0xD8:
            kind[b] = _K_FIXEXT
    for b, k in ((0xC4, _K_BIN8), (0xD9, _K_BIN8), (0xC5, _K_BIN16), (0xDA, _K_BIN16), (0xC6, _K_BIN32),
                 (0xDB, _K_BIN32), (0xC7, _K_EXT8), (0xC8, _K_EXT16), (0xC9, _K_EXT32), (0xDC, _K_ARR16),
                 (0xDD, _K_ARR32), (0xDE, _K_MAP16), (0xDF, _K_MAP32)):
        kind[b] = k
    return tuple(size), tuple(kind)


_SIZE, _KIND = _tables()
_u16 = struct.Struct(">H").unpack_from
_u32 = struct.Struct(">I").unpack_from


def _scan(mv: memoryview, lim: ValueLimits) -> None:
    """Validate the structure of the msgpack value in `mv` (see above); raises `DecodeError`."""
    n = len(mv)
    size, kind = _SIZE, _KIND
    max_depth, max_length, max_items = lim.max_depth, lim.max_length, lim.max_items
    max_ext = lim.max_array_bytes + _HDR_MAX
    stack: list[tuple[int, bool, int]] = []  # (remaining, in_map, first) of the enclosing containers
    remaining = 1  # objects still to read in the current container (or 1: the value itself)
    in_map = False  # in a map, an object is a key when `remaining` is even
    first = -1  # offset of the current array's first element (where a tuple marker may be)
    items = 0
    pos = 0
    while True:
        if pos >= n:
            raise DecodeError(f"truncated value ({n} bytes)")
        b = mv[pos]
        s = size[b]
        if s:  # a plain scalar, then the rest of a run of them
            pos += s
            remaining -= 1
            while remaining and pos < n:
                s = size[mv[pos]]
                if not s:
                    break
                pos += s
                remaining -= 1
        else:
            k = kind[b]
            if k <= _K_MAP32:
                if k == 0:
                    raise DecodeError(f"invalid msgpack byte 0x{b:02x} at offset {pos}")
                if in_map and not remaining & 1:
                    raise DecodeError(f"a dict key at offset {pos} is a container "
                                      f"(keys may be str, int, float, bool, None or bytes)")
                if k == _K_ARR or k == _K_MAP:
                    count = b & 15
                    pos += 1
                elif k == _K_ARR16 or k == _K_MAP16:
                    count = _u16(mv, pos + 1)[0]
                    pos += 3
                else:
                    count = _u32(mv, pos + 1)[0]
                    pos += 5
                if len(stack) >= max_depth:
                    raise DecodeError(f"containers nested deeper than the limit of {max_depth}")
                is_map = k >= _K_MAP
                if count > max_length + (not is_map):  # + 1: a tuple's marker
                    what = "dict" if is_map else "list or tuple"
                    raise DecodeError(f"{what} of {count} items exceeds the limit of {max_length}")
                items += count
                if items > max_items + 1:  # + 1: a marker not yet seen
                    raise DecodeError(f"more than {max_items} items in the value's containers")
                if count:
                    stack.append((remaining - 1, in_map, first))
                    in_map = is_map
                    if is_map:
                        remaining = 2 * count
                        first = -1
                    else:
                        remaining = count
                        first = pos
                    continue
                remaining -= 1
            elif k >= _K_EXT8:
                if k == _K_FIXEXT:
                    plen, code, hlen = 1 << (b - 0xD4), mv[pos + 1], 2
                elif k == _K_EXT8:
                    plen, code, hlen = mv[pos + 1], mv[pos + 2], 3
                elif k == _K_EXT16:
                    plen, code, hlen = _u16(mv, pos + 1)[0], mv[pos + 3], 4
                else:
                    plen, code, hlen = _u32(mv, pos + 1)[0], mv[pos + 5], 6
                if code == EXT_ARRAY:
                    if in_map and not remaining & 1:
                        raise DecodeError(f"a dict key at offset {pos} is an array "
                                          f"(keys may be str, int, float, bool, None or bytes)")
                    if plen > max_ext:
                        raise DecodeError(f"array of {plen} bytes exceeds the limit of {lim.max_array_bytes}")
                elif code == EXT_TUPLE:
                    if pos != first:
                        raise DecodeError(f"tuple marker (ext 2) at offset {pos} does not start an array")
                    if plen:
                        raise DecodeError("tuple marker (ext 2) with a payload")
                    items -= 1
                elif code == EXT_BIGINT:
                    if plen > lim.max_int_bytes:
                        raise DecodeError(f"int of {plen} bytes exceeds the limit of {lim.max_int_bytes}")
                else:
                    code = code - 256 if code > 127 else code
                    what = "msgpack timestamp (ext -1)" if code == -1 else f"unknown extension type {code}"
                    raise DecodeError(f"{what} at offset {pos}; function values never contain one")
                pos += hlen + plen
                remaining -= 1
            else:
                if k == _K_BIN8:
                    pos += 2 + mv[pos + 1]
                elif k == _K_BIN16:
                    pos += 3 + _u16(mv, pos + 1)[0]
                else:
                    pos += 5 + _u32(mv, pos + 1)[0]
                remaining -= 1
        while not remaining:
            if not stack:
                if pos > n:
                    raise DecodeError(f"truncated value ({n} bytes)")
                if pos < n:
                    raise DecodeError(f"trailing bytes after the value ({n - pos} of {n})")
                if items > max_items:
                    raise DecodeError(f"more than {max_items} items in the value's containers")
                return
            remaining, in_map, first = stack.pop()


class _Mark:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<tuple marker>"


_MARK = _Mark()
_U8 = np.dtype(np.uint8)


def _array(buf: Any, start: int, length: int, limits: ValueLimits, writable: bool, view: bool) -> Any:
    """An ext-1 payload at ``buf[start:start+length]`` → ndarray (or numpy scalar)."""
    u = msgpack.Unpacker(
        raw=False, use_list=True, max_buffer_size=_HDR_MAX, max_str_len=8, max_bin_len=_MAX_PAD,
        max_array_len=MAX_NDIM + 1, max_map_len=0, max_ext_len=0,
    )
    u.feed(buf[start : start + min(length, _HDR_MAX)])
    try:
        hdr = u.unpack()
    except msgpack.OutOfData:
        raise DecodeError("truncated array header") from None
    off = u.tell()
    if type(hdr) is not list or len(hdr) != 3:
        raise DecodeError("array header is not [dtype, shape, pad]")
    dstr, shape, pad = hdr
    dt = _DTYPES.get(dstr) if type(dstr) is str else None
    if dt is None:
        raise DecodeError(f"array dtype {dstr!r} is not an allowed numeric dtype")
    if type(pad) is not bytes:
        raise DecodeError("array header padding is not bin")
    datalen = length - off
    if datalen > limits.max_array_bytes:
        raise DecodeError(f"array of {datalen} bytes exceeds the limit of {limits.max_array_bytes}")
    if shape is None:
        count = 1
    elif type(shape) is list:
        if len(shape) > MAX_NDIM:
            raise DecodeError(f"array of {len(shape)} dimensions exceeds {MAX_NDIM}")
        count = 1
        for d in shape:
            if type(d) is not int or not 0 <= d <= MAX_DIM:
                raise DecodeError(f"invalid array dimension {d!r} in shape")
            count *= d
    else:
        raise DecodeError("array shape is neither an array of uints nor nil")
    if count * dt.itemsize != datalen:
        raise DecodeError(
            f"array data is {datalen} bytes but dtype {dstr} and shape {shape} need {count * dt.itemsize}"
        )
    offset = start + off
    if dt.kind == "b" and count and int(np.frombuffer(buf, _U8, count, offset).max()) > 1:
        raise DecodeError("bool array data contains bytes other than 0 and 1")
    if shape is None:
        return np.frombuffer(buf, dt, 1, offset)[0]
    arr = np.frombuffer(buf, dt, count, offset).reshape(shape)
    if writable:
        return arr.copy()
    if view and arr.flags.writeable:
        arr.flags.writeable = False  # a view onto the caller's (writable) buffer
    return arr


class _Decoder:
    """msgpack's hooks, for a buffer `_scan` has accepted."""

    __slots__ = ("limits", "writable")

    def __init__(self, limits: ValueLimits, writable: bool) -> None:
        self.limits = limits
        self.writable = writable

    def list_hook(self, lst: list[Any]) -> list[Any] | tuple[Any, ...]:
        if lst and lst[0] is _MARK:
            del lst[0]
            return tuple(lst)
        if len(lst) > self.limits.max_length:  # _scan allowed one more, for a marker
            raise DecodeError(f"list of {len(lst)} items exceeds the limit of {self.limits.max_length}")
        return lst

    def map_hook(self, pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
        d = dict(pairs)
        if len(d) != len(pairs):
            raise DecodeError("duplicate key in a dict")
        return d

    def ext_hook(self, code: int, data: bytes) -> Any:
        if code == EXT_ARRAY:
            return _array(data, 0, len(data), self.limits, self.writable, False)
        if code == EXT_TUPLE:
            return _MARK
        if code == EXT_BIGINT:
            n = len(data)
            v = int.from_bytes(data, "big", signed=True)
            if _INT_MIN <= v < _INT_END or n != ((v if v >= 0 else ~v).bit_length() + 8) // 8:
                raise DecodeError("non-canonical big int (ext 3)")
            return v
        raise DecodeError(f"unknown extension type {code}")  # _scan stops these first

    def run(self, mv: memoryview) -> Any:
        n = len(mv)
        lim = self.limits
        return msgpack.unpackb(
            mv,
            raw=False,
            use_list=True,
            strict_map_key=False,
            ext_hook=self.ext_hook,
            list_hook=self.list_hook,
            object_pairs_hook=self.map_hook,
            max_str_len=n,
            max_bin_len=n,
            max_array_len=min(lim.max_length + 1, n),
            max_map_len=min(lim.max_length, n // 2),
            max_ext_len=min(n, max(lim.max_array_bytes + _HDR_MAX, lim.max_int_bytes)),
        )


def _top_ext(mv: memoryview) -> tuple[int, int, int] | None:
    """(type code, payload start, payload length) when the whole buffer is one ext."""
    n = len(mv)
    b0 = mv[0]
    if b0 == 0xC9 and n >= 6:
        length, code, start = _u32(mv, 1)[0], mv[5], 6
    elif b0 == 0xC8 and n >= 4:
        length, code, start = _u16(mv, 1)[0], mv[3], 4
    elif b0 == 0xC7 and n >= 3:
        length, code, start = mv[1], mv[2], 3
    elif 0xD4 <= b0 <= 0xD8 and n >= 2:
        length, code, start = 1 << (b0 - 0xD4), mv[1], 2
    else:
        return None
    if start + length != n:
        return None
    return (code - 256 if code > 127 else code), start, length


def decode_value(
    buf: bytes | bytearray | memoryview,
    *,
    limits: ValueLimits = DEFAULT_LIMITS,
    writable: bool = False,
) -> Any:
    """Decode one value made by `encode_value`; raises `DecodeError` (only) on malformed input.

    Arrays are read-only views (see the module docstring); ``writable=True``
    copies each into a private writable array.
    """
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    n = len(mv)
    if n > limits.max_bytes:
        raise DecodeError(f"value of {n} bytes exceeds the limit of {limits.max_bytes}")
    if n == 0:
        raise DecodeError("empty value")
    try:
        top = _top_ext(mv)
        if top is not None and top[0] == EXT_ARRAY:  # the whole value is one array: a view onto `buf`
            if top[2] > limits.max_array_bytes + _HDR_MAX:
                raise DecodeError(f"array of {top[2]} bytes exceeds the limit of {limits.max_array_bytes}")
            return _array(mv, top[1], top[2], limits, writable, True)
        _scan(mv, limits)
        return _Decoder(limits, writable).run(mv)
    except DecodeError:
        raise
    except msgpack.StackError:  # only with a max_depth above msgpack's own limit
        raise DecodeError("containers nested deeper than msgpack's limit of 1024") from None
    except (IndexError, struct.error):  # _scan read past the end
        raise DecodeError(f"truncated value ({n} bytes)") from None
    except Exception as exc:  # msgpack, numpy and the hooks raise several types; all mean "malformed"
        raise DecodeError(f"malformed value: {exc.__class__.__name__}: {exc}") from None
