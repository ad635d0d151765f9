"""What the status page shows, and how: a snapshot of the node, rendered with jinja2.

One source of truth: every figure comes from what management answers with --
the node's `status()` (``status/get``, ``icnd status --json``), the face
manager's `FaceManager.info` (``face/list``), the route manager's
`RouteManager.table` (``route/list``), the routing shell's ``status()``
(``routing/status``) and the reduction service's group table (``group/list``)
-- so the page never disagrees with the CLI.  Lists are cut to `MAX_ROWS`
rows (the page says how many more there are), which bounds the cost of a
request whatever the node holds.

The template (``templates/status.html``, package data) is autoescaped: face
URIs, prefixes, function and group names come from the network or from
applications.  The only markup made here is the traffic plot, which holds
numbers alone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import islice
from typing import TYPE_CHECKING, Any, NamedTuple

from jinja2 import Environment, PackageLoader, Template
from markupsafe import Markup

from icnd.daemon.mgmt.faces import FaceManager
from icnd.daemon.mgmt.routes import RouteManager

if TYPE_CHECKING:
    from icnd.daemon.node import Node

MAX_ROWS = 200  # rows per table on the page
REFRESH_S = 5  # the page reloads itself this often

# the traffic plot
PLOT_WIDTH = 640
PLOT_HEIGHT = 150
PLOT_MARGIN = 40  # left, for the scale
# (counter, legend, colour, dash pattern): dashed on top, so equal rates (a pure consumer) show both
SERIES = (("interests_in", "Interests received/s", "#2563eb", ""), ("data_out", "Data sent/s", "#ea580c", "5 3"))


class Sample(NamedTuple):
    """The node's traffic counters at one moment (`time.monotonic` seconds)."""

    at: float
    interests_in: int
    data_out: int


def status_json(node: Node) -> str:
    """Exactly what ``icnd status --json`` prints (``status/get``)."""
    return json.dumps(node.status(), indent=2, sort_keys=True)


def snapshot(node: Node) -> dict[str, Any]:
    """Everything the page shows, from the same functions management answers with."""
    status = node.status()
    face_info = FaceManager(node.faces).info
    routes = RouteManager(node.fw.rib, node.faces).table()
    routing = node.routing.status() if node.routing is not None else None
    host = node.function_host
    functions = []
    if host is not None:
        load = host.load()
        for f in host.functions:
            capacity, running = load.get(f.prefix, (0, 0))
            functions.append({"prefix": f.prefix.to_uri(), "target": f.target or "", "calls": host.calls.get(f.prefix, 0),
                              "capacity": capacity, "load": running})
    reductions = [{"name": entry.name.to_uri(), "children": len(entry.children), "pending": len(entry.pending())}
                  for entry in islice(node.aggregator.entries.values(), MAX_ROWS)]
    groups = [desc.info() for desc in islice(node.reduction.groups.groups(), MAX_ROWS)]
    return {
        "status": status,
        "faces": [face_info(face) for face in islice(node.faces, MAX_ROWS)],
        "faces_total": len(node.faces),
        "routes": routes[:MAX_ROWS],
        "routes_total": len(routes),
        "routing": routing,
        "functions": functions[:MAX_ROWS],
        "reductions": reductions,
        "reductions_total": len(node.aggregator.entries),
        "groups": groups,
        "groups_total": len(node.reduction.groups),
    }


def render_page(node: Node, samples: Sequence[Sample]) -> str:
    """The HTML status page."""
    view = snapshot(node)
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
