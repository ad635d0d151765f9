"""``icnd keygen``: create an Ed25519 identity (interface §5)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from icnd.cli.errors import CliError
from icnd.cli.options import add_command, name_arg
from icnd.daemon.config import NodeConfig


def cmd_keygen(args: argparse.Namespace) -> int:
    from icnd.security import Ed25519Key

    identity = args.identity if args.identity is not None else NodeConfig().node_name()
    key = Ed25519Key.generate(identity)
    try:
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CliError(f"{args.out} exists; refusing to overwrite it") from None
    except OSError as exc:
        raise CliError(f"cannot create {args.out}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as f:
        f.write(key.to_bytes())
    print(key.name)
    return 0


def add_commands(subparsers: Any) -> None:
    p = add_command(
        subparsers, "keygen", cmd_keygen, "create an Ed25519 identity",
        description="Create an Ed25519 identity key named <IDENTITY>/KEY/<id>, write it (private key "
        "included) to FILE with mode 0600, and print the key name. Never overwrites a file.",
    )
    p.add_argument("--out", metavar="FILE", default="identity.key",
                   help="where to write the key (default: ./identity.key)")
    p.add_argument("--name", dest="identity", metavar="IDENTITY", type=name_arg,
                   help="identity name (default: /node/<hostname>)")
