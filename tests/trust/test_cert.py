"""Certificates: making, issuing, parsing, files (icnd.trust.cert)."""

from __future__ import annotations

import hashlib
import math

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd.codec import encode
from icnd.keyfiles import load_certificate, save_certificate
from icnd.name import Name, generic, version
from icnd.packet import ContentType, Data, Interest
from icnd.security import KEY_ID_LEN, make_data, verify_with
from icnd.trust.cert import (MAX_CERT_FILE, SELF, Certificate, CertificateError, certificate_from_bytes, issue,
                             key_name_of, make_certificate, parse_certificate, parse_key_data, self_signed)

from ._pki import DAY, T, anchor, key


def _content(pub: bytes, nb_ms: int, na_ms: int, **extra: object) -> bytes:
    return msgpack.packb({"type": "ed25519", "key": pub, "not_before": nb_ms, "not_after": na_ms, **extra},
                         use_bin_type=True)


def _forge(signer, name: Name, content: bytes, content_type: int = ContentType.KEY) -> Data:
    return signer.sign(Data(name, content, content_type, 0))


# --- making --------------------------------------------------------------------------------------


def test_self_signed_certificate():
    k = key("/net")
    cert = self_signed(k, now=T, days=10)
    assert cert.key_name == k.name
    assert cert.identity == Name("/net")
    assert cert.self_signed and cert.signer == k.name
    assert cert.issuer_id == SELF
    assert cert.name == k.name.append_wire(SELF, version(int(T * 1000)))
    assert cert.version == int(T * 1000)
    assert cert.public_key == k.public_bytes()
    assert cert.not_before_ms == int(T * 1000) and cert.not_after_ms == int((T + 10 * DAY) * 1000)
    assert cert.data.content_type == ContentType.KEY
    verify_with(cert.data, cert.verify_key())  # signed by the key it certifies
    assert key_name_of(cert.name) == k.name and key_name_of(k.name) is None


def test_issued_certificate():
    issuer, _ = anchor()
    alice = key("/net/alice")
    cert = issue(issuer, alice, now=T, days=30)
    assert cert.key_name == alice.name and cert.public_key == alice.public_bytes()
    assert not cert.self_signed
    assert cert.signer == issuer.name
    assert cert.issuer_id == generic(issuer.name.comps[-1][1:])  # the issuer's key id
    verify_with(cert.data, issuer.verify_key())
    with pytest.raises(Exception):
        verify_with(cert.data, alice.verify_key())
    # issued from another certificate of the same key: the same key certified
    again = issue(issuer, self_signed(alice, now=T), now=T + 1)
    assert again.key_name == alice.name and again.public_key == alice.public_bytes()


def test_validity_window():
    k = key("/net")
    cert = make_certificate(k.name, k.public_bytes(), k, days=2, now=T, not_before=T - DAY)
    assert cert.not_before_ms == int((T - DAY) * 1000)
    assert cert.not_after_ms == int((T + DAY) * 1000)
    assert cert.valid_at(T) and cert.validity_problem(T) is None
    assert cert.valid_at(T - DAY) and cert.valid_at(T + DAY)  # both ends included
    assert not cert.valid_at(T - DAY - 1)
    assert cert.validity_problem(T - DAY - 1) == "not valid before 2027-01-14T08:00:00Z"
    assert cert.validity_problem(T + DAY + 1) == "expired at 2027-01-16T08:00:00Z"


def test_to_json():
    issuer, acert = anchor()
    info = issue(issuer, key("/net/alice"), now=T).to_json()
    assert set(info) == {"name", "key", "identity", "issuer", "self_signed", "public_key", "not_before",
                         "not_after", "digest"}
    assert info["issuer"] == issuer.name.to_uri() and info["self_signed"] is False
    assert info["identity"] == "/net/alice"
    assert acert.to_json()["self_signed"] is True


@pytest.mark.parametrize("days", [0, -1, math.nan, math.inf, 4_000_000])
def test_make_refuses_bad_validity(days):
    k = key("/net")
    with pytest.raises(ValueError, match="positive number of days"):
        self_signed(k, days=days, now=T)


def test_make_refuses_bad_subject():
    k, other = key("/net"), key("/net")
    with pytest.raises(ValueError, match="/<identity>/KEY/<key-id>"):
        make_certificate(Name("/net/alice"), k.public_bytes(), k, now=T)
    with pytest.raises(ValueError, match="does not match the public key"):
        make_certificate(k.name, other.public_bytes(), k, now=T)
    with pytest.raises(ValueError, match="32 bytes"):
        make_certificate(k.name, b"short", k, now=T)
    with pytest.raises(ValueError, match="between 1970"):
        make_certificate(k.name, k.public_bytes(), k, now=T, not_before=-5)


# --- parsing: each malformation named ------------------------------------------------------------


@pytest.fixture
def good():
    k = key("/net/alice")
    return k, self_signed(k, now=T)


def test_parse_round_trip(good):
    _, cert = good
    assert parse_certificate(cert.data) == cert


def test_parse_bad_name(good):
    k, cert = good
    for name in (Name("/net/alice"), k.name, k.name.append("self"), k.name.append("self", "notaversion")):
        with pytest.raises(CertificateError, match="not a certificate name"):
            parse_certificate(_forge(k, name, cert.data.content))


def test_parse_bad_version_component(good):
    k, cert = good
    name = k.name.append_wire(SELF, bytes((0x36,)) + b"abc")  # a v= of 3 bytes is no NonNegativeInteger
    with pytest.raises(CertificateError, match="bad version"):
        parse_certificate(_forge(k, name, cert.data.content))


def test_parse_bad_content_type(good):
    k, cert = good
    with pytest.raises(CertificateError, match="content type"):
        parse_certificate(_forge(k, cert.name, cert.data.content, ContentType.BLOB))


def test_parse_unsigned(good):
    _, cert = good
    digest_only = make_data(cert.name, cert.data.content, content_type=ContentType.KEY)
    with pytest.raises(CertificateError, match="signed with Ed25519"):
        parse_certificate(digest_only)


@pytest.mark.parametrize("content", [
    b"",
    b"\xc1",  # never used in msgpack
    msgpack.packb([1, 2]),
    msgpack.packb({"type": "rsa", "key": b"k" * 32, "not_before": 1, "not_after": 2}),
    msgpack.packb({"type": "ed25519", "key": b"k" * 31, "not_before": 1, "not_after": 2}),
    msgpack.packb({"type": "ed25519", "key": b"k" * 32, "not_before": 1}),
    msgpack.packb({"type": "ed25519", "key": b"k" * 32, "not_before": "1", "not_after": 2}),
    msgpack.packb({"type": "ed25519", "key": b"k" * 32, "not_before": True, "not_after": 2}),
    msgpack.packb({"type": "ed25519", "key": "k" * 32, "not_before": 1, "not_after": 2}),
])
def test_parse_bad_content(good, content):
    k, cert = good
    with pytest.raises(CertificateError, match="certificate content"):
        parse_certificate(_forge(k, cert.name, content))


def test_parse_key_id_mismatch(good):
    k, cert = good
    other = key("/net/alice")
    content = _content(other.public_bytes(), cert.not_before_ms, cert.not_after_ms)
    with pytest.raises(CertificateError, match="key id does not match"):
        parse_certificate(_forge(k, cert.name, content))
    short = Name("/net/alice").append("KEY").append_wire(generic(b"1234567"), SELF, version(1))
    with pytest.raises(CertificateError, match=f"key id is not {KEY_ID_LEN} bytes"):
        parse_certificate(_forge(k, short, cert.data.content))


def test_parse_validity_inverted_or_out_of_range(good):
    k, cert = good
    inverted = _content(k.public_bytes(), cert.not_after_ms, cert.not_before_ms)
    with pytest.raises(CertificateError, match="ends before it begins"):
        parse_certificate(_forge(k, cert.name, inverted))
    for nb, na in ((-1, 5), (0, 2**63), (2**62, 2**63)):
        with pytest.raises(CertificateError, match="out of range"):
            parse_certificate(_forge(k, cert.name, _content(k.public_bytes(), nb, na)))


def test_extra_fields_are_ignored(good):
    k, cert = good
    content = _content(k.public_bytes(), cert.not_before_ms, cert.not_after_ms, comment="hi")
    assert parse_certificate(_forge(k, cert.name, content)).public_key == k.public_bytes()


def test_parse_key_data(good):
    k, cert = good
    assert parse_key_data(cert.data) == k.public_bytes()
    bare = k.sign(Data(k.name, k.public_bytes(), ContentType.KEY, 0))  # the key Data of earlier versions
    assert parse_key_data(bare) == k.public_bytes()
    with pytest.raises(CertificateError):
        parse_key_data(k.sign(Data(k.name, b"x" * 31, ContentType.KEY, 0)))


# --- files ---------------------------------------------------------------------------------------


def test_file_round_trip(tmp_path, good):
    _, cert = good
    path = tmp_path / "alice.cert"
    save_certificate(cert, path)
    assert path.read_bytes() == encode(cert.data)  # exactly what a node serves
    loaded = load_certificate(path)
    assert loaded == cert and loaded.digest == cert.digest
    save_certificate(issue(key("/net"), cert, now=T), path)  # the library call overwrites
    assert not load_certificate(path).self_signed
    assert [p.name for p in tmp_path.iterdir()] == ["alice.cert"]  # no temporary file left


def test_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_certificate(tmp_path / "nope.cert")


@pytest.mark.parametrize("buf,why", [
    (b"", "not a certificate file"),
    (b"\x00\x01garbage", "not a certificate file"),
    (encode(Interest(Name("/net/alice"), nonce=1)), "not a certificate file"),  # fixed: one id in every xdist worker
    (encode(make_data("/net/alice/doc", b"hi")), "not a certificate name"),
    (b"\x06" * (MAX_CERT_FILE + 1), "is not a certificate"),
])
def test_certificate_from_bytes_garbage(buf, why):
    with pytest.raises(CertificateError, match=why) as err:
        certificate_from_bytes(buf, "some.cert")
    assert str(err.value).startswith("some.cert: ")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_certificate_from_bytes_never_crashes(buf):
    try:
        certificate_from_bytes(buf)
    except CertificateError:
        pass


_SIGNER = key("/net/alice")
_CERT = self_signed(_SIGNER, now=T)
_values = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**63, max_value=2**64 - 1),
                    st.binary(max_size=70), st.text(max_size=70), st.floats(allow_nan=True),
                    st.lists(st.integers(-5, 5), max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.binary(max_size=300),
    st.dictionaries(st.sampled_from(["type", "key", "not_before", "not_after", "x"]), _values, max_size=6).map(
        lambda d: msgpack.packb(d, use_bin_type=True)),
    st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)).map(
        lambda t: _content(_SIGNER.public_bytes(), *t)),
), st.binary(max_size=9))
def test_parse_certificate_only_raises_certificate_error(content, version_value):
    name = _SIGNER.name.append_wire(SELF, bytes((0x36,)) + version_value)
    try:
        cert = parse_certificate(_SIGNER.sign(Data(name, content, ContentType.KEY, 0)))
    except CertificateError:
        return
    assert isinstance(cert, Certificate) and cert.public_key == _SIGNER.public_bytes()
    assert cert.not_before_ms <= cert.not_after_ms
    cert.validity_problem(T)
    cert.to_json()


def test_key_id_is_sha256_prefix(good):
    k, cert = good
    assert cert.key_name.comps[-1][1:] == hashlib.sha256(k.public_bytes()).digest()[:KEY_ID_LEN]
