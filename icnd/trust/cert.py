"""Certificates: a public key as named, signed Data with a validity period.

A certificate is a Data named::

    /<identity...>/KEY/<key-id>/<issuer-id>/v=<version>

whose first part, ``/<identity...>/KEY/<key-id>``, is the name of the key it
certifies (the name every Data that key signs carries as its key locator).
``<issuer-id>`` is ``self`` for a self-signed certificate (a trust anchor)
and the issuer's 8-byte key id otherwise; ``<version>`` is the issue time in
milliseconds.  Content type KEY; the content is a msgpack map::

    {"type": "ed25519", "key": <32-byte raw public key>,
     "not_before": <ms since the epoch>, "not_after": <ms since the epoch>}

so the public key and its validity period are both in the signed portion.
The certificate is signed (Ed25519) by its issuer, whose key name is its key
locator; a self-signed one by the key it certifies.

A certificate file is the certificate's wire encoding (`icnd.codec.encode`),
exactly the bytes a node serves; `icnd.keyfiles` reads and writes them (this
module parses bytes, `certificate_from_bytes`, and touches no file).  Key
files are `icnd.security.Ed25519Key`'s.

Making a certificate takes the time from the caller (``now=``, seconds since
the epoch): it is the certificate's version and the start of its validity,
and this package reads no clock (it is sans-IO: the CLI and the daemon pass
the wall clock, tests and simulations whatever time they are at).

Also accepted where no trust schema applies (`parse_key_data`): the bare key
Data of earlier versions (content type KEY, content the 32 raw bytes).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone

import msgpack

from icnd.codec import decode, implicit_digest
from icnd.errors import DecodeError, Error
from icnd.name import T_GENERIC, T_VERSION, Name, decode_nonneg, generic, version
from icnd.packet import ContentType, Data, SigType
from icnd.security import KEY_ID_LEN, Ed25519Key, Ed25519VerifyKey, key_name

KEY = generic("KEY")
SELF = generic("self")
CERT_TYPE = "ed25519"
CERT_FRESHNESS_MS = 3_600_000  # how long caches keep a certificate (it is re-fetched after)
MAX_CERT_FILE = 4096  # a certificate is ~250 bytes; a file larger than this is not one
DEFAULT_DAYS = 365
MAX_TIME_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: validity times beyond are refused
_DAY_MS = 86_400_000


class CertificateError(Error, ValueError):
    """Not a well-formed certificate (says why)."""


@dataclass(frozen=True)
class Certificate:
    """A parsed certificate; `data` is the signed Data it came from."""

    data: Data
    key_name: Name  # /<identity>/KEY/<key-id>: the key certified
    issuer_id: bytes  # wire component: `SELF` or the issuer's key id
    version: int
    public_key: bytes  # raw Ed25519 public key (32 bytes)
    not_before_ms: int
    not_after_ms: int

    @property
    def name(self) -> Name:
        return self.data.name

    @property
    def identity(self) -> Name:
        return self.key_name.prefix(-2)

    @property
    def signer(self) -> Name | None:
        """The issuer's key name (the key locator)."""
        return self.data.key_locator

    @property
    def self_signed(self) -> bool:
        return self.data.key_locator == self.key_name

    @property
    def digest(self) -> bytes:
        """The implicit SHA-256 digest of the certificate Data."""
        return implicit_digest(self.data)

    def valid_at(self, now: float) -> bool:
        """True if `now` (seconds since the epoch) is inside the validity period."""
        ms = now * 1000.0
        return self.not_before_ms <= ms <= self.not_after_ms

    def validity_problem(self, now: float) -> str | None:
        """None when valid at `now`; else "expired at ..." / "not valid before ..."."""
        ms = now * 1000.0
        if ms < self.not_before_ms:
            return f"not valid before {_iso(self.not_before_ms)}"
        if ms > self.not_after_ms:
            return f"expired at {_iso(self.not_after_ms)}"
        return None

    def verify_key(self) -> Ed25519VerifyKey:
        return Ed25519VerifyKey.from_bytes(self.public_key)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name.to_uri(),
            "key": self.key_name.to_uri(),
            "identity": self.identity.to_uri(),
            "issuer": self.signer.to_uri() if self.signer is not None else None,
            "self_signed": self.self_signed,
            "public_key": self.public_key.hex(),
            "not_before": _iso(self.not_before_ms),
            "not_after": _iso(self.not_after_ms),
            "digest": self.digest.hex(),
        }


def _iso(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000.0, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):  # parse_certificate bounds times; this is for the rest
        return f"{ms} ms since the epoch"


def is_certificate_name(name: Name) -> bool:
    """True for ``/<id>/KEY/<key-id>/<issuer-id>/v=<n>`` (shape only)."""
    comps = name.comps
    return len(comps) >= 5 and comps[-4] == KEY and comps[-1][:1] == bytes((T_VERSION,))


def key_name_of(name: Name) -> Name | None:
    """The key name inside a certificate name (None if `name` is not one)."""
    return name.prefix(-2) if is_certificate_name(name) else None


def parse_certificate(data: Data) -> Certificate:
    """A `Certificate` from a Data; raises CertificateError naming what is wrong.

    Checks the shape only (name, content type, content, signature type);
    whether the signature is valid and the issuer trusted is the validator's
    job (`icnd.trust.validator`)."""
    name = data.name
    if not is_certificate_name(name):
        raise CertificateError(f"{name}: not a certificate name (/<identity>/KEY/<key-id>/<issuer-id>/v=<n>)")
    if data.content_type != ContentType.KEY:
        raise CertificateError(f"{name}: content type {data.content_type}, a certificate has KEY")
    if data.sig_type != SigType.ED25519 or data.key_locator is None:
        raise CertificateError(f"{name}: a certificate is signed with Ed25519 by its issuer")
    try:
        body = msgpack.unpackb(data.content, raw=False, max_bin_len=64, max_str_len=64, max_map_len=8,
                               max_array_len=0)
    except Exception as exc:  # msgpack raises several types; all mean "malformed"
        raise CertificateError(f"{name}: malformed certificate content ({exc})") from None
    if (type(body) is not dict or body.get("type") != CERT_TYPE or type(body.get("key")) is not bytes
            or len(body["key"]) != 32 or type(body.get("not_before")) is not int
            or type(body.get("not_after")) is not int):
        raise CertificateError(f"{name}: certificate content is not {{type: ed25519, key, not_before, not_after}}")
    comps = name.comps
    kname = Name.from_wire(comps[:-2])
    key_id = comps[-3]
    if key_id[:1] != bytes((T_GENERIC,)) or len(key_id) != 1 + KEY_ID_LEN:
        raise CertificateError(f"{name}: the key id is not {KEY_ID_LEN} bytes")
    if hashlib.sha256(body["key"]).digest()[:KEY_ID_LEN] != key_id[1:]:
        raise CertificateError(f"{name}: the key id does not match the public key")
    if not (0 <= body["not_before"] <= MAX_TIME_MS and 0 <= body["not_after"] <= MAX_TIME_MS):
        raise CertificateError(f"{name}: validity times out of range (0 to year 9999)")
    if body["not_before"] > body["not_after"]:
        raise CertificateError(f"{name}: validity ends before it begins")
    try:
        ver = decode_nonneg(comps[-1][1:])
    except ValueError as exc:
        raise CertificateError(f"{name}: bad version component ({exc})") from None
    return Certificate(data, kname, comps[-2], ver, body["key"], body["not_before"], body["not_after"])


def parse_key_data(data: Data) -> bytes:
    """The raw Ed25519 public key a KEY Data carries: a certificate's, or the
    32 bytes of a bare key Data.  Raises CertificateError."""
    if data.content_type == ContentType.KEY and len(data.content) == 32 and not is_certificate_name(data.name):
        return bytes(data.content)
    return parse_certificate(data).public_key


def make_certificate(subject: Name, public_key: bytes, issuer: Ed25519Key, *, now: float,
                     days: float = DEFAULT_DAYS, not_before: float | None = None) -> Certificate:
    """A certificate for the key named `subject` (``/<id>/KEY/<key-id>``) with
    raw `public_key`, signed by `issuer` (self-signed when `issuer` holds
    that very key), issued at `now` (seconds since the epoch: the caller's
    clock).  Valid from `not_before` (default: `now`) for `days`."""
    if len(public_key) != 32:
        raise ValueError("an Ed25519 public key is 32 bytes")
    if len(subject) < 3 or subject.comps[-2] != KEY:
        raise ValueError(f"{subject}: a key name is /<identity>/KEY/<key-id>")
    if subject.comps[-1] != key_name(subject.prefix(-2), hashlib.sha256(public_key).digest()[:KEY_ID_LEN]).comps[-1]:
        raise ValueError(f"{subject}: the key id does not match the public key")
    if not 0 < days <= 3_000_000:  # also NaN and infinity; the end must still fall before the year 9999
        raise ValueError("a certificate's validity is a positive number of days (before the year 9999)")
    start_ms = int(1000 * (now if not_before is None else not_before))
    end_ms = start_ms + int(days * _DAY_MS)
    if not 0 <= start_ms <= end_ms <= MAX_TIME_MS:
        raise ValueError("a certificate's validity must lie between 1970 and the year 9999")
    self_signed = issuer.name == subject and issuer.public_bytes() == public_key
    issuer_id = SELF if self_signed else generic(issuer.name.comps[-1][1:])
    name = subject.append_wire(issuer_id, version(int(now * 1000)))
    content = msgpack.packb({"type": CERT_TYPE, "key": public_key, "not_before": start_ms, "not_after": end_ms},
                            use_bin_type=True)
    data = issuer.sign(Data(name, content, ContentType.KEY, CERT_FRESHNESS_MS))
    return parse_certificate(data)


def self_signed(key: Ed25519Key, *, now: float, days: float = DEFAULT_DAYS) -> Certificate:
    """A self-signed certificate of `key` (a trust anchor, or a node's
    default), issued at `now` (seconds since the epoch)."""
    return make_certificate(key.name, key.public_bytes(), key, now=now, days=days)


def issue(issuer: Ed25519Key, subject: Ed25519Key | Certificate, *, now: float,
          days: float = DEFAULT_DAYS) -> Certificate:
    """`subject`'s key (a key, or any certificate of it) certified by
    `issuer`, issued at `now` (seconds since the epoch)."""
    if isinstance(subject, Certificate):
        return make_certificate(subject.key_name, subject.public_key, issuer, now=now, days=days)
    return make_certificate(subject.name, subject.public_bytes(), issuer, now=now, days=days)


def certificate_from_bytes(buf: bytes, source: str = "certificate") -> Certificate:
    """Parse a certificate file's bytes; CertificateError naming `source`."""
    if len(buf) > MAX_CERT_FILE:
        raise CertificateError(f"{source}: {len(buf)} bytes is not a certificate")
    try:
        packet = decode(buf)
    except DecodeError as exc:
        try:
            Ed25519Key.from_bytes(buf)
        except ValueError:
            raise CertificateError(f"{source}: not a certificate file ({exc})") from None
        raise CertificateError(f"{source} is a key file, not a certificate (make one with icnd cert self or "
                               "issue)") from None
    if type(packet) is not Data:
        raise CertificateError(f"{source}: not a certificate file (holds an Interest or Nack)")
    try:
        return parse_certificate(packet)
    except CertificateError as exc:
        raise CertificateError(f"{source}: {exc}") from None

