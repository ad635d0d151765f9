"""``icnd call``: invoke a named function and print its result (interface §5, §9).

Arguments are JSON where they parse as JSON, strings otherwise; numpy
arrays come from ``.npy`` files and go back to one (never pickled)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from icnd.cli.errors import CliError
from icnd.cli.options import Parents, add_command, name_arg, positive_seconds
from icnd.cli.output import jsonable
from icnd.cli.session import with_client


def _parse_call_args(args: argparse.Namespace) -> list[Any]:
    if args.json_args is not None:
        try:
            values = json.loads(args.json_args)
        except json.JSONDecodeError as exc:
            raise CliError(f"--json-args: not JSON: {exc}", 2) from None
        if not isinstance(values, list):
            raise CliError("--json-args must be a JSON array of arguments", 2)
    else:
        values = []
        for text in args.args:
            try:
                values.append(json.loads(text))
            except json.JSONDecodeError:
                values.append(text)
    import numpy as np

    for path in args.npy:
        try:
            values.append(np.load(path, allow_pickle=False))
        except (OSError, ValueError) as exc:
            raise CliError(f"--npy {path}: {exc}", 2) from None
    return values


def cmd_call(args: argparse.Namespace) -> int:
    values = _parse_call_args(args)
    try:
        result = with_client(args.socket, lambda c: c.call(args.fn, *values, timeout=args.timeout, pure=args.pure))
    except (TypeError, ValueError) as exc:
        raise CliError(f"call {args.fn}: {exc}") from None
    import numpy as np

    if args.output:
        if not isinstance(result, np.ndarray):
            raise CliError(f"-o: the result is a {type(result).__name__}, not an array")
        np.save(args.output, result, allow_pickle=False)
        print(f"saved {result.dtype} {result.shape} to {args.output}")
    elif args.json:
        print(json.dumps(jsonable(result)))
    elif isinstance(result, np.ndarray):
        print(f"array {result.dtype} {result.shape}")
        print(result)
    else:
        print(json.dumps(jsonable(result)) if not isinstance(result, str) else result)
    return 0


def add_commands(subparsers: Any, parents: Parents) -> None:
    p = add_command(
        subparsers, "call", cmd_call, "invoke a named function and print its result", parents=parents.socket,
        description="Invoke the named function FN (RICE over reflexive forwarding: the host pulls the "
        "arguments; long work comes back as a thunk that is polled). Each ARG is parsed as JSON when it "
        "can be (1, 2.5, \"text\", [1,2], {\"a\": 1}) and passed as a string otherwise; --json-args "
        "gives the whole argument list as one JSON array; --npy FILE passes a numpy array.",
    )
    p.add_argument("fn", metavar="FN", type=name_arg, help="the function's name, e.g. /fn/matmul")
    p.add_argument("args", metavar="ARG", nargs="*", help="arguments (JSON or plain strings)")
    p.add_argument("--json-args", metavar="JSON", help="the argument list as a JSON array (replaces ARG...)")
    p.add_argument("--npy", metavar="FILE", action="append", default=[],
                   help="append a numpy array loaded from a .npy file (repeatable; never pickled)")
    p.add_argument("--pure", action="store_true",
                   help="name the call by its arguments' digest so caches can answer it (pure functions)")
    p.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="S",
                   help="give up after S seconds, meanwhile waiting for a route to FN if there is none yet "
                        "(default: 60)")
    p.add_argument("-o", "--output", metavar="FILE.npy", help="save an array result to FILE.npy")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
