"""Decoding untrusted reduction data raises only its own error type."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd.codec import encode
from icnd.name import Name
from icnd.packet import Interest
from icnd.reduction.group import GroupDescriptor, ReduceRequest, reduce_interest
from icnd.reduction.segment import SegmentError, SegmentMeta, check_dtype, pack, unpack
from icnd.security import DigestKey

SEGMENT = pack(SegmentMeta("<f4", (100,), 1, 0, (0, 2)), np.ones(100, np.float32))
DESC = encode(DigestKey().sign(GroupDescriptor.create("g", ["a", "b@c"]).to_data()))
REQUEST = reduce_interest(DESC, "g", "sum", 3, 0, subset=[0, 1], partial=True)


def mutate(data: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    out = bytearray(data)
    for pos, value in edits:
        out[pos % len(out)] = value
    return bytes(out[:cut] if cut is not None else out)


edits = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6)


@settings(max_examples=400, deadline=None)
@given(edits=edits, cut=st.none() | st.integers(0, len(SEGMENT)))
def test_segment_decoding_raises_only_segment_error(edits, cut):
    content = mutate(SEGMENT, [(p % 80, v) for p, v in edits], cut)  # the header is where the structure is
    try:
        meta, view = unpack(content, seg_bytes=1024, max_bytes=1 << 20, n_members=4)
    except SegmentError:
        return
    assert view.nbytes <= len(content) and meta.nseg >= 1


@settings(max_examples=400, deadline=None)
@given(edits=edits, cut=st.none() | st.integers(0, len(REQUEST.app_params or b"")))
def test_request_parsing_raises_only_value_error(edits, cut):
    params = mutate(REQUEST.app_params or b"", edits, cut)
    interest = Interest.with_params(Name.from_wire(REQUEST.name.comps[:5]), params)
    try:
        ReduceRequest.parse(interest)
    except ValueError:
        pass


def test_dtype_strings_numpy_cannot_parse_are_segment_errors():
    """numpy raises SyntaxError or ValueError for some strings (found by fuzzing)."""
    import msgpack
    import pytest

    for text in ("0f", "f0", "<f4,", "i8)", "(", "O", "U8", "V4", "<c8", "M8"):
        with pytest.raises(SegmentError):
            check_dtype(text)
        header = msgpack.packb({"t": text, "s": [1], "n": 1, "i": 0, "m": []})
        with pytest.raises(SegmentError):
            unpack(len(header).to_bytes(4, "big") + header + b"\0" * 8, seg_bytes=1024, max_bytes=1024,
                   n_members=1)


VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(index=st.integers(1, 8), value=VALUES)
def test_descriptor_decoding_raises_only_value_error(index, value):
    """A valid descriptor with any one field replaced by any value."""
    import msgpack

    fields = msgpack.unpackb(GroupDescriptor.create("g", ["a", "b@c"], rendezvous=["r"]).to_content())
    fields[index] = value
    try:
        GroupDescriptor.from_content(msgpack.packb(fields))
    except ValueError:
        pass
