#!/usr/bin/env python3
"""NDN interoperability benchmark: exchanges/s of python-ndn applications
through icnd's NDN face, against icnd's own client through the same node.

One daemon (``python -m icnd run``) listens on its native Unix socket and on
an NDN Unix socket (``--ndn-listen``).  Two cases, each a producer process
and a consumer process talking through that one daemon:

- ``python-ndn``: the producer is a python-ndn (appv2) application that
  registers ``/bench/ndn`` with a ``rib/register`` command and answers every
  Interest with 100 bytes of content signed DigestSha256; the consumer is a
  python-ndn application that keeps ``--window`` Interests outstanding
  (default 32; unique names ``/bench/ndn/<run>/<seq>``, so neither the
  Content Store nor PIT aggregation answers), each with a 1 s lifetime and
  no retransmission.  Both use ``NDN_CLIENT_TRANSPORT=unix://...``;
- ``native`` (the baseline): the same exchange with icnd's client
  (``icnd.connect`` + ``Client.serve`` producing DigestSha256 Data, a
  consumer with the same window of ``Client.express`` calls, no
  retransmission), over the daemon's native socket.

Each consumer warms up (``--warmup`` s), then counts completed exchanges for
``--duration`` s (default 5) and prints one JSON line; timeouts and Nacks are
counted, not retried.  The daemon's CPU time over the measured span comes
from /proc (``node_cpu``: share of one core), and from it the daemon's CPU
time per exchange (``node_cpu_us_per_exchange`` = node_cpu x duration /
exchanges, in microseconds): what one exchange costs the node, whatever rate
the applications manage.  Output: progress on stderr, a small table on
stdout, then one JSON line per case::

    {"bench": "ndn", "case": "native", "value": ..., "unit": "exchanges/s", ...,
     "node_cpu_us_per_exchange": ...}
    {"bench": "ndn", "case": "python-ndn", "value": ..., "unit": "exchanges/s",
     "baseline": <native>, "ratio": <python-ndn / native>, ...,
     "node_cpu_us_per_exchange": ..., "node_cpu_ratio": <python-ndn / native CPU per exchange>}

A run takes about 20 s (under 60 s with the defaults).  python-ndn must be
installed (``pip install .[test]``); without it the python-ndn case reports
an error line.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_common.py (it adds the checkout)

import _common as C  # noqa: E402

CONTENT_SIZE = 100
PREFIX = "/bench/ndn"

NDN_PRODUCER = r'''
import sys
from ndn import appv2
from ndn.security import DigestSha256Signer

app = appv2.NDNApp()
signer = DigestSha256Signer()
content = b"x" * int(sys.argv[2])


def on_interest(name, app_param, reply, context):
    reply(app.make_data(name, content, signer=signer, freshness_period=0))


async def main():
    app.attach_handler(sys.argv[1], on_interest)
    ok = await app.register(sys.argv[1])
    print("registered" if ok else "failed", flush=True)

app.run_forever(after_start=main())
'''

NDN_CONSUMER = r'''
import asyncio, json, sys, time
from ndn import appv2
from ndn.types import InterestNack, InterestTimeout

prefix, run, window, warmup, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
app = appv2.NDNApp()
state = {"seq": 0, "done": 0, "timeouts": 0, "nacks": 0, "counting": False}


async def worker(stop_at):
    while time.monotonic() < stop_at:
        state["seq"] += 1
        try:
            await app.express(f"{prefix}/{run}/{state['seq']}", appv2.pass_all, lifetime=1000)
            if state["counting"]:
                state["done"] += 1
        except InterestTimeout:
            state["timeouts"] += state["counting"]
        except InterestNack:
            state["nacks"] += state["counting"]


async def main():
    try:
        start = time.monotonic()
        measure_at = start + warmup
        stop_at = measure_at + duration
        tasks = [asyncio.create_task(worker(stop_at)) for _ in range(window)]
        await asyncio.sleep(max(measure_at - time.monotonic(), 0))
        state["counting"] = True
        t0 = time.monotonic()
        print(json.dumps({"phase": "measuring"}), flush=True)
        await asyncio.sleep(max(stop_at - time.monotonic(), 0))
        elapsed = time.monotonic() - t0
        done = state["done"]
        state["counting"] = False
        await asyncio.gather(*tasks)
        print(json.dumps({"exchanges": done, "seconds": elapsed, "timeouts": state["timeouts"],
                          "nacks": state["nacks"]}), flush=True)
    finally:
        app.shutdown()

app.run_forever(after_start=main())
'''

NATIVE_PRODUCER = r'''
import sys, trio, icnd
from icnd.packet import Data

async def main():
    content = b"x" * int(sys.argv[3])
    async with icnd.connect(sys.argv[1]) as c:
        def handler(interest):
            return c.sign_digest(Data(interest.name, content))
        async with c.serve(sys.argv[2], handler):
            print("registered", flush=True)
            await trio.sleep_forever()

trio.run(main)
'''

NATIVE_CONSUMER = r'''
import json, sys, time, trio, icnd
from icnd.packet import Interest
from icnd.name import Name

sock, prefix, run, window, warmup, duration = (sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                               float(sys.argv[5]), float(sys.argv[6]))
state = {"seq": 0, "done": 0, "timeouts": 0, "nacks": 0, "counting": False}


async def worker(c, base, stop_at):
    while trio.current_time() < stop_at:
        state["seq"] += 1
        try:
            await c.express(Interest(base.append(str(state["seq"])), lifetime_ms=1000), timeout=1.0, retx=None)
            if state["counting"]:
                state["done"] += 1
        except icnd.Timeout:
            state["timeouts"] += state["counting"]
        except icnd.Nacked:
            state["nacks"] += state["counting"]


async def main():
    base = Name(f"{prefix}/{run}")
    async with icnd.connect(sock) as c:
        start = trio.current_time()
        measure_at = start + warmup
        stop_at = measure_at + duration
        async with trio.open_nursery() as nursery:
            for _ in range(window):
                nursery.start_soon(worker, c, base, stop_at)
            await trio.sleep_until(measure_at)
            state["counting"] = True
            t0 = time.monotonic()
            print(json.dumps({"phase": "measuring"}), flush=True)
            await trio.sleep_until(stop_at)
            elapsed = time.monotonic() - t0
            done = state["done"]
            state["counting"] = False
        print(json.dumps({"exchanges": done, "seconds": elapsed, "timeouts": state["timeouts"],
                          "nacks": state["nacks"]}), flush=True)

trio.run(main)
'''


def run_case(name: str, daemon: C.Daemon, workdir: str, opts: argparse.Namespace, ndn_sock: str,
             quiet: bool) -> dict:
    """Start producer, then consumer; returns the consumer's result plus the daemon's CPU share."""
    run_id = secrets.token_hex(4)
    env_ndn = {"NDN_CLIENT_TRANSPORT": f"unix://{ndn_sock}", "HOME": workdir}
    prefix = f"{PREFIX}/{name}"
    if name == "python-ndn":
        prod = [sys.executable, "-c", NDN_PRODUCER, prefix, str(CONTENT_SIZE)]
        cons = [sys.executable, "-c", NDN_CONSUMER, prefix, run_id, str(opts.window), str(opts.warmup),
                str(opts.duration)]
    else:
        prod = [sys.executable, "-c", NATIVE_PRODUCER, daemon.socket_path, prefix, str(CONTENT_SIZE)]
        cons = [sys.executable, "-c", NATIVE_CONSUMER, daemon.socket_path, prefix, run_id, str(opts.window),
                str(opts.warmup), str(opts.duration)]
    saved = {k: os.environ.get(k) for k in env_ndn}
    os.environ.update(env_ndn)  # C.spawn passes the environment on
    try:
        producer = C.spawn(prod, log_path=os.path.join(workdir, f"{name}-producer.log"),
                           stdout=subprocess.PIPE)
        line = C.read_line(producer, 20.0)
        if line != "registered":
            C.stop(producer)
            raise RuntimeError(f"{name} producer did not register: {line!r}: "
                               f"{C.tail(os.path.join(workdir, f'{name}-producer.log'))}")
        consumer = C.spawn(cons, log_path=os.path.join(workdir, f"{name}-consumer.log"),
                           stdout=subprocess.PIPE)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        started = C.read_line(consumer, opts.warmup + 20.0)
        if started is None:
            raise RuntimeError(f"{name} consumer did not start: {C.tail(os.path.join(workdir, f'{name}-consumer.log'))}")
        assert daemon.proc is not None
        cpu0, t0 = C.cpu_seconds(daemon.proc.pid), time.monotonic()
        line = C.read_line(consumer, opts.duration + 20.0)
        cpu1, t1 = C.cpu_seconds(daemon.proc.pid), time.monotonic()
        if line is None:
            raise RuntimeError(f"{name} consumer gave no result: {C.tail(os.path.join(workdir, f'{name}-consumer.log'))}")
        result = json.loads(line)
    finally:
        C.stop(consumer)
        C.stop(producer)
    result["rate"] = result["exchanges"] / result["seconds"] if result["seconds"] > 0 else 0.0
    result["node_cpu"] = (cpu1 - cpu0) / (t1 - t0) if t1 > t0 else float("nan")
    # the daemon's CPU time per completed exchange (its CPU share over the measured span)
    result["cpu_us"] = (result["node_cpu"] * result["seconds"] / result["exchanges"] * 1e6
                        if result["exchanges"] else float("nan"))
    C.log(f"{name}: {result['rate']:,.0f} exchanges/s ({result['exchanges']} in {result['seconds']:.2f}s, "
          f"{result['timeouts']} timeouts, {result['nacks']} nacks, node cpu {result['node_cpu']:.0%}, "
          f"{result['cpu_us']:.1f} us per exchange)", quiet)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--window", type=int, default=32, help="outstanding Interests per consumer (default 32)")
    ap.add_argument("--duration", type=float, default=5.0, help="measured seconds per case (default 5)")
    ap.add_argument("--warmup", type=float, default=1.0, help="seconds before measuring (default 1)")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    opts = ap.parse_args(argv)
    quiet = opts.json_only
    t_start = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="icnd-bench-ndn-")
    ndn_sock = os.path.join(workdir, "nfd.sock")
    results: dict[str, dict] = {}
    errors: dict[str, str] = {}
    daemon_cpus, _ = C.cpu_plan()

    daemon = _start_daemon(workdir, ndn_sock, daemon_cpus)
    try:
        for case in ("native", "python-ndn"):
            try:
                if case == "python-ndn":
                    import importlib.util

                    if importlib.util.find_spec("ndn") is None:
                        raise RuntimeError("python-ndn is not installed (pip install .[test])")
                results[case] = run_case(case, daemon, workdir, opts, ndn_sock, quiet)
            except (RuntimeError, OSError, ValueError) as exc:
                errors[case] = str(exc)
                C.log(f"{case}: FAILED: {exc}", quiet)
    finally:
        daemon.stop()

    base = results.get("native", {}).get("rate")
    base_cpu = results.get("native", {}).get("cpu_us")
    lines = []
    for case in ("native", "python-ndn"):
        if case in errors:
            lines.append({"bench": "ndn", "case": case, "value": None, "unit": "exchanges/s", "error": errors[case]})
            continue
        r = results[case]
        line = {"bench": "ndn", "case": case, "value": round(r["rate"]), "unit": "exchanges/s"}
        if case != "native" and base:
            line.update(baseline=round(base), ratio=round(r["rate"] / base, 3))
        line.update(window=opts.window, content_bytes=CONTENT_SIZE, duration_s=round(r["seconds"], 2),
                    timeouts=r["timeouts"], nacks=r["nacks"], node_cpu=round(r["node_cpu"], 2),
                    node_cpu_us_per_exchange=round(r["cpu_us"], 1))
        if case != "native" and base_cpu:
            line.update(node_cpu_ratio=round(r["cpu_us"] / base_cpu, 2))
        lines.append(line)
    if not quiet:
        print()
        print(f"{'case':<12} {'exchanges/s':>12} {'ratio':>6} {'node cpu':>9} {'us/exch':>8} {'cpu ratio':>9} "
              f"{'timeouts':>9}")
        for line in lines:
            if line.get("value") is None:
                print(f"{line['case']:<12} {'FAILED':>12}  {line.get('error')}")
                continue
            ratio = f"{line['ratio']:.2f}" if "ratio" in line else "-"
            cpu_ratio = f"{line['node_cpu_ratio']:.2f}" if "node_cpu_ratio" in line else "-"
            print(f"{line['case']:<12} {line['value']:>12,} {ratio:>6} {line['node_cpu']:>9.0%} "
                  f"{line['node_cpu_us_per_exchange']:>8.1f} {cpu_ratio:>9} {line['timeouts']:>9}")
        print(f"window {opts.window}, {CONTENT_SIZE}-byte content, one daemon on a Unix socket; "
              f"{time.monotonic() - t_start:.0f}s")
        print()
    for line in lines:
        C.emit_json(line)
    return 0 if not errors else 1


def _start_daemon(workdir: str, ndn_sock: str, cpus: set[int] | None) -> C.Daemon:
    """`C.Daemon` with an NDN listener added (the CLI's --ndn-listen)."""
    class NdnDaemon(C.Daemon):
        def _argv(self, how: str) -> list[str]:
            argv = super()._argv(how)
            if how != "cli":
                raise RuntimeError("the NDN listener needs the icnd CLI")
            return argv + ["--ndn-listen", f"unix://{ndn_sock}"]

    return NdnDaemon("ndn", workdir, cpus=cpus)


if __name__ == "__main__":
    sys.exit(main())
