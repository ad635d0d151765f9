"""A finished call's result is kept for the host's retention time, then its
thunk name answers a signed "gone" error (and nothing of the job is left)."""

from __future__ import annotations

import time

import pytest
import trio

import icnd
from icnd.security import Ed25519Key
from icnd.topology import launch, parse
from icnd.trust.cert import self_signed


def slow_double(x: int) -> int:
    time.sleep(0.4)  # past the inline budget: the caller is answered with a thunk
    return 2 * x


async def test_results_are_kept_for_the_retention_time_then_gone() -> None:
    async with launch(parse({"nodes": {"a": {}}})) as net:
        caller = await net.connect("a")
        key = Ed25519Key.generate(icnd.Name("/fn/host"))  # the host signs its answers (callers verify them)
        async with icnd.connect(net.nodes["a"].socket, key=key, cert=self_signed(key, now=time.time())) as host_client, \
                host_client.host({"/fn/double": slow_double}, retention=1.0) as host:
            assert await caller.call("/fn/double", 21, timeout=10) == 42
            (thunk_id,) = host.results  # the one job, retained
            thunk = host.thunk_prefix.append(thunk_id)
            kept = await caller.fetch(thunk, can_be_prefix=True, must_be_fresh=True)
            assert kept.name[: len(thunk)] == thunk
            await trio.sleep(1.5)
            assert len(host.results) == 0 and not host.results.retained
            with pytest.raises(icnd.RemoteError, match="no longer kept") as err:
                await caller.fetch(thunk, can_be_prefix=True, must_be_fresh=True)
            assert err.value.code == "gone"
            assert host.executions == 1
