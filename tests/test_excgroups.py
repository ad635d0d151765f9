"""One way to take trio's exception groups apart (issue #28), with the
semantics each former copy had: the client's lone exception, the reduction's
first failure that is not a cancellation, the CLI's all-launch-errors test."""

from __future__ import annotations

import trio

from icnd.errors import Error, Timeout
from icnd.excgroups import first_failure, leaves, lone, only_cancelled


async def _real_cancelled() -> trio.Cancelled:
    caught: list[trio.Cancelled] = []
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.lowlevel.checkpoint()
        except trio.Cancelled as exc:
            caught.append(exc)
            raise
    return caught[0]


async def test_a_lone_exception_comes_out_of_nested_single_groups_as_itself() -> None:
    timeout = Timeout("late")
    assert lone(BaseExceptionGroup("outer", [BaseExceptionGroup("inner", [timeout])])) is timeout
    group = BaseExceptionGroup("two", [timeout, ValueError("x")])
    assert lone(group) is group and lone(timeout) is timeout


async def test_the_first_failure_is_the_first_leaf_that_is_not_a_cancellation() -> None:
    cancelled = await _real_cancelled()
    error = ValueError("the cause")
    nested = BaseExceptionGroup("outer", [BaseExceptionGroup("inner", [cancelled, error]), KeyError("later")])
    assert leaves(nested) == [cancelled, error, nested.exceptions[1]]
    assert first_failure(nested) is error
    only = BaseExceptionGroup("all cancelled", [cancelled])
    assert first_failure(only) is cancelled and only_cancelled(only) and not only_cancelled(nested)


def test_the_cli_reports_launch_errors_only_when_nothing_else_is_in_the_group() -> None:
    from icnd.cli.topo import _launch_errors

    first, second = Error("node a failed"), Error("node b failed")
    assert _launch_errors(BaseExceptionGroup("g", [BaseExceptionGroup("h", [first]), second])) == [first, second]
    assert _launch_errors(BaseExceptionGroup("g", [first, ValueError("a bug")])) == []
    assert _launch_errors(first) == [first] and _launch_errors(KeyError("x")) == []


async def test_run_bounded_keeps_to_its_limit_and_raises_the_first_failure_as_itself() -> None:
    import trio

    from icnd.excgroups import run_bounded

    running, most = 0, 0

    async def job() -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await trio.sleep(0.01)
        running -= 1

    await run_bounded([job] * 7, 3)
    assert most == 3

    async def fails() -> None:
        await trio.sleep(0.005)
        raise KeyError("the one")

    try:
        await run_bounded([job, fails, job], 3)
    except KeyError as exc:
        assert exc.args == ("the one",)
    else:
        raise AssertionError("the failure must come out as itself")
