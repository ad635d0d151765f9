"""Link services: what turns one face's bytes into packets and back.

NFD splits a face into a *transport*, which moves bytes, and a *link
service*, which turns bytes into network-layer packets and back.  icnd's
`Face` classes are the transports (`icnd.faces.base`); a `LinkService` sits
between one face and the node, and the node's receive and send paths are the
same for every face, whatever its format::

    face.run -> on_receive(face, wire) -> link.decode(wire) -> packet -> forwarder
    forwarder -> (face id, packet) -> link.transmit(link.encode(packet)) -> face

`NativeLinkService` speaks icnd's own format: its ``decode`` and ``encode``
*are* `icnd.codec.decode` and `icnd.codec.encode`, so the native path costs
what the codec costs and nothing more.  `icnd.ndn.face.NdnLinkService`
speaks NDN v0.3 TLV + NDNLPv2 (PIT tokens echoed, Data signed with
DigestSha256, Nacks carrying their Interest).  A new wire format is a new
link service, not a second path through the node.

The contract (``decode``, ``encode`` and ``transmit`` are plain attributes
holding callables: the node reads ``decode`` once per face and the other two
once per packet sent, so no bound method is made per packet):

- ``decode(wire)`` returns one packet, or raises `DecodeError` (malformed:
  the node counts it on the face and the node, and drops it) or
  `NothingToDeliver` (a packet of the link itself, such as an NDNLPv2 IDLE
  packet: dropped quietly).  Nothing else.
- ``encode(packet)`` returns the bytes, or raises `Unsendable` when the
  format cannot carry that packet (the service has counted the drop in the
  face's ``send_drops``).
- ``transmit(wire)`` is the face's ``send``, or the ``send`` of a link
  emulator (`icnd.faces.link.ShapedSender`) the node put in front of it;
  like ``send`` it never blocks.
- ``close()`` is called once when the face is gone.

Fragmentation is not a link service's business here: a UDP face splits and
reassembles packets above its MTU itself (`icnd.faces.fragment`), because
admitting all fragments or none, send-queue slots and send bursts are
properties of its shared datagram socket, and it keeps a packet within the
MTU free of any extra step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from icnd.codec import DATA_FRAME_START, decode, encode
from icnd.faces.base import Face
from icnd.packet import Packet

DATA_START_LEN = len(DATA_FRAME_START)


class NothingToDeliver(Exception):
    """Raised by ``decode`` for a packet that belongs to the link itself; not an error."""


class Unsendable(Exception):
    """Raised by ``encode`` for a packet the link's format cannot carry; already counted."""


class LinkService:
    """Bytes <-> packets for one face; see the module docstring for the contract."""

    __slots__ = ("face", "decode", "encode", "transmit")

    wire_format: ClassVar[str]

    def __init__(self, face: Face, decode: Callable[[bytes], Packet], encode: Callable[[Packet], bytes]) -> None:
        self.face = face
        self.decode = decode
        self.encode = encode
        self.transmit: Callable[[bytes], None] = face.send

    def close(self) -> None:
        """The face is gone: forget per-face state."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} face={self.face.id}>"


class NativeLinkService(LinkService):
    """icnd's own format: `icnd.codec` both ways, no per-face state.  Its face
    hands a large Data over in the buffer it was received into (no copy:
    `icnd.codec.decode` takes the view), every other packet as bytes."""

    __slots__ = ()

    wire_format = "icnd"

    def __init__(self, face: Face) -> None:
        super().__init__(face, decode, encode)
        face.hand_over = is_data


def is_data(packet: memoryview) -> bool:
    """`packet` is an icnd Data (what a native face hands over without a copy)."""
    return packet[:DATA_START_LEN] == DATA_FRAME_START
