"""Pushed contributions across real daemons (issue #30): a member's small
contribution rides with its request for the aggregate, so an allreduce is
one request per rank; a request sent again, or a contribution given both
ways, is counted once.  topologies/reduce5.toml (r -> a1, a2 -> w1..w5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trio

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


async def counters(net, node: str) -> dict[str, int]:
    return (await (await net.connect(node)).status())["counters"]


async def test_a_small_allreduce_is_one_request_per_rank(net) -> None:
    cs = {m: await net.connect(m) for m in MEMBERS}
    before = {m: await counters(net, m) for m in MEMBERS}
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
