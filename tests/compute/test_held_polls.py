"""A poll of a running job is held and answered when the job's result is
stored (`FunctionHost._on_poll`), on a virtual clock: a caller learns of the
end within a round trip, not at its next poll."""

from __future__ import annotations

import msgpack
import trio

from icnd.compute.host import MAX_POLL_WAIT, POLL_HOLD
from icnd.compute.host_jobs import Job
from icnd.errors import error_fields
from icnd.packet import ContentType, Interest
from tests.compute.test_sessions import _host


def _eta(data) -> float:  # type: ignore[no-untyped-def]
    return msgpack.unpackb(data.content)["eta_ms"] / 1000


async def test_a_poll_is_answered_when_the_result_is_stored(autojump_clock) -> None:
    host, _ = _host()
    job = Job(trio.current_time())
    host.results.hand_out(job)
    name = host.results.name_of(job)
    answered: list[tuple[float, object]] = []

    async def poll() -> None:
        data = await host._on_poll(Interest(name, lifetime_ms=4000, can_be_prefix=True))
        answered.append((trio.current_time(), data))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll)
        await trio.sleep(1.25)
        assert answered == []  # held while the job runs
        job.published = True  # the result is stored...
        job.stored.set()
    at, data = answered[0]
    assert at == 1.25 and data.content_type == ContentType.THUNK and _eta(data) == 0.0  # ...and said at once


async def test_a_held_poll_ends_before_its_interest_and_says_ask_again_soon(autojump_clock) -> None:
    host, _ = _host()
    job = Job(trio.current_time())
    host.results.hand_out(job)
    started = trio.current_time()
    data = await host._on_poll(Interest(host.results.name_of(job), lifetime_ms=4000, can_be_prefix=True))
    assert trio.current_time() - started == POLL_HOLD and _eta(data) <= MAX_POLL_WAIT and _eta(data) == 0.05
    short = await host._on_poll(Interest(host.results.name_of(job), lifetime_ms=400, can_be_prefix=True))
    assert trio.current_time() - started == POLL_HOLD  # too short to hold: answered at once, with the ETA
    assert _eta(short) > 0.05


async def test_a_failed_job_answers_its_held_polls_with_the_error(autojump_clock) -> None:
    host, _ = _host()
    job = Job(trio.current_time())
    host.results.hand_out(job)
    out: list = []

    async def poll() -> None:
        out.append(await host._on_poll(Interest(host.results.name_of(job), lifetime_ms=4000, can_be_prefix=True)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll)
        await trio.sleep(0.5)
        job.error = ("ValueError", "boom")
        job.stored.set()
    assert out[0].content_type == ContentType.ERROR and error_fields(out[0]) == ("ValueError", "boom")
