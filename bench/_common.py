"""Shared helpers for the benchmarks in bench/: output, statistics, processes.

- `emit_json` / `log`: one JSON line per result on stdout, progress on stderr;
- `percentile` / `latency_ms`: nearest-rank percentiles;
- `cpu_plan` / `pin`: which core the daemons get and which the load generator;
- `cpu_seconds` / `self_cpu_seconds` / `machine_busy_seconds`: CPU time from
  /proc, to tell a process's own cost from the load of everything else;
- `spawn` / `stop` / `stop_all`: child processes that are always reaped: each
  child gets ``PR_SET_PDEATHSIG`` (it dies if the benchmark dies, even by
  SIGKILL), and `stop_all` runs at interpreter exit and on SIGTERM/SIGHUP;
- `Daemon`: one icnd daemon in its own process, started with
  ``python -m icnd run`` when the CLI exists (else, or if it does not come
  up, with the runner below), ready when a management ``status get`` answers;
- `daemon_main`: the runner, ``python -c`` entry point that builds
  ``NodeConfig`` -> ``Node`` -> ``bind()`` -> ``serve()`` (after the same
  process set-up as ``icnd run``: `icnd.daemon.runtime.tune_gc` when it exists),
  stops cleanly on SIGTERM/SIGINT, and can run the whole daemon under
  cProfile (``--profile``) and time its garbage collections (``--gc-stats``);
- `command` / `command_on`: management commands over a Unix connection,
  synchronous (blocking socket with a deadline), built with icnd's own codec,
  so a load generator can register a route for *its own* connection
  (``face="self"``) and then use that connection as a raw framed socket.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
if str(REPO_DIR) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO_DIR))

FRAME = struct.Struct(">I")


# --- output ---------------------------------------------------------------------------


def log(msg: str, quiet: bool = False) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def emit_json(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted list; nan if empty."""
    n = len(sorted_values)
    if not n:
        return float("nan")
    k = max(0, min(n - 1, int(-(-q * n // 100)) - 1))  # ceil(q/100 * n) - 1
    return sorted_values[k]


def latency_ms(samples: list[float]) -> tuple[float, float]:
    """(p50, p99) in milliseconds of latency samples in seconds."""
    s = sorted(samples)
    return percentile(s, 50) * 1000.0, percentile(s, 99) * 1000.0


def fmt_ms(v: float) -> str:
    return "-" if v != v else f"{v:.2f}"


# --- CPUs -----------------------------------------------------------------------------


def cpu_plan() -> tuple[set[int] | None, set[int] | None]:
    """(cpus for the daemons/relays, cpus for the load generator); None: do not pin."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None
    if len(cpus) < 2:
        return None, None
    return {cpus[0]}, {cpus[1]}


def pin(pid: int, cpus: set[int] | None) -> None:
    if cpus:
        try:
            os.sched_setaffinity(pid, cpus)
        except OSError:
            pass


# --- child processes --------------------------------------------------------------------

_children: list[subprocess.Popen] = []
_cleanup_installed = False


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _install_cleanup() -> None:
    global _cleanup_installed
    if _cleanup_installed:
        return
    _cleanup_installed = True
    atexit.register(stop_all)

    def on_signal(signum, frame):  # noqa: ARG001
        stop_all()
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, on_signal)
        except (ValueError, OSError):
            pass


def spawn(argv: list[str], *, log_path: str | None = None, cpus: set[int] | None = None,
          stdout: int | None = None) -> subprocess.Popen:
    """Start a child that is killed when we exit (normally, by signal, or by SIGKILL)."""
    _install_cleanup()
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=stdout if stdout is not None else out,
            stderr=out,
            preexec_fn=_set_pdeathsig if sys.platform.startswith("linux") else None,
            cwd=str(REPO_DIR),
        )
    finally:
        if log_path:
            out.close()
    _children.append(proc)
    pin(proc.pid, cpus)
    return proc


def stop(proc: subprocess.Popen, timeout: float = 3.0) -> None:
    """SIGTERM, wait up to `timeout`, then SIGKILL; always reaps."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            try:
                proc.wait(2.0)
            except subprocess.TimeoutExpired:
                pass
        except OSError:
            pass
    if proc.stdout is not None:
        proc.stdout.close()
    if proc in _children:
        _children.remove(proc)


def stop_all() -> None:
    for proc in list(_children):
        stop(proc)


def read_line(proc: subprocess.Popen, timeout: float) -> str | None:
    """One line of a child's stdout (a pipe), or None after `timeout` or at EOF."""
    import select

    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 1)  # unbuffered, so nothing after the line is swallowed
        if not chunk:
            return None
        if chunk == b"\n":
            return buf.decode("utf-8", "replace")
        buf += chunk


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (0.0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime, stime
    except (OSError, IndexError, ValueError):
        return 0.0


def machine_busy_seconds() -> float:
    """CPU seconds all cores have spent busy (not idle, not waiting for I/O) since boot."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / _CLK_TCK  # user..steal, without guest (counted in user)


def self_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def tail(path: str, n: int = 15) -> str:
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


# --- management over a Unix connection ------------------------------------------------------


class CommandError(Exception):
    pass


def _command_interest(module: str, verb: str, args: dict[str, Any]) -> bytes:
    import msgpack

    from icnd.codec import encode
    from icnd.name import Name
    from icnd.packet import Interest

    name = Name([b"localhost", b"icnd", module.encode(), verb.encode()])
    params = msgpack.packb(args, use_bin_type=True)
    return encode(Interest.with_params(name, params, lifetime_ms=10_000))


def command_on(sock: socket.socket, module: str, verb: str, *, timeout: float = 10.0, **args: Any) -> Any:
    """Run a management command on a connected Unix stream socket to a node.

    Blocks (with a deadline) until the reply; frames that are not the reply
    are discarded, so use it before the connection carries other traffic.
    Leaves the socket in blocking mode with no timeout set."""
    import msgpack

    from icnd.codec import decode
    from icnd.packet import Data, Nack

    wire = _command_interest(module, verb, args)
    want = decode(wire).name.comps
    deadline = time.monotonic() + timeout
    sock.setblocking(True)
    sock.settimeout(timeout)
    try:
        sock.sendall(FRAME.pack(len(wire)) + wire)
        buf = b""
        while True:
            while len(buf) >= 4:
                n = FRAME.unpack_from(buf)[0]
                if len(buf) < 4 + n:
                    break
                frame, buf = buf[4 : 4 + n], buf[4 + n :]
                pkt = decode(frame)
                if type(pkt) is Data and pkt.name.comps == want:
                    reply = msgpack.unpackb(pkt.content, raw=False)
                    if not reply.get("ok"):
                        raise CommandError(f"{module} {verb}: {reply.get('code')} {reply.get('error')}")
                    return reply.get("result")
                if type(pkt) is Nack and pkt.name.comps == want:
                    raise CommandError(f"{module} {verb}: nacked {pkt.reason.label}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise CommandError(f"{module} {verb}: no reply within {timeout:g}s")
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                raise CommandError(f"{module} {verb}: the node closed the connection")
            buf += chunk
    except socket.timeout:
        raise CommandError(f"{module} {verb}: no reply within {timeout:g}s") from None
    finally:
        sock.settimeout(None)


def connect_unix(path: str, timeout: float = 5.0) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return sock


def command(path: str, module: str, verb: str, *, timeout: float = 10.0, **args: Any) -> Any:
    """A management command on a fresh connection to the node at `path`."""
    sock = connect_unix(path, timeout)
    try:
        return command_on(sock, module, verb, timeout=timeout, **args)
    finally:
        sock.close()


def client_command(path: str, module: str, verb: str, *, timeout: float = 10.0, **args: Any) -> Any:
    """The same through `icnd.connect` (the real client library, on trio)."""
    import trio

    import icnd

    async def go() -> Any:
        with trio.fail_after(timeout):
            async with icnd.connect(path) as c:
                return await c.command(module, verb, timeout=timeout, **args)

    return trio.run(go)


# --- daemons ----------------------------------------------------------------------------------


def cli_available() -> bool:
    try:
        return (importlib.util.find_spec("icnd.cli") is not None
                and importlib.util.find_spec("icnd.__main__") is not None)
    except (ImportError, ValueError):
        return False


class Daemon:
    """An icnd daemon in a child process, listening on the Unix socket
    ``<workdir>/<label>.sock`` and on ``udp://127.0.0.1:0`` and ``tcp://127.0.0.1:0``."""

    def __init__(self, label: str, workdir: str, *, cpus: set[int] | None = None,
                 profile: str | None = None, use_cli: bool = True, ready_timeout: float = 20.0) -> None:
        self.label = label
        self.socket_path = os.path.join(workdir, f"{label}.sock")
        self.log_path = os.path.join(workdir, f"{label}.log")
        self.cpus = cpus
        self.profile = profile
        self.proc: subprocess.Popen | None = None
        self.how = ""
        self.status: dict[str, Any] = {}
        attempts = []
        if use_cli and profile is None and cli_available():
            attempts.append("cli")
        attempts.append("runner")
        errors = []
        for how in attempts:
            try:
                self._start(how, ready_timeout)
                return
            except RuntimeError as exc:
                errors.append(f"{how}: {exc}")
                if self.proc is not None:
                    stop(self.proc)
                    self.proc = None
        raise RuntimeError(f"daemon {label} did not start: " + "; ".join(errors))

    def _argv(self, how: str) -> list[str]:
        flags = ["--name", f"/node/{self.label}", "--socket", self.socket_path,
                 "--listen", "udp://127.0.0.1:0", "--listen", "tcp://127.0.0.1:0"]
        if how == "cli":
            return [sys.executable, "-m", "icnd", "run", *flags]
        code = (f"import sys; sys.path.insert(0, {str(BENCH_DIR)!r}); "
                "from _common import daemon_main; daemon_main(sys.argv[1:])")
        if self.profile:
            flags += ["--profile", self.profile, "--gc-stats"]
        return [sys.executable, "-c", code, *flags]

    def _start(self, how: str, ready_timeout: float) -> None:
        self.how = how
        with open(self.log_path, "ab") as f:
            f.write(f"--- starting ({how}) ---\n".encode())
        self.proc = spawn(self._argv(how), log_path=self.log_path, cpus=self.cpus)
        deadline = time.monotonic() + ready_timeout
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"exited with {self.proc.returncode}: {tail(self.log_path, 5)}")
            if os.path.exists(self.socket_path):
                try:
                    self.status = command(self.socket_path, "status", "get", timeout=2.0)
                    return
                except (OSError, CommandError) as exc:
                    last = str(exc)
            time.sleep(0.05)
        raise RuntimeError(f"not ready within {ready_timeout:g}s ({last or 'no socket'})")

    def udp_address(self) -> tuple[str, int]:
        for uri in self.status.get("listen", []):
            if uri.startswith("udp://"):
                host, _, port = uri[len("udp://"):].rpartition(":")
                return host.strip("[]"), int(port)
        raise RuntimeError(f"daemon {self.label} has no UDP listener: {self.status.get('listen')}")

    def udp_uri(self) -> str:
        host, port = self.udp_address()
        return f"udp://{host}:{port}"

    def command(self, module: str, verb: str, **args: Any) -> Any:
        return client_command(self.socket_path, module, verb, **args)

    def counters(self) -> dict[str, int]:
        return command(self.socket_path, "status", "get", timeout=5.0).get("counters", {})

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None


def _install_gc_stats() -> None:
    """Time every collection; print a per-generation summary to stderr at exit."""
    import gc

    stats = {0: [0, 0.0, 0.0], 1: [0, 0.0, 0.0], 2: [0, 0.0, 0.0]}  # count, total s, max s
    started = [0.0]

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            dt = time.perf_counter() - started[0]
            s = stats[info["generation"]]
            s[0] += 1
            s[1] += dt
            s[2] = max(s[2], dt)

    gc.callbacks.append(callback)

    def report() -> None:
        parts = [f"gen{g}: {c} collections, {t * 1e3:.1f} ms total, max {m * 1e3:.2f} ms"
                 for g, (c, t, m) in stats.items()]
        print("gc-stats: " + "; ".join(parts) + f"; objects tracked at exit {len(gc.get_objects())}",
              file=sys.stderr, flush=True)

    atexit.register(report)


def daemon_main(argv: list[str] | None = None) -> None:
    """The runner: one icnd node until SIGTERM/SIGINT (optionally under cProfile)."""
    import argparse
    import logging

    ap = argparse.ArgumentParser(prog="icnd-bench-runner")
    ap.add_argument("--name", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--listen", action="append", default=[])
    ap.add_argument("--profile", help="write a cProfile of the whole run to this file")
    ap.add_argument("--gc-stats", action="store_true", help="log garbage-collection pauses at exit")
    ap.add_argument("--no-tune-gc", action="store_true", help="keep CPython's default GC settings")
    args = ap.parse_args(argv)
    if args.gc_stats:
        _install_gc_stats()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")

    import trio

    from icnd.daemon.config import NodeConfig
    from icnd.daemon.node import Node

    if not args.no_tune_gc:  # set the process up as `icnd run` does
        try:
            from icnd.daemon.runtime import tune_gc
        except ImportError:
            pass
        else:
            tune_gc()

    async def run() -> None:
        node = Node(NodeConfig(name=args.name, socket=args.socket, listen=args.listen))
        await node.bind()
        async with trio.open_nursery() as nursery:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                await nursery.start(node.serve)
                async for _ in signals:
                    break
            nursery.cancel_scope.cancel()

    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        trio.run(run)
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)
