"""Prometheus metrics of one node: a collector over its status report, read at scrape time.

Names (docs/management.md#http-status-page-and-metrics lists them):

- every counter of ``status --json`` (``counters``) as ``icnd_<counter>_total``;
- every table size (``tables``) as the gauge ``icnd_<table>``;
- each face's counters as ``icnd_face_<counter>_total{face, uri}`` and its
  state as ``icnd_face_up{face, uri}`` (1 or 0), for the first
  `MAX_FACE_SERIES` faces (the lowest ids: the neighbours' and the first
  applications'); the faces beyond are summed into one series
  ``{face="other", uri=""}`` (there ``icnd_face_up`` counts those up), so a
  scrape has a bounded size whatever faces peers make (one UDP packet per
  source port makes a face);
- with routing, ``icnd_routing_neighbor_up{neighbor, uri}``;
- each hosted function's ``icnd_function_calls_total{function}``,
  ``icnd_function_load{function}`` and ``icnd_function_capacity{function}``;
- ``icnd_uptime_seconds`` and ``icnd_info{name, version}``.

Each HELP line says what the figure counts (`icnd.daemon.http.help`).

The collector keeps no state of its own and is read on the node's loop
(`NodeCollector.collect`: bounded work, plain numbers); the exposition text
is made from what it collected in a worker thread (`exposition`), so a
scrape is exactly the node's figures at that moment, from the same
functions the management commands answer with.  Nothing goes into
prometheus_client's global registry: two nodes in one process, as tests run
them, must not mix.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import fields
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from icnd.daemon.http.help import describe
from icnd.daemon.http.page import neighbor_rows
from icnd.faces import Face, FaceCounters, PermanentFace

if TYPE_CHECKING:
    from icnd.daemon.status import StatusView

PREFIX = "icnd_"
MAX_FACE_SERIES = 256  # faces with series of their own; the rest are summed into face="other"
MAX_NEIGHBOR_SERIES = 256
OTHER_FACES = ["other", ""]  # the (face, uri) labels of the faces beyond MAX_FACE_SERIES
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")
_FACE_COUNTERS = tuple(f.name for f in fields(FaceCounters))
_face_counters = attrgetter("counters")
_counter_values = attrgetter(*_FACE_COUNTERS)


def metric_name(key: str) -> str:
    """``icnd_<key>``, with anything a metric name cannot hold replaced by ``_``."""
    return PREFIX + _NOT_NAME.sub("_", key)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class NodeCollector(Collector):
    """The node's metrics (module docstring): `read` on the node's loop, `families` anywhere."""

    def __init__(self, node: StatusView) -> None:
        self.node = node

    def collect(self) -> Iterator[Metric]:
        return iter(families(self.read()))

    def read(self) -> dict[str, Any]:
        """The node's figures as plain values, with bounded work (at most `MAX_FACE_SERIES` faces
        read one by one; the rest summed counter by counter in C, with no row per face)."""
        node = self.node
        faces = node.faces.faces  # by id, in id order: iterating the face table would sort them all
        shown = [([str(face.id), face.remote_uri], _up(face), _counter_values(face.counters))
                 for face in islice(faces.values(), MAX_FACE_SERIES)]
        other = None
        if len(faces) > MAX_FACE_SERIES:
            rest = list(islice(faces.values(), MAX_FACE_SERIES, None))
            down = sum(1 for face in rest if isinstance(face, PermanentFace) and face.state != "up")
            other = (len(rest) - down, tuple(map(sum, zip(*map(_counter_values, map(_face_counters, rest))))))
        functions = []
        host = node.functions.host
        if host is not None:
            per_prefix = host.load()
            for f in host.functions:
                functions.append((f.prefix.to_uri(), host.calls.get(f.prefix, 0), *per_prefix.get(f.prefix, (0, 0))))
        return {
            "status": node.status(), "faces": shown, "other_faces": other, "functions": functions,
            "neighbors": None if node.router is None else neighbor_rows(node.router, MAX_NEIGHBOR_SERIES),
        }


def _up(face: Face) -> int:
    """1 if `face` is up (a permanent face may be waiting for its peer), else 0 (as ``face/list`` says)."""
    return 0 if isinstance(face, PermanentFace) and face.state != "up" else 1


def families(figures: dict[str, Any]) -> list[Metric]:
    """The metric families of `figures` (`NodeCollector.read`): plain values in, safe in a worker thread."""
    status = figures["status"]
    info = InfoMetricFamily("icnd", "the node's name and version")
    info.add_metric([], {"name": status["name"], "version": status["version"]})
    out: list[Metric] = [info, GaugeMetricFamily("icnd_uptime_seconds", "seconds since the node started serving",
                                                 value=status["uptime_s"])]
    counters = status["counters"]
    for key in sorted(counters):
        if _number(counters[key]):
            out.append(CounterMetricFamily(metric_name(key), describe(key), value=counters[key]))
    taken = {metric_name(key) for key in counters}
    tables = status["tables"]
    for key in sorted(tables):
        if _number(tables[key]) and metric_name(key) not in taken:
            out.append(GaugeMetricFamily(metric_name(key), describe(key), value=tables[key]))
    out += _faces(figures["faces"], figures["other_faces"])
    if figures["neighbors"] is not None:
        up = GaugeMetricFamily("icnd_routing_neighbor_up", "1 while the routing adjacency with the neighbour is up",
                               labels=["neighbor", "uri"])
        for nb in figures["neighbors"]:
            up.add_metric([nb["name"] or "", nb["uri"] or ""], 1 if nb["state"] == "up" else 0)
        out.append(up)
    if figures["functions"]:
        calls = CounterMetricFamily("icnd_function_calls", "calls to a hosted function", labels=["function"])
        load = GaugeMetricFamily("icnd_function_load", "a hosted function's calls running or queued",
                                 labels=["function"])
        capacity = GaugeMetricFamily("icnd_function_capacity", "calls a hosted function can run at once",
                                     labels=["function"])
        for prefix, n, cap, running in figures["functions"]:
            calls.add_metric([prefix], n)
            load.add_metric([prefix], running)
            capacity.add_metric([prefix], cap)
        out += [calls, load, capacity]
    return out


def _faces(shown: list[tuple[list[str], int, tuple[int, ...]]],
           other: tuple[int, tuple[int, ...]] | None) -> list[Metric]:
    up = GaugeMetricFamily("icnd_face_up", "1 while the face is up, 0 while a permanent face's peer is away "
                           f"(face=\"other\": how many of the faces beyond the first {MAX_FACE_SERIES} are up)",
                           labels=["face", "uri"])
    counters = [CounterMetricFamily(metric_name(f"face_{key}"), describe(f"face_{key}"), labels=["face", "uri"])
                for key in _FACE_COUNTERS]
    rows = list(shown)
    if other is not None:
        rows.append((OTHER_FACES, *other))
    for labels, is_up, values in rows:
        up.add_metric(labels, is_up)
        for family, value in zip(counters, values):
            family.add_metric(labels, value)
    return [up, *sorted(counters, key=attrgetter("name"))]


class Collected(Collector):
    """Metric families made earlier, to be written out (`exposition`)."""

    def __init__(self, made: list[Metric]) -> None:
        self.made = made

    def collect(self) -> Iterator[Metric]:
        return iter(self.made)


def exposition(figures: dict[str, Any]) -> bytes:
    """The Prometheus text of `figures` (`NodeCollector.read`): plain values in, safe in a worker thread."""
    return generate_latest(Collected(families(figures)))
