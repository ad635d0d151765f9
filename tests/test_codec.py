"""The wire codec: round trips, the Data wire cache, and strict decoding."""

from __future__ import annotations

import dataclasses
import hashlib

import msgpack
import pytest

from icnd import ContentType, Data, DecodeError, Interest, Nack, NackReason, Name, SigType, decode, encode
from icnd.codec import (
    MAX_HINTS,
    MAX_PACKET_SIZE,
    MAX_PARAMS_SIZE,
    MAX_SIG_SIZE,
    VERSION,
    full_name,
    implicit_digest,
    signed_portion,
    signed_portion_of_wire,
    with_signature,
)
from icnd.name import T_DIGEST, params_digest, segment


def pack(obj: object) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def full_interest() -> Interest:
    return Interest(
        Name("/a/b/c"),
        nonce=0xDEADBEEF,
        lifetime_ms=1234,
        hop_limit=7,
        can_be_prefix=True,
        must_be_fresh=True,
        forwarding_hint=(Name("/hint/one"), Name("/hint/two/seg=3")),
    )


def full_data() -> Data:
    return Data(
        Name("/a/b/v=2/seg=0"),
        content=b"\x00payload\xff" * 10,
        content_type=ContentType.MANIFEST,
        freshness_ms=5000,
        final_block_id=segment(9),
        sig_type=SigType.ED25519,
        key_locator=Name("/alice/KEY/%01%02%03%04%05%06%07%08"),
        sig_value=bytes(range(64)),
    )


def interest_fields(**over: object) -> list[object]:
    """A valid Interest as a raw field list, with positions overridden by name."""
    fields: dict[str, object] = {
        "version": VERSION,
        "type": 1,
        "name": [b"\x08a"],
        "nonce": 1,
        "lifetime": 4000,
        "hop": 32,
        "flags": 0,
        "params": None,
        "hints": [],
    }
    fields.update(over)
    return list(fields.values())


def data_fields(**over: object) -> list[object]:
    fields: dict[str, object] = {
        "version": VERSION,
        "type": 2,
        "name": [b"\x08a"],
        "ctype": 0,
        "fresh": 0,
        "fbid": None,
        "content": b"x",
        "sig_type": 0,
        "kl": None,
        "sig": b"\x00" * 32,
    }
    fields.update(over)
    return list(fields.values())


def nack_fields(**over: object) -> list[object]:
    fields: dict[str, object] = {
        "version": VERSION,
        "type": 3,
        "name": [b"\x08a"],
        "nonce": 1,
        "reason": int(NackReason.NO_ROUTE),
        "detail": "",
    }
    fields.update(over)
    return list(fields.values())


# --- round trips ---------------------------------------------------------------


def test_interest_round_trip_all_fields() -> None:
    interest = full_interest()
    assert decode(encode(interest)) == interest


def test_interest_defaults_round_trip() -> None:
    interest = Interest(Name("/x"))
    back = decode(encode(interest))
    assert back == interest
    assert isinstance(back, Interest)
    assert back.lifetime_ms == 4000 and back.hop_limit == 32
    assert not back.can_be_prefix and not back.must_be_fresh


def test_interest_with_params_round_trip() -> None:
    interest = Interest.with_params(Name("/f/call"), b"\x01\x02args", nonce=5, hop_limit=3)
    assert interest.name[-1].type == 0x02
    assert interest.params_ok()
    back = decode(encode(interest))
    assert back == interest
    assert isinstance(back, Interest) and back.app_params == b"\x01\x02args"


def test_data_round_trip_all_fields() -> None:
    data = full_data()
    back = decode(encode(data))
    assert back == data
    assert isinstance(back, Data)
    assert back.key_locator == data.key_locator
    assert back.final_block_id == segment(9)
    assert back.content_type == ContentType.MANIFEST


def test_data_defaults_round_trip() -> None:
    data = Data(Name("/d"))
    assert decode(encode(data)) == data


@pytest.mark.parametrize("reason", list(NackReason))
def test_nack_round_trip(reason: NackReason) -> None:
    nack = Nack(Name("/n/seg=1"), 0xFFFFFFFF, reason, "détail")
    back = decode(encode(nack))
    assert back == nack
    assert isinstance(back, Nack) and back.reason is reason


def test_empty_name_round_trip() -> None:
    for packet in (Interest(Name("/"), nonce=1), Data(Name("/")), Nack(Name("/"), 1, NackReason.DUPLICATE)):
        assert decode(encode(packet)) == packet


def test_encode_rejects_non_packets() -> None:
    with pytest.raises(TypeError):
        encode("not a packet")  # type: ignore[arg-type]


def test_decode_accepts_bytearray_and_memoryview() -> None:
    wire = encode(full_data())
    assert decode(bytearray(wire)) == full_data()
    assert decode(memoryview(wire)) == full_data()


def test_a_large_data_decoded_from_a_view_keeps_the_view_and_copies_nothing() -> None:
    """A stream face hands a large Data over as a read-only view of its own
    buffer (issue #18): the Data keeps that view as its encoding and its
    content is a view into it; re-encoding returns the view itself.  A small
    packet in a view, or a large one that is not a Data, is decoded from a copy."""
    big = Data("/big", bytes(range(256)) * 2048, freshness_ms=5)  # 512 KiB
    buf = bytearray(encode(big))
    view = memoryview(buf).toreadonly()
    back = decode(view)
    assert back == big and back.wire is view and encode(back) is view
    assert isinstance(back.content, memoryview) and back.content.obj is buf
    writable = decode(memoryview(buf))  # a view someone could still write through: decoded from a copy
    assert writable == big and type(writable.wire) is bytes
    small = decode(memoryview(bytearray(encode(full_data()))).toreadonly())
    assert small == full_data() and type(small.wire) is bytes
    interest = Interest.with_params(Name("/i"), b"p" * (600 * 1024))
    again = decode(memoryview(bytearray(encode(interest))).toreadonly())
    assert again == interest and type(again.app_params) is bytes


# --- the Data wire cache ---------------------------------------------------------


def test_data_wire_cached_on_encode() -> None:
    data = full_data()
    assert data.wire is None
    wire = encode(data)
    assert data.wire is wire
    assert encode(data) is wire
    assert data.key_locator is not None
    fields = [VERSION, 2, data.name.comps, int(data.content_type), data.freshness_ms, data.final_block_id,
              data.content, int(data.sig_type), data.key_locator.comps, data.sig_value]
    assert wire == pack(fields)


def test_decoded_data_keeps_its_wire() -> None:
    wire = encode(full_data())
    back = decode(wire)
    assert isinstance(back, Data)
    assert back.wire == wire
    assert encode(back) == wire


def test_wire_takes_no_part_in_equality() -> None:
    a, b = full_data(), full_data()
    encode(a)
    assert a.wire is not None and b.wire is None
    assert a == b


def test_replace_drops_the_wire_cache() -> None:
    """`dataclasses.replace` makes a copy that encodes its own fields, never
    the original's cached bytes (`wire` is not an init field)."""
    data = full_data()
    old = encode(data)
    changed = dataclasses.replace(data, content=b"x")
    assert changed.wire is None
    back = decode(encode(changed))
    assert isinstance(back, Data)
    assert back.content == b"x" and back == changed
    assert encode(changed) != old
    assert decode(old) == data  # the original keeps its own encoding
    with pytest.raises(ValueError):
        dataclasses.replace(data, wire=old)  # type: ignore[call-arg]  # not an init field: refused


def test_signed_portion_is_the_encoding_minus_sig_value() -> None:
    data = full_data()
    wire = encode(data)
    portion = signed_portion(data)
    assert wire == portion + pack(data.sig_value)
    assert bytes(signed_portion_of_wire(decode(wire))) == portion  # type: ignore[arg-type]


def test_with_signature_builds_consistent_wire() -> None:
    unsigned = Data(Name("/s"), b"c", sig_type=SigType.HMAC_SHA256, key_locator=Name("/k"))
    portion = signed_portion(unsigned)
    signed = with_signature(unsigned, b"\x07" * 32, portion)
    assert signed.sig_value == b"\x07" * 32
    assert signed.wire is not None
    fresh = Data(signed.name, signed.content, signed.content_type, signed.freshness_ms, signed.final_block_id,
                 signed.sig_type, signed.key_locator, signed.sig_value)
    assert encode(fresh) == signed.wire
    assert decode(signed.wire) == signed


# --- implicit digest ----------------------------------------------------------------


def test_implicit_digest() -> None:
    data = full_data()
    wire = encode(data)
    assert implicit_digest(data) == hashlib.sha256(wire).digest()
    full = full_name(data)
    assert full[:-1] == data.name
    assert full[-1].type == T_DIGEST
    assert bytes(full[-1]) == hashlib.sha256(wire).digest()
    back = decode(wire)
    assert isinstance(back, Data)
    assert full_name(back) == full


def test_implicit_digest_depends_on_signature() -> None:
    a = full_data()
    b = Data(a.name, a.content, a.content_type, a.freshness_ms, a.final_block_id, a.sig_type,
             a.key_locator, bytes(64))
    assert implicit_digest(a) != implicit_digest(b)


# --- strict decoding ------------------------------------------------------------------


def test_params_digest_mismatch_raises() -> None:
    good = Interest.with_params(Name("/f"), b"args", nonce=1)
    forged = Interest(good.name, nonce=1, app_params=b"other")
    with pytest.raises(DecodeError, match="params-sha256"):
        decode(encode(forged))


def test_params_without_digest_component_raises() -> None:
    with pytest.raises(DecodeError):
        decode(encode(Interest(Name("/f"), nonce=1, app_params=b"args")))


def test_digest_component_without_params_raises() -> None:
    name = Name("/f").append_wire(params_digest(hashlib.sha256(b"args").digest()))
    with pytest.raises(DecodeError):
        decode(encode(Interest(name, nonce=1)))


@pytest.mark.parametrize("version", [0, 2, 255, -1, True, 1.0, "1", None, b"\x01"])
def test_unknown_version_raises(version: object) -> None:
    for make in (interest_fields, data_fields, nack_fields):
        with pytest.raises(DecodeError):
            decode(pack(make(version=version)))


@pytest.mark.parametrize("ptype", [0, 4, 99, True, 2.0, "2", None])
def test_unknown_packet_type_raises(ptype: object) -> None:
    with pytest.raises(DecodeError):
        decode(pack(data_fields(type=ptype)))


@pytest.mark.parametrize("packet", [full_interest(), full_data(), Nack(Name("/n"), 1, NackReason.CONGESTION)])
@pytest.mark.parametrize("garbage", [b"\x00", b"\xc0", b"\x91\x01", b"\xff\xff\xff"])
def test_trailing_garbage_raises(packet: Interest | Data | Nack, garbage: bytes) -> None:
    with pytest.raises(DecodeError):
        decode(encode(packet) + garbage)


@pytest.mark.parametrize(
    "buf",
    [b"", b"\xc0", b"\x01", b"\x90", b"\x91\x01", b"\xc1", b"\x92\x01", pack({"a": 1}), pack("s"), pack([1])],
)
def test_not_a_packet_raises(buf: bytes) -> None:
    with pytest.raises(DecodeError):
        decode(buf)


BAD_INTEREST = [
    {"name": b"\x08a"},  # name not an array
    {"name": [b""]},  # empty wire component
    {"name": ["a"]},  # str component
    {"name": [b"\x08a"] * 65},  # too many components
    {"name": [b"\x08" + b"x" * 1025]},  # component too long
    {"name": [b"\x08" + b"x" * 1000] * 3},  # name too long
    {"nonce": -1},
    {"nonce": 1 << 32},
    {"nonce": True},
    {"nonce": 1.5},
    {"nonce": b"\x00\x00\x00\x01"},
    {"lifetime": -5},
    {"lifetime": "4000"},
    {"hop": 256},
    {"hop": None},
    {"flags": 4},
    {"flags": False},
    {"params": "text"},
    {"params": [b"a"]},
    {"hints": None},
    {"hints": [b"\x08a"]},
    {"hints": [[b"\x08h"]] * (MAX_HINTS + 1)},
    {"hints": [["h"]]},
]


@pytest.mark.parametrize("override", BAD_INTEREST)
def test_bad_interest_fields_raise(override: dict[str, object]) -> None:
    with pytest.raises(DecodeError):
        decode(pack(interest_fields(**override)))


def test_interest_wrong_length_raises() -> None:
    with pytest.raises(DecodeError):
        decode(pack(interest_fields()[:-1]))
    with pytest.raises(DecodeError):
        decode(pack(interest_fields() + [0]))


BAD_DATA = [
    {"name": None},
    {"name": [1]},
    {"ctype": -1},
    {"ctype": 0x10000},
    {"ctype": "blob"},
    {"fresh": -1},
    {"fresh": 1 << 32},
    {"fbid": b""},
    {"fbid": "seg=1"},
    {"fbid": 7},
    {"content": "text"},
    {"content": None},
    {"sig_type": 1},
    {"sig_type": 99},
    {"sig_type": 0.0},
    {"sig_type": False},
    {"kl": "/k"},
    {"kl": [b""]},
    {"sig": None},
    {"sig": "sig"},
    {"sig": b"\x00" * (MAX_SIG_SIZE + 1)},
]


@pytest.mark.parametrize("override", BAD_DATA)
def test_bad_data_fields_raise(override: dict[str, object]) -> None:
    with pytest.raises(DecodeError):
        decode(pack(data_fields(**override)))


def test_data_wrong_length_raises() -> None:
    with pytest.raises(DecodeError):
        decode(pack(data_fields()[:-1]))


BAD_NACK = [
    {"name": "/a"},
    {"nonce": -1},
    {"reason": 1},
    {"reason": "no-route"},
    {"reason": 150.0},
    {"detail": b"bytes"},
    {"detail": None},
    {"detail": "x" * 1025},
]


@pytest.mark.parametrize("override", BAD_NACK)
def test_bad_nack_fields_raise(override: dict[str, object]) -> None:
    with pytest.raises(DecodeError):
        decode(pack(nack_fields(**override)))


def test_raw_field_lists_are_valid() -> None:
    """The helpers above build valid packets, so each failure is the override's."""
    assert isinstance(decode(pack(interest_fields())), Interest)
    assert isinstance(decode(pack(data_fields())), Data)
    assert isinstance(decode(pack(nack_fields())), Nack)


def test_maps_and_ext_types_raise() -> None:
    with pytest.raises(DecodeError):
        decode(pack(data_fields(content={"a": 1})))
    with pytest.raises(DecodeError):
        decode(pack(data_fields(content=msgpack.ExtType(1, b"abc"))))


def test_oversize_packet_raises() -> None:
    with pytest.raises(DecodeError, match="exceeds"):
        decode(b"\x00" * (MAX_PACKET_SIZE + 1))


def test_oversize_params_raise() -> None:
    interest = Interest.with_params(Name("/f"), b"p" * (MAX_PARAMS_SIZE + 1), nonce=1)
    with pytest.raises(DecodeError):
        decode(encode(interest))


def test_claimed_length_beyond_buffer_raises() -> None:
    # bin32 header claiming 4 GiB with almost nothing behind it: must not allocate, must not hang.
    with pytest.raises(DecodeError):
        decode(b"\x9a\x01\x02\x91\xc4\x02\x08a\x00\x00\xc0\xc6\xff\xff\xff\xff")
    with pytest.raises(DecodeError):
        decode(b"\xdd\xff\xff\xff\xff")  # array32 of 4G elements


def test_deep_nesting_raises() -> None:
    with pytest.raises(DecodeError):
        decode(b"\x91" * 5000 + b"\xc0")


def test_a_large_content_is_encoded_by_its_parts_as_the_packer_would() -> None:
    """issue #18: above LARGE_CONTENT, `encode` joins (head, content, tail, sig): same bytes."""
    from icnd.codec import LARGE_CONTENT

    for n in (LARGE_CONTENT - 1, LARGE_CONTENT, 3 * LARGE_CONTENT + 5):
        for content in (bytes(range(256)) * (n // 256) + b"x" * (n % 256), memoryview(b"y" * n)):
            data = Data(Name("/big/a"), content, freshness_ms=5, sig_type=SigType.ED25519,
                        key_locator=Name("/k/KEY/12345678"), sig_value=b"s" * 64)
            fields = [1, 2, data.name.comps, 0, 5, None, bytes(content), 5, data.key_locator.comps, b"s" * 64]
            assert encode(data) == msgpack.packb(fields, use_bin_type=True)
            back = decode(encode(data))
            assert isinstance(back, Data) and back.content == bytes(content)


def test_a_large_data_decodes_with_its_content_a_view_of_the_wire() -> None:
    """issue #18: no copy of a large content on receipt; the view is read-only."""
    from icnd.codec import LARGE_CONTENT
    from icnd.security import DigestKey, KeyChain

    data = DigestKey().sign(Data(Name("/v/1"), b"\x07" * (2 * LARGE_CONTENT)))
    back = decode(encode(data))
    assert isinstance(back, Data) and isinstance(back.content, memoryview)
    assert back.content.readonly and back.content.obj is back.wire and back.content == data.content
    KeyChain().verify(back)  # verified from the wire as received
    for bad in (encode(data) + b"\x00", encode(data)[:-1], b"\x9a" + encode(data)[1:40]):
        with pytest.raises(DecodeError):
            decode(bad)
