"""Prometheus metrics of one node: a collector over its status report, read at scrape time.

Names (docs/management.md#http-status-page-and-metrics lists them):

- every counter of ``status --json`` (``counters``) as ``icnd_<counter>_total``;
- every table size (``tables``) as the gauge ``icnd_<table>``;
- each face's counters as ``icnd_face_<counter>_total{face, uri}`` and its
  state as ``icnd_face_up{face, uri}`` (1 or 0);
- with routing, ``icnd_routing_neighbor_up{neighbor, uri}``;
- each hosted function's ``icnd_function_calls_total{function}``,
  ``icnd_function_load{function}`` and ``icnd_function_capacity{function}``;
- ``icnd_uptime_seconds`` and ``icnd_info{name, version}``.

The collector keeps no state of its own and lives in a registry of its own
(never prometheus_client's global one: two nodes in one process, as tests
run them, must not mix), so a scrape is exactly the node's figures at that
moment, from the same functions the management commands answer with.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from icnd.daemon.mgmt.faces import FaceManager

if TYPE_CHECKING:
    from icnd.daemon.node import Node

PREFIX = "icnd_"
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")


def metric_name(key: str) -> str:
    """``icnd_<key>``, with anything a metric name cannot hold replaced by ``_``."""
    return PREFIX + _NOT_NAME.sub("_", key)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class NodeCollector(Collector):
    """The node's metrics (module docstring), computed at each `collect`."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def collect(self) -> Iterator[Metric]:
        node = self.node
        status = node.status()
        info = InfoMetricFamily("icnd", "the node's name and version")
        info.add_metric([], {"name": status["name"], "version": status["version"]})
        yield info
        yield GaugeMetricFamily("icnd_uptime_seconds", "seconds since the node started serving",
                                value=status["uptime_s"])
        counters = status["counters"]
        for key in sorted(counters):
            if _number(counters[key]):
                yield CounterMetricFamily(metric_name(key), f"status counter {key}", value=counters[key])
        taken = {metric_name(key) for key in counters}
        tables = status["tables"]
        for key in sorted(tables):
            if _number(tables[key]) and metric_name(key) not in taken:
                yield GaugeMetricFamily(metric_name(key), f"status table size {key}", value=tables[key])
        yield from self._faces()
        yield from self._routing()
        yield from self._functions()

    def _faces(self) -> Iterator[Metric]:
        info = FaceManager(self.node.faces).info
        faces = [info(face) for face in self.node.faces]
        up = GaugeMetricFamily("icnd_face_up", "1 while the face is up, 0 while a permanent face's peer is away",
                               labels=["face", "uri"])
        families: dict[str, CounterMetricFamily] = {}
        for face in faces:
            labels = [str(face["id"]), face["remote_uri"]]
            up.add_metric(labels, 1 if face["state"] == "up" else 0)
            for key, value in face["counters"].items():
                if not _number(value):
                    continue
                family = families.get(key)
                if family is None:
                    family = families[key] = CounterMetricFamily(
                        metric_name(f"face_{key}"), f"face counter {key}", labels=["face", "uri"])
                family.add_metric(labels, value)
        yield up
        yield from (families[key] for key in sorted(families))

    def _routing(self) -> Iterator[Metric]:
        routing = self.node.routing
        if routing is None:
            return
        up = GaugeMetricFamily("icnd_routing_neighbor_up", "1 while the routing adjacency with the neighbour is up",
                               labels=["neighbor", "uri"])
        for nb in routing.status()["neighbors"]:
            up.add_metric([nb["name"] or "", nb["uri"] or ""], 1 if nb["state"] == "up" else 0)
        yield up

    def _functions(self) -> Iterator[Metric]:
        host = self.node.function_host
        if host is None:
            return
        calls = CounterMetricFamily("icnd_function_calls", "calls to a hosted function", labels=["function"])
        load = GaugeMetricFamily("icnd_function_load", "a hosted function's calls running or queued",
                                 labels=["function"])
        capacity = GaugeMetricFamily("icnd_function_capacity", "calls a hosted function can run at once",
                                     labels=["function"])
        per_prefix = host.load()
        for f in host.functions:
            label = [f.prefix.to_uri()]
            calls.add_metric(label, host.calls.get(f.prefix, 0))
            cap, running = per_prefix.get(f.prefix, (0, 0))
            load.add_metric(label, running)
            capacity.add_metric(label, cap)
        yield calls
        yield load
        yield capacity


def metrics_registry(node: Node) -> CollectorRegistry:
    """A registry of its own holding the node's collector (what ``/metrics`` exposes)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(node))
    return registry
