"""``icnd call``, ``icnd submit``, ``icnd result``: named functions from a shell (interface §5, §9, §16).

Arguments are JSON where they parse as JSON, strings otherwise; numpy
arrays come from ``.npy`` files and go back to one (never pickled).  Named
arguments (``--ref NAME``, ``--future NAME``) follow the others, in the
order given: the function's host fetches them by name, never this command.
``call`` and ``result`` print a result the same way (`print_result`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from icnd.cli.errors import CliError
from icnd.cli.options import Parents, add_command, name_arg, positive_seconds
from icnd.cli.output import jsonable
from icnd.cli.session import with_client
from icnd.compute.named import Future, Ref, is_named

PLACES = ("near", "any")


def ref_arg(text: str) -> Ref:
    return Ref(name_arg(text))


def future_arg(text: str) -> Future:
    return Future(name_arg(text))


def place_arg(text: str) -> str:
    """``--place``: ``near``, ``any`` or a node's name URI (``/node/b``)."""
    if text in PLACES:
        return text
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError(f"{text!r}: give near, any or a node's name such as /node/b")
    return name_arg(text).to_uri()


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
    return values + args.named


def print_result(result: Any, args: argparse.Namespace, host: dict[str, Any] | None = None) -> None:
    """A call's result on stdout: saved with ``-o``, JSON with ``--json``
    (as ``{"result": ..., "host": ...}`` when `host` is given: the call's
    placement), else as text (an array as its dtype, shape and values)."""
    import numpy as np

    if args.output:
        if not isinstance(result, np.ndarray):
            raise CliError(f"-o: the result is a {type(result).__name__}, not an array")
        try:
            np.save(args.output, result, allow_pickle=False)
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        print(f"saved {result.dtype} {result.shape} to {args.output}")
    elif args.json:
        print(json.dumps(jsonable(result) if host is None else {"result": jsonable(result), **host}))
    elif isinstance(result, np.ndarray):
        print(f"array {result.dtype} {result.shape}")
        print(result)
    else:
        print(json.dumps(jsonable(result)) if not isinstance(result, str) else result)


def cmd_call(args: argparse.Namespace) -> int:
    values = _parse_call_args(args)
    info: dict[str, Any] = {}
    try:
        result = with_client(args.socket, lambda c: c.call(args.fn, *values, timeout=args.timeout, pure=args.pure,
                                                           place=args.place, info=info))
    except (TypeError, ValueError) as exc:
        raise CliError(f"call {args.fn}: {exc}") from None
    named = any(is_named(v) for v in values)
    print_result(result, args, {"host": info.get("host")} if named else None)
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    values = _parse_call_args(args)
    try:
        future = with_client(args.socket, lambda c: c.submit(args.fn, *values, timeout=args.timeout,
                                                             place=args.place))
    except (TypeError, ValueError) as exc:
        raise CliError(f"submit {args.fn}: {exc}") from None
    name = future.name.to_uri()
    print(json.dumps({"future": name}) if args.json else name)
    return 0


def cmd_result(args: argparse.Namespace) -> int:
    result = with_client(args.socket, lambda c: c.result(args.name, timeout=args.timeout))
    print_result(result, args)
    return 0


def _add_call_arguments(p: argparse.ArgumentParser, timeout_help: str) -> None:
    """The options ``call`` and ``submit`` share: FN, its arguments, placement, timeout."""
    p.add_argument("fn", metavar="FN", type=name_arg, help="the function's name, e.g. /fn/matmul")
    p.add_argument("args", metavar="ARG", nargs="*", help="arguments (JSON or plain strings)")
    p.add_argument("--json-args", metavar="JSON", help="the argument list as a JSON array (replaces ARG...)")
    p.add_argument("--npy", metavar="FILE", action="append", default=[],
                   help="append a numpy array loaded from a .npy file (repeatable; never pickled)")
    p.add_argument("--ref", metavar="NAME", dest="named", action="append", type=ref_arg, default=[],
                   help="append a named argument, icnd.Ref(NAME): data the host fetches itself, verified "
                        "(repeatable; after ARG/--json-args/--npy, in order with --future)")
    p.add_argument("--future", metavar="NAME", dest="named", action="append", type=future_arg, default=[],
                   help="append another call's result by its name (from 'icnd submit'), icnd.Future(NAME): "
                        "the host fetches it when ready (repeatable; in order with --ref)")
    p.add_argument("--place", metavar="near|any|NODE", type=place_arg, default="near",
                   help="where a call with named arguments runs when several nodes host FN: near (default: "
                        "the host with the least route cost to the named data), any (the network picks) "
                        "or a node's name such as /node/b")
    p.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="S", help=timeout_help)


def add_commands(subparsers: Any, parents: Parents) -> None:
    p = add_command(
        subparsers, "call", cmd_call, "invoke a named function and print its result", parents=parents.socket,
        description="Invoke the named function FN (RICE over reflexive forwarding: the host pulls the "
        "arguments; long work comes back as a thunk that is polled). Each ARG is parsed as JSON when it "
        "can be (1, 2.5, \"text\", [1,2], {\"a\": 1}) and passed as a string otherwise; --json-args "
        "gives the whole argument list as one JSON array; --npy FILE passes a numpy array; --ref NAME and "
        "--future NAME pass named arguments, which FN's host fetches itself (they come last, in the order "
        "given). With --json the result is printed as JSON; a call with --ref/--future prints "
        "{\"result\": ..., \"host\": NODE} instead, NODE the host it was placed at (null: the network chose).",
    )
    _add_call_arguments(p, "give up after S seconds, meanwhile waiting for a route to FN if there is none yet "
                           "(default: 60)")
    p.add_argument("--pure", action="store_true",
                   help="name the call by its arguments' digest so caches can answer it (pure functions)")
    p.add_argument("-o", "--output", metavar="FILE.npy", help="save an array result to FILE.npy")
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON ({\"result\": ..., \"host\": ...} with --ref/--future)")

    p = add_command(
        subparsers, "submit", cmd_submit, "start a named function and print its future's name",
        parents=parents.socket,
        description="Start FN as 'icnd call' would and return once its host has taken the call, printing "
        "the name its result will be stored under (a future): fetch it with 'icnd result NAME', or pass "
        "it to another call with --future NAME so that call's host fetches it. Arguments as for 'icnd call'. "
        "The result stays fetchable for its host's retention time after the call finished (60 s by "
        "default), then asking for it fails (not found).",
    )
    _add_call_arguments(p, "give up starting the call after S seconds (default: 60)")
    p.add_argument("--json", action="store_true", help="print {\"future\": NAME}")

    p = add_command(
        subparsers, "result", cmd_result, "fetch and print a submitted call's result", parents=parents.socket,
        description="Fetch the result stored under NAME (what 'icnd submit' printed), waiting while the call "
        "runs, and print it as 'icnd call' does. Fails with exit code 1 when the call failed (its error), "
        "when no result comes within --timeout, or when its host no longer keeps it (not found).",
    )
    p.add_argument("name", metavar="NAME", type=name_arg, help="the future's name, as 'icnd submit' printed it")
    p.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="S",
                   help="give up after S seconds (default: 60)")
    p.add_argument("-o", "--output", metavar="FILE.npy", help="save an array result to FILE.npy")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
