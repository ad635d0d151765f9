"""Names: URI parsing and printing, typed components, limits, ordering."""

from __future__ import annotations

import pytest

from icnd import Component, Name
from icnd.name import (
    MAX_COMPONENT_BYTES,
    MAX_COMPONENTS,
    MAX_NAME_BYTES,
    T_DIGEST,
    T_GENERIC,
    T_PARAMS,
    T_RNP,
    T_SEGMENT,
    T_VERSION,
    digest,
    encode_nonneg,
    generic,
    params_digest,
    rnp,
    segment,
    version,
)

HEX32 = "00112233445566778899aabbccddeeff" * 2
HEX16 = "00112233445566778899aabbccddeeff"


@pytest.mark.parametrize(
    "uri",
    [
        "/",
        "/a",
        "/a/b/c",
        "/hello%20world",
        "/%00%01%FF",
        "/a%2Fb",
        "/a%3Db",
        "/...",
        "/....",
        "/.....",
        "/a.b/~x_y-z",
        "/seg=0",
        "/seg=255/seg=256/seg=65536/seg=4294967296",
        "/v=1700000000000",
        f"/sha256digest={HEX32}",
        f"/params-sha256={HEX32}",
        f"/rnp={HEX16}",
        "/99=abc%00",
    ],
)
def test_uri_round_trip(uri: str) -> None:
    name = Name(uri)
    assert name.to_uri() == uri
    assert Name(name.to_uri()) == name
    assert str(name) == uri


def test_percent_decoding() -> None:
    assert Name("/hello%20world")[0] == b"hello world"
    assert Name("/%e2%82%ac")[0] == "€".encode()
    assert Name("/€")[0] == "€".encode()
    assert Name("/€").to_uri() == "/%E2%82%AC"


def test_plain_component_with_equals_is_percent_encoded() -> None:
    name = Name([b"a=b"])
    assert name.to_uri() == "/a%3Db"
    assert Name(name.to_uri()) == name
    assert name[0].type == T_GENERIC


def test_dots_and_empty_components() -> None:
    assert Name("/...")[0] == b""
    assert Name("/....")[0] == b"."
    assert Name("/.....")[0] == b".."
    assert Name([b""]).to_uri() == "/..."
    assert Name([b"."]).to_uri() == "/...."
    assert Name([b"a", b""]).to_uri() == "/a/..."
    for value in (b"", b".", b"..", b"..."):
        assert Name(Name([value]).to_uri()) == Name([value])


def test_ndn_scheme_and_trailing_slash() -> None:
    assert Name("ndn:/a/b") == Name("/a/b")
    assert Name("ndn:/") == Name()
    assert Name("/a/b/") == Name("/a/b")
    assert Name("") == Name("/") == Name()
    assert len(Name("/")) == 0


def test_typed_components() -> None:
    name = Name(f"/a/seg=7/v=3/sha256digest={HEX32}/params-sha256={HEX32}/rnp={HEX16}")
    types = [c.type for c in name]
    assert types == [T_GENERIC, T_SEGMENT, T_VERSION, T_DIGEST, T_PARAMS, T_RNP]
    assert name[1].to_number() == 7
    assert name[2].to_number() == 3
    assert bytes(name[3]) == bytes.fromhex(HEX32)
    assert name.comps[1] == segment(7)
    assert name.comps[2] == version(3)
    assert name.comps[3] == digest(bytes.fromhex(HEX32))
    assert name.comps[4] == params_digest(bytes.fromhex(HEX32))
    assert name.comps[5] == rnp(bytes.fromhex(HEX16))


def test_typed_and_generic_components_differ() -> None:
    assert Name("/seg=1") != Name([b"\x01"])
    assert Name("/seg=1")[0] == b"\x01"  # values compare as bytes...
    assert Name("/seg=1")[0].type != Name([b"\x01"])[0].type  # ...types tell them apart


def test_numeric_type_label() -> None:
    assert Name("/8=abc") == Name("/abc")
    assert Name("/50=%05") == Name("/seg=5")
    assert Name("/200=x").comps == (b"\xc8x",)


def test_non_canonical_typed_values_round_trip() -> None:
    for wire in (
        b"\x32\x00\x05",  # a segment number with a leading zero byte
        b"\x32",  # an empty segment number
        b"\x36\x01\x02\x03",  # a 3-byte version
        b"\x01abc",  # a digest of the wrong length
        b"\xf0" + b"\x00" * 15,  # an rnp of the wrong length
        b"\x00x",  # type 0
    ):
        name = Name.from_wire((wire,))
        assert Name(name.to_uri()) == name, name.to_uri()


def test_encode_nonneg_is_minimal() -> None:
    assert encode_nonneg(0) == b"\x00"
    assert encode_nonneg(255) == b"\xff"
    assert encode_nonneg(256) == b"\x01\x00"
    assert encode_nonneg(65536) == b"\x00\x01\x00\x00"
    assert encode_nonneg(1 << 32) == b"\x00\x00\x00\x01\x00\x00\x00\x00"
    with pytest.raises(ValueError):
        encode_nonneg(-1)
    with pytest.raises(ValueError):
        encode_nonneg(1 << 64)


@pytest.mark.parametrize(
    "uri",
    [
        "a/b",  # no leading slash
        "/sha256digest=xyz",  # not hex
        "/sha256digest=abcd",  # wrong length
        f"/rnp={HEX32}",  # wrong length
        "/params-sha256=0",  # odd hex
        "/foo=bar",  # unknown type label
        "/=bar",  # empty type label
        "/256=x",  # type number out of range
        "/seg=abc",
        "/seg=-1",
        "/seg=",
        "/v=18446744073709551616",  # 2**64
        "/%4",  # truncated escape
        "/%zz",  # bad escape
        "/%+1",  # int() would accept this; a URI must not
        "/.",
        "/..",
    ],
)
def test_bad_uris_raise_value_error(uri: str) -> None:
    with pytest.raises(ValueError):
        Name(uri)


def test_limits() -> None:
    Name([b"x"] * MAX_COMPONENTS)
    with pytest.raises(ValueError, match="components"):
        Name([b"x"] * (MAX_COMPONENTS + 1))
    Name([b"x" * MAX_COMPONENT_BYTES])
    with pytest.raises(ValueError):
        Name([b"x" * (MAX_COMPONENT_BYTES + 1)])
    per = MAX_NAME_BYTES // 4 - 1  # four components of `per` value bytes fit exactly
    Name([b"y" * per] * 4)
    with pytest.raises(ValueError, match="bytes"):
        Name([b"y" * per] * 4 + [b"z"])
    with pytest.raises(ValueError):
        Name("/a").append(*([b"x"] * MAX_COMPONENTS))
    with pytest.raises(ValueError):
        Name("/a").append_wire(b"")


def test_component_type_error() -> None:
    with pytest.raises(TypeError):
        Name([1])  # type: ignore[list-item]


def test_equality_and_hash() -> None:
    assert Name("/a/b") == Name(["a", "b"]) == Name([b"a", b"b"])
    assert hash(Name("/a/b")) == hash(Name(["a", "b"]))
    assert Name("/a/b") == "/a/b"
    assert Name("/a/b") != "/a/c"
    assert Name("/a/b") != "not a uri"
    assert len({Name("/a/b"), Name([b"a", b"b"]), Name("/a")}) == 2
    assert Name(Name("/x")) == Name("/x")


def test_ordering_prefix_sorts_first() -> None:
    names = [Name("/a/b/c"), Name("/b"), Name("/a"), Name("/a/b"), Name("/"), Name("/a/c")]
    assert sorted(names) == [Name("/"), Name("/a"), Name("/a/b"), Name("/a/b/c"), Name("/a/c"), Name("/b")]
    assert Name("/a") < Name("/a/b") <= Name("/a/b")
    assert Name("/b") > Name("/a/z") >= Name("/a/z")


def test_names_under_a_prefix_are_contiguous() -> None:
    prefix = Name("/p/q")
    names = sorted(
        Name(u)
        for u in ["/p", "/p/q", "/p/q/r", "/p/q/seg=3", "/p/qq", "/p/p/z", "/p/q/%00", "/o", "/q"]
    )
    inside = [i for i, n in enumerate(names) if prefix.is_prefix_of(n)]
    assert inside == list(range(inside[0], inside[-1] + 1))


def test_slicing_and_indexing() -> None:
    name = Name("/a/b/c/d")
    assert name[1:3] == Name("/b/c")
    assert name[:-1] == Name("/a/b/c")
    assert name[-1] == b"d"
    assert isinstance(name[0], Component)
    assert name[0].type == T_GENERIC
    assert name.prefix(2) == Name("/a/b")
    assert name.prefix(-1) == Name("/a/b/c")
    assert [bytes(c) for c in name] == [b"a", b"b", b"c", b"d"]
    assert len(name) == 4


def test_append() -> None:
    base = Name("/a")
    assert base.append("b", b"c") == Name("/a/b/c")
    assert base.append("seg=3") == Name("/a/seg=3")
    assert base.append(Name("/seg=3")[0]) == Name("/a/seg=3")
    assert base.append_wire(segment(4)) == Name("/a/seg=4")
    assert base + "/x/y" == Name("/a/x/y")
    assert base + Name("/x") == Name("/a/x")
    assert base == Name("/a")  # unchanged


def test_is_prefix_of() -> None:
    assert Name("/").is_prefix_of(Name("/a"))
    assert Name("/a").is_prefix_of(Name("/a"))
    assert Name("/a").is_prefix_of(Name("/a/b"))
    assert not Name("/a/b").is_prefix_of(Name("/a"))
    assert not Name("/a").is_prefix_of(Name("/ab"))
    assert not Name("/seg=1").is_prefix_of(Name([b"\x01"]))


def test_component_helpers() -> None:
    assert generic("x") == generic(b"x") == b"\x08x"
    c = Name("/seg=9")[0]
    assert c.wire == segment(9)
    assert c.to_uri() == "seg=9"
    assert repr(c) == "Component('seg=9')"
    with pytest.raises(ValueError):
        rnp(b"short")


def test_wire_size() -> None:
    assert Name("/ab/c").wire_size() == 5
