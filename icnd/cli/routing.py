"""Routing from a shell (interface §12): what the node announces, and what its routing knows.

    icnd announce PREFIX [--socket PATH]       this node originates PREFIX network-wide
    icnd withdraw PREFIX [--socket PATH]       ... and stops
    icnd routing [--json] [--socket PATH]      neighbours and the link-state database

Plain management commands (``routing/*``, docs/management.md#routing), so
rows of the nfdc table (`icnd.cli.nfdc.Verb`): with ``--json`` exactly what
the node returned, else `routing_text`.  A node without routing refuses
them all (exit 1, ``routing is off on this node``).

The human form is for a terminal: the link-state database can hold many
origins with many prefixes, so each origin is one line whose prefix list
is cut to `PREFIXES_WIDTH` characters with a count of what was left out;
``--json`` has everything.
"""

from __future__ import annotations

import argparse
from typing import Any, Iterable

from icnd.cli.nfdc import Record, Verb, add_table
from icnd.cli.options import Parents, arg, name_arg
from icnd.cli.output import duration, format_table

PREFIXES_WIDTH = 60
"""At most this many characters of an origin's prefixes in the human table."""


def _ago(seconds: Any) -> str:
    if seconds is None:
        return "never"
    return f"{duration(max(0.0, float(seconds)))} ago"


def _shorten(prefixes: Iterable[str], width: int = PREFIXES_WIDTH) -> str:
    """``/a, /b, ... (+N more)``: whole prefixes only, at most `width` characters
    before the count (one prefix longer than that is cut with ``...``)."""
    items = list(prefixes)
    if not items:
        return "-"
    shown: list[str] = []
    length = 0
    for item in items:
        extra = len(item) + (2 if shown else 0)
        if length + extra > width:
            break
        shown.append(item)
        length += extra
    if not shown:  # the first prefix alone is too long: its beginning stands for it
        shown = [items[0][: width - 3] + "..."]
    rest = len(items) - len(shown)
    text = ", ".join(shown)
    return f"{text} (+{rest} more)" if rest else text


def _neighbor_rows(neighbors: list[Record]) -> list[tuple[Any, ...]]:
    return [(n.get("name"), n.get("uri"), n.get("face"), n.get("state"), n.get("cost"), _ago(n.get("last_hello_s")))
            for n in neighbors]


def _lsdb_rows(lsdb: list[Record]) -> list[tuple[Any, ...]]:
    rows = []
    for record in sorted(lsdb, key=lambda r: str(r.get("origin"))):
        age = record.get("age_s")
        prefixes = [p["prefix"] if isinstance(p, dict) else str(p) for p in record.get("prefixes") or ()]
        rows.append((record.get("origin"), record.get("version"), None if age is None else duration(float(age)),
                     len(record.get("adjacencies") or ()), len(prefixes), _shorten(prefixes)))
    return rows


def routing_text(args: argparse.Namespace | None, status: Record) -> str:
    """`icnd routing` for people: a summary line, the neighbours, the link-state
    database (one line per origin), the prefixes this node announces."""
    neighbors = status.get("neighbors") or []
    lsdb = status.get("lsdb") or []
    up = sum(1 for n in neighbors if n.get("state") == "up")
    parts = [f"{status.get('name')}: {status.get('routing', 'routing')}, {up}/{len(neighbors)} neighbours up, "
             f"{len(lsdb)} origins, {status.get('routes', 0)} routes", "", "neighbours"]
    if neighbors:
        parts.append(format_table(_neighbor_rows(neighbors), ("NAME", "URI", "FACE", "STATE", "COST", "LAST HELLO"),
                                  indent=2))
    else:
        parts.append("  (none)")
    parts += ["", "link-state database"]
    if lsdb:
        parts.append(format_table(_lsdb_rows(lsdb), ("ORIGIN", "VERSION", "AGE", "ADJ", "#PFX", "PREFIXES"),
                                  indent=2))
    else:
        parts.append("  (empty)")
    announced = status.get("announced") or []
    parts += ["", f"announced: {', '.join(announced) if announced else '(nothing)'}"]
    return "\n".join(parts)


PREFIX = arg("prefix", metavar="PREFIX", type=name_arg, help="name prefix, e.g. /videos")

ROUTING: tuple[Verb, ...] = (
    Verb("announce", "originate PREFIX from this node, network-wide", ("routing", "announce"),
         lambda args, r: f"{r['prefix']} announced", args=(PREFIX,), params=("prefix",),
         description="Have this node originate PREFIX: every node of the network learns a route to it here "
         "(link-state routing; see 'icnd routing'). Announcing a prefix again is no change. Refused (exit 1) "
         "for /localhost and /localhop names, beyond the node's bound of announced prefixes, and on a node "
         "without routing."),
    Verb("withdraw", "stop originating PREFIX (undo 'icnd announce')", ("routing", "withdraw"),
         lambda args, r: f"{r['prefix']} withdrawn", args=(PREFIX,), params=("prefix",),
         description="Withdraw a prefix 'icnd announce' announced; routes to it here disappear across the "
         "network. A prefix an application serves is withdrawn when the application stops, not by this "
         "command (exit 1: not announced)."),
    Verb("routing", "show neighbours (name, uri, state, cost, last hello) and the link-state database",
         ("routing", "status"), routing_text,
         description="Show this node's routing: its neighbours (node name, face URI and id, state up|down, "
         "link cost, time since the last hello), the link-state database (one line per origin: record "
         "version, age, number of adjacencies and prefixes), and the prefixes this node announces. "
         "--json prints everything (docs/management.md#routing)."),
)


def add_commands(subparsers: Any, parents: Parents) -> None:
    add_table(subparsers, ROUTING, parents)
