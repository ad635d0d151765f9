"""Interest, Data and Nack: immutable packet values.

Packets are frozen slotted dataclasses.  `Data.wire` caches the packet's
encoding (set by the decoder, or by `icnd.codec.encode` on first use) so a
Data forwarded or served from a cache is never encoded twice; it takes no
part in equality and is not an init field, so a copy made with
``dataclasses.replace`` starts without it and encodes its own fields.

This module knows values, not encodings: what needs the encoding of a
packet (a Data's implicit digest, its full name) is in `icnd.codec`.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from icnd.name import Name, T_PARAMS, params_digest

DEFAULT_LIFETIME_MS = 4000
DEFAULT_HOP_LIMIT = 32
MIN_LIFETIME_MS = 10
MAX_LIFETIME_MS = 60_000


class ContentType(IntEnum):
    BLOB = 0
    LINK = 1
    KEY = 2
    NACK = 3  # application-level negative answer
    ERROR = 4  # signed error: a function failed or refused (code + message)
    THUNK = 5  # the name and ETA of a future result
    MANIFEST = 6
    AGGREGATE = 7  # a complete reduction result (icnd.reduction)
    PARTIAL = 8  # a partial reduction result: flagged, never cached
    GRANT = 9  # a RICE session grant around a small call's answer (icnd.compute.rice)


class SigType(IntEnum):
    DIGEST_SHA256 = 0
    HMAC_SHA256 = 4
    ED25519 = 5
    # Not signed end to end: a reduction's contributions and partial sums between
    # forwarders (issue #18), whose integrity is the hop's (every header is checked
    # by the aggregator that combines it).  No verifier accepts it, and no
    # forwarder caches it (a cache serves consumers, who would verify).
    PER_HOP = 200


class NackReason(IntEnum):
    """Nack reasons; a lower `severity` is less severe (NFD's ordering)."""

    CONGESTION = 50
    DUPLICATE = 100
    NO_ROUTE = 150
    NO_RESOURCES = 160
    PROHIBITED = 170
    HOP_LIMIT = 180
    MALFORMED = 190
    NOT_YET = 200

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", "-")

    @classmethod
    def from_label(cls, label: str) -> "NackReason":
        return cls[label.upper().replace("-", "_")]


# Least severe first: the reason a forwarder passes downstream when every
# upstream Nacked is the least severe of theirs.
NACK_SEVERITY = {
    NackReason.CONGESTION: 0,
    NackReason.NOT_YET: 1,
    NackReason.NO_RESOURCES: 2,
    NackReason.DUPLICATE: 3,
    NackReason.NO_ROUTE: 4,
    NackReason.HOP_LIMIT: 5,
    NackReason.PROHIBITED: 6,
    NackReason.MALFORMED: 7,
}


def new_nonce() -> int:
    return int.from_bytes(secrets.token_bytes(4), "big")


@dataclass(frozen=True, slots=True)
class Interest:
    name: Name
    nonce: int = field(default_factory=new_nonce)
    lifetime_ms: int = DEFAULT_LIFETIME_MS
    hop_limit: int = DEFAULT_HOP_LIMIT
    can_be_prefix: bool = False
    must_be_fresh: bool = False
    app_params: bytes | None = None
    forwarding_hint: tuple[Name, ...] = ()
    # The encoding this Interest was decoded from (or derived from one), reused
    # by `icnd.codec.encode`; the decoder keeps it for Interests without
    # parameters.  Not an init field, so `dataclasses.replace` never carries
    # a stale encoding over to a changed copy.
    wire: bytes | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if type(self.name) is not Name:
            object.__setattr__(self, "name", Name(self.name))

    @classmethod
    def with_params(cls, name: Name, app_params: bytes, **kw: Any) -> "Interest":
        """An Interest carrying parameters; its name gains `params-sha256=`."""
        digest = hashlib.sha256(app_params).digest()
        return cls(name.append_wire(params_digest(digest)), app_params=app_params, **kw)

    def params_ok(self) -> bool:
        """Parameters (if any) match the name's last `params-sha256=` component."""
        comps = self.name.comps
        if self.app_params is None:
            return not comps or comps[-1][0] != T_PARAMS
        return bool(comps) and comps[-1] == params_digest(hashlib.sha256(self.app_params).digest())

    def forwarded(self, hop_limit: int, nonce: int | None = None) -> "Interest":
        """A copy with a new hop limit (and optionally nonce); hot path.

        A forwarder's copy (hop limit one less, same nonce) of a decoded
        Interest keeps an encoding: the received bytes with the hop-limit
        byte patched (`_patched_hop`)."""
        wire = self.wire
        if wire is not None and (nonce is None or nonce == self.nonce):
            wire = _patched_hop(wire, self.hop_limit, hop_limit, self.can_be_prefix, self.must_be_fresh,
                                self.app_params, self.forwarding_hint)
        else:
            wire = None
        return new_interest(
            self.name, self.nonce if nonce is None else nonce, self.lifetime_ms, hop_limit,
            self.can_be_prefix, self.must_be_fresh, self.app_params, self.forwarding_hint, wire,
        )

    def __repr__(self) -> str:
        flags = "".join(f for f, on in (("P", self.can_be_prefix), ("F", self.must_be_fresh)) if on)
        return f"<Interest {self.name} nonce={self.nonce:08x} {flags}>"


@dataclass(frozen=True, slots=True)
class Data:
    name: Name
    # bytes, or a read-only memoryview: a large content handed over in shared
    # memory (icnd.faces.shm) is a view of that memory, never copied to be held
    content: bytes | memoryview = b""
    content_type: int = ContentType.BLOB
    freshness_ms: int = 0
    final_block_id: bytes | None = None  # a wire-form name component
    sig_type: int = SigType.DIGEST_SHA256
    key_locator: Name | None = None
    sig_value: bytes = b""
    # The encoding: set by the decoder, by a signer (`icnd.codec.with_signature`)
    # or by `icnd.codec.encode` on first use.  Not an init field, so
    # `dataclasses.replace` never carries a stale encoding over to a changed copy.
    wire: bytes | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if type(self.name) is not Name:
            object.__setattr__(self, "name", Name(self.name))

    @property
    def signer(self) -> Name | None:
        """The name of the key that signed this Data (None for digest-only)."""
        return self.key_locator

    def __repr__(self) -> str:
        return f"<Data {self.name} {len(self.content)}B type={self.content_type}>"


@dataclass(frozen=True, slots=True)
class Nack:
    name: Name
    nonce: int
    reason: NackReason
    detail: str = ""

    @classmethod
    def for_interest(cls, interest: Interest, reason: NackReason, detail: str = "") -> "Nack":
        return cls(interest.name, interest.nonce, reason, detail)

    def __repr__(self) -> str:
        return f"<Nack {self.name} {self.reason.label} {self.detail}>"


Packet = Interest | Data | Nack


# Hot-path constructors.  The generated frozen `__init__` sets every field
# through `object.__setattr__`; setting the slots through their descriptors is
# about twice as fast.  Only for values already known to be well-typed (the
# codec validates before it builds; the forwarder copies existing packets).
_new = object.__new__
_i_name, _i_nonce, _i_life, _i_hop, _i_cbp, _i_mbf, _i_params, _i_hint, _i_wire = (
    Interest.__dict__[f].__set__
    for f in ("name", "nonce", "lifetime_ms", "hop_limit", "can_be_prefix", "must_be_fresh",
              "app_params", "forwarding_hint", "wire")
)
_d_name, _d_content, _d_ctype, _d_fresh, _d_fbid, _d_stype, _d_kl, _d_sig, _d_wire = (
    Data.__dict__[f].__set__
    for f in ("name", "content", "content_type", "freshness_ms", "final_block_id", "sig_type",
              "key_locator", "sig_value", "wire")
)


def new_interest(name: Name, nonce: int, lifetime_ms: int, hop_limit: int, can_be_prefix: bool,
                 must_be_fresh: bool, app_params: bytes | None, forwarding_hint: tuple[Name, ...],
                 wire: bytes | None = None) -> Interest:
    obj = _new(Interest)
    _i_name(obj, name)
    _i_nonce(obj, nonce)
    _i_life(obj, lifetime_ms)
    _i_hop(obj, hop_limit)
    _i_cbp(obj, can_be_prefix)
    _i_mbf(obj, must_be_fresh)
    _i_params(obj, app_params)
    _i_hint(obj, forwarding_hint)
    _i_wire(obj, wire)
    return obj


def _patched_hop(wire: bytes, old: int, new: int, cbp: bool, mbf: bool, params: bytes | None,
                 hints: tuple[Name, ...]) -> bytes | None:
    """`wire` (an Interest's valid encoding, see `icnd.codec`) with hop limit
    `new` instead of `old`, or None when that is not a one-byte patch.

    The Interest array ends ``hop_limit, flags, app_params, hints``.  With no
    parameters and no hints the last two elements are exactly ``c0 90`` (nil
    has one encoding; an empty array whose last byte is 0x90 can only be the
    fixarray form).  If the byte before them equals the flags and the one
    before that equals `old` < 128, that byte ends the hop limit's encoding
    (a multi-byte flags encoding would put its 0xcc-0xd3 marker there,
    never a value < 128), and a value < 128 is its last byte in every
    msgpack integer form, so replacing it with `new` (< `old`) re-encodes
    the hop limit and leaves every other byte as it was."""
    if params is not None or hints or not 0 <= new < old < 128:
        return None
    tails = _HOP_TAILS[cbp | (mbf << 1)]
    if not wire.endswith(tails[old]):
        return None
    return wire[:-4] + tails[new]


# _HOP_TAILS[flags][hop]: the last four bytes of an Interest without parameters or hints
_HOP_TAILS = [[bytes((hop, flags, 0xC0, 0x90)) for hop in range(128)] for flags in range(4)]


def new_data(name: Name, content: bytes | memoryview, content_type: int, freshness_ms: int, final_block_id: bytes | None,
             sig_type: int, key_locator: Name | None, sig_value: bytes, wire: bytes | None) -> Data:
    obj = _new(Data)
    _d_name(obj, name)
    _d_content(obj, content)
    _d_ctype(obj, content_type)
    _d_fresh(obj, freshness_ms)
    _d_fbid(obj, final_block_id)
    _d_stype(obj, sig_type)
    _d_kl(obj, key_locator)
    _d_sig(obj, sig_value)
    _d_wire(obj, wire)
    return obj
