"""The NDN link service: NDN TLV + NDNLPv2 <-> icnd packets for one face."""

import pytest

from icnd.errors import DecodeError
from icnd.faces import NothingToDeliver, Unsendable, memory_face_pair
from icnd.name import Name
from icnd.ndn.codec import LpInfo, decode_ndn, encode_ndn
from icnd.ndn.face import NdnLinkService, NdnStreamFace
from icnd.ndn.tlv import T_LP_PACKET, T_PIT_TOKEN, encode_tlv
from icnd.packet import Data, Interest, Nack, NackReason


def _link() -> tuple[NdnLinkService, list[bytes]]:
    face, _ = memory_face_pair()
    sent: list[bytes] = []
    link = NdnLinkService(face)
    link.transmit = sent.append
    return link, sent


def _with_token(packet: Interest, token: bytes) -> bytes:
    return encode_ndn(packet, LpInfo(pit_token=token))


def test_ndn_faces_get_the_ndn_service() -> None:
    assert NdnStreamFace.wire_format == NdnLinkService.wire_format == "ndn"


def test_idle_packets_are_not_errors_and_garbage_is() -> None:
    link, _ = _link()
    with pytest.raises(NothingToDeliver):
        link.decode(encode_tlv(T_LP_PACKET, encode_tlv(T_PIT_TOKEN, b"\x01")))
    with pytest.raises(DecodeError):
        link.decode(b"\x05\x03garbage")


def test_data_echoes_the_token_of_its_interest() -> None:
    link, _ = _link()
    interest = Interest(Name("/t/a"), nonce=1)
    assert link.decode(_with_token(interest, b"\xaa\xbb")) == interest
    wire = link.encode(Data(Name("/t/a"), b"x"))
    _, lp = decode_ndn(wire)
    assert lp.pit_token == b"\xaa\xbb"
    _, lp = decode_ndn(link.encode(Data(Name("/t/a"), b"x")))  # the token was used once
    assert lp.pit_token is None
    assert link.counts == (1, 0, 0, 0, 2, 0)


def test_answers_to_commands_echo_the_token_and_forget_the_interest() -> None:
    link, sent = _link()
    interest = Interest(Name("/localhost/nfd/status/general"), nonce=2, can_be_prefix=True)
    link.decode(_with_token(interest, b"\x01\x02"))
    link.answer(interest, Data(Name("/localhost/nfd/status/general/x"), b"s"))
    assert decode_ndn(sent[-1])[1].pit_token == b"\x01\x02"
    other = Interest(Name("/localhost/nfd/faces/list"), nonce=3, can_be_prefix=True)
    link.decode(_with_token(other, b"\x03"))
    link.answer(other, None)  # no answer: nothing sent, nothing remembered
    assert len(sent) == 1
    _, lp = decode_ndn(link.encode(Data(Name("/localhost/nfd/faces/list/y"), b"")))
    assert lp.pit_token is None


def test_nack_carries_the_original_interest() -> None:
    link, _ = _link()
    interest = Interest(Name("/t/n"), nonce=9, lifetime_ms=1234)
    link.decode(_with_token(interest, b"\x09"))
    nack, lp = decode_ndn(link.encode(Nack(Name("/t/n"), 9, NackReason.NO_ROUTE)))
    assert isinstance(nack, Nack) and lp.pit_token == b"\x09" and lp.nack_reason == NackReason.NO_ROUTE


def test_packets_ndn_cannot_carry_are_counted_drops() -> None:
    link, _ = _link()
    with pytest.raises(Unsendable):
        link.encode(Data(Name("/big"), b"x" * 9000))
    assert link.face.counters.send_drops == 1


def test_link_services_sharing_a_name_map_forward_an_ndn_interest_byte_for_byte() -> None:
    """Issue #28: the params-digest translation memory is the link services'
    (one per node, `NdnLinkService.sharing`), not a process global: a signed
    NDN Interest decoded on one face and sent on another keeps its signature
    only when the two links share the memory."""
    from icnd.ndn.codec import NdnNameMap

    # python-ndn's signed /localhost/nfd/rib/register command (v0.3 signed Interest)
    wire = bytes.fromhex(
        "0599075008096c6f63616c686f737408036e6664080372696208087265676973746572080d680b070908076578616d70"
        "6c650220b9b79a4adac1f2d95e98d41d7b29ded6f2bf2b63b1fb5dc9637ebd03f8459c380a04010203040c0203e82400"
        "2c171b0100260849313d826ec920db2808000001a200c14be62e20551abe034f8fc18644bcb8add89d7f9c3a712434a4"
        "99ec4972b8ed067c65977f"
    )
    signature = wire[-32:]
    names = NdnNameMap()
    make = NdnLinkService.sharing(names)
    a, b = make(memory_face_pair()[0]), make(memory_face_pair()[0])
    alone = NdnLinkService(memory_face_pair()[0])
    assert a.names is b.names is names and alone.names is not names
    interest = a.decode(wire)
    assert isinstance(interest, Interest)
    assert signature in b.encode(interest)
    assert signature not in alone.encode(interest)
