"""Composed named computations (issue #31): named arguments, futures passed on
by name, and calls placed near their data, each against the way a caller
does it without them, in the same run.

The network is a line ``a - b - c`` (`topology_dict`): the caller's client
at ``a``, functions at ``b`` (and ``c``), the data published at ``c`` with
``publish_value`` (a float32 array whose encoded value is ``--size-mib``
MiB: 64 by default, 32 bytes of it the value's header, so that the by-value
baselines stay within a host's default argument limit of 64 MiB).  As root
every node gets a network namespace and every link is shaped to 100 Mbit/s
(the launcher's ``bandwidth_mbps``: tbf on both veth ends, as
``bench/reduce.py --netns``); otherwise, or with ``--loopback``, the nodes
are processes on loopback with unshaped links.  TCP links, link-state
routing (placement reads its database).  The JSON line says which:
``"links": "shaped100"`` or ``"loopback"``.

Cases (``--cases``; each the median over ``--reps`` repetitions, every one
with freshly published objects, so that no content store on the way holds
what a repetition fetches):

- ``ref-vs-value``: ``call(/fn/total, Ref(x))``, ``total`` hosted at ``b``
  only (it sums the array), against the baseline: fetch ``x`` at ``a``,
  decode it, ``call(/fn/total, x)`` by value.  Also the bytes crossing
  ``a``'s link for each way (``a_link_bytes``; ``x_object``: as a multiple
  of the object), from the veth counters in ``a``'s namespace, or on
  loopback from the byte counters of ``a``'s faces toward ``b``.
- ``pipeline``: ``total(double(x))`` with a 64 MiB intermediate, ``double``
  hosted at ``b`` and ``total`` at ``b`` and ``c`` (as ``/fn/sum``): ``fut =
  submit(/fn/double, Ref(x)); call(/fn/sum, fut)`` (placed near the future:
  at ``b``, where the intermediate is) against ``y = call(/fn/double,
  Ref(x))`` returned to ``a``, then ``call(/fn/sum, y)`` by value.  Bytes on
  ``a``'s link too.
- ``placement``: ``/fn/placed`` (``total``) hosted at both ``b`` and ``c``,
  the data at ``c``: calls with a ref and ``place="near"`` (the default),
  where they ran (``info["host"]``, and the hosts' ``fn_executions``
  counters), their time against the same call forced to ``b``
  (``place="/node/b"``).

Also, once per run, ``one_hop_fetch_s``: a plain ``fetch_object`` of the
object at ``b`` from ``c`` (one link, no function, no polling), the floor
under every transfer the cases make.  Where the links take all the time,
the ratios are those of the transfers of the object over one link each way
makes (pipelined hops count once): ``ref-vs-value`` one (c to b) against two
(c to a, then a to b), 0.5; ``pipeline`` two (c to b, then the result b to
c) against three (c to b, b to a, a to c), 0.67.  What else the ways spend
(polling for results, encoding, the machine's load) moves them from there.

Every result is checked exactly: the arrays hold 0s and 1s, so a float32
sum of up to 2^24 of them (and of their doubles) is exact, and the sum is
known from the count of 1s.  A case whose check fails, or that fails,
prints its line with ``"checked": false`` and ``error``, and the bench
exits 1.  ``ratio`` = value / baseline (below 1: the composed way is
faster); the issue's target (``target``, ``met``) applies to shaped links.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_common.py, bench/netns_reduce.py
import _common as C  # noqa: E402
import netns_reduce as N  # noqa: E402  (root check, a host link's veth and its counters)
import reduce as R  # noqa: E402  (rounding, times, describing errors)

import numpy as np  # noqa: E402

MiB = 1 << 20
SIZE_MIB = 64
QUICK_SIZE_MIB = 1
REPS = 3
QUICK_REPS = 1
NEAR_CALLS = 3  # placement: calls with place="near" per repetition (one forced to b)
CASES = ("ref-vs-value", "pipeline", "placement")
LINK_MBPS = N.HOST_MBPS
TARGET_RATIO = 0.5  # issue #31: at least 2x less time on shaped links (ref-vs-value, pipeline)
TARGET_PLACED = 1.0  # placement: every call with a ref runs at the data's node
OP_TIMEOUT = 300.0  # s, one call, fetch or publish
ANNOUNCE_TIMEOUT = 30.0  # s: a published object's announcement reaches a (hellos every 1 s)
READY_TIMEOUT = 60.0  # s: three daemons (in namespaces) up and routed
FUNCTIONS = {  # node -> function prefix -> apps.functions callable
    "b": {"/fn/total": "total", "/fn/double": "double", "/fn/placed": "total", "/fn/sum": "total"},
    "c": {"/fn/sum": "total", "/fn/placed": "total"},
}
DATA = "/data/compose"


# --- the plan (pure) ----------------------------------------------------------------------------------


def topology_dict(shaped: bool) -> dict[str, Any]:
    """The line a - b - c (as `icnd.topology.parse` takes it): TCP links, shaped to
    `LINK_MBPS` when `shaped`, link-state routing, the functions of `FUNCTIONS`."""
    nodes = {n: {"functions": [f"apps.functions:{fn}={prefix}" for prefix, fn in FUNCTIONS.get(n, {}).items()]}
             for n in ("a", "b", "c")}
    link: dict[str, Any] = {"transport": "tcp"}
    if shaped:
        link["bandwidth_mbps"] = LINK_MBPS
    return {"nodes": nodes, "links": [{"ends": ["a", "b"], **link}, {"ends": ["b", "c"], **link}],
            "routing": "link-state"}


def value_header() -> int:
    """Bytes an encoded float32 array takes beyond its elements."""
    from icnd.compute.values import encode_value

    n = 1 << 12
    return len(encode_value(np.zeros(n, dtype=np.float32))) - 4 * n


def make_array(nbytes: int, seed: int) -> tuple[np.ndarray, int]:
    """A float32 array of 0s and 1s whose encoded value is at most `nbytes`, and its count of 1s
    (its exact sum: float32 sums of up to 2^24 such elements, or of their doubles, are exact)."""
    n = (nbytes - value_header()) // 4
    if not 0 < n <= 1 << 24:
        raise ValueError(f"{nbytes} bytes: the array would have {n} elements, expected 1..2^24")
    x = (np.random.default_rng(seed).random(n) < 0.5).astype(np.float32)
    return x, int(np.count_nonzero(x))


class CheckFailed(Exception):
    """A result that is not the expected one."""


def check_sum(got: Any, expected: int, what: str) -> None:
    """`got` must be exactly the float `expected` (what ``total`` returns)."""
    if not isinstance(got, float) or got != float(expected):
        raise CheckFailed(f"{what}: got {got!r}, expected {float(expected)!r}")


@dataclass
class Samples:
    """The timed repetitions of one case (both ways) and what else it measured."""

    value: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    extra: dict[str, list[Any]] = field(default_factory=dict)
    error: str | None = None
    baseline_error: str | None = None

    def add(self, key: str, v: Any) -> None:
        self.extra.setdefault(key, []).append(v)


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def case_line(case: str, s: Samples, *, links: str, nbytes: int, reps: int, **fields: Any) -> dict[str, Any]:
    """The JSON line of one case: value and baseline in seconds (medians), the ratio, and the case's fields."""
    value = _median(s.value)
    base = None if s.baseline_error else _median(s.baseline)  # a baseline that failed once has no figure
    ratio = value / base if value is not None and base else None
    rec: dict[str, Any] = {
        "bench": "compose", "case": case, "value": R._r(value), "unit": "s", "baseline": R._r(base),
        "ratio": R._r(ratio, 3), "links": links, "link_mbps": LINK_MBPS if links != "loopback" else None,
        "bytes": nbytes, "reps": len(s.value), "reps_asked": reps,
        "min_s": R._r(min(s.value)) if s.value else None, "max_s": R._r(max(s.value)) if s.value else None,
        "baseline_min_s": R._r(min(s.baseline)) if s.baseline else None,
        "baseline_max_s": R._r(max(s.baseline)) if s.baseline else None,
        **fields, "checked": s.error is None and len(s.value) == reps,
    }
    if s.error:
        rec["error"] = s.error
    if s.baseline_error:
        rec["baseline_error"] = s.baseline_error
    return rec


# --- the network --------------------------------------------------------------------------------------


class Line:
    """A launched a - b - c: clients at a and c, a's link counters, the hosts' counters."""

    def __init__(self, net: Any, a: Any, c: Any, links: str) -> None:
        self.net = net
        self.a = a
        self.c = c
        self.links = links
        self.a_veth = N.host_links(net.netplan, ["a"]) if net.netns else None

    async def a_link_bytes(self) -> int:
        """Bytes that crossed a's link so far, both directions: its veth (rx + tx) in a's
        namespace, or on loopback the in + out bytes of a's faces to other nodes."""
        import trio

        if self.a_veth is not None:
            rx, tx = (await trio.to_thread.run_sync(N.read_counters, self.a_veth))["a"]
            return rx + tx
        faces = await self.a.command("face", "list")
        return sum(f["counters"]["in_bytes"] + f["counters"]["out_bytes"] for f in faces if not f["local"])

    async def executions(self) -> dict[str, int]:
        """fn_executions of the hosts b and c (calls they ran)."""
        return {n: (await self.net.status(n))["counters"]["fn_executions"] for n in ("b", "c")}

    async def publish(self, name: str, x: np.ndarray) -> None:
        """Publish `x` at c under `name`, then wait until a's link-state database holds c's
        announcement of it (and so b's, which lies between): data published before it is used,
        as placement needs (a ref nobody announces costs every host the same)."""
        import trio

        with trio.fail_after(OP_TIMEOUT):
            await self.c.publish_value(name, x)
        with trio.fail_after(ANNOUNCE_TIMEOUT):
            while not any(r["origin"] == "/node/c" and any(p["prefix"] == name for p in r["prefixes"])
                          for r in (await self.a.routing())["lsdb"]):
                await trio.sleep(0.05)

    async def unpublish(self, name: str) -> None:
        import trio

        with trio.fail_after(OP_TIMEOUT):
            await self.c.command("object", "remove", name=name)  # every version, and its route


async def timed(fn: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = await fn()
    return time.perf_counter() - t0, out


# --- the cases -----------------------------------------------------------------------------------------


# a case's two ways, each given (its samples, the published name, the array, the expected sum's ones)
Way = Callable[[Samples, str, np.ndarray, np.ndarray], Awaitable[None]]


async def paired_rounds(line: Line, opts: Any, case: str, seed: int, labels: tuple[str, str],
                        composed: Way, by_value: Way) -> Samples:
    """`opts.reps` rounds of `composed` against `by_value`.  Each round
    publishes a fresh array under two names (the same bytes: no cache helps
    either way) and unpublishes them after; the first failure of `composed`
    ends the case, a failure of `by_value` is recorded and the rounds go on."""
    s = Samples()
    for rep in range(opts.reps):
        x, ones = make_array(opts.size_mib * MiB, seed=seed + rep)
        names = (f"{DATA}/{case}/{rep}/{labels[0]}", f"{DATA}/{case}/{rep}/value")
        for name in names:
            await line.publish(name, x)
        try:
            try:
                await composed(s, names[0], x, ones)
            except Exception as exc:
                s.error = R.describe(exc)
                break
            try:
                await by_value(s, names[1], x, ones)
            except Exception as exc:
                s.baseline_error = R.describe(exc)
        finally:
            for name in names:
                await line.unpublish(name)
        C.log(f"  {case} rep {rep + 1}: {labels[0]} {R.fmt_time(s.value[-1])}, "
              f"{labels[1]} {R.fmt_time(s.baseline[-1]) if len(s.baseline) > rep else 'FAILED'}", opts.quiet)
    return s


async def ref_vs_value(line: Line, opts: Any) -> dict[str, Any]:
    """``call(total, Ref(x))`` at b against fetching x at a and calling by value."""
    import icnd
    from icnd.compute.values import decode_value

    async def by_ref(s: Samples, name: str, x: np.ndarray, ones: np.ndarray) -> None:
        execs0, bytes0 = await line.executions(), await line.a_link_bytes()
        t, got = await timed(lambda: line.a.call("/fn/total", icnd.Ref(name), timeout=OP_TIMEOUT))
        bytes1, execs1 = await line.a_link_bytes(), await line.executions()
        check_sum(got, ones, "total(Ref(x))")
        if execs1["b"] - execs0["b"] != 1:
            raise CheckFailed(f"total(Ref(x)) ran {execs1['b'] - execs0['b']} times at b, expected once")
        s.value.append(t)
        s.add("ref_bytes", bytes1 - bytes0)

    async def by_value(s: Samples, name: str, x: np.ndarray, ones: np.ndarray) -> None:
        # timed: the fetch (decoded) and the call; the check between them is not
        bytes0 = await line.a_link_bytes()
        t_fetch, fetched = await timed(lambda: line.a.fetch_object(name, timeout=OP_TIMEOUT))
        fetched = decode_value(fetched)  # (a view of the fetched bytes: no copy)
        if not np.array_equal(fetched, x):
            raise CheckFailed("the array fetched at a differs from the one published at c")
        t_call, got = await timed(lambda: line.a.call("/fn/total", fetched, timeout=OP_TIMEOUT))
        bytes1 = await line.a_link_bytes()
        check_sum(got, ones, "total(x)")
        s.baseline.append(t_fetch + t_call)
        s.add("value_bytes", bytes1 - bytes0)

    s = await paired_rounds(line, opts, "rv", 100, ("ref", "value"), by_ref, by_value)
    return case_line("ref-vs-value", s, links=line.links, nbytes=opts.size_mib * MiB, reps=opts.reps,
                     function="/fn/total at b", baseline_name="fetch at a, then call by value",
                     **_link_fields(s, opts.size_mib * MiB, ("ref", "value")), **_target(line, s))


async def pipeline(line: Line, opts: Any) -> dict[str, Any]:
    """``call(sum, submit(double, Ref(x)))`` against ``call(sum, call(double, Ref(x)))`` by value."""
    import icnd

    async def by_future(s: Samples, name: str, x: np.ndarray, ones: np.ndarray) -> None:
        execs0, bytes0 = await line.executions(), await line.a_link_bytes()
        info: dict[str, Any] = {}

        async def with_future() -> Any:
            fut = await line.a.submit("/fn/double", icnd.Ref(name), timeout=OP_TIMEOUT)
            return await line.a.call("/fn/sum", fut, timeout=OP_TIMEOUT, info=info)

        t, got = await timed(with_future)
        bytes1, execs1 = await line.a_link_bytes(), await line.executions()
        check_sum(got, 2 * ones, "sum(future of double(Ref(x)))")
        ran = {n: execs1[n] - execs0[n] for n in execs0}
        if sum(ran.values()) != 2 or ran.get("b", 0) < 1:
            raise CheckFailed(f"the pipeline ran {ran} times at b and c, expected double at b and sum once")
        s.add("sum_at_b", 1.0 if info.get("host") == "/node/b" else 0.0)
        s.value.append(t)
        s.add("future_bytes", bytes1 - bytes0)

    async def by_value(s: Samples, name: str, x: np.ndarray, ones: np.ndarray) -> None:
        # timed: the two calls; the check of the intermediate result between them is not
        bytes0 = await line.a_link_bytes()
        t_first, y = await timed(lambda: line.a.call("/fn/double", icnd.Ref(name), timeout=OP_TIMEOUT))
        if not np.array_equal(y, 2 * x):
            raise CheckFailed("double(Ref(x)) returned to a is not 2x")
        t_second, got = await timed(lambda: line.a.call("/fn/sum", y, timeout=OP_TIMEOUT))
        bytes1 = await line.a_link_bytes()
        check_sum(got, 2 * ones, "sum(double(Ref(x)) by value)")
        s.baseline.append(t_first + t_second)
        s.add("value_bytes", bytes1 - bytes0)

    s = await paired_rounds(line, opts, "pipe", 200, ("future", "by value"), by_future, by_value)
    return case_line("pipeline", s, links=line.links, nbytes=opts.size_mib * MiB, reps=opts.reps,
                     functions="/fn/double at b, /fn/sum (total) at b and c (placed near the future)",
                     sum_at_b=R._r(statistics.mean(s.extra["sum_at_b"]), 3) if s.extra.get("sum_at_b") else None,
                     baseline_name="double's result returned to a, then sum called by value",
                     **_link_fields(s, opts.size_mib * MiB, ("future", "value")), **_target(line, s))


async def placement(line: Line, opts: Any) -> dict[str, Any]:
    """``call(placed, Ref(x))`` with /fn/placed at b and c and x at c: where it runs, and
    its time against the call forced to b."""
    import icnd

    s = Samples()
    nbytes = opts.size_mib * MiB
    near_calls = NEAR_CALLS if not opts.quick else 1
    placed: list[str | None] = []
    counted = {"near": {"b": 0, "c": 0}, "forced_b": {"b": 0, "c": 0}}
    for rep in range(opts.reps):
        x, ones = make_array(nbytes, seed=300 + rep)
        name = f"{DATA}/place/{rep}"
        try:
            await line.publish(name, x)
            execs0 = await line.executions()
            for _ in range(near_calls):
                info: dict[str, Any] = {}
                t, got = await timed(lambda: line.a.call("/fn/placed", icnd.Ref(name), info=info, timeout=OP_TIMEOUT))
                check_sum(got, ones, "placed(Ref(x))")
                placed.append(info.get("host"))
                s.value.append(t)
            execs1 = await line.executions()
            t, got = await timed(lambda: line.a.call("/fn/placed", icnd.Ref(name), place="/node/b",
                                                     timeout=OP_TIMEOUT))
            execs2 = await line.executions()
            check_sum(got, ones, "placed(Ref(x)) at b")
            if execs2["b"] - execs1["b"] != 1:
                raise CheckFailed(f"the call forced to b ran {execs2['b'] - execs1['b']} times at b")
            s.baseline.append(t)
            for n in ("b", "c"):
                counted["near"][n] += execs1[n] - execs0[n]
                counted["forced_b"][n] += execs2[n] - execs1[n]
        except Exception as exc:
            s.error = R.describe(exc)
            break
        finally:
            await line.unpublish(name)
        C.log(f"  placement rep {rep + 1}: near {R.fmt_time(s.value[-1])} at {placed[-1]}, "
              f"forced to b {R.fmt_time(s.baseline[-1])}", opts.quiet)
    at_c = sum(1 for h in placed if h == "/node/c")
    fraction = at_c / len(placed) if placed else None
    counted_fraction = counted["near"]["c"] / len(placed) if placed else None
    if s.error is None and (counted["near"]["c"] != at_c or counted["near"]["b"] + counted["near"]["c"] != len(placed)):
        s.error = f"the hosts' counters ({counted['near']}) disagree with info['host'] ({at_c} of {len(placed)} at c)"
    rec = case_line("placement", s, links=line.links, nbytes=nbytes, reps=opts.reps,
                    function="/fn/placed (total) at b and c, data at c",
                    baseline_name='the same call with place="/node/b"', calls=len(placed),
                    forced_calls=len(s.baseline),
                    placed_at_c=R._r(fraction, 3), placed_at_c_by_counters=R._r(counted_fraction, 3),
                    hosts=dict(sorted({h or "network": placed.count(h) for h in placed}.items())),
                    host_executions=counted, target_placed=TARGET_PLACED)
    rec["met_placed"] = fraction == TARGET_PLACED
    # value: the median near call, baseline: the median call forced to b; reps counts the near calls
    rec["reps"], rec["checked"] = len(s.value), s.error is None and len(placed) == near_calls * opts.reps
    return rec


def _link_fields(s: Samples, nbytes: int, ways: tuple[str, str]) -> dict[str, Any]:
    """Bytes on a's link per way (medians over the repetitions), and as a multiple of the object."""
    out: dict[str, Any] = {"a_link_bytes": {}, "a_link_x_object": {}}
    for way in ways:
        got = s.extra.get(f"{way}_bytes")
        median = round(statistics.median(got)) if got else None
        out["a_link_bytes"][way] = median
        out["a_link_x_object"][way] = R._r(median / nbytes, 3) if median is not None else None
    return out


def _target(line: Line, s: Samples) -> dict[str, Any]:
    """The issue's time target (shaped links only)."""
    if line.links == "loopback":
        return {}
    value = _median(s.value)
    base = None if s.baseline_error else _median(s.baseline)
    return {"target": TARGET_RATIO, "met": value is not None and base is not None and value / base <= TARGET_RATIO}


CASE_FUNCTIONS = {"ref-vs-value": ref_vs_value, "pipeline": pipeline, "placement": placement}


# --- running ------------------------------------------------------------------------------------------


async def warm_up(line: Line) -> None:
    """Each function once with a small ref (sessions, routes, the hosts' first call), checked."""
    import trio

    import icnd

    x, ones = make_array(64 * 1024, seed=1)
    name = f"{DATA}/warm"
    await line.publish(name, x)
    try:
        with trio.fail_after(OP_TIMEOUT):
            for fn in ("/fn/total", "/fn/sum", "/fn/placed"):
                check_sum(await line.a.call(fn, icnd.Ref(name), timeout=OP_TIMEOUT), ones, f"warm-up {fn}")
            check_sum(await line.a.call("/fn/sum", await line.a.call("/fn/double", icnd.Ref(name),
                                                                     timeout=OP_TIMEOUT), timeout=OP_TIMEOUT),
                      2 * ones, "warm-up /fn/double")
    finally:
        await line.unpublish(name)


async def one_hop_fetch(line: Line, b: Any, opts: Any) -> float:
    """Seconds a plain ``fetch_object`` of a fresh object takes at b from c (one link, no
    function, no polling): the floor under each transfer the cases make; checked."""
    from icnd.compute.values import decode_value

    x, _ = make_array(opts.size_mib * MiB, seed=400)
    name = f"{DATA}/one-hop"
    await line.publish(name, x)
    try:
        t, got = await timed(lambda: b.fetch_object(name, timeout=OP_TIMEOUT))
    finally:
        await line.unpublish(name)
    if not np.array_equal(decode_value(got), x):
        raise CheckFailed("the object fetched at b differs from the one published at c")
    return t


async def run(opts: Any) -> list[dict[str, Any]]:
    """Launch the line, warm up, run each case; one JSON line per case."""
    from icnd.topology import launch, parse

    shaped = opts.links == "shaped100"
    spec = parse(topology_dict(shaped), source=f"bench/compose.py ({opts.links})")
    workdir = tempfile.mkdtemp(prefix="icnd-compose-bench-")
    lines: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    async with launch(spec, netns=shaped, log_level="warning", ready_timeout=READY_TIMEOUT,
                      workdir=os.path.join(workdir, "topology")) as net:
        C.log(f"compose: a - b - c up and routed in {time.perf_counter() - t0:.1f} s ({opts.links})", opts.quiet)
        line = Line(net, await net.connect("a"), await net.connect("c"), opts.links)
        await warm_up(line)
        reference = await one_hop_fetch(line, await net.connect("b"), opts)
        C.log(f"compose: fetching the object at b from c (one link) takes {R.fmt_time(reference)}", opts.quiet)
        for case in opts.cases:
            C.log(f"compose: {case}", opts.quiet)
            try:
                rec = await CASE_FUNCTIONS[case](line, opts)
            except Exception as exc:  # publishing or the counters failed: the case has no figures
                rec = case_line(case, Samples(error=R.describe(exc)), links=opts.links, nbytes=opts.size_mib * MiB,
                                reps=opts.reps)
            rec["one_hop_fetch_s"] = R._r(reference)
            lines.append(rec)
    if all(rec["checked"] for rec in lines):
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        C.log(f"compose: logs kept in {workdir}", False)
    return lines


def print_table(lines: list[dict[str, Any]], opts: Any, elapsed: float) -> None:
    print()
    print(f"{'case':<14} {'composed':>10} {'baseline':>10} {'ratio':>6}  notes")
    for rec in lines:
        shown = R.fmt_time(rec["value"]) if rec["checked"] else "FAILED"
        if "calls" in rec:
            note = f"{rec['placed_at_c']} of {rec['calls']} calls placed at c; baseline: forced to b"
        elif "a_link_x_object" in rec:
            x = rec["a_link_x_object"]
            note = "a's link carried " + ", ".join(f"{k} {v}x" for k, v in x.items()) + " the object"
        else:
            note = ""
        if "met" in rec:
            note += f"; target {rec['target']}: {'met' if rec['met'] else 'MISSED'}"
        if rec.get("error") or rec.get("baseline_error"):
            note += f"; {rec.get('error') or rec.get('baseline_error')}"
        print(f"{rec['case']:<14} {shown:>10} {R.fmt_time(rec['baseline']):>10} "
              f"{R._fmt_ratio(rec['ratio']):>6}  {note}")
    print(f"line a - b - c, {opts.links} ({LINK_MBPS:g} Mbit/s tbf, namespaces)" if opts.links != "loopback"
          else "line a - b - c, loopback (processes, unshaped)", end="")
    print(f"; object {opts.size_mib} MiB at c; medians of {opts.reps}; {elapsed:.0f} s")
    print()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_SIZE_MIB} MiB, {QUICK_REPS} rep, one near call per rep (the test's setting)")
    ap.add_argument("--size-mib", type=int, help=f"the object at c, MiB (default {SIZE_MIB}; quick {QUICK_SIZE_MIB})")
    ap.add_argument("--reps", type=int, help=f"timed repetitions per case (default {REPS}; quick {QUICK_REPS})")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)} (default all)")
    ap.add_argument("--loopback", action="store_true", help="processes on loopback even as root (no shaped links)")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    opts = ap.parse_args(argv)
    opts.quiet = opts.json_only
    if opts.size_mib is None:
        opts.size_mib = QUICK_SIZE_MIB if opts.quick else SIZE_MIB
    if opts.reps is None:
        opts.reps = QUICK_REPS if opts.quick else REPS
    opts.cases = [c.strip() for c in opts.cases.split(",") if c.strip()]
    if not opts.cases or any(c not in CASES for c in opts.cases):
        ap.error(f"--cases: a comma-separated list of {', '.join(CASES)}")
    if opts.reps < 1 or not 1 <= opts.size_mib <= 64:
        ap.error("--reps must be >= 1 and --size-mib 1..64 (a host's default argument limit is 64 MiB)")
    opts.links = "loopback" if opts.loopback or N.unavailable() else f"shaped{LINK_MBPS:g}"
    return opts


def main(argv: list[str] | None = None) -> int:
    import trio

    opts = parse_args(argv)
    if opts.links == "loopback" and not opts.loopback:
        C.log(f"compose: no shaped links ({N.unavailable()}): loopback", opts.quiet)
    C.log(f"compose: cases {', '.join(opts.cases)}; {opts.size_mib} MiB; {opts.reps} reps; {opts.links}", opts.quiet)
    t0 = time.perf_counter()
    try:
        lines = trio.run(run, opts)
    except Exception as exc:  # the line did not come up
        error = R.describe(exc)
        C.log(f"compose: FAILED: {error}", False)
        lines = [case_line(case, Samples(error=error), links=opts.links, nbytes=opts.size_mib * MiB, reps=opts.reps)
                 for case in opts.cases]
    if not opts.quiet:
        print_table(lines, opts, time.perf_counter() - t0)
    for rec in lines:
        C.emit_json(rec)
    return 0 if all(rec["checked"] for rec in lines) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("compose: interrupted", file=sys.stderr)
        sys.exit(130)
