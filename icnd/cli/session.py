"""One command, one connection: how commands reach the local node.

Each command runs its own trio loop around one client (`icnd.connect`,
which resolves ``--socket`` as interface §3 says, with the command's
``--key``/``--cert``/``--trust`` files: `open_client`); a refused management
command becomes a one-line `CliError` naming the command, a key, certificate
or schema file that cannot be used a one-line `CliError` (exit 2) naming it."""

from __future__ import annotations

import functools
import os
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

import trio

from icnd.cli.errors import CliError
from icnd.cli.options import CLIENT_FILES
from icnd.client import Client, connect
from icnd.client.facade import load_identity, load_key
from icnd.endpoint import resolve_socket_path
from icnd.errors import CommandError, Error
from icnd.keyfiles import load_certificate, load_schema

T = TypeVar("T")

WAIT_POLL_S = 0.05
"""How often `wait_ready` looks again: short, since scripts wait on it."""


def identity() -> dict[str, Any]:
    """``key``, ``cert`` and ``trust`` for `connect`, loaded from the command's
    ``--key``/``--cert``/``--trust`` files; CliError (exit 2) naming the bad one."""
    files = dict(CLIENT_FILES)
    loaders: dict[str, Callable[[str], Any]] = {"key": load_key, "cert": load_certificate, "trust": load_schema}
    loaded: dict[str, Any] = {}
    for flag, load in loaders.items():
        path = files.get(flag)
        if path is None:
            continue
        try:
            loaded[flag] = load(path)
        except (OSError, ValueError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if detail.startswith(f"{path}: "):  # the loaders name the file too
                detail = detail[len(path) + 2:]
            raise CliError(f"--{flag} {path}: {detail}", 2) from None
    if "cert" in loaded:
        try:
            load_identity(loaded.get("key"), loaded["cert"], None)
        except ValueError as exc:
            raise CliError(f"--cert {files['cert']}: {exc}", 2) from None
    return loaded


@asynccontextmanager
async def open_client(socket: str | None) -> AsyncIterator[Client]:
    """The command's client: `connect` to `socket` with its ``--key``/``--cert``/``--trust``."""
    async with connect(socket, **identity()) as client:
        yield client


def with_client(socket: str | None, action: Callable[[Client], Awaitable[T]]) -> T:
    """Connect to the node at `socket`, run ``action(client)``, close; its result."""

    async def run() -> T:
        async with open_client(socket) as client:
            return await action(client)

    return trio.run(run)


async def _wait_ready(socket: str | None, seconds: float) -> None:
    path = resolve_socket_path(socket)
    why = "no socket file"
    with trio.move_on_after(seconds):
        while True:
            if os.path.exists(path):
                try:
                    async with open_client(socket) as client:
                        await client.status()
                    return
                except CommandError as exc:
                    raise CliError(f"status get: {exc.message}") from None
                except Error as exc:  # not accepting yet, or went away between the check and the connect
                    why = str(exc).split(". ", 1)[0]
            await trio.sleep(WAIT_POLL_S)
    raise CliError(f"no node ready at {path} within {seconds:g}s ({why})", 2)


def wait_ready(socket: str | None, seconds: float) -> None:
    """Return once the node at `socket` answers ``status`` (polled, the socket
    file first); `CliError` (exit 2) when `seconds` pass first.  What
    ``icnd status --wait S`` does before it asks for the status it prints, so
    scripts can start a daemon in the background and go on when it serves."""
    trio.run(_wait_ready, socket, seconds)


async def _command(socket: str | None, module: str, verb: str, **params: Any) -> Any:
    async with open_client(socket) as client:
        try:
            return await client.command(module, verb, **params)
        except CommandError as exc:
            raise CliError(f"{module} {verb}: {exc.message}") from None


def command(socket: str | None, module: str, verb: str, **params: Any) -> Any:
    """The result of management command ``module/verb`` (docs/management.md)."""
    return trio.run(functools.partial(_command, socket, module, verb, **params))
