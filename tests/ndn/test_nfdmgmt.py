"""NFD management subset (`icnd.ndn.nfdmgmt`): ControlParameters, ControlResponse, commands.

The command vectors were generated with python-ndn 0.5.2 exactly as its
registerers build them (appv2: ``make_command_v2`` + ``app_param=b''`` +
``DigestSha256Signer(for_interest=True)``, lifetime 1000; legacy app:
``make_command``), with a fixed Interest nonce.
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd import Data, Interest, Name
from icnd.errors import DecodeError
from icnd.name import generic, params_digest
from icnd.ndn.codec import NdnNameMap, SignedInterestInfo, decode_ndn, encode_ndn
from icnd.ndn.nfdmgmt import (
    ROUTE_FLAG_CHILD_INHERIT,
    ControlParameters,
    ControlResponse,
    command_signature_ok,
    legacy_signature,
    parse_command,
    response_data,
)
from icnd.ndn.tlv import encode_tlv, write_varnum
from icnd.security import KeyChain


def T(t: int, *parts: bytes) -> bytes:
    value = b"".join(parts)
    return write_varnum(t) + write_varnum(len(value)) + value


def sha(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


REGISTER_V2 = bytes.fromhex(
    "0599075008096c6f63616c686f737408036e6664080372696208087265676973746572080d680b070908076578616d70"
    "6c650220b9b79a4adac1f2d95e98d41d7b29ded6f2bf2b63b1fb5dc9637ebd03f8459c380a04010203040c0203e82400"
    "2c171b0100260849313d826ec920db2808000001a200c14be62e20551abe034f8fc18644bcb8add89d7f9c3a712434a4"
    "99ec4972b8ed067c65977f"
)
UNREGISTER_V2 = bytes.fromhex(
    "059c075308096c6f63616c686f737408036e66640803726962080a756e7265676973746572080e680c070a0808657861"
    "6d706c6532022056eba5fba14dfde24085b50d541ba3870d3996e2ed939c5554719d94e61255690a04010203040c0203"
    "e824002c171b0100260843f5a652c0bbec372808000001a200c14be62e20a0326b8dfb1036b9c4d59d2df9afe609adf3"
    "a77211fe5a9b46c25d3c784b3def"
)
REGISTER_LEGACY = bytes.fromhex(
    "0578076c08096c6f63616c686f737408036e6664080372696208087265676973746572080c680a070808066c65676163"
    "790808000001a200c14be60808c7bb7cf1be4f3425080516031b010008221720fb2fb88e63f1e0d1fce1f2ae5164ffff"
    "6d4d8dc0b9f072fda7aae6e58315b8ce0a04010203040c0203e8"
)
# make_command_v2('rib', 'register', name='/full', face_id=300, origin=65, cost=7, flags=3, expiration_period=60000)
REGISTER_FULL = bytes.fromhex(
    "05a7075e08096c6f63616c686f737408036e6664080372696208087265676973746572081b68190706080466756c6c69"
    "02012c6f01416a01076c01036d02ea6002201ac9b70b09d7166e1c9b724cde6216563c055e65077966c2d657251b2c56"
    "f3070a04010203040c0203e824002c171b01002608b1a1921f23471d3a2808000001a200c14be62e208da61646b41d11"
    "13138ccf7584323bb0a18206d20311ef969f9c953f4ea3ebaa"
)
# python-ndn's encoding of ControlResponse{200, "OK", {Name /example, FaceId 300, Origin 0, Cost 0, Flags 1}}
PYNDN_RESPONSE_VALUE = bytes.fromhex("6601c867024f4b6818070908076578616d706c656902012c6f01006a01006c0101")


def decoded(wire: bytes):  # type: ignore[no-untyped-def]  # a pytest fixture or helper of any packet
    return decode_ndn(wire, names=NdnNameMap())


# --- ControlParameters ------------------------------------------------------------------------


def test_control_parameters_name_only_byte_exact() -> None:
    cp = ControlParameters(name=Name("/example"))
    assert cp.encode() == bytes.fromhex("680b070908076578616d706c65")
    assert ControlParameters.decode(cp.encode()) == cp


def test_control_parameters_empty() -> None:
    assert ControlParameters().encode() == b"\x68\x00"
    assert ControlParameters.decode(b"\x68\x00") == ControlParameters()


def test_control_parameters_all_fields_round_trip() -> None:
    cp = ControlParameters(
        name=Name("/a/b"), face_id=300, uri="tcp4://1.2.3.4:6363", local_uri="tcp4://0.0.0.0:6363",
        origin=255, cost=2**32, capacity=10, count=3, base_congestion_marking_interval=100,
        default_congestion_threshold=65536, mtu=8800, flags=3, mask=1,
        strategy=Name("/localhost/nfd/strategy/best-route/v=5"), expiration_period=60000, face_persistency=2,
    )
    assert ControlParameters.decode(cp.encode()) == cp


def test_control_parameters_order_matches_python_ndn() -> None:
    cp = ControlParameters(name=Name("/full"), face_id=300, origin=65, cost=7, flags=3, expiration_period=60000,
                           mtu=1500)
    types = []
    wire = cp.encode()
    pos = 2
    while pos < len(wire):
        types.append(wire[pos])
        pos += 2 + wire[pos + 1]
    # python-ndn's ControlParametersValue declaration order (Mtu before Flags)
    assert types == [0x07, 0x69, 0x6F, 0x6A, 0x89, 0x6C, 0x6D]


def test_control_parameters_decode_any_order_and_unknown_fields() -> None:
    wire = T(0x68, T(0x6A, b"\x05"), T(0xF1, b"?"), T(0x07, T(8, b"x")), T(0x69, b"\x01\x00"))
    assert ControlParameters.decode(wire) == ControlParameters(name=Name("/x"), cost=5, face_id=256)


@pytest.mark.parametrize(
    "wire",
    [
        b"",
        b"\x68",
        b"\x68\x01",
        b"\x65\x00",  # not ControlParameters
        b"\x68\x00\x00",  # trailing bytes
        T(0x68, T(0x69, b"\x01\x02\x03")),  # bad NNI
        T(0x68, T(0x69, b"\x01"), T(0x69, b"\x02")),  # duplicate
        T(0x68, T(0x72, b"\xff\xfe")),  # Uri not UTF-8
        T(0x68, T(0x07, T(0x0100, b"x"))),  # component type above 255
        T(0x68, T(0x6B, T(0x08, b"x"))),  # Strategy without a Name
    ],
)
def test_control_parameters_malformed(wire: bytes) -> None:
    with pytest.raises(DecodeError):
        ControlParameters.decode(wire)


def test_rib_defaults() -> None:
    cp = ControlParameters(name=Name("/p")).with_rib_defaults(300)
    assert (cp.face_id, cp.origin, cp.cost, cp.flags) == (300, 0, 0, ROUTE_FLAG_CHILD_INHERIT)
    explicit = ControlParameters(name=Name("/p"), face_id=7, origin=65, cost=3, flags=0).with_rib_defaults(300)
    assert (explicit.face_id, explicit.origin, explicit.cost, explicit.flags) == (7, 65, 3, 0)
    assert ControlParameters(name=Name("/p"), face_id=0).with_rib_defaults(300).face_id == 300


# --- ControlResponse ------------------------------------------------------------------------------


def test_control_response_byte_exact_with_body() -> None:
    body = ControlParameters(name=Name("/example"), face_id=300, origin=0, cost=0, flags=1)
    cr = ControlResponse(200, "OK", body)
    assert cr.encode() == encode_tlv(0x65, PYNDN_RESPONSE_VALUE)
    assert ControlResponse.decode(cr.encode()) == cr


def test_control_response_always_has_text_and_body() -> None:
    assert ControlResponse(200).encode() == bytes.fromhex("65076601c867006800")
    assert ControlResponse(403, "authorization rejected").encode() == (
        T(0x65, T(0x66, b"\x01\x93"), T(0x67, b"authorization rejected"), b"\x68\x00"))


def test_control_response_decode_variants() -> None:
    # the minimal reply python-ndn accepted: no StatusText, empty body
    assert ControlResponse.decode(bytes.fromhex("65056601c86800")) == ControlResponse(200, "", ControlParameters())
    # NFD's 403 without a body
    cr = ControlResponse.decode(T(0x65, T(0x66, b"\x01\x93"), T(0x67, b"authorization rejected")))
    assert cr == ControlResponse(403, "authorization rejected", None)
    for bad in (b"", T(0x65), T(0x65, T(0x67, b"x")), T(0x68), T(0x65, T(0x66, b"\x01\x93\x00")),
                T(0x65, T(0x66, b"\xc8"), T(0x67, b"\xff")), T(0x65, T(0x66, b"\xc8")) + b"\x00"):
        with pytest.raises(DecodeError):
            ControlResponse.decode(bad)


# --- parse_command -------------------------------------------------------------------------------------


def test_parse_register_v2() -> None:
    interest, lp = decoded(REGISTER_V2)
    assert parse_command(interest) == ("rib", "register", ControlParameters(name=Name("/example")))
    assert interest.lifetime_ms == 1000 and interest.app_params == b""
    assert lp.signed_interest is not None and lp.signed_interest.digest_ok()
    assert command_signature_ok(interest, lp.signed_interest)
    assert not command_signature_ok(interest, None)


def test_parse_unregister_v2() -> None:
    interest, lp = decoded(UNREGISTER_V2)
    assert parse_command(interest) == ("rib", "unregister", ControlParameters(name=Name("/example2")))
    assert command_signature_ok(interest, lp.signed_interest)


def test_parse_register_with_route_fields() -> None:
    interest, _ = decoded(REGISTER_FULL)
    module, verb, cp = parse_command(interest)
    assert (module, verb) == ("rib", "register")
    assert cp == ControlParameters(name=Name("/full"), face_id=300, origin=65, cost=7, flags=3,
                                   expiration_period=60000)


def test_parse_register_legacy() -> None:
    interest, lp = decoded(REGISTER_LEGACY)
    assert lp.signed_interest is None and interest.app_params is None
    assert parse_command(interest) == ("rib", "register", ControlParameters(name=Name("/legacy")))
    sig = legacy_signature(interest)
    assert sig.timestamp_ms == 0x000001A200C14BE6 and len(sig.nonce) == 8
    assert sig.sig_info == bytes.fromhex("16031b0100")
    assert sig.digest_ok()
    assert command_signature_ok(interest)


def test_tampered_signatures_do_not_verify() -> None:
    interest, lp = decoded(REGISTER_LEGACY)
    comps = list(interest.name.comps)
    comps[6] = generic(b"\x00" * 8)  # another command nonce
    forged = Interest(Name.from_wire(tuple(comps)), nonce=1)
    assert parse_command(forged)[0] == "rib"
    assert not command_signature_ok(forged)
    v2, lp = decoded(REGISTER_V2)
    si = lp.signed_interest
    assert si is not None and command_signature_ok(v2, si)
    assert not command_signature_ok(v2, SignedInterestInfo(si.info, b"\x00" * 32, si.signed_portion))
    assert not command_signature_ok(v2, SignedInterestInfo(si.info, si.value, si.signed_portion + b"x"))


def _v2_command(*comps: bytes) -> Interest:
    return Interest.with_params(Name.from_wire(tuple(comps)), b"", nonce=1)


CP = generic(ControlParameters(name=Name("/p")).encode())


@pytest.mark.parametrize(
    ("interest", "message"),
    [
        (Interest(Name("/localhost/nfd/rib"), nonce=1), "not an NFD command"),
        (_v2_command(generic("localhost"), generic("xyz"), generic("rib"), generic("register"), CP), "not an NFD"),
        (_v2_command(generic("other"), generic("nfd"), generic("rib"), generic("register"), CP), "not an NFD"),
        (Interest(Name.from_wire((generic("localhost"), generic("nfd"), generic("rib"), generic("register"), CP)),
                  nonce=1), "unsigned"),
        (Interest(Name.from_wire((generic("localhost"), generic("nfd"), generic("rib"), generic("register"), CP,
                                  generic("x"))), nonce=1), "params-sha256"),
        (Interest(Name.from_wire((generic("localhost"), generic("nfd"), generic("rib"), generic("register"), CP,
                                  generic("a"), generic("b"))), nonce=1), "not 7"),
        (_v2_command(generic("localhost"), generic("nfd"), generic("rib"), generic("register"), generic(b"junk")),
         "ControlParameters"),
        (_v2_command(generic("localhost"), generic("nfd"), generic("rib"), generic("register"),
                     generic(b"\x68\x01")), "ControlParameters"),
        (_v2_command(generic("localhost"), generic("nfd"), generic("rib"), b"\x20register", CP), "verb"),
        (_v2_command(generic("localhost"), generic("nfd"), generic(b"\xff"), generic("register"), CP), "UTF-8"),
    ],
)
def test_parse_command_rejects(interest: Interest, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_command(interest)


def test_parse_command_localhop_and_other_modules() -> None:
    cmd = _v2_command(generic("localhop"), generic("nfd"), generic("faces"), generic("create"),
                      generic(ControlParameters(uri="tcp4://10.0.0.1:6363").encode()))
    assert parse_command(cmd) == ("faces", "create", ControlParameters(uri="tcp4://10.0.0.1:6363"))


@pytest.mark.parametrize(
    "patch",
    [
        {5: generic(b"\x00\x00\x01")},  # timestamp not an NNI
        {7: generic(b"\x17\x00")},  # SignatureInfo component holds the wrong TLV
        {8: generic(b"\x17\x20" + b"\x00" * 31)},  # truncated SignatureValue TLV
        {8: b"\x20" + bytes.fromhex("1700")},  # not a generic component
    ],
)
def test_legacy_form_checks(patch: dict[int, bytes]) -> None:
    interest, _ = decoded(REGISTER_LEGACY)
    comps = list(interest.name.comps)
    for i, c in patch.items():
        comps[i] = c
    bad = Interest(Name.from_wire(tuple(comps)), nonce=1)
    with pytest.raises(ValueError):
        parse_command(bad)
    assert not command_signature_ok(bad)


def test_hand_built_v2_command_matches_spec() -> None:
    """Build a v0.3 signed command from the spec alone and check decode + signature."""
    comps = [T(8, b"localhost"), T(8, b"nfd"), T(8, b"rib"), T(8, b"register"),
             T(8, ControlParameters(name=Name("/hand")).encode())]
    sig_info = T(0x2C, T(0x1B, b"\x00"), T(0x26, b"\x01" * 8), T(0x28, (1700000000000).to_bytes(8, "big")))
    app = T(0x24, b"")
    sig_value = T(0x2E, sha(b"".join(comps) + app + sig_info))
    tail = app + sig_info + sig_value
    wire = T(5, T(7, *comps, T(2, sha(tail))), T(0x0A, b"\x00\x00\x00\x2a"), T(0x0C, b"\x03\xe8"), tail)
    interest, lp = decoded(wire)
    assert parse_command(interest) == ("rib", "register", ControlParameters(name=Name("/hand")))
    assert lp.signed_interest is not None and lp.signed_interest.info.time_ms == 1700000000000
    assert command_signature_ok(interest, lp.signed_interest)


# --- the reply ------------------------------------------------------------------------------------------


def test_response_data_round_trip_through_ndn() -> None:
    m = NdnNameMap()
    interest, _ = decode_ndn(REGISTER_V2, names=m)
    _, _, cp = parse_command(interest)
    reply = response_data(interest, ControlResponse(200, "OK", cp.with_rib_defaults(300)))
    assert isinstance(reply, Data) and reply.name == interest.name
    KeyChain().verify(reply)
    wire = encode_ndn(reply, names=m)
    # Data named exactly as python-ndn's command (NDN params digest), DigestSha256-signed
    assert wire[2 : 2 + 2 + 0x50] == REGISTER_V2[2 : 2 + 2 + 0x50]
    assert wire[-39:-34] == bytes.fromhex("16031b0100")
    back, _ = decode_ndn(wire, names=NdnNameMap())
    assert ControlResponse.decode(back.content) == ControlResponse(
        200, "OK", ControlParameters(name=Name("/example"), face_id=300, origin=0, cost=0, flags=1))


def test_error_reply_still_has_a_body() -> None:
    interest, _ = decoded(REGISTER_LEGACY)
    reply = response_data(interest, ControlResponse(400, "malformed command"))
    assert reply.content.endswith(b"\x68\x00")
    assert ControlResponse.decode(reply.content).body == ControlParameters()


def test_response_freshness() -> None:
    interest = Interest(Name("/localhost/nfd/rib/register").append_wire(CP, params_digest(sha(b""))),
                        nonce=1, app_params=b"")
    assert response_data(interest, ControlResponse(200), freshness_ms=1000).freshness_ms == 1000


# --- properties --------------------------------------------------------------------------------------------

NNI = st.one_of(st.none(), st.integers(0, 2**64 - 1))
TEXT = st.one_of(st.none(), st.text(max_size=20))
NAMES = st.one_of(st.none(), st.lists(st.binary(max_size=10), max_size=4).map(lambda cs: Name(cs)))

CONTROL_PARAMETERS = st.builds(
    ControlParameters, name=NAMES, face_id=NNI, uri=TEXT, local_uri=TEXT, origin=NNI, cost=NNI, capacity=NNI,
    count=NNI, base_congestion_marking_interval=NNI, default_congestion_threshold=NNI, mtu=NNI, flags=NNI,
    mask=NNI, strategy=NAMES, expiration_period=NNI, face_persistency=NNI,
)


@settings(max_examples=200, deadline=None)
@given(CONTROL_PARAMETERS, st.integers(0, 2**32 - 1), st.text(max_size=30), st.booleans())
def test_prop_control_response_round_trip(cp: ControlParameters, code: int, text: str, with_body: bool) -> None:
    assert ControlParameters.decode(cp.encode()) == cp
    cr = ControlResponse(code, text, cp if with_body else None)
    back = ControlResponse.decode(cr.encode())
    assert back == ControlResponse(code, text, cp if with_body else ControlParameters())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_prop_decoders_raise_only_decode_error(buf: bytes) -> None:
    for wire in (buf, b"\x68" + bytes((len(buf),)) + buf if len(buf) < 253 else buf):
        try:
            ControlParameters.decode(wire)
        except DecodeError:
            pass
    for wire in (buf, b"\x65" + bytes((len(buf),)) + buf if len(buf) < 253 else buf):
        try:
            ControlResponse.decode(wire)
        except DecodeError:
            pass


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=12), min_size=0, max_size=10), st.booleans())
def test_prop_parse_command_raises_only_value_error(comps: list[bytes], params: bool) -> None:
    base = [b"localhost", b"nfd", b"rib", b"register"]
    name = Name(base + comps)
    interest = Interest.with_params(name, b"", nonce=1) if params else Interest(name, nonce=1)
    try:
        parse_command(interest)
    except ValueError:
        pass
    command_signature_ok(interest)


# --- cross-check against python-ndn (only when it is installed) ----------------------------------------------


@pytest.fixture
def nfd_mgmt():  # type: ignore[no-untyped-def]  # a pytest fixture or helper of any packet
    # "ndn.app_support", not "ndn": without python-ndn, "ndn" may resolve to this tests/ndn directory.
    return pytest.importorskip("ndn.app_support.nfd_mgmt")


@pytest.mark.parametrize("verb", ["register", "unregister"])
def test_live_python_ndn_commands(nfd_mgmt, verb: str) -> None:  # type: ignore[no-untyped-def]  # a pytest fixture or helper of any packet
    from ndn import encoding as enc
    from ndn.security import DigestSha256Signer

    ip = enc.InterestParam(lifetime=1000)
    v2 = bytes(enc.make_interest(nfd_mgmt.make_command_v2("rib", verb, None, name="/live/v2", cost=3), ip,
                                 app_param=b"", signer=DigestSha256Signer(for_interest=True)))
    legacy = bytes(enc.make_interest(nfd_mgmt.make_command("rib", verb, None, name="/live/v1"), ip))
    for wire, prefix, cost in ((v2, "/live/v2", 3), (legacy, "/live/v1", None)):
        m = NdnNameMap()
        interest, lp = decode_ndn(wire, names=m)
        assert parse_command(interest) == ("rib", verb, ControlParameters(name=Name(prefix), cost=cost))
        assert command_signature_ok(interest, lp.signed_interest)
        _, _, cp = parse_command(interest)
        reply = encode_ndn(response_data(interest, ControlResponse(200, "OK", cp.with_rib_defaults(300))), names=m)
        name, _, content, _ = enc.parse_data(reply)
        assert enc.Name.encode(name) == enc.Name.encode(enc.parse_interest(wire)[0])  # exactly the command's name
        parsed = nfd_mgmt.parse_response(content)
        assert parsed["status_code"] == 200 and parsed["face_id"] == 300 and parsed["flags"] == 1
        error = encode_ndn(response_data(interest, ControlResponse(403, "authorization rejected")), names=m)
        assert nfd_mgmt.parse_response(enc.parse_data(error)[2])["status_code"] == 403
