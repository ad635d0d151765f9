"""``icnd exec``: start one collective job over local icnd nodes, as ``mpirun`` does (interface §15).

    icnd exec -n N [--socket S ...] [--group NAME] [--timeout S] [--tag-output] -- PROGRAM [ARGS ...]

In order:

1. PROGRAM is checked first (exit 127 if not found, 126 if not executable),
   so a typo costs no group and starts nothing.
2. Each ``--socket`` (default: the default socket, as every command resolves
   it) is asked for its node's name; a socket where no node answers is one
   line and exit 1.  The node id is the name's last component, as groups use it.
3. Group NAME (default ``exec-<12 hex>``: reruns never share a name) is created
   at the first socket's node with members ``rank0..rankN-1``, rank i on the
   node of socket ``i mod len(sockets)``, and installed at every other node
   once that node routes to it (waited for up to the timeout).
   ``--timeout`` is also the group's deadline, so a communicator's calls
   default to it.
4. N processes start, each in its own session (a terminal's Ctrl-C reaches
   ``icnd exec`` alone, which then stops the whole job) and with SIGTERM as
   its parent-death signal (if ``icnd exec`` is killed, the ranks are too).
   Each gets the environment protocol: ``ICND_SOCKET``, ``ICND_GROUP``,
   ``ICND_RANK``, ``ICND_SIZE``, ``ICND_MEMBER`` and, only with ``--timeout``,
   ``ICND_TIMEOUT``.  Rank 0 inherits standard input; the others read /dev/null.
5. Output is forwarded line by line (a line is never cut by another rank's),
   tagged ``[1,<rank>]<stdout>: `` / ``<stderr>`` with ``--tag-output``.
6. The exit code is the first non-zero exit code of a rank (128 + N for a
   rank killed by signal N), else 0.  On that first failure, or on
   SIGINT/SIGTERM/SIGHUP to ``icnd exec`` (exit 128 + the signal), every rank
   still running gets SIGTERM (its whole process group), and SIGKILL
   `STOP_GRACE_S` seconds later; a second signal kills at once.

Why polling for exits (`EXIT_POLL_S`): ``waitpid`` without blocking on a
short period is simple, bounded and costs nothing next to the programs; the
pipes are read by trio as they fill.  Nothing waits without a deadline: setup
steps have the timeout, stopping has the grace period (and `KILL_WAIT_S`
after SIGKILL), and output left in a pipe that a rank's own child still
holds open is given `DRAIN_S` seconds after the last rank exits.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import trio

from icnd.cli.errors import CliError
from icnd.cli.options import positive_int, positive_seconds, socket_path
from icnd.client import Client, connect
from icnd.endpoint import resolve_socket_path
from icnd.errors import Error
from icnd.name import Name
from icnd.reduction.contrib import EPOCH_BITS
from icnd.reduction.group import check_ident
from icnd.topology.processes import child_setup

STOP_GRACE_S = 3.0
"""Seconds between SIGTERM and SIGKILL when the job is stopped (a rank failed, or Ctrl-C)."""
EXIT_POLL_S = 0.02
"""How often the ranks are checked for having exited."""
KILL_WAIT_S = 5.0
"""How long a rank may take to disappear after SIGKILL (only the kernel can delay it) before it is left behind."""
DRAIN_S = 2.0
"""After the last rank exits, how long its output pipes may stay open (held by a child it left behind)."""
SETUP_TIMEOUT_S = 10.0
"""Deadline of each setup step (a node's status, routes between nodes, creating the group) without --timeout."""
CHUNK = 65536
"""Bytes read from a rank's pipe at once; also the longest line held back waiting for its newline."""
JOB_ID = 1
"""The job number in ``--tag-output``'s tags (``[1,<rank>]``), as ``mpirun`` prints it for its one job."""

ENV_SOCKET = "ICND_SOCKET"
ENV_GROUP = "ICND_GROUP"
ENV_RANK = "ICND_RANK"
ENV_SIZE = "ICND_SIZE"
ENV_MEMBER = "ICND_MEMBER"
ENV_TIMEOUT = "ICND_TIMEOUT"

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def group_arg(text: str) -> str:
    try:
        return check_ident(text, "group name")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def shell_code(returncode: int) -> int:
    """A `subprocess` return code as a shell reports it: 128 + N for death by signal N."""
    return returncode if returncode >= 0 else 128 - returncode


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def check_program(program: str) -> str:
    """`program` as the path that will run; `CliError` 127 (not found) or 126
    (not executable), the codes a shell gives, so scripts can tell them apart
    from a rank's own failure."""
    if os.sep not in program:
        found = shutil.which(program)
        if found is None:
            raise CliError(f"{program}: command not found (not in $PATH)", 127)
        return program
    if not os.path.exists(program):
        raise CliError(f"{program}: no such file", 127)
    if os.path.isdir(program) or not os.access(program, os.X_OK):
        raise CliError(f"{program}: not an executable file", 126)
    return program


@dataclass
class Placement:
    """Where the job runs: the group, and each rank's member string and socket."""

    group: str
    members: list[str]
    sockets: list[str]


def node_id(name: str) -> str:
    """A node's id: the last component of its name, as group members name nodes."""
    parsed = Name(name)
    if not len(parsed):
        raise CliError(f"a node named {name!r} has no id to place ranks on")
    return bytes(parsed[-1]).decode("utf-8", "replace")


async def place(sockets: list[str], size: int, group: str, timeout: float, deadline: float | None) -> Placement:
    """Ask each node its name, create `group` at the first one (members
    ``rank<i>@<node of socket i mod len(sockets)>``, with `deadline` if
    given) and return the placement; each step within `timeout` seconds.

    The group is created once, signed by one node, and installed by it at the
    others, which needs routes: each other node's prefix is waited for."""
    distinct = list(dict.fromkeys(sockets))
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        ids: dict[str, str] = {}
        owner: dict[str, tuple[str, int]] = {}  # node id -> (socket, pid): two daemons of one name are refused
        for path in distinct:
            try:
                client = await stack.enter_async_context(connect(path, timeout=min(timeout, 5.0)))
                with trio.fail_after(timeout):
                    status = await client.status()
            except trio.TooSlowError:
                raise CliError(f"the node at {path} did not answer within {timeout:g}s") from None
            except Error as exc:
                raise CliError(str(exc)) from None
            ident = node_id(status["name"])
            seen = owner.setdefault(ident, (path, status.get("pid", 0)))
            if seen[1] != status.get("pid", 0):
                raise CliError(f"the nodes at {seen[0]} and {path} are both named {status['name']}: "
                               f"ranks could not tell them apart; give each node its own --name")
            clients[path], ids[path] = client, ident
        first = clients[sockets[0]]
        for other in dict.fromkeys(ids[p] for p in distinct):
            if other == ids[sockets[0]]:
                continue
            try:
                await first.wait_routed(f"/node/{other}", timeout=timeout)
            except Error:
                raise CliError(f"node {ids[sockets[0]]} has no route to node {other} within {timeout:g}s: "
                               f"link the nodes (icnd run --neighbor, or a topology) so that their ranks "
                               f"can reach each other") from None
        members = [f"rank{i}@{ids[sockets[i % len(sockets)]]}" for i in range(size)]
        try:
            info = await first.create_group(group, members, deadline=deadline, timeout=timeout)
        except Error as exc:
            raise CliError(f"cannot create group {group}: {exc}") from None
        for i in range(size):  # a rank refuses a group version it used before: say so before starting any
            used = (await clients[sockets[i % len(sockets)]].command("reduce", "rounds", group=group,
                                                                     member=f"rank{i}"))["newest"]
            if used is not None and used >> EPOCH_BITS >= info["version"]:
                raise CliError(f"group {group} version {info['version']} was used by an earlier job (rank{i} "
                               f"took part): the same members make the same version; leave --group out for a "
                               f"fresh group, or give a new name")
    return Placement(group, members, [sockets[i % len(sockets)] for i in range(size)])


def rank_environment(base: dict[str, str], placement: Placement, rank: int, timeout: float | None) -> dict[str, str]:
    """The environment of rank `rank`: `base` with the protocol's variables.
    An inherited ``ICND_TIMEOUT`` is dropped without ``--timeout``: it would
    be an enclosing job's, not this one's."""
    env = {k: v for k, v in base.items() if k != ENV_TIMEOUT}
    env.update({
        ENV_SOCKET: placement.sockets[rank],
        ENV_GROUP: placement.group,
        ENV_RANK: str(rank),
        ENV_SIZE: str(len(placement.members)),
        ENV_MEMBER: f"rank{rank}",
    })
    if timeout is not None:
        env[ENV_TIMEOUT] = f"{timeout:g}"
    return env


class Output:
    """One of ``icnd exec``'s own output streams (fd 1 or 2), shared by every rank.

    Writes happen in a worker thread, so a stalled reader (a paused pager)
    never keeps the job from reacting to a failure or a signal; a lock keeps
    each rank's lines whole.  If the reader goes away (EPIPE), the ranks'
    output is read and dropped, so no rank blocks on a full pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = trio.Lock()
        self.broken = False

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    async def write(self, data: bytes) -> None:
        async with self.lock:
            if self.broken:
                return
            try:
                await trio.to_thread.run_sync(self._write_all, data, abandon_on_cancel=True)
            except OSError:  # EPIPE (SIGPIPE is ignored in Python), or a closed descriptor
                self.broken = True


@dataclass
class Rank:
    rank: int
    member: str
    proc: subprocess.Popen[bytes]
    pipes: dict[str, int] = field(default_factory=dict)  # "stdout"/"stderr" -> the read end
    code: int | None = None  # the exit code once it exited, as a shell reports it


class Job:
    """The N processes of one job: started together, stopped together.

    `outcome` is set once, by the first event that decides the exit code: a
    rank's non-zero exit, or a signal to ``icnd exec``; from then on the job
    is stopping (SIGTERM now, SIGKILL at `kill_at`)."""

    def __init__(self, argv: list[str], envs: list[dict[str, str]], members: list[str], tag: bool) -> None:
        self.tag = tag
        self.out = {"stdout": Output(1), "stderr": Output(2)}
        self.ranks: list[Rank] = []
        self.outcome: int | None = None
        self.kill_at: float | None = None
        self.killed = False
        try:
            for rank, env in enumerate(envs):
                self.ranks.append(self._spawn(rank, members[rank], argv, env))
        except OSError as exc:
            for r in self.ranks:
                self._signal(r, signal.SIGKILL)
                r.proc.wait()
                for fd in r.pipes.values():
                    os.close(fd)
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            raise CliError(f"{argv[0]}: cannot start rank {len(self.ranks)}: {exc.strerror or exc}", code) from None

    @staticmethod
    def _spawn(rank: int, member: str, argv: list[str], env: dict[str, str]) -> Rank:
        pipes: dict[str, int] = {}
        ends: dict[str, int] = {}
        try:
            for stream in ("stdout", "stderr"):
                pipes[stream], ends[stream] = os.pipe()
            proc = subprocess.Popen(argv, env=env, stdin=None if rank == 0 else subprocess.DEVNULL,
                                    stdout=ends["stdout"], stderr=ends["stderr"], start_new_session=True,
                                    preexec_fn=child_setup)
        except OSError:
            for fd in (*pipes.values(), *ends.values()):
                os.close(fd)
            raise
        for fd in ends.values():
            os.close(fd)
        return Rank(rank, member, proc, pipes)

    def running(self) -> list[Rank]:
        return [r for r in self.ranks if r.code is None]

    @staticmethod
    def _signal(r: Rank, sig: int) -> None:
        """`sig` to rank `r`'s process group (the rank and whatever it started), while it is not reaped."""
        if r.proc.poll() is None:
            try:
                os.killpg(r.proc.pid, sig)
            except ProcessLookupError:
                pass

    async def note(self, text: str) -> None:
        await self.out["stderr"].write(f"icnd exec: {text}\n".encode())

    async def stop(self, outcome: int, why: str) -> None:
        """Decide the exit code (if not yet) and stop every rank still running."""
        if self.outcome is not None:
            return
        self.outcome = outcome
        self.kill_at = trio.current_time() + STOP_GRACE_S
        left = self.running()
        for r in left:
            self._signal(r, signal.SIGTERM)
        if left:
            await self.note(f"{why}; stopping the {len(left)} rank(s) still running: SIGTERM now, SIGKILL after "
                            f"{STOP_GRACE_S:g}s")
        else:
            await self.note(why)

    async def run(self) -> int:
        """Forward output and wait for every rank; the job's exit code."""
        async with trio.open_nursery() as outer:
            outer.start_soon(self._watch_signals)
            async with trio.open_nursery() as readers:
                for r in self.ranks:
                    for stream, fd in r.pipes.items():
                        readers.start_soon(self._forward, r, stream, fd)
                await self._wait_ranks()
                readers.cancel_scope.deadline = trio.current_time() + DRAIN_S
            outer.cancel_scope.cancel()
        return self.outcome or 0

    async def _wait_ranks(self) -> None:
        while self.running():
            for r in self.running():
                returncode = r.proc.poll()
                if returncode is None:
                    continue
                r.code = shell_code(returncode)
                if r.code != 0:
                    how = (f"was killed by {signal_name(-returncode)}" if returncode < 0
                           else f"exited with code {returncode}")
                    await self.stop(r.code, f"rank {r.rank} ({r.member}, pid {r.proc.pid}) {how}")
            now = trio.current_time()
            if self.kill_at is not None and not self.killed and now >= self.kill_at:
                self.killed = True
                stubborn = self.running()
                for r in stubborn:
                    self._signal(r, signal.SIGKILL)
                for r in stubborn:
                    await self.note(f"rank {r.rank} still running {STOP_GRACE_S:g}s after SIGTERM: SIGKILL")
            elif self.killed and self.kill_at is not None and now >= self.kill_at + KILL_WAIT_S:
                for r in self.running():  # stuck in the kernel (uninterruptible sleep): not waited for
                    await self.note(f"rank {r.rank} (pid {r.proc.pid}) did not end {KILL_WAIT_S:g}s after SIGKILL; "
                                    "not waiting for it")
                return
            await trio.sleep(EXIT_POLL_S)

    async def _watch_signals(self) -> None:
        with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async for sig in signals:
                if self.outcome is None:
                    await self.stop(128 + sig, f"got {signal_name(sig)}")
                elif self.kill_at is not None:  # asked again: do not wait for the grace period
                    self.kill_at = trio.current_time()

    async def _forward(self, r: Rank, stream: str, fd: int) -> None:
        """Copy one pipe of rank `r` to ``icnd exec``'s own stream, whole lines at a time."""
        out = self.out[stream]
        prefix = f"[{JOB_ID},{r.rank}]<{stream}>: ".encode() if self.tag else b""
        pending = b""
        async with trio.lowlevel.FdStream(fd) as pipe:
            while True:
                chunk = await pipe.receive_some(CHUNK)
                if not chunk:
                    break
                data = pending + chunk
                cut = data.rfind(b"\n") + 1
                if cut == 0 and len(data) >= CHUNK:  # a line longer than we hold back: forwarded in pieces
                    cut = len(data)
                pending = data[cut:]
                if cut:
                    await out.write(self._tagged(prefix, data[:cut]))
            if pending:  # a last line without its newline
                await out.write(self._tagged(prefix, pending))

    @staticmethod
    def _tagged(prefix: bytes, data: bytes) -> bytes:
        """`data` with `prefix` at the start of each line (every tagged piece ends a line)."""
        if not prefix:
            return data
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        return b"".join(prefix + line + b"\n" for line in lines)


def cmd_exec(args: argparse.Namespace) -> int:
    if args.program is None:
        raise CliError("PROGRAM is missing: icnd exec -n N [options] -- PROGRAM [ARGS ...]", 2)
    check_program(args.program)
    sockets = args.sockets or [args.socket or os.path.abspath(resolve_socket_path(None))]
    group = args.group or f"exec-{secrets.token_hex(6)}"
    timeout = args.timeout if args.timeout is not None else SETUP_TIMEOUT_S
    placement = trio.run(place, sockets, args.n, group, timeout, args.timeout)
    envs = [rank_environment(dict(os.environ), placement, i, args.timeout) for i in range(args.n)]
    job = Job([args.program, *args.args], envs, placement.members, args.tag_output)
    code: int = trio.run(job.run)
    return code


USAGE = "icnd exec -n N [--socket S ...] [--group NAME] [--timeout S] [--tag-output] -- PROGRAM [ARGS ...]"
DESCRIPTION = """\
Run N copies of PROGRAM as the ranks of a new group (members rank0..rankN-1)
over local icnd nodes, like mpirun: each process is told its rank, node and
group through its environment, its output is forwarded, and the first failing
rank stops the job."""

HELP_EPILOG = f"""\
placement:
  ranks are placed round-robin over the nodes of the given sockets: rank i on
  the node of socket i mod (number of sockets), as group member
  rank<i>@<node id> (the node id is the last component of the node's name).
  The nodes must route to each other (--neighbor, or a topology): the group is
  created at the first node and installed by it at the others.

environment of each rank:
  {ENV_SOCKET}   the socket of the rank's node
  {ENV_GROUP}    the group (default: a fresh exec-<12 hex> per job)
  {ENV_RANK}     the rank, 0..N-1
  {ENV_SIZE}     N
  {ENV_MEMBER}   rank<i>, the rank's member id in the group
  {ENV_TIMEOUT}  the per-call deadline in seconds (only with --timeout)
  A program attaches with icnd.sync.connect(os.environ["{ENV_SOCKET}"]).communicator(
  os.environ["{ENV_GROUP}"], os.environ["{ENV_MEMBER}"]), or uses icnd.mpi.
  Rank 0 reads icnd exec's standard input; the others read /dev/null.

output:
  each rank's stdout and stderr go to icnd exec's, whole lines at a time;
  --tag-output prefixes each line with [1,<rank>]<stdout>: or [1,<rank>]<stderr>:

exit status:
  0 if every rank exits 0; else the first non-zero exit code of a rank (128+N
  for a rank killed by signal N): the other ranks then get SIGTERM, and
  SIGKILL {STOP_GRACE_S:g}s later. SIGINT (Ctrl-C), SIGTERM or SIGHUP to icnd exec
  stop the job the same way (exit 128+signal; a second one kills at once).
  1: no node at a socket, nodes that do not route to each other, or the group
  cannot be created; 2: usage; 126/127: PROGRAM not executable / not found.

Across several hosts, start the ranks with the cluster's launcher (Slurm's
srun, Open MPI's mpirun) and let icnd.mpi read their environment: docs/mpi.md.
"""


def add_commands(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "exec", help="run a collective job of N processes over icnd nodes, like mpirun",
        usage=USAGE, description=DESCRIPTION,
        epilog=HELP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(handler=cmd_exec)
    p.add_argument("-n", type=positive_int, required=True, metavar="N", help="number of processes (ranks), >= 1")
    p.add_argument("--socket", dest="sockets", metavar="S", action="append", type=socket_path,
                   help="a node's local socket (repeatable: ranks are placed round-robin over the nodes; "
                   "default: $ICND_SOCKET, else $XDG_RUNTIME_DIR/icnd.sock, else /tmp/icnd-$UID.sock)")
    p.add_argument("--group", metavar="NAME", type=group_arg,
                   help="the group's name (default: exec-<12 random hex digits>, new for every job)")
    p.add_argument("--timeout", metavar="S", type=positive_seconds,
                   help="the per-call deadline of the job's collectives, in seconds: passed to every rank as "
                   f"${ENV_TIMEOUT} and made the group's deadline; also the deadline of each setup step "
                   f"(default: {SETUP_TIMEOUT_S:g}s for setup; the ranks' own default for calls)")
    p.add_argument("--tag-output", action="store_true",
                   help="prefix each output line with [1,<rank>]<stdout>: or [1,<rank>]<stderr>: (as mpirun)")
    p.add_argument("program", metavar="PROGRAM", nargs="?", help="the program each rank runs")
    p.add_argument("args", metavar="ARGS", nargs=argparse.REMAINDER, help="its arguments")
