#!/usr/bin/env python3
"""Reduction benchmark: icnd's in-network collective reduction (float32 SUM)
next to MPI (Open MPI + mpi4py) measured in the same run.

Cases ``<op>-<size>-<members>`` for op in ``allreduce`` and ``reduce``,
sizes 1 KiB, 1, 16 and 64 MiB, 4 and 8 members (``--quick``: 4 members,
1 KiB and 1 MiB, 3 repetitions; under a minute).  Member ``i`` (1-based)
contributes ``full(n, i)`` float32, so every element of the sum is
``N (N + 1) / 2``, exact in float32; every result is checked element by
element, outside the timed region.

icnd side: every case against a fresh topology (so no case inherits another's
rounds, caches or memory), started with ``icnd.topology.launch`` (one
``icnd run`` process per node on loopback),
``--layout tree`` (default): members ``w1..wN``, the first half linked to
aggregator node ``agg1``, the rest to ``agg2``, both linked to ``root``;
``--layout star``: every member linked to one ``hub``.  Links use
``--link-transport`` (tcp by default, udp with hop-by-hop fragmentation
otherwise).  Group ``bench`` = the member nodes; every segment's
aggregation starts at the centre of the layout, ``root`` (``hub`` for the
star): the fewest hops from every member (since issue #18; it halves the
hops of a small allreduce against icnd's default of spreading segments over
the members' own nodes, which ``--rendezvous members`` restores; or name
nodes, e.g. ``agg1,agg2``).  The group's segments: 4 MiB on TCP links (the
largest icnd allows: fewer segments, less work per byte), icnd's default of
512 KiB on UDP links; ``--segment-bytes`` sets another.  This process holds one
`icnd.Client` per member node, all on one trio loop, and per repetition a
fresh round number:

- ``allreduce``: every member calls ``client.allreduce("bench", round=r,
  array=x, op="sum", out=buf)`` at once (``buf``: the member's result array,
  reused from round to round as MPI's receive buffer is); time = from the
  start until the last member has its result (the slowest member, as MPI's
  max over ranks);
- ``reduce``: every member first calls ``client.contribute("bench", round=r,
  array=x)`` (timed apart: ``contribute_s``), then w1's client calls
  ``client.reduce("bench", round=r, op="sum")``, timed; the result must be
  complete with all N contributors.

One untimed (but checked) warm-up round precedes the timed repetitions of
each case.  Reported: the median over ``--reps`` (min and max in the JSON
line), plus, from /proc, the CPU seconds per operation of this process (all
member clients) and of the member and aggregator daemons
(``cpu_s_per_op``, 10 ms ticks: meaningful from 1 MiB up), the daemons'
peak resident memory (``daemon_peak_rss_mib``: the largest, and the sum)
and the share of a core the rest of the machine used meanwhile
(``other_cpu``: task time of the whole machine less ours, interrupt and
softirq time left out, over the whole case, warm-up included, or None when
that is under 1 s; likewise over each MPI launch; ``contended`` and ``(!)``
in the table above 0.25: the figures are disturbed).

MPI side (the baselines, ``bench/mpi_allreduce.py`` under ``mpirun``; method
and flags of shared/reference/collective.md section 5 and Appendix A):
N ranks, one launch per member count and transport, ``mpi-tcp`` (BTL
``tcp,self`` on ``lo``) and ``mpi-shm`` (BTL ``vader,self``, shared
memory); ``MPI_Allreduce`` for the allreduce cases, ``MPI_Reduce`` to rank 0
for the reduce cases; warm-up, Barrier, time per call = max over ranks,
median of ``--reps``; results checked.

``ratio`` = icnd time / MPI time for the same op, size and member count
(<= 1.0: icnd is no slower): ``ratio`` against mpi-tcp (``baseline``,
``baseline_name``), ``ratio_shm`` against mpi-shm (``baseline_shm``).  A
baseline that cannot run (no ``mpirun``, no mpi4py, a failed launch) is
reported, with how to install it, and gives no ratio.  With 2 cores, 4 and 8
members are oversubscribed on both sides (MPI: ``--oversubscribe
--bind-to none``; icnd: N + 3 daemons and this process, unpinned).

What MPI cannot do (``--extra``, default all in the full run, none with
``--quick``; ``--extra-only``: just these, no matrix, no MPI launch): icnd
only, each against fresh daemons, float32 SUM of 1 MiB per member, checked
element by element; their JSON lines carry ``"baseline": null`` and a
``note`` saying why MPI has none, no ratio, and ``other_cpu`` /
``contended`` as above (over the whole case).

- ``member-dies-1MiB-8``: the ``--layout`` of 8 members above, rendezvous
  ``root`` (``hub`` with ``--layout star``; ``--rendezvous`` overrides),
  group ``deadline_ms`` 2000.  Per repetition (at most 3) the survivors
  w1..w7 each contribute and then call ``reduce(partial=True)`` (the
  client's ``allreduce`` has no partial flag); once all seven have
  contributed, w8's node is SIGKILLed (``Network.kill``) before it
  contributes, and restarted after the rep.  Every survivor must get
  ``complete=False``, contributors w1..w7 and the sum of their arrays.
  ``value``: from the start of the round to the last survivor's result
  (``after_kill_s``: from the kill); ``within_limit``: every rep within
  deadline + 1 s (``limit_s``); ``agg_partials``: the partials the nodes
  produced.  (MPI: the job aborts or hangs.)
- ``late-consumer-1MiB-8``: after a complete allreduce on the same layout
  and rendezvous, a ninth client, on ``root`` (``hub`` with ``--layout
  star``; not a member), fetches the finished aggregate by name
  (``reduce`` of the same round), checked; ``value``: the median over
  max(``--reps``, 10) fetches after one untimed first fetch (``first_s``);
  target 2 ms (``met``).  ``from_cache``: no node's ``agg_roots`` moved
  (nothing recomputed) and that node's ``cs_hits`` moved by at least one
  per fetch (``agg_roots_delta``, ``cs_hits_delta``).  (MPI keeps no
  result by name for a process outside the job.)
- ``incast-{star,tree}-1MiB-32`` (both layouts whatever ``--layout``):
  32 members into one rendezvous, ``star`` (every member linked to
  ``hub``, the rendezvous: 33 daemons) and ``tree`` (4 aggregators of 8
  members under ``root``, the rendezvous: 37 daemons); warm-up, then at
  most 3 timed allreduce rounds.  ``value``: the bytes the
  rendezvous received on its links during a round (median; the
  ``in_bytes`` counters of its non-local faces in ``face list``, which
  count whole packets: headers, signatures and the members' Interests
  included; ``status --json`` has no byte counters), with ``in_packets`` and
  the time (``time_s``); ``rendezvous_counters``: how much the rendezvous's
  ``agg_retransmissions``, ``agg_duplicates``, ``agg_late`` and
  ``unsolicited_data`` moved over the timed rounds (a segment received twice
  shows there).  ``incast-fanin-1MiB-32``: star bytes / tree
  bytes (``expected``: 8, the members per aggregator), and the star/tree
  time ratio.  (MPI combines only at its ranks: there is no network node
  that could aggregate, so no baseline.)
- ``rendezvous-killed-16MiB-8`` (``--quick``: 4 MiB): the tree of 8 members
  with a link between ``agg1`` and ``agg2`` (so the members stay connected
  without ``root``), link-state routing, rendezvous ``root,agg1`` (even
  segments start at root, odd ones at agg1), group ``deadline_ms`` 5000.
  Per repetition (at most 3) every member contributes, then all call
  ``reduce`` (timeout 5 s) at once, and as soon as ``root`` has started
  aggregating one of the round's segments it is SIGKILLed; restarted after
  the rep.  ``outcome``: ``completed`` (every member's result complete and
  checked; root's segments failed over to agg1: ``agg_roots`` per node,
  against ``agg_roots_undisturbed`` of a round without a kill) or
  ``failed`` (``errors``); ``value``: from the ``reduce`` calls until the
  last one returned or raised (``after_kill_s``: from the kill;
  ``undisturbed_s``: the round without a kill); ``within_limit``: every rep
  within deadline + 1 s.  (MPI: the job aborts or hangs.)
- ``straggler-1MiB-8`` (``--quick``: 64 KiB, 5 rounds): the ``--layout`` of
  8 members, group ``deadline_ms`` 200; per round every member "computes"
  (sleeps) 0.2 s, w8 0.4 s (2x), then contributes and calls
  ``reduce(partial=True)``; 100 rounds.  Round time: until every member
  but the straggler has its result; ``value``: its p99, with the median
  (``p99_over_median``), the rounds whose result left the straggler out
  (``partial_rounds``; ``others_left_out_rounds``: those that also left
  out a member that was not slow by design, late on a loaded machine) and
  the straggler's own median (``straggler_s``: what all would wait without
  partials).  Every result is checked: the sum of exactly its contributors.  (MPI: every collective waits for its
  slowest rank.)

Output: progress on stderr; on stdout a table, then one JSON line per case
(``--json-only``: only the JSON lines).  Exit status 1 if an icnd case
failed or icnd has no reduction API.  Runtime: ``--quick`` ~10 s, the full
matrix ~4 min (mostly the 64 MiB cases; the MPI side ~40 s), plus ~3 min
for the ``--extra`` cases.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_common.py (it adds the checkout)
import _common as C  # noqa: E402

import numpy as np  # noqa: E402

GROUP = "bench"
OPS = ("allreduce", "reduce")
KiB, MiB = 1 << 10, 1 << 20
SIZES = (KiB, MiB, 16 * MiB, 64 * MiB)
QUICK_SIZES = (KiB, MiB)
MEMBERS = (4, 8)
QUICK_MEMBERS = (4,)
REPS, QUICK_REPS = 7, 3
OP_TIMEOUT = 120.0  # seconds, one icnd operation
CONTENDED = 0.25  # other processes using more than this share of a core meanwhile: numbers disturbed
API = ("allreduce", "contribute", "reduce")  # icnd.Client methods the icnd side needs
DEFAULT_SEG_BYTES = 512 * KiB  # icnd's default segment size (icnd.reduction.group.DEFAULT_SEG_BYTES)
# the group's segments on TCP links: the largest icnd allows (fewer segments, less work per byte;
# docs/performance.md "Segment size"); over UDP, icnd's default (every datagram of a segment must arrive)
TCP_SEGMENT_BYTES = 4 * MiB

MPI_SCRIPT = C.BENCH_DIR / "mpi_allreduce.py"
MPI_COMMON = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "pml", "ob1",
              "--mca", "oob_tcp_if_include", "lo"]
MPI_TRANSPORTS = {  # label -> BTL flags
    "tcp": ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo"],
    "shm": ["--mca", "btl", "vader,self"],
}
MPI_OP_NAMES = {"allreduce": "MPI_Allreduce", "reduce": "MPI_Reduce (root 0)"}
MPI_INSTALL_HINT = ("`make bench-deps`, or by hand: `apt-get update && DEBIAN_FRONTEND=noninteractive apt-get "
                    "install -y openmpi-bin libopenmpi-dev` (as root), then `.venv/bin/pip install mpi4py`")
MPI_LAUNCH_TIMEOUT = 900.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
MIN_OTHER_WINDOW = 1.0  # s: shorter windows are too coarse (10 ms ticks, a dozen processes) to judge contention


# --- formatting -------------------------------------------------------------------------------------


def size_label(nbytes: int) -> str:
    """1024 -> '1KiB', 67108864 -> '64MiB', 1000 -> '1000B'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"


def parse_size(text: str) -> int:
    """'1KiB', '16MiB', '1GiB' or a plain number of bytes."""
    text = text.strip()
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB), ("B", 1)):
        if text.endswith(unit):
            return int(text[: -len(unit)]) * scale
    return int(text)


def parse_list(text: str, item: Callable[[str], Any]) -> list[Any]:
    return [item(part) for part in text.split(",") if part.strip()]


def fmt_time(seconds: float | None) -> str:
    if seconds is None or seconds != seconds:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.3f} s"


def _r(v: float | None, digits: int = 4) -> float | None:
    """`v` to `digits` significant digits (None stays None, nan becomes None)."""
    return None if v is None or v != v else float(f"{v:.{digits}g}")


# --- results -------------------------------------------------------------------------------------------


@dataclass
class Timing:
    """One case on one side: seconds per operation over the timed repetitions, or why there are none."""

    median: float | None = None
    lo: float | None = None
    hi: float | None = None
    reps: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # side-specific fields for the JSON line
    error: str | None = None

    @classmethod
    def of(cls, samples: list[float], **extra: Any) -> Timing:
        return cls(statistics.median(samples), min(samples), max(samples), len(samples), extra)

    def summary(self) -> dict[str, Any]:
        if self.error or self.median is None:
            return {"error": self.error or "not measured"}
        return {"median_s": _r(self.median), "min_s": _r(self.lo), "max_s": _r(self.hi), "reps": self.reps,
                **self.extra}


Key = tuple[str, int, int]  # (op, bytes, members)


# --- MPI baseline --------------------------------------------------------------------------------------


def mpi_unavailable() -> str | None:
    """Why the MPI baseline cannot run here (with how to install it), or None."""
    missing = []
    if shutil.which("mpirun") is None:
        missing.append("mpirun (Open MPI)")
    if importlib.util.find_spec("mpi4py") is None:
        missing.append(f"mpi4py (in {sys.executable})")
    if not missing:
        return None
    return f"{' and '.join(missing)} not found: no MPI baseline, no ratios. Install with {MPI_INSTALL_HINT}."


def mpi_argv(transport: str, members: int, sizes: list[int], ops: list[str], reps: int) -> list[str]:
    return ["mpirun", *MPI_COMMON, *MPI_TRANSPORTS[transport], "-np", str(members),
            sys.executable, str(MPI_SCRIPT), "--label", transport, "--reps", str(reps),
            "--sizes", ",".join(map(str, sizes)), "--ops", ",".join(ops)]


def machine_task_seconds() -> float:
    """CPU seconds all cores have spent running tasks (user, nice, system, steal) since boot:
    `C.machine_busy_seconds` less interrupt and softirq time, which loopback traffic (ours
    as much as anyone's) is charged to and which no process's own CPU time includes."""
    try:
        with open("/proc/stat", "rb") as f:
            user, nice, system, _idle, _iowait, _irq, _softirq, steal = map(int, f.readline().split()[1:9])
    except (OSError, ValueError):
        return 0.0
    return (user + nice + system + steal) / CLK_TCK


def own_cpu_seconds() -> float:
    """CPU seconds of this process and its reaped descendants (mpirun and its ranks)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def log_excerpt(path: str, n: int = 3) -> str:
    """The first `n` lines of a log that look like errors (else its last lines), on one line."""
    lines = [ln.strip() for ln in C.tail(path, 200).splitlines() if ln.strip() and not ln.startswith("-")]
    errors = [ln for ln in lines if any(w in ln.lower() for w in ("error", "can't", "cannot", "no such", "abort"))]
    return " | ".join(list(dict.fromkeys(errors or lines[-n:]))[:n])


def run_mpi(transport: str, members: int, sizes: list[int], ops: list[str], reps: int,
            workdir: str, quiet: bool) -> dict[Key, Timing]:
    """One mpirun launch: every (op, size) at `members` ranks over `transport`."""
    argv = mpi_argv(transport, members, sizes, ops, reps)
    log_path = f"{workdir}/mpi-{transport}-{members}.log"
    C.log(f"mpi-{transport}: {members} ranks: {' '.join(argv)}", quiet)
    busy0, ours0, wall0 = machine_task_seconds(), own_cpu_seconds(), time.perf_counter()
    proc = C.spawn(argv, log_path=log_path, stdout=subprocess.PIPE)
    try:
        out, _ = proc.communicate(timeout=MPI_LAUNCH_TIMEOUT)
        error = None if proc.returncode == 0 else f"mpirun exited with {proc.returncode}"
    except subprocess.TimeoutExpired:
        out, error = b"", f"mpirun did not finish within {MPI_LAUNCH_TIMEOUT:g} s"
    finally:
        C.stop(proc)
    other = machine_task_seconds() - busy0 - (own_cpu_seconds() - ours0)
    other_cpu = _r(max(0.0, other) / (time.perf_counter() - wall0), 2)
    results: dict[Key, Timing] = {}
    for text in out.decode("utf-8", "replace").splitlines():
        if not text.startswith("{"):
            continue
        rec = json.loads(text)
        timing = Timing(rec["median_s"], rec["min_s"], rec["max_s"], rec["reps"],
                        {"inner_calls": rec["inner"], "other_cpu": other_cpu,
                         "version": f"{rec['mpi']}; mpi4py {rec['mpi4py']}"})
        if not rec.get("ok"):
            timing.error = rec.get("error", "wrong result")
        results[(rec["op"], rec["bytes"], members)] = timing
        C.log(f"  {rec['op']} {size_label(rec['bytes'])}: {fmt_time(rec['median_s'])} "
              f"({fmt_time(rec['min_s'])}..{fmt_time(rec['max_s'])})"
              + ("" if rec.get("ok") else f" WRONG RESULT: {timing.error}"), quiet)
    if error:
        error += f"; {log_path}: {log_excerpt(log_path)}"
        C.log(f"  mpi-{transport} {members} ranks FAILED: {error}", quiet)
    for op in ops:
        for nbytes in sizes:
            results.setdefault((op, nbytes, members), Timing(error=error or "no result printed"))
    return results


# --- icnd side -----------------------------------------------------------------------------------------


def icnd_unavailable() -> str | None:
    """Why the icnd side cannot run (the reduction API is missing), or None."""
    try:
        import icnd
    except ImportError as exc:
        return f"cannot import icnd: {exc}"
    missing = [m for m in API if not hasattr(icnd.Client, m)]
    if missing:
        return f"icnd.Client has no {', '.join(missing)}: the reduction API is not implemented in this checkout"
    return None


def layout_nodes(members: int, layout: str, branches: int = 2) -> tuple[list[str], dict[str, list[str]]]:
    """(member nodes, aggregator node -> its neighbours) of a layout; a tree has
    `branches` aggregators ``agg1..aggK`` (members split in order, the first ones
    one larger) under ``root``."""
    workers = [f"w{i}" for i in range(1, members + 1)]
    if layout == "star":
        return workers, {"hub": workers}
    per, rest = divmod(members, branches)
    aggs: dict[str, list[str]] = {}
    start = 0
    for k in range(branches):
        end = start + per + (1 if k < rest else 0)
        aggs[f"agg{k + 1}"] = workers[start:end]
        start = end
    return workers, {**aggs, "root": list(aggs)}


def describe_layout(members: int, opts: Any) -> str:
    workers, aggs = layout_nodes(members, opts.layout)
    parts = [f"{a}: {', '.join(n)}" for a, n in aggs.items()]
    rendezvous = ",".join(opts.rendezvous) if opts.rendezvous else "icnd's default"
    return (f"{opts.layout} ({len(workers) + len(aggs)} icnd daemons; {'; '.join(parts)}; "
            f"{opts.link_transport} links; group {GROUP} = {workers[0]}..{workers[-1]}, rendezvous {rendezvous}, "
            f"segments of {_segment_text(opts)})")


def _segment_text(opts: Any) -> str:
    seg = getattr(opts, "segment_bytes", 0)
    return "512 KiB (icnd's default)" if not seg else f"{seg >> 20} MiB" if seg % (1 << 20) == 0 else f"{seg} bytes"


def topology(members: int, opts: Any, *, layout: str | None = None, branches: int = 2,
             rendezvous: list[str] | None = None, deadline_ms: int | None = None) -> Any:
    """The TopologySpec of `layout` (default `opts.layout`; see `layout_nodes`) for
    `members` members; the group's rendezvous `rendezvous` (default `opts.rendezvous`)
    and, if given, its `deadline_ms`."""
    from icnd.topology import parse

    layout = layout or opts.layout
    rendezvous = rendezvous if rendezvous is not None else opts.rendezvous
    workers, aggs = layout_nodes(members, layout, branches)
    links = [{"ends": [a, n], "transport": opts.link_transport} for a, neighbours in aggs.items() for n in neighbours]
    group: dict[str, Any] = {"members": workers}
    if rendezvous:
        group["rendezvous"] = rendezvous
    if deadline_ms is not None:
        group["deadline_ms"] = deadline_ms
    if getattr(opts, "segment_bytes", None):
        group["segment_bytes"] = opts.segment_bytes
    return parse({
        "nodes": {name: {} for name in [*workers, *aggs]},
        "links": links,
        "groups": {GROUP: group},
    }, source=f"bench/reduce.py {layout}-{members}")


class CheckFailed(Exception):
    """A result that is not the expected sum."""


def check_array(what: str, got: Any, expected: np.ndarray) -> None:
    """CheckFailed unless `got` is an ndarray equal to `expected` (dtype, shape, every element)."""
    if not isinstance(got, np.ndarray):
        raise CheckFailed(f"{what}: expected a numpy array, got {type(got).__name__}")
    if got.dtype != expected.dtype or got.shape != expected.shape:
        raise CheckFailed(f"{what}: got {got.dtype}{list(got.shape)}, expected {expected.dtype}{list(expected.shape)}")
    if not np.array_equal(got, expected):
        bad = int(np.count_nonzero(got != expected))
        first = int(np.flatnonzero(got != expected)[0])
        raise CheckFailed(f"{what}: {bad} wrong elements, e.g. [{first}] = {got[first].item()!r}, "
                          f"expected {expected[first].item()!r}")


def contributor_count(reduced: Any) -> int | None:
    c = getattr(reduced, "contributors", None)
    if c is None:
        return None
    return c if isinstance(c, int) else len(c)


class CpuMeter:
    """CPU seconds (from /proc, 10 ms ticks) of this process (the member clients), the
    member daemons and the other daemons: accumulated over the timed regions between
    `start` and `stop`, and, for `other_cpu`, over the whole case since `begin`."""

    def __init__(self, pids: dict[str, int | None], members: list[str]) -> None:
        self.daemons = {"member_daemons": [p for n, p in pids.items() if p and n in members],
                        "aggregator_daemons": [p for n, p in pids.items() if p and n not in members]}
        self.total = {"clients": 0.0, **{g: 0.0 for g in self.daemons}}
        self._start: dict[str, float] = {}
        self._begin = (0.0, 0.0, 0.0)

    def _sample(self) -> dict[str, float]:
        return {"clients": C.self_cpu_seconds(),
                **{g: sum(map(C.cpu_seconds, pids)) for g, pids in self.daemons.items()}}

    def begin(self) -> None:
        self._begin = (machine_task_seconds(), sum(self._sample().values()), time.perf_counter())

    def start(self) -> None:
        self._start = self._sample()

    def stop(self) -> None:
        for g, v in self._sample().items():
            self.total[g] += v - self._start[g]

    def per_op(self, ops: int) -> dict[str, float | None]:
        """CPU seconds per timed operation of this process and of the daemons."""
        return {g: _r(t / ops, 3) if ops else None for g, t in self.total.items()}

    def other_cpu(self) -> tuple[float | None, float]:
        """(share of a core the rest of the machine used since `begin`, or None if that
        window is too short to tell; the window in seconds)."""
        machine0, ours0, wall0 = self._begin
        window = time.perf_counter() - wall0
        other = machine_task_seconds() - machine0 - (sum(self._sample().values()) - ours0)
        return (_r(max(0.0, other) / window, 2) if window >= MIN_OTHER_WINDOW else None), window


def describe(exc: BaseException) -> str:
    """'Type: message' of an exception, of the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


class IcndBench:
    """The timed operations on a launched topology (`clients[i]` is member w(i+1)'s client)."""

    def __init__(self, clients: list[Any], cpu: CpuMeter, timeout: float) -> None:
        self.clients = clients
        self.cpu = cpu
        self.timeout = timeout
        self.rounds = itertools.count(1)
        self.outs: list[np.ndarray] | None = None

    async def allreduce(self, arrays: list[np.ndarray], expected: np.ndarray, timed: bool) -> tuple[float, dict]:
        import trio

        r = next(self.rounds)
        results: list[Any] = [None] * len(self.clients)
        done = [0.0] * len(self.clients)
        if self.outs is None or self.outs[0].shape != arrays[0].shape:  # each member's receive buffer, reused
            self.outs = [np.empty_like(a) for a in arrays]          # across rounds (as MPI's recvbuf)

        async def member(i: int) -> None:
            results[i] = await self.clients[i].allreduce(GROUP, round=r, array=arrays[i], op="sum",
                                                         timeout=self.timeout, out=self.outs[i])
            done[i] = time.perf_counter()

        with trio.fail_after(self.timeout + 10):
            if timed:
                self.cpu.start()
            t0 = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for i in range(len(self.clients)):
                    nursery.start_soon(member, i)
            elapsed = max(done) - t0
            if timed:
                self.cpu.stop()
        for i, z in enumerate(results):
            check_array(f"round {r}: w{i + 1}'s allreduce", z, expected)
        return elapsed, {}

    async def reduce(self, arrays: list[np.ndarray], expected: np.ndarray, timed: bool) -> tuple[float, dict]:
        import trio

        r = next(self.rounds)
        with trio.fail_after(self.timeout + 10):
            t0 = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for c, x in zip(self.clients, arrays):
                    nursery.start_soon(partial(c.contribute, GROUP, round=r, array=x))
            contributed = time.perf_counter() - t0
            if timed:
                self.cpu.start()
            t0 = time.perf_counter()
            res = await self.clients[0].reduce(GROUP, round=r, op="sum", timeout=self.timeout)
            elapsed = time.perf_counter() - t0
            if timed:
                self.cpu.stop()
        n = contributor_count(res)
        if not getattr(res, "complete", False) or n != len(self.clients):
            raise CheckFailed(f"round {r}: reduce returned complete={getattr(res, 'complete', None)!r} "
                              f"with {n} contributors, expected complete with {len(self.clients)}")
        check_array(f"round {r}: w1's reduce", getattr(res, "array", None), expected)
        return elapsed, {"contribute_s": contributed}


def peak_rss_mib(pid: int | None) -> float:
    """A process's peak resident memory (VmHWM) in MiB; 0.0 if unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


async def icnd_case(opts: Any, members: int, op: str, nbytes: int) -> Timing:
    """One case against a freshly launched topology: warm-up, then `opts.reps` timed rounds."""
    from icnd.topology import launch

    spec = topology(members, opts)
    workers, _ = layout_nodes(members, opts.layout)
    n = nbytes // 4
    arrays = [np.full(n, i + 1, dtype=np.float32) for i in range(members)]
    expected = np.full(n, members * (members + 1) / 2, dtype=np.float32)
    samples: list[float] = []
    extras: list[dict] = []
    try:
        async with launch(spec, log_level="warning") as net:
            clients = [await net.connect(w) for w in workers]
            pids = {name: net[name].pid for name in spec.nodes}
            cpu = CpuMeter(pids, workers)
            run: Callable[..., Awaitable[tuple[float, dict]]] = getattr(IcndBench(clients, cpu, opts.timeout), op)
            cpu.begin()
            warm, _ = await run(arrays, expected, timed=False)
            for _ in range(opts.reps):
                elapsed, extra = await run(arrays, expected, timed=True)
                samples.append(elapsed)
                extras.append(extra)
            other, window = cpu.other_cpu()
            peaks = [peak_rss_mib(p) for p in pids.values()]
    except Exception as exc:
        return Timing(error=f"{describe(exc)} (after {len(samples)} timed reps)")
    timing = Timing.of(samples, warmup_s=_r(warm), cpu_s_per_op=cpu.per_op(len(samples)),
                       other_cpu=other, other_cpu_window_s=_r(window, 3),
                       daemon_peak_rss_mib={"max": round(max(peaks)), "sum": round(sum(peaks))})
    for k in extras[0]:  # e.g. contribute_s
        timing.extra[k] = _r(statistics.median(e[k] for e in extras))
    return timing


def icnd_side(opts: Any) -> dict[Key, Timing]:
    """Every icnd case, each against fresh daemons (no state carried from one case to the next)."""
    import trio

    results: dict[Key, Timing] = {}
    for members in opts.members:
        C.log(f"icnd: {members} members, {describe_layout(members, opts)}", opts.quiet)
        for nbytes in opts.sizes:
            for op in opts.ops:
                t = results[(op, nbytes, members)] = trio.run(icnd_case, opts, members, op, nbytes)
                if t.error:
                    C.log(f"  {op} {size_label(nbytes)}: FAILED: {t.error}", opts.quiet)
                else:
                    C.log(f"  {op} {size_label(nbytes)}: {fmt_time(t.median)} ({fmt_time(t.lo)}..{fmt_time(t.hi)}; "
                          f"warm-up {fmt_time(t.extra['warmup_s'])}; daemons' peak RSS "
                          f"{t.extra['daemon_peak_rss_mib']['max']} MiB max, "
                          f"{t.extra['daemon_peak_rss_mib']['sum']} MiB summed)", opts.quiet)
    return results


# --- what MPI cannot do ------------------------------------------------------------------------------


MPI_CANNOT = {  # case family -> why it has no MPI baseline
    "member-dies": "MPI aborts or hangs the job when a rank dies: no partial result",
    "late-consumer": "MPI keeps no result by name: a process outside the job cannot fetch it",
    "incast": "MPI combines only at its ranks: no network node aggregates, so no baseline",
    "rendezvous-killed": "MPI has no aggregation point to fail over to: a dead process aborts or hangs the job",
    "straggler": "an MPI collective waits for its slowest rank every time: no partial result by a deadline",
}
DIES_MEMBERS = 8
DIES_DEADLINE_MS = 2000  # the group's deadline_ms: the longest an aggregation waits for a straggler
DIES_MAX_REPS = 3  # each rep kills and restarts a daemon
DIES_REDUCE_TIMEOUT = 10.0  # s, each survivor's reduce(partial=True): well past the deadline, so the deadline decides
LATE_MEMBERS = 8
LATE_TARGET_S = 0.002
LATE_MIN_REPS = 10
INCAST_MEMBERS = 32
INCAST_BRANCHES = 4  # tree: 4 aggregators of 8 members each under root
INCAST_REPS = 3
INCAST_READY_TIMEOUT = 300.0  # s: 33 or 37 daemons starting and converging on 2 cores
EXTRA_BYTES = MiB
INCAST_COUNTERS = ("agg_retransmissions", "agg_duplicates", "agg_late", "unsolicited_data")  # why bytes repeat
KILL_MEMBERS = 8
KILL_BYTES, KILL_QUICK_BYTES = 16 * MiB, 4 * MiB  # per member: 4 segments of 4 MiB (TCP links), quick: 1
KILL_RENDEZVOUS = ["root", "agg1"]  # even segments start at root, odd ones at agg1; either fails over to the other
KILL_VICTIM = "root"
KILL_TIMEOUT = 5.0  # s, each member's reduce: the round's deadline (also the group's deadline_ms)
KILL_MAX_REPS = 3  # each rep kills and restarts a daemon
KILL_READY_TIMEOUT = 120.0  # s: 11 daemons under link-state routing on 2 cores
STRAGGLER_MEMBERS = 8
STRAGGLER_BYTES, STRAGGLER_QUICK_BYTES = MiB, 64 * KiB
STRAGGLER_COMPUTE_S = 0.2  # each member's compute before it contributes; the straggler's is FACTOR times that
STRAGGLER_FACTOR = 2.0
STRAGGLER_DEADLINE_MS = 200  # the group's deadline_ms; each level below the rendezvous waits 50 ms less (its margin)
STRAGGLER_ROUNDS, STRAGGLER_QUICK_ROUNDS = 100, 5
STRAGGLER_TIMEOUT = 5.0  # s, each reduce(partial=True): far past the deadline, so the deadline decides


def late_node(opts: Any) -> str:
    """Where the late consumer (no member) attaches: root, or hub with ``--layout star``."""
    return "hub" if opts.layout == "star" else "root"


def extra_rendezvous(opts: Any) -> list[str]:
    """The rendezvous of the member-dies and late-consumer cases: `--rendezvous`, else root
    (``hub`` with ``--layout star``): a node that is not a member, so killing a member never
    kills a segment's rendezvous."""
    return opts.rendezvous or (["hub"] if opts.layout == "star" else ["root"])


async def counters_of(net: Any, nodes: list[str]) -> dict[str, dict[str, int]]:
    """Every node's status counters."""
    return {n: (await net.status(n))["counters"] for n in nodes}


async def faces_in(client: Any) -> tuple[int, int]:
    """(bytes, packets) a node received on its non-local faces (its links), from ``face list``."""
    faces = await client.command("face", "list")
    remote = [f["counters"] for f in faces if not f.get("local")]
    return sum(c.get("in_bytes", 0) for c in remote), sum(c.get("in_packets", 0) for c in remote)


def check_partial(what: str, res: Any, contributors: list[str], expected: np.ndarray) -> None:
    """CheckFailed unless `res` is a flagged partial of exactly `contributors` whose sum is `expected`."""
    got = list(getattr(res, "contributors", None) or [])
    if getattr(res, "complete", None) is not False or got != contributors:
        raise CheckFailed(f"{what}: expected a partial (complete=False) of {','.join(contributors)}, got "
                          f"complete={getattr(res, 'complete', None)!r} with {','.join(map(str, got)) or 'none'}")
    check_array(what, getattr(res, "array", None), expected)


async def member_dies_case(opts: Any) -> dict[str, Any]:
    """`DIES_MEMBERS` members, 1 MiB each, group deadline `DIES_DEADLINE_MS`: per rep, the
    survivors contribute then ask ``reduce(partial=True)`` (allreduce with partials: the client's
    allreduce has no partial flag); once all of them have contributed, the last member's node is
    SIGKILLed before it contributes; time = from the start until the last survivor has its
    flagged partial.  The node is restarted between reps."""
    import trio
    from icnd.topology import launch

    members = DIES_MEMBERS
    spec = topology(members, opts, rendezvous=extra_rendezvous(opts), deadline_ms=DIES_DEADLINE_MS)
    workers, _ = layout_nodes(members, opts.layout)
    victim, survivors = workers[-1], workers[:-1]
    n = EXTRA_BYTES // 4
    arrays = [np.full(n, i + 1, dtype=np.float32) for i in range(members)]
    full = np.full(n, members * (members + 1) / 2, dtype=np.float32)
    part = np.full(n, len(survivors) * (len(survivors) + 1) / 2, dtype=np.float32)
    reps = min(opts.reps, DIES_MAX_REPS)
    samples: list[float] = []
    after_kill: list[float] = []
    async with launch(spec, log_level="warning") as net:
        clients = [await net.connect(w) for w in workers]
        cpu = CpuMeter({name: net[name].pid for name in spec.nodes}, workers)
        bench = IcndBench(clients, cpu, opts.timeout)
        cpu.begin()
        await bench.allreduce(arrays, full, timed=False)  # warm-up: a complete round, checked
        partials0 = sum(c.get("agg_partials", 0) for c in (await counters_of(net, list(spec.nodes))).values())
        for _ in range(reps):
            r = next(bench.rounds)
            results: list[Any] = [None] * len(survivors)
            done = [0.0] * len(survivors)
            contributed = trio.Event()
            left = [len(survivors)]
            killed = [0.0]

            async def survivor(i: int) -> None:
                await clients[i].contribute(GROUP, round=r, array=arrays[i], timeout=opts.timeout)
                left[0] -= 1
                if not left[0]:
                    contributed.set()
                results[i] = await clients[i].reduce(GROUP, round=r, op="sum", partial=True,
                                                     timeout=DIES_REDUCE_TIMEOUT)
                done[i] = time.perf_counter()

            async def kill() -> None:
                await contributed.wait()
                killed[0] = time.perf_counter()
                await net.kill(victim)

            with trio.fail_after(opts.timeout + DIES_REDUCE_TIMEOUT + 10):
                t0 = time.perf_counter()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(kill)
                    for i in range(len(survivors)):
                        nursery.start_soon(survivor, i)
            samples.append(max(done) - t0)
            after_kill.append(max(done) - killed[0])
            for i, res in enumerate(results):
                check_partial(f"round {r}: {survivors[i]}'s reduce(partial=True)", res, survivors, part)
            await net.restart(victim)
            clients[-1] = await net.connect(victim)
        partials = sum(c.get("agg_partials", 0) for c in (await counters_of(net, list(spec.nodes))).values())
        other, _window = cpu.other_cpu()  # w8's restarted daemon not counted as ours: an upper bound
    limit = DIES_DEADLINE_MS / 1000 + 1.0
    t = Timing.of(samples)
    return {"value": _r(t.median), "unit": "s", "min_s": _r(t.lo), "max_s": _r(t.hi), "reps": t.reps,
            "after_kill_s": _r(statistics.median(after_kill)), "members": members, "bytes": EXTRA_BYTES,
            "killed": victim, "contributors": survivors, "complete": False, "values_checked": True,
            "deadline_ms": DIES_DEADLINE_MS, "limit_s": limit, "within_limit": max(samples) <= limit,
            "agg_partials": partials - partials0, "reduce_timeout_s": DIES_REDUCE_TIMEOUT,
            "rendezvous": extra_rendezvous(opts), "other_cpu": other}


async def late_consumer_case(opts: Any) -> dict[str, Any]:
    """A complete allreduce of 1 MiB x `LATE_MEMBERS`, then a client on `late_node` (no
    member) fetches the same aggregate by name with ``reduce``; time per fetch, and
    whether it came from a cache: that node's ``cs_hits`` moved, no node's ``agg_roots``."""
    node = late_node(opts)
    from icnd.topology import launch

    members = LATE_MEMBERS
    spec = topology(members, opts, rendezvous=extra_rendezvous(opts))
    workers, _ = layout_nodes(members, opts.layout)
    n = EXTRA_BYTES // 4
    arrays = [np.full(n, i + 1, dtype=np.float32) for i in range(members)]
    expected = np.full(n, members * (members + 1) / 2, dtype=np.float32)
    reps = max(opts.reps, LATE_MIN_REPS)
    samples: list[float] = []
    async with launch(spec, log_level="warning") as net:
        clients = [await net.connect(w) for w in workers]
        cpu = CpuMeter({name: net[name].pid for name in spec.nodes}, workers)
        bench = IcndBench(clients, cpu, opts.timeout)
        cpu.begin()
        await bench.allreduce(arrays, expected, timed=False)
        r = next(bench.rounds) - 1  # the round just finished
        late = await net.connect(node)
        before = await counters_of(net, list(spec.nodes))
        for k in range(reps + 1):  # the first fetch (the client's first look at the group) untimed
            t0 = time.perf_counter()
            res = await late.reduce(GROUP, round=r, op="sum", timeout=opts.timeout)
            elapsed = time.perf_counter() - t0
            if k == 0:
                first = elapsed
            else:
                samples.append(elapsed)
            n_contrib = contributor_count(res)
            if not getattr(res, "complete", False) or n_contrib != members:
                raise CheckFailed(f"round {r}: the late consumer got complete={getattr(res, 'complete', None)!r} "
                                  f"with {n_contrib} contributors, expected complete with {members}")
            check_array(f"round {r}: the late consumer's reduce", getattr(res, "array", None), expected)
        after = await counters_of(net, list(spec.nodes))
        other, _window = cpu.other_cpu()
    roots = sum(after[x].get("agg_roots", 0) - before[x].get("agg_roots", 0) for x in after)
    hits = after[node].get("cs_hits", 0) - before[node].get("cs_hits", 0)
    median = statistics.median(samples)
    return {"value": _r(median), "unit": "s", "min_s": _r(min(samples)), "max_s": _r(max(samples)),
            "reps": len(samples), "first_s": _r(first), "members": members, "bytes": EXTRA_BYTES, "node": node,
            "target_s": LATE_TARGET_S, "met": median <= LATE_TARGET_S,
            "cs_hits_delta": hits, "agg_roots_delta": roots, "from_cache": roots == 0 and hits >= reps + 1,
            "rendezvous": extra_rendezvous(opts), "other_cpu": other}


async def incast_layout(opts: Any, layout: str) -> dict[str, Any]:
    """`INCAST_MEMBERS` members x 1 MiB into one rendezvous (star: the hub; tree: root over
    `INCAST_BRANCHES` aggregators): per timed allreduce round, the bytes and packets the
    rendezvous received on its links (``face list`` in_bytes/in_packets) and the time."""
    from icnd.topology import launch

    members = INCAST_MEMBERS
    rz = "hub" if layout == "star" else "root"
    spec = topology(members, opts, layout=layout, branches=INCAST_BRANCHES, rendezvous=[rz])
    workers, aggs = layout_nodes(members, layout, INCAST_BRANCHES)
    n = EXTRA_BYTES // 4
    arrays = [np.full(n, i + 1, dtype=np.float32) for i in range(members)]
    expected = np.full(n, members * (members + 1) / 2, dtype=np.float32)
    reps = min(opts.reps, INCAST_REPS)
    samples: list[float] = []
    in_bytes: list[int] = []
    in_packets: list[int] = []
    async with launch(spec, log_level="warning", ready_timeout=INCAST_READY_TIMEOUT) as net:
        clients = [await net.connect(w) for w in workers]
        hub = await net.connect(rz)
        pids = {name: net[name].pid for name in spec.nodes}
        cpu = CpuMeter(pids, workers)
        bench = IcndBench(clients, cpu, opts.timeout)
        cpu.begin()
        await bench.allreduce(arrays, expected, timed=False)
        c0 = (await hub.status())["counters"]
        for _ in range(reps):
            b0, p0 = await faces_in(hub)
            elapsed, _ = await bench.allreduce(arrays, expected, timed=True)
            b1, p1 = await faces_in(hub)
            samples.append(elapsed)
            in_bytes.append(b1 - b0)
            in_packets.append(p1 - p0)
        c1 = (await hub.status())["counters"]
        other, _window = cpu.other_cpu()
    t = Timing.of(samples)
    return {"value": int(statistics.median(in_bytes)), "unit": "B", "bytes_min": min(in_bytes),
            "bytes_max": max(in_bytes), "in_packets": int(statistics.median(in_packets)),
            "time_s": _r(t.median), "time_min_s": _r(t.lo), "time_max_s": _r(t.hi), "reps": t.reps,
            "members": members, "bytes": EXTRA_BYTES, "layout": layout, "rendezvous": [rz],
            "daemons": len(workers) + len(aggs), "cpu_s_per_op": cpu.per_op(len(samples)), "other_cpu": other,
            "rendezvous_counters": {k: c1.get(k, 0) - c0.get(k, 0) for k in INCAST_COUNTERS},
            "counted": "in_bytes of the rendezvous node's non-local faces (face list), whole packets on the wire"}


def kill_topology(opts: Any) -> Any:
    """The tree of `KILL_MEMBERS` members with a link between its two leaf switches (so the
    members stay connected without root), link-state routing (routes to a dead node are
    withdrawn, so consumers fail over), rendezvous `KILL_RENDEZVOUS`, deadline `KILL_TIMEOUT`."""
    from icnd.topology import parse

    workers, aggs = layout_nodes(KILL_MEMBERS, "tree")
    links = [{"ends": [a, n], "transport": opts.link_transport} for a, neighbours in aggs.items() for n in neighbours]
    links.append({"ends": ["agg1", "agg2"], "transport": opts.link_transport})
    group: dict[str, Any] = {"members": workers, "rendezvous": KILL_RENDEZVOUS,
                             "deadline_ms": int(KILL_TIMEOUT * 1000)}
    if opts.segment_bytes:
        group["segment_bytes"] = opts.segment_bytes
    return parse({"nodes": {name: {} for name in [*workers, *aggs]}, "links": links, "groups": {GROUP: group},
                  "routing": "link-state"}, source="bench/reduce.py rendezvous-killed")


async def rendezvous_killed_case(opts: Any) -> dict[str, Any]:
    """Per rep (at most `KILL_MAX_REPS`): every member contributes, then all call ``reduce``
    (timeout `KILL_TIMEOUT`) at once; as soon as `KILL_VICTIM` (the first rendezvous of the
    even segments) has started an aggregation of the round it is SIGKILLed.  Outcome: every
    member's complete, checked result (``completed``; the segments it was aggregating fail
    over to the next rendezvous, ``agg_roots`` per node against an undisturbed round's), or
    the first error (``failed``); time from the start of the ``reduce`` calls until the last
    one returned or raised.  The victim is restarted (routes converged) between reps."""
    import trio
    from icnd.topology import launch

    members = KILL_MEMBERS
    nbytes = KILL_QUICK_BYTES if opts.quick else KILL_BYTES
    spec = kill_topology(opts)
    workers, _ = layout_nodes(members, "tree")
    n = nbytes // 4
    arrays = [np.full(n, i + 1, dtype=np.float32) for i in range(members)]
    full = np.full(n, members * (members + 1) / 2, dtype=np.float32)
    reps = min(opts.reps, KILL_MAX_REPS)
    samples: list[float] = []
    after_kill: list[float] = []
    outcomes: list[str] = []
    errors: list[str] = []
    roots: list[dict[str, int]] = []
    mid_round: list[bool] = []

    async def agg_roots(net: Any) -> dict[str, int]:
        return {x: (await net.status(x))["counters"].get("agg_roots", 0)
                for x in spec.nodes if net[x].alive}

    async def one_round(net: Any, clients: list[Any], r: int,
                        victim: Any | None) -> tuple[float, float, list[Any], bool]:
        """(seconds to the last member's answer, seconds from the kill, results or errors,
        killed before any member had its answer); `victim`: a client of the node to kill."""
        async with trio.open_nursery() as nursery:
            for c, x in zip(clients, arrays):
                nursery.start_soon(partial(c.contribute, GROUP, round=r, array=x, timeout=opts.timeout))
        results: list[Any] = [None] * members
        done = [0.0] * members
        killed = [0.0]
        started = (await victim.status())["counters"].get("agg_roots", 0) if victim is not None else 0

        async def member(i: int) -> None:
            try:
                results[i] = await clients[i].reduce(GROUP, round=r, op="sum", timeout=KILL_TIMEOUT)
            except Exception as exc:  # the failure is the measurement: kept, reported
                results[i] = exc
            done[i] = time.perf_counter()

        async def kill() -> None:
            assert victim is not None
            with trio.move_on_after(KILL_TIMEOUT):  # until it aggregates part of this round
                while (await victim.status())["counters"].get("agg_roots", 0) <= started:
                    await trio.sleep(0.002)
            killed[0] = time.perf_counter()
            await net.kill(KILL_VICTIM)

        with trio.fail_after(KILL_TIMEOUT + 10):
            t0 = time.perf_counter()
            async with trio.open_nursery() as nursery:
                if victim is not None:
                    nursery.start_soon(kill)
                for i in range(members):
                    nursery.start_soon(member, i)
        return max(done) - t0, max(done) - (killed[0] or t0), results, 0 < killed[0] < min(done)

    async with launch(spec, log_level="warning", ready_timeout=KILL_READY_TIMEOUT) as net:
        clients = [await net.connect(w) for w in workers]
        cpu = CpuMeter({name: net[name].pid for name in spec.nodes}, workers)
        rounds = itertools.count(1)
        cpu.begin()
        before = await agg_roots(net)
        normal, _, results, _ = await one_round(net, clients, next(rounds), None)
        normal_roots = {x: v - before[x] for x, v in (await agg_roots(net)).items()}
        for i, res in enumerate(results):  # the undisturbed first round: complete and right, or the case fails
            if isinstance(res, Exception):
                raise res
            check_array(f"first round: {workers[i]}'s reduce", getattr(res, "array", None), full)
        for _ in range(reps):
            r = next(rounds)
            before = await agg_roots(net)
            victim = await net.connect(KILL_VICTIM)
            elapsed, since_kill, results, before_any = await one_round(net, clients, r, victim)
            samples.append(elapsed)
            after_kill.append(since_kill)
            mid_round.append(before_any)
            failed = [(workers[i], res) for i, res in enumerate(results) if isinstance(res, Exception)]
            if failed:
                outcomes.append("failed")
                errors.append(f"{failed[0][0]}: {describe(failed[0][1])}")
            else:
                for i, res in enumerate(results):
                    if not getattr(res, "complete", False):
                        raise CheckFailed(f"round {r}: {workers[i]} got a partial result without asking for one")
                    check_array(f"round {r}: {workers[i]}'s reduce", getattr(res, "array", None), full)
                outcomes.append("completed")
            roots.append({x: v - before[x] for x, v in (await agg_roots(net)).items()})
            await net.restart(KILL_VICTIM)
            clients = [await net.connect(w) for w in workers]
        other, _window = cpu.other_cpu()  # the restarted victim not counted as ours: an upper bound
    limit = KILL_TIMEOUT + 1.0
    t = Timing.of(samples)
    outcome = outcomes[0] if len(set(outcomes)) == 1 else "mixed"
    return {"value": _r(t.median), "unit": "s", "min_s": _r(t.lo), "max_s": _r(t.hi), "reps": t.reps,
            "outcome": outcome, "outcomes": outcomes, "errors": errors,
            "agg_roots": roots, "agg_roots_undisturbed": normal_roots,
            "after_kill_s": _r(statistics.median(after_kill)), "killed_before_any_result": mid_round,
            "undisturbed_s": _r(normal), "killed": KILL_VICTIM, "rendezvous": KILL_RENDEZVOUS, "members": members,
            "bytes": nbytes, "timeout_s": KILL_TIMEOUT, "limit_s": limit, "within_limit": max(samples) <= limit,
            "routing": "link-state", "values_checked": outcome == "completed", "other_cpu": other}


async def straggler_case(opts: Any) -> dict[str, Any]:
    """`STRAGGLER_MEMBERS` members on the ``--layout``; per round each member computes
    (sleeps) `STRAGGLER_COMPUTE_S`, the last one `STRAGGLER_FACTOR` times that, then
    contributes and calls ``reduce(partial=True)``; the group's ``deadline_ms`` is
    `STRAGGLER_DEADLINE_MS`.  Round time: from the round's start until every other member
    has its result (what a partial-tolerant application waits); the straggler's own time
    is kept apart (``straggler_s``: what every member would wait for without partials)."""
    import trio
    from icnd.topology import launch

    members = STRAGGLER_MEMBERS
    nbytes = STRAGGLER_QUICK_BYTES if opts.quick else STRAGGLER_BYTES
    rounds = STRAGGLER_QUICK_ROUNDS if opts.quick else STRAGGLER_ROUNDS
    spec = topology(members, opts, rendezvous=extra_rendezvous(opts), deadline_ms=STRAGGLER_DEADLINE_MS)
    workers, _ = layout_nodes(members, opts.layout)
    straggler = workers[-1]
    n = nbytes // 4
    arrays = [np.full(n, i + 1, dtype=np.float32) for i in range(members)]
    full = np.full(n, members * (members + 1) / 2, dtype=np.float32)
    compute = [STRAGGLER_COMPUTE_S] * (members - 1) + [STRAGGLER_COMPUTE_S * STRAGGLER_FACTOR]
    times: list[float] = []
    straggler_times: list[float] = []
    partial_rounds = 0  # rounds in which some member's result left the straggler out
    others_left_out = 0  # ... left out another member (late too: loaded machine)
    async with launch(spec, log_level="warning") as net:
        clients = [await net.connect(w) for w in workers]
        cpu = CpuMeter({name: net[name].pid for name in spec.nodes}, workers)
        bench = IcndBench(clients, cpu, opts.timeout)
        cpu.begin()
        # warm-up: a complete round, checked; every contribution in before any request (an
        # allreduce's first requests could wait past the short deadline for a slow first upload)
        r = next(bench.rounds)
        async with trio.open_nursery() as nursery:
            for c, x in zip(clients, arrays):
                nursery.start_soon(partial(c.contribute, GROUP, round=r, array=x, timeout=opts.timeout))
        for i, c in enumerate(clients):
            check_array(f"warm-up: {workers[i]}'s reduce",
                        getattr(await c.reduce(GROUP, round=r, op="sum", timeout=opts.timeout), "array", None), full)
        for _ in range(rounds):
            r = next(bench.rounds)
            results: list[Any] = [None] * members
            done = [0.0] * members

            async def member(i: int) -> None:
                await trio.sleep(compute[i])
                await clients[i].contribute(GROUP, round=r, array=arrays[i], timeout=opts.timeout)
                results[i] = await clients[i].reduce(GROUP, round=r, op="sum", partial=True,
                                                     timeout=STRAGGLER_TIMEOUT)
                done[i] = time.perf_counter()

            with trio.fail_after(STRAGGLER_TIMEOUT + 10):
                t0 = time.perf_counter()
                async with trio.open_nursery() as nursery:
                    for i in range(members):
                        nursery.start_soon(member, i)
            times.append(max(done[:-1]) - t0)
            straggler_times.append(done[-1] - t0)
            left_out: set[str] = set()
            for i, res in enumerate(results):  # whoever was late is left out: the sum of exactly the others
                got = list(getattr(res, "contributors", None) or [])
                if not got or any(g not in workers for g in got) or (got == workers) != getattr(res, "complete", None):
                    raise CheckFailed(f"round {r}: {workers[i]}'s result claims contributors {got}, "
                                      f"complete={getattr(res, 'complete', None)!r}")
                total = sum(workers.index(g) + 1 for g in got)
                check_array(f"round {r}: {workers[i]}'s reduce(partial=True)", getattr(res, "array", None),
                            np.full(n, total, dtype=np.float32))
                left_out.update(w for w in workers if w not in got)
            partial_rounds += straggler in left_out
            others_left_out += bool(left_out - {straggler})
        other, _window = cpu.other_cpu()
    median = statistics.median(times)
    p99 = float(np.percentile(times, 99))
    return {"value": _r(p99), "unit": "s", "median_s": _r(median), "p99_s": _r(p99),
            "p99_over_median": _r(p99 / median, 3), "min_s": _r(min(times)), "max_s": _r(max(times)),
            "rounds": rounds, "partial_rounds": partial_rounds, "others_left_out_rounds": others_left_out,
            "straggler": straggler,
            "straggler_s": _r(statistics.median(straggler_times)), "compute_s": STRAGGLER_COMPUTE_S,
            "straggler_compute_s": STRAGGLER_COMPUTE_S * STRAGGLER_FACTOR, "deadline_ms": STRAGGLER_DEADLINE_MS,
            "members": members, "bytes": nbytes, "rendezvous": extra_rendezvous(opts), "values_checked": True,
            "other_cpu": other}


EXTRAS = ("member-dies", "late-consumer", "incast", "rendezvous-killed", "straggler")


def extra_side(opts: Any) -> tuple[list[dict], list[str]]:
    """The cases MPI cannot run (`opts.extra`): one JSON line and one table row each."""
    import trio

    lines: list[dict] = []
    rows: list[str] = []

    def line(case: str, body: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
        rec: dict[str, Any] = {"bench": "reduce", "case": case, "value": None, "unit": None}
        rec.update(body or {})
        if error:
            rec["error"] = error
        family = next(f for f in EXTRAS if case.startswith(f))
        rec.update({"link_transport": opts.link_transport, "segment_bytes": opts.segment_bytes or DEFAULT_SEG_BYTES,
                    "baseline": None, "baseline_name": None,
                    "note": MPI_CANNOT[family]})
        other = rec.get("other_cpu")
        rec["contended"] = other is not None and other > CONTENDED
        lines.append(rec)
        return rec

    def run(what: str, fn: Callable[..., Awaitable[dict[str, Any]]], *args: Any) -> tuple[dict | None, str | None]:
        C.log(f"icnd: {what}", opts.quiet)
        try:
            return trio.run(fn, opts, *args), None
        except Exception as exc:
            error = describe(exc)
            C.log(f"  FAILED: {error}", opts.quiet)
            return None, error

    def row(rec: dict[str, Any], text: Callable[[], str]) -> None:
        rows.append(f"{rec['case']:<26} " + ("FAILED" if rec.get("error") else text())
                    + ("  (!)" if rec["contended"] else ""))

    size = size_label(EXTRA_BYTES)
    if "member-dies" in opts.extra:
        body, error = run(f"member-dies: {DIES_MEMBERS} members, the last killed mid-round, "
                          f"deadline {DIES_DEADLINE_MS} ms", member_dies_case)
        rec = line(f"member-dies-{size}-{DIES_MEMBERS}", body, error)
        row(rec, lambda: f"{fmt_time(rec['value'])} to the last survivor's partial ({len(rec['contributors'])} "
                         f"contributors; {fmt_time(rec['after_kill_s'])} after the kill; limit deadline + 1 s = "
                         f"{rec['limit_s']:g} s: {'within' if rec['within_limit'] else 'EXCEEDED'})")
    if "late-consumer" in opts.extra:
        body, error = run(f"late-consumer: {LATE_MEMBERS} members, then a client on {late_node(opts)}",
                          late_consumer_case)
        rec = line(f"late-consumer-{size}-{LATE_MEMBERS}", body, error)
        row(rec, lambda: f"{fmt_time(rec['value'])} per fetch by name at {rec['node']} (target "
                         f"{fmt_time(LATE_TARGET_S)}: {'met' if rec['met'] else 'missed'}; cs_hits "
                         f"+{rec['cs_hits_delta']}, agg_roots +{rec['agg_roots_delta']}: "
                         f"{'from cache' if rec['from_cache'] else 'NOT from cache'})")
    if "incast" in opts.extra:
        by: dict[str, dict] = {}
        for layout in ("star", "tree"):
            body, error = run(f"incast: {INCAST_MEMBERS} members, {layout}", incast_layout, layout)
            rec = by[layout] = line(f"incast-{layout}-{size}-{INCAST_MEMBERS}", body, error)
            row(rec, lambda: f"{rec['value'] / MiB:.1f} MiB into {rec['rendezvous'][0]} per round "
                             f"({rec['in_packets']} packets), {fmt_time(rec['time_s'])}")
        star, tree = by["star"], by["tree"]
        measured = not star.get("error") and not tree.get("error") and tree["value"]
        rec = line(f"incast-fanin-{size}-{INCAST_MEMBERS}",
                   {"value": _r(star["value"] / tree["value"], 3), "unit": "x",
                    "time_ratio": _r(star["time_s"] / tree["time_s"], 3)} if measured else {"unit": "x"},
                   None if measured else "star or tree not measured")
        rec.update({"members": INCAST_MEMBERS, "bytes": EXTRA_BYTES, "expected": INCAST_MEMBERS // INCAST_BRANCHES,
                    "contended": star["contended"] or tree["contended"]})
        row(rec, lambda: f"star bytes / tree bytes = {rec['value']:.2f} (fan-in {rec['expected']}); "
                         f"star time / tree time = {rec['time_ratio']:.2f}")
    if "rendezvous-killed" in opts.extra:
        nbytes = KILL_QUICK_BYTES if opts.quick else KILL_BYTES
        body, error = run(f"rendezvous-killed: {KILL_MEMBERS} members, {KILL_VICTIM} killed mid-round, "
                          f"rendezvous {','.join(KILL_RENDEZVOUS)}", rendezvous_killed_case)
        rec = line(f"rendezvous-killed-{size_label(nbytes)}-{KILL_MEMBERS}", body, error)
        row(rec, lambda: f"{rec['outcome']} in {fmt_time(rec['value'])} ({fmt_time(rec['after_kill_s'])} after "
                         f"killing {rec['killed']}, undisturbed {fmt_time(rec['undisturbed_s'])}; limit deadline "
                         f"+ 1 s = {rec['limit_s']:g} s: {'within' if rec['within_limit'] else 'EXCEEDED'})")
    if "straggler" in opts.extra:
        nbytes = STRAGGLER_QUICK_BYTES if opts.quick else STRAGGLER_BYTES
        body, error = run(f"straggler: {STRAGGLER_MEMBERS} members, one {STRAGGLER_FACTOR:g}x slower, partial, "
                          f"deadline {STRAGGLER_DEADLINE_MS} ms", straggler_case)
        rec = line(f"straggler-{size_label(nbytes)}-{STRAGGLER_MEMBERS}", body, error)
        row(rec, lambda: f"p99 {fmt_time(rec['p99_s'])}, median {fmt_time(rec['median_s'])} (p99/median "
                         f"{rec['p99_over_median']:.2f}; {rec['partial_rounds']}/{rec['rounds']} rounds partial; "
                         f"the straggler's own median {fmt_time(rec['straggler_s'])})")
    return lines, rows


# --- report ---------------------------------------------------------------------------------------------


def build_lines(opts: Any, icnd: dict[Key, Timing], icnd_error: str | None,
                mpi: dict[str, dict[Key, Timing]], mpi_error: str | None) -> tuple[list[dict], list[str]]:
    """One JSON line and one table row per case."""
    lines: list[dict] = []
    rows: list[str] = []
    for members in opts.members:
        for op in opts.ops:
            for nbytes in opts.sizes:
                key = (op, nbytes, members)
                case = f"{op}-{size_label(nbytes)}-{members}"
                mine = icnd.get(key) or Timing(error=icnd_error or "not measured")
                value = None if mine.error else mine.median
                line: dict[str, Any] = {
                    "bench": "reduce", "case": case, "op": op, "bytes": nbytes, "members": members,
                    "value": _r(value), "unit": "s", **{k: v for k, v in mine.summary().items() if k != "median_s"},
                    "algbw_GBps": _r(nbytes / value / 1e9, 3) if value else None,
                    "layout": opts.layout, "link_transport": opts.link_transport, "rendezvous": opts.rendezvous or None,
                    "segment_bytes": opts.segment_bytes or DEFAULT_SEG_BYTES,
                    "baseline_name": "mpi-tcp", "baseline_op": MPI_OP_NAMES[op],
                }
                ratios: dict[str, float | None] = {}
                details: dict[str, Any] = {}
                for transport, suffix in (("tcp", ""), ("shm", "_shm")):
                    base = mpi.get(transport, {}).get(key) or Timing(error=mpi_error or f"mpi-{transport} not run")
                    bvalue = None if base.error else base.median
                    ratios[transport] = value / bvalue if value is not None and bvalue else None
                    line[f"baseline{suffix}"] = _r(bvalue)
                    line[f"ratio{suffix}"] = _r(ratios[transport], 3)
                    details[transport] = base.summary()
                line["mpi"] = details
                others = [mine.extra.get("other_cpu"), *(d.get("other_cpu") for d in details.values())]
                line["contended"] = any(o is not None and o > CONTENDED for o in others)
                lines.append(line)
                shown = fmt_time(value) if not mine.error else ("-" if icnd_error else "FAILED")
                rows.append(f"{case:<22} {shown:>10} "
                            f"{fmt_time(line['baseline']):>10} {fmt_time(line['baseline_shm']):>10} "
                            f"{_fmt_ratio(ratios['tcp']):>9} {_fmt_ratio(ratios['shm']):>9}"
                            + ("  (!)" if line["contended"] else ""))
    return lines, rows


def _fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{r:.2f}" if r < 100 else f"{r:.0f}"


def print_table(opts: Any, rows: list[str], extra_rows: list[str], notes: list[str], elapsed: float) -> None:
    print()
    if rows:
        print(f"{'case':<22} {'icnd':>10} {'mpi-tcp':>10} {'mpi-shm':>10} {'icnd/tcp':>9} {'icnd/shm':>9}")
        for row in rows:
            print(row)
        members = opts.members[0]
        print(f"icnd: {describe_layout(members, opts)}"
              + (f" (and likewise for {', '.join(map(str, opts.members[1:]))} members)"
                 if len(opts.members) > 1 else "")
              + "; all member clients in this process; reduce = contributions first, then w1's reduce timed.")
        print("MPI: bench/mpi_allreduce.py under mpirun, N ranks (Allreduce, resp. Reduce to rank 0); "
              "tcp = BTL tcp,self on lo, shm = BTL vader,self. Time = median over "
              f"{opts.reps} reps (MPI: max over ranks per rep). ratio = icnd / MPI (<= 1: icnd no slower). "
              "2 cores: oversubscribed on both sides.")
    if extra_rows:
        if rows:
            print()
        print("What MPI cannot do (icnd only, no baseline: a dead rank aborts or hangs an MPI job, "
              "and MPI keeps no result by name):")
        for row in extra_rows:
            print(row)
        if any(r.endswith("(!)") for r in extra_rows):
            print("(!): other processes used over a quarter of a core meanwhile (other_cpu in the JSON line)")
    print(f"python {platform.python_version()}; {elapsed:.0f} s")
    for note in notes:
        print(note)
    print()


# --- main -------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options, lists parsed and defaults resolved (``--quick``, ``--extra``); exits
    with a usage error (status 2) on a bad value."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_MEMBERS[0]} members, {'+'.join(map(size_label, QUICK_SIZES))}, {QUICK_REPS} reps")
    ap.add_argument("--members", help="comma-separated member counts (default 4,8; quick 4)")
    ap.add_argument("--sizes", help="comma-separated sizes, e.g. 1KiB,1MiB,16MiB,64MiB (the default; quick 1KiB,1MiB)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated, of allreduce, reduce (default both)")
    ap.add_argument("--reps", type=int,
                    help=f"timed repetitions per case, both sides (default {REPS}, quick {QUICK_REPS})")
    ap.add_argument("--layout", choices=("tree", "star"), default="tree",
                    help="icnd topology: two aggregators under a root (default), or one hub")
    ap.add_argument("--link-transport", choices=("tcp", "udp"), default="tcp", help="icnd links (default tcp)")
    ap.add_argument("--rendezvous", help="comma-separated nodes where aggregation starts (default: root, or hub "
                                         "with --layout star); 'members': icnd's default (the members' nodes)")
    ap.add_argument("--segment-bytes", type=parse_size,
                    help=f"the group's segment size, e.g. 512KiB (default {TCP_SEGMENT_BYTES >> 20} MiB on tcp "
                         "links, icnd's default, 512 KiB, on udp links)")
    ap.add_argument("--timeout", type=float, default=OP_TIMEOUT, help=f"per icnd operation, s (default {OP_TIMEOUT:g})")
    ap.add_argument("--mpi-transports", default="tcp,shm", help="MPI baselines to run (default tcp,shm)")
    ap.add_argument("--no-mpi", action="store_true", help="skip the MPI baselines (no ratios)")
    ap.add_argument("--no-icnd", action="store_true", help="measure only the MPI baselines")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    ap.add_argument("--extra", help=f"comma-separated cases MPI cannot run, of {', '.join(EXTRAS)}, or all or none "
                                    "(default all; quick none)")
    ap.add_argument("--extra-only", action="store_true",
                    help="only the --extra cases (default all of them): no op/size matrix, no MPI baselines")
    ap.add_argument("--netns", action="store_true",
                    help="shaped links (issue #30; root): allreduce of 8 hosts, one namespace each, over 100 Mbit/s "
                         "tbf links, icnd against MPI in the same namespaces (bench/netns_reduce.py); default "
                         "sizes 1MiB,16MiB,64MiB, 3 reps, layouts star and tree (quick: 1MiB, star)")
    ap.add_argument("--netns-layouts", help="with --netns: comma-separated, of star, tree (default both)")
    ap.add_argument("--netns-routing", choices=("static", "link-state"), default="static",
                    help="with --netns: icnd's routing (default static; see bench/netns_reduce.py ROUTING)")
    opts = ap.parse_args(argv)
    if opts.netns:
        return _netns_args(ap, opts)
    opts.quiet = opts.json_only
    opts.members = parse_list(opts.members, int) if opts.members else list(QUICK_MEMBERS if opts.quick else MEMBERS)
    opts.sizes = parse_list(opts.sizes, parse_size) if opts.sizes else list(QUICK_SIZES if opts.quick else SIZES)
    opts.ops = parse_list(opts.ops, str.strip)
    opts.reps = opts.reps or (QUICK_REPS if opts.quick else REPS)
    if opts.segment_bytes is None:
        opts.segment_bytes = TCP_SEGMENT_BYTES if opts.link_transport == "tcp" else 0  # 0: icnd's default
    opts.rendezvous = parse_list(opts.rendezvous, str.strip) if opts.rendezvous else (
        ["hub"] if opts.layout == "star" else ["root"])
    if opts.rendezvous == ["members"]:
        opts.rendezvous = []  # the group sets none: icnd's default
    transports = parse_list(opts.mpi_transports, str.strip)
    default_extra = "none" if opts.quick and not opts.extra_only else "all"
    extra = parse_list(opts.extra, str.strip) if opts.extra else [default_extra]
    opts.extra = [] if extra == ["none"] else list(EXTRAS) if extra == ["all"] else extra
    if any(e not in EXTRAS for e in opts.extra):
        ap.error(f"--extra: expected all, none or a comma-separated list of {', '.join(EXTRAS)}, got {','.join(extra)}")
    if opts.extra_only and not opts.extra:
        ap.error("--extra-only with --extra none: nothing to run")
    if opts.extra_only:
        opts.no_mpi = True
    if (any(m < 1 for m in opts.members) or any(s <= 0 or s % 4 for s in opts.sizes) or opts.reps < 1
            or any(o not in OPS for o in opts.ops) or any(t not in MPI_TRANSPORTS for t in transports)):
        ap.error("members and reps must be >= 1, sizes positive multiples of 4 bytes, "
                 f"ops among {', '.join(OPS)}, MPI transports among {', '.join(MPI_TRANSPORTS)}")
    return opts


def _netns_args(ap: argparse.ArgumentParser, opts: argparse.Namespace) -> argparse.Namespace:
    """The options of ``--netns`` (bench/netns_reduce.py): its own defaults for sizes, members
    (8, one count), reps and layouts; the op is allreduce only and the loopback cases are off."""
    import netns_reduce as N

    opts.quiet = opts.json_only
    opts.members = parse_list(opts.members, int) if opts.members else [N.MEMBERS]
    opts.sizes = parse_list(opts.sizes, parse_size) if opts.sizes else list(N.QUICK_SIZES if opts.quick else N.SIZES)
    opts.reps = opts.reps or N.REPS
    opts.layouts = (parse_list(opts.netns_layouts, str.strip) if opts.netns_layouts
                    else ["star"] if opts.quick else list(N.LAYOUTS))
    opts.ops = ["allreduce"]
    opts.extra = []
    if opts.segment_bytes is None:
        opts.segment_bytes = N.SEGMENT_BYTES
    if opts.extra_only or opts.rendezvous or opts.layout != "tree" or opts.mpi_transports != "tcp,shm":
        ap.error("--netns: --extra-only, --rendezvous, --layout and --mpi-transports do not apply "
                 "(use --netns-layouts; the rendezvous is the central switch, MPI runs over the shaped links)")
    if (len(opts.members) != 1 or opts.members[0] < 2 or opts.members[0] % 2 or opts.reps < 1
            or any(s <= 0 or s % 4 for s in opts.sizes) or any(x not in N.LAYOUTS for x in opts.layouts)):
        ap.error("--netns: one even member count >= 2, reps >= 1, sizes positive multiples of 4 bytes, "
                 f"layouts among {', '.join(N.LAYOUTS)}")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.netns:
        import netns_reduce

        return netns_reduce.main(opts)
    transports = parse_list(opts.mpi_transports, str.strip)
    t0 = time.perf_counter()
    notes: list[str] = []
    C.log(f"reduce: members {opts.members}, sizes {[size_label(s) for s in opts.sizes]}, ops {opts.ops}, "
          f"{opts.reps} reps" if not opts.extra_only else "reduce: only the cases MPI cannot run", opts.quiet)
    if opts.extra:
        C.log(f"reduce: and the cases MPI cannot run: {', '.join(opts.extra)}", opts.quiet)

    mpi: dict[str, dict[Key, Timing]] = {}
    mpi_error = "skipped (--no-mpi)" if opts.no_mpi else mpi_unavailable()
    if opts.extra_only:
        pass
    elif mpi_error:
        notes.append(f"MPI baseline: {mpi_error}")
        C.log(notes[-1], False)
    else:
        workdir = tempfile.mkdtemp(prefix="icnd-reduce-mpi-")
        try:
            for members in opts.members:
                for transport in transports:
                    mpi.setdefault(transport, {}).update(
                        run_mpi(transport, members, opts.sizes, opts.ops, opts.reps, workdir, opts.quiet))
        finally:
            C.stop_all()
        failed = sorted({t.error for by in mpi.values() for t in by.values() if t.error})
        notes += [f"MPI baseline failed: {e} (no ratio for those cases)" for e in failed]
        if not failed:
            shutil.rmtree(workdir, ignore_errors=True)

    icnd: dict[Key, Timing] = {}
    icnd_error = "skipped (--no-icnd)" if opts.no_icnd else icnd_unavailable()
    extra_lines: list[dict] = []
    extra_rows: list[str] = []
    if icnd_error:
        notes.append(f"icnd: {icnd_error}")
        C.log(notes[-1], False)
    else:
        if not opts.extra_only:
            icnd = icnd_side(opts)
        failed = sorted({t.error for t in icnd.values() if t.error})
        notes += [f"icnd failed: {e}" for e in failed]
        if opts.extra:
            extra_lines, extra_rows = extra_side(opts)
            notes += [f"icnd failed: {x['case']}: {x['error']}" for x in extra_lines if x.get("error")]

    lines, rows = build_lines(opts, icnd, icnd_error, mpi, mpi_error) if not opts.extra_only else ([], [])
    if any(line["contended"] for line in lines):
        notes.append(f"(!) other processes used over {CONTENDED:.0%} of a core while measuring the marked cases "
                     "(other_cpu in the JSON line, per side): the numbers are disturbed, run again on a quiet machine")
    if not opts.quiet:
        print_table(opts, rows, extra_rows, notes, time.perf_counter() - t0)
    for line in [*lines, *extra_lines]:
        C.emit_json(line)
    icnd_failed = not opts.no_icnd and (icnd_error is not None or any(t.error for t in icnd.values())
                                        or any(x.get("error") for x in extra_lines))
    return 1 if icnd_failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("reduce: interrupted", file=sys.stderr)
        sys.exit(130)
