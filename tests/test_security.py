"""Data signatures: sign, encode, decode, verify; and every way that must fail."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from icnd import ContentType, Data, DecodeError, Name, SigType, VerificationError, decode, encode
from icnd.name import segment
from icnd.security import (
    DigestKey,
    Ed25519Key,
    Ed25519VerifyKey,
    HmacKey,
    HmacVerifyKey,
    KeyChain,
    SigningKey,
    key_name,
    make_data,
)

ALICE = Name("/alice")
HMAC_NAME = key_name(Name("/shared"), b"hmac-key")
SECRET = b"s" * 32


def received(data: Data) -> Data:
    """What a peer gets: the Data through the wire."""
    back = decode(encode(data))
    assert isinstance(back, Data)
    return back


def flip(wire: bytes, index: int) -> bytes:
    buf = bytearray(wire)
    buf[index] ^= 0x01
    return bytes(buf)


@pytest.fixture(params=["digest", "hmac", "ed25519"])
def key(request: pytest.FixtureRequest) -> SigningKey:
    if request.param == "digest":
        return DigestKey()
    if request.param == "hmac":
        return HmacKey(HMAC_NAME, SECRET)
    return Ed25519Key.generate(ALICE)


def chain_for(key: SigningKey) -> KeyChain:
    """A verifier that knows `key` only as a trusted verify key (no secret of its own for Ed25519)."""
    chain = KeyChain()
    verify = key.verify_key()
    if key.name is not None and verify is not None:
        chain.add_trusted(key.name, verify)
    return chain


# --- round trips ------------------------------------------------------------------


def test_sign_verify_round_trip(key: SigningKey) -> None:
    data = make_data(
        "/a/b/seg=0",
        b"hello world",
        freshness_ms=1000,
        content_type=ContentType.BLOB,
        final_block_id=segment(3),
        key=key,
    )
    assert data.sig_type == key.sig_type
    assert data.key_locator == key.name
    assert len(data.sig_value) == {0: 32, 4: 32, 5: 64}[int(key.sig_type)]
    chain = chain_for(key)
    chain.verify(data)
    back = received(data)
    assert back == data
    chain.verify(back)
    assert chain.can_verify(back)


def test_digest_value_is_sha256_of_signed_portion() -> None:
    data = make_data("/d", b"content")
    wire = encode(data)
    assert data.sig_type == SigType.DIGEST_SHA256 and data.key_locator is None
    assert data.sig_value == hashlib.sha256(wire[: len(wire) - 34]).digest()  # 34 = bin8 header + 32
    KeyChain().verify(received(data))


def test_keychain_sign_default_and_explicit() -> None:
    chain = KeyChain()
    unsigned = Data(Name("/x"), b"1")
    assert chain.sign(unsigned).sig_type == SigType.DIGEST_SHA256
    first, second = Ed25519Key.generate(ALICE), HmacKey(HMAC_NAME, SECRET)
    chain.add_signing_key(first)
    chain.add_signing_key(second)
    assert chain.default_key is first
    assert chain.sign(unsigned).key_locator == first.name
    assert chain.sign(unsigned, second).key_locator == HMAC_NAME
    assert chain.sign(unsigned, HMAC_NAME).key_locator == HMAC_NAME
    for signed in (chain.sign(unsigned), chain.sign(unsigned, second)):
        chain.verify(received(signed))  # its own signing keys verify too


def test_resigning_replaces_signature_and_stale_wire() -> None:
    ed = Ed25519Key.generate(ALICE)
    digest_signed = make_data("/r", b"v")
    encode(digest_signed)
    resigned = ed.sign(digest_signed)
    assert resigned.key_locator == ed.name
    chain_for(ed).verify(received(resigned))
    edited = ed.sign(dataclasses.replace(resigned, content=b"edited"))
    assert received(edited).content == b"edited"
    chain_for(ed).verify(received(edited))


def test_make_data_fields() -> None:
    data = make_data(Name("/m"), b"c", freshness_ms=7, content_type=ContentType.THUNK,
                     final_block_id=Name("/seg=4")[0])
    assert data.freshness_ms == 7
    assert data.content_type == ContentType.THUNK
    assert data.final_block_id == segment(4)
    with pytest.raises(ValueError):
        make_data("/m", final_block_id=b"")
    with pytest.raises(ValueError):
        make_data("/m", freshness_ms=-1)


# --- tampering ----------------------------------------------------------------------


def test_tampered_content_fails(key: SigningKey) -> None:
    data = make_data("/t/a", b"original content", key=key)
    wire = encode(data)
    index = wire.index(b"original content") + 3
    tampered = decode(flip(wire, index))
    assert isinstance(tampered, Data) and tampered.content != data.content
    with pytest.raises(VerificationError, match="/t/a"):
        chain_for(key).verify(tampered)


def test_every_signed_byte_is_covered(key: SigningKey) -> None:
    """Flip each byte of the signed portion: decoding fails or verifying does."""
    data = make_data("/cover/me", b"abc", freshness_ms=300, final_block_id=segment(1), key=key)
    wire = encode(data)
    chain = chain_for(key)
    portion_len = len(wire) - 2 - len(data.sig_value)
    for index in range(portion_len):
        try:
            tampered = decode(flip(wire, index))
        except DecodeError:
            continue
        assert isinstance(tampered, Data)
        with pytest.raises(VerificationError):
            chain.verify(tampered)


def test_tampered_signature_fails(key: SigningKey) -> None:
    data = make_data("/t/sig", b"x", key=key)
    wire = encode(data)
    tampered = decode(flip(wire, len(wire) - 1))
    assert isinstance(tampered, Data)
    with pytest.raises(VerificationError):
        chain_for(key).verify(tampered)


def test_digest_mismatch_message() -> None:
    data = dataclasses.replace(make_data("/dm", b"x"), sig_value=bytes(32))
    with pytest.raises(VerificationError, match="digest mismatch"):
        KeyChain().verify(received(data))


def test_bad_length_fails(key: SigningKey) -> None:
    data = make_data("/len", b"x", key=key)
    short = dataclasses.replace(data, sig_value=data.sig_value[:-1])
    with pytest.raises(VerificationError, match="bytes"):
        chain_for(key).verify(received(short))


def test_signature_type_swap_fails() -> None:
    """Relabelling an HMAC Data as Ed25519 (same locator) is refused."""
    hmac_key = HmacKey(HMAC_NAME, SECRET)
    data = make_data("/swap", b"x", key=hmac_key)
    swapped = dataclasses.replace(data, sig_type=SigType.ED25519, sig_value=data.sig_value * 2)
    with pytest.raises(VerificationError, match="hmac-sha256"):
        chain_for(hmac_key).verify(received(swapped))


def test_digest_with_key_locator_fails() -> None:
    data = dataclasses.replace(make_data("/kl", b"x"), key_locator=Name("/k"))
    with pytest.raises(VerificationError, match="key locator"):
        KeyChain().verify(received(data))


def test_missing_key_locator_fails() -> None:
    data = make_data("/nokl", b"x", key=Ed25519Key.generate(ALICE))
    stripped = dataclasses.replace(data, key_locator=None)
    with pytest.raises(VerificationError, match="without a key locator"):
        KeyChain().verify(received(stripped))


# --- wrong and unknown keys ------------------------------------------------------------


def test_wrong_ed25519_key_fails() -> None:
    real = Ed25519Key.generate(ALICE)
    forger = Ed25519Key(real.name, Ed25519PrivateKey.generate())  # same name, another key
    forged = make_data("/forged", b"evil", key=forger)
    chain = chain_for(real)
    with pytest.raises(VerificationError, match="bad ed25519 signature") as info:
        chain.verify(received(forged))
    assert str(real.name) in str(info.value)


def test_unknown_key_locator_fails() -> None:
    data = make_data("/who", b"x", key=Ed25519Key.generate(Name("/mallory")))
    chain = chain_for(Ed25519Key.generate(ALICE))
    assert not chain.can_verify(data)
    with pytest.raises(VerificationError, match="unknown key /mallory/KEY"):
        chain.verify(received(data))


def test_hmac_wrong_secret_fails() -> None:
    data = make_data("/h", b"x", key=HmacKey(HMAC_NAME, b"wrong secret"))
    chain = KeyChain()
    chain.add_trusted(HMAC_NAME, HmacVerifyKey(SECRET))
    with pytest.raises(VerificationError, match="bad hmac-sha256 signature"):
        chain.verify(received(data))


def test_can_verify() -> None:
    chain = KeyChain()
    assert chain.can_verify(make_data("/d"))
    ed = Ed25519Key.generate(ALICE)
    data = make_data("/e", key=ed)
    assert not chain.can_verify(data)
    assert ed.name is not None
    chain.add_trusted(ed.name, Ed25519VerifyKey.from_bytes(ed.public_bytes()))
    assert chain.can_verify(data)
    chain.verify(received(data))


def test_add_signing_key_rejects_digest() -> None:
    with pytest.raises(ValueError):
        KeyChain().add_signing_key(DigestKey())


def test_unknown_signing_key_name() -> None:
    with pytest.raises(KeyError):
        KeyChain().sign(Data(Name("/x")), Name("/nobody/KEY/12345678"))


# --- key names and serialization -------------------------------------------------------


def test_key_name() -> None:
    name = key_name(ALICE, b"\x00" * 8)
    assert name == ALICE.append("KEY", b"\x00" * 8)
    assert len(name) == 3
    with pytest.raises(ValueError):
        key_name(ALICE, b"short")


def test_generated_key_name_is_hash_of_public_key() -> None:
    key = Ed25519Key.generate(Name("/org/alice"))
    assert key.name is not None
    assert key.name[:2] == Name("/org/alice")
    assert key.name[2] == b"KEY"
    assert bytes(key.name[3]) == hashlib.sha256(key.public_bytes()).digest()[:8]
    assert len(key.public_bytes()) == 32


def test_ed25519_serialization_round_trip() -> None:
    key = Ed25519Key.generate(ALICE)
    copy = Ed25519Key.from_bytes(key.to_bytes())
    assert copy.name == key.name
    assert copy.public_bytes() == key.public_bytes()
    data = make_data("/ser", b"x", key=copy)
    chain_for(key).verify(received(data))


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"\xc1",
        b"\x80",
        b"\x83\xa4type\xa3rsa\xa4name\x90\xa2sk\xc4\x20" + bytes(32),
        b"\x83\xa4type\xa7ed25519\xa4name\x90\xa2sk\xc4\x10" + bytes(16),
        b"\x83\xa4type\xa7ed25519\xa4name\x91\xc4\x00\xa2sk\xc4\x20" + bytes(32),
    ],
)
def test_ed25519_from_bytes_rejects_malformed(blob: bytes) -> None:
    with pytest.raises(ValueError):
        Ed25519Key.from_bytes(blob)


def test_verify_key_from_bytes() -> None:
    with pytest.raises(ValueError):
        Ed25519VerifyKey.from_bytes(b"\x00" * 31)
    with pytest.raises(ValueError):
        HmacVerifyKey(b"")


def test_reprs_hide_secrets() -> None:
    assert "s" * 32 not in repr(HmacKey(HMAC_NAME, SECRET))
    assert "s" * 32 not in repr(HmacVerifyKey(SECRET))
