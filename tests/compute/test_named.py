"""Named arguments on the wire (`icnd.compute.named`) and value objects (manifest `kind`)."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import icnd
from icnd.compute.named import EXT_NAMED, NamedArg, decode_argument, encode_named
from icnd.compute.values import decode_value, encode_value
from icnd.errors import DecodeError
from icnd.name import Name
from icnd.objects.manifest import Manifest

components = st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=8)


@given(components, st.booleans())
def test_a_named_argument_round_trips(comps: list[bytes], future: bool) -> None:
    name = Name([c for c in comps])
    value = icnd.Future(name) if future else icnd.Ref(name)
    decoded = decode_argument(encode_named(value))
    assert decoded == NamedArg("future" if future else "ref", name)


@given(st.one_of(st.integers(-2**63, 2**64 - 1), st.text(max_size=50), st.binary(max_size=50),
                 st.lists(st.integers(0, 9), max_size=5), st.none(), st.floats(allow_nan=False)))
def test_a_plain_argument_decodes_as_its_value(value: object) -> None:
    assert decode_argument(encode_value(value)) == value


def test_an_array_argument_is_not_taken_for_a_name() -> None:
    x = np.arange(3, dtype=np.int8)  # its encoding is an ext too (ext 1)
    np.testing.assert_array_equal(decode_argument(encode_value(x)), x)


def test_a_name_inside_a_value_is_refused_not_resolved() -> None:
    nested = msgpack.packb([1, msgpack.ExtType(EXT_NAMED, msgpack.packb(["ref", [b"\x08\x01a"]]))])
    with pytest.raises(DecodeError):
        decode_argument(nested)
    with pytest.raises(DecodeError):  # and the value decoder never accepts ext 4, even whole
        decode_value(encode_named(icnd.Ref("/data/a")))


@pytest.mark.parametrize("payload", [
    msgpack.packb(["blob", [b"\x08\x01a"]]),     # unknown kind
    msgpack.packb(["ref", []]),                  # empty name
    msgpack.packb(["ref", "/data/a"]),           # a URI, not components
    msgpack.packb(["ref", [b""]]),               # a component without its type
    b"\xc1",                                     # not msgpack
])
def test_a_malformed_named_argument_is_a_decode_error(payload: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_argument(msgpack.packb(msgpack.ExtType(EXT_NAMED, payload)))


def test_a_ref_takes_a_uri_or_a_name() -> None:
    assert icnd.Ref("/data/a") == icnd.Ref(Name("/data/a"))
    assert repr(icnd.Ref("/data/a")) == "icnd.Ref('/data/a')"


def test_a_manifest_says_when_its_bytes_are_a_value() -> None:
    plain = Manifest(Name("/o"), 7, 10, 1024, b"\0" * 32)
    value = Manifest(Name("/o"), 7, 10, 1024, b"\0" * 32, "value")
    assert Manifest.decode(Name("/o"), plain.encode()) == plain
    assert b"kind" not in plain.encode()  # a plain object's manifest is what it always was
    assert Manifest.decode(Name("/o"), value.encode()) == value
    body = msgpack.unpackb(value.encode())
    body["kind"] = "pickle"
    with pytest.raises(DecodeError, match="kind"):
        Manifest.decode(Name("/o"), msgpack.packb(body))
    with pytest.raises(ValueError):
        Manifest(Name("/o"), 7, 10, 1024, b"\0" * 32, "pickle")


async def test_the_budget_of_named_arguments_waits_for_room_and_refuses_what_never_fits() -> None:
    import trio

    from icnd.compute.resolve import ByteBudget

    budget = ByteBudget(100)
    await budget.take(60)
    got: list[float] = []

    async def second() -> None:
        await budget.take(50)  # does not fit beside the first: waits until it is given back
        got.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(second)
        await trio.sleep(1)
        assert got == [] and budget.used == 60
        budget.give(60)
    assert budget.used == 50 and len(got) == 1
    with pytest.raises(ValueError, match="budget"):
        await budget.take(101)
