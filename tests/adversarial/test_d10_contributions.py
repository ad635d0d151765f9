"""D10: a peer contributing far-ahead rounds for a member must not evict its rounds.

The attack (sans-IO, against `ContributionStore`): another node hands over 16
far-ahead rounds as member ``w`` (contributions from elsewhere are allowed).
Before the fix, the member's stored round was evicted, and its own later
contributions were reported stored (``add`` returned True, the CLI printed
"contributed") while `_add` evicted the very round it had just stored, so a
reduce of those rounds failed *not-yet*.  Now: a remote contribution never
displaces a local round, `add` never evicts the round it stores (success means
stored), and a refused round gets an error naming the window.
"""

from __future__ import annotations

import numpy as np
import pytest

import msgpack

from icnd.codec import encode
from icnd.reduction.contrib import held_size as data_size  # the store's own accounting
from icnd.name import Name
from icnd.packet import ContentType, Data, Interest
from icnd.reduction.contrib import ContributionStore, GroupTable, ReductionError
from icnd.reduction.group import GroupDescriptor, contrib_name, remote_contribute_name
from icnd.reduction.segment import SegmentMeta, pack
from icnd.reduction.service import ReductionService
from icnd.security import Ed25519Key

NODE = "a"
KEY = Ed25519Key.generate(Name(f"/node/{NODE}"))


class _Store(ContributionStore):
    """The store as the node runs it: local adds through the service's
    `contribute` (management), remote ones through its producer (another
    node's client handing a segment over, ``/node/a/member/w/contribute``)."""

    def __init__(self, **kw: int) -> None:
        groups = GroupTable()
        groups.add_config(GroupDescriptor.create("g", [f"w@{NODE}", "v@b"]))
        super().__init__(groups, NODE, **kw)
        self.service = ReductionService(Name(f"/node/{NODE}"), KEY, groups, self, deliver=lambda d: None,
                                        clock=lambda: 0.0)

    def local(self, data: Data) -> bool:
        return self.service.contribute(data)

    def remote(self, data: Data) -> bool:
        interest = Interest.with_params(remote_contribute_name(NODE, "w"), encode(data))
        answer = self.service._member(interest)
        assert isinstance(answer, Data)
        if answer.content_type == ContentType.ERROR:
            raise ReductionError(0, bytes(answer.content).decode("utf-8", "replace"))
        return bool(msgpack.unpackb(answer.content)["added"])


def _store(**kw: int) -> _Store:
    return _Store(**kw)


def _seg(rnd: int, value: float = 1.0, member: str = "w") -> Data:
    arr = np.full(4, value, dtype=np.float32)
    return Data(contrib_name(NODE, member, "g", rnd, 0), pack(SegmentMeta(arr.dtype.str, arr.shape, 1, 0), arr))


def _stored(store: ContributionStore, rnd: int) -> bool:
    got = store.lookup(Interest(contrib_name(NODE, "w", "g", rnd, 0)), 1.0, 0.0)
    return isinstance(got, Data)


def test_far_ahead_remote_rounds_do_not_evict_the_members_own() -> None:
    store = _store()
    assert store.local(_seg(1))  # the member's own round (a local client)
    for rnd in range(1000, 1016):  # the attack: 16 far-ahead rounds from elsewhere
        try:
            store.remote(_seg(rnd, 9.0))
        except ReductionError:
            pass
    assert _stored(store, 1), "the member's own round was evicted by contributions from elsewhere"
    for rnd in range(2, 6):  # its own later contributions: reported stored means stored
        assert store.local(_seg(rnd))
        assert _stored(store, rnd), f"round {rnd} reported contributed but not stored"
    assert all(_stored(store, r) for r in range(1, 6))


def test_success_is_never_reported_for_a_round_evicted_at_once() -> None:
    store = _store(rounds_kept=4)
    for rnd in range(10, 14):
        assert store.local(_seg(rnd))
    bytes_before = store.bytes_used
    with pytest.raises(ReductionError) as err:
        store.local(_seg(3))  # below every kept round: storing it would evict it at once
    assert err.value.code == 507
    assert "10..13" in str(err.value) and "4" in str(err.value)  # the error names the window
    assert not _stored(store, 3)
    assert all(_stored(store, r) for r in range(10, 14))  # nothing was evicted for it
    assert store.bytes_used == bytes_before  # and nothing accounted for it
    assert store.counters["contrib_refused_window"] == 1


def test_a_member_local_contribution_replaces_a_conflicting_remote_one() -> None:
    store = _store()
    store.remote(_seg(7, 9.0))  # someone elsewhere contributes round 7 as w first
    assert store.local(_seg(7, 1.0))  # the member's own contribution wins
    got = store.lookup(Interest(contrib_name(NODE, "w", "g", 7, 0)), 1.0, 0.0)
    assert isinstance(got, Data) and got.content == _seg(7, 1.0).content
    with pytest.raises(ReductionError, match="immutable"):
        store.remote(_seg(7, 9.0))  # and cannot be displaced back


def test_remote_contributions_never_evict_local_rounds_for_bytes() -> None:
    one = data_size(_seg(1))
    store = _store(max_bytes=2 * one + one // 2)  # room for two rounds only
    for rnd in (1, 2):
        assert store.local(_seg(rnd))
    with pytest.raises(ReductionError, match="full"):
        store.remote(_seg(100, 9.0))
    assert _stored(store, 1) and _stored(store, 2)
    store = _store(max_bytes=3 * one + one // 2)  # room for three
    for rnd in (1, 2):
        assert store.local(_seg(rnd))
    for rnd in range(100, 110):  # remote rounds take turns in the third slot
        assert store.remote(_seg(rnd, 9.0))
    assert _stored(store, 1) and _stored(store, 2)
    assert store.local(_seg(3))  # a local round takes the remote round's bytes
    assert all(_stored(store, r) for r in (1, 2, 3))


def test_evicting_a_remote_round_from_above_does_not_refuse_lower_rounds() -> None:
    store = _store(rounds_kept=4)
    for rnd in range(500, 504):
        store.remote(_seg(rnd, 9.0))
    assert store.local(_seg(1))  # evicts remote round 500: round 1 must not be "no longer kept"
    assert store.local(_seg(2))
    assert _stored(store, 1) and _stored(store, 2)
