"""Collective reduction across real daemons: topologies/reduce5.toml, five
members under two aggregation levels (r -> a1, a2 -> w1..w5) with a
redundant a1 - a2 link."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trio

import icnd
from icnd.codec import encode
from icnd.errors import CommandError, Timeout
from icnd.reduction.group import contribution_data, reduce_interest, unwrap_pushed
from icnd.reduction.segment import SegmentMeta, pack, unpack
from icnd.security import DigestKey
from icnd.topology import launch

TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "reduce5.toml"
MEMBERS = ["w1", "w2", "w3", "w4", "w5"]


@pytest.fixture
async def net():
    async with launch(str(TOPOLOGY)) as network:
        yield network


async def clients(net) -> dict[str, icnd.Client]:
    return {m: await net.connect(m) for m in MEMBERS}


async def counters(net, node: str) -> dict[str, int]:
    return (await (await net.connect(node)).status())["counters"]


async def shortest_paths_at_root(net, timeout: float = 15.0) -> None:
    """Wait until r routes to every member along the shortest path (cost 2: r - a1|a2 - w).
    The topology is ready once every node reaches every other, which can be over the a1 - a2
    cross link for a moment while adjacencies come up: a split along it has one child, not two."""
    r = await net.connect("r")
    with trio.fail_after(timeout):
        while True:
            costs = {route["prefix"]: route["cost"] for route in await r.command("route", "list")}
            if all(costs.get(f"/node/{m}") == 2 for m in MEMBERS):
                return
            await trio.sleep(0.1)


async def test_sum_max_min_exact_and_combined_in_the_network(net) -> None:
    cs = await clients(net)
    await shortest_paths_at_root(net)
    rng = np.random.default_rng(5)
    ints = {m: rng.integers(-10**12, 10**12, 1000) for m in MEMBERS}
    floats = {m: rng.standard_normal(300_000).astype(np.float32) for m in MEMBERS}  # 1.2 MB: 3 segments
    for m, c in cs.items():
        await c.contribute("workers", 1, ints[m])
        await c.contribute("workers", 2, floats[m])
    stacked = np.stack([ints[m] for m in MEMBERS])
    for op, expected in (("sum", stacked.sum(0)), ("max", stacked.max(0)), ("min", stacked.min(0))):
        r = await cs["w2"].reduce("workers", 1, op)
        assert r.complete and r.contributors == MEMBERS and r.count == 5
        assert r.array.dtype == np.int64 and r.array.tobytes() == expected.tobytes()
    before = await counters(net, "r")
    r = await cs["w4"].reduce("workers", 2, "sum")
    after = await counters(net, "r")
    np.testing.assert_allclose(r.array, np.stack([floats[m] for m in MEMBERS]).sum(0), rtol=1e-5, atol=1e-4)
    assert r.array.dtype == np.float32 and r.contributors == MEMBERS and not r.nonfinite
    segments = len(r.segment_contributors)
    assert segments == 3
    # in-network combining: the root heard one answer per child (a1, a2) per segment, not one per member
    assert after["agg_child_data"] - before["agg_child_data"] == 2 * segments
    assert after["agg_roots"] - before["agg_roots"] == segments
    mean = await cs["w1"].reduce("workers", 1, "mean")
    np.testing.assert_allclose(mean.array, stacked.mean(0))


async def test_allreduce_gives_every_member_identical_bytes(net) -> None:
    cs = await clients(net)
    rng = np.random.default_rng(9)
    xs = {m: rng.standard_normal(200_000).astype(np.float32) for m in MEMBERS}
    results: dict[str, np.ndarray] = {}
    before = await counters(net, "r")

    async def member(m: str) -> None:
        results[m] = await cs[m].allreduce("workers", 3, xs[m], "sum", timeout=20)

    async with trio.open_nursery() as nursery:
        for m in MEMBERS:
            nursery.start_soon(member, m)
    assert len({results[m].tobytes() for m in MEMBERS}) == 1
    np.testing.assert_allclose(results["w1"], np.stack(list(xs.values())).sum(0), rtol=1e-5, atol=1e-4)
    after = await counters(net, "r")
    nseg = -(-200_000 * 4 // (512 * 1024))
    # one computation for all five requesters: each segment combined once at the root
    assert after["agg_roots"] - before["agg_roots"] == nseg


async def test_missing_member_timeout_partial_then_complete(net) -> None:
    cs = await clients(net)
    xs = {m: np.full(64, i + 1, np.int64) for i, m in enumerate(MEMBERS)}
    for m in MEMBERS[:4]:
        await cs[m].contribute("workers", 4, xs[m])
    with pytest.raises(icnd.Timeout, match="w5") as info:
        await cs["w1"].reduce("workers", 4, timeout=1.5)
    # the facts once, in one sentence, and as an attribute (issue #27)
    assert info.value.missing == ("w5",)
    assert str(info.value) == ("round 4 segment 0 of workers is incomplete: no contribution from w5 "
                               "(no answer by the deadline)")
    partial = await cs["w1"].reduce("workers", 4, timeout=1.5, partial=True)
    assert not partial.complete and partial.partial and partial.contributors == MEMBERS[:4]
    assert partial.array.tolist() == [10] * 64
    await cs["w5"].contribute("workers", 4, xs["w5"])
    full = await cs["w3"].reduce("workers", 4, timeout=5)
    assert full.complete and full.contributors == MEMBERS and full.array.tolist() == [15] * 64


async def test_waiting_reduce_completes_when_the_straggler_contributes(net) -> None:
    cs = await clients(net)
    for m in MEMBERS[1:]:
        await cs[m].contribute("workers", 5, np.ones(8, np.float32))
    async with trio.open_nursery() as nursery:
        result = {}

        async def waiter() -> None:
            result["r"] = await cs["w4"].reduce("workers", 5, timeout=8)

        nursery.start_soon(waiter)
        await trio.sleep(1.0)
        await cs["w1"].contribute("workers", 5, np.ones(8, np.float32))
    assert result["r"].complete and result["r"].array.tolist() == [5.0] * 8


async def test_mismatched_contributions_name_the_member(net) -> None:
    cs = await clients(net)
    for m in MEMBERS:
        dtype = np.float64 if m == "w3" else np.float32
        await cs[m].contribute("workers", 6, np.ones(16, dtype))
    with pytest.raises(icnd.RemoteError, match="member w3 contributed float64") as info:
        await cs["w1"].reduce("workers", 6)
    assert info.value.code == "mismatch"
    for m in MEMBERS:
        shape = (4, 5) if m == "w5" else (4, 4)
        await cs[m].contribute("workers", 7, np.ones(shape, np.int32))
    with pytest.raises(icnd.RemoteError, match=r"member w5 contributed int32 \(4, 5\)"):
        await cs["w2"].reduce("workers", 7)


async def test_bad_contributions_are_refused(net) -> None:
    c = (await clients(net))["w1"]
    x = np.arange(10, dtype=np.int64)
    with pytest.raises(ValueError, match="not a member"):
        await c.contribute("workers", 8, x, member="w9")
    with pytest.raises(ValueError, match="cannot be reduced"):
        await c.contribute("workers", 8, np.array(["a", "b"], dtype=object))
    with pytest.raises(ValueError, match="empty"):
        await c.contribute("workers", 8, np.zeros(0))
    with pytest.raises(CommandError, match="unknown group"):
        await c.contribute("nosuch", 8, x)
    await c.contribute("workers", 8, x)
    await c.contribute("workers", 8, x)  # the same again: idempotent
    with pytest.raises(CommandError, match="immutable"):
        await c.contribute("workers", 8, x + 1)
    with pytest.raises(CommandError, match="too far ahead"):
        await c.contribute("workers", 10**6, x)
    with pytest.raises(ValueError, match="unknown op"):
        await c.reduce("workers", 8, "avg")
    # the node checks too, whatever a client sends it
    from icnd.reduction.group import contrib_name
    from icnd.reduction.segment import SegmentMeta, pack

    def raw(member: str, content: bytes) -> bytes:
        return icnd.encode(icnd.Data(contrib_name("w1", member, "workers", 9, 0), content))

    good = pack(SegmentMeta("<i8", (10,), 1, 0), x)
    with pytest.raises(CommandError, match="w9 is not a member"):
        await c.command("reduce", "contribute", packets=[raw("w9", good)])
    with pytest.raises(CommandError, match="lives on node w2"):
        await c.command("reduce", "contribute", packets=[raw("w2", good)])
    huge = pack(SegmentMeta("<f4", (1 << 40,), 1, 0), x)  # claims a 4 TiB array
    with pytest.raises(CommandError, match="outside the group's limit"):
        await c.command("reduce", "contribute", packets=[raw("w1", huge)])
    with pytest.raises(CommandError, match="carries"):
        await c.command("reduce", "contribute", packets=[raw("w1", good[:-8])])
    status = await c.status()
    assert status["counters"]["contrib_refused"] == 6


async def test_one_client_contributes_for_members_on_other_nodes(net) -> None:
    """member= names a member living elsewhere: the segments travel to its node."""
    c = await net.connect("w1")
    rng = np.random.default_rng(3)
    xs = {m: rng.standard_normal(200_000).astype(np.float32) for m in MEMBERS}  # 2 segments each
    for m in MEMBERS:
        info = await c.contribute("workers", 13, xs[m], member=m)
        assert info["member"] == m and info["segments"] == 2 and info["added"] == 2
    for m in MEMBERS[1:]:  # stored by the member's own node
        assert (await (await net.connect(m)).status())["tables"]["contributions"] >= 1
    r = await (await net.connect("a2")).reduce("workers", 13)
    assert r.complete and r.contributors == MEMBERS
    np.testing.assert_allclose(r.array, np.stack([xs[m] for m in MEMBERS]).sum(0), rtol=1e-5, atol=1e-4)
    with pytest.raises(CommandError, match="immutable"):
        await c.contribute("workers", 13, xs["w4"] + 1, member="w4")


async def test_groups_made_by_clients_are_versioned(net) -> None:
    c1 = await net.connect("w1")
    info = await c1.create_group("pair", ["w1", "w4", "extra@w5"], rendezvous=["a2"])
    assert info["version"] == 1 and info["members"] == ["w1", "w4", "extra@w5"]
    again = await c1.create_group("pair", ["w1", "w4", "extra@w5"], rendezvous=["a2"])
    assert again["version"] == 1  # the same contents: the same version
    cs = {"w1": c1, "w4": await net.connect("w4"), "w5": await net.connect("w5")}
    await cs["w1"].contribute("pair", 1, np.ones(4))
    await cs["w4"].contribute("pair", 1, np.ones(4))
    await cs["w5"].contribute("pair", 1, np.ones(4), member="extra")
    r = await cs["w4"].reduce("pair", 1)
    assert r.contributors == ["extra", "w1", "w4"] and r.array.tolist() == [3.0] * 4
    v2 = await c1.create_group("pair", ["w1", "w4"], rendezvous=["a2"])
    assert v2["version"] == 2
    assert (await cs["w4"].group("pair"))["version"] == 2  # announced to the members' nodes
    await cs["w1"].contribute("pair", 2, np.ones(4))
    await cs["w4"].contribute("pair", 2, np.ones(4))
    r2 = await cs["w1"].reduce("pair", 2)
    assert r2.contributors == ["w1", "w4"] and r2.array.tolist() == [2.0] * 4
    old = await cs["w1"].reduce("pair", 1, version=1)  # round 1 keeps its meaning
    assert old.contributors == ["extra", "w1", "w4"] and old.array.tolist() == [3.0] * 4
    with pytest.raises(CommandError, match="unknown group"):
        await (await net.connect("r")).reduce("pair", 1)


async def test_allreduce_takes_partial(net) -> None:
    cs = await clients(net)
    for m in MEMBERS[:3]:  # w4 never contributes
        await cs[m].contribute("workers", 14, np.ones(8, np.int32))
    got = await cs["w5"].allreduce("workers", 14, np.ones(8, np.int32), timeout=1.5, partial=True)
    assert not got.complete and got.contributors == ["w1", "w2", "w3", "w5"] and got.array.tolist() == [4] * 8


async def _no_route(client: icnd.Client, prefix: str) -> None:
    """Until `client`'s node has no route for `prefix` (routing withdrew it)."""
    with trio.fail_after(15):
        while any(r["prefix"] == prefix for r in await client.command("route", "list")):
            await trio.sleep(0.2)


async def test_a_dead_rendezvous_fails_over_and_the_partial_comes_back(net) -> None:
    """Issue #27: the default rendezvous spreads a group's segments over its
    members' nodes; with w5 dead (killed, its routes withdrawn by link-state
    routing) the segments rooted at w5 fail over to the next node of
    `rendezvous_order` (w1, for every consumer), and ``partial=True``
    returns the others' sum."""
    cs = await clients(net)
    info = await cs["w1"].create_group("spread", MEMBERS, segment_bytes=1024)
    assert info["rendezvous"] == MEMBERS
    x = np.arange(1280, dtype=np.int64)  # 10 segments: 4 and 9 start at w5
    for i, m in enumerate(MEMBERS[:4]):
        await cs[m].contribute("spread", 1, x * (i + 1))
    await net.kill("w5")
    for m in ("w1", "w2", "w3", "w4"):
        await _no_route(cs[m], "/node/w5")
    for consumer in ("w3", "w4"):
        before = {m: (await counters(net, m))["agg_roots"] for m in MEMBERS[:4]}
        r = await cs[consumer].reduce("spread", 1, timeout=4, partial=True)
        assert not r.complete and r.contributors == MEMBERS[:4]
        assert r.array.tolist() == (x * 10).tolist()
        roots = {m: (await counters(net, m))["agg_roots"] - before[m] for m in MEMBERS[:4]}
        assert roots == {"w1": 4, "w2": 2, "w3": 2, "w4": 2}  # w1: its own 0 and 5, and w5's 4 and 9


async def test_rounds_handed_over_from_elsewhere_never_move_a_members_window(net) -> None:
    """Issue #27: a client on another node contributes 20 far-ahead rounds as
    member w1 (no trust schema: allowed); w1's own contributions for rounds
    0..39 must all be stored, not refused "no longer kept here"."""
    cs = await clients(net)
    for rnd in range(1000, 1020):
        await cs["w2"].contribute("workers", rnd, np.ones(4, np.int64), member="w1")
    for rnd in range(40):
        info = await cs["w1"].contribute("workers", rnd, np.full(4, rnd, np.int64))
        assert info["added"] == 1, rnd
    with pytest.raises(CommandError, match="no longer kept"):  # what w1 itself moved past stays gone
        await cs["w2"].contribute("workers", 3, np.ones(4, np.int64), member="w1")


def test_sync_facade_reduces(tmp_path) -> None:
    async def main() -> None:
        async with launch(str(TOPOLOGY)) as network:
            cs = await clients(network)
            for i, m in enumerate(MEMBERS):
                await cs[m].contribute("workers", 1, np.full(3, i, np.int32))
            sock = network.nodes["r"].socket

            def blocking() -> list:
                with icnd.sync.connect(sock) as c:
                    return c.reduce("workers", 1, "max").array.tolist()

            assert await trio.to_thread.run_sync(blocking) == [4, 4, 4]

    trio.run(main)


async def test_cli_contribute_reduce_and_group(net, tmp_path) -> None:
    import json
    import subprocess
    import sys

    def icnd_cli(node: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "icnd", *args, "--socket", net.nodes[node].socket],
                              capture_output=True, timeout=30)

    async def run(node: str, *args: str) -> subprocess.CompletedProcess:
        return await trio.to_thread.run_sync(lambda: icnd_cli(node, *args))

    for i, m in enumerate(MEMBERS):
        path = tmp_path / f"{m}.npy"
        np.save(path, np.arange(6, dtype=np.float32) * (i + 1))
        r = await run(m, "contribute", "workers", "11", str(path), "--json")
        assert r.returncode == 0, r.stderr.decode()
        assert json.loads(r.stdout)["segments"] == 1
    out = tmp_path / "sum.npy"
    r = await run("a1", "reduce", "workers", "11", "--op", "sum", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr.decode()
    summary = json.loads(r.stdout)
    assert summary["complete"] and summary["contributors"] == MEMBERS and summary["count"] == 5
    assert np.load(out).tolist() == (np.arange(6) * 15).astype(np.float32).tolist()
    r = await run("a1", "reduce", "workers", "11", "--op", "max")
    assert r.returncode == 0 and b"complete, 5 contributor(s)" in r.stdout
    r = await run("w1", "reduce", "workers", "12", "--timeout", "1")
    assert r.returncode == 1 and b"Traceback" not in r.stderr and b"icnd: error:" in r.stderr
    r = await run("w2", "group", "show", "workers", "--json")
    assert json.loads(r.stdout)["members"] == MEMBERS
    r = await run("w2", "group", "create", "duo", "w2", "w3", "--json")
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["version"] == 1
    r = await run("w3", "group", "list", "--json")
    assert sorted(g["group"] for g in json.loads(r.stdout)) == ["duo", "workers"]


async def test_allreduce_caches_the_descriptor_and_picks_up_a_new_version(net) -> None:
    c1, c4 = await net.connect("w1"), await net.connect("w4")
    await c1.create_group("cached", ["w1", "w4"], rendezvous=["a2"])
    for rnd in (1, 2):  # the second call reads no descriptor: the contribution's answer says v1 is the newest
        got = await trio_gather(c1.allreduce("cached", rnd, np.ones(4), partial=True),
                                c4.allreduce("cached", rnd, np.ones(4), partial=True))
        assert [r.version for r in got] == [1, 1] and got[0].array.tolist() == [2.0] * 4
    await c1.create_group("cached", ["w1", "w4", "extra@w5"], rendezvous=["a2"])  # v2: a third member
    c5 = await net.connect("w5")
    got = await trio_gather(c1.allreduce("cached", 3, np.ones(4), partial=True),
                            c4.allreduce("cached", 3, np.ones(4), partial=True),
                            c5.allreduce("cached", 3, np.ones(4), member="extra", partial=True))
    assert [r.version for r in got] == [2, 2, 2]  # the cached v1 was seen to be old, and v2 read
    assert got[0].contributors == ["extra", "w1", "w4"] and got[0].array.tolist() == [3.0] * 4


async def trio_gather(*calls):  # type: ignore[no-untyped-def]
    out: list = [None] * len(calls)

    async def one(i: int, call) -> None:  # type: ignore[no-untyped-def]
        out[i] = await call

    async with trio.open_nursery() as nursery:
        for i, call in enumerate(calls):
            nursery.start_soon(one, i, call)
    return out


# --- pushed contributions (issue #30): a small allreduce is one request per rank; a request
# sent again, or a contribution given both ways, is counted once

async def test_a_small_allreduce_is_one_request_per_rank(net) -> None:
    cs = {m: await net.connect(m) for m in MEMBERS}
    await shortest_paths_at_root(net)
    before = {m: await counters(net, m) for m in [*MEMBERS, "a1", "a2", "r"]}
    xs = {m: np.arange(64, dtype=np.float64) * (i + 1) for i, m in enumerate(MEMBERS)}
    got: dict[str, np.ndarray] = {}

    async def rank(m: str) -> None:
        got[m] = await cs[m].allreduce("workers", 1, xs[m])

    async with trio.open_nursery() as nursery:
        for m in MEMBERS:
            nursery.start_soon(rank, m)
    expected = sum(xs.values())
    for m in MEMBERS:
        np.testing.assert_array_equal(got[m], expected)
        after = await counters(net, m)
        # the contribution came with the request (no reduce/contribute command), stored once
        assert after["agg_pushed"] - before[m]["agg_pushed"] == 1
        assert after["contrib_segments"] - before[m]["contrib_segments"] == 1
    # pushed on up: a1 summed w1..w3, a2 w4 and w5, r the two sums; nobody pulled a contribution
    delta = {n: {k: v - before[n][k] for k, v in (await counters(net, n)).items() if k in before[n]}
             for n in ["a1", "a2", "r"]}
    assert [delta[n]["agg_pushed_up"] for n in ["a1", "a2", "r"]] == [3, 2, 2]
    assert sum(delta[n]["agg_children"] for n in ["a1", "a2", "r"]) == 0
    for m in MEMBERS:
        assert (await counters(net, m))["contrib_served"] == before[m]["contrib_served"]
    # an array shared memory carries better (64 KiB and more) is handed over as before, not pushed
    big = {m: np.ones(20_000) for m in MEMBERS}  # 160 kB

    async def big_rank(m: str) -> None:
        got[m] = await cs[m].allreduce("workers", 2, big[m])

    async with trio.open_nursery() as nursery:
        for m in MEMBERS:
            nursery.start_soon(big_rank, m)
    assert got["w3"].tolist() == [5.0] * 20_000
    assert (await counters(net, "w3"))["agg_pushed"] - before["w3"]["agg_pushed"] == 1


def pushed_request(desc_wire: bytes, value: float, rnd: int, lifetime_ms: int):  # type: ignore[no-untyped-def]
    content = pack(SegmentMeta("<f8", (8,), 1, 0), np.full(8, value))
    push = encode(DigestKey().sign(contribution_data("w1", "w1", "pair", rnd, 0, content)))
    return (reduce_interest(desc_wire, "pair", "sum", rnd, 0, lifetime_ms=lifetime_ms, push=push),
            reduce_interest(desc_wire, "pair", "sum", rnd, 0, lifetime_ms=lifetime_ms))


async def test_a_retransmitted_pushed_request_adds_its_contribution_once(net) -> None:
    """w1's pushed request goes unanswered (w2 has not contributed) and is
    sent again with a new nonce, as a consumer re-sends: w1's node holds the
    contribution once, and the aggregate counts w1 once."""
    c1, c2 = await net.connect("w1"), await net.connect("w2")
    await c1.create_group("pair", ["w1", "w2"], rendezvous=["r"])
    wire = (await c1.command("group", "show", name="pair"))["descriptor"]
    before = await counters(net, "w1")
    first, plain = pushed_request(wire, 1.0, 1, 8000)
    with pytest.raises(Timeout):
        await c1.express(first, timeout=0.5, retx=None)
    again = type(first)(first.name, lifetime_ms=8000, app_params=first.app_params)  # the same request, new nonce
    async with trio.open_nursery() as nursery:
        answers = []

        async def ask() -> None:
            answers.append(await c1.express(again, timeout=8, retx=None))

        nursery.start_soon(ask)
        await trio.sleep(0.3)
        await c2.contribute("pair", 1, np.full(8, 10.0))
    inner = unwrap_pushed(answers[0], plain.name)
    await c1.verify(inner)  # the rendezvous's signature, carried through the wrapping
    meta, view = unpack(inner.content, seg_bytes=4 * 1024 * 1024, max_bytes=1 << 30, n_members=2)
    assert meta.members == (0, 1) and view.tolist() == [11.0] * 8
    after = await counters(net, "w1")
    assert after["agg_pushed"] - before["agg_pushed"] == 1
    assert after["agg_push_duplicates"] - before["agg_push_duplicates"] == 1
    assert after["contrib_segments"] - before["contrib_segments"] == 1


async def test_a_contribution_given_both_ways_counts_once_and_a_different_one_is_refused(net) -> None:
    c1, c2 = await net.connect("w1"), await net.connect("w2")
    await c1.create_group("both", ["w1", "w2"], rendezvous=["r"])
    x = np.arange(8, dtype=np.float64)
    await c1.contribute("both", 1, x)  # by command first, then pushed again with the allreduce
    await c2.contribute("both", 1, x * 10)
    got = await c1.allreduce("both", 1, x, partial=True)
    assert got.contributors == ["w1", "w2"] and got.array.tolist() == (x * 11).tolist()
    assert (await counters(net, "w1"))["agg_push_duplicates"] >= 1
    with pytest.raises(CommandError) as refused:  # contributions are immutable: not added, not counted
        await c1.allreduce("both", 1, x + 1)
    assert refused.value.status == 409
    again = await c2.reduce("both", 1)
    assert again.array.tolist() == (x * 11).tolist()


async def test_members_sharing_a_node_that_is_also_the_rendezvous(net) -> None:
    """Both members on w1, which is the rendezvous: the aggregate is made on
    the node their pushed requests arrived at, and each gets it."""
    c = await net.connect("w1")
    other = await net.connect("w1")
    await c.create_group("home", ["w1", "x@w1"], rendezvous=["w1"])
    got: dict[str, np.ndarray] = {}

    async def rank(client, member: str, value: float) -> None:  # type: ignore[no-untyped-def]
        got[member] = await client.allreduce("home", 1, np.full(16, value), member=member)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(rank, c, "w1", 1.0)
        nursery.start_soon(rank, other, "x", 2.0)
    assert got["w1"].tolist() == got["x"].tolist() == [3.0] * 16
    assert (await counters(net, "w1"))["agg_pushed"] >= 2
