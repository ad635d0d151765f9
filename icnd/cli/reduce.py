"""Reductions from a shell: ``icnd reduce``, ``contribute`` and ``group``
(interface §5, docs/reduction.md).

``group show`` and ``group list`` are plain management commands: rows of
the nfdc table (`icnd.cli.nfdc.Verb`); ``group create`` signs and announces
a descriptor through the client."""

from __future__ import annotations

import argparse
from typing import Any

from icnd.cli.errors import CliError
from icnd.cli.nfdc import Record, Verb, add_verb, table
from icnd.cli.options import Parents, add_command, add_group, arg, nonneg_int, positive_int, positive_seconds
from icnd.cli.output import format_table, jsonable, print_json
from icnd.cli.session import with_client


def cmd_reduce(args: argparse.Namespace) -> int:
    try:
        r = with_client(args.socket, lambda c: c.reduce(args.group, args.round, args.op, timeout=args.timeout,
                                                        partial=args.partial, version=args.version))
    except ValueError as exc:
        raise CliError(f"reduce {args.group}: {exc}") from None
    import numpy as np

    summary = {"group": r.group, "version": r.version, "round": r.round, "op": r.op, "dtype": str(r.array.dtype),
               "shape": list(r.array.shape), "count": r.count, "contributors": r.contributors,
               "complete": r.complete, "nonfinite": r.nonfinite, "overflow": r.overflow}
    if args.output:
        np.save(args.output, r.array, allow_pickle=False)
        summary["output"] = args.output
    if args.json:
        if not args.output:
            summary["array"] = jsonable(r.array)
        print_json(summary)
        return 0
    state = "complete" if r.complete else "PARTIAL"
    print(f"{r.op} of {r.group} round {r.round}: {r.array.dtype} {r.array.shape}, {state}, "
          f"{r.count} contributor(s): {', '.join(r.contributors)}")
    for flag in ("nonfinite", "overflow"):
        if summary[flag]:
            print(f"warning: {flag} values in the aggregate")
    if args.output:
        print(f"saved to {args.output}")
    else:
        print(r.array)
    return 0


NPY_MAGIC = b"\x93NUMPY"
"""How every .npy file starts (numpy's format): anything else is refused before numpy reads it, since
numpy takes other files for pickles (or .npz archives) and says so instead."""


def _load_npy(path: str) -> Any:
    import numpy as np

    try:
        with open(path, "rb") as f:
            if f.read(len(NPY_MAGIC)) != NPY_MAGIC:
                raise CliError(f"{path}: not a .npy file (write the array with numpy.save(path, array))", 1)
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise CliError(f"{path}: not a readable .npy array ({getattr(exc, 'strerror', None) or exc})", 1) from None


def cmd_contribute(args: argparse.Namespace) -> int:
    array = _load_npy(args.file)
    try:
        result = with_client(args.socket, lambda c: c.contribute(args.group, args.round, array, member=args.member))
    except ValueError as exc:
        raise CliError(f"contribute to {args.group}: {exc}") from None
    if args.json:
        print_json(result)
    else:
        print(f"{result['member']} contributed {result['dtype']} {tuple(result['shape'])} to {result['group']} "
              f"round {result['round']} ({result['segments']} segment(s))")
    return 0


def _group_text(args: argparse.Namespace, info: Record) -> str:
    rows = [("group", info["group"]), ("version", info["version"]), ("name", info["name"]),
            ("members", ", ".join(info["members"])), ("rendezvous", ", ".join(info["rendezvous"])),
            ("ops", ", ".join(info["ops"])), ("segment bytes", info["segment_bytes"]),
            ("max bytes", info["max_bytes"]), ("deadline ms", info["deadline_ms"] or "none")]
    return format_table(rows)


def cmd_group_create(args: argparse.Namespace) -> int:
    info = with_client(args.socket, lambda c: c.create_group(args.name, args.members, rendezvous=args.rendezvous,
                                                              segment_bytes=args.segment_bytes,
                                                              deadline=args.deadline))
    if args.json:
        print_json(info)
    else:
        print(_group_text(args, info))
    return 0


GROUP_VERBS = (
    Verb("show", "show a group's descriptor", ("group", "show"), _group_text,
         args=(arg("name", metavar="NAME", help="group name"),
               arg("--version", type=positive_int, metavar="N", help="version (default: the latest)")),
         params=("name", "version"),
         shape=lambda info: {key: value for key, value in info.items() if key != "descriptor"}),
    Verb("list", "list the groups this node knows", ("group", "list"),
         table(("GROUP", "VERSION", "MEMBERS", "RENDEZVOUS"),
               lambda groups: [(g["group"], g["version"], len(g["members"]), ", ".join(g["rendezvous"]))
                               for g in groups])),
)


def add_commands(subparsers: Any, parents: Parents) -> None:
    p = add_command(
        subparsers, "reduce", cmd_reduce, "fetch the aggregate of a reduction round", parents=parents.mgmt,
        description="Fetch the aggregate (element-wise sum, max, min or mean) of the arrays the members of "
        "GROUP contributed to ROUND, combined in the network on the way (docs/reduction.md). Prints the "
        "contributors and the array, or saves it with -o. Exit 1 if the round is incomplete at the deadline "
        "(unless --partial) or contributions disagree in dtype or shape.",
    )
    p.add_argument("group", metavar="GROUP", help="reduction group name")
    p.add_argument("round", metavar="ROUND", type=nonneg_int, help="round number")
    p.add_argument("--op", choices=("sum", "max", "min", "mean"), default="sum", help="operation (default: sum)")
    p.add_argument("-o", "--output", metavar="FILE.npy", help="save the aggregate to FILE.npy")
    p.add_argument("--partial", action="store_true",
                   help="accept a partial aggregate (flagged) if some members have not contributed by the deadline")
    p.add_argument("--timeout", type=positive_seconds, default=10.0, metavar="S",
                   help="give up after S seconds (default: 10)")
    p.add_argument("--version", type=positive_int, metavar="N", help="group version (default: the latest)")
    p = add_command(
        subparsers, "contribute", cmd_contribute, "contribute an array to a reduction round", parents=parents.mgmt,
        description="Make the array in FILE.npy MEMBER's contribution to ROUND of GROUP, served by this "
        "node (never pickled). MEMBER defaults to the node's name.",
    )
    p.add_argument("group", metavar="GROUP", help="reduction group name")
    p.add_argument("round", metavar="ROUND", type=nonneg_int, help="round number")
    p.add_argument("file", metavar="FILE.npy", help="the array (numpy .npy format)")
    p.add_argument("--member", metavar="ID", help="member id (default: this node's name)")

    group = add_group(subparsers, "group", "create and inspect reduction groups",
                      "Reduction groups: signed, versioned descriptors of members and rendezvous nodes.",
                      dest="group_command", metavar="ACTION", node=True)
    p = add_command(group, "create", cmd_group_create, "create a group (or a new version of it)",
                    parents=parents.mgmt,
                    description="Create group NAME with MEMBERs (ID, the member on node ID, or ID@NODE), signed by "
                    "this node and announced to every member's node and rendezvous node; the same contents again "
                    "keep the version (and announce it again).")
    p.add_argument("name", metavar="NAME", help="group name")
    p.add_argument("members", metavar="MEMBER", nargs="+", help="member ID or ID@NODE")
    p.add_argument("--rendezvous", metavar="NODE", action="append",
                   help="a node where splits start (repeatable; default: the members' nodes)")
    p.add_argument("--segment-bytes", type=positive_int, metavar="N",
                   help="segment size in bytes (default: 524288)")
    p.add_argument("--deadline", type=positive_seconds, metavar="S",
                   help="the longest an aggregation waits for stragglers (default: the request's lifetime)")
    for verb in GROUP_VERBS:
        add_verb(group, verb, parents)
