"""NDN faces: Unix and TCP connections that speak NDN's own format.

Unmodified NDN applications (python-ndn, ndn-cxx, NDNts) connect to a
forwarder's Unix socket (NFD's default: ``/run/nfd/nfd.sock``) or to TCP
port 6363 and exchange packets as raw NDN TLV blocks (v0.3 Interest 0x05,
Data 0x06, NDNLPv2 LpPacket 0x64), back to back on the stream, with no
length prefix.  An NDN face is NFD's pair, a transport and a link service:

- `NdnStreamFace`: the transport, a `StreamFace` with NDN's `Framing` (a
  whole TLV block is the packet; its header tells the length,
  `icnd.ndn.tlv.frame_length`; a header that is invalid or announces more
  than 8800 bytes, `MAX_NDN_PACKET`, NFD's limit, is a framing error that
  closes the face, as in NFD).  Its ``wire_format = "ndn"`` makes the node
  give it an `NdnLinkService`.
- `NdnStreamListener` / `open_ndn_listener`: accept such connections.
  Unix connections are local faces; TCP connections are local when the peer
  is a loopback address (NFD's ``local`` whitelist, and python-ndn's own
  rule for choosing ``/localhost`` over ``/localhop``).
- `NdnLinkService`: NDN TLV + NDNLPv2 <-> icnd packets for one face (the
  packet translation itself is `icnd.ndn.codec`), with the per-face state
  NDN needs back: PIT tokens to echo, the original Interest a Nack must carry.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from dataclasses import replace
from collections.abc import Callable
from typing import Any

from icnd.errors import DecodeError
from icnd.faces.base import DEFAULT_LIMITS, Face, FaceLimits, OnNewFace
from icnd.faces.recvbuf import ByteBudget
from icnd.faces.service import LinkService, NothingToDeliver, Unsendable
from icnd.faces.stream import (
    DEFAULT_MAX_SEND_QUEUE,
    Framing,
    FramingError,
    StreamFace,
    StreamListener,
    open_stream_listener,
)
from icnd.faces.uri import FaceUri, format_inet_uri, parse_face_uri
from icnd.name import T_PARAMS, Name
from icnd.ndn.codec import IdlePacket, LpInfo, NdnNameMap, decode_ndn, encode_ndn, encode_ndn_nack
from icnd.ndn.tlv import MAX_NDN_PACKET, frame_length_at
from icnd.packet import Data, Interest, Nack, Packet

log = logging.getLogger("icnd.ndn")

MAX_PENDING = 8192  # remembered Interests per face (for PIT tokens and Nacks)


def _no_header(n: int) -> bytes:
    return b""


def _tlv_frame(view: memoryview, start: int, end: int) -> tuple[int, int] | None:
    """A whole TLV block is the packet; its header tells the length."""
    try:
        total = frame_length_at(view, start, end)
    except DecodeError as exc:
        raise FramingError(str(exc)) from None
    return None if total is None else (start, start + total)


NDN_FRAMING = Framing(_no_header, 0, MAX_NDN_PACKET, _tlv_frame)


class NdnStreamFace(StreamFace):
    """A stream face carrying back-to-back NDN TLV packets (no length prefix)."""

    wire_format = "ndn"
    framing = NDN_FRAMING


class NdnStreamListener(StreamListener):
    """Accepts Unix or TCP connections; each becomes an on-demand `NdnStreamFace`."""

    def _make_face(self, conn: socket.socket, addr: Any) -> NdnStreamFace:
        if self._unix_path is None:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            host, port = addr[:2]
            remote = format_inet_uri("tcp", host, port)
            local = _is_loopback(host)
        else:
            remote = f"fd://{conn.fileno()}"
            local = True
        return NdnStreamFace(conn, remote_uri=remote, local_uri=self.local_uri, local=local, persistent=False,
                             max_send_queue=DEFAULT_MAX_SEND_QUEUE)


def _is_loopback(host: str) -> bool:
    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


async def open_ndn_listener(uri: str | FaceUri, *, on_new_face: OnNewFace, backlog: int = 128,
                            limits: FaceLimits = DEFAULT_LIMITS,
                            eager_frames: ByteBudget | None = None) -> NdnStreamListener:
    """Listen for NDN applications on ``unix:///path`` or ``tcp://HOST:PORT`` (default port 6363),
    with the connection limits of icnd's own stream listeners (and, given, their frame-buffer budget)."""
    parsed = parse_face_uri(uri) if isinstance(uri, str) else uri
    if parsed.scheme not in ("unix", "tcp"):
        raise ValueError(f"an NDN listener is unix:///path or tcp://HOST:PORT, not {parsed}")
    # Same socket set-up as icnd's own stream listeners (stale Unix socket
    # files replaced, live ones refused, SO_REUSEADDR, dual-stack IPv6);
    # only the faces it makes differ.
    plain = await open_stream_listener(parsed, on_new_face=on_new_face, backlog=backlog, limits=limits)
    return NdnStreamListener(plain._sock, parsed, on_new_face, limits=limits, eager_frames=eager_frames)




# --- the link service -----------------------------------------------------------------


class _Pending:
    """What the link remembers of an Interest that came in on its face."""

    __slots__ = ("interest", "token")

    def __init__(self, interest: Interest, token: bytes | None) -> None:
        self.interest = interest  # for the fragment of a Nack (NDN wants the whole Interest)
        self.token = token  # the PitToken to echo, or None


class NdnLinkService(LinkService):
    """NDN TLV + NDNLPv2 <-> icnd packets for one face, and what NDN needs back.

    Decoding: an NDNLPv2 IDLE packet raises `NothingToDeliver`; every
    Interest received (with its PitToken, if any) is remembered under its
    name, bounded per face (the oldest is forgotten first); a Nack comes
    back under icnd's name when its Interest had parameters.

    Encoding: a Data echoes the token of the Interest it answers (NFD
    semantics: the token of the in-record), and is signed with DigestSha256
    by the codec; a Nack carries the original Interest as its fragment, as
    NDNLPv2 wants (ndn-cxx consumers match it against their Interest).  A
    packet NDN cannot carry (over 8800 bytes, or not expressible) is counted
    in the face's ``send_drops`` and raises `Unsendable`.

    Name translation for ``params-sha256`` (NDN's digest covers the whole
    ApplicationParameters TLV to the end of the Interest, icnd's only the
    parameter bytes) is the codec's, with the translation memory `names`
    (`icnd.ndn.codec.NdnNameMap`): Interests arrive with icnd's component
    and Data leave under the consumer's NDN name.  The link services of one
    node share one map (`sharing`), so that an Interest forwarded from one
    NDN face to another keeps its NDN name and signature; a link service
    made without one has a map of its own.
    """

    __slots__ = ("names", "max_pending", "_pending", "_prefix_pending", "in_interests", "in_data", "in_nacks",
                 "out_interests", "out_data", "out_nacks")

    wire_format = "ndn"

    def __init__(self, face: Face, max_pending: int = MAX_PENDING, *, names: NdnNameMap | None = None) -> None:
        super().__init__(face, self._decode, self._encode)
        self.names = names if names is not None else NdnNameMap()
        self.max_pending = max_pending
        self._pending: dict[tuple[bytes, ...], _Pending] = {}
        self._prefix_pending: dict[tuple[bytes, ...], _Pending] = {}  # CanBePrefix Interests
        # packets by kind, for NFD's faces/list: Interests, Data, Nacks in; the same out
        self.in_interests = self.in_data = self.in_nacks = 0
        self.out_interests = self.out_data = self.out_nacks = 0

    @classmethod
    def sharing(cls, names: NdnNameMap) -> Callable[[Face], NdnLinkService]:
        """What makes a node's NDN link services, one per face, all with the translation memory `names`."""
        return lambda face: cls(face, names=names)

    @property
    def counts(self) -> tuple[int, int, int, int, int, int]:
        return (self.in_interests, self.in_data, self.in_nacks,
                self.out_interests, self.out_data, self.out_nacks)

    def close(self) -> None:
        self._pending.clear()
        self._prefix_pending.clear()

    # --- receiving --------------------------------------------------------------------
    def _decode(self, wire: bytes) -> Packet:
        try:
            packet, lp = decode_ndn(wire, names=self.names)
        except IdlePacket:
            raise NothingToDeliver from None
        if type(packet) is Interest:
            self._remember(packet, lp.pit_token)
        elif type(packet) is Data:
            self.in_data += 1
        elif type(packet) is Nack:
            packet = self._icnd_nack(packet)
        return packet

    def _remember(self, interest: Interest, token: bytes | None) -> None:
        self.in_interests += 1
        comps = interest.name.comps
        pending = self._prefix_pending if interest.can_be_prefix else self._pending
        if comps in pending:
            del pending[comps]  # re-insert at the end: the newest goes last
        pending[comps] = _Pending(interest, token)
        if len(pending) > self.max_pending:
            del pending[next(iter(pending))]

    def _icnd_nack(self, nack: Nack) -> Nack:
        """A Nack that came in, under icnd's name if its Interest had parameters."""
        self.in_nacks += 1
        comps = nack.name.comps
        if comps[-1][0] == T_PARAMS:
            icnd = self.names.to_icnd(comps)
            if icnd is not comps:
                return replace(nack, name=Name.from_wire(icnd))
        return nack

    # --- sending ----------------------------------------------------------------------
    def _encode(self, packet: Packet) -> bytes:
        try:
            if type(packet) is Data:
                entry = self._take(packet.name.comps)
                if entry is None or entry.token is None:
                    wire = encode_ndn(packet, names=self.names)
                else:
                    wire = encode_ndn(packet, LpInfo(pit_token=entry.token), names=self.names)
                self.out_data += 1
            elif type(packet) is Interest:
                wire = encode_ndn(packet, names=self.names)
                self.out_interests += 1
            elif type(packet) is Nack:
                wire = self._nack_wire(packet)
                self.out_nacks += 1
            else:
                raise TypeError(f"not a packet: {packet!r}")
        except ValueError as exc:  # too large for NDN (8800 bytes) or not expressible
            self.face.counters.send_drops += 1
            log.debug("face %d: cannot send %r in NDN format: %s", self.face.id, packet, exc)
            raise Unsendable(str(exc)) from None
        return wire

    def answer(self, interest: Interest, data: Data | None) -> None:
        """Answer an Interest the forwarder never saw (a management command) with
        `data`, echoing that Interest's token; None: no answer, forget it."""
        pending = self._prefix_pending if interest.can_be_prefix else self._pending
        entry = pending.pop(interest.name.comps, None)
        if data is None:
            return
        token = entry.token if entry is not None else None
        try:
            wire = encode_ndn(data, None if token is None else LpInfo(pit_token=token), names=self.names)
        except ValueError as exc:
            self.face.counters.send_drops += 1
            log.warning("face %d: cannot send %r in NDN format: %s", self.face.id, data, exc)
            return
        self.out_data += 1
        self.transmit(wire)

    def _take(self, comps: tuple[bytes, ...]) -> _Pending | None:
        entry = self._pending.pop(comps, None)
        if entry is None and self._prefix_pending:
            prefix_pending = self._prefix_pending
            for n in range(len(comps), 0, -1):
                entry = prefix_pending.pop(comps[:n], None)
                if entry is not None:
                    break
        return entry

    def _nack_wire(self, nack: Nack) -> bytes:
        comps = nack.name.comps
        pending = self._pending
        entry = pending.get(comps)
        if entry is None:
            pending = self._prefix_pending
            entry = pending.get(comps)
        if entry is not None and entry.interest.nonce == nack.nonce:
            del pending[comps]
            return encode_ndn_nack(entry.interest, nack.reason, entry.token, names=self.names)
        return encode_ndn(nack, names=self.names)  # the codec rebuilds the Interest from the name and nonce
