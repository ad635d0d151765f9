"""Pushed requests (issue #30) at one forwarder, on explicit time.

A member's node ``w1`` with a local application (face 2), a link toward the
rendezvous ``r`` (face 3) and a non-local face (face 1).  The application
asks for the aggregate with its contribution in the request; the node
stores it (the aggregator's `push`, here a recorder standing in for the
node's contribution store, which holds one copy per member and segment),
pushes it up toward the rendezvous with the request for the aggregate (the
partial sum of the members below it: those living here), and answers the
pushed request with the aggregate wrapped whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icnd.codec import encode
from icnd.core.fw.forwarder import Forwarder
from icnd.name import Name
from icnd.packet import ContentType, Data, Interest, Nack, NackReason
from icnd.reduction.aggregate import PUSH_GRACE, Aggregator
from icnd.reduction.contrib import ReductionError
from icnd.reduction.group import (REDUCE, GroupDescriptor, ReduceRequest, contribution_data, reduce_interest,
                                  unwrap_pushed, wrap_pushed)
from icnd.reduction.segment import SegmentMeta, pack, unpack
from icnd.security import DigestKey

REMOTE, APP, UPSTREAM = 1, 2, 3
_digest = DigestKey()


class Node:
    def __init__(self) -> None:
        self.desc = GroupDescriptor.create("g", ["w1", "w2"], rendezvous=["r"], seg_bytes=1024)
        self.wire = encode(_digest.sign(self.desc.to_data()))
        self.agg = Aggregator(node_name="w1")
        self.fw = Forwarder(hooks={REDUCE: self.agg})
        self.fw.add_face(REMOTE)
        self.fw.add_face(APP, local=True)
        self.fw.add_face(UPSTREAM)
        self.fw.add_route(Name("/node/r"), UPSTREAM, 1)
        self.stored: dict[Name, bytes] = {}  # what the node's store holds: one copy per name
        self.calls = 0
        self.agg.push = self.take

    def take(self, data: Data, desc: GroupDescriptor, rnd: int, seg: int) -> bool:
        """As `ReductionService.take_pushed` does, with the store's rule: the same
        contribution again is no change, a different one is refused."""
        self.calls += 1
        old = self.stored.get(data.name)
        if old is not None:
            if old != bytes(data.content):
                raise ReductionError(409, "contributions are immutable")
            return False
        self.stored[data.name] = bytes(data.content)
        return True

    def pushed(self, value: float, rnd: int = 1) -> tuple[Interest, Interest]:
        """(the pushed request for w1's contribution `value`, the plain request it stands for)."""
        content = pack(SegmentMeta("<f8", (4,), 1, 0), np.full(4, value))
        push = encode(_digest.sign(contribution_data("w1", "w1", "g", rnd, 0, content)))
        return (reduce_interest(self.wire, "g", "sum", rnd, 0, lifetime_ms=4000, push=push),
                reduce_interest(self.wire, "g", "sum", rnd, 0, lifetime_ms=4000))

    def send(self, face: int, packet: Interest | Data | Nack, now: float) -> list[Any]:
        return self.fw.on_packet(face, packet, now)


def up_of(out: list[Any]) -> list[Interest]:
    """The requests pushed up toward the rendezvous in `out`."""
    return [s.packet for s in out if s.face == UPSTREAM]


def partial_in(up: Interest) -> tuple[tuple[int, ...], list[float]]:
    req = ReduceRequest.parse(up)
    assert req.up is not None and req.subset is None
    meta, view = unpack(req.up, seg_bytes=1024, max_bytes=1 << 30, n_members=2)
    return meta.members, view.tolist()


def test_the_contribution_is_stored_and_pushed_up_with_the_request() -> None:
    """w1's node answers for w1 alone: it pushes w1's contribution up at once,
    as the partial sum of the members below it, and the aggregate comes back
    wrapped to the application, signature and all."""
    node = Node()
    pushed, plain = node.pushed(1.0)
    ups = up_of(node.send(APP, pushed, 0.0))
    assert len(ups) == 1 and ups[0].name.prefix(5) == plain.name.prefix(5) and ups[0].name != plain.name
    assert partial_in(ups[0]) == ((0,), [1.0] * 4)
    assert node.calls == 1 and node.agg.counters["agg_pushed"] == 1
    aggregate = _digest.sign(Data(plain.name, b"the aggregate", ContentType.AGGREGATE))
    out = node.send(UPSTREAM, wrap_pushed(ups[0].name, aggregate), 0.01)
    down = [s.packet for s in out if s.face == APP]
    assert len(down) == 1 and down[0].name == pushed.name
    assert unwrap_pushed(down[0], plain.name) == aggregate
    assert node.fw.cs.lookup(plain, 0.02) is not None  # kept for later requesters here
    assert not node.agg.pending()


def test_a_retransmitted_pushed_request_is_stored_once_and_pushes_up_again() -> None:
    """The same pushed request with a new nonce: the contribution is no change
    (counted as a duplicate, never added twice), the push up is sent again."""
    node = Node()
    pushed, plain = node.pushed(1.0)
    first = up_of(node.send(APP, pushed, 0.0))[0]
    again = Interest(pushed.name, lifetime_ms=4000, app_params=pushed.app_params)
    ups = up_of(node.send(APP, again, 0.6))
    assert len(ups) == 1 and ups[0].name == first.name and ups[0].nonce != first.nonce
    assert node.calls == 2 and len(node.stored) == 1
    assert node.agg.counters["agg_pushed"] == 1 and node.agg.counters["agg_push_duplicates"] == 1
    out = node.send(UPSTREAM, wrap_pushed(first.name, _digest.sign(Data(plain.name, b"sum", ContentType.AGGREGATE))),
                    0.7)
    down = [s.packet for s in out if s.face == APP]
    assert len(down) == 1 and unwrap_pushed(down[0], plain.name).content == b"sum"  # one answer, one PIT entry


def test_a_different_contribution_for_the_same_round_is_refused_with_the_stores_error() -> None:
    node = Node()
    first, _ = node.pushed(1.0)
    node.send(APP, first, 0.0)
    other, _ = node.pushed(2.0)
    out = node.send(APP, other, 0.1)
    answer = [s.packet for s in out if s.face == APP]
    assert len(answer) == 1 and answer[0].name == other.name and answer[0].content_type == ContentType.ERROR
    assert node.agg.counters["agg_push_refused"] == 1 and len(node.stored) == 1


def test_two_local_members_are_pushed_up_as_one_partial_sum() -> None:
    node = Node()
    desc = GroupDescriptor.create("g", ["w1", "x@w1"], rendezvous=["r"], seg_bytes=1024)
    wire = encode(_digest.sign(desc.to_data()))
    names = []
    ups: list[Interest] = []
    for i, member in enumerate(["w1", "x"]):
        content = pack(SegmentMeta("<f8", (4,), 1, 0), np.full(4, float(i + 1)))
        push = encode(_digest.sign(contribution_data("w1", member, "g", 1, 0, content)))
        interest = reduce_interest(wire, "g", "sum", 1, 0, lifetime_ms=4000, push=push)
        names.append(interest.name)
        ups += up_of(node.send(APP, interest, 0.001 * i))
    assert len(ups) == 1 and len(node.stored) == 2  # the first waited for the second
    assert partial_in(ups[0]) == ((0, 1), [3.0] * 4)
    plain = reduce_interest(wire, "g", "sum", 1, 0, lifetime_ms=4000)
    out = node.send(UPSTREAM, wrap_pushed(ups[0].name, _digest.sign(Data(plain.name, b"sum", ContentType.AGGREGATE))),
                    0.01)
    assert sorted(str(s.packet.name) for s in out if s.face == APP) == sorted(str(n) for n in names)


def test_a_member_that_does_not_push_in_time_is_left_to_the_rendezvous() -> None:
    """x never pushes: after `PUSH_GRACE` w1's node pushes up w1 alone (the
    rendezvous asks x's contribution itself)."""
    node = Node()
    desc = GroupDescriptor.create("g", ["w1", "x@w1"], rendezvous=["r"], seg_bytes=1024)
    content = pack(SegmentMeta("<f8", (4,), 1, 0), np.full(4, 1.0))
    push = encode(_digest.sign(contribution_data("w1", "w1", "g", 1, 0, content)))
    interest = reduce_interest(encode(_digest.sign(desc.to_data())), "g", "sum", 1, 0, lifetime_ms=4000, push=push)
    assert up_of(node.send(APP, interest, 0.0)) == []
    assert up_of(node.fw.on_timer(PUSH_GRACE / 2)) == []
    ups = up_of(node.fw.on_timer(PUSH_GRACE + 0.001))
    assert len(ups) == 1 and partial_in(ups[0]) == ((0,), [1.0] * 4)


def test_a_nack_for_the_push_up_reaches_the_pushed_request() -> None:
    node = Node()
    pushed, _ = node.pushed(1.0)
    up = up_of(node.send(APP, pushed, 0.0))[0]
    out = node.send(UPSTREAM, Nack(up.name, up.nonce, NackReason.NOT_YET, "w2 is missing"), 0.5)
    down = [s.packet for s in out if s.face == APP]
    assert len(down) == 1 and isinstance(down[0], Nack) and down[0].name == pushed.name
    assert down[0].reason == NackReason.NOT_YET and down[0].detail == "w2 is missing"


def test_a_partial_request_is_not_pushed_up_its_plain_request_goes() -> None:
    """With partial=True (or a rendezvous step) the contribution is stored and
    the plain request asked for, as before pushes went up."""
    node = Node()
    content = pack(SegmentMeta("<f8", (4,), 1, 0), np.full(4, 1.0))
    push = encode(_digest.sign(contribution_data("w1", "w1", "g", 1, 0, content)))
    pushed = reduce_interest(node.wire, "g", "sum", 1, 0, lifetime_ms=4000, partial=True, push=push)
    plain = reduce_interest(node.wire, "g", "sum", 1, 0, lifetime_ms=4000, partial=True)
    ups = up_of(node.send(APP, pushed, 0.0))
    assert [u.name for u in ups] == [plain.name] and node.calls == 1
    out = node.send(UPSTREAM, _digest.sign(Data(plain.name, b"sum", ContentType.PARTIAL)), 0.1)
    down = [s.packet for s in out if s.face == APP]
    assert len(down) == 1 and unwrap_pushed(down[0], plain.name).content == b"sum"


def test_only_a_local_application_may_push_and_only_where_the_node_stores_it() -> None:
    node = Node()
    pushed, _ = node.pushed(1.0)
    out = node.send(REMOTE, pushed, 0.0)
    assert [(s.face, type(s.packet), s.packet.reason) for s in out] == [(REMOTE, Nack, NackReason.PROHIBITED)]
    assert node.calls == 0 and node.agg.counters["agg_push_refused"] == 1
    up = up_of(node.send(APP, node.pushed(1.0, rnd=2)[0], 0.0))[0]  # a partial sum from an application
    out = node.send(APP, Interest(up.name, lifetime_ms=4000, app_params=up.app_params), 0.1)
    assert (APP, up.name, NackReason.PROHIBITED) in [(s.face, s.packet.name, s.packet.reason) for s in out]
    bare = Node()
    bare.agg.push = None  # a forwarder without a contribution store (the simulator's)
    out = bare.send(APP, pushed, 0.0)
    assert [(s.face, s.packet.reason) for s in out] == [(APP, NackReason.PROHIBITED)]


def test_pushed_requests_are_forgotten_on_their_timer_when_nothing_answers() -> None:
    node = Node()
    pushed, _ = node.pushed(1.0)
    node.send(APP, pushed, 0.0)
    node.fw.on_timer(3.0)
    assert node.agg.pending()  # still within its 4 s lifetime
    node.fw.on_timer(4.1)
    assert not node.agg._pushed and node.agg._push_waiters == 0 and not node.agg.pending()


def test_pushed_requests_waiting_at_once_are_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import icnd.reduction.aggregate as aggregate

    monkeypatch.setattr(aggregate, "MAX_PUSH_WAITERS", 1)
    node = Node()
    first, _ = node.pushed(1.0, rnd=1)
    node.send(APP, first, 0.0)
    second, _ = node.pushed(1.0, rnd=2)
    out = node.send(APP, second, 0.1)
    assert [(s.face, s.packet.reason) for s in out] == [(APP, NackReason.CONGESTION)]
    assert node.agg.counters["agg_congestion"] == 1 and len(node.stored) == 1  # round 2 not stored


def test_a_pushed_contribution_of_a_member_outside_the_requests_group_is_refused() -> None:
    node = Node()
    content = pack(SegmentMeta("<f8", (4,), 1, 0), np.full(4, 1.0))
    push = encode(_digest.sign(contribution_data("w1", "stranger", "g", 1, 0, content)))
    pushed = reduce_interest(node.wire, "g", "sum", 1, 0, lifetime_ms=4000, push=push)
    answer = [s.packet for s in node.send(APP, pushed, 0.0) if s.face == APP]
    assert len(answer) == 1 and answer[0].content_type == ContentType.ERROR
    assert node.calls == 0 and node.agg.counters["agg_internal_errors"] == 0


def test_members_that_disagree_are_left_to_the_pull_and_a_resent_request_asks_again() -> None:
    """w1 and x (both here) push arrays of different dtypes: the node stops
    summing and asks for the aggregate with the plain request (the
    rendezvous's pull names the odd members); a pushed request sent again
    sends the plain request again (it may have been lost)."""
    node = Node()
    desc = GroupDescriptor.create("g", ["w1", "x@w1"], rendezvous=["r"], seg_bytes=1024)
    wire = encode(_digest.sign(desc.to_data()))
    plain = reduce_interest(wire, "g", "sum", 1, 0, lifetime_ms=4000)
    sent = []
    for i, (member, dtype) in enumerate([("w1", "<f8"), ("x", "<f4")]):
        content = pack(SegmentMeta(dtype, (4,), 1, 0), np.ones(4, dtype=dtype))
        push = encode(_digest.sign(contribution_data("w1", member, "g", 1, 0, content)))
        sent.append(reduce_interest(wire, "g", "sum", 1, 0, lifetime_ms=4000, push=push))
        ups = up_of(node.send(APP, sent[-1], 0.001 * i))
    assert [u.name for u in ups] == [plain.name]
    again = Interest(sent[0].name, lifetime_ms=4000, app_params=sent[0].app_params)
    ups = up_of(node.send(APP, again, 0.6))
    assert [u.name for u in ups] == [plain.name]
