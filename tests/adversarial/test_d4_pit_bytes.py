"""D4: Interests carrying large application parameters over one connection
must not make the PIT hold unbounded bytes: the PIT is bounded in parameter
bytes, globally and per non-local face, with a reserve for local faces.
Sans-IO, explicit time; the 1 MiB parameters are one shared bytes object, so
the test itself stays small while the PIT's accounting sees 600 MiB offered."""

from __future__ import annotations

from icnd import Interest, Nack, NackReason, Name
from icnd.core.fw.forwarder import Forwarder

LOCAL = 1
UPSTREAM = 2
PEER = 11
MiB = 1024 * 1024
PARAMS = b"\x00" * MiB


def held_param_bytes(fw: Forwarder) -> int:
    """Bytes of parameters the PIT keeps reachable (entries and in-records)."""
    seen: dict[int, int] = {}
    for e in fw.pit:
        for i in [e.interest, *(r.interest for r in e.in_records.values())]:
            if i.app_params:
                seen[id(i)] = len(i.app_params)
    return sum(seen.values())


def setup(**kw) -> Forwarder:
    fw = Forwarder(**kw)
    fw.add_face(LOCAL, local=True)
    fw.add_face(UPSTREAM)
    fw.add_face(PEER)
    fw.add_face(PEER + 1)
    fw.add_route(Name("/silent"), UPSTREAM)
    return fw


def test_one_connection_cannot_fill_the_pit_with_parameters() -> None:
    fw = setup()  # the defaults: 256 MiB in all, 64 MiB per non-local face
    nacked = 0
    for i in range(600):
        out = fw.on_packet(PEER, Interest(Name(f"/silent/big/{i}"), nonce=i + 1, app_params=PARAMS), i * 0.006)
        nacked += sum(1 for s in out if isinstance(s.packet, Nack) and s.packet.reason is NackReason.CONGESTION)
    assert held_param_bytes(fw) <= 64 * MiB
    assert fw.pit.bytes_used == held_param_bytes(fw)
    assert nacked >= 600 - 64 and fw.counters.pit_bytes_full == nacked
    # a local client still gets a large Interest through
    out = fw.on_packet(LOCAL, Interest(Name("/silent/mine"), nonce=10**6, app_params=PARAMS), 4.0)
    assert any(s.face == UPSTREAM for s in out), out


def test_global_byte_bound_keeps_a_local_reserve() -> None:
    fw = setup(pit_max_bytes=20 * MiB, pit_max_bytes_per_face=64 * MiB)
    for i in range(40):
        for peer in (PEER, PEER + 1):
            fw.on_packet(peer, Interest(Name(f"/silent/{peer}/{i}"), nonce=peer * 1000 + i, app_params=PARAMS), 0.0)
    assert fw.pit.bytes_used <= 18 * MiB  # 10 % of 20 MiB stays for local faces
    assert fw.counters.pit_bytes_full + fw.counters.pit_fair_share > 0
    out = fw.on_packet(LOCAL, Interest(Name("/silent/mine"), nonce=7, app_params=PARAMS), 0.0)
    assert any(s.face == UPSTREAM for s in out), out
    assert fw.pit.bytes_used <= 20 * MiB


def test_bytes_are_released_when_entries_go() -> None:
    fw = setup(pit_max_bytes=16 * MiB, pit_max_bytes_per_face=4 * MiB)
    for i in range(4):
        fw.on_packet(PEER, Interest(Name(f"/silent/{i}"), nonce=i + 1, app_params=PARAMS), 0.0)
    # the same face aggregating and retransmitting does not double-count
    fw.on_packet(PEER, Interest(Name("/silent/0"), nonce=99, app_params=PARAMS), 0.5)
    fw.on_packet(PEER + 1, Interest(Name("/silent/0"), nonce=98, app_params=PARAMS), 0.5)
    assert fw.pit.bytes_used == held_param_bytes(fw) == 5 * MiB
    fw.on_face_down(PEER + 1)
    assert fw.pit.bytes_used == held_param_bytes(fw) == 4 * MiB
    fw.on_timer(60.0)  # all expire
    assert len(fw.pit) == 0 and fw.pit.bytes_used == 0 and not fw.pit.face_bytes
