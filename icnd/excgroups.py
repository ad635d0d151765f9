"""Exception groups as trio's nurseries raise them, taken apart in one place.

A task failing inside a nursery reaches the code around it wrapped in a
`BaseExceptionGroup`, often nested (a nursery inside a nursery) and often
with the other tasks' `trio.Cancelled` alongside.  Code that should raise
the application's error as itself (``except icnd.Timeout``) asks here:

- `lone`: the single exception inside nested one-member groups (or the
  group itself when it holds several);
- `leaves`: every exception that is not a group, depth first, in order;
- `first_failure`: the first leaf that is not a cancellation (else the
  first leaf): the error that made a nursery cancel its other tasks;
- `only_cancelled`: whether every leaf is a cancellation;
- `run_bounded`: run jobs at most so many at once, the first failure
  raised as itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio


def lone(exc: BaseException) -> BaseException:
    """The lone exception inside nested single-member groups (else `exc` itself)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions in `exc` that are not groups, depth first (``[exc]`` for a plain one)."""
    if not isinstance(exc, BaseExceptionGroup):
        return [exc]
    found: list[BaseException] = []
    for inner in exc.exceptions:
        found += leaves(inner)
    return found


def first_failure(exc: BaseException) -> BaseException:
    """The first leaf of `exc` that is not `trio.Cancelled`; the first leaf if all are."""
    found = leaves(exc)
    return next((e for e in found if not isinstance(e, trio.Cancelled)), found[0])


def only_cancelled(exc: BaseException) -> bool:
    """Every leaf of `exc` is a `trio.Cancelled`."""
    return all(isinstance(e, trio.Cancelled) for e in leaves(exc))


async def run_bounded(jobs: list[Callable[[], Awaitable[Any]]], limit: int) -> None:
    """Run `jobs`, at most `limit` at once; the first failure cancels the
    others and is raised as itself (not inside an ExceptionGroup)."""
    if len(jobs) == 1:
        await jobs[0]()
        return
    slots = trio.Semaphore(limit)

    async def one(job: Callable[[], Awaitable[Any]]) -> None:
        async with slots:
            await job()

    try:
        async with trio.open_nursery() as nursery:
            for job in jobs:
                nursery.start_soon(one, job)
    except BaseExceptionGroup as group:
        raise first_failure(group) from None
