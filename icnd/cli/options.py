"""Argument types and the options many commands share.

A bad value is a usage error: argparse prints the message with the
command's usage line and exits with code 2."""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from icnd.name import Name

Handler = Callable[[argparse.Namespace], int]
"""What a (sub)command runs: the parsed arguments in, the exit code out."""

SOCKET_HELP = (
    "the node's local socket (default: $ICND_SOCKET, else $XDG_RUNTIME_DIR/icnd.sock, else /tmp/icnd-$UID.sock)"
)


def name_arg(text: str) -> Name:
    if not text:  # (Name("") is the root name: a forgotten shell variable must not fetch or route "/")
        raise argparse.ArgumentTypeError("an empty name: give a name URI such as /demo/hello ('/' for the root)")
    try:
        return Name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"bad name {text!r}: {exc}") from None


def node_name_arg(text: str) -> str:
    """``icnd run --name``: a name URI, as every name the CLI takes (`name_arg`).

    A relative one is refused, not completed: ``node/z`` would otherwise
    become ``/node/node/z`` silently; the message says what was probably meant."""
    if not text.startswith("/"):
        meant = f"/{text}" if "/" in text else f"/node/{text}"
        raise argparse.ArgumentTypeError(f"bad name {text!r}: a name URI starts with '/' (did you mean {meant}?)")
    return name_arg(text).to_uri()


def _int_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum}: {text!r}")
    return value


def positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def nonneg_int(text: str) -> int:
    return _int_at_least(text, 0)


def _seconds(text: str, *, allow_zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise argparse.ArgumentTypeError(f"must be {'>= 0' if allow_zero else '> 0'}: {text!r}")
    return value


def positive_seconds(text: str) -> float:
    return _seconds(text, allow_zero=False)


def nonneg_seconds(text: str) -> float:
    return _seconds(text, allow_zero=True)


def socket_path(text: str) -> str:
    """A ``--socket`` value as an absolute path, resolved against the working
    directory once, here: the daemon binds and every client connects to the
    same file whichever command is given the relative form (a relative path
    reaches the face layer as a ``unix://`` URI, which must be absolute)."""
    if not text:
        raise argparse.ArgumentTypeError("empty socket path")
    return os.path.abspath(os.path.expanduser(text))


def nonneg_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return value


def probability(text: str) -> float:
    value = nonneg_number(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {text!r}")
    return value


def face_arg(text: str) -> int | str:
    """A face id (digits, sent as an int) or a face URI."""
    return int(text) if text.isdigit() else text


@dataclass(frozen=True)
class Arg:
    """One ``add_argument`` call, kept as data so tables of commands can hold it."""

    flags: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(*self.flags, **self.options)


def arg(*flags: str, **options: Any) -> Arg:
    return Arg(flags, options)


CLIENT_FILES: dict[str, str] = {}
"""``--key``/``--cert``/``--trust`` of the command being parsed, by flag name
(``key``, ``cert``, ``trust``): `icnd.cli.session` opens every client with
them (also for commands that hand it only ``--socket``).  Cleared by
`Parents.build`, i.e. once per parse."""


class _ClientFile(argparse.Action):
    """Stores the value and records it in `CLIENT_FILES`."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        CLIENT_FILES[self.dest] = values


@dataclass(frozen=True)
class Parents:
    """The option groups commands inherit (argparse ``parents``)."""

    socket: list[argparse.ArgumentParser]
    """``--socket`` (and the client's ``--key``/``--cert``/``--trust``): every command that talks to a node."""
    mgmt: list[argparse.ArgumentParser]
    """``--socket`` and ``--json``: commands whose result has a stable JSON form."""

    @classmethod
    def build(cls) -> Parents:
        socket_opt = argparse.ArgumentParser(add_help=False)
        socket_opt.add_argument("--socket", metavar="PATH", type=socket_path, help=SOCKET_HELP)
        CLIENT_FILES.clear()
        socket_opt.add_argument("--key", metavar="FILE", action=_ClientFile,
                                help="sign as this Ed25519 identity (a key file from 'icnd keygen')")
        socket_opt.add_argument("--cert", metavar="FILE", action=_ClientFile,
                                help="this identity's certificate (from 'icnd cert issue'; needs --key): "
                                     "handed to the node so others can verify what this command signs")
        socket_opt.add_argument("--trust", metavar="FILE", action=_ClientFile,
                                help="accept only Data that this trust schema (TOML) accepts")
        json_opt = argparse.ArgumentParser(add_help=False)
        json_opt.add_argument("--json", action="store_true", help="print the result as JSON (stable keys)")
        return cls(socket=[socket_opt], mgmt=[socket_opt, json_opt])


OUTER_SOCKET = "outer_socket"
OUTER_JSON = "outer_json"


def add_outer_options(parser: argparse.ArgumentParser, *, json: bool = False) -> None:
    """``--socket`` (and ``--json``) given before the (sub)command, as in
    ``icnd --socket X status`` or ``icnd route --json``.

    They land under their own names (`OUTER_SOCKET`, `OUTER_JSON`; absent
    unless given), because argparse lets a subcommand's defaults overwrite
    what an outer parser stored under the same name; `merge_outer_options`
    folds them in after parsing, the subcommand's own flag winning."""
    parser.add_argument("--socket", dest=OUTER_SOCKET, metavar="PATH", type=socket_path, default=argparse.SUPPRESS,
                        help=SOCKET_HELP + "; also accepted after the command")
    if json:
        parser.add_argument("--json", dest=OUTER_JSON, action="store_true", default=argparse.SUPPRESS,
                            help="print the result as JSON (stable keys)")


def merge_outer_options(args: argparse.Namespace) -> None:
    if getattr(args, "socket", None) is None:
        args.socket = getattr(args, OUTER_SOCKET, None)
    args.json = bool(getattr(args, "json", False) or getattr(args, OUTER_JSON, False))


def add_command(
    subparsers: Any,
    name: str,
    handler: Handler | None,
    help: str,
    parents: list[argparse.ArgumentParser] | None = None,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A (sub)command `name` that runs `handler` (None for a group whose verbs have their own)."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        name, help=help, description=description or help, parents=parents or []
    )
    p.set_defaults(handler=handler)
    return p


def add_group(subparsers: Any, name: str, help: str, description: str, *, dest: str = "verb",
              metavar: str = "VERB", default: Handler | None = None, node: bool = False) -> Any:
    """A command made of verbs (``icnd face list``): returns the subparsers to add the verbs to.

    With a `default` handler the verb may be left out (``icnd route`` lists,
    as ``nfdc route`` does).  A group whose verbs talk to a node (`node`, or
    a `default`) takes ``--socket`` and ``--json`` before its verb as well
    (``icnd face --socket X list``), as the top level does."""
    group = subparsers.add_parser(name, help=help, description=description)
    if default is not None:
        group.set_defaults(handler=default)
    if node or default is not None:
        add_outer_options(group, json=True)
    return group.add_subparsers(dest=dest, metavar=metavar, required=default is None)
