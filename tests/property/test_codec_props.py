"""Property tests for names and the codec.

- every valid packet survives encode/decode unchanged;
- every valid name survives a URI round trip;
- `decode` of arbitrary or corrupted bytes returns a packet or raises
  `DecodeError`, never anything else, and whatever it accepts re-encodes;
- a corrupted signed Data never verifies.
"""

from __future__ import annotations

import dataclasses
import hashlib

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icnd import (
    Data,
    DecodeError,
    Interest,
    Nack,
    NackReason,
    Name,
    SigType,
    VerificationError,
    decode,
    encode,
)
from icnd.codec import MAX_HINTS, MAX_SIG_SIZE, implicit_digest
from icnd.name import (
    MAX_COMPONENTS,
    T_PARAMS,
    digest,
    encode_nonneg,
    generic,
    params_digest,
    rnp,
    segment,
    valid_wire_comps,
    version,
)
from icnd.packet import ContentType
from icnd.security import DigestKey, Ed25519Key, HmacKey, KeyChain, SigningKey, key_name, make_data

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
U32 = (1 << 32) - 1

# --- strategies -------------------------------------------------------------------

NUMBERS = st.one_of(st.integers(0, 300), st.integers(0, (1 << 64) - 1))

COMPONENTS: st.SearchStrategy[bytes] = st.one_of(
    st.binary(max_size=24).map(generic),
    st.sampled_from([b"", b".", b"..", b"...", b"a=b", b"/", b"%", b"seg=1"]).map(generic),
    NUMBERS.map(segment),
    NUMBERS.map(version),
    st.binary(min_size=32, max_size=32).map(digest),
    st.binary(min_size=32, max_size=32).map(params_digest),
    st.binary(min_size=16, max_size=16).map(rnp),
    # any type number, any value: non-canonical numbers, wrong-length digests, type 0
    st.tuples(st.integers(0, 255), st.binary(max_size=12)).map(lambda tv: bytes((tv[0],)) + tv[1]),
    NUMBERS.map(lambda n: bytes((0x32,)) + b"\x00" + encode_nonneg(n)),
)


def _names(min_size: int, max_size: int) -> st.SearchStrategy[Name]:
    return st.lists(COMPONENTS, min_size=min_size, max_size=max_size).map(tuple).filter(valid_wire_comps).map(
        Name.from_wire
    )


SHORT_NAMES = _names(0, 6)
# Mostly short names, sometimes long ones near the component-count limit.
LONG_NAMES = _names(MAX_COMPONENTS - 2, MAX_COMPONENTS)
NAMES: st.SearchStrategy[Name] = st.one_of(SHORT_NAMES, SHORT_NAMES, SHORT_NAMES, LONG_NAMES)


def _not_params_last(name: Name) -> bool:
    return not name.comps or name.comps[-1][0] != T_PARAMS


@st.composite
def interests(draw: st.DrawFn) -> Interest:
    params = draw(st.one_of(st.none(), st.binary(max_size=64)))
    name = draw(NAMES.filter(_not_params_last))
    kw = dict(
        nonce=draw(st.integers(0, U32)),
        lifetime_ms=draw(st.integers(0, U32)),
        hop_limit=draw(st.integers(0, 255)),
        can_be_prefix=draw(st.booleans()),
        must_be_fresh=draw(st.booleans()),
        forwarding_hint=tuple(draw(st.lists(SHORT_NAMES, max_size=MAX_HINTS))),
    )
    if params is None:
        return Interest(name, **kw)  # type: ignore[arg-type]
    try:
        return Interest.with_params(name, params, **kw)
    except ValueError:  # the digest component pushed the name over a limit
        return Interest(name, **kw)  # type: ignore[arg-type]


@st.composite
def datas(draw: st.DrawFn) -> Data:
    return Data(
        draw(NAMES),
        content=draw(st.binary(max_size=256)),
        content_type=draw(st.one_of(st.sampled_from(list(ContentType)), st.integers(0, 0xFFFF))),
        freshness_ms=draw(st.integers(0, U32)),
        final_block_id=draw(st.one_of(st.none(), COMPONENTS)),
        sig_type=draw(st.sampled_from(list(SigType))),
        key_locator=draw(st.one_of(st.none(), SHORT_NAMES)),
        sig_value=draw(st.binary(max_size=MAX_SIG_SIZE)),
    )


@st.composite
def nacks(draw: st.DrawFn) -> Nack:
    return Nack(
        draw(NAMES),
        draw(st.integers(0, U32)),
        draw(st.sampled_from(list(NackReason))),
        draw(st.text(max_size=40)),
    )


PACKETS = st.one_of(interests(), datas(), nacks())


@st.composite
def mutated(draw: st.DrawFn, wire: bytes) -> bytes:
    """`wire` after one to four flips, inserts, deletes, replacements or a truncation."""
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


def decode_or_reject(buf: bytes) -> Interest | Data | Nack | None:
    """Decode; a rejection must be a DecodeError, an acceptance must re-encode."""
    try:
        packet = decode(buf)
    except DecodeError:
        return None
    assert decode(encode_fresh(packet)) == packet
    return packet


def encode_fresh(packet: Interest | Data | Nack) -> bytes:
    """Encode from the fields, ignoring a Data's cached wire and the wire an
    Interest was decoded from."""
    if isinstance(packet, (Interest, Data)):
        packet = dataclasses.replace(packet)  # `wire` is not an init field: the copy has none
    return encode(packet)


# --- names ------------------------------------------------------------------------


@SETTINGS
@given(NAMES)
def test_uri_round_trip(name: Name) -> None:
    uri = name.to_uri()
    assert Name(uri) == name
    assert Name(uri).to_uri() == uri


@SETTINGS
@given(NAMES, NAMES)
def test_prefix_sorts_before_extensions(a: Name, b: Name) -> None:
    if len(a) + len(b) <= MAX_COMPONENTS and valid_wire_comps(a.comps + b.comps):
        joined = a.append_wire(*b.comps)
        assert a.is_prefix_of(joined)
        assert a <= joined
        assert (a == joined) == (len(b) == 0)


@SETTINGS
@given(NAMES)
def test_name_rebuilt_from_components_is_equal(name: Name) -> None:
    rebuilt = Name(list(name))
    assert rebuilt == name
    assert hash(rebuilt) == hash(name)


# --- codec round trips --------------------------------------------------------------


@SETTINGS
@given(PACKETS)
def test_encode_decode_round_trip(packet: Interest | Data | Nack) -> None:
    wire = encode(packet)
    back = decode(wire)
    assert back == packet
    assert type(back) is type(packet)
    assert encode(back) == wire


# Every msgpack form of an unsigned integer (icnd's encoder uses the shortest).
_UINT_FORMS = {
    "fix": (lambda v: v < 128, lambda v: bytes((v,))),
    "u8": (lambda v: v < 1 << 8, lambda v: b"\xcc" + v.to_bytes(1, "big")),
    "u16": (lambda v: v < 1 << 16, lambda v: b"\xcd" + v.to_bytes(2, "big")),
    "u32": (lambda v: v < 1 << 32, lambda v: b"\xce" + v.to_bytes(4, "big")),
    "u64": (lambda v: True, lambda v: b"\xcf" + v.to_bytes(8, "big")),
    "i8": (lambda v: v < 128, lambda v: b"\xd0" + v.to_bytes(1, "big")),
    "i64": (lambda v: True, lambda v: b"\xd3" + v.to_bytes(8, "big")),
}
_EMPTY_ARRAYS = [b"\x90", b"\xdc\x00\x00", b"\xdd\x00\x00\x00\x00"]


def _uint(value: int, form: str) -> bytes:
    fits, pack = _UINT_FORMS[form]
    return pack(value) if fits(value) else msgpack.packb(value)


@st.composite
def interest_encodings(draw: st.DrawFn) -> tuple[Interest, bytes]:
    """An Interest and one of its valid encodings, integers and the empty
    hint array in forms icnd's encoder does not choose."""
    i = draw(interests())
    if i.forwarding_hint:
        i = dataclasses.replace(i, forwarding_hint=())
    forms = st.sampled_from(sorted(_UINT_FORMS))
    flags = int(i.can_be_prefix) | int(i.must_be_fresh) << 1
    wire = (
        b"\x99" + _uint(1, draw(forms)) + _uint(1, draw(forms))
        + msgpack.packb(i.name.comps, use_bin_type=True)
        + _uint(i.nonce, draw(forms)) + _uint(i.lifetime_ms, draw(forms))
        + _uint(i.hop_limit, draw(forms)) + _uint(flags, draw(forms))
        + msgpack.packb(i.app_params, use_bin_type=True) + draw(st.sampled_from(_EMPTY_ARRAYS))
    )
    return i, wire


@SETTINGS
@given(interest_encodings(), st.data())
def test_forwarded_interest_keeps_a_valid_encoding(case: tuple[Interest, bytes], data: st.DataObject) -> None:
    """A decoded Interest without parameters re-encodes to the bytes it came
    from (one with parameters keeps no second copy of them), and its
    forwarded copy (hop limit lowered, the received bytes patched where
    that is possible) encodes exactly the copy's fields."""
    interest, wire = case
    received = decode(wire)
    assert received == interest
    if interest.app_params is None:
        assert encode(received) == wire
    else:
        assert received.wire is None and decode(encode(received)) == interest
    if interest.hop_limit == 0:
        return
    hop = data.draw(st.integers(0, interest.hop_limit - 1))
    copy = received.forwarded(hop)
    expected = dataclasses.replace(interest, hop_limit=hop)
    assert copy == expected
    assert decode(encode(copy)) == expected
    if copy.wire is not None:  # patched: all but the hop limit's last byte as received
        assert len(copy.wire) == len(wire)
        assert sum(a != b for a, b in zip(copy.wire, wire)) == 1
    renonced = received.forwarded(hop, nonce=interest.nonce ^ 1)
    assert renonced.wire is None and decode(encode(renonced)).nonce == interest.nonce ^ 1


def test_forwarded_interest_patches_the_canonical_encoding() -> None:
    """The common case, by example: the forwarder's copy reuses the bytes."""
    received = decode(encode(Interest(Name("/a/b"), nonce=7, hop_limit=32)))
    copy = received.forwarded(31)
    assert copy.wire is not None
    assert copy.wire == encode(Interest(Name("/a/b"), nonce=7, hop_limit=31))


@SETTINGS
@given(datas())
def test_data_wire_is_cached_and_hashes_to_the_implicit_digest(data: Data) -> None:
    wire = encode(data)
    assert data.wire is wire
    back = decode(wire)
    assert isinstance(back, Data)
    assert implicit_digest(back) == hashlib.sha256(wire).digest()


@SETTINGS
@given(datas(), st.sampled_from(["digest", "hmac", "ed25519"]), st.booleans())
def test_signing_by_parts_is_signing_the_whole_portion(data: Data, kind: str, view: bool) -> None:
    """issue #18: signers hash (head, content, tail) in turn; the result is the
    canonical encoding, and it verifies as a signature over the whole portion."""
    from icnd.codec import signed_parts, signed_portion

    if view:  # a content handed over as a view (shared memory) signs and encodes like bytes
        data = dataclasses.replace(data, content=memoryview(bytes(data.content)))
    head, content, tail = signed_parts(data)
    fields = [1, 2, data.name.comps, int(data.content_type), data.freshness_ms, data.final_block_id,
              bytes(data.content), int(data.sig_type), None if data.key_locator is None else data.key_locator.comps]
    assert head + bytes(content) + tail == signed_portion(data)
    assert b"\x99" + signed_portion(data)[1:] == msgpack.packb(fields, use_bin_type=True)  # 9 of the 10 fields
    key = {"digest": DigestKey(), "hmac": HmacKey(key_name(Name("/h"), b"12345678"), b"s" * 32),
           "ed25519": _ED25519}[kind]
    signed = key.sign(data)
    assert signed.wire == msgpack.packb([*fields[:7], int(key.sig_type),
                                         None if key.name is None else key.name.comps, signed.sig_value],
                                        use_bin_type=True)
    chain = KeyChain()
    if key.name is not None:
        chain.add_signing_key(key)
    back = decode(signed.wire)
    assert isinstance(back, Data)
    chain.verify(back)


_ED25519 = Ed25519Key.generate(Name("/e"))


@SETTINGS
@given(datas(), st.binary(max_size=64))
def test_a_replaced_data_encodes_its_own_fields(data: Data, content: bytes) -> None:
    encode(data)  # the original's encoding is cached
    changed = dataclasses.replace(data, content=content)
    assert decode(encode(changed)) == changed


# --- fuzzing --------------------------------------------------------------------------


@SETTINGS
@given(st.binary(max_size=512))
def test_decode_random_bytes(buf: bytes) -> None:
    decode_or_reject(buf)


@SETTINGS
@given(st.lists(st.one_of(st.integers(-(1 << 63), (1 << 64) - 1), st.binary(max_size=8), st.none(),
                          st.booleans(), st.text(max_size=4), st.floats()), max_size=11))
def test_decode_random_msgpack_arrays(fields: list[object]) -> None:
    decode_or_reject(msgpack.packb([1, *fields], use_bin_type=True))
    decode_or_reject(msgpack.packb([1, 2, *fields], use_bin_type=True))


@SETTINGS
@given(st.data())
def test_decode_mutated_packets(data: st.DataObject) -> None:
    wire = encode(data.draw(PACKETS))
    decode_or_reject(data.draw(mutated(wire)))


# --- signatures under corruption --------------------------------------------------------

_ED = Ed25519Key.generate(Name("/prop"))
_HMAC = HmacKey(key_name(Name("/prop"), b"hmac0001"), b"k" * 32)
_CHAIN = KeyChain()
_CHAIN.add_signing_key(_ED)
_CHAIN.add_signing_key(_HMAC)


@SETTINGS
@given(st.data(), st.sampled_from([DigestKey(), _HMAC, _ED]))
def test_mutated_signed_data_never_verifies(data: st.DataObject, key: SigningKey) -> None:
    signed = make_data(
        data.draw(NAMES),
        data.draw(st.binary(max_size=64)),
        freshness_ms=data.draw(st.integers(0, U32)),
        key=key,
    )
    wire = encode(signed)
    _CHAIN.verify(decode(wire))  # type: ignore[arg-type]
    corrupt = data.draw(mutated(wire))
    packet = decode_or_reject(corrupt)
    if not isinstance(packet, Data) or corrupt == wire:
        return
    with pytest.raises(VerificationError):
        _CHAIN.verify(packet)
