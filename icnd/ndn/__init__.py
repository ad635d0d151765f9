"""NDN interoperability: the NDN v0.3 / NDNLPv2 wire format and NFD management.

- `icnd.ndn.tlv`: VAR-NUMBER / TLV primitives and stream framing.
- `icnd.ndn.codec`: `decode_ndn` / `encode_ndn` between NDN packets and icnd
  `Interest` / `Data` / `Nack` (see its docstring for every mapping decision).
- `icnd.ndn.nfdmgmt`: ControlParameters, ControlResponse and command parsing
  for ``/localhost/nfd/rib/register`` and friends.
- `icnd.ndn.face`: the NDN face, a stream transport with NDN's framing plus
  `NdnLinkService` (NDN TLV + NDNLPv2 <-> icnd packets, PIT tokens echoed),
  so the node's one receive and send path serves NDN applications too.
- `icnd.ndn.management`: the ``/localhost/nfd`` commands and datasets NDN
  applications need, answered on NDN faces before the forwarder.

This package only imports the codec modules; the node loads `face` and
`management` when it listens for NDN applications (``--ndn-listen``).
"""

from icnd.ndn.codec import (
    IdlePacket,
    LpInfo,
    NdnNameMap,
    NdnSignatureInfo,
    SignedInterestInfo,
    decode_ndn,
    encode_ndn,
    encode_ndn_nack,
)
from icnd.ndn.nfdmgmt import ControlParameters, ControlResponse, parse_command
from icnd.ndn.tlv import MAX_NDN_PACKET, frame_length, is_critical

__all__ = [
    "MAX_NDN_PACKET",
    "ControlParameters",
    "ControlResponse",
    "IdlePacket",
    "LpInfo",
    "NdnNameMap",
    "NdnSignatureInfo",
    "SignedInterestInfo",
    "decode_ndn",
    "encode_ndn",
    "encode_ndn_nack",
    "frame_length",
    "is_critical",
    "parse_command",
]
