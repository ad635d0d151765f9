"""In-network aggregation on the virtual clock: the forwarder cores of a
two-level tree (root r, aggregators a1 and a2, members w1..w5) with a
redundant link a1-a2, contributions served by applications on the members'
nodes."""

from __future__ import annotations

from collections import deque

import msgpack
import numpy as np
import pytest

from icnd.codec import encode
from icnd.core.fw.forwarder import Forwarder
from icnd.name import Name
from icnd.packet import ContentType, Data, Interest, Nack, NackReason
from icnd.reduction.aggregate import Aggregator
from icnd.reduction.group import REDUCE, GroupDescriptor, parse_contrib_name, reduce_interest
from icnd.reduction.segment import SegmentMeta, pack, plan, unpack
from icnd.security import DigestKey
from icnd.sim.network import SimNetwork

MEMBERS = ["w1", "w2", "w3", "w4", "w5"]
LINKS = [("r", "a1"), ("r", "a2"), ("a1", "w1"), ("a1", "w2"), ("a1", "w3"), ("a2", "w4"), ("a2", "w5"),
         ("a1", "a2")]
NODES = ["r", "a1", "a2"] + MEMBERS
DIGEST = DigestKey()


def aggregator_of(fw: Forwarder) -> Aggregator:
    """The node's aggregator: its forwarder's namespace handler for /reduce."""
    agg = fw.hooks[REDUCE]
    assert isinstance(agg, Aggregator)
    return agg


def segments_of(array: np.ndarray, seg_bytes: int) -> list[tuple[SegmentMeta, np.ndarray]]:
    seg_elems, nseg, _ = plan(array.dtype, array.shape, seg_bytes)
    flat = array.reshape(-1)
    return [(SegmentMeta(array.dtype.str, array.shape, nseg, s), flat[s * seg_elems:(s + 1) * seg_elems])
            for s in range(nseg)]


class Tree:
    def __init__(self, arrays: dict[str, np.ndarray], *, rendezvous=("r",), seg_bytes: int = 1024,
                 loss: dict[tuple[str, str], float] | None = None, deadline_ms: int = 0, **fw_options) -> None:
        self.desc = GroupDescriptor.create("g", MEMBERS, rendezvous=list(rendezvous), seg_bytes=seg_bytes,
                                           deadline_ms=deadline_ms)
        self.wire = encode(DIGEST.sign(self.desc.to_data()))
        self.arrays = dict(arrays)
        self.net = net = SimNetwork(seed=7, hooks=lambda node: {REDUCE: Aggregator(node_name=node)}, **fw_options)
        for n in NODES:
            net.add_node(n)
        face: dict[tuple[str, str], int] = {}
        for a, b in LINKS:
            link = net.link(a, b, delay=0.001, loss=(loss or {}).get((a, b), 0.0))
            face[(a, b)], face[(b, a)] = link.face_a, link.face_b
        neighbours = {n: [b for a, b in face if a == n] for n in NODES}
        for dst in NODES:
            dist = self._bfs(dst, neighbours)
            for src in NODES:
                if src == dst:
                    continue
                for nb in neighbours[src]:
                    if dist[nb] < dist[src] + 1:  # one route per neighbour that leads there
                        net.nodes[src].fw.add_route(Name(f"/node/{dst}"), face[(src, nb)], 1 + dist[nb])
        self.served: dict[str, int] = {m: 0 for m in MEMBERS}
        self.forge: dict[str, object] = {}  # member -> function(Data) -> Data: a misbehaving member
        for m in MEMBERS:
            net.app(m).serve(f"/node/{m}/member", self._contribution)

    @staticmethod
    def _bfs(dst: str, neighbours: dict[str, list[str]]) -> dict[str, int]:
        dist = {dst: 0}
        queue = deque([dst])
        while queue:
            n = queue.popleft()
            for nb in neighbours[n]:
                if nb not in dist:
                    dist[nb] = dist[n] + 1
                    queue.append(nb)
        return dist

    def _contribution(self, interest: Interest) -> Data | None:
        member, group, rnd, seg = parse_contrib_name(interest.name.comps)
        array = self.arrays.get(member)
        if array is None:
            return None  # has not contributed: the Interest waits
        self.served[member] += 1
        meta, payload = segments_of(array, self.desc.seg_bytes)[seg]
        data = Data(interest.name, pack(meta, payload), freshness_ms=60_000)
        forge = self.forge.get(member)
        return forge(data) if forge else data

    def request(self, at: str, *, op: str = "sum", rnd: int = 1, seg: int = 0, partial: bool = False,
                lifetime_ms: int = 2000):
        app = self.net.app(at)
        interest = reduce_interest(self.wire, "g", op, rnd, seg, partial=partial, lifetime_ms=lifetime_ms)
        app.send(interest)
        return app, interest

    def answers(self, app, interest) -> list:
        return [p for p in app.received if isinstance(p, (Data, Nack)) and p.name == interest.name]

    def reduce(self, at: str = "r", **kw) -> Data | Nack:
        app, interest = self.request(at, **kw)
        self.net.run(until=self.net.now + 5)
        got = self.answers(app, interest)
        assert len(got) == 1, got
        return got[0]

    def counters(self, node: str) -> dict[str, int]:
        return dict(aggregator_of(self.net.nodes[node].fw).counters)


def decode_result(tree: Tree, data: Data) -> tuple[SegmentMeta, np.ndarray]:
    return unpack(data.content, seg_bytes=tree.desc.seg_bytes, max_bytes=tree.desc.max_bytes, n_members=5)


def arrays_of(dtype, n: int = 8, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return {m: rng.standard_normal(n).astype(dtype) for m in MEMBERS}
    return {m: rng.integers(-1000, 1000, n).astype(dtype) for m in MEMBERS}


@pytest.mark.parametrize("op,fn", [("sum", np.sum), ("max", np.max), ("min", np.min)])
def test_int64_exact_and_combined_in_the_network(op, fn):
    tree = Tree(arrays_of(np.int64))
    data = tree.reduce("w1", op=op)
    assert isinstance(data, Data) and data.content_type == ContentType.AGGREGATE
    meta, result = decode_result(tree, data)
    expected = fn(np.stack([tree.arrays[m] for m in MEMBERS]), axis=0)
    assert result.tobytes() == expected.tobytes()
    assert meta.members == (0, 1, 2, 3, 4) and not meta.partial
    # the root heard one answer per child (a1, a2), not one per member
    assert tree.counters("r")["agg_child_data"] == 2
    assert tree.counters("a1")["agg_child_data"] == 3
    assert tree.counters("a2")["agg_child_data"] == 2
    assert all(n == 1 for n in tree.served.values())


def test_float32_sum_within_tolerance_over_many_segments():
    arrays = arrays_of(np.float32, n=1000)
    tree = Tree(arrays, seg_bytes=1024)
    nseg = plan(np.dtype(np.float32), (1000,), 1024)[1]
    assert nseg == 4
    out = []
    for s in range(nseg):
        data = tree.reduce("w3", seg=s)
        out.append(decode_result(tree, data)[1])
    expected = np.sum(np.stack(list(arrays.values())), axis=0)
    np.testing.assert_allclose(np.concatenate(out), expected, rtol=1e-5, atol=1e-5)


def test_allreduce_one_computation_for_all_members():
    tree = Tree(arrays_of(np.float32))
    apps = [tree.request(m) for m in MEMBERS]
    tree.net.run(until=5)
    results = [tree.answers(app, interest) for app, interest in apps]
    assert all(len(r) == 1 and isinstance(r[0], Data) for r in results)
    assert len({r[0].content for r in results}) == 1  # identical bytes everywhere
    for node in ("r", "a1", "a2"):
        c = tree.counters(node)
        assert c["agg_entries"] == 1, (node, c)  # combined once per forwarder
    assert tree.counters("r")["agg_results"] == 1
    assert all(n == 1 for n in tree.served.values())
    # a late requester is answered from a Content Store without aggregating again
    late = tree.reduce("w4")
    assert late.content == results[0][0].content
    assert tree.counters("r")["agg_entries"] == 1


def test_missing_member_times_out_then_partial_then_complete():
    arrays = arrays_of(np.int64)
    missing = arrays.pop("w5")
    tree = Tree(arrays)
    nack = tree.reduce("w1", lifetime_ms=1000)
    assert isinstance(nack, Nack) and nack.reason == NackReason.NOT_YET
    # one sentence, the facts once: the child a2's own not-yet is not wrapped in the root's (#27)
    assert nack.detail == "round 1 segment 0 of g is incomplete: no contribution from w5 (no answer by the deadline)"
    part = tree.reduce("w1", partial=True, lifetime_ms=1000)
    assert isinstance(part, Data) and part.content_type == ContentType.PARTIAL
    meta, result = decode_result(tree, part)
    assert meta.partial and meta.members == (0, 1, 2, 3)
    assert result.tolist() == np.sum(np.stack(list(arrays.values())), axis=0).tolist()
    for node in NODES:  # a partial is never cached
        assert all(e.data.content_type != ContentType.PARTIAL for e in tree.net.nodes[node].fw.cs.entries())
    tree.arrays["w5"] = missing
    full = tree.reduce("w1")
    assert isinstance(full, Data) and full.content_type == ContentType.AGGREGATE
    meta, result = decode_result(tree, full)
    assert meta.members == (0, 1, 2, 3, 4)
    assert result.tolist() == np.sum(np.stack(list(tree.arrays.values())), axis=0).tolist()


def test_group_deadline_policy_bounds_the_wait_for_stragglers():
    arrays = arrays_of(np.int64)
    arrays.pop("w5")
    tree = Tree(arrays, deadline_ms=300)
    app, interest = tree.request("w1", partial=True, lifetime_ms=5000)
    tree.net.run(until=0.4)  # long before the request's own lifetime
    (data,) = tree.answers(app, interest)
    assert data.content_type == ContentType.PARTIAL and decode_result(tree, data)[0].members == (0, 1, 2, 3)


def test_straggler_answer_completes_a_waiting_request():
    arrays = arrays_of(np.int64)
    late = arrays.pop("w2")
    tree = Tree(arrays)
    app, interest = tree.request("w4", lifetime_ms=3000)
    tree.net.run(until=0.5)
    assert tree.answers(app, interest) == []
    tree.arrays["w2"] = late  # w2 contributes; the aggregator's retransmission picks it up
    tree.net.run(until=5)
    (data,) = tree.answers(app, interest)
    assert isinstance(data, Data) and decode_result(tree, data)[0].members == (0, 1, 2, 3, 4)


def test_dtype_mismatch_names_the_member():
    arrays = arrays_of(np.float32)
    arrays["w3"] = arrays["w3"].astype(np.float64)
    tree = Tree(arrays)
    data = tree.reduce("w5")
    assert isinstance(data, Data) and data.content_type == ContentType.ERROR
    message = msgpack.unpackb(data.content)["message"]
    assert "member w3 contributed float64" in message and "float32" in message


def test_shape_mismatch_names_the_member():
    arrays = arrays_of(np.int32)
    arrays["w4"] = np.zeros(9, np.int32)
    tree = Tree(arrays)
    data = tree.reduce("w1")
    assert data.content_type == ContentType.ERROR
    assert "member w4 contributed int32 (9,)" in msgpack.unpackb(data.content)["message"]


def test_a_contribution_claiming_other_members_is_rejected():
    tree = Tree(arrays_of(np.int64))

    def forged(data):
        meta, payload = decode_result(tree, data)
        meta.members = (0, 1)  # claims to include w1 too: would count w1 twice
        return Data(data.name, pack(meta, payload))

    tree.forge["w2"] = forged
    data = tree.reduce("r")
    assert data.content_type == ContentType.ERROR
    assert "w2" in msgpack.unpackb(data.content)["message"]
    assert sum(tree.counters(n)["agg_rejected"] for n in NODES) == 1


def test_nonfinite_and_overflow_are_flagged():
    arrays = arrays_of(np.float32)
    arrays["w2"][3] = np.inf
    tree = Tree(arrays)
    assert decode_result(tree, tree.reduce())[0].nonfinite
    big = {m: np.full(4, np.iinfo(np.int64).max // 3, np.int64) for m in MEMBERS}
    tree = Tree(big)
    meta, _ = decode_result(tree, tree.reduce())
    assert meta.overflow and not meta.nonfinite
    small = Tree(arrays_of(np.int64))
    assert not decode_result(small, small.reduce())[0].overflow


def test_lossy_links_are_repaired_by_per_child_retransmission():
    tree = Tree(arrays_of(np.int64), loss={("a1", "w2"): 0.3, ("r", "a2"): 0.2})
    requests = [tree.request("r", rnd=rnd, lifetime_ms=8000) for rnd in range(10)]
    tree.net.run(until=10)
    for app, interest in requests:
        (data,) = tree.answers(app, interest)
        assert isinstance(data, Data) and decode_result(tree, data)[0].members == (0, 1, 2, 3, 4)
    assert sum(tree.counters(n)["agg_retransmissions"] for n in NODES) > 0


def test_segment_roots_are_spread_over_rendezvous_nodes():
    arrays = arrays_of(np.float32, n=1024)
    tree = Tree(arrays, rendezvous=MEMBERS, seg_bytes=1024)
    for s in range(4):
        assert isinstance(tree.reduce("r", seg=s), Data)
    roots = [n for n in MEMBERS if tree.counters(n)["agg_roots"]]
    assert roots == ["w1", "w2", "w3", "w4"]  # segment s starts at rendezvous[s % 5]


def test_too_many_rounds_is_congestion():
    tree = Tree({m: np.ones(4, np.int64) for m in MEMBERS if m != "w5"})
    aggregator_of(tree.net.nodes["r"].fw).max_rounds = 2
    for rnd in (1, 2):
        tree.request("r", rnd=rnd, lifetime_ms=3000)  # both wait for w5
    tree.net.run(until=0.1)
    nack = tree.reduce("r", rnd=3)
    assert isinstance(nack, Nack) and nack.reason == NackReason.CONGESTION
    assert "too many concurrent rounds" in nack.detail
    assert tree.counters("r")["agg_congestion"] == 1


@pytest.mark.parametrize("change,why", [
    (lambda i: Interest.with_params(Name("/reduce/g/avg/1/seg=0"), i.app_params), "unknown reduction op"),
    (lambda i: Interest(Name("/reduce/g/sum/1/seg=0")), "params-sha256"),
    (lambda i: Interest.with_params(i.name.prefix(5), b"\x93garbage"), "parameters"),
])
def test_malformed_requests_are_nacked(change, why):
    tree = Tree(arrays_of(np.int64))
    app = tree.net.app("w1")
    _, good = tree.request("w2")
    bad = change(good)
    app.send(bad)
    tree.net.run(until=1)
    (nack,) = [p for p in app.received if isinstance(p, Nack)]
    assert nack.reason == NackReason.MALFORMED and why in nack.detail


def test_aggregator_state_is_released():
    arrays = arrays_of(np.int64)
    arrays.pop("w5")
    tree = Tree(arrays)
    tree.reduce("w1", lifetime_ms=500)
    tree.net.run(until=20)
    for n in NODES:
        agg = aggregator_of(tree.net.nodes[n].fw)
        assert not agg.entries and not agg.children and agg.bytes_used == 0
        assert len(tree.net.nodes[n].fw.pit) == 0


def test_retransmitted_request_still_gets_the_named_not_yet():
    """A consumer re-sends (new nonce, the remaining lifetime): the final Nack
    must carry the nonce now on the PIT out-record, and name only w5."""
    arrays = arrays_of(np.int64)
    arrays.pop("w5")
    tree = Tree(arrays)
    app, first = tree.request("w1", lifetime_ms=3000)
    tree.net.run(until=1.0)
    again = Interest(first.name, lifetime_ms=2000, app_params=first.app_params)
    app.send(again)
    tree.net.run(until=5)
    (nack,) = tree.answers(app, first)
    assert isinstance(nack, Nack) and nack.reason == NackReason.NOT_YET
    assert "no contribution from w5 " in nack.detail
    assert sum(tree.net.nodes[n].fw.counters.unsolicited_nacks for n in NODES) == 0


def test_a_members_refusal_reaches_the_consumer_with_its_reason():
    tree = Tree(arrays_of(np.int64))

    def refuse(interest):
        return Nack(interest.name, interest.nonce, NackReason.NO_ROUTE, "round 1 of w5 in g is no longer kept here")

    node = tree.net.nodes["w5"]
    node.fw.fib.remove(Name("/node/w5/member"), min(node.apps))  # the tree's own producer goes
    tree.net.app("w5").serve("/node/w5/member", refuse)
    nack = tree.reduce("w1")
    assert isinstance(nack, Nack) and nack.reason == NackReason.NOT_YET
    assert nack.detail == ("round 1 segment 0 of g is incomplete: no contribution from w5 "
                           "(w5: no-route: round 1 of w5 in g is no longer kept here)")


def test_late_timer_near_the_deadline_does_not_spin():
    """A shell may run timers late (TIMER_SLACK): a child whose RTO ran out
    within the last 10 ms before the deadline is given up, not re-armed at
    a time already past (which would fire again and again)."""
    arrays = arrays_of(np.int64)
    arrays.pop("w5")
    tree = Tree(arrays)
    app, interest = tree.request("w1", lifetime_ms=2000)
    tree.net.run(until=0.5)
    fw = tree.net.nodes["a2"].fw
    (entry,) = aggregator_of(fw).entries.values()
    (child,) = entry.pending()
    child.sent_at, child.rto, child.due = entry.deadline - 0.105, 0.1, entry.deadline - 0.005  # due 5 ms before it
    entry.timer_at = float("inf")
    aggregator_of(fw)._arm(entry)
    calls = []
    schedule = fw.schedule

    def counted(at, callback, arg=None):
        if getattr(callback, "__self__", None) is aggregator_of(fw):  # not, e.g., the dead-nonce list's sweep
            calls.append(at)
        if len(calls) > 50:
            raise AssertionError("the aggregator keeps re-arming")
        schedule(at, callback, arg)

    fw.schedule = counted
    fw.on_timer(entry.deadline - 0.002)  # 3 ms late, 2 ms before the deadline
    assert child.state == "pending" and len(calls) <= 1
    assert all(at >= entry.deadline for at in calls)


@pytest.mark.parametrize("window,window_bytes,most_expected", [
    (1, None, 1),  # the count bound
    (None, 2048, 2),  # the byte bound: 4 may be outstanding, but only 2 KiB of 1 KiB segments
])
def test_sub_requests_are_paced_per_next_hop(monkeypatch, window, window_bytes, most_expected):
    from icnd.reduction import aggregate

    if window_bytes is not None:
        monkeypatch.setattr(aggregate, "CHILD_WINDOW_BYTES", window_bytes)
    arrays = arrays_of(np.float32, n=2048)
    tree = Tree(arrays, seg_bytes=1024)  # 8 segments
    root = aggregator_of(tree.net.nodes["r"].fw)
    if window is not None:
        root.window = window
    assert root.window == (window or aggregate.CHILD_WINDOW)
    most = []
    send = root._send

    def watched(child, now):
        send(child, now)
        most.append(max(root._inflight.values(), default=0))

    root._send = watched
    requests = [tree.request("w1", seg=s, lifetime_ms=4000) for s in range(8)]
    tree.net.run(until=5)
    for app, interest in requests:
        (data,) = tree.answers(app, interest)
        assert isinstance(data, Data) and decode_result(tree, data)[0].members == (0, 1, 2, 3, 4)
    assert max(most) == most_expected and root.counters["agg_paced"] > 0
    assert not root._inflight and not root._waiting


def test_the_byte_window_counts_every_group_on_a_next_hop():
    """Groups of different segment sizes share a next hop's window: its bytes
    are what is outstanding there, whichever groups they belong to."""
    from types import SimpleNamespace

    from icnd.reduction import aggregate

    root = aggregator_of(Tree(arrays_of(np.float32)).net.nodes["r"].fw)
    mib = 1024 * 1024

    def child(seg_bytes):
        return SimpleNamespace(entry=SimpleNamespace(request=SimpleNamespace(desc=SimpleNamespace(seg_bytes=seg_bytes))))

    assert aggregate.CHILD_WINDOW_BYTES == 8 * mib
    assert root._fits(7, child(4 * mib))  # nothing outstanding: anything goes, even beyond the bound
    root._inflight[7], root._inflight_bytes[7] = 2, 8 * mib  # two 4 MiB segments of one group
    assert not root._fits(7, child(1024))  # a small segment of another group waits too
    root._inflight[7], root._inflight_bytes[7] = 1, 1 * mib
    assert root._fits(7, child(4 * mib)) and not root._fits(7, child(8 * mib))
    root._inflight[7], root._inflight_bytes[7] = root.window, 4 * 1024
    assert not root._fits(7, child(1024))  # the count bound still holds


def test_an_aggregator_bug_is_counted_not_fatal(monkeypatch, caplog):
    tree = Tree(arrays_of(np.int64))
    agg = aggregator_of(tree.net.nodes["r"].fw)

    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(agg, "_on_child_data", broken)
    app, interest = tree.request("r", lifetime_ms=500)
    tree.net.run(until=2)  # the forwarder keeps running; the request ends without an answer
    assert agg.counters["agg_internal_errors"] >= 1 and "boom" in caplog.text
    monkeypatch.undo()
    assert isinstance(tree.reduce("w1", rnd=2), Data)
