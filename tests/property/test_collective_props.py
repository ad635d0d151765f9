"""Properties of the collectives' sans-IO parts: the part layout
(`icnd.collective.packing`) and the product op (`icnd.reduction.segment.combine`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from icnd.collective import packing
from icnd.reduction.segment import combine

values = st.lists(st.binary(min_size=1, max_size=64), min_size=1, max_size=20)


@given(values, st.sampled_from(packing.KINDS), st.integers(-1, 255))
def test_pack_then_parse_gives_every_value_back(vals, kind, root) -> None:
    prefix, total = packing.pack(kind, root, vals)
    whole = prefix + b"".join(vals)
    assert len(whole) == total
    header = packing.parse(whole[:packing.header_length(whole)], total)
    assert (header.kind, header.root, header.total) == (kind, root, total)
    for i, v in enumerate(vals):
        a, b = header.span(i)
        assert whole[a:b] == v
    header.check(kind, root, len(vals), "rank 0")


@given(st.binary(max_size=40), st.integers(0, 100))
def test_garbage_is_a_packing_error_never_another_exception(junk, total) -> None:
    try:
        packing.parse(junk[:packing.header_length(junk)] if len(junk) >= 4 else junk, total)
    except packing.PackingError:
        pass


def test_another_collective_is_named() -> None:
    prefix, total = packing.pack("bcast", 2, [b"x"])
    header = packing.parse(prefix, total)
    with pytest.raises(packing.PackingError, match="rank 1 \\(r1\\) called bcast \\(root 2\\) where this rank "
                                                   "called allgather"):
        header.check("allgather", -1, 1, "rank 1 (r1)")


ints = st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])


@given(ints, st.data())
def test_integer_product_flags_overflow_exactly(dtype, data) -> None:
    info = np.iinfo(dtype)
    elems = st.integers(int(info.min), int(info.max))
    a = data.draw(st.lists(elems, min_size=1, max_size=8))
    b = data.draw(st.lists(elems, min_size=len(a), max_size=len(a)))
    acc, x = np.array(a, dtype=dtype), np.array(b, dtype=dtype)
    overflow = combine("prod", acc, x)
    exact = [p * q for p, q in zip(a, b)]
    assert overflow == any(not info.min <= v <= info.max for v in exact)
    if not overflow:
        assert acc.tolist() == exact


def test_float_product() -> None:
    acc = np.array([1.5, -2.0], np.float32)
    assert not combine("prod", acc, np.array([2.0, 3.0], np.float32))
    assert acc.tolist() == [3.0, -6.0]
