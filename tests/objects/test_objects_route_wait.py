"""Waiting for a route, sans daemon: `icnd.objects.fetch` against an endpoint
that Nacks no-route while "the network is down" [issue #26, F1].

On trio's mock clock (``autojump_clock``): the waits are real waits of the
code under test, the test takes no time."""

from __future__ import annotations

import os

import pytest
import trio

from icnd import Data, Interest, Nack, Nacked, NackReason, Name, NotFound, decode, encode
from icnd.objects.fetch import (
    ROUTE_WAIT_MARGIN,
    RouteWait,
    express_routed,
    fetch,
    fetch_object,
    fetch_segments,
)
from icnd.objects.manifest import Manifest
from icnd.objects.store import ObjectStore
from icnd.security import Ed25519Key
from tests.fakes import StoreEndpoint

BLOB = os.urandom(20 * 1024 + 7)  # 21 segments of 1 KiB


class FlakyNetwork(StoreEndpoint):
    """An endpoint whose Interests reach an object store, except while the
    route is gone: from the start until `down_until`, and for `outage`
    seconds once `answered` Data went out (an outage mid-transfer).  Counts
    what it Nacked."""

    def __init__(self, store: ObjectStore, key: Ed25519Key, *, down_until: float = 0.0,
                 outage_after: int | None = None, outage: float = 0.0) -> None:
        super().__init__(store, key)
        self.down_until = down_until
        self.outage_after, self.outage = outage_after, outage
        self.answered = 0
        self.nacked = 0

    def _answer(self, interest: Interest) -> Data | Nack:
        now = trio.current_time()
        if self.outage_after is not None and self.answered == self.outage_after:
            self.down_until, self.outage_after = now + self.outage, None
        data = self.store.lookup(interest)
        if now < self.down_until or data is None:
            self.nacked += 1
            return Nack.for_interest(interest, NackReason.NO_ROUTE, "no route here")
        self.answered += 1
        return decode(encode(data))  # type: ignore[return-value]  # (a Data: the store holds only Data)


@pytest.fixture
def stored(tmp_path) -> tuple[ObjectStore, Ed25519Key, Manifest]:
    key = Ed25519Key.generate(Name("/node/t"))
    store = ObjectStore(str(tmp_path), 1 << 20)
    uid = store.begin(Name("/files/b"), len(BLOB), 1024, 60_000)
    store.append(uid, 0, BLOB)
    return store, key, store.commit(uid, key)


async def test_an_object_fetch_waits_for_a_route_before_and_during_the_transfer(stored, autojump_clock) -> None:
    store, key, _ = stored
    before = FlakyNetwork(store, key, down_until=3.0)  # nobody serves it for 3 s
    assert await fetch_object(before, "/files/b", timeout=10) == BLOB  # type: ignore[arg-type]
    assert 3.0 <= trio.current_time() < 4.1 and before.nacked <= 8  # waited, asking at 1 s at most

    during = FlakyNetwork(store, key, outage_after=5, outage=4.0)  # the manifest and a few segments, then 4 s
    started = trio.current_time()
    assert await fetch_object(during, "/files/b", timeout=10) == BLOB  # type: ignore[arg-type]
    assert 4.0 <= trio.current_time() - started < 5.1
    # while the route was gone the pipeline sent one probe per wait (50 ms doubling to 1 s: 8 in 4 s),
    # besides the window that was in flight when it went: not the window again and again, nor a spin
    assert during.nacked <= 16


async def test_a_route_that_never_comes_fails_at_the_deadline_saying_so(stored, autojump_clock) -> None:
    store, key, _ = stored
    started = trio.current_time()
    with pytest.raises(NotFound, match=r"^/files/b: no such object: nobody serves it \(no route after \d+ retries "
                                       r"over 2\.9s: no route here\)$"):
        await fetch_object(FlakyNetwork(store, key, down_until=60), "/files/b", timeout=3)  # type: ignore[arg-type]
    assert trio.current_time() - started == pytest.approx(3 - ROUTE_WAIT_MARGIN, abs=0.01)

    cut = FlakyNetwork(store, key, outage_after=3, outage=60)  # mid-transfer, for good
    with pytest.raises(Nacked, match=r"^/files/b/v=\d+: nobody serves it \(no route after") as info:
        await fetch_object(cut, "/files/b", timeout=3)  # type: ignore[arg-type]
    assert info.value.reason == "no-route" and info.value.retries >= 5 and info.value.detail == "no route here"

    started = trio.current_time()
    with pytest.raises(Nacked) as info:
        await fetch(FlakyNetwork(store, key, down_until=60), "/files/b/x", timeout=2)  # type: ignore[arg-type]
    assert info.value.name == Name("/files/b/x") and trio.current_time() - started >= 1.8


async def test_without_a_deadline_for_routes_no_route_fails_at_once(stored, autojump_clock) -> None:
    """A function host pulling a caller's arguments (`fetch_segments`): no
    route back means the caller is gone, so nothing waits."""
    store, key, manifest = stored
    with pytest.raises(Nacked, match="nacked no-route"):
        await fetch_segments(FlakyNetwork(store, key, down_until=60), manifest)  # type: ignore[arg-type]
    assert trio.current_time() == 0


async def test_route_wait_paces_and_other_nacks_pass_through(autojump_clock) -> None:
    wait = RouteWait("/x", deadline=5.0)
    asked = []
    with pytest.raises(Nacked, match=r"^/x: nobody serves it \(no route after 9 retries over 4\.9s: gone\)$"):
        while True:
            asked.append(trio.current_time())
            await wait.retry(Nacked("no-route", detail="gone"))
    gaps = [round(b - a, 3) for a, b in zip(asked, asked[1:])]
    assert gaps == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 0.35]  # the last one ends at the margin
    congestion = Nacked("congestion")
    with pytest.raises(Nacked) as info:
        await RouteWait("/x", deadline=5.0).retry(congestion)
    assert info.value is congestion

    class Once:  # no route, then an answer: the second ask gets it
        key = None
        calls = 0

        async def express(self, interest: Interest, **_: Any) -> Data:
            self.calls += 1
            if self.calls == 1:
                raise Nacked("no-route")
            return Data(interest.name, b"ok")

    ep = Once()
    first = Interest(Name("/y"))
    assert (await express_routed(ep, first, timeout=1)).content == b"ok"  # type: ignore[arg-type]
    assert ep.calls == 2 and trio.current_time() == pytest.approx(4.9 + 0.05)
