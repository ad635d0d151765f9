"""D5: pure calls obey the same policy as any call.  A host serving ``/fn/add``
with ``allow = ["/client/alice"]`` used to run an unsigned hand-made
``/fn/add/params-sha256=...`` Interest (and answer it from its memo): the
pure path checked neither a proof nor the policy."""

from __future__ import annotations

import pytest
import trio

import icnd
from icnd.compute.registry import hosted
from icnd.errors import error_fields
from icnd.packet import ContentType

from ._fnhost import caller, make_host, pure_interest


@icnd.function(pure=True)
def add(a, b):
    return a + b


async def test_an_unsigned_pure_call_to_a_host_with_an_allow_list_is_refused() -> None:
    async with trio.open_nursery() as nursery:
        host, _ = make_host(nursery, [hosted("/fn/add", add, allow=["/client/alice"])])
        answer = await host._on_call(pure_interest("/fn/add", 2, 3))
        assert answer is not None and not isinstance(answer, icnd.packet.Nack)
        assert answer.content_type == ContentType.ERROR and error_fields(answer)[0] == "unauthorized"
        assert answer.freshness_ms == 0
        assert host.counters["fn_executions"] == 0 and host.counters["fn_unauthorized"] == 1


async def test_a_result_the_host_remembers_reaches_only_callers_the_policy_admits() -> None:
    async with trio.open_nursery() as nursery:
        host, ep = make_host(nursery, [hosted("/fn/add", add, allow=["/client/alice"])])
        # alice's pure call: the host admits only proven callers, so it is made as a signed call
        assert await caller(host, ep, "/client/alice").call(icnd.Name("/fn/add"), (2, 3), timeout=5, pure=True) == 5
        assert host.counters["fn_executions"] == 1
        # the result is memoized, but neither an anonymous caller nor bob gets it
        answer = await host._on_call(pure_interest("/fn/add", 2, 3))
        assert answer is not None and not isinstance(answer, icnd.packet.Nack)
        assert answer.content_type == ContentType.ERROR and error_fields(answer)[0] == "unauthorized"
        with pytest.raises(icnd.Unauthorized):
            await caller(host, ep, "/client/bob").call(icnd.Name("/fn/add"), (2, 3), timeout=5, pure=True)
        with pytest.raises(icnd.Unauthorized):
            await caller(host, ep).call(icnd.Name("/fn/add"), (2, 3), timeout=5, pure=True)
        # alice again: from the memo (no second run), answered under her call's own name, not cacheable
        assert await caller(host, ep, "/client/alice").call(icnd.Name("/fn/add"), (2, 3), timeout=5, pure=True) == 5
        assert host.counters["fn_executions"] == 1
        assert host.counters["fn_unauthorized"] >= 3


async def test_a_host_without_an_allow_list_still_answers_anonymous_pure_calls_cacheably() -> None:
    async with trio.open_nursery() as nursery:
        host, ep = make_host(nursery, [hosted("/fn/add", add)])
        answer = await host._on_call(pure_interest("/fn/add", 2, 3))
        assert answer is not None and not isinstance(answer, icnd.packet.Nack)
        assert answer.content_type == ContentType.BLOB and answer.freshness_ms > 0
        assert await caller(host, ep).call(icnd.Name("/fn/add"), (2, 3), timeout=5, pure=True) == 5
        assert host.counters["fn_executions"] == 1 and host.counters["fn_unauthorized"] == 0
