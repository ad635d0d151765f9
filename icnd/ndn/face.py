"""NDN stream faces: Unix and TCP connections that speak NDN's own format.

Unmodified NDN applications (python-ndn, ndn-cxx, NDNts) connect to a
forwarder's Unix socket (NFD's default: ``/run/nfd/nfd.sock``) or to TCP
port 6363 and exchange packets as raw NDN TLV blocks (v0.3 Interest 0x05,
Data 0x06, NDNLPv2 LpPacket 0x64), back to back on the stream, with no
length prefix.  This module has the transport side of that:

- `NdnStreamFace`: a `StreamFace` whose frames are whole TLV blocks (the
  header tells the length, `icnd.ndn.tlv.frame_length`) and whose `send`
  writes the bytes it is given as they are.  It carries
  ``wire_format = "ndn"``: the node then decodes what it receives with
  `icnd.ndn.codec.decode_ndn` and encodes what it sends through an `NdnLink`,
  while native faces keep icnd's msgpack codec (and its cost) unchanged.
- `NdnStreamListener` / `open_ndn_listener`: accept such connections.
  Unix connections are local faces; TCP connections are local when the peer
  is a loopback address (NFD's ``local`` whitelist, and python-ndn's own
  rule for choosing ``/localhost`` over ``/localhop``).
- `NdnLink`: the per-face state between icnd's packet model and NDN's (PIT
  tokens to echo, the original Interest a Nack must carry); the packet
  translation itself is `icnd.ndn.codec`.

Reading is `StreamFace`'s loop (one receive buffer, drain per wakeup) with
NDN framing plugged in (`_frame`): a header that is invalid or announces more
than 8800 bytes (`MAX_NDN_PACKET`, NFD's limit) is a framing error that
closes the face, as in NFD.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from dataclasses import replace
from typing import Callable

from icnd.errors import DecodeError
from icnd.faces.base import OnNewFace
from icnd.faces.stream import (
    DEFAULT_MAX_SEND_QUEUE,
    FramingError,
    StreamFace,
    StreamListener,
    _describe,
    open_stream_listener,
)
from icnd.faces.uri import FaceUri, format_inet_uri, parse_face_uri
from icnd.name import T_PARAMS, Name
from icnd.packet import Data, Interest, Nack, Packet
from icnd.ndn.tlv import MAX_NDN_PACKET, frame_length

log = logging.getLogger("icnd.ndn")

MAX_PENDING = 8192  # remembered Interests per face (for PIT tokens and Nacks)


class NdnStreamFace(StreamFace):
    """A stream face carrying back-to-back NDN TLV packets (no length prefix)."""

    wire_format = "ndn"

    def send(self, wire: bytes) -> None:
        counters = self.counters
        n = len(wire)
        if self.closed or n > MAX_NDN_PACKET:
            counters.send_drops += 1
            return
        if self._queue:
            if self._queued_bytes + n > self.max_send_queue:
                counters.send_drops += 1
                return
            self._queue.append(wire)
            self._queued_bytes += n
        else:
            try:
                sent = self._sock.send(wire)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                counters.send_drops += 1
                self._close_now(_describe(exc))
                return
            if sent < n:
                self._queue.append(memoryview(wire)[sent:])
                self._queued_bytes += n - sent
                self._wake_writer.set()
        counters.out_packets += 1
        counters.out_bytes += n

    def _frame(self, view: memoryview, start: int, end: int) -> tuple[int, int] | None:
        """A whole TLV block is the packet; its header tells the length."""
        try:
            total = frame_length(view[start:end])
        except DecodeError as exc:
            raise FramingError(str(exc)) from None
        return None if total is None else (start, start + total)


class NdnStreamListener(StreamListener):
    """Accepts Unix or TCP connections; each becomes an on-demand `NdnStreamFace`."""

    def _make_face(self, conn: socket.socket, addr: object) -> NdnStreamFace:
        if self._unix_path is None:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            host, port = addr[:2]  # type: ignore[index]
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


async def open_ndn_listener(uri: str | FaceUri, *, on_new_face: OnNewFace, backlog: int = 128) -> NdnStreamListener:
    """Listen for NDN applications on ``unix:///path`` or ``tcp://HOST:PORT`` (default port 6363)."""
    parsed = parse_face_uri(uri) if isinstance(uri, str) else uri
    if parsed.scheme not in ("unix", "tcp"):
        raise ValueError(f"an NDN listener is unix:///path or tcp://HOST:PORT, not {parsed}")
    # Same socket set-up as icnd's own stream listeners (stale Unix socket
    # files replaced, live ones refused, SO_REUSEADDR, dual-stack IPv6);
    # only the faces it makes differ.
    plain = await open_stream_listener(parsed, on_new_face=on_new_face, backlog=backlog)
    return NdnStreamListener(plain._sock, parsed, on_new_face)


# --- translation state per face -------------------------------------------------------


class _Pending:
    """What the node remembers of an Interest that came in on an NDN face."""

    __slots__ = ("interest", "token")

    def __init__(self, interest: Interest, token: bytes | None) -> None:
        self.interest = interest  # for the fragment of a Nack (NDN wants the whole Interest)
        self.token = token  # the PitToken to echo, or None


class NdnLink:
    """Encodes icnd packets for one NDN face and remembers what NDN needs back.

    Every Interest received (with its PitToken, if any) is remembered under
    its name, bounded per face (the oldest is forgotten first).  Data sent
    back on the face echo the token (NFD semantics: the token of the
    in-record); a Nack carries the original Interest as its fragment, as
    NDNLPv2 wants (ndn-cxx consumers match it against their Interest).

    Name translation for ``params-sha256`` (NDN's digest covers the whole
    ApplicationParameters TLV to the end of the Interest, icnd's only the
    parameter bytes) is the codec's (`icnd.ndn.codec.NdnNameMap`): Interests
    arrive with icnd's component and Data leave under the consumer's NDN
    name.
    """

    def __init__(self, face: StreamFace, max_pending: int = MAX_PENDING) -> None:
        from icnd.ndn import codec

        self.face = face
        self.transmit: Callable[[bytes], None] = face.send  # or a link emulator's send
        self._encode = codec.encode_ndn
        self._encode_nack = codec.encode_ndn_nack
        self._lp = codec.LpInfo
        self._names = codec.default_name_map
        self.max_pending = max_pending
        self._pending: dict[tuple[bytes, ...], _Pending] = {}
        self._prefix_pending: dict[tuple[bytes, ...], _Pending] = {}  # CanBePrefix Interests
        # packets by kind, for faces/list: Interests, Data, Nacks in; the same out
        self.in_interests = self.in_data = self.in_nacks = 0
        self.out_interests = self.out_data = self.out_nacks = 0

    @property
    def counts(self) -> tuple[int, int, int, int, int, int]:
        return (self.in_interests, self.in_data, self.in_nacks,
                self.out_interests, self.out_data, self.out_nacks)

    # --- receiving --------------------------------------------------------------------
    def on_interest(self, interest: Interest, token: bytes | None) -> None:
        """Remember an Interest that came in on the face."""
        self.in_interests += 1
        comps = interest.name.comps
        pending = self._prefix_pending if interest.can_be_prefix else self._pending
        if comps in pending:
            del pending[comps]  # re-insert at the end: the newest goes last
        pending[comps] = _Pending(interest, token)
        if len(pending) > self.max_pending:
            del pending[next(iter(pending))]

    def on_nack(self, nack: Nack) -> Nack:
        """A Nack that came in, under icnd's name if its Interest had parameters."""
        self.in_nacks += 1
        comps = nack.name.comps
        if comps[-1][0] == T_PARAMS:
            icnd = self._names.to_icnd(comps)
            if icnd is not comps:
                return replace(nack, name=Name.from_wire(icnd))
        return nack

    def forget(self) -> None:
        self._pending.clear()
        self._prefix_pending.clear()

    # --- sending ----------------------------------------------------------------------
    def send(self, packet: Packet) -> None:
        """Encode `packet` for NDN and put it on the face (dropped, counted, if NDN cannot carry it)."""
        kind = type(packet)
        try:
            if kind is Data:
                entry = self._take(packet.name.comps)  # type: ignore[union-attr]
                if entry is None or entry.token is None:
                    wire = self._encode(packet)
                else:
                    wire = self._encode(packet, self._lp(pit_token=entry.token))
                self.out_data += 1
            elif kind is Interest:
                wire = self._encode(packet)
                self.out_interests += 1
            else:
                wire = self._nack_wire(packet)  # type: ignore[arg-type]
                self.out_nacks += 1
        except ValueError as exc:  # too large for NDN (8800 bytes) or not expressible
            self.face.counters.send_drops += 1
            log.debug("face %d: cannot send %r in NDN format: %s", self.face.id, packet, exc)
            return
        self.transmit(wire)

    def reply(self, data: Data, token: bytes | None) -> None:
        """Send a Data answering an Interest the forwarder never saw (management)."""
        try:
            wire = self._encode(data, None if token is None else self._lp(pit_token=token))
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
            return self._encode_nack(entry.interest, nack.reason, entry.token)
        return self._encode(nack)  # the codec rebuilds the Interest from the name and nonce
