"""NDN TLV primitives (`icnd.ndn.tlv`): VAR-NUMBERs, TLV walking, framing, NNIs."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd.errors import DecodeError
from icnd.ndn.tlv import (
    MAX_NDN_PACKET,
    decode_nni,
    encode_nni,
    encode_tlv,
    frame_length,
    is_critical,
    iter_tlvs,
    nni_tlv,
    read_tl,
    read_varnum,
    write_varnum,
)

SETTINGS = settings(max_examples=300, deadline=None)

# --- VAR-NUMBER -----------------------------------------------------------------------

BOUNDARIES = [
    (0, "00"),
    (1, "01"),
    (252, "fc"),
    (253, "fd00fd"),
    (254, "fd00fe"),
    (255, "fd00ff"),
    (1024, "fd0400"),
    (65535, "fdffff"),
    (65536, "fe00010000"),
    (2**32 - 1, "feffffffff"),
    (2**32, "ff0000000100000000"),
    (2**64 - 1, "ffffffffffffffffff"),
]


@pytest.mark.parametrize(("value", "hexwire"), BOUNDARIES)
def test_varnum_boundaries(value: int, hexwire: str) -> None:
    wire = bytes.fromhex(hexwire)
    assert write_varnum(value) == wire
    assert read_varnum(wire, 0) == (value, len(wire))
    # at an offset inside a larger buffer
    assert read_varnum(b"\xaa\xbb" + wire + b"\xcc", 2) == (value, 2 + len(wire))


@pytest.mark.parametrize("value", [-1, 2**64])
def test_write_varnum_out_of_range(value: int) -> None:
    with pytest.raises(ValueError):
        write_varnum(value)


@pytest.mark.parametrize("hexwire", ["", "fd", "fd00", "fe000100", "ff00000001000000"])
def test_read_varnum_truncated(hexwire: str) -> None:
    with pytest.raises(DecodeError):
        read_varnum(bytes.fromhex(hexwire), 0)


def test_read_varnum_accepts_non_minimal_forms() -> None:
    assert read_varnum(bytes.fromhex("fd0005"), 0) == (5, 3)
    assert read_varnum(bytes.fromhex("fe000000fd"), 0) == (253, 5)
    assert read_varnum(bytes.fromhex("ff0000000000000001"), 0) == (1, 9)


def test_read_varnum_accepts_memoryview_and_bytearray() -> None:
    assert read_varnum(memoryview(b"\xfd\x01\x00"), 0) == (256, 3)
    assert read_varnum(bytearray(b"\xfe\x00\x01\x00\x00"), 0) == (65536, 5)


@SETTINGS
@given(st.one_of(st.integers(0, 300), st.integers(60000, 70000), st.integers(0, 2**64 - 1)))
def test_varnum_round_trip_is_minimal(n: int) -> None:
    wire = write_varnum(n)
    assert read_varnum(wire, 0) == (n, len(wire))
    expected_len = 1 if n < 253 else 3 if n < 2**16 else 5 if n < 2**32 else 9
    assert len(wire) == expected_len


# --- TLV ----------------------------------------------------------------------------------


def test_encode_tlv_small_and_large() -> None:
    assert encode_tlv(8, b"abc") == b"\x08\x03abc"
    assert encode_tlv(0x0320, b"\x01") == bytes.fromhex("fd03200101")
    big = b"x" * 300
    assert encode_tlv(0x15, big) == b"\x15\xfd\x01\x2c" + big
    assert encode_tlv(2**32 - 1, b"") == bytes.fromhex("feffffffff00")


@pytest.mark.parametrize("t", [0, -1, 2**32])
def test_encode_tlv_rejects_bad_types(t: int) -> None:
    with pytest.raises(ValueError):
        encode_tlv(t, b"")


def test_iter_tlvs_walks_a_range() -> None:
    buf = b"\xff" + encode_tlv(7, b"ab") + encode_tlv(0x0321, b"\x96") + encode_tlv(9, b"") + b"\xff"
    got = [(t, buf[s:e]) for t, s, e in iter_tlvs(buf, 1, len(buf) - 1)]
    assert got == [(7, b"ab"), (0x0321, b"\x96"), (9, b"")]


@pytest.mark.parametrize(
    "hexwire",
    [
        "0703",  # length past the end
        "0702aa",  # value truncated
        "07",  # missing length
        "0000",  # TLV-TYPE 0 is invalid
        "ff000000010000000000",  # TLV-TYPE above 2**32-1
        "0701aa08",  # trailing partial element
    ],
)
def test_iter_tlvs_rejects_malformed(hexwire: str) -> None:
    buf = bytes.fromhex(hexwire)
    with pytest.raises(DecodeError):
        list(iter_tlvs(buf, 0, len(buf)))


def test_read_tl_respects_the_container_end() -> None:
    buf = encode_tlv(7, b"abcd")
    assert read_tl(buf, 0, len(buf)) == (7, 2, 6)
    with pytest.raises(DecodeError):
        read_tl(buf, 0, len(buf) - 1)


@pytest.mark.parametrize(
    ("t", "critical"),
    [(0, True), (1, True), (5, True), (31, True), (30, True), (32, False), (33, True), (34, False),
     (36, False), (0x0320, False), (0x0321, True), (253, True), (254, False)],
)
def test_is_critical(t: int, critical: bool) -> None:
    assert is_critical(t) is critical


# --- NonNegativeInteger ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "hexwire"),
    [(0, "00"), (255, "ff"), (256, "0100"), (65535, "ffff"), (65536, "00010000"),
     (2**32 - 1, "ffffffff"), (2**32, "0000000100000000"), (2**64 - 1, "ffffffffffffffff")],
)
def test_nni(value: int, hexwire: str) -> None:
    wire = bytes.fromhex(hexwire)
    assert encode_nni(value) == wire
    assert decode_nni(wire, 0, len(wire)) == value
    assert nni_tlv(0x19, value) == bytes((0x19, len(wire))) + wire


@pytest.mark.parametrize("size", [0, 3, 5, 6, 7, 9])
def test_nni_rejects_bad_lengths(size: int) -> None:
    with pytest.raises(DecodeError):
        decode_nni(b"\x01" * size, 0, size)


@pytest.mark.parametrize("value", [-1, 2**64])
def test_encode_nni_out_of_range(value: int) -> None:
    with pytest.raises(ValueError):
        encode_nni(value)


# --- stream framing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "packet",
    [
        encode_tlv(5, b"x" * 10),
        encode_tlv(6, b"y" * 252),
        encode_tlv(6, b"y" * 253),
        encode_tlv(0x64, b"z" * 1000),
        encode_tlv(6, b"w" * (MAX_NDN_PACKET - 4)),  # exactly the limit: 1 + 3 + value
    ],
)
def test_frame_length_on_every_prefix(packet: bytes) -> None:
    header = 2 if packet[1] < 0xFD else 4
    for cut in range(len(packet) + 1):
        got = frame_length(packet[:cut])
        if cut < header:
            assert got is None
        else:
            assert got == len(packet)
    # a following packet does not matter
    assert frame_length(packet + b"\x05\x00") == len(packet)
    assert frame_length(memoryview(packet)) == len(packet)
    assert frame_length(bytearray(packet[:header])) == len(packet)


def test_frame_length_multi_byte_type_header() -> None:
    pkt = encode_tlv(0x0320, b"abc")  # fd 03 20 03 ...
    assert [frame_length(pkt[:i]) for i in range(5)] == [None, None, None, None, 7]


def test_frame_length_too_big() -> None:
    assert frame_length(encode_tlv(6, b"\x00" * (MAX_NDN_PACKET - 4))[:4]) == MAX_NDN_PACKET
    with pytest.raises(DecodeError):
        frame_length(b"\x06\xfd" + (MAX_NDN_PACKET - 3).to_bytes(2, "big"))
    with pytest.raises(DecodeError):
        frame_length(b"\x06\xfe\x00\x01\x00\x00")
    with pytest.raises(DecodeError):
        frame_length(b"\x06\xff\xff\xff\xff\xff\xff\xff\xff\xff")


def test_frame_length_invalid_type() -> None:
    with pytest.raises(DecodeError):
        frame_length(b"\x00\x01")
    with pytest.raises(DecodeError):
        frame_length(b"\xff\x00\x00\x00\x01\x00\x00\x00\x00\x00")
    # an invalid type is reported as soon as the type is complete
    with pytest.raises(DecodeError):
        frame_length(b"\x00")


@SETTINGS
@given(st.binary(max_size=24))
def test_frame_length_random_bytes(buf: bytes) -> None:
    try:
        got = frame_length(buf)
    except DecodeError:
        return
    assert got is None or 2 <= got <= MAX_NDN_PACKET


# =====================================================================================
# The NDN packet codec (`icnd.ndn.codec`).
#
# These tests belong in tests/ndn/test_codec.py, but pytest's default "prepend"
# import mode names test modules by basename (tests/ has no __init__.py), and
# tests/test_codec.py already exists: a second test_codec.py breaks collection of
# the whole suite.
# =====================================================================================

import hashlib  # noqa: E402

from icnd import Data, Interest, Nack, NackReason, Name  # noqa: E402
from icnd.codec import MAX_HINTS  # noqa: E402
from icnd.name import T_PARAMS, digest, generic, params_digest, segment, version  # noqa: E402
from icnd.ndn.codec import (  # noqa: E402
    IdlePacket,
    LpInfo,
    NdnNameMap,
    decode_ndn,
    decode_ndn_name,
    encode_ndn,
    encode_ndn_nack,
    encode_ndn_name,
    nack_reason_from_ndn,
    ndn_signed_portion,
)
from icnd.packet import ContentType, SigType  # noqa: E402
from icnd.security import KeyChain  # noqa: E402


def T(t: int, *parts: bytes) -> bytes:
    """A TLV built by hand (independent of the codec under test)."""
    value = b"".join(parts)
    return write_varnum(t) + write_varnum(len(value)) + value


def C(value: bytes | str, t: int = 8) -> bytes:
    return T(t, value.encode() if isinstance(value, str) else value)


def NAME(*comps: bytes) -> bytes:
    return T(7, *comps)


def sha(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


def fresh() -> NdnNameMap:
    return NdnNameMap()


def dec(buf: bytes):  # type: ignore[no-untyped-def]  # a pytest fixture or helper over any packet
    return decode_ndn(buf, names=fresh())


# --- captured / hand-built vectors ----------------------------------------------------------

# python-ndn 0.5.2 `app.express('/example/hello', must_be_fresh=True, lifetime=2000)` (reference doc §4.2a)
CONSUMER_INTEREST = bytes.fromhex("051e" "0710" "08076578616d706c65" "080568656c6c6f" "1200" "0a04726d178a" "0c0207d0")

# Generated with python-ndn 0.5.2: make_command_v2('rib', 'register', name='/example') expressed with
# app_param=b'', DigestSha256Signer(for_interest=True), lifetime=1000, nonce=0x01020304.
PYNDN_REGISTER_V2 = bytes.fromhex(
    "0599075008096c6f63616c686f737408036e6664080372696208087265676973746572080d680b070908076578616d70"
    "6c650220b9b79a4adac1f2d95e98d41d7b29ded6f2bf2b63b1fb5dc9637ebd03f8459c380a04010203040c0203e82400"
    "2c171b0100260849313d826ec920db2808000001a200c14be62e20551abe034f8fc18644bcb8add89d7f9c3a712434a4"
    "99ec4972b8ed067c65977f"
)
# The same through legacy `ndn.app` make_command (timestamp/nonce/SignatureInfo/SignatureValue components).
PYNDN_REGISTER_LEGACY = bytes.fromhex(
    "0578076c08096c6f63616c686f737408036e6664080372696208087265676973746572080c680a070808066c65676163"
    "790808000001a200c14be60808c7bb7cf1be4f3425080516031b010008221720fb2fb88e63f1e0d1fce1f2ae5164ffff"
    "6d4d8dc0b9f072fda7aae6e58315b8ce0a04010203040c0203e8"
)
# python-ndn make_interest('/f/call', nonce=5, app_param=93010203, signer=DigestSha256Signer(for_interest=True))
PYNDN_SIGNED_PARAMS = bytes.fromhex(
    "0578072b080166080463616c6c0220867e933a66b04edb823e6d2f31defc006f7865648f7c0febf038f8a7ff09d5ce0a"
    "04000000050c020fa02404930102032c171b0100260888ae6859463d64f42808000001a200c14be72e2042d5a5ccb434"
    "5fb2ff3b80c5a0c7ec6f8d9a5d5eb62604bcb6096f63c50a8fda"
)
# python-ndn make_data('/a/b/seg=0', MetaInfo(content_type=0, freshness_period=1000, final_block_id=seg 9),
# b'hello', signer=DigestSha256Signer())
PYNDN_DATA = bytes.fromhex(
    "06470709080161080162320100140c180100190203e81a03320109150568656c6c6f16031b010017204bc8e6b386e92a"
    "6654b042ed7db7778cdfc85044b9a6339d4e7fd63bb7b51d76"
)

REGISTER_NAME_COMPS = (
    generic("localhost"), generic("nfd"), generic("rib"), generic("register"),
    generic(bytes.fromhex("680b070908076578616d706c65")),
)


def test_decode_consumer_interest_capture() -> None:
    interest, lp = dec(CONSUMER_INTEREST)
    assert interest == Interest(Name("/example/hello"), nonce=0x726D178A, lifetime_ms=2000, hop_limit=32,
                                must_be_fresh=True)
    assert lp == LpInfo()


def test_encode_consumer_interest_byte_exact() -> None:
    interest = Interest(Name("/example/hello"), nonce=0x726D178A, lifetime_ms=2000, hop_limit=32, must_be_fresh=True)
    # the capture plus HopLimit 32 (icnd always sends one)
    assert encode_ndn(interest) == bytes.fromhex(
        "0521" "0710" "08076578616d706c65" "080568656c6c6f" "1200" "0a04726d178a" "0c0207d0" "220120"
    )


def test_encode_interest_all_fields_byte_exact() -> None:
    interest = Interest(
        Name("/a/seg=3"), nonce=0xDEADBEEF, lifetime_ms=4000, hop_limit=9, can_be_prefix=True,
        must_be_fresh=True, forwarding_hint=(Name("/hint"), Name("/h/b")),
    )
    expected = T(5,
                 NAME(C("a"), C(b"\x03", 0x32)),
                 T(0x21), T(0x12),
                 T(0x1E, NAME(C("hint")), NAME(C("h"), C("b"))),
                 T(0x0A, bytes.fromhex("deadbeef")),
                 # InterestLifetime 4000 is the default: omitted
                 T(0x22, b"\x09"))
    assert encode_ndn(interest) == expected
    assert dec(expected)[0] == interest


def test_encode_data_byte_exact_digest_sha256() -> None:
    data = Data(Name("/a/b"), b"hi", freshness_ms=1000)
    portion = NAME(C("a"), C("b")) + T(0x14, T(0x19, b"\x03\xe8")) + T(0x15, b"hi") + T(0x16, T(0x1B, b"\x00"))
    expected = T(6, portion, T(0x17, sha(portion)))
    wire = encode_ndn(data)
    assert wire == expected
    assert ndn_signed_portion(wire) == portion


def test_encode_data_all_meta_fields_byte_exact() -> None:
    data = Data(Name("/a/b/seg=0"), b"hello", content_type=ContentType.KEY, freshness_ms=1000,
                final_block_id=segment(9))
    portion = (NAME(C("a"), C("b"), C(b"\x00", 0x32))
               + T(0x14, T(0x18, b"\x02"), T(0x19, b"\x03\xe8"), T(0x1A, C(b"\x09", 0x32)))
               + T(0x15, b"hello") + T(0x16, T(0x1B, b"\x00")))
    assert encode_ndn(data) == T(6, portion, T(0x17, sha(portion)))


def test_encode_empty_data_has_no_meta_or_content() -> None:
    portion = NAME(C("x")) + T(0x16, T(0x1B, b"\x00"))
    assert encode_ndn(Data(Name("/x"))) == T(6, portion, T(0x17, sha(portion)))


def test_decode_python_ndn_data() -> None:
    data, lp = dec(PYNDN_DATA)
    assert (data.name, data.content, data.content_type, data.freshness_ms, data.final_block_id) == (
        Name("/a/b/seg=0"), b"hello", 0, 1000, segment(9))
    assert lp.data_signature is not None and lp.data_signature.sig_type == 0
    # re-signed with DigestSha256 over icnd's encoding: verifies in icnd
    assert data.sig_type == SigType.DIGEST_SHA256 and data.key_locator is None
    KeyChain().verify(data)


def test_decode_minimal_register_reply_93_bytes() -> None:
    """The 93-byte unsigned reply python-ndn accepted (reference §4.3): Name + Content only."""
    name = NAME(*(T(8, c[1:]) for c in REGISTER_NAME_COMPS), T(2, b"\x11" * 32))
    reply = T(6, name, T(0x15, bytes.fromhex("65056601c86800")))
    assert len(name) == 0x52 and len(reply) == 93
    data, lp = dec(reply)
    assert data.content == bytes.fromhex("65056601c86800")
    assert lp.data_signature is None
    KeyChain().verify(data)


# --- names ------------------------------------------------------------------------------------


def test_component_types_map_one_to_one() -> None:
    comps = (generic("g"), digest(b"\x01" * 32), segment(5), version(7), bytes((0x20,)) + b"kw",
             bytes((0xF0,)) + b"\x02" * 16, bytes((0xFF,)) + b"x", bytes((0x21,)))
    name = Name.from_wire(comps)
    wire = encode_ndn_name(name)
    assert wire == NAME(C("g"), C(b"\x01" * 32, 1), C(b"\x05", 0x32), C(b"\x07", 0x36), C("kw", 0x20),
                        C(b"\x02" * 16, 0xF0), C("x", 0xFF), C(b"", 0x21))
    assert decode_ndn_name(wire) == name
    interest = Interest(name, nonce=1)
    assert dec(encode_ndn(interest))[0] == interest


def test_component_type_above_255_is_rejected() -> None:
    pkt = T(5, NAME(C("a"), C("b", 0x0100)), T(0x0A, b"\0\0\0\1"))
    with pytest.raises(DecodeError, match="unsupported component type"):
        dec(pkt)


def test_component_type_zero_cannot_be_encoded() -> None:
    with pytest.raises(ValueError):
        encode_ndn(Interest(Name.from_wire((b"\x00x",)), nonce=1))


@pytest.mark.parametrize("t", [1, 2])
def test_digest_components_must_be_32_bytes(t: int) -> None:
    with pytest.raises(DecodeError):
        dec(T(5, NAME(C("a"), C(b"\x00" * 31, t)), T(0x0A, b"\0\0\0\1")))
    with pytest.raises(ValueError):
        encode_ndn(Interest(Name.from_wire((generic("a"), bytes((t,)) + b"\x00" * 31)), nonce=1))


def test_interest_name_must_not_be_empty() -> None:
    with pytest.raises(DecodeError):
        dec(T(5, NAME(), T(0x0A, b"\0\0\0\1")))
    with pytest.raises(ValueError):
        encode_ndn(Interest(Name(), nonce=1))


def test_data_with_empty_name_is_fine() -> None:
    data = Data(Name(), b"x")
    assert dec(encode_ndn(data))[0].name == Name()


def test_name_limits_apply() -> None:
    too_many = NAME(*[C("a")] * 65)
    with pytest.raises(DecodeError):
        dec(T(5, too_many, T(0x0A, b"\0\0\0\1")))
    too_long = NAME(C(b"x" * 1025))
    with pytest.raises(DecodeError):
        dec(T(6, too_long))


# --- Interest fields --------------------------------------------------------------------------------


def test_interest_defaults_when_absent() -> None:
    interest, _ = dec(T(5, NAME(C("a"))))
    assert interest.lifetime_ms == 4000
    assert interest.hop_limit == 32
    assert 0 <= interest.nonce < 2**32  # a missing Nonce gets a random one
    assert not interest.can_be_prefix and not interest.must_be_fresh
    assert interest.app_params is None and interest.forwarding_hint == ()


def test_interest_lifetime_and_hop_limit_values() -> None:
    interest, _ = dec(T(5, NAME(C("a")), T(0x0A, b"\0\0\0\1"), T(0x0C, b"\x00\x00\x00\x00\x00\x00\x00\x07"),
                        T(0x22, b"\x00")))
    assert interest.lifetime_ms == 7 and interest.hop_limit == 0


@pytest.mark.parametrize(
    "bad",
    [
        T(0x0A, b"\0\0\1"),  # Nonce of 3 bytes
        T(0x0A, b"\0\0\0\0\1"),  # Nonce of 5 bytes
        T(0x0C, b"\0\0\1"),  # NNI of 3 bytes
        T(0x0C, b"\x00\x00\x00\x01\x00\x00\x00\x00"),  # lifetime above 2**32-1
        T(0x22, b""),  # HopLimit of 0 bytes
        T(0x22, b"\0\0"),  # HopLimit of 2 bytes
        T(0x21, b"x"),  # CanBePrefix must be empty
        T(0x12, b"x"),  # MustBeFresh must be empty
        T(0x1E, T(0x1F, b"")),  # old Delegation form of ForwardingHint
    ],
)
def test_interest_bad_field_values(bad: bytes) -> None:
    with pytest.raises(DecodeError):
        dec(T(5, NAME(C("a")), bad))


def test_forwarding_hint_limit() -> None:
    hints = T(0x1E, *[NAME(C("h"))] * (MAX_HINTS + 1))
    with pytest.raises(DecodeError):
        dec(T(5, NAME(C("a")), hints))
    ok = T(0x1E, *[NAME(C("h"))] * MAX_HINTS)
    assert len(dec(T(5, NAME(C("a")), ok))[0].forwarding_hint) == MAX_HINTS


def test_unknown_non_critical_interest_elements_are_ignored() -> None:
    base = [NAME(C("a")), T(0x0A, b"\0\0\0\1"), T(0x22, b"\x05")]
    expected = Interest(Name("/a"), nonce=1, hop_limit=5)
    for extra in (T(0x40, b"junk"), T(0xFE, b""), T(0x0330, b"x")):
        assert dec(T(5, base[0], extra, base[1], base[2]))[0] == expected
        assert dec(T(5, *base, extra))[0] == expected


@pytest.mark.parametrize("t", [0x03, 0x1F, 0x41, 0xFD, 0x0321])
def test_unknown_critical_interest_elements_are_rejected(t: int) -> None:
    with pytest.raises(DecodeError, match="critical"):
        dec(T(5, NAME(C("a")), T(0x0A, b"\0\0\0\1"), T(t, b"")))


def test_out_of_order_or_duplicate_critical_interest_elements_are_rejected() -> None:
    with pytest.raises(DecodeError):  # MustBeFresh after Nonce
        dec(T(5, NAME(C("a")), T(0x0A, b"\0\0\0\1"), T(0x12)))
    with pytest.raises(DecodeError):  # duplicate Nonce
        dec(T(5, NAME(C("a")), T(0x0A, b"\0\0\0\1"), T(0x0A, b"\0\0\0\2")))
    with pytest.raises(DecodeError):  # Name not first
        dec(T(5, T(0x0A, b"\0\0\0\1"), NAME(C("a"))))


def test_out_of_order_non_critical_element_is_ignored() -> None:
    # a second HopLimit (type 34, non-critical) is out of order: skipped, not an error
    interest, _ = dec(T(5, NAME(C("a")), T(0x0A, b"\0\0\0\1"), T(0x22, b"\x05"), T(0x22, b"\x07")))
    assert interest.hop_limit == 5


def test_interest_round_trip_fields() -> None:
    interest = Interest(Name("/a/b/v=3"), nonce=0xFFFFFFFF, lifetime_ms=2**32 - 1, hop_limit=255,
                        can_be_prefix=True, forwarding_hint=(Name("/x"),))
    assert dec(encode_ndn(interest))[0] == interest


# --- ApplicationParameters and the params digest -----------------------------------------------------


def test_params_interest_round_trip_translates_the_digest() -> None:
    interest = Interest.with_params(Name("/f/call"), b"\x93\x01\x02\x03", nonce=5)
    m = fresh()
    wire = encode_ndn(interest, names=m)
    # NDN digest: SHA-256 of the ApplicationParameters TLV to the end of the Interest
    tail = T(0x24, b"\x93\x01\x02\x03")
    assert wire == T(5, NAME(C("f"), C("call"), C(sha(tail), 2)), T(0x0A, b"\0\0\0\5"), T(0x22, b"\x20"), tail)
    back, lp = decode_ndn(wire, names=m)
    assert back == interest and back.params_ok()
    assert lp.signed_interest is None


def test_params_digest_must_match() -> None:
    tail = T(0x24, b"abc")
    good = T(5, NAME(C("a"), C(sha(tail), 2)), T(0x0A, b"\0\0\0\1"), tail)
    assert dec(good)[0].app_params == b"abc"
    bad = T(5, NAME(C("a"), C(sha(b"abc"), 2)), T(0x0A, b"\0\0\0\1"), tail)  # icnd's digest is wrong in NDN
    with pytest.raises(DecodeError, match="params-sha256"):
        dec(bad)


def test_params_digest_rules() -> None:
    tail = T(0x24, b"abc")
    with pytest.raises(DecodeError):  # ApplicationParameters without the digest component
        dec(T(5, NAME(C("a")), tail))
    with pytest.raises(DecodeError):  # digest component without ApplicationParameters
        dec(T(5, NAME(C("a"), C(b"\x00" * 32, 2))))
    with pytest.raises(DecodeError):  # digest component not last
        dec(T(5, NAME(C(sha(tail), 2), C("a")), tail))
    with pytest.raises(ValueError):  # icnd-side inconsistency
        encode_ndn(Interest(Name("/a/b"), nonce=1, app_params=b"x"))
    with pytest.raises(ValueError):
        encode_ndn(Interest(Name.from_wire((generic("a"), params_digest(b"\x00" * 32))), nonce=1))


def test_unknown_non_critical_after_params_is_covered_by_the_digest() -> None:
    tail = T(0x24, b"p") + T(0x40, b"extra")
    pkt = T(5, NAME(C("a"), C(sha(tail), 2)), T(0x0A, b"\0\0\0\1"), tail)
    m = fresh()
    interest, _ = decode_ndn(pkt, names=m)
    assert interest.app_params == b"p"
    # re-encoding reproduces the NDN form byte for byte (the map remembers the tail)
    assert encode_ndn(interest, names=m) == T(5, NAME(C("a"), C(sha(tail), 2)), T(0x0A, b"\0\0\0\1"),
                                              T(0x22, b"\x20"), tail)


def test_python_ndn_signed_interest() -> None:
    m = fresh()
    interest, lp = decode_ndn(PYNDN_SIGNED_PARAMS, names=m)
    assert interest.name == Name("/f/call").append_wire(params_digest(sha(b"\x93\x01\x02\x03")))
    assert interest.app_params == b"\x93\x01\x02\x03" and interest.params_ok()
    si = lp.signed_interest
    assert si is not None and si.digest_ok()
    assert si.info.sig_type == 0 and si.info.nonce is not None and len(si.info.nonce) == 8
    assert si.info.time_ms == 0x000001A200C14BE7
    # forwarding it on to another NDN face keeps name, parameters and signature intact
    again = encode_ndn(interest.forwarded(hop_limit=10), names=m)
    orig_name = PYNDN_SIGNED_PARAMS[2 : 2 + 2 + 0x2B]
    assert again[2 : 2 + 2 + 0x2B] == orig_name
    assert again.endswith(PYNDN_SIGNED_PARAMS[PYNDN_SIGNED_PARAMS.index(b"\x24\x04\x93") :])
    assert decode_ndn(again, names=fresh())[1].signed_interest.digest_ok()  # type: ignore[union-attr]  # a signed Interest: its signed_interest is set


def test_signed_interest_needs_both_signature_fields_and_params() -> None:
    info = T(0x2C, T(0x1B, b"\x00"))
    value = T(0x2E, b"\x00" * 32)
    for tail in (T(0x24, b"") + info, T(0x24, b"") + value):
        with pytest.raises(DecodeError):
            dec(T(5, NAME(C("a"), C(sha(tail), 2)), tail))
    with pytest.raises(DecodeError):  # signature without ApplicationParameters
        dec(T(5, NAME(C("a")), info, value))
    tail = T(0x24, b"") + T(0x2C, T(0x26, b"n"))  # SignatureInfo without SignatureType
    with pytest.raises(DecodeError):
        dec(T(5, NAME(C("a"), C(sha(tail + value), 2)), tail, value))


def test_data_reply_to_params_interest_uses_the_consumer_name() -> None:
    m = fresh()
    interest, _ = decode_ndn(PYNDN_REGISTER_V2, names=m)
    reply = encode_ndn(Data(interest.name, b"ok"), names=m)
    ndn_name = PYNDN_REGISTER_V2[2 : 2 + 2 + 0x50]
    assert reply[2 : 2 + 2 + 0x50] == ndn_name
    # without the map icnd's own digest would go out
    assert encode_ndn(Data(interest.name, b"ok"), names=None)[2 : 2 + 2 + 0x50] != ndn_name
    # longer Data names (CanBePrefix) are translated too
    longer = encode_ndn(Data(interest.name.append("seg=0"), b"ok"), names=m)
    assert longer[2 : 2 + 2 + 0x50 + 3][:2] == b"\x07\x53" and longer[4 : 4 + 0x50] == ndn_name[2:]


def test_data_from_producer_is_renamed_for_icnd() -> None:
    m = fresh()
    interest = Interest.with_params(Name("/f"), b"args", nonce=1)
    wire = encode_ndn(interest, names=m)
    ndn_name = decode_ndn_name(wire[2 : 2 + wire[3] + 2])
    assert ndn_name != interest.name
    answer = encode_ndn(Data(ndn_name, b"result"), names=None)
    data, _ = decode_ndn(answer, names=m)
    assert data.name == interest.name
    assert decode_ndn(answer, names=fresh())[0].name == ndn_name


def test_without_a_name_map_nothing_is_remembered() -> None:
    """Issue #28: no process-wide map: the caller's map is used (here: the one
    passed to decode), and without one the answer goes under icnd's name."""
    m = fresh()
    interest, _ = decode_ndn(PYNDN_REGISTER_V2)
    assert encode_ndn(Data(interest.name))[2 : 2 + 2 + 0x50] != PYNDN_REGISTER_V2[2 : 2 + 2 + 0x50]
    interest, _ = decode_ndn(PYNDN_REGISTER_V2, names=m)
    assert m.to_ndn(interest.name.comps) != interest.name.comps
    assert encode_ndn(Data(interest.name), names=m)[2 : 2 + 2 + 0x50] == PYNDN_REGISTER_V2[2 : 2 + 2 + 0x50]


def test_name_map_is_bounded() -> None:
    m = NdnNameMap(capacity=2)
    for i in range(3):
        m.remember_inbound((bytes((2,)) + bytes([i]) * 32,), (generic(str(i)),))
    assert len(m) == 2
    assert m.to_icnd((bytes((2,)) + bytes([0]) * 32,)) == (bytes((2,)) + bytes([0]) * 32,)
    assert m.to_icnd((bytes((2,)) + bytes([2]) * 32,)) == (generic("2"),)
    m.clear()
    assert len(m) == 0


# --- Data ------------------------------------------------------------------------------------------------


def test_data_round_trip_fields() -> None:
    data = Data(Name("/a/v=1/seg=2"), b"\x00\xff" * 100, content_type=ContentType.MANIFEST, freshness_ms=2**32 - 1,
                final_block_id=segment(2))
    back, lp = dec(encode_ndn(data))
    assert (back.name, back.content, back.content_type, back.freshness_ms, back.final_block_id) == (
        data.name, data.content, data.content_type, data.freshness_ms, data.final_block_id)
    KeyChain().verify(back)


def test_data_signature_is_redone_not_carried() -> None:
    portion = NAME(C("a")) + T(0x15, b"x") + T(0x16, T(0x1B, b"\x03"), T(0x1C, NAME(C("KEY"), C("k"))))
    ndn = T(6, portion, T(0x17, b"\x30" * 70))  # an ECDSA-ish signature icnd cannot check
    data, lp = dec(ndn)
    assert data.sig_type == SigType.DIGEST_SHA256 and len(data.sig_value) == 32
    assert lp.data_signature is not None
    assert lp.data_signature.sig_type == 3 and lp.data_signature.key_locator == Name("/KEY/k")
    KeyChain().verify(data)


def test_data_key_digest_locator() -> None:
    portion = NAME(C("a")) + T(0x16, T(0x1B, b"\x01"), T(0x1C, T(0x1D, b"\xab" * 32)))
    _, lp = dec(T(6, portion, T(0x17, b"s")))
    assert lp.data_signature is not None and lp.data_signature.key_digest == b"\xab" * 32


@pytest.mark.parametrize(
    "body",
    [
        [NAME(C("a")), T(0x16, T(0x1B, b"\x00"))],  # SignatureInfo without SignatureValue
        [NAME(C("a")), T(0x17, b"")],  # SignatureValue without SignatureInfo
        [NAME(C("a")), T(0x15, b"x"), T(0x14)],  # MetaInfo after Content (critical, out of order)
        [NAME(C("a")), T(0x15, b"x"), T(0x15, b"y")],  # duplicate Content
        [T(0x15, b"x"), NAME(C("a"))],  # Name not first
        [NAME(C("a")), T(0x14, T(0x18, b"\x00\x01\x00\x00"))],  # ContentType beyond icnd's 16 bits
        [NAME(C("a")), T(0x14, T(0x19, b"\x00\x00\x00\x01\x00\x00\x00\x00"))],  # FreshnessPeriod > 2**32-1
        [NAME(C("a")), T(0x14, T(0x1A, C("x") + C("y")))],  # FinalBlockId with two components
        [NAME(C("a")), T(0x14, T(0x1A, b""))],  # empty FinalBlockId
        [NAME(C("a")), T(0x14, T(0x19, b"\x01"), T(0x18, b"\x01"))],  # MetaInfo out of order
        [NAME(C("a")), T(0x14, T(0x13, b""))],  # unknown critical MetaInfo element
        [NAME(C("a")), T(0x16, T(0x1B, b"\x00"), T(0x1B, b"\x00")), T(0x17, b"")],  # duplicate SignatureType
        [NAME(C("a")), T(0x16, T(0x1B, b"\x00"), T(0x31, b"")), T(0x17, b"")],  # unknown critical in SigInfo
        [NAME(C("a")), T(0x16, T(0x1C, NAME())), T(0x17, b"")],  # SignatureInfo without SignatureType
        [NAME(C("a")), T(0x33, b"")],  # unknown critical element in Data
    ],
)
def test_data_malformed(body: list[bytes]) -> None:
    with pytest.raises(DecodeError):
        dec(T(6, *body))


def test_data_unknown_non_critical_elements_are_ignored() -> None:
    wire = T(6, NAME(C("a")), T(0x14, T(0x18, b"\x01"), T(0x40, b"m")), T(0x42, b"z"), T(0x15, b"c"),
             T(0x16, T(0x1B, b"\x00"), T(0x40, b"")), T(0x17, b"\x00" * 32), T(0x44, b""))
    data, _ = dec(wire)
    assert (data.content, data.content_type) == (b"c", ContentType.LINK)


def test_content_type_numbers_are_kept() -> None:
    for ct in (0, 1, 2, 3, 5, 9, 0xFFFF):
        assert dec(encode_ndn(Data(Name("/a"), content_type=ct)))[0].content_type == ct


# --- NDNLPv2: PitToken, Nack, other headers ------------------------------------------------------------------


def test_pit_token_round_trip_and_bytes() -> None:
    token = bytes.fromhex("5058af6d68e5a3e5")
    interest = Interest(Name("/a"), nonce=1)
    wire = encode_ndn(interest, LpInfo(pit_token=token))
    assert wire == T(0x64, T(0x62, token), T(0x50, encode_ndn(interest)))
    back, lp = dec(wire)
    assert back == interest and lp.pit_token == token
    data = Data(Name("/a"), b"x")
    wire = encode_ndn(data, LpInfo(pit_token=token))
    assert wire == T(0x64, T(0x62, token), T(0x50, encode_ndn(data)))
    assert dec(wire)[1].pit_token == token


def test_lp_without_headers_sends_bare_packets() -> None:
    interest = Interest(Name("/a"), nonce=1)
    assert encode_ndn(interest, LpInfo()) == encode_ndn(interest)


def test_pit_token_length_limits() -> None:
    interest = encode_ndn(Interest(Name("/a"), nonce=1))
    for bad in (b"", b"x" * 33):
        with pytest.raises(DecodeError):
            dec(T(0x64, T(0x62, bad), T(0x50, interest)))
        with pytest.raises(ValueError):
            encode_ndn(Interest(Name("/a"), nonce=1), LpInfo(pit_token=bad))


def test_nack_capture_decodes() -> None:
    """reference §4.2d: 64 27 | fd0320 05 [fd0321 01 96] | 50 1c [Interest]."""
    frag = T(5, NAME(C("example"), C("hello")), T(0x12), T(0x0A, bytes.fromhex("726d178a")))
    wire = bytes.fromhex("6427fd032005fd03210196501c") + frag
    assert len(wire) == 41
    nack, lp = dec(wire)
    assert nack == Nack(Name("/example/hello"), 0x726D178A, NackReason.NO_ROUTE)
    assert lp.nack_reason == NackReason.NO_ROUTE and lp.nack_code == 150


def test_encode_nack_byte_exact() -> None:
    interest = Interest(Name("/example/hello"), nonce=0x726D178A, must_be_fresh=True)
    frag = T(5, NAME(C("example"), C("hello")), T(0x12), T(0x0A, bytes.fromhex("726d178a")), T(0x22, b"\x20"))
    expected = T(0x64, T(0x0320, T(0x0321, b"\x96")), T(0x50, frag))
    assert encode_ndn_nack(interest, NackReason.NO_ROUTE) == expected
    assert encode_ndn(Nack.for_interest(interest, NackReason.NO_ROUTE), interest=interest) == expected
    assert encode_ndn(interest, LpInfo(nack_reason=NackReason.NO_ROUTE)) == expected
    with_token = T(0x64, T(0x62, b"tok"), T(0x0320, T(0x0321, b"\x32")), T(0x50, frag))
    assert encode_ndn_nack(interest, NackReason.CONGESTION, pit_token=b"tok") == with_token
    nack, lp = dec(with_token)
    assert nack.reason == NackReason.CONGESTION and lp.pit_token == b"tok"


def test_nack_without_the_interest_is_rebuilt_from_name_and_nonce() -> None:
    wire = encode_ndn(Nack(Name("/a/b"), 9, NackReason.DUPLICATE))
    assert wire == T(0x64, T(0x0320, T(0x0321, b"\x64")), T(0x50, T(5, NAME(C("a"), C("b")), T(0x0A, b"\0\0\0\x09"))))
    assert dec(wire)[0] == Nack(Name("/a/b"), 9, NackReason.DUPLICATE)


def test_nack_of_a_params_interest_echoes_the_consumer_interest() -> None:
    m = fresh()
    interest, _ = decode_ndn(PYNDN_SIGNED_PARAMS, names=m)
    for wire in (encode_ndn(Nack.for_interest(interest, NackReason.NO_ROUTE), names=m),
                 encode_ndn_nack(interest, NackReason.NO_ROUTE, names=m)):
        nack, _ = decode_ndn(wire, names=fresh())
        assert nack.name == interest.name
        assert wire.endswith(PYNDN_SIGNED_PARAMS[PYNDN_SIGNED_PARAMS.index(b"\x24\x04\x93") :])
        assert PYNDN_SIGNED_PARAMS[2 : 2 + 2 + 0x2B] in wire
    with pytest.raises(ValueError, match="original Interest"):
        encode_ndn(Nack.for_interest(interest, NackReason.NO_ROUTE), names=fresh())


@pytest.mark.parametrize(
    ("code", "reason"),
    [(50, NackReason.CONGESTION), (100, NackReason.DUPLICATE), (150, NackReason.NO_ROUTE),
     (0, NackReason.NO_ROUTE), (None, NackReason.NO_ROUTE), (7, NackReason.NO_ROUTE),
     (160, NackReason.NO_RESOURCES), (180, NackReason.HOP_LIMIT), (200, NackReason.NOT_YET),
     (2**40, NackReason.NO_ROUTE)],
)
def test_nack_reason_mapping(code: int | None, reason: NackReason) -> None:
    assert nack_reason_from_ndn(code) == reason
    header = T(0x0320) if code is None else T(0x0320, T(0x0321, encode_nni(code)))
    wire = T(0x64, header, T(0x50, T(5, NAME(C("a")), T(0x0A, b"\0\0\0\1"))))
    nack, lp = dec(wire)
    assert nack.reason == reason and lp.nack_reason == reason and lp.nack_code == code


@pytest.mark.parametrize("reason", list(NackReason))
def test_every_icnd_reason_round_trips(reason: NackReason) -> None:
    interest = Interest(Name("/a"), nonce=3)
    nack, lp = dec(encode_ndn_nack(interest, reason))
    assert nack == Nack.for_interest(interest, reason) and lp.nack_code == int(reason)


def test_lp_local_fields_round_trip() -> None:
    data = Data(Name("/a"), b"x")
    wire = encode_ndn(data, LpInfo(incoming_face_id=300, congestion_mark=1, next_hop_face_id=7))
    assert wire == T(0x64, T(0x032C, b"\x01\x2c"), T(0x0330, b"\x07"), T(0x0340, b"\x01"),
                     T(0x50, encode_ndn(data)))
    _, lp = dec(wire)
    assert (lp.incoming_face_id, lp.next_hop_face_id, lp.congestion_mark) == (300, 7, 1)


def test_lp_ignorable_headers_are_ignored() -> None:
    frag = T(0x50, encode_ndn(Interest(Name("/a"), nonce=1)))
    for t in (0x0334, 0x0344, 0x0348, 0x034C, 0x0350, 800 + 4 * 30):
        assert dec(T(0x64, T(t, b"xyz"), frag))[0] == Interest(Name("/a"), nonce=1)
    assert dec(T(0x64, T(0x51, b"\0" * 8), frag))[0] == Interest(Name("/a"), nonce=1)  # Sequence


@pytest.mark.parametrize("t", [0x0321, 0x0345, 0x0346, 800 + 4 * 40, 0x63, 0x07])
def test_lp_unknown_headers_that_may_not_be_ignored(t: int) -> None:
    frag = T(0x50, encode_ndn(Interest(Name("/a"), nonce=1)))
    with pytest.raises(DecodeError):
        dec(T(0x64, T(t, b""), frag))


@pytest.mark.parametrize("t", [0x52, 0x53])
def test_lp_fragmentation_is_not_supported(t: int) -> None:
    frag = T(0x50, encode_ndn(Interest(Name("/a"), nonce=1)))
    with pytest.raises(DecodeError, match="fragmentation not supported"):
        dec(T(0x64, T(t, b"\x00"), frag))


def test_lp_structure_errors() -> None:
    interest = encode_ndn(Interest(Name("/a"), nonce=1))
    data = encode_ndn(Data(Name("/a")))
    with pytest.raises(IdlePacket):
        dec(T(0x64, T(0x62, b"t")))
    with pytest.raises(DecodeError):
        dec(T(0x64))
    cases = [
        T(0x64, T(0x50, interest), T(0x62, b"t")),  # header after Fragment
        T(0x64, T(0x50, interest + b"\x00")),  # junk after the fragment packet
        T(0x64, T(0x50, T(0x64, T(0x50, interest)))),  # LpPacket inside an LpPacket
        T(0x64, T(0x50, T(0x07, b""))),  # not a network packet
        T(0x64, T(0x0320, T(0x0321, b"\x96")), T(0x50, data)),  # Nack of a Data
        T(0x64, T(0x62, b"a"), T(0x62, b"b"), T(0x50, interest)),  # duplicate PitToken
        T(0x64, T(0x0320), T(0x0320), T(0x50, interest)),  # duplicate Nack
        T(0x64, T(0x0320, T(0x0321, b"\x96\x00\x00")), T(0x50, interest)),  # bad NNI
        T(0x64, T(0x0320, T(0x0321, b"\x96"), T(0x0321, b"\x96")), T(0x50, interest)),  # duplicate NackReason
        T(0x64, T(0x0320, T(0x13, b"")), T(0x50, interest)),  # unknown critical inside Nack
    ]
    for wire in cases:
        with pytest.raises(DecodeError):
            dec(wire)


# --- whole-packet strictness and limits ------------------------------------------------------------------------


def test_top_level_strictness() -> None:
    good = encode_ndn(Interest(Name("/a"), nonce=1))
    for bad in (good + b"\x00", good[:-1], b"", b"\x05", T(0x08, b"x"), T(0x65), bytes.fromhex("0000"),
                bytes.fromhex("05fd0003") + good[2:]):
        with pytest.raises(DecodeError):
            dec(bad)
    # a non-minimal outer length is accepted
    assert dec(b"\x05\xfd\x00" + bytes((len(good) - 2,)) + good[2:])[0] == Interest(Name("/a"), nonce=1)


def test_decode_accepts_bytearray_and_memoryview() -> None:
    good = encode_ndn(Interest(Name("/a"), nonce=1))
    assert decode_ndn(bytearray(good), names=fresh())[0] == decode_ndn(memoryview(good), names=fresh())[0]


def test_size_limit_on_decode() -> None:
    fits = T(6, NAME(C("a")), T(0x15, b"\x00" * (MAX_NDN_PACKET - 4 - 5 - 4)))
    assert len(fits) == MAX_NDN_PACKET
    dec(fits)
    too_big = T(6, NAME(C("a")), T(0x15, b"\x00" * (MAX_NDN_PACKET - 4 - 5 - 3)))
    assert len(too_big) == MAX_NDN_PACKET + 1
    with pytest.raises(DecodeError):
        dec(too_big)


def test_size_limit_on_encode() -> None:
    overhead = len(encode_ndn(Data(Name("/a"), b"\x00" * 1000))) - 1000
    fits = MAX_NDN_PACKET - overhead
    assert len(encode_ndn(Data(Name("/a"), b"\x00" * fits))) == MAX_NDN_PACKET
    with pytest.raises(ValueError, match="exceeds"):
        encode_ndn(Data(Name("/a"), b"\x00" * (fits + 1)))
    with pytest.raises(ValueError, match="exceeds"):  # the LpPacket wrapper counts too
        encode_ndn(Data(Name("/a"), b"\x00" * fits), LpInfo(pit_token=b"t"))
    with pytest.raises(ValueError, match="exceeds"):
        encode_ndn(Interest.with_params(Name("/a"), b"\x00" * MAX_NDN_PACKET, nonce=1))


def test_encode_rejects_non_packets() -> None:
    with pytest.raises(TypeError):
        encode_ndn("not a packet")  # type: ignore[arg-type]  # wrong input on purpose, or keywords the test builds


# --- property tests: round trips and fuzzing ---------------------------------------------------------------------

from icnd.name import valid_wire_comps  # noqa: E402

PROPS = settings(max_examples=200, deadline=None)
U32 = 2**32 - 1

NDN_COMPONENTS = st.one_of(
    st.binary(max_size=20).map(generic),
    st.integers(0, 2**64 - 1).map(segment),
    st.integers(0, 2**64 - 1).map(version),
    st.binary(min_size=32, max_size=32).map(digest),
    st.tuples(st.sampled_from([0x20, 0x21, 0x30, 0xF0, 0xFF, 3, 9]), st.binary(max_size=8)).map(
        lambda tv: bytes((tv[0],)) + tv[1]),
    st.binary(min_size=250, max_size=260).map(generic),  # 3-byte TLV lengths
)
NDN_NAMES = st.lists(NDN_COMPONENTS, max_size=6).map(tuple).filter(valid_wire_comps).map(Name.from_wire)
NONEMPTY_NAMES = NDN_NAMES.filter(lambda n: len(n) > 0)


@st.composite
def ndn_interests(draw: st.DrawFn) -> Interest:
    kw = dict(
        nonce=draw(st.integers(0, U32)),
        lifetime_ms=draw(st.one_of(st.just(4000), st.integers(0, U32))),
        hop_limit=draw(st.integers(0, 255)),
        can_be_prefix=draw(st.booleans()),
        must_be_fresh=draw(st.booleans()),
        forwarding_hint=tuple(draw(st.lists(NONEMPTY_NAMES, max_size=3))),
    )
    name = draw(NONEMPTY_NAMES)
    params = draw(st.one_of(st.none(), st.binary(max_size=300)))
    if params is None:
        return Interest(name, **kw)  # type: ignore[arg-type]  # wrong input on purpose, or keywords the test builds
    return Interest.with_params(name, params, **kw)  # type: ignore[arg-type]  # wrong input on purpose, or keywords the test builds


@st.composite
def ndn_datas(draw: st.DrawFn) -> Data:
    return Data(
        draw(NDN_NAMES),
        content=draw(st.binary(max_size=300)),
        content_type=draw(st.integers(0, 0xFFFF)),
        freshness_ms=draw(st.integers(0, U32)),
        final_block_id=draw(st.one_of(st.none(), NDN_COMPONENTS)),
    )


@st.composite
def ndn_nacks(draw: st.DrawFn) -> tuple[Nack, Interest]:
    interest = draw(ndn_interests())
    return Nack.for_interest(interest, draw(st.sampled_from(list(NackReason)))), interest


LP_INFOS = st.builds(
    LpInfo,
    pit_token=st.one_of(st.none(), st.binary(min_size=1, max_size=32)),
    incoming_face_id=st.one_of(st.none(), st.integers(0, 2**64 - 1)),
    congestion_mark=st.one_of(st.none(), st.integers(0, 3)),
)


@PROPS
@given(ndn_interests(), LP_INFOS)
def test_prop_interest_round_trip(interest: Interest, lp: LpInfo) -> None:
    m = fresh()
    wire = encode_ndn(interest, lp, names=m)
    back, lp_back = decode_ndn(wire, names=m)
    assert back == interest
    assert (lp_back.pit_token, lp_back.incoming_face_id, lp_back.congestion_mark) == (
        lp.pit_token, lp.incoming_face_id, lp.congestion_mark)
    assert encode_ndn(back, lp, names=m) == wire
    # a different node (no shared memory) still gets the same icnd Interest
    assert decode_ndn(wire, names=None)[0] == interest


@PROPS
@given(ndn_datas(), LP_INFOS)
def test_prop_data_round_trip(data: Data, lp: LpInfo) -> None:
    wire = encode_ndn(data, lp, names=fresh())
    back, _ = dec(wire)
    assert (back.name, back.content, back.content_type, back.freshness_ms, back.final_block_id) == (
        data.name, data.content, data.content_type, data.freshness_ms, data.final_block_id)
    KeyChain().verify(back)
    assert encode_ndn(back, lp, names=fresh()) == wire
    assert ndn_signed_portion(encode_ndn(data, names=fresh()))  # has a signature


@PROPS
@given(ndn_nacks(), st.one_of(st.none(), st.binary(min_size=1, max_size=32)))
def test_prop_nack_round_trip(nack_and_interest: tuple[Nack, Interest], token: bytes | None) -> None:
    nack, interest = nack_and_interest
    m = fresh()
    wire = encode_ndn(nack, LpInfo(pit_token=token), interest=interest, names=m)
    back, lp = decode_ndn(wire, names=m)
    assert back == nack and lp.pit_token == token and lp.nack_reason == nack.reason


def decode_or_reject(buf: bytes) -> None:
    """Only DecodeError may escape; an accepted packet re-encodes to an equal packet."""
    m = fresh()
    try:
        packet, lp = decode_ndn(buf, names=m)
    except DecodeError:
        return
    if isinstance(packet, Nack) and any(c[0] == T_PARAMS for c in packet.name.comps):
        return  # a Nack of a params Interest needs the original Interest to re-encode
    lp_out = LpInfo(pit_token=lp.pit_token)
    again = decode_ndn(encode_ndn(packet, lp_out, names=m), names=m)[0]
    assert again == packet


@PROPS
@given(st.binary(max_size=300))
def test_prop_fuzz_random_bytes(buf: bytes) -> None:
    decode_or_reject(buf)


@PROPS
@given(st.sampled_from([5, 6, 0x64]), st.binary(max_size=200))
def test_prop_fuzz_random_values_in_a_valid_outer_tlv(t: int, value: bytes) -> None:
    decode_or_reject(T(t, value))


@st.composite
def mutated(draw: st.DrawFn, wire: bytes) -> bytes:
    buf = bytearray(wire)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "replace", "truncate"]))
        if op == "insert":
            at = draw(st.integers(0, len(buf)))
            buf[at:at] = draw(st.binary(min_size=1, max_size=4))
            continue
        if not buf:
            break
        at = draw(st.integers(0, len(buf) - 1))
        if op == "flip":
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "delete":
            del buf[at : at + draw(st.integers(1, 4))]
        elif op == "replace":
            buf[at] = draw(st.integers(0, 255))
        else:
            del buf[at:]
    return bytes(buf)


VALID_WIRES = st.one_of(
    st.tuples(ndn_interests(), LP_INFOS).map(lambda p: encode_ndn(p[0], p[1], names=None)),
    st.tuples(ndn_datas(), LP_INFOS).map(lambda p: encode_ndn(p[0], p[1], names=None)),
    ndn_nacks().map(lambda p: encode_ndn(p[0], interest=p[1], names=None)),
    st.sampled_from([PYNDN_REGISTER_V2, PYNDN_REGISTER_LEGACY, PYNDN_SIGNED_PARAMS, PYNDN_DATA, CONSUMER_INTEREST]),
)


@PROPS
@given(st.data())
def test_prop_fuzz_mutated_encodings(data: st.DataObject) -> None:
    wire = data.draw(VALID_WIRES)
    decode_or_reject(data.draw(mutated(wire)))


@PROPS
@given(VALID_WIRES, st.data())
def test_prop_frame_length_of_valid_packets(wire: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(wire)))
    got = frame_length(wire[:cut])
    assert got is None or got == len(wire)
    assert frame_length(wire) == len(wire)


# --- cross-check against python-ndn (only when it is installed) ---------------------------------------------------


@pytest.fixture
def pyndn():  # type: ignore[no-untyped-def]  # a pytest fixture or helper over any packet
    # "ndn.encoding", not "ndn": without python-ndn, "ndn" may resolve to this tests/ndn directory.
    return pytest.importorskip("ndn.encoding")


def test_python_ndn_parses_our_interest(pyndn) -> None:  # type: ignore[no-untyped-def]  # a pytest fixture or helper over any packet
    interest = Interest(Name("/a/seg=3/v=7"), nonce=0xDEADBEEF, lifetime_ms=2000, hop_limit=9, can_be_prefix=True,
                        must_be_fresh=True, forwarding_hint=(Name("/hint/a"),))
    name, param, app_param, _ = pyndn.parse_interest(encode_ndn(interest))
    assert pyndn.Name.to_str(name) == "/a/seg=3/v=7"
    assert (param.nonce, param.lifetime, param.hop_limit, param.can_be_prefix, param.must_be_fresh) == (
        0xDEADBEEF, 2000, 9, True, True)
    assert app_param is None and len(param.forwarding_hint) == 1


def test_python_ndn_accepts_our_params_digest(pyndn) -> None:  # type: ignore[no-untyped-def]  # a pytest fixture or helper over any packet
    import asyncio

    from ndn.security.validator.digest_validator import params_sha256_checker

    wire = encode_ndn(Interest.with_params(Name("/f/call"), b"\x93\x01\x02\x03", nonce=5), names=fresh())
    name, _, app_param, sig = pyndn.parse_interest(wire)
    assert bytes(app_param) == b"\x93\x01\x02\x03"
    assert asyncio.run(params_sha256_checker(name, sig))


def test_python_ndn_accepts_our_data_digest(pyndn) -> None:  # type: ignore[no-untyped-def]  # a pytest fixture or helper over any packet
    import asyncio

    from ndn.security.validator.digest_validator import sha256_digest_checker

    wire = encode_ndn(Data(Name("/a/b/seg=0"), b"hello", content_type=2, freshness_ms=1000, final_block_id=segment(9)))
    name, meta, content, sig = pyndn.parse_data(wire)
    assert pyndn.Name.to_str(name) == "/a/b/seg=0" and bytes(content) == b"hello"
    assert (meta.content_type, meta.freshness_period, bytes(meta.final_block_id)) == (2, 1000, b"\x32\x01\x09")
    assert asyncio.run(sha256_digest_checker(name, sig))


def test_python_ndn_parses_our_lp_packets(pyndn) -> None:  # type: ignore[no-untyped-def]  # a pytest fixture or helper over any packet
    from ndn.encoding.ndnlp_v2 import parse_lp_packet_v2

    interest = Interest(Name("/x"), nonce=7)
    lp = parse_lp_packet_v2(encode_ndn_nack(interest, NackReason.NO_ROUTE, pit_token=b"tok"))
    assert lp.nack.nack_reason == 150 and bytes(lp.pit_token) == b"tok"
    assert pyndn.Name.to_str(pyndn.parse_interest(lp.fragment)[0]) == "/x"
    lp = parse_lp_packet_v2(encode_ndn(Data(Name("/x"), b"d"), LpInfo(pit_token=b"\x01" * 8)))
    assert lp.nack is None and bytes(lp.pit_token) == b"\x01" * 8


def test_we_decode_python_ndn_packets(pyndn) -> None:  # type: ignore[no-untyped-def]  # a pytest fixture or helper over any packet
    from ndn.encoding.ndnlp_v2 import make_network_nack
    from ndn.security import DigestSha256Signer

    ip = pyndn.InterestParam(can_be_prefix=True, must_be_fresh=True, nonce=0x01020304, lifetime=1500, hop_limit=4,
                             forwarding_hint=["/h"])
    interest, _ = dec(bytes(pyndn.make_interest("/a/32=kw/seg=1", ip)))
    assert interest == Interest(Name.from_wire((generic("a"), b"\x20kw", segment(1))), nonce=0x01020304,
                                lifetime_ms=1500, hop_limit=4, can_be_prefix=True, must_be_fresh=True,
                                forwarding_hint=(Name("/h"),))
    signed = bytes(pyndn.make_interest("/f", pyndn.InterestParam(), app_param=b"args",
                                       signer=DigestSha256Signer(for_interest=True)))
    interest, lp = dec(signed)
    assert interest.app_params == b"args" and interest.params_ok()
    assert lp.signed_interest is not None and lp.signed_interest.digest_ok()
    data = bytes(pyndn.make_data("/d", pyndn.MetaInfo(freshness_period=10), b"c", signer=DigestSha256Signer()))
    got, lp = dec(data)
    assert (got.name, got.content, got.freshness_ms) == (Name("/d"), b"c", 10)
    nack, lp = dec(bytes(make_network_nack(pyndn.make_interest("/n", pyndn.InterestParam(nonce=9)), 100)))
    assert nack == Nack(Name("/n"), 9, NackReason.DUPLICATE)


# --- fast paths and memos: the same answers as the general code, cold or warm ---------------------------------------
#
# The codec reads one-byte TLV headers inline, memoises name translations (NDN Name TLV <-> icnd Name) and short
# MetaInfo / SignatureInfo values, and re-signs decoded Data in one msgpack call.  Each shortcut must give exactly
# what the general code gives, and accept and reject exactly the same inputs.

import icnd.ndn.codec as ndn_codec  # noqa: E402
from icnd.ndn.tlv import frame_length_at  # noqa: E402
from icnd.security import DigestKey  # noqa: E402


def _reference_read_tl(buf: bytes, offset: int, end: int) -> tuple[int, int, int]:
    """`read_tl` without its inline fast path (the general code, as it was)."""
    t, pos = read_varnum(buf, offset)
    if pos > end:
        raise DecodeError("truncated")
    if t == 0 or t > 2**32 - 1:
        raise DecodeError("invalid type")
    length, pos = read_varnum(buf, pos)
    if pos + length > end:
        raise DecodeError("runs past")
    return t, pos, pos + length


def _outcome(f, *args):  # type: ignore[no-untyped-def]  # a pytest fixture or helper over any packet
    try:
        return f(*args)
    except DecodeError:
        return DecodeError


@PROPS
@given(st.binary(max_size=24), st.data())
def test_prop_read_tl_fast_path_matches_the_general_code(buf: bytes, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, len(buf)))
    end = data.draw(st.integers(0, len(buf) + 3))  # an `end` past the buffer too
    for b in (buf, bytearray(buf), memoryview(buf)):
        assert _outcome(read_tl, b, offset, end) == _outcome(_reference_read_tl, buf, offset, end)


@PROPS
@given(st.binary(max_size=24), st.data())
def test_prop_frame_length_at_is_frame_length_of_the_slice(buf: bytes, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(buf)))
    end = data.draw(st.integers(start, len(buf)))
    assert _outcome(frame_length_at, memoryview(buf), start, end) == _outcome(frame_length, buf[start:end])


def _reference_decode_comps(buf: bytes, start: int, end: int) -> tuple[bytes, ...]:
    comps = []
    for t, vs, ve in iter_tlvs(buf, start, end):
        if t > 0xFF:
            raise DecodeError("unsupported component type")
        if t in (1, 2) and ve - vs != 32:
            raise DecodeError("digest size")
        comps.append(bytes((t,)) + buf[vs:ve])
    result = tuple(comps)
    if not valid_wire_comps(result):
        raise DecodeError("limits")
    return result


def _varnum(n: int, long: bool) -> bytes:
    """`n` as a VAR-NUMBER, in its shortest form or a longer (non-minimal) one."""
    return write_varnum(n) if not long or n > 0xFFFF else b"\xfd" + n.to_bytes(2, "big")


COMPONENT_TLVS = st.builds(
    lambda t, v, long_t, long_l: _varnum(t, long_t) + _varnum(len(v), long_l) + v,
    st.sampled_from([0, 1, 2, 8, 0x20, 0xFC, 0xFD, 0xFF, 0x100]),
    st.one_of(st.binary(max_size=8), st.binary(min_size=32, max_size=32), st.binary(min_size=250, max_size=260)),
    st.booleans(),
    st.booleans(),
)


@PROPS
@given(st.lists(COMPONENT_TLVS, max_size=5), st.binary(max_size=3))
def test_prop_component_parsing_matches_the_general_code(tlvs: list[bytes], junk: bytes) -> None:
    for value in (b"".join(tlvs), b"".join(tlvs) + junk):
        assert _outcome(ndn_codec._decode_comps, value, 0, len(value)) == _outcome(
            _reference_decode_comps, value, 0, len(value))


def _cold_and_warm(f, *args):  # type: ignore[no-untyped-def]  # a pytest fixture or helper over any packet
    """f(*args) with every memo empty, then again with them warm: both outcomes."""
    ndn_codec._clear_memos()
    try:
        cold = _outcome(f, *args)
        warm = _outcome(f, *args)
    except ValueError:
        cold = warm = ValueError
        with pytest.raises(ValueError):
            f(*args)
    return cold, warm


def _drawn_nonce(outcome, buf: bytes):  # type: ignore[no-untyped-def]
    """`outcome` with the nonce of an Interest whose wire carries none set to 0:
    the decoder draws a fresh one for it each time (a mutated wire can lose
    its Nonce into the name), which no memo may be blamed for."""
    if isinstance(outcome, tuple) and isinstance(outcome[0], Interest):
        nonce = outcome[0].nonce.to_bytes(4, "big")
        if b"\x0a\x04" + nonce not in buf:
            return (dataclasses.replace(outcome[0], nonce=0), *outcome[1:])
    return outcome


@PROPS
@given(st.data())
def test_prop_decoding_is_the_same_with_and_without_memos(data: st.DataObject) -> None:
    wire = data.draw(VALID_WIRES)
    for buf in (wire, data.draw(mutated(wire))):
        cold, warm = _cold_and_warm(lambda b: decode_ndn(b, names=None), buf)
        assert _drawn_nonce(cold, buf) == _drawn_nonce(warm, buf)
        if cold is not DecodeError:  # and the packet encodes the same either way
            cold_wire, warm_wire = _cold_and_warm(lambda p: encode_ndn(p, names=None), cold[0])
            assert cold_wire == warm_wire


@PROPS
@given(st.one_of(ndn_interests(), ndn_datas()), st.data())
def test_prop_encoding_is_the_same_with_and_without_memos(packet: Interest | Data, data: st.DataObject) -> None:
    cold, warm = _cold_and_warm(lambda p: encode_ndn(p, names=None), packet)
    assert cold == warm
    # out-of-range fields are refused with the name memoised, as without it
    if isinstance(packet, Interest) and packet.app_params is None:
        bad = Interest(packet.name, nonce=data.draw(st.sampled_from([-1, 2**32])), forwarding_hint=())
        assert _cold_and_warm(lambda p: encode_ndn(p, names=None), bad) == (ValueError, ValueError)
        bad = Interest(packet.name, hop_limit=data.draw(st.sampled_from([-1, 256])))
        assert _cold_and_warm(lambda p: encode_ndn(p, names=None), bad) == (ValueError, ValueError)


def test_an_empty_interest_name_is_refused_even_when_memoised() -> None:
    ndn_codec._clear_memos()
    encode_ndn(Data(Name("/")), names=None)  # memoises the empty name (fine for a Data)
    with pytest.raises(ValueError, match="at least one component"):
        encode_ndn(Interest(Name("/"), nonce=1), names=None)


def test_a_non_minimal_name_is_decoded_but_not_memoised() -> None:
    ndn_codec._clear_memos()
    long_form = b"\x07\x0b" + b"\x08\xfd\x00\x01a" + b"\x08\xfd\x00\x02bc"  # non-minimal component lengths
    interest, _ = decode_ndn(encode_tlv(5, long_form + b"\x0a\x04\x00\x00\x00\x01"), names=None)
    assert interest.name == Name("/a/bc")
    assert not ndn_codec._NAMES and not ndn_codec._NAME_TLVS
    wire = encode_ndn(interest, names=None)
    assert wire[2:11] == b"\x07\x07\x08\x01a\x08\x02bc"  # re-encoded in the shortest form
    assert decode_ndn(wire, names=None)[0] == interest


def test_name_memos_are_bounded() -> None:
    ndn_codec._clear_memos()
    for i in range(ndn_codec._NAME_MEMO_CAPACITY + 10):
        encode_ndn(Data(Name(f"/bounded/{i}")), names=None)
        decode_ndn(encode_ndn(Interest(Name(f"/other/{i}"), nonce=i), names=None), names=None)
    assert 0 < len(ndn_codec._NAMES) <= ndn_codec._NAME_MEMO_CAPACITY
    assert 0 < len(ndn_codec._NAME_TLVS) <= ndn_codec._NAME_MEMO_CAPACITY


def test_signature_infos_unique_per_packet_are_not_memoised_and_errors_never() -> None:
    ndn_codec._clear_memos()
    name = encode_tlv(7, b"\x08\x01d")
    sig = encode_tlv(0x16, b"\x1b\x01\x00\x26\x02\x01\x02")  # with a SignatureNonce
    wire = encode_tlv(6, name + sig + b"\x17\x00")
    assert dec(wire)[1].data_signature.nonce == b"\x01\x02"
    assert not ndn_codec._SIG_INFOS
    bad = encode_tlv(6, name + encode_tlv(0x16, b"\x1b\x01\x00\x1b\x01\x00") + b"\x17\x00")  # duplicate type
    for _ in range(2):
        with pytest.raises(DecodeError, match="duplicate"):
            dec(bad)
    plain = encode_tlv(6, name + b"\x16\x03\x1b\x01\x00\x17\x00")
    first, second = dec(plain)[1].data_signature, dec(plain)[1].data_signature
    assert first == second == ndn_codec.NdnSignatureInfo(0) and len(ndn_codec._SIG_INFOS) == 1


def test_fast_re_signing_is_in_use() -> None:
    assert ndn_codec._digest_signed is ndn_codec._digest_signed_fast  # the import-time self-check passed


@PROPS
@given(ndn_datas())
def test_prop_fast_re_signing_matches_digest_key_signing(data: Data) -> None:
    fields = (data.name, data.content, int(data.content_type), data.freshness_ms, data.final_block_id)
    fast = ndn_codec._digest_signed_fast(*fields)
    expected = DigestKey().sign(Data(*fields))  # type: ignore[arg-type]  # wrong input on purpose, or keywords the test builds
    assert fast == expected and fast.wire == expected.wire and fast.sig_value == expected.sig_value
    KeyChain().verify(fast)
    # and a decoded NDN Data is exactly that
    decoded, _ = dec(encode_ndn(data, names=None))
    assert decoded.wire == expected.wire
