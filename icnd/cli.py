"""The ``icnd`` command: run a node, operate it, use the network from a shell.

    icnd run [--config FILE] [--name /node/NAME] [--listen URI ...] ...
    icnd status | face | route | cs | strategy ...     (nfdc-like, over the local socket)
    icnd ping | fetch | publish | keygen

Exit codes (the contract in interface.md §3-§5): 0 success; 1 the operation
failed (timeout, Nack, refused command, no node to talk to); 2 usage errors
(argparse's own), bad configuration or a daemon that cannot start.  Expected
errors are one line, ``icnd: error: <message>``, on stderr — never a
traceback.  Management commands print their result as aligned tables, or
with ``--json`` exactly the result the node returned (see docs/management.md).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import secrets
import signal
import sys
from typing import Any, Callable, Sequence

import trio

from icnd import __version__
from icnd.client.door import CommandFailed, connect
from icnd.objects.manifest import DEFAULT_SEGMENT_SIZE
from icnd.daemon.config import (
    LOG_LEVELS,
    ConfigError,
    NodeConfig,
    load,
    parse_function_flag,
    parse_group_flag,
    parse_route_flag,
    validate,
)
from icnd.errors import Error, Nacked, Timeout
from icnd.name import Name
from icnd.packet import MAX_LIFETIME_MS, Interest

PROG = "icnd"


class CliError(Exception):
    """An expected failure: printed as one line, exits with `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)


# --- output helpers ------------------------------------------------------------------


def format_table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None, indent: int = 0) -> str:
    """Rows as aligned columns: numbers right-aligned, everything else left-aligned."""
    table = [list(header)] if header else []
    table += [list(row) for row in rows]
    if not table:
        return ""
    ncols = max(len(row) for row in table)
    numeric = [
        all(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in rows if i < len(row))
        and any(i < len(row) for row in rows)
        for i in range(ncols)
    ]
    cells = [[_cell(v) for v in row] + [""] * (ncols - len(row)) for row in table]
    widths = [max(len(row[i]) for row in cells) for i in range(ncols)]
    lines = []
    for row in cells:
        parts = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append((" " * indent + "  ".join(parts)).rstrip())
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _print(text: str) -> None:
    if text:
        print(text)


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s"


# --- argument types ------------------------------------------------------------------------


def _name_arg(text: str) -> Name:
    try:
        return Name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"bad name {text!r}: {exc}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value


def _nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return value


def _seconds(text: str, *, allow_zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise argparse.ArgumentTypeError(f"must be {'>= 0' if allow_zero else '> 0'}: {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    return _seconds(text, allow_zero=False)


def _nonneg_seconds(text: str) -> float:
    return _seconds(text, allow_zero=True)


def _face_arg(text: str) -> int | str:
    """A face id (digits, sent as an int) or a face URI."""
    return int(text) if text.isdigit() else text


# --- icnd run ---------------------------------------------------------------------------------


def build_config(args: argparse.Namespace) -> NodeConfig:
    """The TOML file (if any) with the command-line flags on top.

    A list flag given on the command line replaces the file's list."""
    cfg = load(args.config) if args.config else NodeConfig()
    if args.name is not None:
        cfg.name = args.name
    if args.socket is not None:
        cfg.socket = args.socket
    if args.listen is not None:
        cfg.listen = list(args.listen)
    if args.ndn_listen is not None:
        cfg.ndn_listen = list(args.ndn_listen)
    if args.face is not None:
        cfg.faces = list(args.face)
    if args.route is not None:
        cfg.routes = [parse_route_flag(text) for text in args.route]
    if args.function is not None:
        cfg.functions = [parse_function_flag(text) for text in args.function]
    if args.function_pool is not None:
        cfg.function_pool = args.function_pool
    if args.group is not None:
        cfg.groups = [parse_group_flag(text) for text in args.group]
    if args.data_dir is not None:
        cfg.data_dir = args.data_dir
    if args.log_level is not None:
        cfg.log_level = args.log_level
    if args.log_json:
        cfg.log_json = True
    validate(cfg, args.config or "command line")
    return cfg


def cmd_run(args: argparse.Namespace) -> int:
    from icnd.daemon.logs import setup_logging
    from icnd.daemon.node import Node, StartupError
    from icnd.daemon.runtime import tune_gc

    try:
        cfg = build_config(args)
    except ConfigError as exc:
        raise CliError(str(exc), 2) from None
    setup_logging(cfg.log_level, cfg.log_json)
    tune_gc()
    try:
        trio.run(_run_node, Node(cfg))
    except StartupError as exc:
        raise CliError(str(exc), 2) from None
    return 0


async def _run_node(node: Any) -> None:
    """Bind, serve until SIGINT/SIGTERM, then let `serve` shut everything down."""
    import logging

    log = logging.getLogger("icnd.cli")
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        await node.bind()
        async with trio.open_nursery() as nursery:
            await nursery.start(node.serve)
            try:
                print(f"{PROG}: {node.name} ready, socket {os.path.abspath(node.socket_path)}", flush=True)
            except OSError:
                pass  # nobody reads stdout; the daemon runs on regardless
            async for signum in signals:
                log.info("received %s, shutting down", signal.Signals(signum).name)
                nursery.cancel_scope.cancel()
                break


# --- management ---------------------------------------------------------------------------------


async def _command(socket: str | None, module: str, verb: str, **params: Any) -> Any:
    async with connect(socket) as client:
        try:
            return await client.command(module, verb, **params)
        except CommandFailed as exc:
            raise CliError(f"{module} {verb}: {exc.message}") from None


def _mgmt(args: argparse.Namespace, module: str, verb: str, **params: Any) -> Any:
    return trio.run(functools.partial(_command, args.socket, module, verb, **params))


def cmd_status(args: argparse.Namespace) -> int:
    status = _mgmt(args, "status", "get")
    if args.json:
        _print_json(status)
        return 0
    rows = [
        ("name", status.get("name")),
        ("version", status.get("version")),
        ("uptime", _duration(float(status.get("uptime_s", 0)))),
    ]
    for key in ("pid", "socket", "key"):
        if key in status:
            rows.append((key, status[key]))
    if status.get("listen"):
        rows.append(("listen", ", ".join(status["listen"])))
    _print(format_table(rows))
    for section in ("counters", "tables"):
        values = status.get(section) or {}
        print(f"\n{section}")
        _print(format_table(sorted(values.items()) if section == "tables" else list(values.items()), indent=2))
    return 0


def cmd_face_list(args: argparse.Namespace) -> int:
    faces = _mgmt(args, "face", "list")
    if args.json:
        _print_json(faces)
        return 0
    rows = [
        (
            f["id"],
            f["remote_uri"],
            f["local_uri"],
            _face_flags(f),
            f["counters"].get("in_packets", 0),
            f["counters"].get("out_packets", 0),
        )
        for f in faces
    ]
    _print(format_table(rows, ("ID", "REMOTE", "LOCAL", "FLAGS", "IN", "OUT")))
    return 0


def _face_flags(face: dict) -> str:
    flags = [flag for flag in ("local", "persistent") if face.get(flag)]
    return ",".join(flags) or "-"


def cmd_face_create(args: argparse.Namespace) -> int:
    face = _mgmt(args, "face", "create", uri=args.uri)
    if args.json:
        _print_json(face)
    else:
        print(f"face {face['id']} {face['remote_uri']} ({_face_flags(face)})")
    return 0


def cmd_face_destroy(args: argparse.Namespace) -> int:
    result = _mgmt(args, "face", "destroy", id=args.id)
    if args.json:
        _print_json(result)
    else:
        print(f"face {result['id']} destroyed")
    return 0


def cmd_route_list(args: argparse.Namespace) -> int:
    routes = _mgmt(args, "route", "list")
    if args.json:
        _print_json(routes)
        return 0
    rows = [(r["prefix"], hop["face"], hop["cost"], hop["uri"]) for r in routes for hop in r["nexthops"]]
    _print(format_table(rows, ("PREFIX", "FACE", "COST", "URI")))
    return 0


def cmd_route_add(args: argparse.Namespace) -> int:
    result = _mgmt(args, "route", "add", prefix=args.prefix.to_uri(), face=args.face, cost=args.cost)
    if args.json:
        _print_json(result)
    else:
        print(f"route {result['prefix']} via face {result['face']} cost {result['cost']} added")
    return 0


def cmd_route_remove(args: argparse.Namespace) -> int:
    result = _mgmt(args, "route", "remove", prefix=args.prefix.to_uri(), face=args.face)
    if args.json:
        _print_json(result)
    else:
        print(f"route {result['prefix']} via face {result['face']} removed")
    return 0


def cmd_cs_list(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"prefix": args.prefix.to_uri()}
    if args.limit is not None:
        params["limit"] = args.limit
    entries = _mgmt(args, "cs", "list", **params)
    if args.json:
        _print_json(entries)
        return 0
    rows = [(e["name"], e["size"], "fresh" if e["fresh"] else "stale", e["content_type"]) for e in entries]
    _print(format_table(rows, ("NAME", "SIZE", "FRESH", "TYPE")))
    return 0


def cmd_cs_erase(args: argparse.Namespace) -> int:
    result = _mgmt(args, "cs", "erase", prefix=args.prefix.to_uri())
    if args.json:
        _print_json(result)
    else:
        print(f"erased {result['erased']} entries under {args.prefix}")
    return 0


def cmd_strategy_list(args: argparse.Namespace) -> int:
    choices = _mgmt(args, "strategy", "list")
    if args.json:
        _print_json(choices)
        return 0
    _print(format_table([(c["prefix"], c["strategy"]) for c in choices], ("PREFIX", "STRATEGY")))
    return 0


def cmd_strategy_set(args: argparse.Namespace) -> int:
    result = _mgmt(args, "strategy", "set", prefix=args.prefix.to_uri(), strategy=args.strategy)
    if args.json:
        _print_json(result)
    else:
        print(f"strategy {result['strategy']} set at {result['prefix']}")
    return 0


def cmd_strategy_unset(args: argparse.Namespace) -> int:
    result = _mgmt(args, "strategy", "unset", prefix=args.prefix.to_uri())
    if args.json:
        _print_json(result)
    else:
        print(f"strategy unset at {result['prefix']}")
    return 0


# --- using the network --------------------------------------------------------------------------


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


def _jsonable(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def cmd_call(args: argparse.Namespace) -> int:
    values = _parse_call_args(args)

    async def invoke() -> Any:
        async with connect(args.socket) as client:
            return await client.call(args.fn, *values, timeout=args.timeout, pure=args.pure)

    try:
        result = trio.run(invoke)
    except (TypeError, ValueError) as exc:
        raise CliError(f"call {args.fn}: {exc}") from None
    import numpy as np

    if args.output:
        if not isinstance(result, np.ndarray):
            raise CliError(f"-o: the result is a {type(result).__name__}, not an array")
        np.save(args.output, result, allow_pickle=False)
        print(f"saved {result.dtype} {result.shape} to {args.output}")
    elif args.json:
        print(json.dumps(_jsonable(result)))
    elif isinstance(result, np.ndarray):
        print(f"array {result.dtype} {result.shape}")
        print(result)
    else:
        print(json.dumps(_jsonable(result)) if not isinstance(result, str) else result)
    return 0


def _load_npy(path: str) -> Any:
    import numpy as np

    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise CliError(f"{path}: not a readable .npy array ({exc})", 1) from None


def cmd_reduce(args: argparse.Namespace) -> int:
    async def run() -> Any:
        async with connect(args.socket) as client:
            return await client.reduce(args.group, args.round, args.op, timeout=args.timeout,
                                       partial=args.partial, version=args.version)

    try:
        r = trio.run(run)
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
            summary["array"] = _jsonable(r.array)
        _print_json(summary)
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


def cmd_contribute(args: argparse.Namespace) -> int:
    array = _load_npy(args.file)

    async def run() -> Any:
        async with connect(args.socket) as client:
            return await client.contribute(args.group, args.round, array, member=args.member)

    try:
        result = trio.run(run)
    except ValueError as exc:
        raise CliError(f"contribute to {args.group}: {exc}") from None
    if args.json:
        _print_json(result)
    else:
        print(f"{result['member']} contributed {result['dtype']} {tuple(result['shape'])} to {result['group']} "
              f"round {result['round']} ({result['segments']} segment(s))")
    return 0


def _print_group(info: dict) -> None:
    rows = [("group", info["group"]), ("version", info["version"]), ("name", info["name"]),
            ("members", ", ".join(info["members"])), ("rendezvous", ", ".join(info["rendezvous"])),
            ("ops", ", ".join(info["ops"])), ("segment bytes", info["segment_bytes"]),
            ("max bytes", info["max_bytes"]), ("deadline ms", info["deadline_ms"] or "none")]
    print(format_table(rows))


def cmd_group_create(args: argparse.Namespace) -> int:
    async def run() -> Any:
        async with connect(args.socket) as client:
            return await client.create_group(args.name, args.members, rendezvous=args.rendezvous,
                                             segment_bytes=args.segment_bytes, deadline=args.deadline)

    return _show_group(args, trio.run(run))


def cmd_group_show(args: argparse.Namespace) -> int:
    info = _mgmt(args, "group", "show", name=args.name, **({} if args.version is None else {"version": args.version}))
    info.pop("descriptor", None)
    return _show_group(args, info)


def _show_group(args: argparse.Namespace, info: dict) -> int:
    if args.json:
        _print_json(info)
    else:
        _print_group(info)
    return 0


def cmd_group_list(args: argparse.Namespace) -> int:
    groups = _mgmt(args, "group", "list")
    if args.json:
        _print_json(groups)
    else:
        print(format_table([(g["group"], g["version"], len(g["members"]), ", ".join(g["rendezvous"]))
                            for g in groups], ("GROUP", "VERSION", "MEMBERS", "RENDEZVOUS")))
    return 0


def cmd_ping(args: argparse.Namespace) -> int:
    return trio.run(_ping, args)


async def _ping(args: argparse.Namespace) -> int:
    """ndnping-like: sequential probes ``NAME/ping/<random hex>``, then statistics.

    Probes are sent one at a time (the next one `interval` after the previous
    was sent, or as soon as it is answered if that took longer), without
    retransmission, so each line is one Interest's fate."""
    prefix: Name = args.name
    rtts: list[float] = []
    sent = 0
    started = trio.current_time()
    async with connect(args.socket) as client:
        print(f"PING {prefix}", flush=True)
        with trio.open_signal_receiver(signal.SIGINT) as signals, trio.CancelScope() as probing:

            async def stop_on_signal() -> None:
                async for _ in signals:
                    probing.cancel()
                    return

            async with trio.open_nursery() as nursery:
                nursery.start_soon(stop_on_signal)
                lifetime_ms = min(MAX_LIFETIME_MS, max(1, int(args.timeout * 1000)))
                seq = 0
                while args.count is None or seq < args.count:
                    if seq:
                        await trio.sleep_until(sent_at + args.interval)
                    interest = Interest(
                        prefix.append("ping", secrets.token_hex(8)), lifetime_ms=lifetime_ms, must_be_fresh=True
                    )
                    sent_at = trio.current_time()
                    sent += 1
                    try:
                        await client.express(interest, timeout=args.timeout, retx=None)
                    except Timeout:
                        print(f"timeout from {prefix}: seq={seq}", flush=True)
                    except Nacked as exc:
                        print(f"nack from {prefix}: seq={seq} reason={exc.reason}", flush=True)
                    else:
                        rtt = (trio.current_time() - sent_at) * 1000
                        rtts.append(rtt)
                        print(f"content from {prefix}: seq={seq} time={rtt:.3f} ms", flush=True)
                    seq += 1
                nursery.cancel_scope.cancel()
    elapsed = (trio.current_time() - started) * 1000
    received = len(rtts)
    loss = 100.0 * (sent - received) / sent if sent else 0.0
    print(f"\n--- {prefix} ping statistics ---")
    print(f"{sent} packets transmitted, {received} received, {loss:.4g}% packet loss, time {elapsed:.0f} ms")
    if rtts:
        avg = sum(rtts) / received
        mdev = math.sqrt(max(0.0, sum(r * r for r in rtts) / received - avg * avg))
        print(f"rtt min/avg/max/mdev = {min(rtts):.3f}/{avg:.3f}/{max(rtts):.3f}/{mdev:.3f} ms")
    sys.stdout.flush()
    return 0 if received else 1


def _progress_bar(label: str):  # type: ignore[no-untyped-def]
    """A tqdm progress bar on stderr when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(desc=label, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, leave=False)


def _progress_callback(bar):  # type: ignore[no-untyped-def]
    if bar is None:
        return None

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return update


def cmd_fetch(args: argparse.Namespace) -> int:
    to_file = bool(args.output) and args.output != "-"

    async def fetch() -> bytes:
        bar = _progress_bar(f"fetch {args.name}")
        try:
            async with connect(args.socket) as client:
                return await client.fetch_object(
                    args.name, timeout=args.timeout, verify=not args.no_verify,
                    out=args.output if to_file else None, progress=_progress_callback(bar),
                )
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        finally:
            if bar is not None:
                bar.close()

    content = trio.run(fetch)
    if not to_file:
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    if args.file == "-":
        source: Any = sys.stdin.buffer.read()
        size = len(source)
    else:
        source = args.file
        try:
            size = os.path.getsize(source)
            with open(source, "rb"):
                pass
        except OSError as exc:
            raise CliError(f"cannot read {args.file}: {exc.strerror or exc}") from None

    async def publish() -> Any:
        bar = _progress_bar(f"publish {args.name}")
        try:
            async with connect(args.socket) as client:
                return await client.publish_object(args.name, source, segment_size=args.segment_size,
                                                   freshness=args.freshness, progress=_progress_callback(bar))
        except CommandFailed as exc:
            raise CliError(f"publish {args.name}: {exc.message}") from None
        except ValueError as exc:
            raise CliError(f"publish {args.name}: {exc}") from None
        finally:
            if bar is not None:
                bar.close()

    manifest = trio.run(publish)
    print(f"published {manifest.name} version {manifest.version} ({size} bytes in {manifest.segments} "
          f"segment{'s' if manifest.segments != 1 else ''})")
    return 0


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


# --- the parser ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="icnd: an information-centric networking daemon and the tools to operate and use it.",
        epilog="Run 'icnd COMMAND --help' for a command's options. Exit codes: 0 success, "
        "1 the operation failed, 2 usage or configuration error.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    socket_opt = argparse.ArgumentParser(add_help=False)
    socket_opt.add_argument(
        "--socket",
        metavar="PATH",
        help="the node's local socket (default: $ICND_SOCKET, else $XDG_RUNTIME_DIR/icnd.sock, "
        "else /tmp/icnd-$UID.sock)",
    )
    json_opt = argparse.ArgumentParser(add_help=False)
    json_opt.add_argument("--json", action="store_true", help="print the result as JSON (stable keys)")
    mgmt = [socket_opt, json_opt]

    def command(parent: Any, name: str, handler: Callable[[argparse.Namespace], int], help: str,
                parents: list | None = None, description: str | None = None) -> argparse.ArgumentParser:
        p = parent.add_parser(name, help=help, description=description or help, parents=parents or [])
        p.set_defaults(handler=handler)
        return p

    # icnd run
    run = command(
        sub, "run", cmd_run, "run a node (until SIGINT/SIGTERM)",
        description="Run an icnd node in the foreground until SIGINT or SIGTERM, then shut down cleanly. "
        "Settings come from the TOML config file, then the flags (a list flag replaces the file's list). "
        "A bad configuration or a port in use exits with code 2 before anything starts.",
    )
    run.add_argument("--config", metavar="FILE", help="TOML configuration file (see docs/configuration.md)")
    run.add_argument("--name", metavar="/node/NAME", help="the node's name (default: /node/<hostname>)")
    run.add_argument("--socket", metavar="PATH",
                     help="local Unix socket for clients and management (default: $ICND_SOCKET, "
                     "else $XDG_RUNTIME_DIR/icnd.sock, else /tmp/icnd-$UID.sock)")
    run.add_argument("--listen", metavar="URI", action="append",
                     help="listen on udp://HOST:PORT or tcp://HOST:PORT; a bare HOST means UDP and TCP "
                     "on port 6363 (repeatable; default 0.0.0.0)")
    run.add_argument("--ndn-listen", metavar="URI", action="append",
                     help="listen for NDN applications (NDN TLV format, e.g. python-ndn) on unix:///path or "
                     "tcp://HOST:PORT (repeatable; NFD's default is unix:///run/nfd/nfd.sock; see docs/ndn.md)")
    run.add_argument("--face", metavar="URI", action="append",
                     help="create a persistent face to URI at start-up (repeatable)")
    run.add_argument("--route", metavar="PREFIX=URI[,COST]", action="append",
                     help="add a route to PREFIX via the face to URI at start-up (repeatable)")
    run.add_argument("--function", metavar="MODULE:CALLABLE=/fn/NAME", action="append",
                     help="host a named function (repeatable): import CALLABLE from MODULE and serve it "
                     "under /fn/NAME")
    run.add_argument("--function-pool", choices=("threads", "processes"),
                     help="where synchronous hosted functions run: worker threads (the default) or worker "
                     "processes, which import the function by name (function_workers of either)")
    run.add_argument("--group", metavar="NAME=MEMBER,...[;OPTION=VALUE]", action="append",
                     help="know reduction group NAME (repeatable): members are ids (member on the node of "
                     "that name) or ID@NODE; options: rendezvous=NODE,... (nodes where the split of "
                     "segments starts; default: the members' nodes), segment_bytes=N, deadline_ms=N; "
                     "see docs/reduction.md")
    run.add_argument("--data-dir", metavar="DIR",
                     help="directory for the node's identity key, published data and objects, kept "
                     "across restarts (default: none: a fresh identity, published data in memory, "
                     "objects in a temporary directory)")
    run.add_argument("--log-level", metavar="LEVEL", type=str.lower, choices=LOG_LEVELS,
                     help=f"one of {', '.join(LOG_LEVELS)} (default: info)")
    run.add_argument("--log-json", action="store_true", default=None,
                     help="log one JSON object per line (keys ts, level, logger, msg, exc)")

    # icnd status
    command(sub, "status", cmd_status, "show the node's name, uptime, version, counters and table sizes",
            parents=mgmt)

    # icnd face
    face = sub.add_parser("face", help="list, create and destroy faces",
                          description="List, create and destroy the node's faces.")
    face_sub = face.add_subparsers(dest="verb", metavar="VERB", required=True)
    command(face_sub, "list", cmd_face_list, "list faces (id, remote and local URI, flags, packets in/out)",
            parents=mgmt)
    p = command(face_sub, "create", cmd_face_create,
                "create a persistent face to URI (or return the existing one)", parents=mgmt)
    p.add_argument("uri", metavar="URI", help="udp://HOST:PORT, tcp://HOST:PORT or unix:///path")
    p = command(face_sub, "destroy", cmd_face_destroy, "close a face", parents=mgmt)
    p.add_argument("id", metavar="ID", type=_nonneg_int, help="the face id (see 'icnd face list')")

    # icnd route
    route = sub.add_parser("route", help="list, add and remove routes (FIB entries)",
                           description="List, add and remove routes in the node's FIB.")
    route_sub = route.add_subparsers(dest="verb", metavar="VERB", required=True)
    command(route_sub, "list", cmd_route_list, "list routes (one line per next hop)", parents=mgmt)
    p = command(route_sub, "add", cmd_route_add, "add a route to PREFIX via FACE", parents=mgmt,
                description="Add a route to PREFIX via FACE. FACE is a face id or a face URI; "
                "a face to the URI is created if it does not exist.")
    p.add_argument("prefix", metavar="PREFIX", type=_name_arg, help="name prefix, e.g. /demo")
    p.add_argument("face", metavar="FACE", type=_face_arg, help="face id or face URI")
    p.add_argument("--cost", type=_nonneg_int, default=0, help="route cost, lower is preferred (default: 0)")
    p = command(route_sub, "remove", cmd_route_remove, "remove the route to PREFIX via FACE", parents=mgmt)
    p.add_argument("prefix", metavar="PREFIX", type=_name_arg, help="name prefix")
    p.add_argument("face", metavar="FACE", type=_face_arg, help="face id or face URI")

    # icnd cs
    cs = sub.add_parser("cs", help="inspect and erase the Content Store",
                        description="Inspect and erase the node's Content Store (cache).")
    cs_sub = cs.add_subparsers(dest="verb", metavar="VERB", required=True)
    p = command(cs_sub, "list", cmd_cs_list, "list cached Data (name, size, freshness, content type)",
                parents=mgmt)
    p.add_argument("--prefix", type=_name_arg, default=Name("/"), help="only names under PREFIX (default: /)")
    p.add_argument("--limit", type=_positive_int, help="at most N entries (default: the node's, 1000)")
    p = command(cs_sub, "erase", cmd_cs_erase, "erase cached Data under PREFIX", parents=mgmt)
    p.add_argument("prefix", metavar="PREFIX", type=_name_arg, help="name prefix ('/' erases everything)")

    # icnd strategy
    strategy = sub.add_parser("strategy", help="choose forwarding strategies per prefix",
                              description="Choose forwarding strategies per name prefix.")
    strategy_sub = strategy.add_subparsers(dest="verb", metavar="VERB", required=True)
    command(strategy_sub, "list", cmd_strategy_list, "list strategy choices", parents=mgmt)
    p = command(strategy_sub, "set", cmd_strategy_set, "use strategy NAME for PREFIX", parents=mgmt)
    p.add_argument("prefix", metavar="PREFIX", type=_name_arg, help="name prefix")
    p.add_argument("strategy", metavar="NAME", help="strategy name: best-route, multicast or load-balance")
    p = command(strategy_sub, "unset", cmd_strategy_unset,
                "remove the strategy choice at PREFIX (it inherits its parent's)", parents=mgmt)
    p.add_argument("prefix", metavar="PREFIX", type=_name_arg, help="name prefix")

    # icnd call
    p = command(
        sub, "call", cmd_call, "invoke a named function and print its result", parents=[socket_opt],
        description="Invoke the named function FN (RICE over reflexive forwarding: the host pulls the "
        "arguments; long work comes back as a thunk that is polled). Each ARG is parsed as JSON when it "
        "can be (1, 2.5, \"text\", [1,2], {\"a\": 1}) and passed as a string otherwise; --json-args "
        "gives the whole argument list as one JSON array; --npy FILE passes a numpy array.",
    )
    p.add_argument("fn", metavar="FN", type=_name_arg, help="the function's name, e.g. /fn/matmul")
    p.add_argument("args", metavar="ARG", nargs="*", help="arguments (JSON or plain strings)")
    p.add_argument("--json-args", metavar="JSON", help="the argument list as a JSON array (replaces ARG...)")
    p.add_argument("--npy", metavar="FILE", action="append", default=[],
                   help="append a numpy array loaded from a .npy file (repeatable; never pickled)")
    p.add_argument("--pure", action="store_true",
                   help="name the call by its arguments' digest so caches can answer it (pure functions)")
    p.add_argument("--timeout", type=_positive_seconds, default=60.0, metavar="S",
                   help="give up after S seconds (default: 60)")
    p.add_argument("-o", "--output", metavar="FILE.npy", help="save an array result to FILE.npy")
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    # icnd reduce / contribute / group
    p = command(
        sub, "reduce", cmd_reduce, "fetch the aggregate of a reduction round", parents=mgmt,
        description="Fetch the aggregate (element-wise sum, max, min or mean) of the arrays the members of "
        "GROUP contributed to ROUND, combined in the network on the way (docs/reduction.md). Prints the "
        "contributors and the array, or saves it with -o. Exit 1 if the round is incomplete at the deadline "
        "(unless --partial) or contributions disagree in dtype or shape.",
    )
    p.add_argument("group", metavar="GROUP", help="reduction group name")
    p.add_argument("round", metavar="ROUND", type=_nonneg_int, help="round number")
    p.add_argument("--op", choices=("sum", "max", "min", "mean"), default="sum", help="operation (default: sum)")
    p.add_argument("-o", "--output", metavar="FILE.npy", help="save the aggregate to FILE.npy")
    p.add_argument("--partial", action="store_true",
                   help="accept a partial aggregate (flagged) if some members have not contributed by the deadline")
    p.add_argument("--timeout", type=_positive_seconds, default=10.0, metavar="S",
                   help="give up after S seconds (default: 10)")
    p.add_argument("--version", type=_positive_int, metavar="N", help="group version (default: the latest)")
    p = command(
        sub, "contribute", cmd_contribute, "contribute an array to a reduction round", parents=mgmt,
        description="Make the array in FILE.npy MEMBER's contribution to ROUND of GROUP, served by this "
        "node (never pickled). MEMBER defaults to the node's name.",
    )
    p.add_argument("group", metavar="GROUP", help="reduction group name")
    p.add_argument("round", metavar="ROUND", type=_nonneg_int, help="round number")
    p.add_argument("file", metavar="FILE.npy", help="the array (numpy .npy format)")
    p.add_argument("--member", metavar="ID", help="member id (default: this node's name)")
    group = command(sub, "group", None, "create and inspect reduction groups",  # type: ignore[arg-type]
                    description="Reduction groups: signed, versioned descriptors of members and rendezvous nodes.")
    group_sub = group.add_subparsers(dest="group_command", metavar="ACTION", required=True)
    p = command(group_sub, "create", cmd_group_create, "create a group (or a new version of it)", parents=mgmt,
                description="Create group NAME with MEMBERs (ID, the member on node ID, or ID@NODE), signed by "
                "this node and announced to every member's node and rendezvous node; the same contents again "
                "keep the version (and announce it again).")
    p.add_argument("name", metavar="NAME", help="group name")
    p.add_argument("members", metavar="MEMBER", nargs="+", help="member ID or ID@NODE")
    p.add_argument("--rendezvous", metavar="NODE", action="append",
                   help="a node where splits start (repeatable; default: the members' nodes)")
    p.add_argument("--segment-bytes", type=_positive_int, metavar="N",
                   help="segment size in bytes (default: 524288)")
    p.add_argument("--deadline", type=_positive_seconds, metavar="S",
                   help="the longest an aggregation waits for stragglers (default: the request's lifetime)")
    p = command(group_sub, "show", cmd_group_show, "show a group's descriptor", parents=mgmt)
    p.add_argument("name", metavar="NAME", help="group name")
    p.add_argument("--version", type=_positive_int, metavar="N", help="version (default: the latest)")
    command(group_sub, "list", cmd_group_list, "list the groups this node knows", parents=mgmt)

    # icnd ping
    p = command(
        sub, "ping", cmd_ping, "measure round-trip times to a prefix", parents=[socket_opt],
        description="Like ndnping: send Interests for NAME/ping/<random> (MustBeFresh), one line per "
        "reply (RTT), timeout or Nack, then statistics. Nodes answer /node/NAME/ping/... themselves. "
        "Runs until interrupted unless -c is given. Exit 0 if any reply came back, else 1.",
    )
    p.add_argument("name", metavar="NAME", type=_name_arg, help="prefix to ping, e.g. /node/a")
    p.add_argument("-c", "--count", type=_positive_int, help="stop after N probes (default: until Ctrl-C)")
    p.add_argument("-i", "--interval", type=_nonneg_seconds, default=1.0, metavar="S",
                   help="seconds between probes (default: 1)")
    p.add_argument("--timeout", type=_positive_seconds, default=4.0, metavar="S",
                   help="seconds to wait for each reply (default: 4)")

    # icnd fetch
    p = command(
        sub, "fetch", cmd_fetch, "fetch a (segmented) object by name", parents=[socket_opt],
        description="Fetch the newest version of the object NAME (or the version NAME/v=N), checking "
        "the manifest's signature and every segment against it, and write it to FILE or standard "
        "output; a plain single Data under NAME is fetched too. Progress bar on a terminal.",
    )
    p.add_argument("name", metavar="NAME", type=_name_arg, help="the name to fetch")
    p.add_argument("-o", "--output", metavar="FILE", help="write the content to FILE (default: stdout)")
    p.add_argument("--timeout", type=_positive_seconds, default=60.0, metavar="S",
                   help="give up after S seconds (default: 60)")
    p.add_argument("--no-verify", action="store_true", help="do not verify signatures")

    # icnd publish
    p = command(
        sub, "publish", cmd_publish, "publish a file under a name through the local node",
        parents=[socket_opt],
        description="Publish FILE (any size) as a versioned, segmented object NAME: the local node "
        "stores it (in its data directory when it has one), signs its manifest and serves it. "
        "Progress bar on a terminal.",
    )
    p.add_argument("name", metavar="NAME", type=_name_arg, help="the object's name")
    p.add_argument("file", metavar="FILE", help="the content ('-' reads standard input)")
    p.add_argument("--freshness", type=_nonneg_seconds, metavar="S",
                   help="freshness period of the segments in seconds (default: 3600)")
    p.add_argument("--segment-size", type=_positive_int, default=DEFAULT_SEGMENT_SIZE, metavar="BYTES",
                   help=f"segment size (default: {DEFAULT_SEGMENT_SIZE})")

    # icnd keygen
    p = command(
        sub, "keygen", cmd_keygen, "create an Ed25519 identity",
        description="Create an Ed25519 identity key named <IDENTITY>/KEY/<id>, write it (private key "
        "included) to FILE with mode 0600, and print the key name. Never overwrites a file.",
    )
    p.add_argument("--out", metavar="FILE", default="identity.key",
                   help="where to write the key (default: ./identity.key)")
    p.add_argument("--name", dest="identity", metavar="IDENTITY", type=_name_arg,
                   help="identity name (default: /node/<hostname>)")

    # icnd topo
    topo = sub.add_parser(
        "topo", help="start, stop or simulate a topology of nodes",
        description="Start one daemon per node of a topology file (topologies/*.toml), stop a "
        "topology running in the background, or simulate one in-process on a virtual clock.",
    )
    topo_sub = topo.add_subparsers(dest="verb", metavar="VERB", required=True)
    p = command(topo_sub, "up", cmd_topo_up,
                "start every node of FILE, print their sockets, stay in the foreground (Ctrl-C stops)")
    p.add_argument("file", metavar="FILE", help="topology file, e.g. topologies/grid9.toml")
    p.add_argument("--netns", action="store_true",
                   help="one network namespace per node (root only; otherwise falls back to processes "
                   "on loopback)")
    p.add_argument("--workdir", metavar="DIR",
                   help="sockets, logs, data and topology.json (default: $XDG_RUNTIME_DIR/icnd-topo, "
                   "else /tmp/icnd-topo-$UID)")
    p.add_argument("--log-level", type=str.lower, choices=LOG_LEVELS, default="info",
                   help="the daemons' log level")
    p = command(topo_sub, "down", cmd_topo_down, "stop the topology running in the background from its workdir")
    p.add_argument("--workdir", metavar="DIR", help="as given to 'icnd topo up' (same default)")
    p = command(topo_sub, "sim", cmd_topo_sim,
                "simulate FILE in-process on a virtual clock (the real forwarding core, many nodes)")
    p.add_argument("file", metavar="FILE", help="topology file, e.g. topologies/grid9.toml")
    p.add_argument("--fetch", nargs=2, action="append", metavar=("FROM", "TO"), default=[],
                   help="node FROM fetches a test object published at node TO (repeatable; in order)")
    p.add_argument("--scenario", metavar="FILE",
                   help="TOML file of timed [[step]] actions: kill, restart, cut, heal, fetch")
    p.add_argument("--seed", type=int, default=0, help="random seed for nonces and link loss (default: 0)")
    p.add_argument("--until", type=_positive_seconds, metavar="S", help="stop the simulation at S seconds")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    return parser


def cmd_topo_sim(args: argparse.Namespace) -> int:
    from icnd.topology import ScenarioError, TopologyError, format_report, report_json, simulate

    try:
        report = simulate(args.file, [tuple(f) for f in args.fetch], seed=args.seed,
                          scenario=args.scenario, until=args.until)
    except (TopologyError, ScenarioError) as exc:
        raise CliError(str(exc), 2) from None
    except ValueError as exc:
        raise CliError(str(exc), 2) from None
    print(json.dumps(report_json(report)) if args.json else format_report(report))
    return report.exit_code


def cmd_topo_up(args: argparse.Namespace) -> int:
    from icnd.topology.launch import main_up

    return main_up(args.file, netns=args.netns, workdir=args.workdir, log_level=args.log_level)


def cmd_topo_down(args: argparse.Namespace) -> int:
    from icnd.topology.launch import topo_down

    return topo_down(args.workdir)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except CliError as exc:
        _error(str(exc))
        return exc.code
    except Error as exc:
        _error(str(exc) or type(exc).__name__)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`icnd cs list | head`): stay quiet, as other tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
