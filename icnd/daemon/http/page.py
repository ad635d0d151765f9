"""What the status page shows, and how: a bounded snapshot of the node, rendered with jinja2.

One source of truth: every figure comes from what management answers with --
the node's `status()` (``status/get``, ``icnd status --json``), the face
manager's `FaceManager.info` (``face/list``), the route manager's
`RouteManager.row` (``route/list``), the routing shell's neighbours
(``routing/status``), the reduction service's group table (``group/list``)
and the functions local applications report hosting (``function/report``)
-- so the page never disagrees with the CLI.

Bounded, since peers decide how many faces and routes a node has:
`snapshot` runs on the node's loop, so it reads
each table through at most `MAX_ROWS` of its entries, in the table's own
order (the first faces, routes, ... the node has), shown sorted; it never
sorts, copies or walks the faces, the routes, the neighbours or the
reductions in flight, and their totals come from the sizes the tables keep
(only tables with a fixed bound of their own are read whole: the groups,
at most ``MAX_GROUPS``, and the functions applications report, at most
``MAX_REPORTED``).  Its work is therefore the same with 50,000 routes as
with 500.  The page says how many rows it left out (the CLI lists them all).
`render_page` turns the snapshot, plain values only, into HTML in a worker
thread (`icnd.daemon.http.server`), off the forwarding loop.

The template (``templates/status.html``, package data) is autoescaped: face
URIs, prefixes, function and group names come from the network or from
applications.  The only markup made here is the traffic plot, which holds
numbers alone.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import groupby, islice
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import trio
from jinja2 import Environment, PackageLoader, Template
from markupsafe import Markup

from icnd.core.tables.rib import Route
from icnd.daemon.mgmt.faces import FaceManager
from icnd.daemon.mgmt.routes import RouteManager

if TYPE_CHECKING:
    from icnd.core.routing.router import Router
    from icnd.daemon.status import StatusView

MAX_ROWS = 200  # rows per table on the page
REFRESH_S = 5  # the page reloads itself this often

# the traffic plot
PLOT_WIDTH = 640
PLOT_HEIGHT = 150
PLOT_MARGIN = 40  # left, for the scale
# (counter, legend, colour, dash pattern): dashed on top, so equal rates (a pure consumer) show both
SERIES = (("interests_in", "Interests received/s", "#2563eb", ""), ("data_out", "Data sent/s", "#ea580c", "5 3"))

_route_key = attrgetter("prefix.comps")


class Sample(NamedTuple):
    """The node's traffic counters at one moment (`time.monotonic` seconds)."""

    at: float
    interests_in: int
    data_out: int


def status_json(status: dict[str, Any]) -> str:
    """Exactly what ``icnd status --json`` prints, from the node's `status()` (``status/get``)."""
    return json.dumps(status, indent=2, sort_keys=True)


def snapshot(node: StatusView) -> dict[str, Any]:
    """Everything the page shows, as plain values: bounded work on the node's loop (module docstring)."""
    rib = node.rib
    routes = RouteManager(rib, node.faces)
    # the RIB iterates its routes prefix by prefix: the first MAX_ROWS prefixes, each with its routes
    prefixes = [sorted(same, key=Route.sort_key) for _, same in islice(groupby(rib, key=_route_key), MAX_ROWS)]
    prefixes.sort(key=lambda same: same[0].prefix)
    face_info = FaceManager(node.faces).info
    functions, functions_total = function_rows(node, MAX_ROWS)
    reductions = [{"name": entry.name.to_uri(), "children": len(entry.children), "pending": len(entry.pending())}
                  for entry in islice(node.reductions.values(), MAX_ROWS)]
    view: dict[str, Any] = {
        "status": node.status(),
        # the face table's dict holds faces in id order (ids only grow); iterating the table would sort it all
        "faces": [face_info(face) for face in islice(node.faces.faces.values(), MAX_ROWS)],
        "faces_total": len(node.faces),
        "routes": [routes.row(same) for same in prefixes],
        "routes_total": len(node.fib),  # one FIB entry per routed prefix: the RIB alone writes the FIB
        "routing": routing_view(node.router),
        "functions": functions,
        "functions_total": functions_total,
        "reductions": reductions,
        "reductions_total": len(node.reductions),
        "groups": [desc.info() for desc in islice(node.groups.groups(), MAX_ROWS)],
        "groups_total": len(node.groups),
    }
    view["truncated"] = any(len(view[table]) < view[f"{table}_total"]
                            for table in ("faces", "routes", "functions", "reductions", "groups"))
    return view


def routing_view(router: Router | None) -> dict[str, Any] | None:
    """The neighbours (at most `MAX_ROWS`, by face) and how many nodes link-state routing knows."""
    if router is None:
        return None
    return {"neighbors": neighbor_rows(router, MAX_ROWS), "neighbors_total": len(router.neighbors),
            "nodes": len(router.lsdb)}


def neighbor_rows(router: Router, limit: int) -> list[dict[str, Any]]:
    """The first `limit` neighbours, by face, as ``routing/status`` lists them (the page, ``/metrics``)."""
    now = trio.current_time()
    return [{
        "name": nb.name, "uri": nb.uri, "face": nb.face, "state": "up" if nb.up else "down", "cost": nb.cost,
        "link": "up" if nb.link_up else "down",
        "last_hello_s": None if math.isinf(nb.heard_at) else round(now - nb.heard_at, 3),
    } for nb in sorted(islice(router.neighbors.values(), limit), key=attrgetter("face"))]


def function_rows(node: StatusView, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The first `limit` hosted functions, and how many there are: the node's own
    (``--function``), then those local applications report hosting (``Client.host``,
    `icnd.daemon.mgmt.functions`) in the order they first reported."""
    host = node.functions.host
    own = host.functions if host is not None else []
    reported = list(islice(node.function_reports, max(0, limit - len(own))))
    rows = []
    if host is not None:
        load = host.load()
        for f in own[:limit]:
            capacity, running = load.get(f.prefix, (0, 0))
            rows.append({"prefix": f.prefix.to_uri(), "host": f"--function {f.target or ''}".rstrip(),
                         "calls": host.calls.get(f.prefix, 0), "capacity": capacity, "load": running})
    for report in reported:
        rows.append({"prefix": report.prefix.to_uri(), "host": f"application on face {report.face}",
                     "calls": report.calls, "capacity": report.capacity, "load": report.load})
    return rows, len(own) + node.function_reports.live()


def render_page(view: dict[str, Any], samples: Sequence[Sample]) -> str:
    """The HTML status page of `view` (a `snapshot`): formatting alone, safe in a worker thread."""
    return _template().render(**view, plot=Markup(traffic_svg(samples)), refresh_s=REFRESH_S,
                              generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"), max_rows=MAX_ROWS)


@cache
def _template() -> Template:
    env = Environment(loader=PackageLoader("icnd.daemon.http", "templates"), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["count"] = _count
    env.filters["bytes"] = _bytes
    env.filters["duration"] = _duration
    env.filters["nonzero_first"] = nonzero_first
    return env.get_template("status.html")


def rates(samples: Sequence[Sample], field: str) -> list[tuple[float, float]]:
    """(age in seconds of the later sample, events/s) between consecutive samples, oldest first.
    A counter that went down (it cannot, but a restart of a part could) counts as 0."""
    out: list[tuple[float, float]] = []
    if not samples:
        return out
    now = samples[-1].at
    for before, after in zip(samples, islice(samples, 1, None)):
        dt = after.at - before.at
        if dt > 0:
            out.append((now - after.at, max(0.0, (getattr(after, field) - getattr(before, field)) / dt)))
    return out


def traffic_svg(samples: Sequence[Sample]) -> str:
    """Interests received/s and Data sent/s over the samples, as a small inline SVG (numbers only)."""
    w, h, m = PLOT_WIDTH, PLOT_HEIGHT, PLOT_MARGIN
    series = [(label, colour, dash, rates(samples, field)) for field, label, colour, dash in SERIES]
    span = max((samples[-1].at - samples[0].at) if len(samples) > 1 else 0.0, 60.0)
    peak = max([rate for *_, points in series for _, rate in points] + [1.0])
    top = _nice(peak)
    inner_w, inner_h = w - m - 10, h - 40

    def x(age: float) -> float:
        return m + inner_w * (1 - age / span)

    def y(rate: float) -> float:
        return 10 + inner_h * (1 - rate / top)

    parts = [f'<svg id="traffic-plot" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'viewBox="0 0 {w} {h}" role="img" aria-label="Interests and Data per second">',
             f'<rect x="{m}" y="10" width="{inner_w}" height="{inner_h}" fill="#fafafa" stroke="#d4d4d8"/>']
    for frac in (0.5, 1.0):
        gy = y(top * frac)
        parts.append(f'<line x1="{m}" y1="{gy:.1f}" x2="{m + inner_w}" y2="{gy:.1f}" stroke="#e4e4e7"/>')
        parts.append(f'<text x="{m - 4}" y="{gy + 4:.1f}" text-anchor="end" font-size="10" fill="#52525b">'
                     f'{_count(top * frac)}</text>')
    parts.append(f'<text x="{m - 4}" y="{10 + inner_h + 4}" text-anchor="end" font-size="10" fill="#52525b">0</text>')
    parts.append(f'<text x="{m}" y="{h - 14}" font-size="10" fill="#52525b">-{span / 60:.0f} min</text>')
    parts.append(f'<text x="{m + inner_w}" y="{h - 14}" text-anchor="end" font-size="10" fill="#52525b">now</text>')
    legend_x = m + 60
    for label, colour, dash, points in series:
        if len(points) > 1:
            coords = " ".join(f"{x(age):.1f},{y(rate):.1f}" for age, rate in points)
            dashes = f' stroke-dasharray="{dash}"' if dash else ""
            parts.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="1.8"{dashes} '
                         f'points="{coords}"/>')
        parts.append(f'<rect x="{legend_x}" y="{h - 22}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{legend_x + 14}" y="{h - 13}" font-size="11" fill="#27272a">{label}</text>')
        legend_x += 150
    if not any(len(points) > 1 for *_, points in series):
        parts.append(f'<text x="{m + inner_w / 2}" y="{10 + inner_h / 2}" text-anchor="middle" font-size="11" '
                     f'fill="#71717a">collecting samples...</text>')
    parts.append("</svg>")
    return "".join(parts)


def _nice(value: float) -> float:
    """The smallest of 1, 2, 5 x 10^k not below `value` (the plot's top)."""
    scale = 1.0
    while True:
        for step in (1, 2, 5):
            if step * scale >= value:
                return step * scale
        scale *= 10


def _count(value: Any) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{int(value):,}"
    return str(value)


def _bytes(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)


def _duration(seconds: Any) -> str:
    s = int(float(seconds))
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d {hours}h {minutes}m"
    if hours:
        return f"{hours}h {minutes}m {s}s"
    if minutes:
        return f"{minutes}m {s}s"
    return f"{s}s"


def nonzero_first(counters: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    """Counters with a value first, each part in name order (what the page lists)."""
    items = sorted(counters.items())
    return [kv for kv in items if kv[1]] + [kv for kv in items if not kv[1]]
