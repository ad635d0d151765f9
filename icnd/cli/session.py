"""One command, one connection: how commands reach the local node.

Each command runs its own trio loop around one client (`icnd.connect`,
which resolves ``--socket`` as interface §3 says); a refused management
command becomes a one-line `CliError` naming the command."""

from __future__ import annotations

import functools
from typing import Any, Awaitable, Callable, TypeVar

import trio

from icnd.cli.errors import CliError
from icnd.client import Client, connect
from icnd.errors import CommandError

T = TypeVar("T")


def with_client(socket: str | None, action: Callable[[Client], Awaitable[T]]) -> T:
    """Connect to the node at `socket`, run ``action(client)``, close; its result."""

    async def run() -> T:
        async with connect(socket) as client:
            return await action(client)

    return trio.run(run)


async def _command(socket: str | None, module: str, verb: str, **params: Any) -> Any:
    async with connect(socket) as client:
        try:
            return await client.command(module, verb, **params)
        except CommandError as exc:
            raise CliError(f"{module} {verb}: {exc.message}") from None


def command(socket: str | None, module: str, verb: str, **params: Any) -> Any:
    """The result of management command ``module/verb`` (docs/management.md)."""
    return trio.run(functools.partial(_command, socket, module, verb, **params))
