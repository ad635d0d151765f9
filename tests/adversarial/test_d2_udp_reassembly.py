"""D2: UDP reassembly and on-demand faces must be bounded over all sources, not per source.

The attack (issue 15): datagrams from many source ports, each keeping
incomplete fragmented packets alive.  Before the fix every source port got an
on-demand face with its own 32 MiB reassembly allowance and nothing bounded
the number of such faces.  Now a listener's faces share one reassembly byte
budget (plus a per-source share), on-demand faces are bounded in number (the
idle longest evicted for a new peer, else the datagram refused, counted) and
partial packets are released when they expire.
"""

from __future__ import annotations

import socket

import trio

from icnd.faces import Face, FaceLimits, open_udp_listener
from icnd.faces.fragment import HEADER, MAGIC, Reassembler, ReassemblyBudget

PAYLOAD = 1000
COUNT = 20  # fragments announced per packet (20 KB); never all sent


def _fragment(seq: int, index: int) -> bytes:
    return HEADER.pack(MAGIC, seq, index, COUNT, COUNT * PAYLOAD) + bytes(PAYLOAD)


def test_reassemblers_sharing_a_budget_stay_within_it_and_release_on_expiry() -> None:
    share, total = 64 * 1024, 256 * 1024
    budget = ReassemblyBudget(total)
    sources = [Reassembler(64, share, 2.0, budget=budget) for _ in range(40)]
    for s, reassembler in enumerate(sources):
        for seq in range(10):
            for index in range(COUNT - 1):  # the last fragment never comes
                assert reassembler.feed(_fragment(seq, index), now=0.0) is None
                assert reassembler.buffered_bytes <= share
                assert budget.used <= total
    assert budget.used == sum(r.buffered_bytes for r in sources)
    assert budget.used > total / 2  # the budget is used, not wasted
    assert budget.evictions > 0
    for reassembler in sources:
        reassembler.expire(now=10.0)
    assert budget.used == 0
    assert all(r.pending_packets == 0 for r in sources)


async def test_many_source_ports_share_one_budget_and_faces_are_bounded() -> None:
    limits = FaceLimits(
        udp_max_faces=6, udp_evict_idle=0.5, reassembly_bytes=192 * 1024, reassembly_per_source=48 * 1024
    )
    faces: list[Face] = []
    listener = await open_udp_listener("127.0.0.1", 0, on_new_face=faces.append, limits=limits)
    port = listener.local_address[1]
    senders = []
    for _ in range(10):
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        await sock.bind(("127.0.0.1", 0))
        senders.append(sock)
    peak = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener.run)
        for seq in range(3):
            for sock in senders:
                for index in range(COUNT - 1):
                    await sock.sendto(_fragment(seq, index), ("127.0.0.1", port))
                    if index % 16 == 0:
                        await trio.sleep(0)
                        peak = max(peak, listener.reassembly_bytes)
        await trio.sleep(0.1)
        peak = max(peak, listener.reassembly_bytes)
        held = [f for f in listener.faces if not f.closed]
        assert len(held) == 6  # 4 of the 10 source ports got no face ...
        assert listener.counters.udp_faces_refused > 0  # ... and their datagrams were counted
        assert all(f._reassembler.buffered_bytes <= limits.reassembly_per_source for f in held)
        assert peak <= limits.reassembly_bytes
        assert listener.listener_counters()["reassembly_budget_evictions"] > 0
        # Partial packets expire (2 s without a fragment) and their memory is released;
        # the silent faces become idle and a new peer takes the slot of one of them.
        with trio.fail_after(6):
            while listener.reassembly_bytes:
                await trio.sleep(0.1)
        newcomer = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        await newcomer.bind(("127.0.0.1", 0))
        await newcomer.sendto(b"\x93\x01\x02", ("127.0.0.1", port))
        with trio.fail_after(2):
            while listener.counters.udp_faces_evicted < 1:
                await trio.sleep(0.02)
        assert len(listener.faces) == 6
        assert any(f.remote_uri.endswith(f":{newcomer.getsockname()[1]}") for f in listener.faces)
        newcomer.close()
        nursery.cancel_scope.cancel()
    for sock in senders:
        sock.close()
    await listener.aclose()


async def test_one_source_gets_only_its_share_by_default() -> None:
    """Before the fix one source port could hold 32 MiB of partial packets; now its share (8 MiB)."""
    big, count = 50_000, 100  # 5 MB packets, each missing its last fragment
    share = FaceLimits().reassembly_per_source
    faces: list[Face] = []
    listener = await open_udp_listener("127.0.0.1", 0, on_new_face=faces.append)
    port = listener.local_address[1]
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    await sock.bind(("127.0.0.1", 0))
    peak = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener.run)
        for seq in range(3):
            for index in range(count - 1):
                await sock.sendto(HEADER.pack(MAGIC, seq, index, count, count * big) + bytes(big), ("127.0.0.1", port))
                await trio.sleep(0.0005)
                if faces:
                    peak = max(peak, faces[0]._reassembler.buffered_bytes)  # type: ignore[attr-defined]
        await trio.sleep(0.05)
        (face,) = faces
        assert face.counters.fragments_in > 250  # type: ignore[attr-defined]
        assert face.counters.reassembly_evictions > 0  # type: ignore[attr-defined]
        assert peak <= share
        nursery.cancel_scope.cancel()
    sock.close()
    await listener.aclose()
