"""The node's own function host: the ``--function`` callables, served through
the node's in-process client on a local memory face (the same protocol code
as `Client.host`, signed with the node's key), and replaced whole when a
configuration reload changes them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from icnd.compute.host import HOST_COUNTERS, HOST_TABLES, FunctionHost, HostLimits
from icnd.compute.registry import HostedFunction, hosted, load_callable
from icnd.daemon.config import NodeConfig
from icnd.daemon.errors import StartupError
from icnd.endpoint import Endpoint
from icnd.name import Name
from icnd.packet import Data
from icnd.trust import Validator

log = logging.getLogger("icnd.node")


class NodeFunctions:
    """The ``--function`` callables of one node and the `FunctionHost` serving them (none until `start`)."""

    def __init__(self, config: NodeConfig, node_name: Name, *, client: Callable[[], Awaitable[Endpoint]],
                 fetch_cert: Callable[[Name], Awaitable[Data]]) -> None:
        self._config = config
        self._node_name = node_name
        self._client = client  # the node's in-process client, made on first use
        self._fetch_cert = fetch_cert
        self.functions: list[HostedFunction] = []
        self.host: FunctionHost | None = None  # the running host (or the last one, until replaced)
        self._task: _Stoppable | None = None  # runs `host`; replaced by `replace`

    def load(self, validator: Validator) -> None:
        """Import the configured callables (`StartupError` if one cannot be)."""
        cfg = self._config
        if validator.schema is not None:
            for f in cfg.functions:
                if not f.allow:
                    log.info("function %s: no allow list: any caller whose certificate chain verifies under "
                             "%s may call it", f.prefix, cfg.trust)
        try:
            self.functions = [hosted(f.prefix, load_callable(f.target), f.allow, target=f.target)
                              for f in cfg.functions]
        except ValueError as exc:
            raise StartupError(f"--function: {exc}") from None

    async def start(self, nursery: trio.Nursery, validator: Validator, socket_path: str) -> None:
        """Serve the loaded functions in `nursery`, with the counters of the host before (a reload) carried
        over: the node's counters never go back."""
        # functions that use icnd themselves (icnd.connect()) reach this node
        os.environ["ICND_SOCKET"] = os.path.abspath(socket_path)
        client = await self._client()
        cfg = self._config
        limits = HostLimits(max_jobs=cfg.function_max_jobs, max_arg_bytes=int(cfg.function_max_arg_mb * 1024 * 1024),
                            retention=cfg.function_retention_s,
                            max_memo_bytes=int(cfg.function_memo_mb * 1024 * 1024),
                            max_ref_bytes=int(cfg.function_ref_max_mb * 1024 * 1024),
                            ref_timeout=cfg.function_ref_timeout_s,
                            ref_budget_bytes=int(cfg.function_ref_budget_mb * 1024 * 1024))
        host = FunctionHost(client, self.functions, self._node_name, limits=limits,
                            workers=cfg.function_workers, pool=cfg.function_pool,
                            validator=validator, fetch_cert=self._fetch_cert)
        previous = self.host
        if previous is not None:
            for key, value in previous.counters.items():
                host.counters[key] = host.counters.get(key, 0) + value
            for prefix, calls in previous.calls.items():
                if prefix in host.calls:
                    host.calls[prefix] += calls
        self.host = host
        self._task = _Stoppable()
        await nursery.start(self._task.run, host.run)
        log.info("hosting %s", ", ".join(f.prefix.to_uri() for f in self.functions))

    async def replace(self, functions: list[HostedFunction], nursery: trio.Nursery, validator: Validator,
                      socket_path: str) -> None:
        """Host `functions` instead (`Node.set_functions`): the old host stops first, then a new one serves."""
        if self._task is not None:
            await self._task.stop()
            self._task = None
        self.functions = list(functions)
        if functions:
            await self.start(nursery, validator, socket_path)

    def counters(self) -> dict[str, int]:
        """The host's counters for the node's status (zeros before a host ran)."""
        return dict(self.host.counters) if self.host is not None else dict.fromkeys(HOST_COUNTERS, 0)

    def tables(self) -> dict[str, int]:
        """The host's table sizes for the node's status (zeros before a host ran)."""
        return self.host.tables() if self.host is not None else dict.fromkeys(HOST_TABLES, 0)


class _Stoppable:
    """A task of the node's nursery that can be stopped alone, and waited for until it has ended."""

    def __init__(self) -> None:
        self._scope = trio.CancelScope()
        self._ended = trio.Event()

    async def run(self, fn: Callable[..., Any], *,
                  task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            with self._scope:
                await fn(task_status=task_status)
        finally:
            self._ended.set()

    async def stop(self) -> None:
        self._scope.cancel()
        await self._ended.wait()
