"""D3: a flood of unique Interests from the network toward a silent upstream
fills the PIT; a local client's Interests must still be forwarded (a reserve
of PIT entries for local faces), and each non-local face keeps to a fair
share so a newcomer face still gets in.  Sans-IO, explicit time, scaled down
(a 1,000-entry PIT instead of 100k; 1,200 Interests instead of 120k)."""

from __future__ import annotations

from icnd import Interest, Nack, NackReason, Name
from icnd.core.fw.forwarder import Forwarder

LOCAL = 1
UPSTREAM = 2
ATTACKERS = (11, 12, 13)
NEWCOMER = 14
PIT_MAX = 1000


def flooded() -> Forwarder:
    fw = Forwarder(pit_max_entries=PIT_MAX)
    fw.add_face(LOCAL, local=True)
    fw.add_face(UPSTREAM)
    for f in (*ATTACKERS, NEWCOMER):
        fw.add_face(f)
    fw.add_route(Name("/silent"), UPSTREAM)
    nonce = 0
    for i in range(PIT_MAX * 12 // 10):  # the upstream never answers
        nonce += 1
        fw.on_packet(ATTACKERS[i % 3], Interest(Name(f"/silent/flood/{i}"), nonce=nonce, lifetime_ms=4000), 0.0)
    return fw


def forwarded(out) -> bool:
    return any(s.face == UPSTREAM and isinstance(s.packet, Interest) for s in out)


def test_local_client_is_not_nacked_when_the_network_fills_the_pit() -> None:
    fw = flooded()
    assert len(fw.pit) < PIT_MAX  # the flood stopped short of the local reserve
    refused = fw.counters.pit_full + fw.counters.pit_local_reserve + fw.counters.pit_fair_share
    assert refused > 0
    for k in range(50):  # a local client's Interests: all forwarded, none Nacked
        out = fw.on_packet(LOCAL, Interest(Name(f"/silent/mine/{k}"), nonce=10_000_000 + k), 0.1)
        assert forwarded(out), out
        assert not any(isinstance(s.packet, Nack) for s in out)
    # renewing the flood later (entries still alive) does not take the reserve either
    for i in range(300):
        fw.on_packet(ATTACKERS[i % 3], Interest(Name(f"/silent/again/{i}"), nonce=20_000_000 + i), 1.0)
    out = fw.on_packet(LOCAL, Interest(Name("/silent/mine/late"), nonce=30_000_000), 1.0)
    assert forwarded(out), out


def test_non_local_faces_keep_to_a_fair_share() -> None:
    fw = flooded()
    # no attacker face holds more than the rest together leave room for
    held = [fw.pit.face_records(f) for f in ATTACKERS]
    assert max(held) < PIT_MAX // 3
    # a newcomer non-local face still gets its Interests in
    out = fw.on_packet(NEWCOMER, Interest(Name("/silent/newcomer/1"), nonce=40_000_000), 0.2)
    assert forwarded(out), out
    assert fw.counters.pit_fair_share > 0


def test_refusals_are_nacked_congestion_and_counted() -> None:
    fw = Forwarder(pit_max_entries=100)
    fw.add_face(LOCAL, local=True)
    fw.add_face(UPSTREAM)
    fw.add_face(11)
    fw.add_route(Name("/silent"), UPSTREAM)
    nacks = []
    for i in range(200):
        out = fw.on_packet(11, Interest(Name(f"/silent/{i}"), nonce=i + 1), 0.0)
        nacks += [s.packet for s in out if isinstance(s.packet, Nack)]
    assert nacks and all(n.reason is NackReason.CONGESTION for n in nacks)
    c = fw.counters
    assert c.pit_full + c.pit_local_reserve + c.pit_fair_share == len(nacks)
    assert "pit_local_reserve" in c.as_dict() and "pit_fair_share" in c.as_dict()
    # every entry expires: nothing is held after the lifetime
    fw.on_timer(10.0)
    assert len(fw.pit) == 0 and not fw.pit.per_face and fw.pit.bytes_used == 0


def test_refusals_are_logged_once_per_interval(caplog) -> None:
    fw = Forwarder(pit_max_entries=10)
    fw.add_face(UPSTREAM)
    fw.add_face(11)
    fw.add_route(Name("/silent"), UPSTREAM)
    with caplog.at_level("WARNING", logger="icnd.core.fw.forwarder"):
        for i in range(100):  # 1 s of refusals: one line
            fw.on_packet(11, Interest(Name(f"/silent/{i}"), nonce=i + 1, lifetime_ms=60_000), i * 0.01)
        assert fw.counters.pit_full + fw.counters.pit_local_reserve > 50
        assert len(caplog.records) == 1
        fw.on_packet(11, Interest(Name("/silent/later"), nonce=999), 20.0)  # after the interval: one more
        assert len(caplog.records) == 2 and "since the last report" in caplog.records[1].getMessage()
