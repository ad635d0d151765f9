"""The native link service: icnd's codec, bound once, on the face's send."""

from icnd.codec import decode, encode
from icnd.faces import NativeLinkService, memory_face_pair
from icnd.name import Name
from icnd.packet import Interest


def test_native_service_is_the_codec_on_the_face() -> None:
    a, _ = memory_face_pair()
    link = NativeLinkService(a)
    assert link.wire_format == "icnd" == a.wire_format
    assert link.decode is decode and link.encode is encode  # no indirection per packet
    assert link.transmit == a.send
    interest = Interest(Name("/a/b"), nonce=7)
    assert link.decode(link.encode(interest)) == interest
