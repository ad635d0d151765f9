"""Partial sums pushed up to the rendezvous (issue #30), on the virtual clock.

A star: rendezvous ``r`` linked to member nodes ``w1..w3``.  Each member's
node stores what its application pushes (a stand-in for the node's
contribution store, serving ``/node/<w>/member/...`` to pulls as the store
does) and pushes it up; ``r`` makes the aggregate from what was pushed, or
asks the members that did not push, starting from what was.
"""

from __future__ import annotations

import numpy as np

from icnd.codec import encode
from icnd.packet import Data, Interest
from icnd.reduction.aggregate import PUSH_GRACE, Aggregator
from icnd.reduction.group import (REDUCE, GroupDescriptor, ReduceRequest, contribution_data, parse_contrib_name,
                                  pushed_up, reduce_interest, unwrap_pushed)
from icnd.reduction.segment import SegmentMeta, pack, unpack
from icnd.security import DigestKey

from tests.reduction._star import member_star

MEMBERS = ["w1", "w2", "w3"]
_digest = DigestKey()


class Star:
    def __init__(self) -> None:
        self.desc = GroupDescriptor.create("g", MEMBERS, rendezvous=["r"], seg_bytes=1024)
        self.wire = encode(_digest.sign(self.desc.to_data()))
        self.stores: dict[str, dict[tuple[str, int], bytes]] = {m: {} for m in MEMBERS}
        self.held: dict[str, list[Interest]] = {m: [] for m in MEMBERS}
        self.net, self.links, self.apps = member_star(MEMBERS, self._contribution, seed=5)
        for m in MEMBERS:
            self.aggregator(m).push = self._store(m)
        self.sent: dict[str, Interest] = {}

    def aggregator(self, node: str) -> Aggregator:
        agg = self.net.nodes[node].fw.hooks[REDUCE]
        assert isinstance(agg, Aggregator)
        return agg

    def _store(self, node: str):  # type: ignore[no-untyped-def]
        def take(data: Data, desc: GroupDescriptor, rnd: int, seg: int) -> bool:
            member = parse_contrib_name(data.name.comps)[0]  # type: ignore[index]
            self.contribute(node, member, rnd, bytes(data.content))
            return True
        return take

    def contribute(self, node: str, member: str, rnd: int, content: bytes) -> None:
        """`member`'s contribution in its node's store; held pulls answered."""
        self.stores[node][(member, rnd)] = content
        for interest in [i for i in self.held[node] if parse_contrib_name(i.name.comps)[0] == member]:
            self.held[node].remove(interest)
            self.apps[node].send(Data(interest.name, content, freshness_ms=60_000))

    def _contribution(self, interest: Interest) -> Data | None:
        parsed = parse_contrib_name(interest.name.comps)
        assert parsed is not None
        node = interest.name.comps[1][1:].decode()
        content = self.stores[node].get((parsed[0], parsed[2]))
        if content is None:
            self.held[node].append(interest)
            return None
        return Data(interest.name, content, freshness_ms=60_000)

    @staticmethod
    def content(value: float) -> bytes:
        return pack(SegmentMeta("<f8", (4,), 1, 0), np.full(4, value))

    def allreduce(self, member: str, value: float, at: float = 0.0) -> None:
        """`member`'s application pushes its contribution with its request at `at`."""
        data = _digest.sign(contribution_data(member, member, "g", 1, 0, self.content(value)))
        interest = reduce_interest(self.wire, "g", "sum", 1, 0, lifetime_ms=4000, push=encode(data))
        self.sent[member] = interest
        self.net.at(at, lambda: self.apps[member].send(interest))

    def result(self, member: str) -> list[float]:
        plain = reduce_interest(self.wire, "g", "sum", 1, 0).name
        got = [p for p in self.apps[member].received if p.name == self.sent[member].name]
        assert len(got) == 1 and isinstance(got[0], Data), got
        inner = unwrap_pushed(got[0], plain)
        meta, view = unpack(inner.content, seg_bytes=1024, max_bytes=self.desc.max_bytes, n_members=3)
        assert meta.members == (0, 1, 2) and not meta.partial
        return view.tolist()

    def counter(self, node: str, name: str) -> int:
        return self.aggregator(node).counters[name]


def test_every_member_pushes_and_the_rendezvous_pulls_nothing() -> None:
    star = Star()
    for i, m in enumerate(MEMBERS):
        star.allreduce(m, float(i + 1), at=0.0005 * i)
    star.net.run(until=1.0)
    for m in MEMBERS:
        assert star.result(m) == [6.0] * 4
    assert star.counter("r", "agg_pushed_up") == 3 and star.counter("r", "agg_results") == 1
    assert star.counter("r", "agg_children") == 0  # no contribution was pulled
    assert not any(star.aggregator(n).pending() for n in ["r", *MEMBERS])


def test_a_member_that_did_not_push_is_pulled_and_only_it() -> None:
    """w3 contributed earlier (by command, say) and asks nothing: the rendezvous
    waits twice `PUSH_GRACE`, then asks w3 alone, starting from w1 + w2."""
    star = Star()
    star.contribute("w3", "w3", 1, star.content(3.0))
    star.allreduce("w1", 1.0)
    star.allreduce("w2", 2.0)
    star.net.run(until=1.0)
    assert star.result("w1") == star.result("w2") == [6.0] * 4
    assert star.counter("r", "agg_children") == 1 and star.counter("r", "agg_pushed_up") == 2


def test_a_member_already_counted_is_not_added_again() -> None:
    """w1's node's partial sum arrives at r a second time, with other bytes (a
    copy of the same request is kept back by the forwarder's retransmission
    suppression; a different one gets as far as the aggregator): r counts w1
    once, with the bytes that came first, and answers the second at once
    (one sum per neighbour and aggregate)."""
    star = Star()
    star.allreduce("w1", 1.0)

    def again() -> None:
        req = ReduceRequest.parse(star.sent["w1"])
        up = pushed_up(req, star.sent["w1"].name, star.content_with((0,), 5.0), 4000)
        star.net.nodes["w1"].send_on_link(star.links["w1"].face_b, encode(up))

    star.net.at(0.005, again)
    star.allreduce("w2", 2.0, at=0.01)
    star.allreduce("w3", 3.0, at=0.01)
    star.net.run(until=1.0)
    assert star.result("w3") == star.result("w1") == [6.0] * 4
    assert star.counter("r", "agg_congestion") == 1 and star.counter("r", "agg_pushed_up") == 3


def test_a_partial_sum_for_members_behind_another_face_is_refused() -> None:
    """w2's node claims w1's contribution (a forgery, or a confused node): r
    refuses it, and w1's own push is what is counted."""
    star = Star()
    forged = pushed_up(ReduceRequest.parse(reduce_interest(star.wire, "g", "sum", 1, 0)),
                       reduce_interest(star.wire, "g", "sum", 1, 0).name, star.content_with((0,), 100.0), 4000)
    star.net.at(0.0, lambda: star.net.nodes["w2"].send_on_link(star.links["w2"].face_b, encode(forged)))
    for i, m in enumerate(MEMBERS):
        star.allreduce(m, float(i + 1), at=0.002)
    star.net.run(until=1.0)
    assert star.result("w1") == [6.0] * 4
    assert star.counter("r", "agg_rejected") == 1


def test_a_neighbours_sums_for_new_rounds_count_against_its_share() -> None:
    """Sums pushed up by a neighbour start rounds at r as its requests would:
    past its share of the group's rounds the next is refused (congestion),
    not taken as this node's own."""
    star = Star()
    star.aggregator("r").face_max_rounds = 1
    star.allreduce("w1", 1.0)  # round 1: w1's sum waits at r for w2 and w3

    def round_two() -> None:
        req = ReduceRequest.parse(reduce_interest(star.wire, "g", "sum", 2, 0))
        up = pushed_up(req, reduce_interest(star.wire, "g", "sum", 2, 0).name, star.content_with((0,), 1.0), 4000)
        star.net.nodes["w1"].send_on_link(star.links["w1"].face_b, encode(up))

    star.net.at(0.005, round_two)
    star.net.run(until=0.01)
    assert star.counter("r", "agg_round_share") == 1 and star.counter("r", "agg_congestion") == 1
    assert len(star.aggregator("r")._up) == 1


def _content_with(self: Star, members: tuple[int, ...], value: float) -> bytes:
    return pack(SegmentMeta("<f8", (4,), 1, 0, members), np.full(4, value))


Star.content_with = _content_with  # type: ignore[attr-defined]
assert PUSH_GRACE < 0.5  # (the rounds above end well within their lifetimes)


def test_a_plain_request_meeting_pushed_sums_at_the_rendezvous_makes_one_aggregate() -> None:
    """w1 and w2 push; w3 contributed by command and asks with the plain
    request: r's pull starts from the pushed sum and asks only w3, and every
    requester gets the same bytes (one aggregate under one name)."""
    star = Star()
    star.contribute("w3", "w3", 1, star.content(3.0))
    star.allreduce("w1", 1.0)
    star.allreduce("w2", 2.0)
    plain = reduce_interest(star.wire, "g", "sum", 1, 0, lifetime_ms=4000)
    star.net.at(0.0015, lambda: star.apps["w3"].send(plain))
    star.net.run(until=1.0)
    got = [p for p in star.apps["w3"].received if p.name == plain.name]
    assert len(got) == 1 and isinstance(got[0], Data)
    assert star.result("w1") == star.result("w2") == [6.0] * 4
    assert unwrap_pushed([p for p in star.apps["w1"].received if p.name == star.sent["w1"].name][0],
                         plain.name).content == got[0].content
    assert star.counter("r", "agg_results") == 1 and star.counter("r", "agg_children") == 1
