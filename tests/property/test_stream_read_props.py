"""A stream face's inline read path against the general one.

`icnd.faces.stream.StreamFace`'s read loop does the receive buffer's common
case inline (reading into free room, taking out the first frame of a buffer
that cannot hand one over) and calls `icnd.faces.recvbuf.ReceiveBuffer`'s
``room`` and ``split`` for everything else; with ``inline_reads = False``
every read goes through those methods.  The same bytes, cut into the same
reads, must give the same packets (bytes or handed-over views), the same
counters, the same reason to close and the same budget left -- whatever the
framing (icnd's length prefix, NDN's self-delimiting TLV), frame sizes (up
to frames given a buffer of their own), cuts, budget, hand-over decisions,
broken or truncated tails, and a face closed while delivering.  The packets
are also checked against the frames that were sent.

Each read is controlled: the test sends one piece on a Unix socket pair and
waits until every task is blocked, so the face has read all of it before the
next piece is sent.
"""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icnd.codec import MAX_PACKET_SIZE
from icnd.faces import Face, StreamFace
from icnd.faces.recvbuf import EAGER_FRAMES_BYTES, RECV_CHUNK, ByteBudget
from icnd.ndn.face import NdnStreamFace

PIECE = 64 * 1024  # the largest piece sent at once (well inside a Unix socket's send buffer)

# frame payload sizes: mostly small, some spanning reads, some given a buffer of their own (icnd framing)
SMALL = st.integers(0, 300)
MEDIUM = st.integers(301, 70_000)
LARGE = st.integers(RECV_CHUNK - 64, RECV_CHUNK + 200_000)
NDN_SIZES = st.one_of(st.integers(0, 300), st.integers(301, 8_700))  # NDN's frame limit is 8,800 bytes


def _length_frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def _ndn_frame(payload: bytes) -> bytes:
    """A TLV block of type 6 (Data) holding `payload`: the block itself is the packet."""
    n = len(payload)
    length = bytes((n,)) if n < 0xFD else b"\xfd" + n.to_bytes(2, "big")
    return b"\x06" + length + payload


@dataclass(frozen=True)
class Wire:
    face_class: type[StreamFace]
    frame: Callable[[bytes], bytes]
    sizes: st.SearchStrategy[int]
    bad_header: bytes  # a frame start the framing rejects (the face counts a framing error and closes)
    packet_is_frame: bool  # NDN: the packet is the whole TLV block; icnd: the bytes after the length


WIRES = {
    "icnd": Wire(StreamFace, _length_frame, st.one_of(SMALL, SMALL, MEDIUM, LARGE),
                 struct.pack(">I", MAX_PACKET_SIZE + 1), packet_is_frame=False),
    "ndn": Wire(NdnStreamFace, _ndn_frame, NDN_SIZES, b"\x00\x05", packet_is_frame=True),
}


@dataclass
class Outcome:
    packets: list[tuple[str, bytes]]
    counters: dict[str, int]
    close_reason: str | None
    budget_used: int


async def _receive(wire: Wire, pieces: list[bytes], *, inline: bool, hand_over: Callable[[memoryview], bool] | None,
                   budget: int, close_after: int | None) -> Outcome:
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    face = wire.face_class(ours, remote_uri="fd://peer", local_uri="fd://self", local=True, persistent=False,
                           eager_frames=ByteBudget(budget))
    face.inline_reads = inline
    face.hand_over = hand_over
    face.frame_timeout = 60.0  # no partial frame times out in this test
    packets: list[tuple[str, bytes]] = []
    if close_after is not None:
        theirs.shutdown(socket.SHUT_RD)  # the face's next send fails (EPIPE): it closes while delivering

    def on_receive(face: Face, packet: bytes) -> None:
        packets.append((type(packet).__name__, bytes(packet)))
        if len(packets) == close_after:
            face.send(b"x")

    try:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(face.run, on_receive)
                for piece in pieces:
                    await trio.testing.wait_all_tasks_blocked()  # the face has read everything sent
                    if face.closed:
                        break
                    assert theirs.send(piece) == len(piece)
                await trio.testing.wait_all_tasks_blocked()
                if not face.closed:
                    theirs.shutdown(socket.SHUT_WR)  # the peer closes: run returns
    finally:
        theirs.close()
    assert face.closed
    return Outcome(packets, face.counters.as_dict(), face.close_reason, face.eager_frames.used)


@st.composite
def streams(draw: st.DrawFn) -> tuple[Wire, list[bytes], list[bytes], str]:
    """(wire, the packets the frames carry, the stream cut into pieces, its tail: "", "bad" or "partial")."""
    wire = WIRES[draw(st.sampled_from(sorted(WIRES)))]
    rng = random.Random(draw(st.integers(0, 2**32)))
    payloads = [rng.randbytes(n) for n in draw(st.lists(wire.sizes, max_size=10))]
    frames = [wire.frame(p) for p in payloads]
    tail = draw(st.sampled_from(["", "bad", "partial"]))
    ends = []  # frames, each with where it is cut (offsets inside it) and whether a piece ends after it
    for frame in frames:
        inside = draw(st.lists(st.one_of(st.integers(1, 5), st.integers(1, max(1, len(frame) - 1))), max_size=3))
        ends.append((frame, sorted({c for c in inside if 0 < c < len(frame)}), draw(st.booleans())))
    if tail == "bad":
        ends.append((wire.bad_header, [], True))
    elif tail == "partial":
        last = wire.frame(rng.randbytes(draw(st.integers(1, 5_000))))
        ends.append((last[: draw(st.integers(1, len(last) - 1))], [], True))
    cuts, stream, offset = [0], b"", 0
    for frame, inside, cut_after in ends:
        cuts.extend(offset + c for c in inside)
        stream += frame
        offset += len(frame)
        if cut_after:
            cuts.append(offset)
    cuts.append(len(stream))
    pieces: list[bytes] = []
    for a, b in zip(cuts, cuts[1:]):
        pieces.extend(stream[i : min(b, i + PIECE)] for i in range(a, b, PIECE))
    packets = frames if wire.packet_is_frame else payloads
    return wire, packets, pieces, tail


HAND_OVERS: dict[str, Callable[[memoryview], bool] | None] = {
    "none": None,  # no link service taking views: every frame copied
    "all": lambda view: True,
    "even first byte": lambda view: len(view) > 0 and view[0] % 2 == 0,
}


# budgets: none (no frame gets a buffer of its own), about one large frame's worth, a node's default
BUDGETS = st.sampled_from([0, 2 * RECV_CHUNK, EAGER_FRAMES_BYTES, EAGER_FRAMES_BYTES])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(streams(), st.sampled_from(["none", "all", "all", "even first byte"]), BUDGETS, st.data())
def test_inline_read_path_acts_as_the_general_path(stream: tuple[Wire, list[bytes], list[bytes], str],
                                                    hand_over: str, budget: int, data: st.DataObject) -> None:
    """The inline path is only a shortcut: the same reads through it and through
    `ReceiveBuffer.room`/`split` alone deliver, count and close alike."""
    wire, packets, pieces, tail = stream
    close_after = data.draw(st.none() | st.integers(1, len(packets))) if packets else None

    async def receive(inline: bool) -> Outcome:
        return await _receive(wire, pieces, inline=inline, hand_over=HAND_OVERS[hand_over], budget=budget,
                              close_after=close_after)

    inline, general = trio.run(receive, True), trio.run(receive, False)
    assert inline == general
    expected = packets[:close_after] if close_after is not None else packets
    assert [p for _, p in inline.packets] == expected
    assert inline.counters["in_packets"] == len(expected)
    assert inline.counters["in_bytes"] == sum(map(len, expected))
    assert inline.budget_used == 0  # every share given back once the face closed
    if close_after is not None:
        assert inline.close_reason is not None and "EPIPE" in inline.close_reason
    elif tail == "bad":
        assert inline.counters["framing_errors"] == 1
        assert inline.close_reason is not None and inline.close_reason.startswith("framing error")
    else:
        assert inline.close_reason == "peer closed"
