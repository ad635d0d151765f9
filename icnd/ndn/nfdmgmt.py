"""The NFD management subset icnd speaks: ControlParameters, ControlResponse, commands.

A command Interest is ``/localhost/nfd/<module>/<verb>/<ControlParameters>/...``
(``/localhop`` from non-local faces), in one of two forms:

v0.3 signed Interest (python-ndn ``appv2``, ndn-cxx >= 0.8)
    ``.../<verb>/<CP>/params-sha256=<32 B>``: six components; the signature is
    in InterestSignatureInfo/Value (`icnd.ndn.codec.LpInfo.signed_interest`).
Legacy command Interest (python-ndn ``app``, the NFD wiki)
    ``.../<verb>/<CP>/<timestamp>/<nonce>/<SignatureInfo>/<SignatureValue>``:
    nine components; the last two hold the SignatureInfo (0x16) and
    SignatureValue (0x17) TLVs, and the signature covers the TLVs of all
    name components before the SignatureValue component.

The ControlParameters component is a generic component whose value is the
whole ControlParameters TLV (0x68).

Replies are Data named exactly as the command Interest, whose Content is a
ControlResponse ``{StatusCode, StatusText, ControlParameters}``.  The body is
*always* encoded (an empty ``68 00`` when there is nothing to say):
python-ndn's ``parse_response`` reads the body unconditionally and crashes
without it; StatusText is always encoded too, because ndn-cxx requires it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from icnd.errors import DecodeError
from icnd.name import T_GENERIC, T_PARAMS, Name
from icnd.packet import Data, Interest
from icnd.security import DigestKey
from icnd.ndn.codec import (
    SignedInterestInfo,
    decode_ndn_name,
    decode_ndn_name_value,
    encode_ndn_component,
    encode_ndn_name,
)
from icnd.ndn.tlv import (
    T_NAME,
    T_CONTROL_PARAMETERS,
    T_FACE_ID,
    T_COST,
    T_STRATEGY,
    T_FLAGS,
    T_EXPIRATION_PERIOD,
    T_ORIGIN,
    T_MASK,
    T_URI,
    T_LOCAL_URI,
    T_CAPACITY,
    T_COUNT,
    T_FACE_PERSISTENCY,
    T_BASE_CONGESTION_MARKING_INTERVAL,
    T_DEFAULT_CONGESTION_THRESHOLD,
    T_MTU,
    T_CONTROL_RESPONSE,
    T_STATUS_CODE,
    T_STATUS_TEXT,
    decode_nni,
    encode_tlv,
    iter_tlvs,
    nni_tlv,
    read_tl,
)

ROUTE_FLAG_CHILD_INHERIT = 1
ROUTE_FLAG_CAPTURE = 2
ORIGIN_APP = 0
ORIGIN_AUTOREG = 64
ORIGIN_CLIENT = 65
ORIGIN_AUTOCONF = 66
ORIGIN_NLSR = 128
ORIGIN_PREFIXANN = 129
ORIGIN_STATIC = 255

_LOCAL_PREFIXES = (b"\x08localhost", b"\x08localhop")
_NFD = b"\x08nfd"

# (field, TLV-TYPE, kind) in python-ndn's ControlParametersValue order.  python-ndn
# parses fields in declaration order and rejects an odd (critical) type that
# comes "too late"; ndn-cxx looks each field up wherever it is.  Encoding in
# python-ndn's order therefore satisfies both.
_FIELDS: tuple[tuple[str, int, str], ...] = (
    ("name", T_NAME, "name"),
    ("face_id", T_FACE_ID, "nni"),
    ("uri", T_URI, "str"),
    ("local_uri", T_LOCAL_URI, "str"),
    ("origin", T_ORIGIN, "nni"),
    ("cost", T_COST, "nni"),
    ("capacity", T_CAPACITY, "nni"),
    ("count", T_COUNT, "nni"),
    ("base_congestion_marking_interval", T_BASE_CONGESTION_MARKING_INTERVAL, "nni"),
    ("default_congestion_threshold", T_DEFAULT_CONGESTION_THRESHOLD, "nni"),
    ("mtu", T_MTU, "nni"),
    ("flags", T_FLAGS, "nni"),
    ("mask", T_MASK, "nni"),
    ("strategy", T_STRATEGY, "strategy"),
    ("expiration_period", T_EXPIRATION_PERIOD, "nni"),
    ("face_persistency", T_FACE_PERSISTENCY, "nni"),
)
_BY_TYPE = {t: (f, kind) for f, t, kind in _FIELDS}


@dataclass(frozen=True, slots=True)
class ControlParameters:
    """NFD ControlParameters (0x68); every field is optional (None = absent)."""

    name: Name | None = None
    face_id: int | None = None
    uri: str | None = None
    local_uri: str | None = None
    origin: int | None = None
    cost: int | None = None
    capacity: int | None = None
    count: int | None = None
    base_congestion_marking_interval: int | None = None
    default_congestion_threshold: int | None = None
    mtu: int | None = None
    flags: int | None = None
    mask: int | None = None
    strategy: Name | None = None
    expiration_period: int | None = None
    face_persistency: int | None = None

    def encode(self) -> bytes:
        """The whole ControlParameters TLV (``68 L ...``)."""
        parts = []
        for f, t, kind in _FIELDS:
            value = getattr(self, f)
            if value is None:
                continue
            if kind == "nni":
                parts.append(nni_tlv(t, value))
            elif kind == "str":
                parts.append(encode_tlv(t, value.encode("utf-8")))
            elif kind == "name":
                parts.append(encode_ndn_name(value))
            else:  # strategy: a Strategy element holding a Name
                parts.append(encode_tlv(t, encode_ndn_name(value)))
        return encode_tlv(T_CONTROL_PARAMETERS, b"".join(parts))

    @classmethod
    def decode(cls, buf: bytes) -> "ControlParameters":
        """Parse a whole ControlParameters TLV; raises `DecodeError`.

        Fields may come in any order (as NFD accepts them); unknown fields are
        ignored; a field given twice is an error.
        """
        buf = bytes(buf)
        try:
            t, vs, ve = read_tl(buf, 0, len(buf))
            if t != T_CONTROL_PARAMETERS:
                raise DecodeError(f"expected ControlParameters (0x68), got type {t}")
            if ve != len(buf):
                raise DecodeError("bytes after ControlParameters")
            return cls._decode_value(buf, vs, ve)
        except DecodeError:
            raise
        except Exception as exc:  # defensive
            raise DecodeError(f"malformed ControlParameters: {exc.__class__.__name__}: {exc}") from None

    @classmethod
    def _decode_value(cls, buf: bytes, start: int, end: int) -> "ControlParameters":
        values: dict[str, object] = {}
        for t, vs, ve in iter_tlvs(buf, start, end):
            spec = _BY_TYPE.get(t)
            if spec is None:
                continue
            f, kind = spec
            if f in values:
                raise DecodeError(f"duplicate ControlParameters field {f}")
            if kind == "nni":
                values[f] = decode_nni(buf, vs, ve)
            elif kind == "str":
                try:
                    values[f] = buf[vs:ve].decode("utf-8")
                except UnicodeDecodeError:
                    raise DecodeError(f"ControlParameters {f} is not UTF-8") from None
            elif kind == "name":
                values[f] = decode_ndn_name_value(buf, vs, ve)
            else:
                st, ss, se = read_tl(buf, vs, ve)
                if st != T_NAME or se != ve:
                    raise DecodeError("Strategy must hold exactly one Name")
                values[f] = decode_ndn_name(buf, vs, ve)
        return cls(**values)  # type: ignore[arg-type]  # each field's value was decoded by its declared kind

    def with_rib_defaults(self, face_id: int) -> "ControlParameters":
        """The parameters NFD applies to rib/register: FaceId 0/absent -> `face_id`,
        Origin 0 (app), Cost 0, Flags CHILD_INHERIT when absent."""
        return replace(
            self,
            face_id=face_id if not self.face_id else self.face_id,
            origin=ORIGIN_APP if self.origin is None else self.origin,
            cost=0 if self.cost is None else self.cost,
            flags=ROUTE_FLAG_CHILD_INHERIT if self.flags is None else self.flags,
        )


@dataclass(frozen=True, slots=True)
class ControlResponse:
    """NFD ControlResponse (0x65)."""

    status_code: int
    status_text: str = ""
    body: ControlParameters | None = None

    def encode(self) -> bytes:
        """``65 L {66 code} {67 text} {68 body}``; text and body are always present."""
        body = (self.body or ControlParameters()).encode()
        return encode_tlv(
            T_CONTROL_RESPONSE,
            nni_tlv(T_STATUS_CODE, self.status_code) + encode_tlv(T_STATUS_TEXT, self.status_text.encode("utf-8")) + body,
        )

    @classmethod
    def decode(cls, buf: bytes) -> "ControlResponse":
        """Parse a whole ControlResponse TLV; raises `DecodeError`.

        StatusCode is required; StatusText and the body are optional (a body
        that is not ControlParameters, such as a dataset, is ignored).
        """
        buf = bytes(buf)
        try:
            t, vs, ve = read_tl(buf, 0, len(buf))
            if t != T_CONTROL_RESPONSE:
                raise DecodeError(f"expected ControlResponse (0x65), got type {t}")
            if ve != len(buf):
                raise DecodeError("bytes after ControlResponse")
            code: int | None = None
            text = ""
            body: ControlParameters | None = None
            for et, es, ee in iter_tlvs(buf, vs, ve):
                if et == T_STATUS_CODE and code is None:
                    code = decode_nni(buf, es, ee)
                elif et == T_STATUS_TEXT:
                    try:
                        text = buf[es:ee].decode("utf-8")
                    except UnicodeDecodeError:
                        raise DecodeError("StatusText is not UTF-8") from None
                elif et == T_CONTROL_PARAMETERS and body is None:
                    body = ControlParameters._decode_value(buf, es, ee)
            if code is None:
                raise DecodeError("ControlResponse without StatusCode")
            return cls(code, text, body)
        except DecodeError:
            raise
        except Exception as exc:  # defensive
            raise DecodeError(f"malformed ControlResponse: {exc.__class__.__name__}: {exc}") from None


# --- commands -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LegacySignature:
    """The signature parts of a legacy (4-component) command Interest."""

    timestamp_ms: int
    nonce: bytes
    sig_info: bytes  # the SignatureInfo TLV (0x16 ...)
    sig_value: bytes  # the SignatureValue TLV (0x17 ...)
    signed_portion: bytes  # TLVs of every name component before the SignatureValue component

    def digest_ok(self) -> bool:
        """True if SignatureInfo says DigestSha256 and the value is the right SHA-256."""
        try:
            t, vs, ve = read_tl(self.sig_info, 0, len(self.sig_info))
            sig_type = None
            for et, es, ee in iter_tlvs(self.sig_info, vs, ve):
                if et == 0x1B:
                    sig_type = decode_nni(self.sig_info, es, ee)
            vt, vvs, vve = read_tl(self.sig_value, 0, len(self.sig_value))
        except DecodeError:
            return False
        return (
            t == 0x16
            and sig_type == 0
            and vt == 0x17
            and vve == len(self.sig_value)
            and hashlib.sha256(self.signed_portion).digest() == self.sig_value[vvs:vve]
        )


def _command_prefix(name: Name) -> None:
    comps = name.comps
    if len(comps) < 5 or comps[0] not in _LOCAL_PREFIXES or comps[1] != _NFD:
        raise ValueError(f"{name} is not an NFD command (/localhost/nfd/<module>/<verb>/<ControlParameters>/...)")
    for c, what in ((comps[2], "module"), (comps[3], "verb"), (comps[4], "ControlParameters")):
        if c[0] != T_GENERIC:
            raise ValueError(f"{name}: the {what} component must be a generic component")


def parse_command(interest: Interest) -> tuple[str, str, ControlParameters]:
    """``(module, verb, ControlParameters)`` of an NFD command Interest.

    Accepts the v0.3 signed-Interest form (6 components, the last a
    params-sha256 component) and the legacy form (9 components: timestamp,
    nonce, SignatureInfo, SignatureValue).  Raises ValueError saying what is
    wrong otherwise.  It checks the *shape* only: verifying the signature is
    `command_signature_ok`'s job.
    """
    name = interest.name
    _command_prefix(name)
    comps = name.comps
    n = len(comps)
    if n == 6:
        if comps[5][0] != T_PARAMS or interest.app_params is None:
            raise ValueError(f"{name}: a 6-component command must end in params-sha256 and carry parameters")
    elif n == 9:
        legacy_signature(interest)  # validates the four components
    elif n == 5:
        raise ValueError(f"{name}: unsigned command (neither the signed-Interest nor the 4-component form)")
    else:
        raise ValueError(
            f"{name}: a command has 6 components (signed Interest) or 9 (legacy form), not {n}"
        )
    try:
        module = comps[2][1:].decode("utf-8")
        verb = comps[3][1:].decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: module and verb must be UTF-8") from None
    try:
        params = ControlParameters.decode(comps[4][1:])
    except DecodeError as exc:
        raise ValueError(f"{name}: bad ControlParameters component: {exc}") from None
    return module, verb, params


def legacy_signature(interest: Interest) -> LegacySignature:
    """The signature parts of a legacy 9-component command; ValueError if malformed."""
    name = interest.name
    _command_prefix(name)
    comps = name.comps
    if len(comps) != 9:
        raise ValueError(f"{name}: a legacy command has 9 components, not {len(comps)}")
    ts, nonce, info, value = comps[5], comps[6], comps[7], comps[8]
    for c, what in ((ts, "timestamp"), (nonce, "nonce"), (info, "SignatureInfo"), (value, "SignatureValue")):
        if c[0] != T_GENERIC:
            raise ValueError(f"{name}: the {what} component must be a generic component")
    if len(ts) - 1 not in (1, 2, 4, 8):
        raise ValueError(f"{name}: the timestamp component is not a NonNegativeInteger")
    for c, t, what in ((info, 0x16, "SignatureInfo"), (value, 0x17, "SignatureValue")):
        body = c[1:]
        try:
            bt, _, be = read_tl(body, 0, len(body))
        except DecodeError:
            bt, be = -1, -1
        if bt != t or be != len(body):
            raise ValueError(f"{name}: the {what} component does not hold a {what} TLV")
    try:
        portion = b"".join(encode_ndn_component(c) for c in comps[:8])
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return LegacySignature(int.from_bytes(ts[1:], "big"), nonce[1:], info[1:], value[1:], portion)


def command_signature_ok(interest: Interest, signed: SignedInterestInfo | None = None) -> bool:
    """True if the command carries a correct DigestSha256 signature in either form.

    `signed` is `LpInfo.signed_interest` from `decode_ndn` (v0.3 form).  Any
    other signature type returns False: icnd cannot check NDN certificates.
    """
    if len(interest.name) == 9:
        try:
            return legacy_signature(interest).digest_ok()
        except ValueError:
            return False
    return signed is not None and signed.digest_ok()


def response_data(interest: Interest, response: ControlResponse, *, freshness_ms: int = 0) -> Data:
    """The reply to a command: Data named exactly as `interest`, DigestSha256-signed."""
    return DigestKey().sign(Data(interest.name, response.encode(), freshness_ms=freshness_ms))


__all__ = [
    "ControlParameters",
    "ControlResponse",
    "LegacySignature",
    "command_signature_ok",
    "legacy_signature",
    "parse_command",
    "response_data",
    "ROUTE_FLAG_CAPTURE",
    "ROUTE_FLAG_CHILD_INHERIT",
]
