"""Named data from a shell: ``icnd ping``, ``fetch``, ``publish`` and ``poke`` (interface §5).

Fetch and publish show a progress bar on stderr when it is a terminal and end
with one line of statistics there (as ndncatchunks does; ``-q`` leaves it
out); with ``--json`` every command prints its result as one JSON object on
stdout instead (keys in docs/management.md#the-cli-and-json).  ``fetch``
with ``--can-be-prefix``, ``--must-be-fresh`` or ``--lifetime`` sends exactly
one Interest so shaped and gets one Data (as ndnpeek); ``poke`` publishes one
Data (as ndnpoke, through the node's repo)."""

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
from icnd.cli.output import print_json
from icnd.cli.session import open_client
from icnd.errors import CommandError, Nacked, Timeout
from icnd.name import Name
from icnd.objects.fetch import FetchStats, fetch_object
from icnd.objects.manifest import DEFAULT_SEGMENT_SIZE
from icnd.packet import MAX_LIFETIME_MS, ContentType, Data, Interest


def cmd_ping(args: argparse.Namespace) -> int:
    return trio.run(_ping, args)


async def _ping(args: argparse.Namespace) -> int:
    """ndnping-like: sequential probes ``NAME/ping/<random hex>``, then statistics.

    Probes are sent one at a time (the next one `interval` after the previous
    was sent, or as soon as it is answered if that took longer), without
    retransmission, so each line is one Interest's fate."""
    prefix: Name = args.name
    rtts: list[float] = []
    replies: list[dict[str, Any]] = []
    sent = 0
    started = trio.current_time()

    def say(line: str) -> None:
        if not args.json:
            print(line, flush=True)

    async with open_client(args.socket) as client:
        say(f"PING {prefix}")
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
                        replies.append({"seq": seq, "result": "timeout"})
                        say(f"timeout from {prefix}: seq={seq}")
                    except Nacked as exc:
                        replies.append({"seq": seq, "result": "nack", "reason": exc.reason})
                        say(f"nack from {prefix}: seq={seq} reason={exc.reason}")
                    else:
                        rtt = (trio.current_time() - sent_at) * 1000
                        rtts.append(rtt)
                        replies.append({"seq": seq, "result": "content", "rtt_ms": round(rtt, 3)})
                        say(f"content from {prefix}: seq={seq} time={rtt:.3f} ms")
                    seq += 1
                nursery.cancel_scope.cancel()
    elapsed = (trio.current_time() - started) * 1000
    received = len(rtts)
    loss = 100.0 * (sent - received) / sent if sent else 0.0
    summary: dict[str, float] | None = None
    if rtts:
        avg = sum(rtts) / received
        mdev = math.sqrt(max(0.0, sum(r * r for r in rtts) / received - avg * avg))
        summary = {"min": min(rtts), "avg": avg, "max": max(rtts), "mdev": mdev}
    if args.json:
        print_json({"prefix": prefix.to_uri(), "sent": sent, "received": received, "loss_percent": loss,
                    "time_ms": round(elapsed, 3), "rtt_ms": {k: round(v, 3) for k, v in summary.items()} if summary else None,
                    "replies": replies})
        return 0 if received else 1
    print(f"\n--- {prefix} ping statistics ---")
    print(f"{sent} packets transmitted, {received} received, {loss:.4g}% packet loss, time {elapsed:.0f} ms")
    if summary:
        print("rtt min/avg/max/mdev = " + "/".join(f"{summary[k]:.3f}" for k in ("min", "avg", "max", "mdev")) + " ms")
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


def _rate(nbytes: int, seconds: float) -> float:
    """Goodput in 10^6 bit/s."""
    return nbytes * 8 / seconds / 1e6 if seconds > 0 else 0.0


def _peeking(args: argparse.Namespace) -> bool:
    return bool(args.can_be_prefix or args.must_be_fresh or args.lifetime is not None)


def cmd_fetch(args: argparse.Namespace) -> int:
    to_file = bool(args.output) and args.output != "-"
    if args.json and not to_file:
        raise CliError("fetch --json needs -o FILE: the content and the JSON would share standard output", 2)
    peek = _peeking(args)
    stats = FetchStats()

    async def fetch() -> tuple[bytes | bytearray, Name]:
        with _progress(f"fetch {args.name}") as progress:
            try:
                async with open_client(args.socket) as client:
                    if peek:
                        return await _peek(client, args, stats)
                    content = await fetch_object(
                        client, args.name, timeout=args.timeout, verify=not args.no_verify,
                        out=args.output if to_file else None, progress=progress, stats=stats,
                    )
                    return content, args.name
            except OSError as exc:
                raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None

    content, name = trio.run(fetch)
    if not to_file:
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
    result = {"name": name.to_uri(), "bytes": stats.bytes, "segments": stats.segments,
              "interests": stats.interests, "retransmissions": stats.retransmissions,
              "seconds": round(stats.seconds, 6), "goodput_mbps": round(stats.goodput_mbps, 3),
              "shared_memory": stats.shared_memory, "output": args.output if to_file else None}
    if args.json:
        print_json(result)
    elif not args.quiet:
        print(f"fetched {result['name']}: {stats.bytes} bytes in {stats.segments} segment"
              f"{'s' if stats.segments != 1 else ''}, {stats.seconds:.3f} s, goodput {stats.goodput_mbps:.3f} "
              f"Mbit/s, {stats.retransmissions} retransmission{'s' if stats.retransmissions != 1 else ''} "
              + ("(in shared memory from the local node)" if stats.shared_memory else f"({stats.interests} Interests)"),
              file=sys.stderr, flush=True)
    return 0


async def _peek(client: Any, args: argparse.Namespace, stats: FetchStats) -> tuple[bytes, Name]:
    """One Interest as the flags shape it, one Data (ndnpeek); written to -o FILE all or nothing."""
    started = trio.current_time()
    data: Data = await client.fetch(
        args.name, timeout=args.timeout, can_be_prefix=args.can_be_prefix, must_be_fresh=args.must_be_fresh,
        verify=not args.no_verify, lifetime=args.lifetime / 1000 if args.lifetime is not None else None)
    stats.segments, stats.bytes, stats.interests = 1, len(data.content), 1
    stats.seconds = trio.current_time() - started
    if args.output and args.output != "-":  # written only once it arrived whole: a failure leaves FILE as it was
        with open(args.output, "wb") as f:
            f.write(data.content)
        return b"", data.name
    return bytes(data.content), data.name


def cmd_publish(args: argparse.Namespace) -> int:
    source, size = _read_source(args.file)

    async def publish() -> Any:
        with _progress(f"publish {args.name}") as progress:
            try:
                async with open_client(args.socket) as client:
                    started = trio.current_time()
                    manifest = await client.publish_object(args.name, source, segment_size=args.segment_size,
                                                           freshness=args.freshness, progress=progress)
                    return manifest, trio.current_time() - started
            except CommandError as exc:
                raise CliError(f"publish {args.name}: {exc.message}") from None
            except ValueError as exc:
                raise CliError(f"publish {args.name}: {exc}") from None

    manifest, seconds = trio.run(publish)
    if args.json:
        print_json({"name": manifest.name.to_uri(), "version": manifest.version, "bytes": size,
                    "segments": manifest.segments, "segment_size": manifest.segment_size,
                    "seconds": round(seconds, 6), "goodput_mbps": round(_rate(size, seconds), 3)})
        return 0
    print(f"published {manifest.name} version {manifest.version} ({size} bytes in {manifest.segments} "
          f"segment{'s' if manifest.segments != 1 else ''})")
    if not args.quiet:
        print(f"uploaded {size} bytes in {seconds:.3f} s, {_rate(size, seconds):.3f} Mbit/s",
              file=sys.stderr, flush=True)
    return 0


def _read_source(path: str) -> tuple[Any, int]:
    """What to publish: standard input's bytes ('-'), else the file's path (read by the client); and its size."""
    if path == "-":
        content = sys.stdin.buffer.read()
        return content, len(content)
    try:
        size = os.path.getsize(path)
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    return path, size


def cmd_poke(args: argparse.Namespace) -> int:
    source, size = _read_source(args.file)
    if not isinstance(source, bytes):
        with open(source, "rb") as f:
            source = f.read()

    async def poke() -> Data:
        try:
            async with open_client(args.socket) as client:
                data: Data = await client.publish(args.name, source, freshness=args.freshness)
                return data
        except CommandError as exc:
            raise CliError(f"poke {args.name}: {exc.message}") from None
        except ValueError as exc:
            raise CliError(f"poke {args.name}: {exc}") from None

    data = trio.run(poke)
    if args.json:
        print_json({"name": data.name.to_uri(), "bytes": size, "freshness_ms": data.freshness_ms,
                    "content_type": ContentType(data.content_type).name.lower()})
    else:
        print(f"published {data.name} ({size} bytes, one Data, freshness {data.freshness_ms / 1000:g} s)")
    return 0


def lifetime_ms(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {text!r}") from None
    if not 1 <= value <= MAX_LIFETIME_MS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_LIFETIME_MS}: {text!r}")
    return value


def add_commands(subparsers: Any, parents: Parents) -> None:
    p = add_command(
        subparsers, "ping", cmd_ping, "measure round-trip times to a prefix", parents=parents.mgmt,
        description="Like ndnping: send Interests for NAME/ping/<random> (MustBeFresh), one line per "
        "reply (RTT), timeout or Nack, then statistics. Nodes answer /node/NAME/ping/... themselves. "
        "Runs until interrupted unless -c is given. Exit 0 if any reply came back, else 1. --json prints "
        "only the end: prefix, sent, received, loss_percent, time_ms, rtt_ms{min, avg, max, mdev}, "
        "replies[{seq, result, rtt_ms, reason}].",
    )
    p.add_argument("name", metavar="NAME", type=name_arg, help="prefix to ping, e.g. /node/a")
    p.add_argument("-c", "--count", type=positive_int, help="stop after N probes (default: until Ctrl-C)")
    p.add_argument("-i", "--interval", type=nonneg_seconds, default=1.0, metavar="S",
                   help="seconds between probes (default: 1)")
    p.add_argument("--timeout", type=positive_seconds, default=4.0, metavar="S",
                   help="seconds to wait for each reply (default: 4)")

    p = add_command(
        subparsers, "fetch", cmd_fetch, "fetch a (segmented) object by name", parents=parents.mgmt,
        description="Fetch the newest version of the object NAME (or the version NAME/v=N), checking "
        "the manifest's signature and every segment against it, and write it to FILE or standard "
        "output; a plain single Data under NAME is fetched too. Progress bar on a terminal; statistics "
        "(segments, retransmissions, bytes, seconds, goodput) on stderr at the end, or with --json (which "
        "needs -o) as keys name, bytes, segments, interests, retransmissions, seconds, goodput_mbps, shared_memory, output. "
        "--can-be-prefix, --must-be-fresh or --lifetime fetch exactly one Data with that Interest (as ndnpeek).",
    )
    p.add_argument("name", metavar="NAME", type=name_arg, help="the name to fetch")
    p.add_argument("-o", "--output", metavar="FILE", help="write the content to FILE (default: stdout); written to a temporary file in the same directory and renamed on success, so a failed fetch leaves FILE untouched")
    p.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="S",
                   help="give up after S seconds, meanwhile waiting for a route to NAME if there is none yet "
                        "(default: 60)")
    p.add_argument("--no-verify", action="store_true", help="do not verify signatures")
    p.add_argument("--can-be-prefix", action="store_true",
                   help="one Interest with CanBePrefix: any Data under NAME answers (ndnpeek -P)")
    p.add_argument("--must-be-fresh", action="store_true",
                   help="one Interest with MustBeFresh: no stale cached Data (ndnpeek -f)")
    p.add_argument("--lifetime", type=lifetime_ms, metavar="MS",
                   help=f"one Interest with this lifetime in milliseconds, 1..{MAX_LIFETIME_MS} (ndnpeek -l)")
    p.add_argument("-q", "--quiet", action="store_true", help="no statistics on stderr")

    p = add_command(
        subparsers, "publish", cmd_publish, "publish a file under a name through the local node",
        parents=parents.mgmt,
        description="Publish FILE (any size) as a versioned, segmented object NAME: the local node "
        "stores it (in its data directory when it has one), signs its manifest and serves it. "
        "Progress bar on a terminal; upload statistics on stderr. --json prints name, version, bytes, "
        "segments, segment_size, seconds, goodput_mbps. For one small Data (no manifest) see 'icnd poke'.",
    )
    p.add_argument("name", metavar="NAME", type=name_arg, help="the object's name")
    p.add_argument("file", metavar="FILE", help="the content ('-' reads standard input)")
    p.add_argument("--freshness", type=nonneg_seconds, metavar="S",
                   help="freshness period of the segments in seconds (default: 3600)")
    p.add_argument("--segment-size", type=positive_int, default=DEFAULT_SEGMENT_SIZE, metavar="BYTES",
                   help=f"segment size (default: {DEFAULT_SEGMENT_SIZE})")
    p.add_argument("-q", "--quiet", action="store_true", help="no statistics on stderr")

    p = add_command(
        subparsers, "poke", cmd_poke, "publish one Data (not an object) under a name",
        parents=parents.mgmt,
        description="Like ndnpoke: publish the content of FILE (default: standard input) as one Data named "
        "exactly NAME, signed by --key if given (else by the node), stored and served by the local node "
        "until it is removed ('icnd fetch NAME' or 'icnd fetch --can-be-prefix' gets it). At most about "
        "1 MiB; larger content is an object: 'icnd publish'. --json prints name, bytes, freshness_ms, "
        "content_type.",
    )
    p.add_argument("name", metavar="NAME", type=name_arg, help="the Data's name")
    p.add_argument("file", metavar="FILE", nargs="?", default="-", help="the content (default '-': standard input)")
    p.add_argument("--freshness", type=nonneg_seconds, metavar="S",
                   help="freshness period in seconds (default: 3600)")
