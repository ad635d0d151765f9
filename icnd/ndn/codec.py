"""NDN packet format v0.3 and NDNLPv2 <-> icnd packets.

`decode_ndn` turns one NDN TLV packet (a bare Interest 0x05, a bare Data
0x06, or an NDNLPv2 LpPacket 0x64 carrying one of them) into an icnd
`Interest`, `Data` or `Nack` plus an `LpInfo` holding the link-layer and
signature side data.  `encode_ndn` goes the other way.  `decode_ndn` trusts
nothing and raises only `icnd.errors.DecodeError`; the encoders raise
`ValueError` for packets NDN cannot carry (most importantly: more than
`MAX_NDN_PACKET` = 8800 bytes).

Mapping decisions
-----------------
Names
    Components map 1:1: NDN ``TYPE LENGTH VALUE`` <-> icnd wire form
    ``bytes([TYPE]) + VALUE`` (0x08 generic, 0x01 implicit digest, 0x02
    params digest, 0x20 keyword, 0x32 segment, 0x36 version, any other type
    up to 255 kept numerically, icnd's 0xF0 rnp included).  icnd component
    types are one byte, so an NDN component type above 255 is rejected with
    ``DecodeError("unsupported component type ...")``; an icnd type-0
    component cannot be sent (``ValueError``).  Implicit and params digest
    components must be 32 bytes both ways.  icnd's name limits (64
    components, 2048 bytes, 1024 bytes per component) apply to decoded names.
    An NDN Interest needs at least one name component.

Params digest (the one place names do *not* map 1:1)
    NDN's ``params-sha256=`` is the SHA-256 of the bytes from the
    ApplicationParameters TLV to the end of the Interest (signature fields
    included); icnd's is the SHA-256 of the parameter *value* alone, and
    icnd's native codec enforces that.  So `decode_ndn` checks the NDN digest
    and replaces the component with icnd's, keeping ``app_params`` as the
    raw ApplicationParameters value, and `encode_ndn` computes the NDN digest
    again.  To send Data and Nacks back under the name the NDN consumer used,
    the codec remembers each translation in an `NdnNameMap` (icnd name ->
    NDN name and the original "tail" bytes, NDN name -> icnd name, bounded
    LRU).  The map is the caller's: `icnd.ndn.face.NdnLinkService` passes the
    one its node's NDN faces share (a translation recorded on one face is
    used on another when an Interest is forwarded NDN to NDN); without
    ``names`` (None) nothing is remembered.  With the map, an Interest decoded from
    NDN and re-encoded (forwarded to another NDN face, or echoed in a Nack)
    carries its original ApplicationParameters *and signature fields*
    byte for byte, so its NDN name and signature stay valid.  Without an
    entry, the re-encoded Interest has only ApplicationParameters (no
    signature) and a freshly computed NDN digest.

Interest
    Nonce (4 bytes) <-> icnd int, big-endian; a missing Nonce gets a random
    one (NDN: the forwarder must add one).  InterestLifetime absent -> 4000
    ms (NDN default; it is omitted on encode when it is 4000).  HopLimit
    absent (NDN: unlimited) -> icnd's default 32 (`DEFAULT_HOP_LIMIT`); icnd
    always encodes HopLimit.  ForwardingHint <-> ``forwarding_hint`` names
    (at most 8).  The signed-Interest fields InterestSignatureInfo and
    InterestSignatureValue are checked for shape and returned in
    `LpInfo.signed_interest` (with the exact bytes the signature covers, so
    NFD-management code can verify DigestSha256); icnd Interests have no
    field for them.

Data
    MetaInfo ContentType <-> ``content_type`` kept numerically (0 BLOB,
    1 LINK, 2 KEY, 3 NACK agree in both worlds; 4..7 are icnd's own, and
    NDN-DPDK's 5 = PrefixAnnouncement therefore reads as icnd THUNK),
    FreshnessPeriod <-> ``freshness_ms``, FinalBlockId <-> ``final_block_id``
    (a wire-form component), Content <-> ``content``.  NDN signatures cover
    NDN bytes, icnd signatures icnd bytes, so neither can be carried across:
    `decode_ndn` returns the Data re-signed with DigestSha256 over icnd's
    encoding (the NDN producer's SignatureInfo is reported in
    `LpInfo.data_signature`, its signature is *not* carried inside icnd), and
    `encode_ndn` always writes SignatureInfo{DigestSha256} and the SHA-256 of
    the NDN signed portion (Name .. SignatureInfo).  A Data without any
    signature elements is accepted (python-ndn accepts such Data too).
    NDN implicit digests (SHA-256 of the NDN Data TLV) differ from icnd's, so
    an NDN consumer's ``sha256digest=`` Interest only matches Data that icnd
    serves by its NDN digest (not supported by this codec).

Nack
    ``LpPacket{[PitToken] Nack{NackReason} Fragment{Interest}}``.  Reasons
    50 Congestion, 100 Duplicate and 150 NoRoute are shared; icnd's further
    reasons (160..200) are sent as their own numbers (ndn-cxx reads unknown
    numbers as None, python-ndn reports the number) and decoded back
    exactly; NDN's 0 None, an absent NackReason, or any other number decodes
    as `NackReason.NO_ROUTE` (ndn-cxx ranks None as the most severe reason,
    and "cannot be satisfied here" is what it means in practice).
    `LpInfo.nack_code` keeps the number that was on the wire.

NDNLPv2
    Accepted headers: PitToken (1..32 bytes), Nack, IncomingFaceId,
    NextHopFaceId, CongestionMark, Sequence (ignored).  FragIndex/FragCount
    -> ``DecodeError("fragmentation not supported")``.  Other headers are
    ignored when NDNLPv2 allows it (type in 800..959 with ``type & 3 == 0``)
    and rejected otherwise.  Fragment must be the last field and hold exactly
    one Interest or Data.  An LpPacket without a Fragment (an IDLE packet)
    raises `IdlePacket`, a `DecodeError` subclass a face may ignore quietly.

Strictness
    Lengths must match exactly (a packet is one TLV, nothing after it),
    truncated TLVs and TLV-TYPE 0 are rejected, NonNegativeIntegers must be
    1, 2, 4 or 8 bytes; inside Interest, Data, MetaInfo and SignatureInfo an
    unknown or out-of-order element is rejected if critical (type < 32 or
    odd) and skipped otherwise.  A VAR-NUMBER in a longer-than-necessary form
    is accepted (see `icnd.ndn.tlv`).

Cost (a forwarder translates every packet of an NDN face)
    One exchange puts the same name through the codec four times, so name
    translations are memoised both ways (NDN Name TLV value -> icnd Name,
    icnd components -> NDN Name TLV; only canonical names under 253 bytes,
    bounded, see `_decode_name`), as are short MetaInfo and SignatureInfo
    values.  A memo hit returns exactly what the general code computes, so
    it changes the cost and nothing else; every check still runs on every
    packet (digests, orders, lengths) except those a hit already proved for
    the same bytes.  Decoded Data is re-signed in one msgpack call
    (`_digest_signed_fast`, verified against `icnd.codec.signed_portion` at
    import).  One-byte TLV headers are read inline; anything else takes
    `read_tl`.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import msgpack

from icnd.codec import MAX_HINTS, signed_portion, with_signature
from icnd.codec import T_DATA as ICND_T_DATA
from icnd.codec import VERSION as ICND_VERSION
from icnd.errors import DecodeError
from icnd.name import T_DIGEST, T_PARAMS, Name, params_digest, valid_wire_comps
from icnd.packet import (
    DEFAULT_HOP_LIMIT,
    DEFAULT_LIFETIME_MS,
    Data,
    Interest,
    Nack,
    NackReason,
    Packet,
    SigType,
    new_data,
    new_interest,
    new_nonce,
)
from icnd.ndn.tlv import (
    MAX_NDN_PACKET,
    T_INTEREST,
    T_DATA,
    T_NAME,
    T_CAN_BE_PREFIX,
    T_MUST_BE_FRESH,
    T_FORWARDING_HINT,
    T_NONCE,
    T_INTEREST_LIFETIME,
    T_HOP_LIMIT,
    T_APP_PARAMS,
    T_INTEREST_SIG_INFO,
    T_INTEREST_SIG_VALUE,
    T_META_INFO,
    T_CONTENT_TYPE,
    T_FRESHNESS_PERIOD,
    T_FINAL_BLOCK_ID,
    T_CONTENT,
    T_SIG_INFO,
    T_SIG_VALUE,
    T_SIG_TYPE,
    T_KEY_LOCATOR,
    T_KEY_DIGEST,
    T_SIG_NONCE,
    T_SIG_TIME,
    T_SIG_SEQ_NUM,
    T_VALIDITY_PERIOD,
    T_LP_PACKET,
    T_FRAGMENT,
    T_SEQUENCE,
    T_FRAG_INDEX,
    T_FRAG_COUNT,
    T_PIT_TOKEN,
    T_NACK,
    T_NACK_REASON,
    T_INCOMING_FACE_ID,
    T_NEXT_HOP_FACE_ID,
    T_CONGESTION_MARK,
    decode_nni,
    encode_tlv,
    is_critical,
    iter_tlvs,
    nni_tlv,
    read_tl,
)


SIG_DIGEST_SHA256 = 0
NDN_NACK_NONE = 0
MAX_PIT_TOKEN = 32

_U32 = (1 << 32) - 1
_U16 = 0xFFFF
_sha256 = hashlib.sha256
_get_ident = threading.get_ident
_DIGEST_SIG_INFO = b"\x16\x03\x1b\x01\x00"  # SignatureInfo{SignatureType 0 = DigestSha256}
_NACK_REASONS = {int(r): r for r in NackReason}

# Position of each known element; a later element must have a higher rank.
_INTEREST_ORDER = {
    T_CAN_BE_PREFIX: 1,
    T_MUST_BE_FRESH: 2,
    T_FORWARDING_HINT: 3,
    T_NONCE: 4,
    T_INTEREST_LIFETIME: 5,
    T_HOP_LIMIT: 6,
    T_APP_PARAMS: 7,
    T_INTEREST_SIG_INFO: 8,
    T_INTEREST_SIG_VALUE: 9,
}
_DATA_ORDER = {T_META_INFO: 1, T_CONTENT: 2, T_SIG_INFO: 3, T_SIG_VALUE: 4}
_META_ORDER = {T_CONTENT_TYPE: 1, T_FRESHNESS_PERIOD: 2, T_FINAL_BLOCK_ID: 3}


class IdlePacket(DecodeError):
    """An LpPacket without a Fragment (IDLE / acknowledgement only): nothing to deliver."""


# --- side data --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NdnSignatureInfo:
    """A decoded SignatureInfo / InterestSignatureInfo."""

    sig_type: int
    key_locator: Name | None = None
    key_digest: bytes | None = None
    nonce: bytes | None = None  # SignatureNonce
    time_ms: int | None = None  # SignatureTime
    seq_num: int | None = None  # SignatureSeqNum


@dataclass(frozen=True, slots=True)
class SignedInterestInfo:
    """The signature of an NDN v0.3 signed Interest.

    `signed_portion` is exactly what InterestSignatureValue covers: the TLVs
    of the name components except the params digest, then the bytes from
    ApplicationParameters through InterestSignatureInfo.
    """

    info: NdnSignatureInfo
    value: bytes
    signed_portion: bytes

    def digest_ok(self) -> bool:
        """True if this is a DigestSha256 signature and it is correct."""
        return self.info.sig_type == SIG_DIGEST_SHA256 and _sha256(self.signed_portion).digest() == self.value


@dataclass(slots=True)
class LpInfo:
    """NDNLPv2 header fields (and signature side data) of one packet.

    On decode: what arrived.  On encode: `pit_token`, `incoming_face_id`,
    `next_hop_face_id` and `congestion_mark` are written as LpPacket headers
    when set; `nack_reason` set with an Interest makes `encode_ndn` send a
    Nack of that Interest.
    """

    pit_token: bytes | None = None
    nack_reason: NackReason | None = None
    incoming_face_id: int | None = None
    next_hop_face_id: int | None = None
    congestion_mark: int | None = None
    nack_code: int | None = None  # the NackReason number on the wire (0 = None), decode only
    signed_interest: SignedInterestInfo | None = None  # decode only
    data_signature: NdnSignatureInfo | None = None  # decode only: the NDN producer's SignatureInfo


def nack_reason_from_ndn(code: int | None) -> NackReason:
    """icnd reason for an NDN NackReason number (None = element absent)."""
    if code is None:
        return NackReason.NO_ROUTE
    return _NACK_REASONS.get(code, NackReason.NO_ROUTE)


# --- params-digest translation memory ------------------------------------------------

Comps = tuple[bytes, ...]
_Entry = TypeVar("_Entry")


class NdnNameMap:
    """Remembers params-digest translations between NDN and icnd names.

    ``outbound``: icnd Interest name -> (NDN name, NDN tail bytes from
    ApplicationParameters to the end, parameter value), recorded when an NDN
    Interest is decoded; used to encode Data/Nacks (and re-encode the
    Interest) under the consumer's NDN name.  ``inbound``: NDN name -> icnd
    name, recorded when an icnd Interest is encoded; used to decode the Data
    that answers it.  Both are LRU-bounded to `capacity` entries.
    """

    def __init__(self, capacity: int = 4096) -> None:
        if capacity < 1:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self._out: OrderedDict[Comps, tuple[Comps, bytes, bytes]] = OrderedDict()
        self._in: OrderedDict[Comps, Comps] = OrderedDict()

    def __len__(self) -> int:
        return len(self._out) + len(self._in)

    def clear(self) -> None:
        self._out.clear()
        self._in.clear()

    def remember_outbound(self, icnd: Comps, ndn: Comps, tail: bytes, params: bytes) -> None:
        self._put(self._out, icnd, (ndn, tail, params))

    def remember_inbound(self, ndn: Comps, icnd: Comps) -> None:
        self._put(self._in, ndn, icnd)

    def _put(self, table: OrderedDict[Comps, _Entry], key: Comps, value: _Entry) -> None:
        table[key] = value
        table.move_to_end(key)
        if len(table) > self.capacity:
            table.popitem(last=False)

    def interest_encoding(self, icnd: Comps, params: bytes | None = None) -> tuple[Comps, bytes] | None:
        """(NDN name, tail) recorded for this icnd Interest name (and these parameters, if given)."""
        entry = self._out.get(icnd)
        if entry is None or (params is not None and entry[2] != params):
            return None
        return entry[0], entry[1]

    def to_ndn(self, comps: Comps) -> Comps:
        """An icnd Data/Nack name as the NDN consumer named it (unchanged if unknown)."""
        return self._translate(comps, lambda key: (e[0] if (e := self._out.get(key)) else None))

    def to_icnd(self, comps: Comps) -> Comps:
        """An NDN Data name as icnd named the Interest (unchanged if unknown)."""
        return self._translate(comps, self._in.get)

    @staticmethod
    def _translate(comps: Comps, lookup: Callable[[Comps], Comps | None]) -> Comps:
        for j in range(len(comps) - 1, -1, -1):
            if comps[j][0] == T_PARAMS:
                prefix = lookup(comps[: j + 1])
                if prefix is not None:
                    return prefix + comps[j + 1 :]
        return comps


def _has_params_comp(comps: Comps) -> bool:
    for c in comps:
        if c[0] == T_PARAMS:
            return True
    return False


# --- names ------------------------------------------------------------------------------


_TYPE_BYTE = [bytes((t,)) for t in range(256)]  # a component's type byte, without building it per component


def _decode_comps(buf: bytes, start: int, end: int) -> Comps:
    comps: list[bytes] = []
    append = comps.append
    pos = start
    while pos < end:
        t = buf[pos]
        # The common case inline (one-byte TYPE and LENGTH, the value inside the range); anything
        # else takes `read_tl`, which accepts exactly the same headers and raises for the rest.
        if t < 0xFD and t and pos + 1 < end and (n := buf[pos + 1]) < 0xFD and (ve := pos + 2 + n) <= end:
            vs = pos + 2
        else:
            t, vs, ve = read_tl(buf, pos, end)
            if t > 0xFF:
                raise DecodeError(f"unsupported component type {t} (icnd component types are one byte)")
        if (t == T_DIGEST or t == T_PARAMS) and ve - vs != 32:
            raise DecodeError(f"digest component of type {t} has {ve - vs} bytes, not 32")
        append(_TYPE_BYTE[t] + buf[vs:ve])
        pos = ve
    result = tuple(comps)
    if not valid_wire_comps(result):
        raise DecodeError(f"name of {len(result)} components exceeds icnd's name limits")
    return result


# Name translation memo.  One exchange puts the same name through the codec
# four times (Interest in and out, Data in and out), so each short name is
# translated once: `_NAMES` maps the value of an NDN Name TLV (its component
# TLVs) to ``(icnd Name, has a params-sha256 component)``, `_NAME_TLVS` the
# icnd components to ``(whole Name TLV, has a params-sha256 component)``.
# Invariant: an entry holds exactly what the slow path computes for its key,
# so a hit changes nothing but the cost.  Only canonical (shortest-form)
# encodings of names whose value is under 253 bytes (a one-byte LENGTH) are
# memoised: both directions then agree byte for byte, and an entry is small.
# Each memo is a plain dict emptied when it reaches `_NAME_MEMO_CAPACITY`
# entries (cheaper than an LRU; the names in flight are simply translated
# again), so it stays under ~2 MB.  Sharing between threads is safe: a race
# loses entries, never returns a wrong one.
_NAME_MEMO_CAPACITY = 2048
_NAMES: dict[bytes, tuple[Name, bool]] = {}
_NAME_TLVS: dict[Comps, tuple[bytes, bool]] = {}
_names_get = _NAMES.get
_name_tlvs_get = _NAME_TLVS.get


def _clear_memos() -> None:
    """Forget every memoised translation (tests compare cold and warm decoding with it)."""
    _NAMES.clear()
    _NAME_TLVS.clear()
    _META_INFOS.clear()
    _SIG_INFOS.clear()


def _memoise_name(value: bytes, tlv: bytes, name: Name, has_params: bool) -> None:
    if len(_NAMES) >= _NAME_MEMO_CAPACITY:
        _NAMES.clear()
    if len(_NAME_TLVS) >= _NAME_MEMO_CAPACITY:
        _NAME_TLVS.clear()
    _NAMES[value] = (name, has_params)
    _NAME_TLVS[name.comps] = (tlv, has_params)


def _decode_name(buf: bytes, at: int, vs: int, ve: int) -> tuple[Name, bool]:
    """The icnd Name of the NDN Name TLV at ``buf[at:ve]`` (value ``buf[vs:ve]``), and
    whether it has a params-sha256 component."""
    if vs - at != 2:  # a LENGTH of 253 or more (or a non-minimal header): not memoised
        comps = _decode_comps(buf, vs, ve)
        return Name.from_wire(comps), _has_params_comp(comps)
    key = buf[vs:ve]
    hit = _names_get(key)
    if hit is not None:
        return hit
    comps = _decode_comps(buf, vs, ve)
    name = Name.from_wire(comps)
    has_params = _has_params_comp(comps)
    # every component TLV takes len(comp) + 1 bytes exactly when its header is the
    # one-byte-TYPE, one-byte-LENGTH form: then this TLV is what `_name_tlv` writes
    if ve - vs == sum(map(len, comps)) + len(comps):
        _memoise_name(key, buf[at:ve], name, has_params)
    return name, has_params


def _comp_tlv(c: bytes) -> bytes:
    t = c[0]
    n = len(c) - 1
    if t == 0:
        raise ValueError("a component of type 0 cannot be encoded in NDN")
    if (t == T_DIGEST or t == T_PARAMS) and n != 32:
        raise ValueError(f"digest component of type {t} must be 32 bytes, not {n}")
    if n < 0xFD and t < 0xFD:
        return bytes((t, n)) + c[1:]
    return encode_tlv(t, c[1:])  # types 253..255 need a 3-byte VAR-NUMBER


def _name_tlv(comps: Comps) -> bytes:
    hit = _name_tlvs_get(comps)
    if hit is not None:
        return hit[0]
    tlv = encode_tlv(T_NAME, b"".join([_comp_tlv(c) for c in comps]))
    if len(tlv) < 0xFD + 2 and valid_wire_comps(comps):  # what `_decode_name` would memoise
        _memoise_name(tlv[2:], tlv, Name.from_wire(comps), _has_params_comp(comps))
    return tlv


def encode_ndn_name(name: Name) -> bytes:
    """The NDN Name TLV (0x07) of an icnd name; ValueError if NDN cannot carry it."""
    return _name_tlv(name.comps)


def encode_ndn_component(comp: bytes) -> bytes:
    """The NDN NameComponent TLV of a wire-form icnd component."""
    return _comp_tlv(comp)


def decode_ndn_name(buf: bytes, start: int = 0, end: int | None = None) -> Name:
    """The icnd name of the NDN Name TLV that exactly fills ``buf[start:end]``."""
    buf = bytes(buf)
    if end is None:
        end = len(buf)
    t, vs, ve = read_tl(buf, start, end)
    if t != T_NAME:
        raise DecodeError(f"expected a Name (type 7), got type {t}")
    if ve != end:
        raise DecodeError("bytes after the Name")
    return Name.from_wire(_decode_comps(buf, vs, ve))


def decode_ndn_name_value(buf: bytes, start: int, end: int) -> Name:
    """The icnd name whose NDN component TLVs exactly fill ``buf[start:end]`` (a Name's value)."""
    return Name.from_wire(_decode_comps(bytes(buf), start, end))


# --- signature info -------------------------------------------------------------------


# MetaInfo and SignatureInfo values repeat from packet to packet (python-ndn's Data all carry
# ``ContentType 0, FreshnessPeriod 0`` and ``SignatureType 0``), so a short value is decoded once
# and its (immutable) result memoised by the value bytes.  Errors are never memoised.
_SMALL_VALUE = 64
_VALUE_MEMO_CAPACITY = 256  # entries per memo; emptied when full, as the name memo
_META_INFOS: dict[bytes, tuple[int, int, bytes | None]] = {}
_SIG_INFOS: dict[bytes, NdnSignatureInfo] = {}


def _decode_sig_info(buf: bytes, start: int, end: int) -> NdnSignatureInfo:
    if end - start > _SMALL_VALUE:
        return _parse_sig_info(buf, start, end)
    key = buf[start:end]
    info = _SIG_INFOS.get(key)
    if info is None:
        info = _parse_sig_info(buf, start, end)
        if info.nonce is None and info.time_ms is None and info.seq_num is None:  # not unique per packet
            if len(_SIG_INFOS) >= _VALUE_MEMO_CAPACITY:
                _SIG_INFOS.clear()
            _SIG_INFOS[key] = info
    return info


def _parse_sig_info(buf: bytes, start: int, end: int) -> NdnSignatureInfo:
    sig_type = key_locator = key_digest = nonce = time_ms = seq_num = None
    seen: set[int] = set()
    for t, vs, ve in iter_tlvs(buf, start, end):
        if t in seen and t != T_VALIDITY_PERIOD:
            raise DecodeError(f"duplicate element {t} in SignatureInfo")
        seen.add(t)
        if t == T_SIG_TYPE:
            sig_type = decode_nni(buf, vs, ve)
        elif t == T_KEY_LOCATOR:
            key_locator, key_digest = _decode_key_locator(buf, vs, ve)
        elif t == T_SIG_NONCE:
            if ve == vs:
                raise DecodeError("empty SignatureNonce")
            nonce = buf[vs:ve]
        elif t == T_SIG_TIME:
            time_ms = decode_nni(buf, vs, ve)
        elif t == T_SIG_SEQ_NUM:
            seq_num = decode_nni(buf, vs, ve)
        elif t == T_VALIDITY_PERIOD:
            pass  # certificates only; not used by icnd
        elif is_critical(t):
            raise DecodeError(f"unknown critical element {t} in SignatureInfo")
    if sig_type is None:
        raise DecodeError("SignatureInfo without SignatureType")
    return NdnSignatureInfo(sig_type, key_locator, key_digest, nonce, time_ms, seq_num)


def _decode_key_locator(buf: bytes, start: int, end: int) -> tuple[Name | None, bytes | None]:
    t, vs, ve = read_tl(buf, start, end)
    if ve != end:
        raise DecodeError("KeyLocator must hold exactly one element")
    if t == T_NAME:
        return Name.from_wire(_decode_comps(buf, vs, ve)), None
    if t == T_KEY_DIGEST:
        return None, buf[vs:ve]
    raise DecodeError(f"unknown KeyLocator element {t}")


# --- decoding ----------------------------------------------------------------------------


def decode_ndn(
    buf: bytes | bytearray | memoryview, *, names: NdnNameMap | None = None
) -> tuple[Interest | Data | Nack, LpInfo]:
    """Decode one NDN packet (bare Interest/Data or LpPacket); raises only `DecodeError`."""
    if type(buf) is not bytes:
        buf = bytes(buf)
    n = len(buf)
    if n > MAX_NDN_PACKET:
        raise DecodeError(f"NDN packet of {n} bytes exceeds {MAX_NDN_PACKET}")
    try:
        t, vs, ve = read_tl(buf, 0, n)
        if ve != n:
            raise DecodeError(f"{n - ve} bytes after the end of the packet")
        lp = LpInfo()
        if t == T_INTEREST:
            interest, lp.signed_interest = _decode_interest(buf, vs, ve, names)
            return interest, lp
        if t == T_DATA:
            data, lp.data_signature = _decode_data(buf, vs, ve, names)
            return data, lp
        if t == T_LP_PACKET:
            return _decode_lp(buf, vs, ve, lp, names)
        raise DecodeError(f"not an NDN packet: TLV-TYPE {t}")
    except DecodeError:
        raise
    except Exception as exc:  # defensive: a check we did not foresee
        raise DecodeError(f"malformed NDN packet: {exc.__class__.__name__}: {exc}") from None


def _decode_lp(buf: bytes, start: int, end: int, lp: LpInfo, names: NdnNameMap | None) -> tuple[Packet, LpInfo]:
    fragment: tuple[int, int] | None = None
    nack = False
    for t, vs, ve in iter_tlvs(buf, start, end):
        if fragment is not None:
            raise DecodeError(f"LpPacket field {t} after the Fragment")
        if t == T_FRAGMENT:
            fragment = (vs, ve)
        elif t == T_PIT_TOKEN:
            if lp.pit_token is not None:
                raise DecodeError("duplicate PitToken")
            if not 1 <= ve - vs <= MAX_PIT_TOKEN:
                raise DecodeError(f"PitToken of {ve - vs} bytes (must be 1..{MAX_PIT_TOKEN})")
            lp.pit_token = buf[vs:ve]
        elif t == T_NACK:
            if nack:
                raise DecodeError("duplicate Nack header")
            nack = True
            lp.nack_code = _decode_nack_header(buf, vs, ve)
        elif t == T_FRAG_INDEX or t == T_FRAG_COUNT:
            raise DecodeError("fragmentation not supported")
        elif t == T_INCOMING_FACE_ID:
            lp.incoming_face_id = decode_nni(buf, vs, ve)
        elif t == T_NEXT_HOP_FACE_ID:
            lp.next_hop_face_id = decode_nni(buf, vs, ve)
        elif t == T_CONGESTION_MARK:
            lp.congestion_mark = decode_nni(buf, vs, ve)
        elif t == T_SEQUENCE:
            pass  # link reliability; icnd does not use it
        elif not (800 <= t <= 959 and t & 3 == 0):
            raise DecodeError(f"unknown LpPacket header field {t} that may not be ignored")
    if fragment is None:
        raise IdlePacket("LpPacket without Fragment")
    fs, fe = fragment
    t, vs, ve = read_tl(buf, fs, fe)
    if ve != fe:
        raise DecodeError("Fragment must hold exactly one network packet")
    if nack:
        if t != T_INTEREST:
            raise DecodeError(f"Nack fragment must be an Interest, got type {t}")
        interest, _ = _decode_interest(buf, vs, ve, None)
        reason = nack_reason_from_ndn(lp.nack_code)
        lp.nack_reason = reason
        return Nack(interest.name, interest.nonce, reason), lp
    if t == T_INTEREST:
        interest, lp.signed_interest = _decode_interest(buf, vs, ve, names)
        return interest, lp
    if t == T_DATA:
        data, lp.data_signature = _decode_data(buf, vs, ve, names)
        return data, lp
    raise DecodeError(f"Fragment holds TLV-TYPE {t}, not an Interest or Data")


def _decode_nack_header(buf: bytes, start: int, end: int) -> int | None:
    code = None
    for t, vs, ve in iter_tlvs(buf, start, end):
        if t == T_NACK_REASON:
            if code is not None:
                raise DecodeError("duplicate NackReason")
            code = decode_nni(buf, vs, ve)
        elif is_critical(t):
            raise DecodeError(f"unknown critical element {t} in Nack header")
    return code


def _decode_interest(
    buf: bytes, start: int, end: int, names: NdnNameMap | None
) -> tuple[Interest, SignedInterestInfo | None]:
    t, vs, ve = read_tl(buf, start, end)
    if t != T_NAME:
        raise DecodeError(f"Interest must start with a Name, got type {t}")
    name_start, name_end = vs, ve
    name, has_params = _decode_name(buf, start, vs, ve)
    comps = name.comps
    if not comps:
        raise DecodeError("Interest name must have at least one component")
    can_be_prefix = must_be_fresh = False
    hints: tuple[Name, ...] = ()
    nonce: int | None = None
    lifetime = DEFAULT_LIFETIME_MS
    hop_limit = DEFAULT_HOP_LIMIT
    params: bytes | None = None
    params_at = sig_info_end = 0
    sig_info: NdnSignatureInfo | None = None
    sig_value: bytes | None = None
    rank = 0
    pos = ve
    while pos < end:
        at = pos
        t = buf[pos]
        if t < 0xFD and t and pos + 1 < end and (n := buf[pos + 1]) < 0xFD and (ve := pos + 2 + n) <= end:
            vs = pos + 2  # `read_tl`'s common case, inline (as in `_decode_comps`)
        else:
            t, vs, ve = read_tl(buf, pos, end)
        pos = ve
        r = _INTEREST_ORDER.get(t)
        if r is None or r <= rank:
            if is_critical(t):
                raise DecodeError(f"unknown, duplicate or out-of-order critical element {t} in Interest")
            continue
        rank = r
        if t == T_NONCE:
            if ve - vs != 4:
                raise DecodeError(f"Nonce of {ve - vs} bytes (must be 4)")
            nonce = int.from_bytes(buf[vs:ve], "big")
        elif t == T_INTEREST_LIFETIME:
            lifetime = decode_nni(buf, vs, ve)
            if lifetime > _U32:
                raise DecodeError(f"InterestLifetime {lifetime} out of range")
        elif t == T_HOP_LIMIT:
            if ve - vs != 1:
                raise DecodeError(f"HopLimit of {ve - vs} bytes (must be 1)")
            hop_limit = buf[vs]
        elif t == T_CAN_BE_PREFIX or t == T_MUST_BE_FRESH:
            if ve != vs:
                raise DecodeError(f"element {t} must be empty")
            if t == T_CAN_BE_PREFIX:
                can_be_prefix = True
            else:
                must_be_fresh = True
        elif t == T_FORWARDING_HINT:
            hints = _decode_hints(buf, vs, ve)
        elif t == T_APP_PARAMS:
            params = buf[vs:ve]
            params_at = at
        elif t == T_INTEREST_SIG_INFO:
            sig_info = _decode_sig_info(buf, vs, ve)
            sig_info_end = ve
        else:  # T_INTEREST_SIG_VALUE
            sig_value = buf[vs:ve]
    if (sig_info is None) != (sig_value is None):
        raise DecodeError("InterestSignatureInfo and InterestSignatureValue must come together")
    signed: SignedInterestInfo | None = None
    if params is None:
        if sig_info is not None:
            raise DecodeError("signed Interest without ApplicationParameters")
        if has_params:
            raise DecodeError("params-sha256 component without ApplicationParameters")
    else:
        last = len(comps) - 1
        for i, c in enumerate(comps):
            if c[0] == T_PARAMS and i != last:
                raise DecodeError("the params-sha256 component must be the last one (and only one)")
        if comps[last][0] != T_PARAMS:
            raise DecodeError("ApplicationParameters without a params-sha256 component")
        tail = buf[params_at:end]
        if _sha256(tail).digest() != comps[last][1:]:
            raise DecodeError("params-sha256 component does not match the Interest's parameters")
        if sig_info is not None:
            portion = [buf[cs:ce] for ct, cs, ce in _comp_spans(buf, name_start, name_end) if ct != T_PARAMS]
            portion.append(buf[params_at:sig_info_end])
            # (sig_value is set whenever sig_info is: mypy cannot tell)
            signed = SignedInterestInfo(sig_info, sig_value, b"".join(portion))  # type: ignore[arg-type]  # see above
        ndn_comps = comps
        comps = comps[:last] + (params_digest(_sha256(params).digest()),)
        if names is not None:
            names.remember_outbound(comps, ndn_comps, tail, params)
        name = Name.from_wire(comps)
    return (
        new_interest(
            name,
            new_nonce() if nonce is None else nonce,
            lifetime,
            hop_limit,
            can_be_prefix,
            must_be_fresh,
            params,
            hints,
        ),
        signed,
    )


def _comp_spans(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """(type, tlv_start, tlv_end) of each component TLV (already validated)."""
    pos = start
    while pos < end:
        t, _, ve = read_tl(buf, pos, end)
        yield t, pos, ve
        pos = ve


def _decode_hints(buf: bytes, start: int, end: int) -> tuple[Name, ...]:
    hints = []
    for t, vs, ve in iter_tlvs(buf, start, end):
        if t != T_NAME:
            if is_critical(t):
                raise DecodeError(f"ForwardingHint element {t} is not a Name")
            continue
        hints.append(Name.from_wire(_decode_comps(buf, vs, ve)))
        if len(hints) > MAX_HINTS:
            raise DecodeError(f"more than {MAX_HINTS} ForwardingHint names")
    return tuple(hints)


def _decode_data(buf: bytes, start: int, end: int, names: NdnNameMap | None) -> tuple[Data, NdnSignatureInfo | None]:
    t, vs, ve = read_tl(buf, start, end)
    if t != T_NAME:
        raise DecodeError(f"Data must start with a Name, got type {t}")
    name, has_params = _decode_name(buf, start, vs, ve)
    content = b""
    content_type = 0
    freshness = 0
    final_block_id: bytes | None = None
    sig_info: NdnSignatureInfo | None = None
    has_sig_value = False
    rank = 0
    pos = ve
    while pos < end:
        t = buf[pos]
        if t < 0xFD and t and pos + 1 < end and (n := buf[pos + 1]) < 0xFD and (ve := pos + 2 + n) <= end:
            vs = pos + 2  # `read_tl`'s common case, inline (as in `_decode_comps`)
        else:
            t, vs, ve = read_tl(buf, pos, end)
        pos = ve
        r = _DATA_ORDER.get(t)
        if r is None or r <= rank:
            if is_critical(t):
                raise DecodeError(f"unknown, duplicate or out-of-order critical element {t} in Data")
            continue
        rank = r
        if t == T_CONTENT:
            content = buf[vs:ve]
        elif t == T_META_INFO:
            content_type, freshness, final_block_id = _decode_meta_info(buf, vs, ve)
        elif t == T_SIG_INFO:
            sig_info = _decode_sig_info(buf, vs, ve)
        else:  # T_SIG_VALUE
            has_sig_value = True
    if (sig_info is None) != (not has_sig_value):
        raise DecodeError("SignatureInfo and SignatureValue must come together")
    if names is not None and has_params:
        comps = names.to_icnd(name.comps)
        if comps is not name.comps:
            name = Name.from_wire(comps)
    return _digest_signed(name, content, content_type, freshness, final_block_id), sig_info


def _digest_signed_slow(name: Name, content: bytes, content_type: int, freshness: int,
                        final_block_id: bytes | None) -> Data:
    """The Data signed with DigestSha256 over icnd's encoding: what `DigestKey().sign` does."""
    unsigned = new_data(name, content, content_type, freshness, final_block_id, SigType.DIGEST_SHA256, None, b"",
                        None)
    portion = signed_portion(unsigned)
    return with_signature(unsigned, _sha256(portion).digest(), portion)


_MAIN_THREAD = threading.main_thread().ident
_packer = msgpack.Packer(use_bin_type=True)
_SIG_DIGEST = int(SigType.DIGEST_SHA256)


def _digest_signed_fast(name: Name, content: bytes, content_type: int, freshness: int,
                        final_block_id: bytes | None) -> Data:
    """`_digest_signed_slow` in one msgpack call and one Data: the signed portion is the
    Data's ten-element array minus its last element (``sig_value``), i.e. the packed nine
    fields under a fixarray header of ten (0x9a) instead of nine (0x99); the signature
    value is then one ``bin 8`` of 32 bytes (``c4 20``)."""
    fields = [ICND_VERSION, ICND_T_DATA, name.comps, content_type, freshness, final_block_id, content,
              _SIG_DIGEST, None]
    packed = _packer.pack(fields) if _get_ident() == _MAIN_THREAD else msgpack.packb(fields, use_bin_type=True)
    portion = b"\x9a" + packed[1:]
    sig = _sha256(portion).digest()
    return new_data(name, content, content_type, freshness, final_block_id, SigType.DIGEST_SHA256, None, sig,
                    portion + b"\xc4\x20" + sig)


def _fast_signing_agrees() -> bool:
    """True if `_digest_signed_fast` builds what `_digest_signed_slow` builds, byte for byte
    (checked once at import, so a change of icnd's Data layout falls back to the slow path
    instead of producing wrong signatures)."""
    samples = [(Name.from_wire((b"\x08a", b"\x08" + b"b" * 300)), b"x" * 100, 0, 0, None),
               (Name.from_wire(()), b"", 2, 1000, b"\x32\x05"),
               (Name.from_wire((b"\x08a",)), b"y" * 70000, 65535, (1 << 32) - 1, b"\x08" + b"z" * 200)]
    try:
        return all(_digest_signed_fast(*s).wire == _digest_signed_slow(*s).wire for s in samples)
    except Exception:  # noqa: BLE001 -- any failure at all: use the slow path
        return False


_digest_signed = _digest_signed_fast if _fast_signing_agrees() else _digest_signed_slow


def _decode_meta_info(buf: bytes, start: int, end: int) -> tuple[int, int, bytes | None]:
    if end - start > _SMALL_VALUE:
        return _parse_meta_info(buf, start, end)
    key = buf[start:end]
    meta = _META_INFOS.get(key)
    if meta is None:
        meta = _parse_meta_info(buf, start, end)
        if len(_META_INFOS) >= _VALUE_MEMO_CAPACITY:
            _META_INFOS.clear()
        _META_INFOS[key] = meta
    return meta


def _parse_meta_info(buf: bytes, start: int, end: int) -> tuple[int, int, bytes | None]:
    content_type = 0
    freshness = 0
    final_block_id: bytes | None = None
    rank = 0
    for t, vs, ve in iter_tlvs(buf, start, end):
        r = _META_ORDER.get(t)
        if r is None or r <= rank:
            if is_critical(t):
                raise DecodeError(f"unknown, duplicate or out-of-order critical element {t} in MetaInfo")
            continue
        rank = r
        if t == T_CONTENT_TYPE:
            content_type = decode_nni(buf, vs, ve)
            if content_type > _U16:
                raise DecodeError(f"ContentType {content_type} out of icnd's range")
        elif t == T_FRESHNESS_PERIOD:
            freshness = decode_nni(buf, vs, ve)
            if freshness > _U32:
                raise DecodeError(f"FreshnessPeriod {freshness} out of range")
        else:  # T_FINAL_BLOCK_ID
            ct, cs, ce = read_tl(buf, vs, ve)
            if ce != ve:
                raise DecodeError("FinalBlockId must hold exactly one name component")
            (final_block_id,) = _decode_comps(buf, vs, ve)
    return content_type, freshness, final_block_id


# --- encoding ------------------------------------------------------------------------------


def encode_ndn(
    packet: Packet,
    lp: LpInfo | None = None,
    *,
    interest: Interest | None = None,
    names: NdnNameMap | None = None,
) -> bytes:
    """Encode an icnd packet as NDN, wrapped in an LpPacket when `lp` needs one.

    A Nack becomes ``LpPacket{Nack{NackReason}, Fragment{Interest}}``; pass the
    nacked `interest` if you have it, otherwise a minimal Interest is rebuilt
    from the Nack's name and nonce (with the consumer's original parameters
    when `names` remembers them).  An Interest with ``lp.nack_reason`` set is
    sent as a Nack of that Interest.  Raises ValueError if the packet cannot
    be expressed in NDN or exceeds `MAX_NDN_PACKET` bytes.
    """
    kind = type(packet)
    if kind is Interest and lp is not None and lp.nack_reason is not None:
        interest = packet  # type: ignore[assignment]  # `kind is Interest` does not narrow `packet`
        packet = Nack(packet.name, packet.nonce, lp.nack_reason)  # type: ignore[union-attr]  # (likewise)
        kind = Nack
    if kind is Interest:
        wire = _encode_interest(packet, names)  # type: ignore[arg-type]  # `kind is` checks narrow nothing
    elif kind is Data:
        wire = _encode_data(packet, names)  # type: ignore[arg-type]  # (likewise)
    elif kind is Nack:
        return _encode_nack(packet, interest, lp, names)  # type: ignore[arg-type]  # (likewise)
    else:
        raise TypeError(f"not a packet: {kind.__name__}")
    if lp is not None:
        headers = _lp_headers(lp)
        if headers:
            wire = encode_tlv(T_LP_PACKET, headers + encode_tlv(T_FRAGMENT, wire))
    if len(wire) > MAX_NDN_PACKET:
        raise ValueError(f"NDN encoding of {len(wire)} bytes exceeds {MAX_NDN_PACKET}")
    return wire


def encode_ndn_nack(
    interest: Interest,
    reason: NackReason,
    pit_token: bytes | None = None,
    *,
    names: NdnNameMap | None = None,
) -> bytes:
    """``LpPacket{[PitToken], Nack{reason}, Fragment{interest}}``."""
    return _encode_nack(Nack.for_interest(interest, reason), interest, LpInfo(pit_token=pit_token), names)


def _lp_headers(lp: LpInfo, nack_reason: int | None = None) -> bytes:
    parts = []
    if lp.pit_token is not None:
        if not 1 <= len(lp.pit_token) <= MAX_PIT_TOKEN:
            raise ValueError(f"PitToken of {len(lp.pit_token)} bytes (must be 1..{MAX_PIT_TOKEN})")
        parts.append(encode_tlv(T_PIT_TOKEN, bytes(lp.pit_token)))
    if nack_reason is not None:
        parts.append(encode_tlv(T_NACK, nni_tlv(T_NACK_REASON, nack_reason)))
    if lp.incoming_face_id is not None:
        parts.append(nni_tlv(T_INCOMING_FACE_ID, lp.incoming_face_id))
    if lp.next_hop_face_id is not None:
        parts.append(nni_tlv(T_NEXT_HOP_FACE_ID, lp.next_hop_face_id))
    if lp.congestion_mark is not None:
        parts.append(nni_tlv(T_CONGESTION_MARK, lp.congestion_mark))
    return b"".join(parts)


def _encode_nack(nack: Nack, interest: Interest | None, lp: LpInfo | None, names: NdnNameMap | None) -> bytes:
    if interest is not None:
        frag = _encode_interest(interest, names)
    else:
        frag = _encode_bare_interest(nack.name.comps, nack.nonce, names)
    headers = _lp_headers(lp or LpInfo(), int(nack.reason))
    wire = encode_tlv(T_LP_PACKET, headers + encode_tlv(T_FRAGMENT, frag))
    if len(wire) > MAX_NDN_PACKET:
        raise ValueError(f"NDN encoding of {len(wire)} bytes exceeds {MAX_NDN_PACKET}")
    return wire


def _encode_bare_interest(comps: Comps, nonce: int, names: NdnNameMap | None) -> bytes:
    """A Nack fragment rebuilt from a name and nonce only."""
    if not comps:
        raise ValueError("an NDN Interest name needs at least one component")
    tail = b""
    if _has_params_comp(comps):
        known = names.interest_encoding(comps) if names is not None else None
        if known is None:
            raise ValueError("Nack of an Interest with parameters: pass the original Interest")
        comps, tail = known
    return encode_tlv(T_INTEREST, _name_tlv(comps) + b"\x0a\x04" + _nonce_bytes(nonce) + tail)


def _nonce_bytes(nonce: int) -> bytes:
    if not 0 <= nonce <= _U32:
        raise ValueError(f"nonce {nonce} does not fit in 4 bytes")
    return nonce.to_bytes(4, "big")


_SELECTORS = (b"", b"\x21\x00", b"\x12\x00", b"\x21\x00\x12\x00")  # [CanBePrefix + 2 * MustBeFresh]


def _encode_interest(i: Interest, names: NdnNameMap | None) -> bytes:
    comps = i.name.comps
    if i.app_params is None and not i.forwarding_hint:
        # The common case (a memoised name without parameters, fields in range) in one join;
        # anything else, including every error, takes the general path below.
        hit = _name_tlvs_get(comps)
        nonce = i.nonce
        hop = i.hop_limit
        if hit is not None and not hit[1] and comps and 0 <= nonce <= _U32 and 0 <= hop <= 255:
            life = i.lifetime_ms
            body = b"".join((
                hit[0],
                _SELECTORS[(1 if i.can_be_prefix else 0) + (2 if i.must_be_fresh else 0)],
                b"\x0a\x04",
                nonce.to_bytes(4, "big"),
                b"" if life == DEFAULT_LIFETIME_MS else nni_tlv(T_INTEREST_LIFETIME, life),
                bytes((T_HOP_LIMIT, 1, hop)),
            ))
            n = len(body)
            return bytes((T_INTEREST, n)) + body if n < 0xFD else encode_tlv(T_INTEREST, body)
    if not comps:
        raise ValueError("an NDN Interest name needs at least one component")
    params = i.app_params
    tail = b""
    if params is not None:
        if not i.params_ok():
            raise ValueError("app_params do not match the name's params-sha256 component")
        if _has_params_comp(comps[:-1]):
            raise ValueError("an NDN Interest has only one params-sha256 component")
        known = names.interest_encoding(comps, params) if names is not None else None
        if known is not None:
            ndn_comps, tail = known
        else:
            tail = encode_tlv(T_APP_PARAMS, params)
            ndn_comps = comps[:-1] + (params_digest(_sha256(tail).digest()),)
        if names is not None:
            names.remember_inbound(ndn_comps, comps)
        comps = ndn_comps
    elif _has_params_comp(comps):
        raise ValueError("params-sha256 component without app_params")
    parts = [_name_tlv(comps)]
    if i.can_be_prefix:
        parts.append(b"\x21\x00")
    if i.must_be_fresh:
        parts.append(b"\x12\x00")
    if i.forwarding_hint:
        parts.append(encode_tlv(T_FORWARDING_HINT, b"".join([_name_tlv(h.comps) for h in i.forwarding_hint])))
    parts.append(b"\x0a\x04" + _nonce_bytes(i.nonce))
    if i.lifetime_ms != DEFAULT_LIFETIME_MS:
        parts.append(nni_tlv(T_INTEREST_LIFETIME, i.lifetime_ms))
    if not 0 <= i.hop_limit <= 255:
        raise ValueError(f"hop limit {i.hop_limit} does not fit in one byte")
    parts.append(bytes((T_HOP_LIMIT, 1, i.hop_limit)))
    parts.append(tail)
    return encode_tlv(T_INTEREST, b"".join(parts))


def _encode_data(d: Data, names: NdnNameMap | None) -> bytes:
    comps = d.name.comps
    hit = _name_tlvs_get(comps)
    if hit is not None and not hit[1]:  # a memoised name without params-sha256: nothing to translate
        name_tlv = hit[0]
    else:
        if names is not None and _has_params_comp(comps):
            comps = names.to_ndn(comps)
        name_tlv = _name_tlv(comps)
    parts = [name_tlv]
    meta = []
    if d.content_type:
        meta.append(nni_tlv(T_CONTENT_TYPE, int(d.content_type)))
    if d.freshness_ms:
        meta.append(nni_tlv(T_FRESHNESS_PERIOD, d.freshness_ms))
    if d.final_block_id is not None:
        meta.append(encode_tlv(T_FINAL_BLOCK_ID, _comp_tlv(d.final_block_id)))
    if meta:
        parts.append(encode_tlv(T_META_INFO, b"".join(meta)))
    if d.content:
        parts.append(encode_tlv(T_CONTENT, bytes(d.content)))  # (no copy when it is bytes already)
    parts.append(_DIGEST_SIG_INFO)
    portion = b"".join(parts)
    value = portion + b"\x17\x20" + _sha256(portion).digest()
    n = len(value)
    return bytes((T_DATA, n)) + value if n < 0xFD else encode_tlv(T_DATA, value)


def ndn_signed_portion(wire: bytes) -> bytes:
    """The DigestSha256-signed portion (Name .. SignatureInfo) of a bare NDN Data TLV."""
    wire = bytes(wire)
    t, vs, ve = read_tl(wire, 0, len(wire))
    if t != T_DATA:
        raise DecodeError(f"not a Data TLV: type {t}")
    for et, es, ee in _comp_spans(wire, vs, ve):
        if et == T_SIG_VALUE:
            return wire[vs:es]
    raise DecodeError("Data without SignatureValue")
