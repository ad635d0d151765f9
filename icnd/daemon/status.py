"""What a node reports about itself: the status roll-up, and the narrow view its status page reads.

`roll_up` makes the node's status report (``status/get``, ``icnd status
--json``, ``/node/<me>/status``, the status page): its name and addresses,
every counter of its parts summed into one flat table, and the size of each
of its tables.  It reads the node through `StatusSources`, the parts it sums.

`StatusView` is all the status page and ``/metrics`` (`icnd.daemon.http`)
read of a node: its status report, and the tables they list a few rows of,
as the managers get only the tables they serve.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import trio

from icnd.version import __version__
from icnd.core.fw.forwarder import Forwarder
from icnd.core.routing.router import Router
from icnd.core.tables.fib import Fib
from icnd.core.tables.rib import Rib
from icnd.daemon.containment import HandlerErrors
from icnd.daemon.faces import FaceTable
from icnd.daemon.functions import NodeFunctions
from icnd.daemon.mgmt.functions import FunctionReports
from icnd.daemon.mgmt.results import ResultHandOver
from icnd.daemon.producers import KeylessSigning
from icnd.daemon.routing import RoutingShell
from icnd.faces import Listener
from icnd.name import Name
from icnd.objects.service import ObjectService
from icnd.reduction.aggregate import Aggregator, AstEntry
from icnd.reduction.contrib import ContributionStore, GroupTable
from icnd.security import Ed25519Key

Status = dict[str, Any]


class HttpCounters(Protocol):
    """The status page's server as the report reads it: its counters and its address."""

    @property
    def counters(self) -> Mapping[str, int]: ...

    @property
    def url(self) -> str: ...


class StatusSources(Protocol):
    """The parts of a node (`icnd.daemon.node.Node`) whose figures `roll_up` reports."""

    @property
    def name(self) -> Name: ...
    @property
    def key(self) -> Ed25519Key: ...
    @property
    def socket_path(self) -> str: ...
    @property
    def started_at(self) -> float: ...
    @property
    def fw(self) -> Forwarder: ...
    @property
    def faces(self) -> FaceTable: ...
    @property
    def listeners(self) -> Sequence[Listener]: ...
    @property
    def handler_errors(self) -> HandlerErrors: ...
    @property
    def mgmt_commands(self) -> int: ...
    @property
    def aggregator(self) -> Aggregator: ...
    @property
    def contrib(self) -> ContributionStore: ...
    @property
    def groups(self) -> GroupTable: ...
    @property
    def keyless_signing(self) -> KeylessSigning: ...
    @property
    def results(self) -> ResultHandOver: ...
    @property
    def routing(self) -> RoutingShell | None: ...
    @property
    def published(self) -> ObjectService: ...
    @property
    def functions(self) -> NodeFunctions: ...
    @property
    def function_reports(self) -> FunctionReports: ...
    @property
    def config_reloads(self) -> int: ...
    @property
    def config_reload_errors(self) -> int: ...
    @property
    def http(self) -> HttpCounters | None: ...

    def listen_uris(self) -> list[str]: ...
    def ndn_listen_uris(self) -> list[str]: ...


def roll_up(node: StatusSources) -> Status:
    """The node's status report (module docstring)."""
    fw = node.fw
    counters = fw.counters.as_dict()
    counters["mgmt_commands"] = node.mgmt_commands
    counters.update(node.handler_errors.as_counters())
    counters["rib_refused"] = fw.rib.refused
    counters.update(node.aggregator.counters)
    counters.update(node.contrib.counters)
    counters.update(node.groups.counters)
    counters["cs_evicted_unverified"] = fw.cs.evicted_unverified
    counters.update(node.keyless_signing.counters)
    counters.update(node.results.counters)
    for listener in node.listeners:  # connection and reassembly refusals
        for key, value in listener.listener_counters().items():
            counters[key] = counters.get(key, 0) + value
    tables = fw.table_sizes()
    tables["faces"] = len(node.faces)
    routing = node.routing
    if routing is not None:
        router = routing.router
        for key, value in router.counters.items():
            counters[f"routing_{key}"] = value
        for key, value in routing.counters.items():
            counters[f"routing_{key}"] = value
        tables["lsdb_entries"] = len(router.lsdb)
        tables["lsdb_bytes"] = router.lsdb.bytes_used
        tables["routing_neighbors_up"] = sum(1 for nb in router.neighbors.values() if nb.up)
    tables["dead_nonces"] = len(fw.dnl)
    repo = node.published.repo
    objects = node.published.objects
    tables["repo_entries"] = len(repo)
    tables["repo_bytes"] = repo.bytes_used
    tables["objects"] = len(objects)
    tables["object_bytes"] = objects.bytes_used
    counters.update(objects.counters)
    tables.update(node.contrib.stats(trio.current_time()))
    counters.update(node.functions.counters())
    counters["config_reloads"] = node.config_reloads
    counters["config_reload_errors"] = node.config_reload_errors
    counters.update(node.function_reports.counters)
    tables.update(node.functions.tables())
    tables.update(node.results.tables())
    http = node.http
    if http is not None:
        counters.update(http.counters)
    return {
        "name": node.name.to_uri(),
        "version": __version__,
        "uptime_s": round(time.time() - node.started_at, 3),
        "pid": os.getpid(),
        "socket": os.path.abspath(node.socket_path),
        "listen": node.listen_uris(),
        "ndn_listen": node.ndn_listen_uris(),
        "http": http.url if http is not None else None,
        "key": node.key.name.to_uri() if node.key.name is not None else None,
        "counters": counters,
        "tables": tables,
    }


@dataclass(frozen=True)
class StatusView:
    """What the status page and ``/metrics`` read of a node (module docstring)."""

    status: Callable[[], Status]  # the node's status report (`roll_up`)
    faces: FaceTable
    rib: Rib
    fib: Fib  # its size: one entry per routed prefix
    reductions: Mapping[tuple[bytes, ...], AstEntry]  # the aggregator's entries
    groups: GroupTable
    router: Router | None  # link-state routing's, if the node routes
    functions: NodeFunctions  # the node's own hosted functions (``--function``)
    function_reports: FunctionReports  # those local applications report hosting
