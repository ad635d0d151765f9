"""The nfdc-like commands (interface §4), as one table.

    icnd status | face list|create|destroy | route list|add|remove | cs list|erase
         | strategy list|set|unset                 [--socket PATH] [--json]

Each row is a `Verb`: the subcommand, its arguments, the management command
it sends (``module/verb``, docs/management.md) with which arguments as its
parameters, and how a person sees the result.  They all run the same way
(`run_verb`): send the command, then print the result -- with ``--json``
exactly what the node returned, else the row's human form (aligned tables
for lists, one line for changes).  A refused command is exit 1 with
``icnd: error: <module> <verb>: <reason>``.  Adding a management command to
the CLI is adding a row here (`icnd.cli.reduce` adds ``group show|list``
the same way).
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from icnd.cli import session
from icnd.cli.options import Arg, Parents, add_command, add_group, arg, face_arg, name_arg, nonneg_int, positive_int
from icnd.cli.output import duration, format_table, print_json, print_text
from icnd.name import Name

Human = Callable[[argparse.Namespace, Any], str]
"""The text a person sees for a command's result (given the arguments too)."""


@dataclass(frozen=True)
class Verb:
    """One management subcommand (a row of the table)."""

    name: str
    """The subcommand: ``icnd <group> <name>`` (or ``icnd <name>`` at the top)."""
    help: str
    sends: tuple[str, str]
    """The management command, ``(module, verb)``."""
    human: Human
    args: tuple[Arg, ...] = ()
    params: tuple[str, ...] = ()
    """Arguments sent as the command's parameters, under their own names: a
    `Name` as its URI; one not given (None) is left out, so the node applies
    its default."""
    description: str | None = None
    shape: Callable[[Any], Any] | None = None
    """What of the node's result is shown (as JSON and for people); all of it when None."""


@dataclass(frozen=True)
class Group:
    """``icnd <name> VERB ...``: a table of the node's (face, route, ...)."""

    name: str
    help: str
    description: str
    verbs: tuple[Verb, ...]


def run_verb(verb: Verb, args: argparse.Namespace) -> int:
    params = {key: _param(getattr(args, key)) for key in verb.params if getattr(args, key) is not None}
    result = session.command(args.socket, *verb.sends, **params)
    if verb.shape is not None:
        result = verb.shape(result)
    if args.json:
        print_json(result)
    else:
        print_text(verb.human(args, result))
    return 0


def _param(value: Any) -> Any:
    return value.to_uri() if isinstance(value, Name) else value


def add_verb(subparsers: Any, verb: Verb, parents: Parents) -> None:
    p = add_command(subparsers, verb.name, functools.partial(run_verb, verb), verb.help, parents=parents.mgmt,
                    description=verb.description)
    for a in verb.args:
        a.add_to(p)


def add_table(subparsers: Any, table: Iterable[Verb | Group], parents: Parents) -> None:
    for entry in table:
        if isinstance(entry, Verb):
            add_verb(subparsers, entry, parents)
        else:
            verbs = add_group(subparsers, entry.name, entry.help, entry.description)
            for verb in entry.verbs:
                add_verb(verbs, verb, parents)


def table(header: Sequence[str], rows: Callable[[Any], Iterable[Sequence[Any]]]) -> Human:
    """A human form: the result as an aligned table under `header`."""
    return lambda args, result: format_table(list(rows(result)), header)


# --- how results read -------------------------------------------------------------------------


def _status(args: argparse.Namespace, status: dict) -> str:
    rows = [
        ("name", status.get("name")),
        ("version", status.get("version")),
        ("uptime", duration(float(status.get("uptime_s", 0)))),
    ]
    for key in ("pid", "socket", "key"):
        if key in status:
            rows.append((key, status[key]))
    if status.get("listen"):
        rows.append(("listen", ", ".join(status["listen"])))
    parts = [format_table(rows)]
    for section in ("counters", "tables"):
        values = status.get(section) or {}
        parts.append(f"\n{section}")
        parts.append(format_table(sorted(values.items()) if section == "tables" else list(values.items()), indent=2))
    return "\n".join(part for part in parts if part)


def _face_flags(face: dict) -> str:
    flags = [flag for flag in ("local", "persistent") if face.get(flag)]
    return ",".join(flags) or "-"


def _face_rows(faces: list[dict]) -> Iterable[Sequence[Any]]:
    for f in faces:
        counters = f["counters"]
        yield (f["id"], f["remote_uri"], f["local_uri"], _face_flags(f), counters.get("in_packets", 0),
               counters.get("out_packets", 0))


# --- the table --------------------------------------------------------------------------------

PREFIX = arg("prefix", metavar="PREFIX", type=name_arg, help="name prefix")
FACE = arg("face", metavar="FACE", type=face_arg, help="face id or face URI")

NFDC: tuple[Verb | Group, ...] = (
    Verb("status", "show the node's name, uptime, version, counters and table sizes", ("status", "get"), _status),
    Group("face", "list, create and destroy faces", "List, create and destroy the node's faces.", (
        Verb("list", "list faces (id, remote and local URI, flags, packets in/out)", ("face", "list"),
             table(("ID", "REMOTE", "LOCAL", "FLAGS", "IN", "OUT"), _face_rows)),
        Verb("create", "create a persistent face to URI (or return the existing one)", ("face", "create"),
             lambda args, f: f"face {f['id']} {f['remote_uri']} ({_face_flags(f)})",
             args=(arg("uri", metavar="URI", help="udp://HOST:PORT, tcp://HOST:PORT or unix:///path"),),
             params=("uri",)),
        Verb("destroy", "close a face", ("face", "destroy"), lambda args, r: f"face {r['id']} destroyed",
             args=(arg("id", metavar="ID", type=nonneg_int, help="the face id (see 'icnd face list')"),),
             params=("id",)),
    )),
    Group("route", "list, add and remove routes (RIB entries)",
          "List, add and remove the node's routes. Each route has an origin: static (added by an operator or "
          "the configuration), app (a local application's own prefix) or routing (the routing protocol); "
          "the cheapest route through each face is the one forwarding uses.", (
        Verb("list", "list routes (one line per route, cheapest first)", ("route", "list"),
             table(("PREFIX", "FACE", "COST", "ORIGIN", "URI"),
                   lambda routes: [(r["prefix"], hop["face"], hop["cost"], hop["origin"], hop["uri"])
                                   for r in routes for hop in r["nexthops"]])),
        Verb("add", "add a route to PREFIX via FACE", ("route", "add"),
             lambda args, r: f"route {r['prefix']} via face {r['face']} cost {r['cost']} ({r['origin']}) added",
             args=(arg("prefix", metavar="PREFIX", type=name_arg, help="name prefix, e.g. /demo"), FACE,
                   arg("--cost", type=nonneg_int, default=0, help="route cost, lower is preferred (default: 0)"),
                   arg("--origin", choices=("static", "app"),
                       help="the route's origin (default: static; app for FACE 'self')")),
             params=("prefix", "face", "cost", "origin"),
             description="Add a route to PREFIX via FACE. FACE is a face id or a face URI; "
             "a face to the URI is created if it does not exist."),
        Verb("remove", "remove the route to PREFIX via FACE", ("route", "remove"),
             lambda args, r: f"route {r['prefix']} via face {r['face']} removed ({', '.join(r['origins'])})",
             args=(PREFIX, FACE,
                   arg("--origin", choices=("static", "app", "routing"),
                       help="remove only the route of this origin (default: its static and app routes)")),
             params=("prefix", "face", "origin")),
    )),
    Group("cs", "inspect and erase the Content Store", "Inspect and erase the node's Content Store (cache).", (
        Verb("list", "list cached Data (name, size, freshness, content type)", ("cs", "list"),
             table(("NAME", "SIZE", "FRESH", "TYPE"),
                   lambda entries: [(e["name"], e["size"], "fresh" if e["fresh"] else "stale", e["content_type"])
                                    for e in entries]),
             args=(arg("--prefix", type=name_arg, default=Name("/"), help="only names under PREFIX (default: /)"),
                   arg("--limit", type=positive_int, help="at most N entries (default: the node's, 1000)")),
             params=("prefix", "limit")),
        Verb("erase", "erase cached Data under PREFIX", ("cs", "erase"),
             lambda args, r: f"erased {r['erased']} entries under {args.prefix}",
             args=(arg("prefix", metavar="PREFIX", type=name_arg, help="name prefix ('/' erases everything)"),),
             params=("prefix",)),
    )),
    Group("strategy", "choose forwarding strategies per prefix", "Choose forwarding strategies per name prefix.", (
        Verb("list", "list strategy choices", ("strategy", "list"),
             table(("PREFIX", "STRATEGY"), lambda choices: [(c["prefix"], c["strategy"]) for c in choices])),
        Verb("set", "use strategy NAME for PREFIX", ("strategy", "set"),
             lambda args, r: f"strategy {r['strategy']} set at {r['prefix']}",
             args=(PREFIX, arg("strategy", metavar="NAME",
                               help="strategy name: best-route, multicast or load-balance")),
             params=("prefix", "strategy")),
        Verb("unset", "remove the strategy choice at PREFIX (it inherits its parent's)", ("strategy", "unset"),
             lambda args, r: f"strategy unset at {r['prefix']}", args=(PREFIX,), params=("prefix",)),
    )),
)


def add_commands(subparsers: Any, parents: Parents) -> None:
    add_table(subparsers, NFDC, parents)
