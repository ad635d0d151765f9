"""The ``icnd`` parser, assembled from the command groups, and `main`.

`main` is where exit codes come from: a handler's return value; 1 for an
`icnd.Error` (the operation failed); a `CliError`'s own code; 2 for usage
errors (argparse's own exit).  Expected failures print one line on stderr,
never a traceback."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from icnd.version import __version__
from icnd.cli import compute, data, keys, nfdc, reduce, routing, run, topo
from icnd.cli import exec as exec_command
from icnd.cli.errors import PROG, CliError, print_error
from icnd.cli.options import Parents, add_outer_options, merge_outer_options
from icnd.errors import Error


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="icnd: an information-centric networking daemon and the tools to operate and use it.",
        epilog="Run 'icnd COMMAND --help' for a command's options. Exit codes: 0 success, "
        "1 the operation failed, 2 usage or configuration error.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_outer_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parents = Parents.build()
    run.add_commands(sub)
    nfdc.add_commands(sub, parents)
    routing.add_commands(sub, parents)
    compute.add_commands(sub, parents)
    reduce.add_commands(sub, parents)
    data.add_commands(sub, parents)
    keys.add_commands(sub)
    topo.add_commands(sub)
    exec_command.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    merge_outer_options(args)
    try:
        code: int = args.handler(args)
        return code
    except CliError as exc:
        print_error(str(exc))
        return exc.code
    except Error as exc:
        print_error(str(exc) or type(exc).__name__)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`icnd cs list | head`): stay quiet, as other tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
