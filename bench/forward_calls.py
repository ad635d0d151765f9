#!/usr/bin/env python3
"""Python function calls per forwarded exchange: a cost per packet that the
load of other processes does not change.

Wall-clock rates (bench/forward.py) move with whatever else the machine is
doing; the number of Python functions the forwarder calls to pass one
Interest and its Data does not.  That makes it the metric to compare two
commits with on a busy machine, or to bisect a slowdown with.

Set-up, all in this process: the node(s) run in one trio loop on the main
thread, whose calls are counted with ``sys.setprofile``; the load generator
runs in a second thread (not counted) with plain blocking sockets, in
lock-step: it sends ``--window`` Interests (default 1), the producer answers
each, the consumer takes every Data, then the next round.  The count runs
from the first measured Interest until ``--drain`` seconds after the last
Data, so work deferred past the exchange (PIT expiry timers, 1 s later) is
in it; the warm-up's deferred work is over before counting starts; the
loop's idle rate (measured after, ``idle_calls_per_s``) is subtracted.

Figures per exchange, in the order of how little they move between runs:

- ``icnd_calls_per_exchange``: calls of functions defined in icnd: the same
  to a few tenths from run to run;
- ``not_trio_calls_per_exchange``: calls of functions not defined in trio
  (nor in outcome and sniffio, which trio runs tasks with): icnd's and the
  library code it calls (``enum``'s operators, say).  The bisect metric;
- ``calls_per_exchange`` (every Python call) and ``c_calls_per_exchange``
  (built-ins and C methods): these include trio's scheduling, which depends
  on how many packets one wake-up finds, so on timing and on the machine's
  load (UDP: 48 to 100 on one commit);
- ``cpu_us_per_exchange`` (``--cpu K``: K more runs of ``--exchanges``
  without the hook): the loop thread's CPU time; free of wall-clock waits
  but not of the load (caches, frequency): +-15% on a busy 2-core machine.

Cases: ``udp-1hop`` (consumer and producer are UDP sockets, one node routes
``/bench`` to the producer), ``unix-1hop`` (both are Unix stream connections
to the node, the producer registers ``/bench`` for its own connection),
``udp-3hop`` (three nodes in a line, all in the same loop: the count is for
the three hops together) and ``ndn-1hop`` (the consumer speaks NDN's TLV
format to the node's NDN Unix listener, packets made by python-ndn; the
producer is a native Unix connection as in ``unix-1hop``: the count covers
the NDN link service decoding Interests and encoding Data).  Packets come
from bench/forward.py's ``Wire`` (unique name and nonce per Interest, so
neither the Content Store nor the PIT shortcut anything).

``--tree DIR`` runs the code of another checkout (e.g. a ``git worktree``
at an older commit) with this script, so the same measurement applies to
both: the node is taken from ``icnd.daemon.node`` or, before the daemon
package existed, ``icnd.node``.  Set ``PYTHONDONTWRITEBYTECODE=1`` (or
remove ``__pycache__``) when checking commits out one after the other:
two checkouts within a second can leave bytecode of the previous one that
Python takes as current.

Output: one JSON line per case on stdout: the figures above, ``exchanges``,
``window``, ``seconds`` (of the measured exchanges) and ``commit`` (of the
tree, when it is a git checkout).  ``--top N`` also prints on stderr the N
functions called most per exchange (from cProfile, on as many exchanges
again, deferred work included), to see *what* a change added.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

FRAME_LEN = 4
CASES = ("udp-1hop", "unix-1hop", "udp-3hop", "ndn-1hop")


def _load_tree(tree: Path) -> tuple[Any, Any, Any]:
    """The tree's ``bench/forward.py`` (Wire, struct layouts) and ``bench/_common.py``, its icnd first on the path."""
    here = Path(__file__).resolve().parent
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:  # python-ndn (ndn-1hop), without bench/ on the path: bench/ndn.py would shadow it
        importlib.import_module("ndn.encoding")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
    sys.path.insert(0, str(tree / "bench"))
    sys.path.insert(0, str(tree))
    common = importlib.import_module("_common")
    forward = importlib.import_module("forward")
    import icnd

    if Path(icnd.__file__).resolve().parent != (tree / "icnd").resolve():
        raise SystemExit(f"icnd imported from {icnd.__file__}, not from {tree}")
    return common, forward, icnd


def _node_classes() -> tuple[Any, Any, Callable[[], None] | None]:
    if importlib.util.find_spec("icnd.daemon") is not None:
        from icnd.daemon.config import NodeConfig
        from icnd.daemon.node import Node
    else:  # before the daemon package (9d461a0 and its ancestors)
        from icnd.config import NodeConfig  # type: ignore[no-redef]
        from icnd.node import Node  # type: ignore[no-redef]
    tune: Callable[[], None] | None = None
    for mod in ("icnd.daemon.runtime", "icnd.runtime"):
        try:
            tune = importlib.import_module(mod).tune_gc
            break
        except (ImportError, AttributeError):
            continue
    return Node, NodeConfig, tune


def _commit(tree: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except OSError:
        return ""
    return out.stdout.strip()


class Counter:
    """Counts profile events of the thread that installs it (``sys.setprofile`` is per thread).

    ``icnd``: calls of functions defined under `package` (the forwarder's own
    work); ``not_trio``: calls of functions not defined in trio or in the
    packages trio runs tasks with (outcome, sniffio): icnd's and the library
    functions it calls, e.g. ``enum``'s.  Both stay the same
    whatever trio's scheduling does around them, which varies with how many
    packets one wake-up finds, so with the machine's load."""

    def __init__(self, package: str, trio_packages: tuple[str, ...]) -> None:
        self.package = package
        self.trio_packages = trio_packages
        self.calls = 0
        self.c_calls = 0
        self.icnd = 0
        self.not_trio = 0

    def hook(self, frame: Any, event: str, arg: Any) -> None:  # noqa: ARG002
        if event == "call":
            self.calls += 1
            filename = frame.f_code.co_filename
            if filename.startswith(self.package):
                self.icnd += 1
                self.not_trio += 1
            elif not filename.startswith(self.trio_packages):
                self.not_trio += 1
        elif event == "c_call":
            self.c_calls += 1

    def snapshot(self) -> tuple[int, int, int, int]:
        return self.calls, self.c_calls, self.icnd, self.not_trio


class Packets:
    """Interests and Data for one run, patched from the Wire templates."""

    def __init__(self, forward: Any) -> None:
        self.w = forward.Wire()
        self.seq_nonce = forward.SEQ_NONCE
        self.seq = forward.SEQ

    def interest(self, i: int) -> bytes:
        buf = bytearray(self.w.interest)
        self.seq_nonce.pack_into(buf, self.w.seq_off, i, 0xCE, 0x40000000 + i)
        return bytes(buf)

    def data_for(self, interest: bytes) -> bytes:
        off = self.w.seq_off
        buf = bytearray(self.w.data)
        buf[off : off + 4] = interest[off : off + 4]
        buf[self.w.sig_off :] = hashlib.sha256(memoryview(buf)[: self.w.portion]).digest()
        return bytes(buf)

    def seq_of(self, packet: bytes) -> int:
        return int(self.seq.unpack_from(packet, self.w.seq_off)[0])


def _recv_frame(sock: socket.socket) -> bytes:
    def exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("the node closed the connection")
            buf += chunk
        return buf

    return exact(int.from_bytes(exact(FRAME_LEN), "big"))


def _send_frame(sock: socket.socket, frame: bytes) -> None:
    sock.sendall(len(frame).to_bytes(FRAME_LEN, "big") + frame)


class Link:
    """The load generator's two ends: send Interests, serve them, take the Data."""

    def __init__(self, send_interest: Callable[[bytes], None], recv_interest: Callable[[], tuple[bytes, Any]],
                 send_data: Callable[[bytes, Any], None], recv_data: Callable[[], bytes],
                 close: Callable[[], None]) -> None:
        self.send_interest, self.recv_interest = send_interest, recv_interest
        self.send_data, self.recv_data = send_data, recv_data
        self.close = close


def _udp_link(target: tuple[str, int], cons: socket.socket, prod: socket.socket) -> Link:
    def send_interest(packet: bytes) -> None:
        cons.sendto(packet, target)

    def recv_interest() -> tuple[bytes, Any]:
        return prod.recvfrom(65536)

    def send_data(packet: bytes, addr: Any) -> None:
        prod.sendto(packet, addr)

    def close() -> None:
        cons.close()
        prod.close()

    return Link(send_interest, recv_interest, send_data, lambda: cons.recv(65536), close)


def _udp_socket(timeout: float) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(timeout)
    return s


def _udp_address(common: Any, sock_path: str) -> tuple[str, int]:
    status = common.command(sock_path, "status", "get", timeout=10.0)
    for uri in status.get("listen", []):
        if uri.startswith("udp://"):
            host, _, port = uri[len("udp://"):].rpartition(":")
            return host.strip("[]"), int(port)
    raise RuntimeError(f"no UDP listener: {status.get('listen')}")


def _recv_tlv(sock: socket.socket) -> bytes:
    """One NDN TLV element (type, length, value) from a stream."""

    def exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("the node closed the connection")
            buf += chunk
        return buf

    def varnum() -> bytes:
        first = exact(1)
        extra = {253: 2, 254: 4, 255: 8}.get(first[0], 0)
        return first + exact(extra)

    head = varnum()
    length = varnum()
    n = length[0] if len(length) == 1 else int.from_bytes(length[1:], "big")
    return head + length + exact(n)


class NdnPackets(Packets):
    """The consumer's side in NDN's format: Interests by python-ndn, Data read back to its sequence number."""

    def __init__(self, forward: Any) -> None:
        super().__init__(forward)
        from ndn.encoding import InterestParam, make_interest, parse_data

        self._param = InterestParam
        self._make = make_interest
        self._parse = parse_data
        self.prefix = "/bench/" + self.w.tag.decode()

    def interest(self, i: int) -> bytes:
        param = self._param()
        param.nonce = 0x40000000 + i
        param.lifetime = 1000
        return bytes(self._make(f"{self.prefix}/seq={i}", param))

    def seq_of(self, packet: bytes) -> int:
        name = self._parse(packet)[0]
        return int.from_bytes(bytes(name[-1])[2:], "big")

    def data_for(self, interest: bytes) -> bytes:
        """The producer's native Data for the native Interest the node made of the consumer's NDN one."""
        from icnd.codec import decode, encode
        from icnd.packet import Data
        from icnd.security import DigestKey

        return encode(DigestKey().sign(Data(decode(interest).name, bytes(100))))


def setup_case(case: str, common: Any, socks: list[str], timeout: float) -> Link:
    """Routes and sockets for `case` once the nodes at `socks` answer."""
    if case in ("unix-1hop", "ndn-1hop"):
        prod = common.connect_unix(socks[0])
        common.command_on(prod, "route", "add", prefix="/bench", face="self")
        if case == "ndn-1hop":
            cons = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            cons.connect(_ndn_socket(socks[0]))
        else:
            cons = common.connect_unix(socks[0])
        for s in (prod, cons):
            s.setblocking(True)
            s.settimeout(timeout)

        def close() -> None:
            cons.close()
            prod.close()

        if case == "ndn-1hop":
            return Link(cons.sendall, lambda: (_recv_frame(prod), None),
                        lambda p, _a: _send_frame(prod, p), lambda: _recv_tlv(cons), close)
        return Link(lambda p: _send_frame(cons, p), lambda: (_recv_frame(prod), None),
                    lambda p, _a: _send_frame(prod, p), lambda: _recv_frame(cons), close)
    cons, prod = _udp_socket(timeout), _udp_socket(timeout)
    hops = [_udp_address(common, p) for p in socks]
    targets = [f"udp://{h}:{port}" for h, port in hops[1:]] + [f"udp://127.0.0.1:{prod.getsockname()[1]}"]
    for path, face in zip(socks, targets):
        common.command(path, "route", "add", timeout=10.0, prefix="/bench", face=face)
    return _udp_link(hops[0], cons, prod)


def _ndn_socket(node_socket: str) -> str:
    return node_socket[: -len(".sock")] + "-ndn.sock"


def exchange(link: Link, pk: Packets, first: int, count: int, window: int) -> None:
    """`count` exchanges in lock-step rounds of `window`, checking each Data is the one asked for."""
    i = first
    end = first + count
    while i < end:
        n = min(window, end - i)
        for k in range(n):
            link.send_interest(pk.interest(i + k))
        for _ in range(n):
            interest, addr = link.recv_interest()
            link.send_data(pk.data_for(interest), addr)
        got = sorted(pk.seq_of(link.recv_data()) for _ in range(n))
        if got != list(range(i, i + n)):
            raise RuntimeError(f"exchanges {i}..{i + n - 1}: got Data for {got}")
        i += n


def run_case(case: str, opts: argparse.Namespace, common: Any, forward: Any, icnd_dir: str) -> dict[str, Any]:
    import outcome
    import sniffio
    import trio

    Node, NodeConfig, _tune = _node_classes()
    hops = 3 if case == "udp-3hop" else 1
    counter = Counter(str(Path(icnd_dir).resolve()) + os.sep,
                      tuple(str(Path(str(m.__file__)).parent) + os.sep for m in (trio, outcome, sniffio)))
    result: dict[str, Any] = {}
    errors: list[BaseException] = []
    pk = NdnPackets(forward) if case == "ndn-1hop" else Packets(forward)
    profiler: Any = None
    token: Any = None

    def on_loop(*steps: Callable[[], None]) -> None:
        """Run `steps` on the loop's thread and wait for them."""
        ran = threading.Event()

        def run() -> None:
            for step in steps:
                step()
            ran.set()

        token.run_sync_soon(run)
        if not ran.wait(opts.timeout):
            raise RuntimeError("the loop did not run the hook swap")

    def loadgen(socks: list[str], done: Callable[[], None]) -> None:
        nonlocal profiler
        link = None
        try:
            link = setup_case(case, common, socks, opts.timeout)
            exchange(link, pk, 0, opts.warmup, opts.window)
            time.sleep(opts.drain)  # the warm-up's deferred work (PIT expiry timers) done before counting
            c0 = counter.snapshot()
            t_start = time.perf_counter()
            exchange(link, pk, opts.warmup, opts.exchanges, opts.window)
            t_sent = time.perf_counter()
            time.sleep(opts.drain)  # this run's deferred work, counted
            t_end, c1 = time.perf_counter(), counter.snapshot()
            time.sleep(opts.idle)  # the loop's work with no packet moving, subtracted
            t_idle, c2 = time.perf_counter(), counter.snapshot()
            n = opts.exchanges
            span = t_end - t_start
            idle_rate = [(b - a) / (t_idle - t_end) for a, b in zip(c1, c2)]
            per = [round((b - a - r * span) / n, 2) for a, b, r in zip(c0, c1, idle_rate)]
            result.update(calls_per_exchange=per[0], c_calls_per_exchange=per[1], icnd_calls_per_exchange=per[2],
                          not_trio_calls_per_exchange=per[3],
                          idle_calls_per_s=round(idle_rate[0], 1), seconds=round(t_sent - t_start, 2))
            if opts.cpu:  # the loop thread's CPU time, without the counting hook
                clock: list[float] = []
                on_loop(lambda: sys.setprofile(None), lambda: clock.append(time.thread_time()))
                first = opts.warmup + n
                for _ in range(opts.cpu):
                    exchange(link, pk, first, n, opts.window)
                    first += n
                time.sleep(opts.drain)
                on_loop(lambda: clock.append(time.thread_time()), lambda: sys.setprofile(counter.hook))
                result["cpu_us_per_exchange"] = round((clock[1] - clock[0]) / (n * opts.cpu) * 1e6, 2)
            if opts.top:
                import cProfile

                profiler = cProfile.Profile()
                on_loop(lambda: sys.setprofile(None), profiler.enable)  # sys.setprofile acts on the thread that calls it
                time.sleep(opts.drain)
                exchange(link, pk, opts.warmup + n * (1 + opts.cpu), n, opts.window)
                time.sleep(opts.drain)
                on_loop(profiler.disable, lambda: sys.setprofile(counter.hook))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            if link is not None:
                link.close()
            done()

    async def main(workdir: str) -> None:
        nodes = []
        for k in range(hops):
            path = os.path.join(workdir, f"n{k}.sock")
            ndn = [f"unix://{_ndn_socket(path)}"] if case == "ndn-1hop" else []
            node = Node(NodeConfig(name=f"/node/calls{k}", socket=path, listen=["udp://127.0.0.1:0"], ndn_listen=ndn))
            await node.bind()
            nodes.append((node, path))
        finished = trio.Event()
        nonlocal token
        token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            for node, _ in nodes:
                await nursery.start(node.serve)
            thread = threading.Thread(target=loadgen, daemon=True,
                                      args=([p for _, p in nodes], lambda: token.run_sync_soon(finished.set)))
            thread.start()
            await finished.wait()
            nursery.cancel_scope.cancel()

    with tempfile.TemporaryDirectory(prefix="icnd-calls-") as workdir:
        sys.setprofile(counter.hook)
        try:
            trio.run(main, workdir)
        finally:
            sys.setprofile(None)
    if errors:
        raise RuntimeError(f"{case}: {errors[0]!r}") from errors[0]
    if profiler is not None:
        _print_top(profiler, opts.exchanges, opts.top, case)
    return result


def _print_top(profiler: Any, n: int, top: int, case: str) -> None:
    import pstats

    stats = pstats.Stats(profiler)
    rows = []
    for (fn, line, name), (_cc, ncalls, _tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((ncalls / n, f"{Path(fn).name}:{line}({name})" if line else name))
    rows.sort(reverse=True)
    print(f"--- {case}: calls per exchange by function (top {top})", file=sys.stderr)
    for per, label in rows[:top]:
        print(f"{per:8.2f}  {label}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=here, help="checkout whose icnd to measure (default: this one)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--exchanges", type=int, default=2000, help="measured exchanges per case")
    ap.add_argument("--warmup", type=int, default=300, help="exchanges before measuring")
    ap.add_argument("--window", type=int, default=1, help="Interests per lock-step round")
    ap.add_argument("--drain", type=float, default=1.5,
                    help="seconds after the exchanges whose work is counted (the Interest lifetime, 1 s, and more)")
    ap.add_argument("--idle", type=float, default=1.0, help="seconds of idle loop measured, then subtracted")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds a socket waits for a packet")
    ap.add_argument("--cpu", type=int, default=0, metavar="K",
                    help="also run K x --exchanges more without the hook and report the loop thread's CPU time "
                    "per exchange (cpu_us_per_exchange: wall-clock-free, but not load-free)")
    ap.add_argument("--top", type=int, default=0, help="print the N functions called most per exchange")
    opts = ap.parse_args(argv)
    cases = [c for c in opts.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            ap.error(f"unknown case {c!r}")
    logging.basicConfig(level=logging.ERROR)
    tree = opts.tree.resolve()
    common, forward, _icnd = _load_tree(tree)
    _Node, _Cfg, tune = _node_classes()
    if tune is not None:  # the process set up as `icnd run` does
        tune()
    commit = _commit(tree)
    for case in cases:
        rec = {"case": case, "commit": commit, "window": opts.window, "exchanges": opts.exchanges}
        rec.update(run_case(case, opts, common, forward, str(Path(_icnd.__file__).parent)))
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
