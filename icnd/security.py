"""Data signatures: digest-sha256, hmac-sha256 and ed25519.

What is signed
    The *signed portion* of a Data (`icnd.codec.signed_portion`): its msgpack
    encoding up to but not including the final ``sig_value`` element -- the
    array header, version, packet type, name, content type, freshness, final
    block id, content, ``sig_type`` and ``key_locator``.  Because the signature
    type and the key locator are inside the signed portion, neither can be
    swapped without breaking the signature.

    ========== ============================================ ============ ===========
    sig_type   sig_value                                    length       key_locator
    ========== ============================================ ============ ===========
    digest     SHA-256 of the signed portion                32 bytes     None
    hmac       HMAC-SHA256(shared secret, signed portion)   32 bytes     key name
    ed25519    Ed25519 signature of the signed portion      64 bytes     key name
    ========== ============================================ ============ ===========

What `KeyChain.verify` checks
    On the Data's *wire bytes* (`icnd.codec.signed_portion_of_wire`, so a
    received Data is checked exactly as it arrived, never re-encoded):

    - digest-sha256: no key locator, a 32-byte value, equal to the SHA-256 of
      the signed portion.  This proves integrity only, not origin.
    - hmac-sha256 / ed25519: a key locator is present and names a key this
      KeyChain knows (a trusted verify key or one of its own signing keys);
      that key is of the Data's signature type; the value has the type's
      length; and the MAC / signature over the signed portion is valid.

    It does *not* decide whether that key may sign that name: a trust policy
    (which key is allowed to sign which names) is a separate layer above.

A Data's cached ``wire`` is what is verified; a copy made with
``dataclasses.replace`` starts without one and encodes its own fields
(see `icnd.packet`).

Key names follow ``/<identity...>/KEY/<id>`` with an 8-byte generic id; for
Ed25519 the id is the first 8 bytes of SHA-256 of the raw public key.
"""

from __future__ import annotations

import hashlib
import hmac
from abc import ABC, abstractmethod
from collections.abc import Sequence

import msgpack
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from icnd.codec import MAX_CONTENT_SIZE, signed_parts, signed_portion, signed_portion_of_wire, with_signature  # noqa: F401 (signed_portion: re-exported)
from icnd.errors import Error, VerificationError
from icnd.name import Component, Name, NameLike, valid_wire_comps
from icnd.packet import ContentType, Data, SigType, new_data

KEY_ID_LEN = 8
SIG_LENGTHS: dict[int, int] = {SigType.DIGEST_SHA256: 32, SigType.HMAC_SHA256: 32, SigType.ED25519: 64}

_KEY_FILE_TYPE = "ed25519"
_U32 = (1 << 32) - 1


class KeyFileError(Error, ValueError):
    """Not an Ed25519 key file (says why)."""


def _sha256_of(parts: Sequence[bytes | memoryview]) -> bytes:
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
    return h.digest()


def _sig_label(sig_type: int) -> str:
    try:
        return SigType(sig_type).name.lower().replace("_", "-")
    except ValueError:
        return f"sig-type-{sig_type}"


def key_name(identity: Name, key_id: bytes) -> Name:
    """``/<identity...>/KEY/<key_id>``; `key_id` is exactly 8 bytes."""
    if len(key_id) != KEY_ID_LEN:
        raise ValueError(f"a key id is {KEY_ID_LEN} bytes, got {len(key_id)}")
    return identity.append(b"KEY", bytes(key_id))


# --- verifying keys ----------------------------------------------------------


class VerifyKey(ABC):
    """Checks signatures of one type; holds no secret that can sign unless HMAC."""

    sig_type: SigType

    @abstractmethod
    def is_valid(self, portion: bytes | memoryview, sig_value: bytes) -> bool:
        """True if `sig_value` is a valid signature of `portion` under this key."""

    def verifies(self, portion: bytes | memoryview, sig_value: bytes) -> bool:
        """True if `sig_value` is a valid Data signature over the signed `portion`."""
        return self.is_valid(portion, sig_value)


class HmacVerifyKey(VerifyKey):
    """HMAC-SHA256 with a shared secret (the same secret signs and verifies)."""

    sig_type = SigType.HMAC_SHA256

    def __init__(self, secret: bytes) -> None:
        if not secret:
            raise ValueError("an HMAC secret must not be empty")
        self._secret = bytes(secret)

    def is_valid(self, portion: bytes | memoryview, sig_value: bytes) -> bool:
        expected = hmac.new(self._secret, portion, hashlib.sha256).digest()
        return hmac.compare_digest(expected, sig_value)

    def __repr__(self) -> str:
        return "HmacVerifyKey(<secret>)"


class Ed25519VerifyKey(VerifyKey):
    """An Ed25519 public key."""

    sig_type = SigType.ED25519

    def __init__(self, public_key: Ed25519PublicKey) -> None:
        self._public = public_key

    @classmethod
    def from_bytes(cls, raw: bytes) -> "Ed25519VerifyKey":
        """From the raw 32-byte public key; raises ValueError otherwise."""
        if len(raw) != 32:
            raise ValueError(f"an Ed25519 public key is 32 bytes, got {len(raw)}")
        return cls(Ed25519PublicKey.from_public_bytes(bytes(raw)))

    def public_bytes(self) -> bytes:
        return self._public.public_bytes_raw()

    def verifies(self, portion: bytes | memoryview, sig_value: bytes) -> bool:
        """Data signatures are Ed25519 over SHA-256 of the signed portion (see `Ed25519Key`)."""
        return self.is_valid(hashlib.sha256(portion).digest(), sig_value)

    def is_valid(self, portion: bytes | memoryview, sig_value: bytes) -> bool:
        try:
            self._public.verify(sig_value, portion)
        except InvalidSignature:
            return False
        return True

    def __repr__(self) -> str:
        return f"Ed25519VerifyKey({self.public_bytes().hex()})"


# --- signing keys -------------------------------------------------------------


class SigningKey(ABC):
    """Something that signs Data.

    Invariant: `name` is None exactly for digest signing; otherwise it is the
    key locator written into every Data this key signs.
    """

    name: Name | None
    sig_type: SigType

    @abstractmethod
    def _signature(self, parts: Sequence[bytes | memoryview]) -> bytes:
        """The signature value over a signed portion given as consecutive
        parts (hashed in turn: a large content is never copied to be signed)."""

    def sign(self, data: Data) -> Data:
        """A copy of `data` with this key's signature info and value.

        Any signature and cached wire on `data` are discarded first.
        """
        # dataclasses.replace, without its per-call field introspection (the
        # fields come from a constructed Data, so they are already well-typed)
        unsigned = new_data(data.name, data.content, data.content_type, data.freshness_ms, data.final_block_id,
                            self.sig_type, self.name, b"", None)
        parts = signed_parts(unsigned)
        return with_signature(unsigned, self._signature(parts), parts)

    def verify_key(self) -> VerifyKey | None:
        """The key that checks this key's signatures (None for digest)."""
        return None


class DigestKey(SigningKey):
    """DigestSha256: integrity only, no key locator, no secret."""

    name = None
    sig_type = SigType.DIGEST_SHA256

    def _signature(self, parts: Sequence[bytes | memoryview]) -> bytes:
        return _sha256_of(parts)

    def __repr__(self) -> str:
        return "DigestKey()"


class HmacKey(SigningKey):
    """HMAC-SHA256 under a shared secret (use 32 random bytes)."""

    name: Name
    sig_type = SigType.HMAC_SHA256

    def __init__(self, name: Name, secret: bytes) -> None:
        self.name = name
        self._verify = HmacVerifyKey(secret)
        self._secret = bytes(secret)

    def _signature(self, parts: Sequence[bytes | memoryview]) -> bytes:
        mac = hmac.new(self._secret, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(part)
        return mac.digest()

    def verify_key(self) -> HmacVerifyKey:
        return self._verify

    def __repr__(self) -> str:
        return f"HmacKey({self.name})"


class Ed25519Key(SigningKey):
    """An Ed25519 private key with its key name.

    Serialized form (`to_bytes`): a msgpack map
    ``{"type": "ed25519", "name": [wire-form components...], "sk": <32 raw bytes>}``.
    It holds the private key in the clear; store it with file mode 0600.
    A Data signature is Ed25519 over SHA-256 of the signed portion.
    """

    name: Name
    sig_type = SigType.ED25519

    def __init__(self, name: Name, private_key: Ed25519PrivateKey) -> None:
        self.name = name
        self._private = private_key
        self._verify = Ed25519VerifyKey(private_key.public_key())

    @classmethod
    def generate(cls, identity: Name) -> "Ed25519Key":
        """A fresh key named ``<identity>/KEY/<first 8 bytes of sha256(public key)>``."""
        private = Ed25519PrivateKey.generate()
        raw_public = private.public_key().public_bytes_raw()
        return cls(key_name(identity, hashlib.sha256(raw_public).digest()[:KEY_ID_LEN]), private)

    def public_bytes(self) -> bytes:
        """The raw 32-byte public key."""
        return self._verify.public_bytes()

    def verify_key(self) -> Ed25519VerifyKey:
        return self._verify

    def _signature(self, parts: Sequence[bytes | memoryview]) -> bytes:
        # Ed25519 over SHA-256(portion): pure Ed25519 would hash a large
        # portion twice with SHA-512 (1.3 ms for 512 KiB here, 0.3 ms this way)
        return self._private.sign(_sha256_of(parts))

    def sign_bytes(self, message: bytes) -> bytes:
        """An Ed25519 signature over arbitrary bytes (e.g. a call's proof of identity)."""
        return self._private.sign(message)

    def to_bytes(self) -> bytes:
        return msgpack.packb(
            {"type": _KEY_FILE_TYPE, "name": self.name.comps, "sk": self._private.private_bytes_raw()},
            use_bin_type=True,
        )

    @classmethod
    def from_bytes(cls, buf: bytes) -> "Ed25519Key":
        """Inverse of `to_bytes`; raises KeyFileError (a ValueError) on anything malformed."""
        try:
            obj = msgpack.unpackb(
                buf, use_list=False, raw=False, max_bin_len=4096, max_str_len=64, max_array_len=64
            )
        except Exception as exc:  # msgpack raises several types; all mean "malformed"
            raise KeyFileError(f"not an Ed25519 key file: {exc}") from None
        if type(obj) is not dict or set(obj) != {"type", "name", "sk"}:
            raise KeyFileError("an Ed25519 key file is a map with keys type, name, sk")
        if obj["type"] != _KEY_FILE_TYPE:
            raise KeyFileError(f"key file type is {obj['type']!r}, expected {_KEY_FILE_TYPE!r}")
        if not valid_wire_comps(obj["name"]):
            raise KeyFileError("key file has an invalid key name")
        sk = obj["sk"]
        if type(sk) is not bytes or len(sk) != 32:
            raise KeyFileError("key file's private key is not 32 bytes")
        return cls(Name.from_wire(obj["name"]), Ed25519PrivateKey.from_private_bytes(sk))

    def __repr__(self) -> str:
        return f"Ed25519Key({self.name})"


# --- the key chain --------------------------------------------------------------


class KeyChain:
    """Signing keys and known verify keys, both by key name.

    Invariants: every signing key added is also known for verification under
    its name; the default signing key is the first one added (digest signing
    when there is none).
    """

    def __init__(self) -> None:
        self._signing: dict[Name, SigningKey] = {}
        self._verify: dict[Name, VerifyKey] = {}

    @property
    def default_key(self) -> SigningKey:
        return next(iter(self._signing.values()), _DIGEST)

    def add_signing_key(self, key: SigningKey) -> None:
        """Add a named key (a digest "key" needs no adding)."""
        verify = key.verify_key()
        if key.name is None or verify is None:
            raise ValueError("only a named key can be added; digest signing is the default")
        self._signing[key.name] = key
        self._verify[key.name] = verify

    def add_trusted(self, name: Name, verify_key: VerifyKey) -> None:
        """Know `verify_key` as the key named `name` (replacing any previous one)."""
        self._verify[name] = verify_key

    def signing_key(self, name: Name) -> SigningKey:
        """The signing key named `name`; KeyError if none."""
        return self._signing[name]

    def verify_key(self, name: Name) -> VerifyKey | None:
        return self._verify.get(name)

    def sign(self, data: Data, key: SigningKey | Name | None = None) -> Data:
        """Sign with `key` (a key or a signing key's name), else the default key."""
        if key is None:
            key = self.default_key
        elif isinstance(key, Name):
            key = self._signing[key]
        return key.sign(data)

    def can_verify(self, data: Data) -> bool:
        """True for digest signatures, or when the key locator names a known key."""
        if data.sig_type == SigType.DIGEST_SHA256:
            return True
        return data.key_locator is not None and data.key_locator in self._verify

    def verify(self, data: Data) -> None:
        """Check `data`'s signature; raises VerificationError saying why not."""
        sig_type = data.sig_type
        label = _sig_label(sig_type)
        expected_len = SIG_LENGTHS.get(sig_type)
        if expected_len is None:
            raise VerificationError(f"{data.name}: unsupported signature type {label}")
        sig_value = data.sig_value
        if sig_type == SigType.DIGEST_SHA256:
            if data.key_locator is not None:
                raise VerificationError(
                    f"{data.name}: digest-sha256 Data carries a key locator {data.key_locator}"
                )
            if len(sig_value) != expected_len:
                raise VerificationError(
                    f"{data.name}: digest-sha256 value is {len(sig_value)} bytes, expected {expected_len}"
                )
            digest = hashlib.sha256(signed_portion_of_wire(data)).digest()
            if not hmac.compare_digest(digest, sig_value):
                raise VerificationError(f"{data.name}: digest mismatch (content or metadata altered)")
            return
        locator = data.key_locator
        if locator is None:
            raise VerificationError(f"{data.name}: {label} signature without a key locator")
        key = self._verify.get(locator)
        if key is None:
            raise VerificationError(f"{data.name}: signed by unknown key {locator} ({label})")
        verify_with(data, key)


def verify_with(data: Data, key: VerifyKey) -> None:
    """Check that `data` carries a valid signature by `key` (whatever its
    key locator names: the caller chose the key); raises VerificationError."""
    sig_type = data.sig_type
    label = _sig_label(sig_type)
    locator = data.key_locator
    sig_value = data.sig_value
    if key.sig_type != sig_type:
        raise VerificationError(f"{data.name}: key {locator} is {_sig_label(key.sig_type)}, Data claims {label}")
    expected_len = SIG_LENGTHS[sig_type]
    if len(sig_value) != expected_len:
        raise VerificationError(
            f"{data.name}: {label} signature by {locator} is {len(sig_value)} bytes, expected {expected_len}"
        )
    if not key.verifies(signed_portion_of_wire(data), sig_value):
        raise VerificationError(f"{data.name}: bad {label} signature by key {locator}")


_DIGEST = DigestKey()


def make_data(
    name: NameLike,
    content: bytes = b"",
    *,
    freshness_ms: int = 0,
    content_type: int = ContentType.BLOB,
    final_block_id: bytes | Component | None = None,
    key: SigningKey | None = None,
) -> Data:
    """Build and sign a Data (digest signing when `key` is None).

    `final_block_id` is a component: a `Component`, or wire-form bytes such as
    ``icnd.name.segment(9)``.
    """
    if isinstance(final_block_id, Component):
        final_block_id = final_block_id.wire
    if final_block_id is not None and not valid_wire_comps((bytes(final_block_id),)):
        raise ValueError(f"invalid final block id {final_block_id!r}")
    if not 0 <= freshness_ms <= _U32:
        raise ValueError(f"freshness {freshness_ms} ms is out of range")
    if not 0 <= content_type <= 0xFFFF:
        raise ValueError(f"content type {content_type} is out of range")
    content = bytes(content)
    if len(content) > MAX_CONTENT_SIZE:
        raise ValueError(f"content of {len(content)} bytes exceeds {MAX_CONTENT_SIZE}; segment it")
    data = Data(
        Name(name),
        content,
        content_type,
        freshness_ms,
        None if final_block_id is None else bytes(final_block_id),
    )
    return (key or _DIGEST).sign(data)
