"""``icnd run``: the daemon in the foreground (interface §3).

The configuration is the TOML file (if any) with the flags on top
(`build_config`); a bad one, or a daemon that cannot start (a port in use),
is exit 2 before anything starts.  SIGINT/SIGTERM shut the node down cleanly
(exit 0); SIGHUP reloads the configuration file (`icnd.daemon.reload`).
"""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from icnd.cli.errors import CliError
from icnd.cli.options import add_command, node_name_arg, positive_seconds, socket_path
from icnd.daemon.config import (
    LOG_LEVELS,
    ConfigError,
    NodeConfig,
    load,
    parse_face_flag,
    parse_function_flag,
    parse_group_flag,
    parse_listen_flag,
    parse_neighbor_flag,
    parse_route_flag,
    validate,
)

if TYPE_CHECKING:
    from icnd.daemon.node import Node


def build_config(args: argparse.Namespace) -> NodeConfig:
    """The TOML file (if any) with the command-line flags on top.

    A list flag given on the command line replaces the file's list."""
    cfg = load(args.config) if args.config else NodeConfig()
    if args.name is not None:
        cfg.name = args.name
    if args.socket is not None:
        cfg.socket = args.socket
    if args.listen is not None:
        cfg.listen = [parse_listen_flag(text) for text in args.listen]
    if args.ndn_listen is not None:
        cfg.ndn_listen = list(args.ndn_listen)
    if args.face is not None:
        cfg.faces = [parse_face_flag(text) for text in args.face]
    if args.route is not None:
        cfg.routes = [parse_route_flag(text) for text in args.route]
    if args.neighbor is not None:
        cfg.neighbors = [parse_neighbor_flag(text) for text in args.neighbor]
    if args.hello_interval is not None:
        cfg.routing.hello_interval_s = args.hello_interval
    if args.dead_interval is not None:
        cfg.routing.dead_interval_s = args.dead_interval
    if args.function is not None:
        cfg.functions = [parse_function_flag(text) for text in args.function]
    if args.function_pool is not None:
        cfg.function_pool = args.function_pool
    if args.group is not None:
        cfg.groups = [parse_group_flag(text) for text in args.group]
    if args.data_dir is not None:
        cfg.data_dir = args.data_dir
    for attr in ("key", "cert", "trust"):  # relative to the working directory (the file's: to the file)
        value = getattr(args, attr, None)
        if value is not None:
            setattr(cfg, attr, os.path.abspath(value))
    if args.log_level is not None:
        cfg.log_level = args.log_level
    if args.log_json:
        cfg.log_json = True
    if args.http is not None:
        cfg.http = args.http
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
        trio.run(_run_node, Node(cfg), lambda: build_config(args))
    except StartupError as exc:
        raise CliError(str(exc), 2) from None
    return 0


async def _run_node(node: Node, load_config: Callable[[], NodeConfig]) -> None:
    """Bind, serve until SIGINT/SIGTERM, then let `serve` shut everything down.

    Once the node serves (local socket, listeners and configured faces up,
    functions hosted) it prints ``ready`` on stdout and tells a service
    manager (``READY=1``, `icnd.daemon.notify`).  SIGHUP reloads the
    configuration (`load_config`: the file with the flags on top;
    `icnd.daemon.reload`) and the node runs on whether or not it could."""
    import logging

    from icnd.daemon.notify import Notifier
    from icnd.daemon.reload import reload

    log = logging.getLogger("icnd.cli")
    notifier = Notifier.from_environ()
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        await node.bind()
        async with trio.open_nursery() as nursery:
            await nursery.start(node.serve)
            serving = f"serving {node.name} on {os.path.abspath(node.socket_path)}"
            try:
                print("ready", flush=True)
            except OSError:
                pass  # nobody reads stdout; the daemon runs on regardless
            notifier.ready(serving)
            async for signum in signals:
                if signum == signal.SIGHUP:
                    log.info("received SIGHUP, reloading the configuration")
                    notifier.reloading()
                    await reload(node, load_config)
                    notifier.ready(serving)
                    continue
                log.info("received %s, shutting down", signal.Signals(signum).name)
                notifier.stopping()
                nursery.cancel_scope.cancel()
                break


def add_commands(subparsers: Any) -> None:
    run = add_command(
        subparsers, "run", cmd_run, "run a node (until SIGINT/SIGTERM)",
        description="Run an icnd node in the foreground until SIGINT or SIGTERM, then shut down cleanly. "
        "Settings come from the TOML config file, then the flags (a list flag replaces the file's list). "
        "A bad configuration or a port in use exits with code 2 before anything starts. "
        "Prints 'ready' on stdout once it serves (and notifies systemd under Type=notify); SIGHUP reloads "
        "neighbours, faces, routes, functions and groups from the config file (docs/deployment.md).",
    )
    run.add_argument("--config", metavar="FILE", help="TOML configuration file (see docs/configuration.md)")
    run.add_argument("--name", metavar="/node/NAME", type=node_name_arg,
                     help="the node's name, a name URI (default: /node/<hostname>)")
    run.add_argument("--socket", metavar="PATH", type=socket_path,
                     help="local Unix socket for clients and management (default: $ICND_SOCKET, "
                     "else $XDG_RUNTIME_DIR/icnd.sock, else /tmp/icnd-$UID.sock)")
    run.add_argument("--listen", metavar="URI", action="append",
                     help="listen on udp://HOST:PORT or tcp://HOST:PORT; a bare HOST means UDP and TCP "
                     "on port 6363 (repeatable; default 0.0.0.0)")
    run.add_argument("--ndn-listen", metavar="URI", action="append",
                     help="listen for NDN applications (NDN TLV format, e.g. python-ndn) on unix:///path or "
                     "tcp://HOST:PORT (repeatable; NFD's default is unix:///run/nfd/nfd.sock; see docs/ndn.md)")
    run.add_argument("--face", metavar="URI", action="append",
                     help="create a permanent face to URI at start-up (repeatable): made whether or not the "
                     "peer is up, reconnected with backoff, never dropped")
    run.add_argument("--route", metavar="PREFIX=URI[,COST]", action="append",
                     help="add a route to PREFIX via the face to URI at start-up (repeatable); the face is "
                     "permanent, as --face's: the route stays while the peer is down or restarts")
    run.add_argument("--neighbor", metavar="URI[,cost=N]", action="append",
                     help="a routing neighbour at udp://HOST:PORT or tcp://HOST:PORT (repeatable): a permanent "
                     "face, made at start whether or not the peer is up and reconnected with backoff (the log "
                     "warns while no hello comes back); link cost N >= 1 (default 1); see docs/configuration.md")
    run.add_argument("--hello-interval", metavar="S", type=positive_seconds,
                     help="seconds between hellos to each neighbour (default 1; config routing.hello_interval_s)")
    run.add_argument("--dead-interval", metavar="S", type=positive_seconds,
                     help="a neighbour silent this long is down; must exceed the hello interval (default 3; "
                     "config routing.dead_interval_s)")
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
    run.add_argument("--key", metavar="FILE",
                     help="the node's identity key (icnd keygen; default: --data-dir's identity.key, else a "
                     "fresh one at every start)")
    run.add_argument("--cert", metavar="FILE",
                     help="a certificate of that key (icnd cert self|issue), served under its name (default: "
                     "a self-signed one made at start); one of another key is an error")
    run.add_argument("--trust", metavar="FILE",
                     help="the trust schema (TOML, see docs/security.md) the node applies to function callers, "
                     "group descriptors and contributions from other nodes (default: none: integrity only)")
    run.add_argument("--log-level", metavar="LEVEL", type=str.lower, choices=LOG_LEVELS,
                     help=f"one of {', '.join(LOG_LEVELS)} (default: info)")
    run.add_argument("--http", metavar="HOST:PORT",
                     help="serve a read-only status page at / and Prometheus metrics at /metrics on HOST:PORT "
                     "(default: off; config http; see docs/management.md)")
    run.add_argument("--log-json", action="store_true", default=None,
                     help="log one JSON object per line (keys ts, level, logger, msg, exc)")
