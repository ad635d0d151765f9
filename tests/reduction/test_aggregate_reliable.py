"""Asking a child again over reliable next hops (issue #30), on the virtual clock.

A star: rendezvous ``r`` linked to members ``w1`` and ``w2``, whose nodes
serve their contributions.  ``w2`` is a straggler (its contribution appears
later), or its link is cut for a while.  The rendezvous's aggregator is told
which of its faces are reliable (`Aggregator.reliable_state`, as the daemon
tells it from `icnd.faces.base.Face.reliable_state`): over a reliable face
a child is asked again only after a reconnect or a stall, never on its RTO;
over a datagram face, on its RTO, as always.
"""

from __future__ import annotations

import numpy as np
import pytest

from icnd.codec import encode
from icnd.packet import Data, Interest
from icnd.reduction.aggregate import INITIAL_RTO, RELIABLE_POLL, RELIABLE_STALL, Aggregator
from icnd.reduction.group import REDUCE, GroupDescriptor, parse_contrib_name, reduce_interest
from icnd.reduction.segment import SegmentMeta, pack, unpack
from icnd.security import DigestKey
from tests.reduction._star import member_star

MEMBERS = ["w1", "w2"]
ARRAYS = {"w1": np.arange(4, dtype=np.int64), "w2": np.full(4, 10, dtype=np.int64)}


class Star:
    def __init__(self, *, reliable: bool) -> None:
        self.desc = GroupDescriptor.create("g", MEMBERS, rendezvous=["r"], seg_bytes=1024)
        self.wire = encode(DigestKey().sign(self.desc.to_data()))
        self.arrays: dict[str, np.ndarray] = {"w1": ARRAYS["w1"]}  # w2 contributes later (`contribute`)
        self.held: list[Interest] = []
        self.net, self.links, self.apps = member_star(MEMBERS, self._contribution, seed=3)  # apps: the producers
        agg = self.aggregator
        # each face's (connection, up), as a stream face reports it; None: a datagram face
        self.state: dict[int, tuple[int, bool]] = {}
        if reliable:
            self.state = {link.face_a: (1, True) for link in self.links.values()}
        agg.reliable_state = self.state.get

    @property
    def aggregator(self) -> Aggregator:
        agg = self.net.nodes["r"].fw.hooks[REDUCE]
        assert isinstance(agg, Aggregator)
        return agg

    def _contribution(self, interest: Interest) -> Data | None:
        member, _group, _rnd, _seg = parse_contrib_name(interest.name.comps)
        if member not in self.arrays:
            self.held.append(interest)  # held until the member contributes, as a node's store does
            return None
        return self._data(interest, self.arrays[member])

    @staticmethod
    def _data(interest: Interest, array: np.ndarray) -> Data:
        meta = SegmentMeta(array.dtype.str, array.shape, 1, 0)
        return Data(interest.name, pack(meta, array), freshness_ms=60_000)

    def contribute(self, at: float) -> None:
        """w2 contributes at `at`: the Interests held for it are answered then."""

        def now() -> None:
            self.arrays["w2"] = ARRAYS["w2"]
            for interest in self.held:
                self.apps["w2"].send(self._data(interest, ARRAYS["w2"]))
            self.held.clear()

        self.net.at(at, now)

    def request(self, lifetime_ms: int) -> tuple[object, Interest]:
        app = self.net.app("r")
        interest = reduce_interest(self.wire, "g", "sum", 1, 0, lifetime_ms=lifetime_ms)
        app.send(interest)
        return app, interest

    def counter(self, name: str) -> int:
        return self.aggregator.counters[name]

    def result(self, app: object, interest: Interest) -> np.ndarray:
        got = [p for p in app.received if p.name == interest.name]  # type: ignore[attr-defined]
        assert len(got) == 1 and isinstance(got[0], Data), got
        meta, view = unpack(got[0].content, seg_bytes=1024, max_bytes=self.desc.max_bytes, n_members=2)
        assert meta.members == (0, 1) and not meta.partial
        return np.asarray(view)


def test_a_straggler_behind_a_reliable_face_is_waited_for_not_asked_again() -> None:
    """w2 contributes 1.6 s in: past the RTO (1 s before any sample), within
    the stall bound; the sub-request to w2 is held, never sent twice."""
    star = Star(reliable=True)
    star.contribute(1.6)
    app, interest = star.request(4000)
    star.net.run(until=4.0)
    np.testing.assert_array_equal(star.result(app, interest), ARRAYS["w1"] + ARRAYS["w2"])
    assert star.counter("agg_retransmissions") == 0
    assert star.counter("agg_held") == 1


def test_over_a_datagram_face_the_straggler_is_asked_again_at_its_rto() -> None:
    """The same round with datagram faces: today's behaviour, a resend once the RTO runs out."""
    star = Star(reliable=False)
    star.contribute(1.6)
    app, interest = star.request(4000)
    star.net.run(until=INITIAL_RTO - 0.01)
    assert star.counter("agg_retransmissions") == 0
    star.net.run(until=INITIAL_RTO + 0.01)
    assert star.counter("agg_retransmissions") == 1
    star.net.run(until=4.0)
    np.testing.assert_array_equal(star.result(app, interest), ARRAYS["w1"] + ARRAYS["w2"])
    assert star.counter("agg_held") == 0 and star.counter("agg_stall_resends") == 0


def test_a_reliable_next_hop_silent_past_the_stall_bound_is_asked_again_once() -> None:
    star = Star(reliable=True)
    star.contribute(RELIABLE_STALL + 1.0)
    app, interest = star.request(6000)
    star.net.run(until=RELIABLE_STALL - 0.01)
    assert star.counter("agg_retransmissions") == 0
    star.net.run(until=RELIABLE_STALL + 0.01)
    assert star.counter("agg_stall_resends") == 1 and star.counter("agg_retransmissions") == 1
    star.net.run(until=6.0)
    np.testing.assert_array_equal(star.result(app, interest), ARRAYS["w1"] + ARRAYS["w2"])
    assert star.counter("agg_stall_resends") == 1


@pytest.mark.parametrize("down_for", [0.6, 1.5])
def test_a_sub_request_lost_with_its_connection_is_asked_again_after_the_reconnect(down_for: float) -> None:
    """The link to w2 is cut at once (the sub-request is lost) and its face
    reports down; nothing is resent while down, even past the RTO; once the
    face is up on a new connection the child is asked again, within a poll."""
    star = Star(reliable=True)
    star.arrays["w2"] = ARRAYS["w2"]
    link, face = star.links["w2"], star.links["w2"].face_a
    link.up = False
    star.state[face] = (1, False)

    def reconnect() -> None:
        link.up = True
        star.state[face] = (2, True)

    star.net.at(down_for, reconnect)
    app, interest = star.request(5000)
    star.net.run(until=down_for - 0.01)
    assert star.counter("agg_retransmissions") == 0
    star.net.run(until=down_for + RELIABLE_POLL + 0.01)
    assert star.counter("agg_reconnect_resends") == 1 and star.counter("agg_retransmissions") == 1
    star.net.run(until=5.0)
    np.testing.assert_array_equal(star.result(app, interest), ARRAYS["w1"] + ARRAYS["w2"])


def test_a_reliable_next_hop_that_never_answers_still_ends_at_the_deadline() -> None:
    """Holding never outlives the entry: without w2 the round ends with its
    not-yet at the deadline, as over any face."""
    star = Star(reliable=True)
    app, interest = star.request(1500)
    star.net.run(until=3.0)
    (nack,) = [p for p in app.received if p.name == interest.name]  # type: ignore[attr-defined]
    assert not isinstance(nack, Data) and "no contribution from w2" in nack.detail
    assert star.counter("agg_retransmissions") == 0
    agg = star.aggregator
    assert not agg.entries and not agg.children


@pytest.mark.parametrize("reliable", [True, False])
@pytest.mark.parametrize("timeout", [5.0, 120.0])  # 120 s: beyond the longest lifetime, so every copy is clamped
def test_a_consumers_resent_request_goes_no_further_than_a_reliable_hop(reliable: bool, timeout: float) -> None:
    """A consumer on w1 re-sends its request (new nonce, the remaining
    lifetime) while the round waits for w2: over a reliable face toward the
    rendezvous its node keeps it (the earlier copy's answer is on its way);
    over a datagram face it goes on.  Past RELIABLE_STALL a re-sent copy is
    forwarded again either way."""
    star = Star(reliable=reliable)
    w1 = star.net.nodes["w1"].fw.hooks[REDUCE]
    assert isinstance(w1, Aggregator)
    if reliable:
        w1.reliable_state = {star.links["w1"].face_b: (1, True)}.get
    star.contribute(RELIABLE_STALL + 0.8)
    app = star.net.app("w1")
    first = reduce_interest(star.wire, "g", "sum", 1, 0, lifetime_ms=int(timeout * 1000))
    app.send(first)
    for at in (0.5, 1.0, RELIABLE_STALL + 0.5):
        star.net.run(until=at)
        app.send(Interest(first.name, lifetime_ms=int((timeout - at) * 1000), app_params=first.app_params))
    star.net.run(until=5.0)
    (data,) = [p for p in app.received if p.name == first.name]
    assert isinstance(data, Data)
    reached = star.counter("agg_requests")  # copies of the request that reached the rendezvous
    if reliable:
        assert w1.counters["agg_retx_suppressed"] == 2 and reached == 2
    else:
        assert w1.counters["agg_retx_suppressed"] == 0 and reached == 4
