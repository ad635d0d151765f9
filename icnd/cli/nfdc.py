"""The nfdc-like commands (interface §4), as one table.

    icnd status [--wait S] [--all] | face list|create|destroy|link | route [list]|add|remove
         | cs list|erase | strategy list|set|unset          [--socket PATH] [--json]

Each row is a `Verb`: the subcommand, its arguments, the management command
it sends (``module/verb``, docs/management.md) with which arguments as its
parameters, and how a person sees the result.  They all run the same way
(`run_verb`): send the command, then print the result -- with ``--json``
exactly what the node returned, else the row's human form (aligned tables
for lists, one line for changes).  A refused command is exit 1 with
``icnd: error: <module> <verb>: <reason>``.  Adding a management command to
the CLI is adding a row here (`icnd.cli.reduce` adds ``group show|list``
the same way).  ``status`` is the one command beside the table: it can wait
for the node first and prints a summary unless ``--all`` (`cmd_status`).
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from icnd.cli import session
from icnd.cli.errors import CliError
from icnd.cli.options import (Arg, Parents, add_command, add_group, arg, face_arg, name_arg, nonneg_int,
                              nonneg_number, nonneg_seconds, positive_int, probability)
from icnd.cli.output import duration, format_table, print_json, print_text, terminal_width
from icnd.name import Name
from icnd.packet import ContentType

Record = dict[str, Any]
"""One JSON object a node sent (its status, a face, a route, a neighbour): decoded
from the management reply and read by field name, so its values are whatever the
node put there."""

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
    default: str | None = None
    """The verb ``icnd <name>`` alone runs (``icnd route`` lists, as ``nfdc route`` does); None: a verb is needed."""


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
            default = next((functools.partial(run_verb, v) for v in entry.verbs if v.name == entry.default), None)
            verbs = add_group(subparsers, entry.name, entry.help, entry.description, default=default, node=True)
            for verb in entry.verbs:
                add_verb(verbs, verb, parents)


def table(header: Sequence[str], rows: Callable[[Any], Iterable[Sequence[Any]]]) -> Human:
    """A human form: the result as an aligned table under `header`, fit to the terminal (`terminal_width`)."""
    return lambda args, result: format_table(list(rows(result)), header, width=terminal_width())


# --- how results read -------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    """``icnd status [--wait S] [--all] [--json]``: `run_verb` for ``status/get``,
    after waiting for the node if asked; people get a summary unless ``--all``."""
    if args.wait is not None:
        session.wait_ready(args.socket, args.wait)
    status = session.command(args.socket, "status", "get")
    if args.json:
        print_json(status)
    elif args.all:
        print_text(_status(args, status))
    else:
        print_text(status_summary(status, _neighbours(args.socket)))
    return 0


def _neighbours(socket: str | None) -> list[Record] | None:
    """The routing neighbours for the summary; None when routing is off (the command refused)."""
    try:
        neighbours = session.command(socket, "routing", "status").get("neighbors")
    except CliError:
        return None
    return neighbours if isinstance(neighbours, list) else None


SUMMARY_COUNTERS = ("interests_in", "interests_out", "data_in", "data_out", "nacks_in", "nacks_out",
                    "cs_hits", "cs_misses", "no_route", "pit_expired", "unsolicited_data", "decode_errors")
"""The counters ``icnd status`` shows by default (``--all``: every one), four to a line."""


def status_summary(status: Record, neighbours: list[Record] | None = None) -> str:
    """What ``icnd status`` prints (like ``nfdc status``): who the node is, its
    table sizes, its neighbours when it has any, and the key counters."""
    tables = status.get("tables") or {}
    counters = status.get("counters") or {}
    rows: list[tuple[str, Any]] = [
        ("name", status.get("name")),
        ("version", status.get("version")),
        ("uptime", duration(float(status.get("uptime_s", 0)))),
    ]
    for key in ("pid", "socket"):
        if key in status:
            rows.append((key, status[key]))
    if status.get("listen"):
        rows.append(("listen", ", ".join(status["listen"])))
    rows += [
        ("faces", f"{tables.get('faces', 0)}"),
        ("routes", f"{tables.get('rib_routes', tables.get('fib_entries', 0))} "
                   f"({tables.get('fib_entries', 0)} FIB entries)"),
        ("pit", f"{tables.get('pit_entries', 0)} entries"),
        ("cs", f"{tables.get('cs_entries', 0)} entries, {tables.get('cs_bytes', 0)} bytes"),
    ]
    if neighbours:
        up = [n for n in neighbours if n.get("state") == "up"]
        down = [str(n.get("name") or n.get("uri")) for n in neighbours if n.get("state") != "up"]
        rows.append(("neighbours", f"{len(up)} up, {len(down)} down" + (f" ({', '.join(down)})" if down else "")))
    shown = [f"{key}={counters[key]}" for key in SUMMARY_COUNTERS if key in counters]
    for i in range(0, len(shown), 4):
        rows.append(("counters" if i == 0 else "", " ".join(shown[i:i + 4])))
    return format_table(rows) + "\n(every counter and table: icnd status --all; as JSON: --json)"


def _status(args: argparse.Namespace, status: Record) -> str:
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


def _content_type(number: int) -> str:
    """A ContentType by name (``blob``, ``manifest``, ...); a number no name has stays a number."""
    try:
        return ContentType(number).name.lower()
    except ValueError:
        return str(number)


def _link_text(face: Record) -> str:
    link = face.get("link") or {}
    bandwidth = f"{link.get('bandwidth_mbps', 0):g} Mbit/s" if link.get("bandwidth_mbps") else "unlimited"
    head = (f"face {face['id']} {face['remote_uri']}: delay {link.get('delay_ms', 0):g} ms, "
            f"loss {link.get('loss', 0):g}, bandwidth {bandwidth}, queue {link.get('queue_bytes', 0)} bytes, "
            f"{'up' if link.get('up', True) else 'DOWN (cut)'}")
    stats = link.get("stats") or {}
    return head + ("\n" + format_table(sorted(stats.items()), indent=2) if stats else "")


def _face_flags(face: Record) -> str:
    """``local``, then the face's persistency as NFD names it: ``permanent`` (a face the configuration
    names: reconnected, never dropped; ``down`` while its peer is away), ``persistent`` (made by
    ``face create`` or ``route add``: never closed as idle) or ``on-demand`` (a peer's, closed when idle)."""
    flags = ["local"] if face.get("local") else []
    if face.get("permanent"):
        flags.append("permanent" if face.get("state", "up") == "up" else "permanent,down")
    else:
        flags.append("persistent" if face.get("persistent") else "on-demand")
    return ",".join(flags)


def _face_rows(faces: list[Record]) -> Iterable[Sequence[Any]]:
    for f in faces:
        counters = f["counters"]
        yield (f["id"], f["remote_uri"], f["local_uri"], _face_flags(f), counters.get("in_packets", 0),
               counters.get("out_packets", 0))


# --- the table --------------------------------------------------------------------------------

PREFIX = arg("prefix", metavar="PREFIX", type=name_arg, help="name prefix")
FACE = arg("face", metavar="FACE", type=face_arg, help="face id or face URI")

NFDC: tuple[Verb | Group, ...] = (
    Group("face", "list, create and destroy faces, emulate links", "List, create and destroy the node's faces, "
          "and emulate link properties (delay, loss, bandwidth) on a face's outgoing traffic.", (
        Verb("list", "list faces (id, remote and local URI, flags: local, permanent|persistent|on-demand; "
             "packets in/out)", ("face", "list"),
             table(("ID", "REMOTE", "LOCAL", "FLAGS", "IN", "OUT"), _face_rows)),
        Verb("create", "create a persistent face to URI (or return the existing one)", ("face", "create"),
             lambda args, f: f"face {f['id']} {f['remote_uri']} ({_face_flags(f)})",
             args=(arg("uri", metavar="URI", help="udp://HOST:PORT, tcp://HOST:PORT or unix:///path"),),
             params=("uri",)),
        Verb("destroy", "close a face", ("face", "destroy"), lambda args, r: f"face {r['id']} destroyed",
             args=(arg("id", metavar="ID", type=nonneg_int, help="the face id (see 'icnd face list')"),),
             params=("id",)),
        Verb("link", "emulate delay, loss and a bandwidth limit on a face's outgoing traffic", ("face", "link"),
             lambda args, f: _link_text(f),
             args=(FACE,
                   arg("--delay-ms", dest="delay_ms", type=nonneg_number, metavar="MS",
                       help="one-way delay added to every packet, in milliseconds"),
                   arg("--loss", type=probability, metavar="P", help="drop probability per packet, 0..1"),
                   arg("--bandwidth-mbps", dest="bandwidth_mbps", type=nonneg_number, metavar="MBPS",
                       help="serialization rate in 10^6 bit/s (0: unlimited)"),
                   arg("--queue-bytes", dest="queue_bytes", type=positive_int, metavar="BYTES",
                       help="bytes that may wait for serialization when bandwidth is limited; more are dropped"),
                   arg("--down", dest="up", action="store_const", const=False, help="cut the link: drop every packet"),
                   arg("--up", dest="up", action="store_const", const=True, help="restore a cut link"),
                   arg("--seed", type=int, help="seed of the loss draws (reproducible runs)")),
             params=("face", "delay_ms", "loss", "bandwidth_mbps", "queue_bytes", "up", "seed"),
             description="Emulate a link on FACE's outgoing traffic, at run time: a delay, a loss rate, a "
             "bandwidth limit with a bounded queue, or a cut. Options not given keep their current value "
             "(initially: none of it). FACE is a face id or URI (the face is created if missing). Prints "
             "the link's parameters and counters; --json prints the face as 'face list' does, with 'link'."),
    )),
    Group("route", "list, add and remove routes (RIB entries); alone: list",
          "List, add and remove the node's routes. Each route has an origin: static (added by an operator or "
          "the configuration), app (a local application's own prefix) or routing (the routing protocol); "
          "the cheapest route through each face is the one forwarding uses. Without a VERB: list them "
          "(as 'icnd route list').", (
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
    ), default="list"),
    Group("cs", "inspect and erase the Content Store", "Inspect and erase the node's Content Store (cache).", (
        Verb("list", "list cached Data (name, size, freshness, content type)", ("cs", "list"),
             table(("NAME", "SIZE", "FRESH", "TYPE"),
                   lambda entries: [(e["name"], e["size"], "fresh" if e["fresh"] else "stale",
                                     _content_type(e["content_type"]))
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
    p = add_command(subparsers, "status", cmd_status,
                    "show a summary of the node: name, version, uptime, table sizes, key counters",
                    parents=parents.mgmt,
                    description="Show a summary of the node (like nfdc status): name, version, uptime, socket, "
                    "table sizes, routing neighbours up and down, and the key counters. --all shows every "
                    "counter and table; --json prints everything as JSON (docs/management.md#status-counters). "
                    "--wait S first waits up to S seconds for the node to answer (for scripts that have just "
                    "started it); exit 2 if it does not.")
    p.add_argument("--all", action="store_true", help="show every counter and table")
    p.add_argument("--wait", type=nonneg_seconds, metavar="S",
                   help="wait up to S seconds until the node answers (exit 2 if it does not)")
    add_table(subparsers, NFDC, parents)
