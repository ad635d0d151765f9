"""Simulate a topology in one process on a virtual clock (interface §6).

``icnd topo sim FILE [--fetch FROM TO ...] [--scenario FILE] [--json]`` and
``icnd.topology.simulate(...)`` run the real forwarding core (one `Forwarder`
per node, `icnd.sim`) with in-memory faces shaped by the link model (delay,
loss, bandwidth, cuts), every packet encoded and decoded, on a virtual clock:
the same code as the daemon, for topologies far larger than a machine can
host as processes, and deterministic for a given seed.

What gets built, for a `TopologySpec` (or the path of a topology file):

- one node per topology node, with its faces created in the spec's link
  order (so equal-cost next hops break ties the same way on every run);
- on each node a producer application serving the node prefix
  ``/node/<name>``: ``/node/<name>/ping...`` answers an empty Data
  (freshness 0), like a daemon; any other name under the prefix answers a test object of
  ``object_size`` bytes (freshness one hour, DigestSha256-signed), so
  ``/node/<TO>/sim/object`` -- the default test object -- exists at every
  node;
- one link per topology link with its ``delay_ms``, ``loss`` and
  ``bandwidth_mbps`` (one `LinkModel` per direction, loss seeds derived from
  ``seed``);
- the routes of `derive_routes` (``cost`` from the links), chosen by
  ``routes=``: ``"full"`` installs every derived route, as the process
  launcher does; ``"destinations"`` only those toward the fetch
  destinations (``derive_routes(spec, destinations=...)``); ``"lazy"``
  computes a node's routes toward ``/node/X`` the first time that node looks
  one up (`RouteOracle`), which gives exactly the FIB entries ``"full"``
  would for every name the simulation meets, at a fraction of the cost;
  ``"link-state"`` runs the routing protocol instead (`icnd.sim.routing`:
  every node's router on the virtual clock, announcing ``/node/<name>``
  and its function prefixes, as `originated_prefixes` lists them);
  ``"auto"`` (default) follows the topology's ``routing``: ``"link-state"``
  for a link-state topology (the default), else ``"full"`` up to
  `FULL_ROUTES_MAX_NODES` nodes and ``"lazy"`` above;
- as the launcher does, the ``load-balance`` strategy on every node for
  every function prefix that gets derived routes (``"full"`` and
  ``"destinations"``; ``"lazy"`` derives only node prefixes), set again on a
  restarted node.

Fetches behave like ``icnd fetch`` (the client library): a new consumer
face per fetch (left open afterwards: closing it would only tidy tables,
never change a counter, and costs a scan of the FIB and PIT), InterestLifetime ``timeout_s``, a retransmission with a
fresh nonce every ``retx_s`` while the timeout allows, failure on a Nack or
at the timeout.  The hop limit is the client's default (32), raised to 255
when the topology has more than 32 nodes so long paths are not cut short.
``fetches`` run one after the other from time 0 (each starts when the
previous one ends, so a later fetch can hit caches an earlier one filled);
scenario steps run at their own times.  The simulation stops when every
fetch has ended and every step has run, or at ``until`` (seconds of
simulated time; fetches still running then fail as ``unfinished``).

With link-state routing, ``fetches`` start once routes have converged
(`icnd.sim.routing` defines when routes are consistent), failure steps are
noticed by the protocol (hellos), and the simulation also waits until
routes are consistent again after each failure step (a simulation that has
not converged `ROUTING_HORIZON_S` after its last step stops there); then it
runs ``steady_s`` more virtual seconds to measure the steady-state routing
traffic.  The report's ``routing`` section
(`icnd.sim.routing.routing_report`) gives the convergence time, the routing
messages, bytes and route computations per node, each failure's
re-convergence time and the steady-state traffic.

A scenario is a list of timed steps, given as tuples, mappings, or the path
of a TOML file::

    # tuples (time last)               TOML ([[step]] tables, in any order)
    ("kill", "n11", 1.0)               [[step]]
    ("restart", "n11", 5.0)            at = 1.0
    ("cut", "n00", "n01", 2.0)         action = "kill"
    ("heal", "n00", "n01", 3.0)        node = "n11"
    ("fetch", "n00", "n22", 2.5)
    ("fetch", "n00", "n22", 2.5, "b")  [[step]]
                                       at = 2.0
                                       action = "cut"      # or "heal"
                                       ends = ["n00", "n01"]

                                       [[step]]
                                       at = 2.5
                                       action = "fetch"
                                       from = "n00"
                                       to = "n22"
                                       object = "b"        # optional

- ``kill NODE``: the node crashes: packets reaching it vanish; its
  neighbours keep their faces and routes (as with a daemon reached over UDP).
- ``restart NODE``: it comes back with empty PIT, Content Store and
  counters, and the same faces and routes.
- ``cut A B`` / ``heal A B``: the link goes down (packets in flight lost) /
  up again; routes are unchanged.
- ``fetch FROM TO [OBJECT]``: FROM fetches ``/node/TO/<OBJECT>`` (default
  ``object_name``, i.e. ``sim/object``), concurrently with anything else.

Steps at the same time run in the order given.  A step naming an unknown
node, an action that does not exist or a cut of two nodes that are not
linked raises `ScenarioError` (a ``ValueError``): ``"<source>: step[i]:
<problem>"``.

The result is a `SimReport`: per fetch (`FetchResult`) whether it got Data,
its simulated RTT, the path its Data took from the consumer's node to the
node that answered (a producer or a Content Store -- ``cache_hit``) and the
hop count (links crossed); simulated and wall time; packets delivered; and
the counters of every forwarder.  `format_report` renders it for people,
`report_json` as a JSON-ready dict; ``report.exit_code`` is 0 when every
fetch succeeded, else 1 (the CLI's exit status).  The report and its
formatting live in `icnd.sim.report` (re-exported here).

`simulate` runs in steps: the network built from the topology
(`_build_network`), routes installed or the routing protocol set up, a
producer on every node, then `_Run` schedules the steps and fetches
(`_Run.start`), runs the event loop (`_Run.run`) and the report is made of
what it recorded.
"""

from __future__ import annotations

import math
import os
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icnd.core.routing import RouterConfig
from icnd.core.tables.fib import Fib, FibEntry
from icnd.core.tables.rib import Rib
from icnd.core.fw.forwarder import Forwarder
from icnd.faces.link import LinkParams as LinkModelParams
from icnd.errors import Error
from icnd.name import Name
from icnd.packet import DEFAULT_HOP_LIMIT, Data, Interest, Nack, NackReason
from icnd.security import make_data
from icnd.sim.network import Fetch, SimApp, SimNetwork
from icnd.sim.report import FetchResult, SimReport, format_report, format_routing, report_json
from icnd.sim.routing import ConvergenceLog, SimRouting, routing_report, steady_traffic
from icnd.topology.routes import (FUNCTION_STRATEGY, RouteOracle, derive_routes, function_route_prefixes,
                                  originated_prefixes)
from icnd.topology.spec import TopologySpec, load, node_prefix, parse

__all__ = [
    "DEFAULT_OBJECT",
    "FULL_ROUTES_MAX_NODES",
    "ROUTING_HORIZON_S",
    "FetchResult",
    "ScenarioError",
    "SimReport",
    "Step",
    "format_report",
    "format_routing",
    "grid_spec",
    "load_scenario",
    "report_json",
    "simulate",
]

DEFAULT_OBJECT = "sim/object"
"""The test object's name under ``/node/<TO>/``."""

FULL_ROUTES_MAX_NODES = 100
"""``routes="auto"`` installs every derived route up to this many nodes, else derives lazily."""

OBJECT_FRESHNESS_MS = 3_600_000
ACTIONS = ("kill", "restart", "cut", "heal", "fetch")
FAILURES = ("kill", "restart", "cut", "heal")  # the steps whose re-convergence link-state routing reports
ROUTE_MODES = ("auto", "link-state", "full", "destinations", "lazy")
ROUTING_HORIZON_S = 300.0
"""Link-state: a simulation still waiting for routes to converge this long after its
last step (virtual seconds) stops there (its unstarted fetches fail as unfinished)."""
_NODE_COMP = Name("/node").comps[0]
_MAX_HOP_LIMIT = 255


class ScenarioError(Error, ValueError):
    """A scenario step is invalid; ``str(err)`` is ``"<source>: <entry>: <problem>"``."""

    def __init__(self, source: str, entry: str, problem: str) -> None:
        super().__init__(f"{source}: {entry}: {problem}")
        self.source, self.entry, self.problem = source, entry, problem


@dataclass(frozen=True)
class Step:
    """One scenario step: at ``at`` seconds, ``action`` on ``nodes``.

    ``nodes`` is ``(node,)`` for kill/restart, ``(a, b)`` for cut/heal and
    ``(from, to)`` for fetch; ``object`` is the fetch's object name (None:
    the default).
    """

    at: float
    action: str
    nodes: tuple[str, ...]
    object: str | None = None

    def describe(self) -> str:
        if self.action in ("cut", "heal"):
            what = "-".join(self.nodes)
        elif self.action == "fetch":
            what = f"{self.nodes[0]} -> {self.nodes[1]}" + (f" ({self.object})" if self.object else "")
        else:
            what = self.nodes[0]
        return f"{self.action} {what}"


# --------------------------------------------------------------------------- topologies


def grid_spec(rows: int, cols: int, *, delay_ms: float = 0, loss: float = 0.0, bandwidth_mbps: float = 0,
              source: str | None = None, routing: str = "link-state") -> TopologySpec:
    """A ``rows`` x ``cols`` grid: node ``r{R}c{C}`` linked to its right and lower neighbours;
    ``routing`` is the topology's routing mode, as in a file (default: link-state)."""
    if rows < 1 or cols < 1:
        raise ValueError(f"a grid needs at least one row and one column, got {rows}x{cols}")
    nodes: dict[str, dict[str, Any]] = {f"r{r}c{c}": {} for r in range(rows) for c in range(cols)}
    links = []
    for r in range(rows):
        for c in range(cols):
            if c + 1 < cols:
                links.append({"ends": [f"r{r}c{c}", f"r{r}c{c + 1}"]})
            if r + 1 < rows:
                links.append({"ends": [f"r{r}c{c}", f"r{r + 1}c{c}"]})
    data = {"routing": routing, "defaults": {"delay_ms": delay_ms, "loss": loss, "bandwidth_mbps": bandwidth_mbps},
            "nodes": nodes, "links": links}
    return parse(data, source or f"<grid {rows}x{cols}>")


# --------------------------------------------------------------------------- scenarios


def load_scenario(scenario: Any, spec: TopologySpec | None = None) -> list[Step]:
    """Normalize a scenario (path of a TOML file, ``{"step": [...]}``, or a list
    of tuples / mappings / `Step`) into `Step` objects sorted by time (stable).

    With ``spec``, node names and links are checked against the topology.
    """
    source = "<scenario>"
    if isinstance(scenario, (str, os.PathLike)):
        source = os.fspath(scenario)
        try:
            with open(source, "rb") as fh:
                data: Any = tomllib.load(fh)
        except OSError as exc:
            raise ScenarioError(source, "file", f"cannot read: {exc.strerror or exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError(source, "toml", f"invalid TOML: {exc}") from exc
    else:
        data = scenario
    if isinstance(data, Mapping):
        unknown = [k for k in data if k != "step"]
        if unknown:
            raise ScenarioError(source, str(unknown[0]), "unknown key (a scenario is a list of [[step]] tables)")
        data = data.get("step", [])
    if not isinstance(data, Sequence) or isinstance(data, (str, bytes)):
        raise ScenarioError(source, "step", f"must be a list of steps, got {type(data).__name__}")
    steps = [_step(item, source, f"step[{i}]", spec) for i, item in enumerate(data)]
    return sorted(steps, key=lambda s: s.at)


def _step(item: Any, source: str, entry: str, spec: TopologySpec | None) -> Step:
    def fail(problem: str, where: str = "") -> ScenarioError:
        return ScenarioError(source, f"{entry}.{where}" if where else entry, problem)

    if isinstance(item, Step):
        step = item
    elif isinstance(item, Mapping):
        action = item.get("action")
        if action not in ACTIONS:
            raise fail(f"action must be one of {', '.join(ACTIONS)}, got {action!r}", "action")
        allowed = ("at", "action", *_KEYS[action])
        for key in item:
            if key not in allowed:
                raise fail(f"unknown key for {action} (allowed: {', '.join(allowed)})", str(key))
        if "at" not in item:
            raise fail("missing at = SECONDS")
        if action in ("kill", "restart"):
            nodes: tuple[Any, ...] = (item.get("node"),)
        elif action in ("cut", "heal"):
            ends = item.get("ends")
            if not isinstance(ends, list) or len(ends) != 2:
                raise fail(f"must list exactly two nodes, got {ends!r}", "ends")
            nodes = tuple(ends)
        else:
            nodes = (item.get("from"), item.get("to"))
        step = Step(item["at"], action, nodes, item.get("object"))
    elif isinstance(item, (tuple, list)) and item:
        action = item[0]
        if action not in ACTIONS:
            raise fail(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
        arity = {"kill": 1, "restart": 1, "cut": 2, "heal": 2, "fetch": 2}[action]
        obj = None
        if action == "fetch" and len(item) == arity + 3:
            obj = item[-1]
            item = item[:-1]
        if len(item) != arity + 2:
            form = {"kill": "NODE, AT", "restart": "NODE, AT", "cut": "A, B, AT", "heal": "A, B, AT",
                    "fetch": "FROM, TO, AT[, OBJECT]"}[action]
            raise fail(f"expected ({action!r}, {form}), got {tuple(item)!r}")
        step = Step(item[-1], action, tuple(item[1:-1]), obj)
    else:
        raise fail(f"a step is a tuple, a table or a Step, got {type(item).__name__}")

    at = step.at
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at) or at < 0:
        raise fail(f"must be a number of seconds >= 0, got {at!r}", "at")
    for node in step.nodes:
        if not isinstance(node, str):
            raise fail(f"node names must be strings, got {node!r}")
        if spec is not None and node not in spec.nodes:
            raise fail(_unknown_node(node, spec))
    if step.action in ("cut", "heal"):
        a, b = step.nodes
        if spec is not None and spec.link(a, b) is None:
            raise fail(f"no link between {a!r} and {b!r}", "ends")
    if step.object is not None and not isinstance(step.object, str):
        raise fail(f"must be a string, got {step.object!r}", "object")
    return Step(float(at), step.action, tuple(step.nodes), step.object)


_KEYS = {"kill": ("node",), "restart": ("node",), "cut": ("ends",), "heal": ("ends",),
         "fetch": ("from", "to", "object")}


# --------------------------------------------------------------------------- the simulation


class _LazyFib(Fib):
    """A FIB that installs a node's derived routes toward ``/node/X`` on first lookup.

    It writes those next hops itself, outside its node's RIB (`Forwarder.use_rib`):
    the RIB only ever writes the (prefix, face) pairs it has routes for, so the
    applications' routes it adds and these derived ones coexist."""

    def __init__(self, node: str, oracle: RouteOracle, faces: dict[str, int],
                 prefixes: dict[bytes, tuple[str, Name]], clock: list[float]) -> None:
        super().__init__()
        self._node, self._oracle, self._faces, self._prefixes = node, oracle, faces, prefixes
        self._clock = clock  # [seconds spent deriving routes], shared by every node
        self._installed: set[bytes] = set()

    def longest_match(self, comps: tuple[bytes, ...]) -> FibEntry | None:
        if len(comps) >= 2 and comps[0] == _NODE_COMP:
            dest = comps[1]
            if dest not in self._installed:
                self._installed.add(dest)
                known = self._prefixes.get(dest)
                if known is not None:
                    t0 = time.perf_counter()
                    prefix, name = known
                    for route in self._oracle.routes(self._node, prefix):
                        self.add(name, self._faces[route.via], route.cost)
                    self._clock[0] += time.perf_counter() - t0
        return Fib.longest_match(self, comps)


class _Producer:
    """Answers every Interest under a node's prefix (see the module docstring)."""

    def __init__(self, app: SimApp, prefix: Name, object_size: int) -> None:
        self.app = app
        self.ping = prefix.append("ping")
        self.object_size = object_size
        self._made: dict[Name, Data] = {}
        app.serve(prefix, self)

    def __call__(self, interest: Interest) -> Data:
        name = interest.name
        data = self._made.get(name)
        if data is None:
            if self.ping.is_prefix_of(name):
                data = make_data(name, b"", freshness_ms=0)
            else:
                seed = name.to_uri().encode()
                content = (seed * (self.object_size // max(len(seed), 1) + 1))[: self.object_size]
                data = make_data(name, content, freshness_ms=OBJECT_FRESHNESS_MS)
            self._made[name] = data
        return data


def _object_suffix(obj: str | None) -> str:
    obj = DEFAULT_OBJECT if obj is None else obj
    obj = obj.strip("/")
    if not obj:
        raise ValueError("the object name must not be empty")
    return obj


class _Run:
    """The fetches and steps of one simulation, and their results."""

    def __init__(self, net: SimNetwork, *, timeout_s: float, retx_s: float, hop_limit: int,
                 object_name: str, function_prefixes: list[Name], routing: SimRouting | None) -> None:
        self.net = net
        self.lifetime_ms = max(1, int(round(timeout_s * 1000)))
        self.retx_ms = max(1, int(round(retx_s * 1000)))
        # like the client: retransmit every retx_s while the timeout allows
        self.retries = max(0, math.ceil(timeout_s / retx_s - 1e-9) - 1)
        self.hop_limit = hop_limit
        self.object_name = object_name
        self.results: list[FetchResult] = []
        self.running: list[tuple[FetchResult, Fetch]] = []
        self.outstanding = 0
        self.steps_done: list[dict[str, Any]] = []
        self.plain: list[tuple[str, str, str | None]] = []  # the fetches one after the other (`start`)
        self.plain_started = 0
        self.steps: list[Step] = []
        self.step_fetches_started = 0
        self.function_prefixes = function_prefixes  # set to FUNCTION_STRATEGY on every (restarted) node
        self.routing = routing  # link-state: the protocol, and when it converged
        self.log = ConvergenceLog(routing) if routing is not None else None
        self.run_wall_s = 0.0  # wall-clock seconds of the event loop (`run`)

    def start(self, plain: list[tuple[str, str, str | None]], steps: list[Step], until: float | None) -> None:
        """Schedule the steps and the fetches: from time 0, or, under link-state routing, from when
        routes are consistent (each failure step then waits for them again)."""
        net = self.net
        self.plain, self.steps = plain, steps
        self.outstanding = len(plain) + len(steps)
        for step in steps:
            self.schedule(step)
        routing, log = self.routing, self.log
        if routing is not None and log is not None:
            self.outstanding += 1 + sum(s.action in FAILURES for s in steps)

            def converged() -> None:
                if plain:
                    self.chain(plain)
                self.finished_one()

            log.converged(converged)
            routing.start()
            if until is None:
                net.at(max((s.at for s in steps), default=0.0) + ROUTING_HORIZON_S,
                       lambda: net.stop() if log.waiting else None)
        elif plain:
            self.chain(plain)

    def run(self, until: float | None) -> None:
        """Run the event loop until everything finished (or `until`)."""
        net = self.net
        run0 = time.perf_counter()
        if self.outstanding or until is not None:
            net.run(until=until)
        self.run_wall_s = time.perf_counter() - run0
        if until is not None and self.outstanding:
            net.now = max(net.now, until)
        for result, fetch in self.running:
            if not fetch.finished:  # stopped by `until`
                result.attempts = fetch.attempts

    def never_started(self) -> list[FetchResult]:
        """Placeholders (``error="unfinished"``) for fetches the simulation stopped before starting."""
        out = [FetchResult(src, dst, self.name_for(dst, obj).to_uri(), started_s=math.nan)
               for src, dst, obj in self.plain[self.plain_started:]]
        fetch_steps = [s for s in self.steps if s.action == "fetch"]
        out += [FetchResult(s.nodes[0], s.nodes[1], self.name_for(s.nodes[1], s.object).to_uri(), started_s=s.at)
                for s in fetch_steps[self.step_fetches_started:]]
        return out

    def name_for(self, dst: str, obj: str | None) -> Name:
        return Name(f"{node_prefix(dst)}/{_object_suffix(obj) if obj is not None else self.object_name}")

    def start_fetch(self, src: str, dst: str, obj: str | None, then: Callable[[], None] | None = None) -> None:
        net = self.net
        node = net.nodes[src]
        name = self.name_for(dst, obj)
        result = FetchResult(src, dst, name.to_uri(), started_s=net.now)
        self.results.append(result)
        app = SimApp(node)
        app.keep_received = False

        def done(fetch: Fetch) -> None:
            self._record(result, fetch)
            self.finished_one()
            if then is not None:
                then()

        fetch = app.fetch(name, lifetime_ms=self.lifetime_ms, retries=self.retries, retx_ms=self.retx_ms,
                          hop_limit=self.hop_limit, on_done=done)
        self.running.append((result, fetch))

    @staticmethod
    def _record(result: FetchResult, fetch: Fetch) -> None:
        result.attempts = fetch.attempts
        result.rtt_s = fetch.rtt
        packet = fetch.result
        if isinstance(packet, Data):
            path = fetch.path or []
            result.ok, result.error = True, None
            result.path = path
            result.hops = len(path) - 1 if path else None
            result.served_by = path[-1] if path else None
            result.cache_hit = fetch.origin == "cs"
        elif isinstance(packet, Nack):
            reason = packet.reason
            result.error = f"nack {reason.label if isinstance(reason, NackReason) else reason}"
        else:
            result.error = "timeout"

    def finished_one(self) -> None:
        self.outstanding -= 1
        if self.outstanding == 0:
            self.net.stop()

    def chain(self, fetches: list[tuple[str, str, str | None]]) -> None:
        """Run ``fetches`` one after the other, from now."""
        todo = iter(fetches)

        def next_one() -> None:
            item = next(todo, None)
            if item is not None:
                src, dst, obj = item
                self.plain_started += 1
                self.start_fetch(src, dst, obj, then=next_one)

        self.net.at(self.net.now, next_one)

    def schedule(self, step: Step) -> None:
        net = self.net

        def run() -> None:
            self.steps_done.append({"at": net.now, "action": step.action, "nodes": list(step.nodes),
                                    **({"object": step.object} if step.object else {})})
            if step.action == "fetch":
                self.step_fetches_started += 1
                self.start_fetch(step.nodes[0], step.nodes[1], step.object)
                return
            if self.routing is not None and self.log is not None:  # the protocol notices, by hellos
                self.log.failure(step.action, step.nodes, self.finished_one)
                getattr(self.routing, step.action)(*step.nodes)
                if step.action == "restart":
                    _set_strategies(net.nodes[step.nodes[0]].fw, self.function_prefixes)
            elif step.action == "kill":
                net.kill(step.nodes[0])
            elif step.action == "restart":
                net.restart(step.nodes[0])
                _set_strategies(net.nodes[step.nodes[0]].fw, self.function_prefixes)
            elif step.action == "cut":
                net.cut(*step.nodes)
            elif step.action == "heal":
                net.heal(*step.nodes)
            self.finished_one()

        net.at(step.at, run)


def _unknown_node(node: str, spec: TopologySpec, shown: int = 12) -> str:
    """``unknown node 'x' (nodes: a, b, ...)``: the valid names, the first `shown` of a large topology."""
    names = list(spec.nodes)
    more = f", ... ({len(names)} in all)" if len(names) > shown else ""
    return f"unknown node {node!r} (nodes: {', '.join(names[:shown])}{more})"


def _normalize_fetches(fetches: Iterable[Sequence[str]], spec: TopologySpec) -> list[tuple[str, str, str | None]]:
    out = []
    for i, item in enumerate(fetches):
        if isinstance(item, (str, bytes)) or len(item) not in (2, 3):
            raise ValueError(f"fetch {i}: expected (FROM, TO) or (FROM, TO, OBJECT), got {item!r}")
        src, dst = item[0], item[1]
        for node in (src, dst):
            if node not in spec.nodes:
                raise ValueError(f"fetch {src} -> {dst}: {_unknown_node(node, spec)} in {spec.source}")
        obj = item[2] if len(item) == 3 else None
        if obj is not None:
            _object_suffix(obj)
        out.append((src, dst, obj))
    return out


def simulate(
    spec_or_path: TopologySpec | str | os.PathLike[str],
    fetches: Iterable[Sequence[str]] = (),
    *,
    seed: int = 0,
    object_name: str | None = None,
    until: float | None = None,
    scenario: Any = None,
    routes: str = "auto",
    timeout_s: float = 4.0,
    retx_s: float = 1.0,
    object_size: int = 1024,
    hop_limit: int | None = None,
    forwarder_options: Mapping[str, Any] | None = None,
    routing_config: RouterConfig | None = None,
    steady_s: float = 10.0,
) -> SimReport:
    """Simulate ``spec_or_path`` and run ``fetches`` and ``scenario`` on it.

    ``fetches``: ``(FROM, TO)`` pairs (or ``(FROM, TO, OBJECT)``): FROM
    fetches ``/node/TO/<object_name>`` (default ``sim/object``), one after
    the other from time 0 (link-state: from when routes converged).
    ``scenario``: timed steps (see the module docstring), a list or the
    path of a TOML file.  ``until``: stop at this simulated time even if
    fetches are still running.  ``routes``: ``"auto"``, ``"link-state"``,
    ``"full"``, ``"destinations"`` or ``"lazy"``.  ``timeout_s`` /
    ``retx_s``: each fetch's timeout (also the Interest lifetime) and
    retransmission interval, the client's defaults.  Link-state only:
    ``routing_config``, every router's `RouterConfig` (default: the
    daemon's defaults); ``steady_s``, the quiet window measured at the end
    (0: none).
    Raises `TopologyError` for a bad topology file, `ScenarioError` for a
    bad scenario and ``ValueError`` for a fetch naming an unknown node.
    """
    wall0 = time.perf_counter()
    spec = spec_or_path if isinstance(spec_or_path, TopologySpec) else load(spec_or_path)
    plain = _normalize_fetches(fetches, spec)
    steps = load_scenario(scenario, spec) if scenario is not None else []
    routes = _route_mode(routes, spec)
    if not steady_s >= 0:
        raise ValueError("steady_s must be >= 0")
    if not timeout_s > 0 or not retx_s > 0:
        raise ValueError("timeout_s and retx_s must be > 0")
    if object_size < 0:
        raise ValueError("object_size must be >= 0")
    if hop_limit is None:
        hop_limit = DEFAULT_HOP_LIMIT if len(spec.nodes) <= DEFAULT_HOP_LIMIT else _MAX_HOP_LIMIT

    net = _build_network(spec, seed, forwarder_options)
    route_clock = [0.0]
    routing: SimRouting | None = None
    if routes == "link-state":
        routing = SimRouting(net, originated_prefixes(spec), costs={frozenset(l.ends): l.cost for l in spec.links},
                             config=routing_config)
        function_prefixes = [Name(p) for p in sorted({p for n in spec.nodes.values() for p in n.function_prefixes})]
        for node in net.nodes.values():
            _set_strategies(node.fw, function_prefixes)
    else:
        faces = {name: {peer.name: face for face, (_, peer, _) in node.peers.items()}
                 for name, node in net.nodes.items()}
        function_prefixes = _install_routes(spec, net, faces, routes, plain, steps, route_clock)
    for name, node in net.nodes.items():
        _Producer(SimApp(node), Name(node_prefix(name)), object_size)

    run = _Run(net, timeout_s=timeout_s, retx_s=retx_s, hop_limit=hop_limit,
               object_name=_object_suffix(object_name), function_prefixes=function_prefixes, routing=routing)
    run.start(plain, steps, until)
    setup_routes_s = route_clock[0]
    run.run(until)
    lazy_routes_s = route_clock[0] - setup_routes_s
    routing_section = _routing_section(run, steady_s, until)  # its quiet window moves the clock on
    return SimReport(
        topology=spec.source,
        node_count=len(spec.nodes),
        link_count=len(spec.links),
        seed=seed,
        routes=routes,
        fetches=run.results + run.never_started(),
        sim_time_s=net.now,
        wall_s=time.perf_counter() - wall0,
        run_wall_s=run.run_wall_s,
        routes_s=route_clock[0],
        forwarding_wall_s=max(run.run_wall_s - lazy_routes_s, 0.0),
        packets=net.packets_delivered,
        events=net.events,
        counters={name: node.fw.counters.as_dict() for name, node in net.nodes.items()},
        dead=[name for name, node in net.nodes.items() if not node.alive],
        links={f"{l.a.name}-{l.b.name}": l.stats() for l in net.links},
        steps=run.steps_done,
        routing=routing_section,
    )


def _route_mode(routes: str, spec: TopologySpec) -> str:
    """The routing mode ``routes`` names, ``"auto"`` resolved for `spec`."""
    if routes not in ROUTE_MODES:
        raise ValueError(f"routes must be one of {', '.join(ROUTE_MODES)}, got {routes!r}")
    if routes == "auto" and spec.routing == "link-state":
        return "link-state"
    if routes == "auto":
        return "full" if len(spec.nodes) <= FULL_ROUTES_MAX_NODES else "lazy"
    return routes


def _build_network(spec: TopologySpec, seed: int, forwarder_options: Mapping[str, Any] | None) -> SimNetwork:
    """One simulated node per node of `spec`, joined by its links' models."""
    net = SimNetwork(seed=seed, **dict(forwarder_options or {}))
    for name in spec.nodes:
        net.add_node(name)
    for link in spec.links:
        params = LinkModelParams(delay_ms=link.delay_ms, loss=link.loss, bandwidth_mbps=link.bandwidth_mbps)
        net.link(link.a, link.b, params=params)
    return net


def _routing_section(run: _Run, steady_s: float, until: float | None) -> dict[str, Any] | None:
    """Link-state: the report's routing section, with the quiet window measured after the last
    (re-)convergence; None under derived routes."""
    if run.routing is None or run.log is None:
        return None
    steady = None
    if not run.outstanding and steady_s > 0:
        steady = steady_traffic(run.routing, steady_s if until is None else min(steady_s, until - run.net.now))
    return routing_report(run.routing, run.log, steady)


def _install_routes(spec: TopologySpec, net: SimNetwork, faces: dict[str, dict[str, int]], mode: str,
                    plain: list[tuple[str, str, str | None]], steps: list[Step], clock: list[float]) -> list[Name]:
    """Install the routes; returns the function prefixes given `FUNCTION_STRATEGY`."""
    t0 = time.perf_counter()
    try:
        return _install(spec, net, faces, mode, plain, steps, clock)
    finally:
        clock[0] += time.perf_counter() - t0


def _set_strategies(fw: Forwarder, prefixes: list[Name]) -> None:
    for prefix in prefixes:
        fw.strategies.set(prefix, FUNCTION_STRATEGY)


def _install(spec: TopologySpec, net: SimNetwork, faces: dict[str, dict[str, int]], mode: str,
             plain: list[tuple[str, str, str | None]], steps: list[Step], clock: list[float]) -> list[Name]:
    if mode == "lazy":
        oracle = RouteOracle(spec)
        prefixes = {}
        for name in spec.nodes:
            prefix = node_prefix(name)
            pname = Name(prefix)
            prefixes[pname.comps[1]] = (prefix, pname)
        for name, node in net.nodes.items():
            node.fw.use_rib(Rib(_LazyFib(name, oracle, faces[name], prefixes, clock)))
        return []
    if mode == "full":
        table = derive_routes(spec)
    else:
        dests = {dst for _, dst, _ in plain} | {s.nodes[1] for s in steps if s.action == "fetch"}
        table = derive_routes(spec, destinations=[n for n in spec.nodes if n in dests])
    names: dict[str, Name] = {}
    for name, node_routes in table.items():
        fw = net.nodes[name].fw
        toward = faces[name]
        for route in node_routes:
            route_name = names.get(route.prefix)
            if route_name is None:
                route_name = names[route.prefix] = Name(route.prefix)
            fw.add_route(route_name, toward[route.via], route.cost)
    functions = [names[p] for p in function_route_prefixes(spec, table)]
    for node in net.nodes.values():
        _set_strategies(node.fw, functions)
    return functions
