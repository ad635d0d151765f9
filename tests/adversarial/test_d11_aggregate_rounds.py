"""D11: one remote face must not take every concurrent round of a group.

The attack (simulator, explicit time): a remote face asks the rendezvous for
16 future rounds of group g (requests no member will answer for a long
time); each one held a round of the group's ``max_rounds`` (16), so a local
``reduce g 2`` was Nacked *congestion* "too many concurrent rounds" until
they expired.  Now a non-local face may start at most its share of a
group's rounds, and a reserve of rounds is kept for local requesters; each
refusal is a counted *congestion* Nack.

Issue #26 tried it again on real daemons: the rendezvous relays the
attacker's 8 admitted rounds to the members, where every round arrives
through the one face toward the rendezvous, and they used up that face's
share there: every member's ``reduce g 2`` failed for the 60 s the
attacker's requests lived.  Below the rendezvous the share is now per
requester (the origin tag sub-requests carry), tested with members that are
not on the rendezvous node.
"""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import trio

from icnd.codec import encode
from icnd.name import Name
from icnd.packet import Data, Interest, Nack, NackReason
from icnd.reduction.aggregate import Aggregator
from icnd.reduction.group import REDUCE, GroupDescriptor, parse_contrib_name, reduce_interest
from icnd.reduction.segment import SegmentMeta, pack
from icnd.security import DigestKey
from icnd.sim.network import SimNetwork
from icnd.topology import launch
from icnd.reduction.consumer import group_descriptor

DIGEST = DigestKey()
REDUCE5 = Path(__file__).resolve().parents[2] / "topologies" / "reduce5.toml"


def _net() -> tuple[SimNetwork, bytes]:
    """r: the rendezvous, with member w1; w2: member w2; x: the attacker's node, linked to r."""
    desc = GroupDescriptor.create("g", ["w1@r", "w2@w2"], rendezvous=["r"])
    wire = encode(DIGEST.sign(desc.to_data()))
    net = SimNetwork(seed=3, hooks=lambda node: {REDUCE: Aggregator(node_name=node)})
    for n in ("r", "w2", "x"):
        net.add_node(n)
    rw = net.link("r", "w2", delay=0.001)
    rx = net.link("r", "x", delay=0.001)
    net.nodes["r"].fw.add_route(Name("/node/w2"), rw.face_a, 1)
    net.nodes["w2"].fw.add_route(Name("/node/r"), rw.face_b, 1)
    net.nodes["x"].fw.add_route(Name("/node/r"), rx.face_b, 1)

    def contribution(interest: Interest) -> Data | None:
        member, _group, rnd, seg = parse_contrib_name(interest.name.comps)
        if rnd >= 100:
            return None  # future rounds: nobody has contributed, the request waits
        meta = SegmentMeta(np.dtype(np.int64).str, (4,), 1, seg)
        return Data(interest.name, pack(meta, np.ones(4, np.int64)), freshness_ms=60_000)

    net.app("r").serve("/node/r/member", contribution)
    net.app("w2").serve("/node/w2/member", contribution)
    return net, wire


def test_remote_face_cannot_take_every_round_of_a_group() -> None:
    net, wire = _net()
    attacker = net.app("x")
    for rnd in range(100, 116):  # 16 future rounds, each waiting 60 s
        attacker.send(reduce_interest(wire, "g", "sum", rnd, 0, lifetime_ms=60_000))
    net.run(until=0.5)
    agg = net.nodes["r"].fw.hooks[REDUCE]
    assert isinstance(agg, Aggregator)
    refused = [p for p in attacker.received if isinstance(p, Nack)]
    assert refused and all(p.reason == NackReason.CONGESTION for p in refused)
    assert all("rounds" in p.detail for p in refused)
    assert agg.counters["agg_round_share"] + agg.counters["agg_round_reserve"] == len(refused)
    held = {e.request.round for e in agg.entries.values()}
    assert len(held) < agg.max_rounds

    local = net.app("r")  # a local `reduce g 2` while the attacker's rounds wait (another face)
    interest = reduce_interest(wire, "g", "sum", 2, 0, lifetime_ms=2000)
    local.send(interest)
    net.run(until=1.5)
    got = [p for p in local.received if isinstance(p, (Data, Nack)) and p.name == interest.name]
    assert len(got) == 1 and isinstance(got[0], Data), got


def test_local_reserve_is_kept_when_remote_faces_share_the_rest() -> None:
    net, wire = _net()
    agg = net.nodes["r"].fw.hooks[REDUCE]
    assert isinstance(agg, Aggregator)
    agg.face_max_rounds = agg.max_rounds  # even with no per-face share, the reserve holds
    attacker = net.app("x")
    for rnd in range(100, 116):
        attacker.send(reduce_interest(wire, "g", "sum", rnd, 0, lifetime_ms=60_000))
    net.run(until=0.5)
    assert agg.counters["agg_round_reserve"] > 0
    local = net.app("r")
    for rnd in (2, 3):
        interest = reduce_interest(wire, "g", "sum", rnd, 0, lifetime_ms=2000)
        local.send(interest)
    net.run(until=1.5)
    assert [type(p) for p in local.received if isinstance(p, (Data, Nack))] == [Data, Data]


async def test_attackers_rounds_relayed_by_the_rendezvous_leave_members_their_rounds() -> None:
    """reduce5 (link-state routing, real daemons): rendezvous r, members w1..w5
    two hops below it, none on r.  16 UDP datagrams to r ask for future
    rounds of ``workers``; r admits 8 (its share for that face) and splits them
    toward a1 and a2, then the members; ``reduce workers 2`` from members on
    both sides must still complete."""
    async with launch(str(REDUCE5)) as net:
        clients = {m: await net.connect(m) for m in ("w1", "w2", "w3", "w4", "w5")}
        _, wire = await group_descriptor(clients["w1"], "workers")
        target = urlsplit(net["r"].udp_uri)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as attacker:
            for rnd in range(100, 116):
                attacker.sendto(encode(reduce_interest(wire, "workers", "sum", rnd, 0, lifetime_ms=60_000)),
                                (target.hostname, target.port))
        with trio.fail_after(5):  # the relayed rounds reach the members' nodes (paced: 4 per next hop at first)
            while (await clients["w2"].status())["tables"]["agg_entries_live"] < 8:
                await trio.sleep(0.1)
        r = (await (await net.connect("r")).status())["counters"]
        assert r["agg_round_share"] == 8  # the rendezvous kept the attacker to its share
        for i, (m, c) in enumerate(clients.items()):
            await c.contribute("workers", 2, np.full(16, i + 1, np.int64))
        for m in ("w2", "w5"):
            got = await clients[m].reduce("workers", 2, timeout=3)
            assert got.complete and got.array.tolist() == [15] * 16
        for node in ("a1", "a2", "w2", "w5"):
            counters = (await (await net.connect(node)).status())["counters"]
            assert counters["agg_round_share"] == 0, node
