"""Named data from a shell: ``icnd ping``, ``fetch`` and ``publish`` (interface §5).

Fetch and publish show a progress bar on stderr when it is a terminal."""

from __future__ import annotations

import argparse
import math
import os
import secrets
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable

import trio

from icnd.cli.errors import CliError
from icnd.cli.options import Parents, add_command, name_arg, nonneg_seconds, positive_int, positive_seconds
from icnd.cli.session import open_client
from icnd.errors import CommandError, Nacked, Timeout
from icnd.name import Name
from icnd.objects.manifest import DEFAULT_SEGMENT_SIZE
from icnd.packet import MAX_LIFETIME_MS, Interest


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
    async with open_client(args.socket) as client:
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
                sent_at = started
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


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress callback drawing a tqdm bar on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(desc=label, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, leave=False)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()


def cmd_fetch(args: argparse.Namespace) -> int:
    to_file = bool(args.output) and args.output != "-"

    async def fetch() -> bytes | bytearray:
        with _progress(f"fetch {args.name}") as progress:
            try:
                async with open_client(args.socket) as client:
                    return await client.fetch_object(
                        args.name, timeout=args.timeout, verify=not args.no_verify,
                        out=args.output if to_file else None, progress=progress,
                    )
            except OSError as exc:
                raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None

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
        with _progress(f"publish {args.name}") as progress:
            try:
                async with open_client(args.socket) as client:
                    return await client.publish_object(args.name, source, segment_size=args.segment_size,
                                                       freshness=args.freshness, progress=progress)
            except CommandError as exc:
                raise CliError(f"publish {args.name}: {exc.message}") from None
            except ValueError as exc:
                raise CliError(f"publish {args.name}: {exc}") from None

    manifest = trio.run(publish)
    print(f"published {manifest.name} version {manifest.version} ({size} bytes in {manifest.segments} "
          f"segment{'s' if manifest.segments != 1 else ''})")
    return 0


def add_commands(subparsers: Any, parents: Parents) -> None:
    p = add_command(
        subparsers, "ping", cmd_ping, "measure round-trip times to a prefix", parents=parents.socket,
        description="Like ndnping: send Interests for NAME/ping/<random> (MustBeFresh), one line per "
        "reply (RTT), timeout or Nack, then statistics. Nodes answer /node/NAME/ping/... themselves. "
        "Runs until interrupted unless -c is given. Exit 0 if any reply came back, else 1.",
    )
    p.add_argument("name", metavar="NAME", type=name_arg, help="prefix to ping, e.g. /node/a")
    p.add_argument("-c", "--count", type=positive_int, help="stop after N probes (default: until Ctrl-C)")
    p.add_argument("-i", "--interval", type=nonneg_seconds, default=1.0, metavar="S",
                   help="seconds between probes (default: 1)")
    p.add_argument("--timeout", type=positive_seconds, default=4.0, metavar="S",
                   help="seconds to wait for each reply (default: 4)")

    p = add_command(
        subparsers, "fetch", cmd_fetch, "fetch a (segmented) object by name", parents=parents.socket,
        description="Fetch the newest version of the object NAME (or the version NAME/v=N), checking "
        "the manifest's signature and every segment against it, and write it to FILE or standard "
        "output; a plain single Data under NAME is fetched too. Progress bar on a terminal.",
    )
    p.add_argument("name", metavar="NAME", type=name_arg, help="the name to fetch")
    p.add_argument("-o", "--output", metavar="FILE", help="write the content to FILE (default: stdout); written to a temporary file in the same directory and renamed on success, so a failed fetch leaves FILE untouched")
    p.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="S",
                   help="give up after S seconds (default: 60)")
    p.add_argument("--no-verify", action="store_true", help="do not verify signatures")

    p = add_command(
        subparsers, "publish", cmd_publish, "publish a file under a name through the local node",
        parents=parents.socket,
        description="Publish FILE (any size) as a versioned, segmented object NAME: the local node "
        "stores it (in its data directory when it has one), signs its manifest and serves it. "
        "Progress bar on a terminal.",
    )
    p.add_argument("name", metavar="NAME", type=name_arg, help="the object's name")
    p.add_argument("file", metavar="FILE", help="the content ('-' reads standard input)")
    p.add_argument("--freshness", type=nonneg_seconds, metavar="S",
                   help="freshness period of the segments in seconds (default: 3600)")
    p.add_argument("--segment-size", type=positive_int, default=DEFAULT_SEGMENT_SIZE, metavar="BYTES",
                   help=f"segment size (default: {DEFAULT_SEGMENT_SIZE})")
