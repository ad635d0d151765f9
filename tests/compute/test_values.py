"""The codec of function arguments and results (icnd.compute.values).

- every supported value round-trips with its exact type (tuples stay tuples,
  numpy dtypes and byte orders are kept, floats bit for bit);
- refused types raise a clear TypeError/ValueError naming where;
- decoding enforces ValueLimits and raises DecodeError, nothing else, on any
  malformed input (hypothesis fuzzing of random and mutated encodings);
- large arrays: one copy on encode, zero copies on decode of a top-level array;
  a crafted header claiming a huge shape fails before allocating anything.
"""

from __future__ import annotations

import collections
import enum
import math
import os
import struct
import time
import tracemalloc
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import icnd.compute  # noqa: F401  (the package must stay importable)
from icnd.compute.values import (
    ALLOWED_DTYPES,
    EXT_ARRAY,
    EXT_BIGINT,
    EXT_TUPLE,
    MAX_DEPTH,
    MAX_INT_BYTES,
    ValueLimits,
    decode_value,
    describe,
    encode_value,
    encode_values,
)
from icnd.errors import DecodeError

# ICND_FUZZ_EXAMPLES=20000 for a longer fuzzing run
SETTINGS = settings(
    max_examples=int(os.environ.get("ICND_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- helpers ------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Exact equality: same types all the way down, floats and arrays bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.dtype.str == b.dtype.str and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items())
        )
    return a == b


def rt(value: Any, **kw: Any) -> Any:
    return decode_value(encode_value(value), **kw)


def assert_rt(value: Any) -> Any:
    out = rt(value)
    assert same(value, out), (value, out)
    return out


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def array_ext(dtype: Any, shape: Any, data: bytes, pad: bytes = b"") -> msgpack.ExtType:
    return msgpack.ExtType(EXT_ARRAY, pack([dtype, shape, pad]) + data)


def ext32(code: int, payload: bytes) -> bytes:
    return b"\xc9" + len(payload).to_bytes(4, "big") + bytes([code & 0xFF]) + payload


def bad(buf: bytes, match: str | None = None, **kw: Any) -> DecodeError:
    with pytest.raises(DecodeError, match=match) as info:
        decode_value(buf, **kw)
    return info.value


SHAPES = [(), (0,), (1,), (5,), (2, 3), (2, 3, 4), (0, 3), (3, 0, 2), (1, 1, 1, 1)]


# --- round trips: scalars and containers --------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None, True, False, 0, 1, -1, 127, 128, -32, -33, 255, 65536,
        2**63 - 1, -(2**63), 2**64 - 1,  # the ends of msgpack's native range
        2**64, -(2**63) - 1, 2**200, -(2**200), -(2**64), -(2**71), 2**71 - 1,  # big ints (ext 3)
        0.0, -0.0, 1.5, -1e308, 5e-324, math.inf, -math.inf, math.nan,
        "", "hello", "héllo ∑ 🎉", "\x00", "a" * 70000,
        b"", b"\x00\xff", bytes(range(256)), b"x" * 70000,
    ],
)
def test_scalar_round_trip(value: Any) -> None:
    assert_rt(value)


def test_nan_payload_and_negative_zero_survive_bit_for_bit() -> None:
    odd_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_DEAD_BEEF))[0]
    out = rt([odd_nan, -0.0, math.inf])
    assert struct.pack("<d", out[0]) == struct.pack("<d", odd_nan)
    assert math.copysign(1.0, out[1]) == -1.0
    assert out[2] == math.inf


def test_big_int_limit_on_encode() -> None:
    biggest = 2 ** (MAX_INT_BYTES * 8 - 1) - 1
    assert rt(biggest) == biggest
    assert rt(-biggest - 1) == -biggest - 1
    with pytest.raises(ValueError, match="cannot send an int as a function argument"):
        encode_value(biggest + 1)


def test_tuples_stay_tuples_and_lists_stay_lists() -> None:
    for v in [(), [], (1,), [1], (1, 2), [1, 2], ((),), [[]], ([],), [()], (1, [2, (3, [4])]),
              [(1, 2), (3, 4)], {"t": (1,), "l": [1]}, ((((),),),)]:
        assert_rt(v)


def test_nested_containers() -> None:
    value = {
        "name": "job",
        "params": {"alpha": 0.5, "iters": 10, "flags": [True, False, None]},
        "shape": (3, 4),
        "blobs": [b"a", b"", bytes(70000)],
        "nested": [[[[1, 2], (3,)], {}], ()],
        "big": [2**100, -(2**100), 2**64 - 1],
        "array": np.arange(6, dtype=np.int16).reshape(2, 3),
        "arrays": (np.ones(3), np.zeros((2, 2), dtype=np.complex64)),
    }
    assert_rt(value)


def test_dict_keys_of_every_supported_type_in_order() -> None:
    d = {"s": 1, 7: 2, -3: 3, 2.5: 4, True: 5, None: 6, b"k": 7, 2**70: 8, "": 9, math.inf: 10}
    out = assert_rt(d)
    assert list(out) == list(d)


def test_depth_up_to_the_limit_round_trips() -> None:
    v: Any = 1
    for i in range(MAX_DEPTH):
        v = [v] if i % 3 == 0 else ((v,) if i % 3 == 1 else {"k": v})
    assert_rt(v)


def test_subclasses_are_sent_as_their_base_type() -> None:
    class Color(enum.IntEnum):
        RED = 1

    class MyStr(str):
        def __str__(self) -> str:
            return "not me"

    Point = collections.namedtuple("Point", "x y")
    value = [Color.RED, MyStr("abc"), Point(1, 2), collections.OrderedDict(a=1), bytearray(b"ba"),
             memoryview(b"mv"), {Color.RED: "enum key"}]
    out = rt(value)
    assert same(out, [1, "abc", (1, 2), {"a": 1}, b"ba", b"mv", {1: "enum key"}])


def test_big_bytearray_and_memoryviews() -> None:
    big = bytearray(range(256)) * 1000
    assert rt(big) == bytes(big)
    arr = np.arange(100000, dtype=np.int32)
    assert rt(memoryview(arr)) == arr.tobytes()  # non-byte format: its raw bytes
    assert rt(memoryview(arr)[::2]) == arr[::2].tobytes()  # non-contiguous
    assert rt(memoryview(b"abc")) == b"abc"


def test_encode_values_encodes_each_argument_separately() -> None:
    args = [1, "two", np.arange(3), (4,)]
    bufs = encode_values(args)
    assert len(bufs) == 4 and all(type(b) is bytes for b in bufs)
    assert bufs == [encode_value(a) for a in args]
    assert same([decode_value(b) for b in bufs], args)
    assert encode_values([]) == []
    assert encode_values(x for x in [1, 2]) == [encode_value(1), encode_value(2)]


def test_encoding_is_deterministic() -> None:
    v = {"a": [1.5, (2, b"x")], "arr": np.arange(10, dtype=">i4"), "s": np.float32(2)}
    assert encode_value(v) == encode_value(v)
    assert encode_value(v) == encode_value({"a": [1.5, (2, b"x")], "arr": np.arange(10, dtype=">i4"),
                                            "s": np.float32(2)})


def test_concurrent_encoding_from_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    values = [{"i": i, "l": list(range(i % 50)), "a": np.full(1000, i), "t": (i, str(i))} for i in range(200)]
    expected = [encode_value(v) for v in values]
    with ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            assert list(pool.map(encode_value, values)) == expected
            assert all(same(d, v) for d, v in zip(pool.map(decode_value, expected), values))


# --- numpy -------------------------------------------------------------------------


@pytest.mark.parametrize("dstr", sorted(ALLOWED_DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_array_round_trip_every_dtype_and_shape(dstr: str, shape: tuple) -> None:
    dt = np.dtype(dstr)
    n = int(np.prod(shape))
    if dt.kind == "b":
        a = (np.arange(n) % 3 == 0).reshape(shape)
    else:
        a = (np.arange(n) * 7 - 3).astype(dt.newbyteorder("=")).astype(dt).reshape(shape)
    assert a.dtype.str == dstr
    out = assert_rt(a)
    assert out.dtype.str == dstr  # byte order kept
    assert not out.flags.writeable
    nested = rt([a, (a,)])
    assert same(nested, [a, (a,)])


def test_array_with_nan_inf_and_special_values() -> None:
    for dt in ["<f2", ">f4", "<f8", ">c8", "<c16"]:
        a = np.array([np.nan, np.inf, -np.inf, -0.0, 1.0], dtype=dt)
        assert_rt(a)
        assert_rt({"x": a})


def test_non_contiguous_inputs_decode_equal() -> None:
    base = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    for a in [np.asfortranarray(base), base[:, ::2, :], base.T, base[..., 1], base[::-1], base.astype(">f8")[::2]]:
        assert not a.flags.c_contiguous or a is base
        out = rt(a)
        assert out.shape == a.shape and out.dtype == a.dtype
        assert np.array_equal(out, a)
        assert out.flags.c_contiguous


def test_big_endian_array_keeps_byte_order_and_values() -> None:
    a = np.arange(12, dtype=">f4").reshape(3, 4)
    out = rt(a)
    assert out.dtype.str == ">f4" and np.array_equal(out, a)
    assert np.array_equal(out.astype("<f4"), np.arange(12, dtype="<f4").reshape(3, 4))


def test_numpy_scalars_keep_their_type() -> None:
    for v in [np.float32(1.5), np.float64(-2.25), np.int8(-5), np.uint64(2**64 - 1), np.bool_(True),
              np.complex64(1 + 2j), np.float16(0.5), np.int64(-(2**63))]:
        out = assert_rt(v)
        assert type(out) is type(v)
    assert type(rt(np.float64(3.0))) is np.float64  # not flattened to float although a float subclass
    assert same(rt([np.float32(np.nan), {"k": np.uint8(7)}]), [np.float32(np.nan), {"k": np.uint8(7)}])
    # 0-d arrays stay 0-d arrays, distinct from scalars
    z = rt(np.array(3.5, dtype=np.float32))
    assert type(z) is np.ndarray and z.shape == () and z.dtype == np.float32
    # numpy str/bytes scalars are sent as str/bytes
    assert same(rt([np.str_("s"), np.bytes_(b"b")]), ["s", b"b"])


def test_bool_arrays_with_non_canonical_bytes_are_normalised_on_encode() -> None:
    a = np.array([0, 1, 2, 255], dtype=np.uint8).view(np.bool_)
    out = rt(a)
    assert out.view(np.uint8).tolist() == [0, 1, 1, 1]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_ndarray_subclasses() -> None:
    m = np.asmatrix(np.arange(4).reshape(2, 2))
    out = rt(m)
    assert type(out) is np.ndarray and np.array_equal(out, np.arange(4).reshape(2, 2))
    with pytest.raises(TypeError, match="masked array"):
        encode_value(np.ma.masked_array([1, 2], mask=[0, 1]))


def test_decoded_top_level_array_is_a_read_only_zero_copy_view() -> None:
    a = np.arange(1000, dtype=np.float64)
    buf = encode_value(a)
    out = decode_value(buf)
    assert np.shares_memory(out, np.frombuffer(buf, np.uint8))
    assert not out.flags.writeable
    assert out.flags.aligned and out.__array_interface__["data"][0] % 16 == 0
    with pytest.raises(ValueError):
        out[0] = 1.0
    # a writable received buffer gives a read-only view as well
    ba = bytearray(buf)
    view = decode_value(ba)
    assert not view.flags.writeable and np.shares_memory(view, np.frombuffer(ba, np.uint8))
    # a memoryview slice of a larger buffer works
    big = b"junk" + buf + b"more"
    assert np.array_equal(decode_value(memoryview(big)[4 : 4 + len(buf)]), a)


def test_writable_copies() -> None:
    a = np.arange(10, dtype=np.int32)
    buf = encode_value(a)
    w = decode_value(buf, writable=True)
    assert w.flags.writeable and w.flags.owndata and not np.shares_memory(w, np.frombuffer(buf, np.uint8))
    w[0] = 99
    assert decode_value(buf)[0] == 0
    nested = decode_value(encode_value({"a": a, "t": (a,)}), writable=True)
    assert nested["a"].flags.writeable and nested["t"][0].flags.writeable
    ro = decode_value(encode_value({"a": a}))
    assert not ro["a"].flags.writeable


def test_nested_arrays_are_aligned() -> None:
    for dt in ["<f8", "<c16", "<i4", ">f8"]:
        out = rt([1, "x", (np.arange(7, dtype=dt), {"k": np.ones((3, 3), dtype=dt)})])
        for arr in (out[2][0], out[2][1]["k"]):
            assert arr.flags.aligned and arr.__array_interface__["data"][0] % 16 == 0


def test_large_float32_array_one_copy_on_encode_none_on_decode() -> None:
    a = np.random.default_rng(1).random((2048, 2048), dtype=np.float32)  # 16 MiB
    assert a.nbytes == 16 << 20
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        buf = encode_value(a)
        enc_peak = tracemalloc.get_traced_memory()[1] - base
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = decode_value(buf)
        dec_peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert len(buf) - a.nbytes < 64
    assert enc_peak < a.nbytes * 1.1, enc_peak  # exactly one copy: into the returned bytes
    assert dec_peak < 1 << 20, dec_peak  # no copy
    assert np.array_equal(out, a) and np.shares_memory(out, np.frombuffer(buf, np.uint8))
    # Fortran order costs one more copy (to make it C-contiguous), no more
    f = np.asfortranarray(a)
    tracemalloc.start()
    try:
        buf2 = encode_value(f)
        f_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f_peak < a.nbytes * 2.1
    assert buf2 == buf


# --- wire format ---------------------------------------------------------------------


def test_wire_format_examples() -> None:
    assert encode_value((1, 2)) == bytes.fromhex("93 c7 00 02 01 02")
    assert encode_value(()) == bytes.fromhex("91 c7 00 02")
    assert encode_value([1, (2,)]) == bytes.fromhex("92 01 92 c7 00 02 02")
    assert encode_value(2**64) == bytes.fromhex("c7 09 03 01 00 00 00 00 00 00 00 00")
    assert encode_value(-(2**63) - 1) == bytes.fromhex("c7 09 03 ff 7f ff ff ff ff ff ff ff")
    # plain msgpack values are plain msgpack
    assert encode_value({"a": [1, 2.5, None, b"x"]}) == pack({"a": [1, 2.5, None, b"x"]})


def test_array_wire_layout() -> None:
    a = np.arange(6, dtype="<i4").reshape(2, 3)
    buf = encode_value(a)
    assert buf[0] == 0xC9 and buf[5] == EXT_ARRAY
    assert int.from_bytes(buf[1:5], "big") == len(buf) - 6
    ext = msgpack.unpackb(buf)
    assert isinstance(ext, msgpack.ExtType) and ext.code == EXT_ARRAY
    u = msgpack.Unpacker()
    u.feed(ext.data)
    dtype, shape, pad = u.unpack()
    assert (dtype, shape) == ("<i4", [2, 3]) and pad == bytes(len(pad)) and len(pad) < 16
    assert ext.data[u.tell():] == a.tobytes()
    assert (6 + u.tell()) % 16 == 0  # data aligned relative to the value's start
    # a numpy scalar has a nil shape
    s = msgpack.unpackb(encode_value(np.float32(1.5)))
    u = msgpack.Unpacker()
    u.feed(s.data)
    assert u.unpack() == ["<f4", None, b""] and s.data[u.tell():] == np.float32(1.5).tobytes()


def test_decoder_accepts_other_ext_forms_and_padding() -> None:
    a = np.arange(3, dtype="<u2")
    for pad in [b"", b"\x00" * 5, b"junk"]:
        ext = array_ext("<u2", [3], a.tobytes(), pad)
        assert same(decode_value(pack(ext)), a)  # msgpack's shortest ext form
        assert same(decode_value(pack([ext, [ext]])), [a, [a]])
    assert same(decode_value(pack(array_ext("|i1", None, b"\x05"))), np.int8(5))
    bad(pack(array_ext("<i1", None, b"\x05")), "not an allowed")  # only numpy's own dtype.str spellings


# --- refused values ------------------------------------------------------------------


class Custom:
    pass


@pytest.mark.parametrize(
    ("value", "exc", "match"),
    [
        ({1, 2}, TypeError, r"cannot send a set as a function argument: only None, bool"),
        (frozenset(), TypeError, "cannot send a frozenset"),
        (Custom(), TypeError, r"cannot send a .*Custom as a function argument"),
        (complex(1, 2), TypeError, "cannot send a complex"),
        (np.array([object()]), TypeError, r"cannot send an ndarray of dtype object as a function argument: .*pickl"),
        (np.array([1, 2], dtype="datetime64[s]"), TypeError, "datetime64"),
        (np.array([1], dtype="timedelta64[s]"), TypeError, "timedelta64"),
        (np.datetime64("2020-01-01"), TypeError, "datetime64"),
        (np.array(["a"]), TypeError, "string arrays"),
        (np.array([b"a"]), TypeError, "string arrays"),
        (np.zeros(2, dtype=[("a", "<i4")]), TypeError, "structured"),
        (np.void(b"ab"), TypeError, "cannot send a numpy void"),
        ({(1, 2): 3}, TypeError,
         r"cannot send a tuple as a function argument: it is a dict key.*\(at value\[\(1, 2\)\] \(key\)\)"),
        ({np.int64(1): 3}, TypeError, "dict key"),
        ({"a": [1, {"b": {1}}]}, TypeError, r"\(at value\['a'\]\[1\]\['b'\]\)"),
        ("\udc80", ValueError, "cannot send a str as a function argument: it is not valid Unicode"),
        (["ok", "\ud800"], ValueError, r"not valid Unicode.*\(at value\[1\]\)"),
        (np.zeros((1,) * 33), ValueError, "33 dimensions"),
        (2 ** (8 * MAX_INT_BYTES), ValueError, "cannot send an int"),
        (type, TypeError, "cannot send a type"),
        (print, TypeError, "builtin_function_or_method"),
    ],
    ids=lambda v: None if isinstance(v, (str, type)) else describe(v)[:40],
)
def test_refused_values(value: Any, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        encode_value(value)


def test_longdouble_refused_where_it_exists() -> None:
    if np.dtype(np.longdouble).itemsize <= 8:
        pytest.skip("longdouble is float64 here")
    with pytest.raises(TypeError, match="not portable"):
        encode_value(np.zeros(2, dtype=np.longdouble))


def test_cycles_and_excessive_depth_refused() -> None:
    cyc: list = []
    cyc.append(cyc)
    with pytest.raises(ValueError, match="nested deeper than 32 levels"):
        encode_value(cyc)
    d: dict = {}
    d["self"] = d
    with pytest.raises(ValueError, match="contains itself"):
        encode_value(d)
    v: Any = 0
    for _ in range(MAX_DEPTH + 1):
        v = (v,)
    with pytest.raises(ValueError, match="deeper"):
        encode_value(v)


def test_encode_values_names_the_argument() -> None:
    with pytest.raises(TypeError, match=r"at argument 1: value\[0\]"):
        encode_values([1, [{3}]])


# --- describe ----------------------------------------------------------------------


def test_describe() -> None:
    assert describe(np.zeros((3, 4), dtype=np.float32)) == "ndarray float32 (3, 4)"
    assert describe(np.zeros(3, dtype=">i8")) == "ndarray int64 big-endian (3,)"
    assert describe(np.array(1.0)) == "ndarray float64 ()"
    assert describe(np.float32(1)) == "numpy float32 scalar"
    assert describe(None) == "None"
    assert describe(True) == "bool"
    assert describe(3) == "int"
    assert describe(2**100) == "int (101 bits)"
    assert describe(1.0) == "float"
    assert describe("abc") == "str of 3 chars"
    assert describe(b"ab") == "bytes of 2 bytes"
    assert describe([1, 2]) == "list of 2"
    assert describe((1,)) == "tuple of 1"
    assert describe({}) == "dict of 0"
    assert describe({1}) == "set"
    assert describe(Custom()).endswith("Custom")


# --- decode: limits ----------------------------------------------------------------


def nested_lists(depth: int) -> Any:
    v: Any = 0
    for _ in range(depth):
        v = [v]
    return v


def test_limit_total_bytes() -> None:
    buf = encode_value(b"x" * 1000)
    assert decode_value(buf, limits=ValueLimits(max_bytes=len(buf))) == b"x" * 1000
    bad(buf, r"value of 1003 bytes exceeds the limit of 1002", limits=ValueLimits(max_bytes=len(buf) - 1))


def test_limit_depth() -> None:
    assert decode_value(encode_value(nested_lists(32))) == nested_lists(32)
    bad(pack(nested_lists(33)), "nested deeper than the limit of 32")
    bad(pack(nested_lists(500)), "nested deeper")
    bad(b"\x91" * 5000 + b"\x00", "nested deeper")  # far beyond msgpack's own stack (1024)
    bad(b"\x91" * 5000 + b"\x00", "nested deeper", limits=ValueLimits(max_depth=10**6))
    deep_dict: Any = 0
    for _ in range(33):
        deep_dict = {"k": deep_dict}
    bad(pack(deep_dict), "nested deeper")
    small = ValueLimits(max_depth=2)
    assert decode_value(encode_value([(1,), {"a": [np.ones(2)]}][:1]), limits=small) == [(1,)]
    bad(encode_value([(1,), {"a": [2]}]), "nested deeper than the limit of 2", limits=small)
    bad(encode_value(((((),),),)), "nested deeper", limits=small)


def test_limit_container_length() -> None:
    lim = ValueLimits(max_length=3)
    assert decode_value(encode_value([(1, 2, 3), {1: 1, 2: 2, 3: 3}]), limits=ValueLimits(max_length=3)) is not None
    bad(encode_value([1, 2, 3, 4]), "exceeds", limits=lim)
    bad(encode_value((1, 2, 3, 4)), "tuple of 5 items exceeds the limit of 3", limits=lim)
    bad(encode_value([1, [1, 2, 3, 4]]), "list of 4 items exceeds the limit of 3", limits=lim)
    bad(encode_value({1: 1, 2: 2, 3: 3, 4: 4}), "exceeds", limits=lim)
    bad(encode_value(list(range(2**20 + 1))), "exceeds")  # default limit: 2**20


def test_limit_total_items() -> None:
    value = [[1, 2, 3]] * 4  # 4 + 12 items
    assert decode_value(encode_value(value), limits=ValueLimits(max_items=16)) == value
    bad(encode_value(value), "more than 15 items", limits=ValueLimits(max_items=15))


def test_limit_array_bytes() -> None:
    a = np.zeros(100, dtype=np.float64)
    assert decode_value(encode_value(a), limits=ValueLimits(max_array_bytes=800)).shape == (100,)
    lim = ValueLimits(max_array_bytes=799)
    bad(encode_value(a), "array of 800 bytes exceeds the limit of 799", limits=lim)
    bad(encode_value([a]), "exceeds", limits=lim)
    bad(encode_value({"k": (a,)}), "exceeds", limits=lim)


def test_limit_int_bytes() -> None:
    v = 2**200
    assert decode_value(encode_value(v), limits=ValueLimits(max_int_bytes=26)) == v
    bad(encode_value(v), "int of 26 bytes exceeds the limit of 25", limits=ValueLimits(max_int_bytes=25))


def test_limits_validate_themselves() -> None:
    with pytest.raises(ValueError):
        ValueLimits(max_depth=-1)


# --- decode: malformed input ----------------------------------------------------------


@pytest.mark.parametrize(
    ("buf", "match"),
    [
        (b"", "empty"),
        (b"\x01\x02", "trailing bytes"),
        (b"\x92\x01", "truncated"),
        (b"\xc1", "invalid msgpack byte 0xc1"),
        (b"\x91\xc1", "invalid msgpack byte 0xc1 at offset 1"),
        (b"\xdd\x00\x00", "truncated"),
        (b"\xc4\x05ab", "truncated"),
        (b"\xa2\xff\xfe", "malformed"),  # invalid UTF-8
        (pack(msgpack.ExtType(9, b"x")), "unknown extension type 9"),
        (b"\x91\xd4\xfb\x00", "unknown extension type -5"),
        (pack(msgpack.Timestamp(1, 0)), "timestamp"),
        (pack([1, msgpack.Timestamp(1, 0)]), "timestamp"),
        (pack({"a": msgpack.Timestamp(1, 0)}), "timestamp"),
        (pack(msgpack.ExtType(EXT_TUPLE, b"")), "tuple marker"),
        (pack([1, msgpack.ExtType(EXT_TUPLE, b"")]), "tuple marker"),
        (pack({"k": msgpack.ExtType(EXT_TUPLE, b"")}), "tuple marker"),
        (pack({msgpack.ExtType(EXT_TUPLE, b""): 1}), "tuple marker"),
        (pack([msgpack.ExtType(EXT_TUPLE, b"x")]), "tuple marker .* with a payload"),
        (b"\x82\x01\x01\x01\x02", "duplicate key"),
        (b"\x82\x01\x01\xc3\x02", "duplicate key"),  # 1 == True
        (b"\x81\x91\x01\x02", "malformed|dict key"),  # list key
        (b"\x81\x92\xc7\x00\x02\x01\x02", "dict key"),  # tuple key
        (pack({msgpack.ExtType(EXT_ARRAY, pack(["|i1", None, b""]) + b"\x01"): 1}), "dict key"),
        (pack(msgpack.ExtType(EXT_BIGINT, b"")), "non-canonical big int"),
        (pack(msgpack.ExtType(EXT_BIGINT, b"\x05")), "non-canonical"),  # fits msgpack's int
        (pack(msgpack.ExtType(EXT_BIGINT, b"\x00\x01" + bytes(8))), "non-canonical"),  # not minimal
        (pack(msgpack.ExtType(EXT_BIGINT, b"\xff\xff" + bytes(8))), "non-canonical"),
        (pack(array_ext("|O", [1], bytes(8))), "dtype '|O' is not an allowed"),
        (pack(array_ext("<U1", [1], bytes(4))), "not an allowed"),
        (pack(array_ext("<M8[s]", [1], bytes(8))), "not an allowed"),
        (pack(array_ext("|V8", [1], bytes(8))), "not an allowed"),
        (pack(array_ext("<f16", [1], bytes(16))), "not an allowed"),
        (pack(array_ext(7, [1], bytes(8))), "not an allowed"),
        (pack(array_ext("<f8", [2], bytes(8))), "8 bytes but dtype <f8 and shape \\[2\\] need 16"),
        (pack(array_ext("<f8", [1], bytes(9))), "need 8"),
        (pack(array_ext("<f8", None, bytes(16))), "need 8"),
        (pack(array_ext("<f8", [-1], b"")), "invalid array dimension -1"),
        (pack(array_ext("<f8", [2**41], b"")), "invalid array dimension"),
        (pack(array_ext("<f8", [1.0], bytes(8))), "invalid array dimension"),
        (pack(array_ext("<f8", [1] * 33, bytes(8))), "malformed|33 dimensions"),
        (pack(array_ext("<f8", {"a": 1}, bytes(8))), "malformed|shape"),
        (pack(array_ext("<f8", [1], bytes(8), pad="s")), "padding"),  # type: ignore[arg-type]  # wrong input on purpose: refused
        (pack(msgpack.ExtType(EXT_ARRAY, pack(["<f8", [1]]) + bytes(8))), "header"),
        (pack(msgpack.ExtType(EXT_ARRAY, b"\x93\xa3<f8")), "truncated array header"),
        (pack(msgpack.ExtType(EXT_ARRAY, b"")), "truncated array header"),
        (pack(array_ext("|b1", [3], b"\x00\x01\x02")), "bool array data contains bytes other than 0 and 1"),
        (ext32(EXT_ARRAY, b"")[:-1], "truncated"),
        (b"\x91" + ext32(EXT_ARRAY, pack(["<f8", [1], b""]) + bytes(8))[:-1], "truncated"),
    ],
)
def test_malformed_input_raises_decode_error(buf: bytes, match: str) -> None:
    bad(buf, match)
    bad(bytearray(buf), match)
    bad(memoryview(buf), match)


def test_decode_rejects_programming_errors_distinctly() -> None:
    with pytest.raises(TypeError):
        decode_value("not bytes")  # type: ignore[arg-type]  # wrong input on purpose: refused


# --- decode: crafted lengths never allocate -----------------------------------------------


def _fails_fast(buf: bytes, **kw: Any) -> None:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.perf_counter()
        with pytest.raises(DecodeError):
            decode_value(buf, **kw)
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert elapsed < 0.5, elapsed
    assert peak < 4 * len(buf) + (1 << 20), peak


def test_crafted_huge_shape_fails_fast_without_allocating() -> None:
    for shape in ([2**40, 2**40, 2**40], [2**40] * 32, [2**40, 2**20], [1 << 36], [2**40, 0, 2**40, 3]):
        hdr = pack(["<c16", shape, b""])
        _fails_fast(ext32(EXT_ARRAY, hdr + bytes(16)))
        _fails_fast(pack([1, msgpack.ExtType(EXT_ARRAY, hdr + bytes(16))]))
    # a claimed payload far longer than the buffer
    _fails_fast(b"\xc9\xff\xff\xff\xff\x01" + pack(["<f8", [2**29], b""]) + bytes(64))
    _fails_fast(b"\x91\xc9\xff\xff\xff\xff\x01" + bytes(64))
    # containers and strings claiming 4 G elements/bytes
    for head in (b"\xdd", b"\xdf", b"\xdb", b"\xc6"):
        _fails_fast(head + b"\xff\xff\xff\xff" + bytes(16))
    # many nested containers each claiming as many elements as the buffer is long
    n = 1 << 16
    _fails_fast((b"\xdd" + n.to_bytes(4, "big")) * 2000 + bytes(n - 10000))


# --- hypothesis ------------------------------------------------------------------------

DTYPES = st.sampled_from(sorted(ALLOWED_DTYPES)).map(np.dtype)
ARRAYS = DTYPES.flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
)
NP_SCALARS = DTYPES.flatmap(lambda dt: hnp.arrays(dt, ())).map(lambda a: a[()])
KEYS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8),
                 st.binary(max_size=8))
LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**300), max_value=2**300),
    st.floats(), st.text(max_size=20), st.binary(max_size=20), ARRAYS, NP_SCALARS,
)
VALUES = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=5).map(tuple),
        st.dictionaries(KEYS, children, max_size=5),
    ),
    max_leaves=25,
)


@SETTINGS
@given(VALUES)
def test_round_trip_generated_values(value: Any) -> None:
    buf = encode_value(value)
    out = decode_value(buf)
    assert same(value, out)
    assert same(value, decode_value(buf, writable=True))
    assert encode_value(out) == buf  # canonical: re-encoding gives the same bytes


def _decode_or_decode_error(buf: bytes, limits: ValueLimits | None = None) -> None:
    try:
        out = decode_value(buf, limits=limits) if limits else decode_value(buf)
    except DecodeError:
        return
    encode_value(out)  # whatever is accepted can be sent again


SMALL = ValueLimits(max_bytes=400, max_depth=3, max_length=4, max_items=10, max_array_bytes=32, max_int_bytes=12)


@SETTINGS
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(buf: bytes) -> None:
    _decode_or_decode_error(buf)
    _decode_or_decode_error(buf, SMALL)


_EXT_HEADS = st.sampled_from(
    [b"\xc9", b"\xc7", b"\xd4", b"\xd5", b"\xd6", b"\xd7", b"\xd8", b"\x91\xc7", b"\x92\xc7\x00\x02", b"\x81\xc7"]
)


@SETTINGS
@given(_EXT_HEADS, st.binary(max_size=80))
def test_fuzz_random_ext_payloads(head: bytes, tail: bytes) -> None:
    _decode_or_decode_error(head + tail)


@SETTINGS
@given(
    st.one_of(st.sampled_from(sorted(ALLOWED_DTYPES)), st.sampled_from(["|O", "<U2", "|V4", "<M8", "", "<f"]),
              st.integers(-(2**63), 2**64 - 1), st.none()),
    st.one_of(st.none(), st.lists(st.integers(-2, 2**41), max_size=34), st.integers(-(2**63), 2**64 - 1),
              st.text(max_size=3)),
    st.one_of(st.binary(max_size=70), st.none()),
    st.integers(0, 64),
    st.booleans(),
)
def test_fuzz_array_headers(dtype: Any, shape: Any, pad: Any, datalen: int, nested: bool) -> None:
    payload = pack([dtype, shape, pad]) + bytes(datalen)
    buf = pack([msgpack.ExtType(EXT_ARRAY, payload)]) if nested else ext32(EXT_ARRAY, payload)
    try:
        out = decode_value(buf)
    except DecodeError:
        return
    arr = out[0] if nested else out
    if isinstance(arr, np.generic):  # numpy scalars come back in native byte order
        assert shape is None and arr.dtype == np.dtype(dtype).newbyteorder("=")
    else:
        assert type(arr) is np.ndarray and arr.dtype.str == dtype and list(arr.shape) == shape
        assert not arr.flags.writeable
    assert arr.nbytes == datalen


@SETTINGS
@given(VALUES, st.data())
def test_fuzz_mutated_encodings(value: Any, data: st.DataObject) -> None:
    buf = bytearray(encode_value(value))
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "set", "cut", "insert", "delete"]))
        i = data.draw(st.integers(0, max(len(buf) - 1, 0)))
        if op == "flip" and buf:
            buf[i] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "set" and buf:
            buf[i] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xC0, 0xC1, 0xC7, 0xC9, 0xCF, 0xD4, 0xDC, 0xDD,
                                                0xDE, 0xDF, 0xFF, 0x01, 0x02, 0x03, 0x90, 0x93]))
        elif op == "cut":
            del buf[i:]
        elif op == "insert":
            buf[i:i] = data.draw(st.binary(min_size=1, max_size=6))
        elif op == "delete" and buf:
            del buf[i : i + data.draw(st.integers(1, 4))]
    _decode_or_decode_error(bytes(buf))
    _decode_or_decode_error(bytes(buf), SMALL)


PLAIN = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(), st.text(max_size=40),
              st.binary(max_size=300)),
    lambda children: st.one_of(st.lists(children, max_size=20), st.dictionaries(st.text(max_size=5), children,
                                                                               max_size=20)),
    max_leaves=40,
)


@SETTINGS
@given(PLAIN, st.booleans())
def test_plain_msgpack_from_any_encoder_decodes_like_msgpack(value: Any, single_float: bool) -> None:
    """Every msgpack form (float32, str8/16, bin16, map16, ...) passes the structural scan."""
    try:
        buf = msgpack.packb(value, use_bin_type=True, use_single_float=single_float)
    except OverflowError:  # a float beyond float32
        assume(False)
    assert same(decode_value(buf), msgpack.unpackb(buf, raw=False, strict_map_key=False))
