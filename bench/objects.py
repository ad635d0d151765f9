#!/usr/bin/env python3
"""Large-object benchmark: MB/s of `Client.fetch_object` of a random object
(256 MiB; ``--size``; ``--quick``: 64 MiB) through icnd daemons running as
separate processes, against a raw Python socket copy of the same bytes.

Cases (MB = 1e6 bytes; MB/s = object size / wall time of the whole
``fetch_object`` call: discovery, manifest, every segment fetched and
checked against the manifest's SHA-256, and the bytes returned):

- ``raw-tcp`` (the baseline): a sender process writes the object to a
  loopback TCP connection with ``sendall`` in 1 MiB chunks; this process
  reads it with ``recv_into`` into a preallocated buffer.  Timed from the
  "go" byte the receiver sends (the sender is connected and holds the bytes
  in memory) to the last byte received.  ``raw-unix`` is the same over a
  Unix stream socket, printed for information only (ratios are always
  against ``raw-tcp``);
- ``1-forwarder`` (cold cache): one daemon (``python -m icnd run --config``)
  on its Unix socket; the object is published into its object store with
  ``publish_object`` (``publish_s``, not part of the rate) and fetched by a
  client over the Unix socket.  Cold = the daemon's Content Store is erased
  (``cs erase /``) right before every cold fetch, so every segment is read
  from the object store (``pread``) and built again; ``cs_hits`` in the JSON
  line is the daemon's own count during the fetch (1 when cold: fetch_object
  discovers the manifest twice; each retransmitted segment adds one).  The daemon
  is the one of the warm case below (Content Store big enough for the whole
  object, so a cold fetch also caches every segment in fresh memory; data
  directory inside the bench's temporary work directory);
- ``1-forwarder-schema``: each cold fetch of ``1-forwarder`` is followed by
  the same cold fetch by a second client connected with a trust schema
  (``connect(trust=...)``): the node's key is certified by the bench's
  anchor, and the manifest is accepted only through a rule and that chain
  (its chain cache is emptied before each fetch, so the chain walk, with
  the certificate fetch, is inside the timed span).
  Its ratio is against ``1-forwarder`` in the same run (``baseline_case``),
  i.e. what validating under a schema costs;
- ``1-forwarder-warm``: the same object fetched again right after a
  complete cold fetch without erasing: every segment comes from the Content
  Store.  The daemon's Content Store is configured large enough to hold the
  whole object (``cs_capacity_mb`` = object size + 64 MiB; the default
  64 MiB would only keep the tail of a sequential scan, i.e. no hits).  If
  the cold fetch did not complete, the cache is first filled by fetching
  the segments one at a time (untimed; ``note`` in the JSON line says so);
- ``3-forwarders``: three daemons a - b - c in a line with TCP links
  (``icnd.topology.launch``; default node configuration, 64 MiB Content
  Store), the object published at c (under ``/node/c/...``, routed by the
  launcher's routes), fetched by a client of a; the Content Stores of all
  three are erased before every fetch (cold);
- ``segment-sweep``: the 1-forwarder cold case for each of
  ``--segment-sizes`` (default 262144,1048576,4194304; the entry of the
  default segment size is the ``1-forwarder`` case itself), then
  ``segment-sweep-best``: the fastest.  Part of the default run; with
  ``--quick`` only when ``--segment-sizes`` is given.

Every fetch is checked: the SHA-256 of the returned bytes against the
published object's (outside the timed span).  A fetch that does not finish
within ``--fetch-timeout`` s (default 12, quick 6; it is fetch_object's own
``timeout``) is reported with ``complete: false`` and the rate of the bytes
it had placed so far (from fetch_object's progress callback), so a stalled
pipeline shows in the numbers instead of blowing the time budget.

Besides the rate each fetch reports: ``segments_s`` (until the last segment
was placed; the rest of the wall time is fetch_object assembling the
result), CPU seconds of the client (this process) and of the daemon(s)
(``client_cpu_s``, ``node_cpu_s`` from /proc), their minor page faults
(``client_faults``, ``node_faults``: 256 per MiB of freshly touched
memory), the CPU every other process on the machine used meanwhile
(``other_cpu``, share of a core; ``contended`` when over a quarter of a
core in some run: other work on the 2 cores disturbed it), the daemons'
stream-face ``send_drops`` (a full face send queue silently drops a segment; the
consumer only notices at its retransmission timeout) and ``cs_hits``.
Each case runs ``--repeat`` times (default 2, quick 1; an extra run is
skipped when it would end past the time budget) and reports the median
(the lower median for an even count: always a real run); the raw copies
run 5 times (quick 3).

CPU placement (2 cores): daemons and the raw sender on one core, this
process (client, raw receiver) on the other, as in bench/forward.py; the
three daemons of ``3-forwarders`` share the daemon core unless
``--spread-3`` (``--no-pin``: nothing pinned).  Before measuring, this
process touches and frees 3x the object size once, so first-touch page
faults of fresh guest memory (expensive in a VM) are not charged to the
first fetch.

Output: progress on stderr; on stdout a table, then one JSON line per case
(``--json-only``: only the JSON lines).  ``--profile`` then fetches once
more (1-forwarder, cold) with the client under cProfile and the daemon
under cProfile (bench runner) and prints the hottest functions on stderr;
``--py-spy`` does the same with py-spy sampling the regular daemon (py-spy
must be installed).  Total runtime under ~90 s (quick under ~30 s).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_common.py (it adds the checkout)

import _common as C  # noqa: E402

MiB = 1024 * 1024
MB = 1e6
DEFAULT_SIZE = 256 * MiB
QUICK_SIZE = 64 * MiB
DEFAULT_SEGMENT = 1 * MiB
DEFAULT_SWEEP = (256 * 1024, 1 * MiB, 4 * MiB)
RAW_CHUNK = 1 * MiB
TARGET_RATE = 400.0  # MB/s through one forwarder
TARGET_RATIO = 0.2  # of the raw TCP copy
CONTENDED = 0.25  # other processes using more than this share of a core: the run is disturbed
BUDGET = 80.0  # s: an extra run starts only if it should end within this (quick: QUICK_BUDGET)
QUICK_BUDGET = 24.0
RAW_RUNS = 5  # quick: 3; the raw copy is noisy in a VM and cheap
THIS = str(Path(__file__).resolve())
TICK_SLACK = 3.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


# --- results ----------------------------------------------------------------------------------


@dataclass
class Fetch:
    """One timed transfer."""

    seconds: float
    size: int
    done: int  # bytes placed (== size when complete)
    complete: bool
    verified: bool
    segments_s: float = float("nan")
    client_cpu: float = float("nan")
    node_cpu: float = float("nan")
    other_cpu: float = float("nan")  # CPU s used meanwhile by every other process on the machine
    client_faults: int = 0  # minor page faults (fresh memory touched) of the client / the daemon(s)
    node_faults: int = 0
    send_drops: int = 0
    cs_hits: int = 0
    error: str = ""

    @property
    def rate(self) -> float:  # MB/s
        return self.done / MB / self.seconds if self.seconds > 0 else 0.0

    @property
    def other_share(self) -> float:
        """Other processes' CPU as a share of a core, less the error of /proc's clock ticks
        (three counters read twice), so that a short run is not called contended by rounding."""
        if not self.seconds > 0:
            return float("nan")
        return max(self.other_cpu - TICK_SLACK, 0.0) / self.seconds

    @property
    def contended(self) -> bool:
        return self.other_share > CONTENDED


@dataclass
class Case:
    name: str
    segment_size: int | None
    runs: list[Fetch] = field(default_factory=list)
    publish_s: float | None = None
    note: str = ""
    error: str = ""

    def median(self) -> Fetch | None:
        if not self.runs:
            return None
        ranked = sorted(self.runs, key=lambda f: f.rate)
        return ranked[(len(ranked) - 1) // 2]  # lower median: a real run, never flattered

    @property
    def rate(self) -> float | None:
        m = self.median()
        return m.rate if m is not None else None

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(f.complete and f.verified for f in self.runs)


class Budget:
    def __init__(self, seconds: float) -> None:
        self.t0 = time.perf_counter()
        self.seconds = seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def extra_allowed(self, last: Fetch | None) -> bool:
        """Whether another run like `last` should still end within the budget."""
        expected = (last.seconds if last is not None else 0.0) + 3.0
        return self.elapsed() + expected < self.seconds


def fmt_size(n: int | None) -> str:
    if n is None:
        return "-"
    if n % MiB == 0:
        return f"{n // MiB} MiB"
    if n % 1024 == 0:
        return f"{n // 1024} KiB"
    return str(n)


def minor_faults(pid: int) -> int:
    """Minor page faults of a process so far (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[7])
    except (OSError, IndexError, ValueError):
        return 0


def _r(v: float | None, nd: int) -> float | None:
    return None if v is None or v != v else round(v, nd)


# --- raw socket baseline ----------------------------------------------------------------------


def raw_sender_main(family: str, address: str, path: str) -> None:
    """Child: connect, wait for the go byte, sendall the file's bytes in RAW_CHUNK pieces."""
    with open(path, "rb") as f:
        data = f.read()
    view = memoryview(data)
    if family == "tcp":
        host, _, port = address.rpartition(":")
        sock = socket.create_connection((host, int(port)))
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(address)
    with sock:
        if sock.recv(1) != b"g":
            return
        for i in range(0, len(view), RAW_CHUNK):
            sock.sendall(view[i : i + RAW_CHUNK])
        sock.shutdown(socket.SHUT_WR)
        sock.recv(1)  # the receiver closes when it has everything


def raw_copy(family: str, blob_path: str, size: int, digest: bytes, cpus: set[int] | None,
             workdir: str, timeout: float = 30.0) -> Fetch:
    buf = bytearray(size)  # preallocated (and touched) before the clock starts
    view = memoryview(buf)
    if family == "tcp":
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.bind(("127.0.0.1", 0))
        address = "127.0.0.1:%d" % lsock.getsockname()[1]
    else:
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address = os.path.join(workdir, "raw.sock")
        try:
            os.unlink(address)
        except FileNotFoundError:
            pass
        lsock.bind(address)
    lsock.listen(1)
    lsock.settimeout(timeout)
    proc = C.spawn([sys.executable, THIS, "--raw-sender", family, address, blob_path],
                   log_path=os.path.join(workdir, "raw-sender.log"), cpus=cpus)
    try:
        conn, _ = lsock.accept()
        with conn:
            conn.settimeout(timeout)
            got = 0
            s0, b0 = C.cpu_seconds(proc.pid) + C.self_cpu_seconds(), C.machine_busy_seconds()
            t0 = time.perf_counter()
            conn.sendall(b"g")
            while got < size:
                n = conn.recv_into(view[got:])
                if not n:
                    break
                got += n
            seconds = time.perf_counter() - t0
            own = C.cpu_seconds(proc.pid) + C.self_cpu_seconds() - s0  # the sender waits for our close
            other = C.machine_busy_seconds() - b0 - own
        verified = got == size and hashlib.sha256(buf).digest() == digest
        return Fetch(seconds, size, got, got == size, verified, other_cpu=max(other, 0.0),
                     error="" if verified else f"received {got} of {size} bytes or wrong bytes")
    finally:
        view.release()
        lsock.close()
        C.stop(proc)


# --- daemons ----------------------------------------------------------------------------------


class ObjDaemon(C.Daemon):
    """`_common.Daemon` with a configuration file: a Content Store that holds
    the whole object, an object store big enough for the sweep, and a data
    directory inside the bench's work directory (removed with it)."""

    def __init__(self, label: str, workdir: str, *, cs_mb: float, store_mb: float,
                 cpus: set[int] | None = None, profile: str | None = None,
                 identity: tuple[str, str] | None = None) -> None:
        self.config_path = os.path.join(workdir, f"{label}.toml")
        data_dir = os.path.join(workdir, f"{label}-data")
        sock = os.path.join(workdir, f"{label}.sock")
        with open(self.config_path, "w", encoding="utf-8") as f:
            f.write(
                f'name = "/node/{label}"\nsocket = "{sock}"\n'
                'listen = ["udp://127.0.0.1:0", "tcp://127.0.0.1:0"]\n'
                f'data_dir = "{data_dir}"\nlog_level = "warning"\n'
                f"cs_capacity_mb = {float(cs_mb)}\nrepo_capacity_mb = {float(store_mb)}\n"
            )
            if identity is not None:  # a key certified by the bench's anchor (the schema case)
                f.write(f'key = "{identity[0]}"\ncert = "{identity[1]}"\n')
        super().__init__(label, workdir, cpus=cpus, profile=profile)

    def _argv(self, how: str) -> list[str]:
        if how == "cli":
            return super()._argv(how) + ["--config", self.config_path]
        argv = [sys.executable, THIS, "--daemon-process", self.config_path]
        if self.profile:
            argv += ["--daemon-profile", self.profile]
        return argv


def daemon_process_main(config_path: str, profile: str | None) -> None:
    """The bench runner: `icnd run --config` in-process (set up as `icnd run` does),
    optionally under cProfile; stops on SIGTERM/SIGINT."""
    import logging

    import trio

    from icnd.daemon.config import load
    from icnd.daemon.node import Node

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        from icnd.daemon.runtime import tune_gc
    except ImportError:
        pass
    else:
        tune_gc()
    cfg = load(config_path)

    async def run() -> None:
        node = Node(cfg)
        await node.bind()
        async with trio.open_nursery() as nursery:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                await nursery.start(node.serve)
                async for _ in signals:
                    break
            nursery.cancel_scope.cancel()

    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        trio.run(run)
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)


# --- fetching ---------------------------------------------------------------------------------


async def node_counters(client: Any) -> tuple[int, int]:
    """(sum of send_drops over the node's faces, cs_hits) of the node behind `client`."""
    faces = await client.command("face", "list")
    drops = sum(f.get("counters", {}).get("send_drops", 0) for f in faces)
    hits = (await client.status()).get("counters", {}).get("cs_hits", 0)
    return drops, hits


async def erase_cs(clients: list[Any]) -> None:
    for client in clients:
        await client.command("cs", "erase", prefix="/")


async def timed_fetch(consumer: Any, name: str, size: int, digest: bytes, *, timeout: float,
                      node_clients: list[Any], node_pids: list[int]) -> Fetch:
    import icnd

    before = [await node_counters(c) for c in node_clients]
    progress = [0, 0.0]

    def on_progress(done: int, total: int) -> None:  # noqa: ARG001
        progress[0] = done
        progress[1] = time.perf_counter()

    # the object lands in a buffer allocated and touched before the clock starts,
    # as in the raw baseline (fetch_object's out=bytearray: no copy of the whole object)
    sink = bytearray(size)
    sink[::4096] = b"\1" * len(range(0, size, 4096))
    c0 = C.self_cpu_seconds()
    n0 = sum(C.cpu_seconds(p) for p in node_pids)
    b0 = C.machine_busy_seconds()
    f0 = minor_faults(os.getpid())
    g0 = sum(minor_faults(p) for p in node_pids)
    got = None
    error = ""
    t0 = time.perf_counter()
    try:
        got = await consumer.fetch_object(name, timeout=timeout, progress=on_progress, out=sink)
    except (icnd.Error, OSError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - t0
    client_cpu = C.self_cpu_seconds() - c0
    node_cpu = sum(C.cpu_seconds(p) for p in node_pids) - n0
    other = C.machine_busy_seconds() - b0 - client_cpu - node_cpu
    client_faults = minor_faults(os.getpid()) - f0
    node_faults = sum(minor_faults(p) for p in node_pids) - g0
    after = [await node_counters(c) for c in node_clients]
    complete = got is not None and len(got) == size
    verified = complete and hashlib.sha256(got).digest() == digest
    if complete and not verified:
        error = "fetched bytes differ from the published object"
    del got
    return Fetch(
        seconds, size, size if complete else progress[0], complete, verified,
        segments_s=(progress[1] - t0) if progress[1] else float("nan"),
        client_cpu=client_cpu, node_cpu=node_cpu, other_cpu=max(other, 0.0),
        client_faults=client_faults, node_faults=node_faults,
        send_drops=sum(a[0] - b[0] for a, b in zip(after, before)),
        cs_hits=sum(a[1] - b[1] for a, b in zip(after, before)), error=error,
    )


async def prime_cache(client: Any, name: str, timeout: float) -> None:
    """Put every segment of object `name` in the Content Store, one Interest at a time."""
    manifest = await client.fetch_manifest(name)
    with_deadline = time.perf_counter() + 4 * timeout
    for i in range(manifest.segments):
        if time.perf_counter() > with_deadline:
            raise TimeoutError(f"filling the cache took longer than {4 * timeout:g} s")
        await client.fetch(manifest.segment_name(i), verify=False, timeout=timeout)


def _log_fetch(label: str, f: Fetch, quiet: bool) -> None:
    state = "" if f.complete and f.verified else f"  INCOMPLETE ({f.error})" if not f.complete else f"  {f.error}"
    C.log(f"  {label}: {f.rate:8.1f} MB/s  {f.seconds:6.2f} s (segments {f.segments_s:.2f} s)  "
          f"client cpu {f.client_cpu:.2f} s, node cpu {f.node_cpu:.2f} s, others {f.other_share:.0%} of a core"
          f"{' (contended)' if f.contended else ''}, send_drops {f.send_drops}, "
          f"cs_hits {f.cs_hits}{'  verified' if f.verified else ''}{state}", quiet)


def make_trust(workdir: str) -> tuple[str, str, str]:
    """An anchor, a node key certified by it and a trust schema accepting the
    node's objects: (node key file, node cert file, schema file)."""
    from icnd.name import Name
    from icnd.security import Ed25519Key
    from icnd.keyfiles import save_certificate
    from icnd.trust import issue, self_signed

    anchor = Ed25519Key.generate(Name("/bench"))
    node = Ed25519Key.generate(Name("/bench/node"))
    paths = [os.path.join(workdir, n) for n in ("anchor.cert", "node.key", "node.cert", "schema.toml")]
    now = time.time()
    save_certificate(self_signed(anchor, now=now), paths[0])
    with open(paths[1], "wb") as f:
        f.write(node.to_bytes())
    save_certificate(issue(anchor, node, now=now), paths[2])
    with open(paths[3], "w", encoding="utf-8") as f:
        f.write('anchors = ["anchor.cert"]\n'
                '[[rule]]\nname = "objects"\ndata = "/objbench/<**>"\nsigner = "/bench/node/KEY/<*>"\n'
                '[[rule]]\nname = "node-cert"\ndata = "/bench/node/KEY/<**>"\nsigner = "/bench/KEY/<*>"\n')
    return paths[1], paths[2], paths[3]


async def run_one_forwarder(opts: Any, workdir: str, blob: bytes, digest: bytes, budget: Budget,
                            results: dict[str, Any]) -> None:
    """1-forwarder cold + warm at the default segment size, then the sweep's other sizes;
    at the default size each cold fetch is followed by one under a trust schema."""
    import icnd

    size = len(blob)
    sizes = [opts.segment_size] + [s for s in opts.sweep if s != opts.segment_size]
    key_file, cert_file, schema_file = make_trust(workdir)
    d = ObjDaemon("objfw", workdir, cs_mb=size / MiB + 64, store_mb=(len(sizes) + 1) * size / MiB + 64,
                  cpus=opts.daemon_cpus, identity=(key_file, cert_file))
    results["daemon"] = d.how
    tag = secrets.token_hex(3)
    try:
        async with icnd.connect(d.socket_path) as c, icnd.connect(d.socket_path, trust=schema_file) as sc:
            for seg in sizes:
                main = seg == opts.segment_size
                name = f"/objbench/{tag}/s{seg}"
                case = Case("1-forwarder" if main else "segment-sweep", seg)
                C.log(f"1-forwarder, {fmt_size(seg)} segments: publishing {fmt_size(size)}...", opts.quiet)
                t = time.perf_counter()
                try:
                    await c.publish_object(name, blob, segment_size=seg)
                except icnd.Error as exc:
                    case.error = f"publish failed: {type(exc).__name__}: {exc}"
                    C.log(f"  {case.error}", opts.quiet)
                    results["cases"].append(case)
                    continue
                case.publish_s = time.perf_counter() - t
                C.log(f"  published in {case.publish_s:.2f} s ({size / MB / case.publish_s:.0f} MB/s)", opts.quiet)
                reps = opts.repeat if main else 1
                schema_case = Case("1-forwarder-schema", seg, publish_s=case.publish_s)
                for rep in range(reps):
                    if rep and not budget.extra_allowed(case.runs[-1] if case.runs else None):
                        break
                    await erase_cs([c])
                    f = await timed_fetch(c, name, size, digest, timeout=opts.fetch_timeout,
                                          node_clients=[c], node_pids=[d.proc.pid])
                    case.runs.append(f)
                    _log_fetch(f"cold #{rep + 1}", f, opts.quiet)
                    if main:  # the same, by a client validating under the schema, its chain cache emptied
                        await erase_cs([c])
                        sc.validator.forget()
                        f = await timed_fetch(sc, name, size, digest, timeout=opts.fetch_timeout,
                                              node_clients=[c], node_pids=[d.proc.pid])
                        schema_case.runs.append(f)
                        _log_fetch(f"schema #{rep + 1}", f, opts.quiet)
                results["cases"].append(case)
                if main:
                    results["cases"].append(schema_case)
                if main:
                    warm = Case("1-forwarder-warm", seg, publish_s=case.publish_s)
                    try:
                        if not (case.runs and case.runs[-1].complete):
                            # the cold fetch left the cache partly filled: fill it one segment at a time
                            warm.note = "cache filled by sequential segment fetches (the cold fetch did not complete)"
                            C.log(f"  {warm.note}", opts.quiet)
                            await prime_cache(c, name, opts.fetch_timeout)
                        f = await timed_fetch(c, name, size, digest, timeout=opts.fetch_timeout,
                                              node_clients=[c], node_pids=[d.proc.pid])
                        warm.runs.append(f)
                        _log_fetch("warm   ", f, opts.quiet)
                    except (icnd.Error, TimeoutError) as exc:
                        warm.error = f"{type(exc).__name__}: {exc}"
                        C.log(f"  warm: FAILED: {warm.error}", opts.quiet)
                    results["cases"].append(warm)
                try:  # free the store and the cache for the next size
                    await c.command("object", "remove", name=name)
                    await erase_cs([c])
                except icnd.Error:
                    pass
    finally:
        d.stop()


async def run_three_forwarders(opts: Any, blob: bytes, digest: bytes, budget: Budget,
                               results: dict[str, Any]) -> None:
    import icnd
    from icnd.topology import launch, parse

    size = len(blob)
    spec = parse({
        "nodes": {"a": {}, "b": {}, "c": {}},
        "links": [{"ends": ["a", "b"], "transport": "tcp"}, {"ends": ["b", "c"], "transport": "tcp"}],
    }, source="bench/objects.py line a-b-c")
    case = Case("3-forwarders", opts.segment_size)
    results["cases"].append(case)
    C.log("3-forwarders: starting a - b - c (tcp links)...", opts.quiet)
    async with launch(spec, log_level="warning") as net:
        pids = [net[n].pid for n in ("a", "b", "c")]
        if opts.daemon3_cpus:
            for pid in pids:
                C.pin(pid, opts.daemon3_cpus)
        clients = [await net.connect(n) for n in ("a", "b", "c")]
        consumer, producer = clients[0], clients[2]
        name = f"/node/c/objbench/{secrets.token_hex(3)}"
        C.log(f"  publishing {fmt_size(size)} at c...", opts.quiet)
        t = time.perf_counter()
        await producer.publish_object(name, blob, segment_size=opts.segment_size)
        case.publish_s = time.perf_counter() - t
        C.log(f"  published in {case.publish_s:.2f} s", opts.quiet)
        for rep in range(opts.repeat):
            if rep and not budget.extra_allowed(case.runs[-1] if case.runs else None):
                break
            await erase_cs(clients)
            f = await timed_fetch(consumer, name, size, digest, timeout=opts.fetch_timeout,
                                  node_clients=clients, node_pids=[p for p in pids if p])
            case.runs.append(f)
            _log_fetch(f"cold #{rep + 1}", f, opts.quiet)


# --- profiling ----------------------------------------------------------------------------------


def _print_pstats(title: str, path_or_profile: Any, n: int = 25) -> None:
    import pstats

    out = sys.stderr
    print(f"\n=== {title} ===", file=out)
    stats = pstats.Stats(path_or_profile, stream=out)
    stats.sort_stats("tottime").print_stats(n)
    stats.sort_stats("cumulative").print_stats(n)


def _py_spy() -> str | None:
    local = Path(sys.executable).with_name("py-spy")
    return str(local) if local.exists() else shutil.which("py-spy")


def _summarize_collapsed(path: str, n: int = 25) -> None:
    """Self and inclusive sample counts per function from py-spy's raw (collapsed) output."""
    own: dict[str, int] = {}
    incl: dict[str, int] = {}
    total = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            k = int(count)
            total += k
            frames = stack.split(";")
            own[frames[-1]] = own.get(frames[-1], 0) + k
            for fr in set(frames):
                incl[fr] = incl.get(fr, 0) + k
    out = sys.stderr
    print(f"\n=== daemon under py-spy: {total} samples (blocked in epoll = idle); self time ===", file=out)
    for fr, k in sorted(own.items(), key=lambda kv: -kv[1])[:n]:
        print(f"{100 * k / max(total, 1):6.1f}%  {fr}", file=out)
    print("--- inclusive ---", file=out)
    for fr, k in sorted(incl.items(), key=lambda kv: -kv[1])[:n]:
        print(f"{100 * k / max(total, 1):6.1f}%  {fr}", file=out)


async def run_profile(opts: Any, workdir: str, blob: bytes, digest: bytes, use_py_spy: bool) -> None:
    """One more cold 1-forwarder fetch, client under cProfile, daemon under cProfile or py-spy."""
    import cProfile

    import icnd

    size = len(blob)
    exe = _py_spy() if use_py_spy else None
    if use_py_spy and exe is None:
        C.log("--py-spy: py-spy is not installed (pip install py-spy); skipped", False)
        return
    prof_path = os.path.join(workdir, "daemon.prof")
    label = "objspy" if use_py_spy else "objprof"
    d = ObjDaemon(label, workdir, cs_mb=size / MiB + 64, store_mb=2 * size / MiB + 64,
                  cpus=opts.daemon_cpus, profile=None if use_py_spy else prof_path)
    spy = None
    spy_out = os.path.join(workdir, "daemon.collapsed")
    try:
        async with icnd.connect(d.socket_path) as c:
            name = f"/objbench/profile/{secrets.token_hex(3)}"
            await c.publish_object(name, blob, segment_size=opts.segment_size)
            await erase_cs([c])
            if exe is not None:
                spy = subprocess.Popen([exe, "record", "--pid", str(d.proc.pid), "--rate", "500", "--format", "raw",
                                        "--output", spy_out, "--nonblocking"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)  # let it attach
            profiler = cProfile.Profile()
            profiler.enable()
            f = await timed_fetch(c, name, size, digest, timeout=opts.fetch_timeout * 2,
                                  node_clients=[c], node_pids=[d.proc.pid])
            profiler.disable()
            _log_fetch("profiled fetch (client under cProfile)", f, False)
            _print_pstats("client (this process) under cProfile, one cold 1-forwarder fetch", profiler)
    finally:
        if spy is not None:
            spy.send_signal(2)  # SIGINT: py-spy writes its output and exits
            try:
                spy.wait(15)
            except subprocess.TimeoutExpired:
                spy.kill()
                spy.wait()
        d.stop()
    if use_py_spy:
        if os.path.exists(spy_out):
            _summarize_collapsed(spy_out)
        else:
            C.log("py-spy wrote no output", False)
    else:
        for _ in range(50):  # the runner writes its profile on its way out
            if os.path.exists(prof_path):
                break
            time.sleep(0.1)
        if os.path.exists(prof_path):
            _print_pstats("daemon (bench runner) under cProfile: publish + one cold fetch", prof_path)
        else:
            C.log("the daemon wrote no profile", False)


# --- main ---------------------------------------------------------------------------------------


def _interrupt(signum: int, frame: Any) -> None:  # noqa: ARG001
    raise KeyboardInterrupt


def run_trio(fn: Any, *args: Any) -> None:
    """trio.run(fn, *args), with SIGTERM/SIGHUP turned into a clean KeyboardInterrupt:
    `fn` is cancelled, its `finally` blocks run, then KeyboardInterrupt leaves; an
    exception of `fn` leaves as itself, not wrapped in an exception group."""
    import trio

    from icnd.client.door import unwrap

    async def guarded() -> None:
        async with trio.open_nursery() as nursery:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:

                async def watch() -> None:
                    async for _ in signals:
                        raise KeyboardInterrupt

                nursery.start_soon(watch)
                await fn(*args)
                nursery.cancel_scope.cancel()

    try:
        trio.run(guarded)
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is not None:
            raise KeyboardInterrupt from None
        raise unwrap(group) from None


def _parse_sizes(text: str) -> list[int]:
    sizes = []
    for part in text.split(","):
        part = part.strip()
        if part:
            sizes.append(int(part))
    return sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="64 MiB, one run per case, no sweep (~30 s)")
    ap.add_argument("--size", type=int, help=f"object size in bytes (default {DEFAULT_SIZE}, quick {QUICK_SIZE})")
    ap.add_argument("--segment-size", type=int, default=DEFAULT_SEGMENT,
                    help=f"segment size of the main cases (default {DEFAULT_SEGMENT})")
    ap.add_argument("--segment-sizes", help="comma-separated sweep of the 1-forwarder case "
                    f"(default {','.join(map(str, DEFAULT_SWEEP))}; quick: none unless given)")
    ap.add_argument("--no-sweep", action="store_true", help="skip the segment-size sweep")
    ap.add_argument("--repeat", type=int, help="runs per case, median reported (default 2, quick 1)")
    ap.add_argument("--fetch-timeout", type=float, help="fetch_object timeout in s (default 12, quick 6)")
    ap.add_argument("--cases", default="raw,1-forwarder,3-forwarders",
                    help="comma-separated subset of raw, 1-forwarder, 3-forwarders")
    ap.add_argument("--no-raw-unix", action="store_true", help="skip the informational raw Unix-socket copy")
    ap.add_argument("--no-pin", action="store_true", help="do not pin processes to cores")
    ap.add_argument("--spread-3", action="store_true", help="do not pin the three daemons of 3-forwarders")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    ap.add_argument("--profile", action="store_true",
                    help="then profile one cold 1-forwarder fetch (client and daemon under cProfile)")
    ap.add_argument("--py-spy", action="store_true",
                    help="then profile one cold 1-forwarder fetch with py-spy on the daemon (needs py-spy)")
    ap.add_argument("--raw-sender", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--daemon-process", help=argparse.SUPPRESS)
    ap.add_argument("--daemon-profile", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.raw_sender:
        raw_sender_main(*opts.raw_sender)
        return 0
    if opts.daemon_process:
        daemon_process_main(opts.daemon_process, opts.daemon_profile)
        return 0

    from icnd.objects.manifest import MAX_SEGMENT_SIZE, MIN_SEGMENT_SIZE

    opts.quiet = opts.json_only
    size = opts.size or (QUICK_SIZE if opts.quick else DEFAULT_SIZE)
    opts.repeat = opts.repeat or (1 if opts.quick else 2)
    opts.fetch_timeout = opts.fetch_timeout or (6.0 if opts.quick else 12.0)
    if opts.no_sweep or (opts.quick and not opts.segment_sizes):
        opts.sweep = []
    else:
        opts.sweep = _parse_sizes(opts.segment_sizes) if opts.segment_sizes else list(DEFAULT_SWEEP)
    for s in [opts.segment_size, *opts.sweep]:
        if not MIN_SEGMENT_SIZE <= s <= MAX_SEGMENT_SIZE:
            ap.error(f"segment size {s} outside {MIN_SEGMENT_SIZE}..{MAX_SEGMENT_SIZE}")
    if size <= 0 or opts.repeat < 1:
        ap.error("--size and --repeat must be positive")
    cases = [c.strip() for c in opts.cases.split(",") if c.strip()]
    for c in cases:
        if c not in ("raw", "1-forwarder", "3-forwarders"):
            ap.error(f"unknown case {c!r}")
    if "1-forwarder" not in cases:
        opts.sweep = []
    # SIGTERM/SIGHUP -> KeyboardInterrupt, so every `finally` runs: daemons stopped, the
    # topology torn down, the work directory removed (inside trio: see run_trio)
    C._install_cleanup()  # (its signal handlers are replaced here; its atexit stop_all stays)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    daemon_cpus, gen_cpus = (None, None) if opts.no_pin else C.cpu_plan()
    opts.daemon_cpus = daemon_cpus
    opts.daemon3_cpus = None if opts.spread_3 else daemon_cpus
    C.pin(0, gen_cpus)
    budget = Budget(QUICK_BUDGET if opts.quick else BUDGET)
    quiet = opts.quiet

    workdir = tempfile.mkdtemp(prefix="icnd-objbench-")
    results: dict[str, Any] = {"cases": [], "daemon": ""}
    raw: dict[str, Case] = {}
    try:
        blob = os.urandom(size)
        digest = hashlib.sha256(blob).digest()
        blob_path = os.path.join(workdir, "object.bin")
        with open(blob_path, "wb") as f:
            f.write(blob)
        ballast = bytearray(3 * size)  # fault fresh memory in once, outside every timed span
        del ballast
        C.log(f"objects: {fmt_size(size)} random object, segments {fmt_size(opts.segment_size)}, "
              f"{opts.repeat} run(s) per case, fetch timeout {opts.fetch_timeout:g} s; daemon cpus "
              f"{sorted(daemon_cpus) if daemon_cpus else 'any'}, client cpus {sorted(gen_cpus) if gen_cpus else 'any'}",
              quiet)
        if "raw" in cases:
            families = ["tcp"] + ([] if opts.no_raw_unix else ["unix"])
            for family in families:
                case = raw[family] = Case(f"raw-{family}", None)
                for rep in range(3 if opts.quick else RAW_RUNS):
                    try:
                        f = raw_copy(family, blob_path, size, digest, daemon_cpus, workdir)
                    except (OSError, socket.timeout) as exc:
                        case.error = f"{type(exc).__name__}: {exc}"
                        break
                    case.runs.append(f)
                C.log(f"raw-{family}: " + ", ".join(f"{f.rate:.0f}{'!' if f.contended else ''}" for f in case.runs)
                      + " MB/s ('!': other processes used over a quarter of a core meanwhile)"
                      + (f" ({case.error})" if case.error else ""), quiet)
        if "1-forwarder" in cases:
            try:
                run_trio(run_one_forwarder, opts, workdir, blob, digest, budget, results)
            except Exception as exc:
                msg = f"{type(exc).__name__}: {exc}"
                C.log(f"1-forwarder: FAILED: {msg}", quiet)
                if not any(c.name == "1-forwarder" for c in results["cases"]):
                    results["cases"].append(Case("1-forwarder", opts.segment_size, error=msg))
        if "3-forwarders" in cases:
            try:
                run_trio(run_three_forwarders, opts, blob, digest, budget, results)
            except Exception as exc:
                msg = f"{type(exc).__name__}: {exc}"
                C.log(f"3-forwarders: FAILED: {msg}", quiet)
                for c in results["cases"]:
                    if c.name == "3-forwarders" and not c.runs:
                        c.error = msg
        if opts.profile or opts.py_spy:
            try:
                if opts.profile:
                    run_trio(run_profile, opts, workdir, blob, digest, False)
                if opts.py_spy:
                    run_trio(run_profile, opts, workdir, blob, digest, True)
            except Exception as exc:
                C.log(f"profile: FAILED: {type(exc).__name__}: {exc}", quiet)
    finally:
        C.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)

    report(opts, size, raw, results, budget)
    return 0


def report(opts: Any, size: int, raw: dict[str, Case], results: dict[str, Any], budget: Budget) -> None:
    base_case = raw.get("tcp")
    base = base_case.rate if base_case is not None and base_case.ok else None
    lines: list[dict[str, Any]] = []
    table: list[str] = []

    def row(case: Case, label: str, info: str = "") -> None:
        m = case.median()
        line: dict[str, Any] = {"bench": "objects", "case": case.name}
        if m is None:
            line.update(value=None, unit="MB/s", error=case.error or "no run", size=size,
                        segment_size=case.segment_size)
            lines.append(line)
            table.append(f"{label:<24} {fmt_size(case.segment_size):>8} {'FAILED':>9}  {case.error}")
            return
        rate = m.rate
        line.update(value=round(rate, 1), unit="MB/s")
        ratio = None
        plain = next((c.rate for c in results["cases"] if c.name == "1-forwarder"), None)
        if case.name == "1-forwarder-schema":
            if plain:  # the cost of validating under a schema: against the same fetch without one
                ratio = rate / plain
                line.update(baseline=round(plain, 1), ratio=round(ratio, 3), baseline_case="1-forwarder")
        elif not case.name.startswith("raw-") and base:
            ratio = rate / base
            line.update(baseline=round(base, 1), ratio=round(ratio, 3))
        line.update(size=size, segment_size=case.segment_size)
        line.update(
            seconds=round(m.seconds, 3), runs=[round(f.rate, 1) for f in case.runs],
            complete=all(f.complete for f in case.runs), verified=all(f.verified for f in case.runs),
            other_cpu=_r(m.other_share, 2), contended=any(f.contended for f in case.runs),
        )
        if not case.name.startswith("raw-"):
            line.update(
                cache="warm" if case.name.endswith("-warm") else "cold",
                publish_s=_r(case.publish_s, 3), segments_s=_r(m.segments_s, 3),
                client_cpu_s=_r(m.client_cpu, 3), node_cpu_s=_r(m.node_cpu, 3),
                client_faults=m.client_faults, node_faults=m.node_faults,
                send_drops=m.send_drops, cs_hits=m.cs_hits,
            )
        if case.name == "raw-unix":
            line["note"] = "informational: raw Unix-socket copy; ratios are against raw-tcp"
        elif case.note:
            line["note"] = case.note
        if case.name == "1-forwarder":
            line["meets_target"] = bool(rate >= TARGET_RATE and (ratio is None or ratio >= TARGET_RATIO))
        errors = sorted({f.error for f in case.runs if f.error})
        if errors:
            line["error"] = "; ".join(errors)
        lines.append(line)
        r = f"{ratio:.3f}" if ratio is not None else "-"
        seg = "-" if m.segments_s != m.segments_s else f"{m.segments_s:.2f}"
        cpu = "-" if m.client_cpu != m.client_cpu else f"{m.client_cpu:.2f}/{m.node_cpu:.2f}"
        flag = "" if case.ok else "  INCOMPLETE/UNVERIFIED"
        table.append(
            f"{label:<24} {fmt_size(case.segment_size):>8} {rate:>9.1f} {r:>6} {m.seconds:>7.2f} {seg:>6} "
            f"{cpu:>11} {m.other_share:>6.0%} {m.send_drops:>5} {m.cs_hits:>5}  "
            + " ".join(f"{f.rate:.0f}{'!' if f.contended else ''}" for f in case.runs)
            + (f"  {info}" if info else "") + flag
        )

    for family in ("tcp", "unix"):
        if family in raw:
            row(raw[family], f"raw-{family}" + (" (info)" if family == "unix" else " (baseline)"))
    sweep: list[Case] = []
    for case in results["cases"]:
        if case.name in ("1-forwarder", "segment-sweep"):
            sweep.append(case)
        if case.name == "segment-sweep":
            continue
        pub = f"publish {case.publish_s:.2f}s" if case.publish_s else ""
        row(case, case.name, pub if case.name != "1-forwarder-warm" else "")
    if opts.sweep:
        sweep = [c for c in sweep if c.segment_size in opts.sweep]
        for case in sweep:
            if case.name == "segment-sweep":
                row(case, f"  sweep {fmt_size(case.segment_size)}",
                    f"publish {case.publish_s:.2f}s" if case.publish_s else "")
            else:  # the main case is the sweep's entry for its segment size
                lines.append(dict(next(ln for ln in lines if ln["case"] == "1-forwarder"), case="segment-sweep"))
                lines[-1].pop("meets_target", None)
        done = [c for c in sweep if c.rate is not None and c.ok]
        if done:
            best = max(done, key=lambda c: c.rate or 0.0)
            line = {"bench": "objects", "case": "segment-sweep-best", "value": round(best.rate or 0.0, 1),
                    "unit": "MB/s", "size": size, "segment_size": best.segment_size,
                    "candidates": {str(c.segment_size): _r(c.rate, 1) for c in sweep}}
            if base:
                line.update(baseline=round(base, 1), ratio=round((best.rate or 0.0) / base, 3))
            lines.append(line)
            table.append(f"fastest segment size: {fmt_size(best.segment_size)} ({best.rate:.1f} MB/s, cold, "
                         "1-forwarder; complete and verified runs only)")
        else:
            table.append("segment sweep: no complete run")
    if not opts.quiet:
        print()
        print(f"{'case':<24} {'segment':>8} {'MB/s':>9} {'ratio':>6} {'wall s':>7} {'seg s':>6} "
              f"{'cpu cl/node':>11} {'others':>6} {'drops':>5} {'cshit':>5}  runs (MB/s)")
        for t in table:
            print(t)
        print(f"MB = 1e6 bytes; MB/s = {size} bytes / wall time of fetch_object (cold: Content Stores erased "
              f"before the fetch), median of the runs; ratio = case / raw-tcp; seg s: until the last segment "
              f"was placed; cpu: client / daemon(s) CPU seconds; others: CPU of every other process meanwhile, share of a core ('!' on a run: over {CONTENDED:.0%}, the run is disturbed); drops: daemon stream-face send_drops during "
              f"the fetch; cshit: daemon cs_hits.  Target: 1-forwarder >= {TARGET_RATE:.0f} MB/s and >= "
              f"{TARGET_RATIO} of raw-tcp.  daemon: {results.get('daemon') or '-'}; python "
              f"{platform.python_version()}; {budget.elapsed():.0f} s")
        print()
    for line in lines:
        C.emit_json(line)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("objects: interrupted", file=sys.stderr)
        sys.exit(130)
