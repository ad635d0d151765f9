"""``icnd exec`` through the CLI, with real daemons [issue #29].

One node (``s``) for most tests and two linked nodes (``a``, ``b``) for
placement; the rank programs are small Python scripts that print their
environment, write their pid, fail on purpose or ignore SIGTERM, so every
claim of the launcher is checked from the outside: what each rank was told,
what reached the terminal, which exit code came back and that no rank
outlived the job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icnd.cli.exec import STOP_GRACE_S
from icnd.testing.processes import gone, lone_node, neighbours, one_line_error, run_cli, short_tempdir

PY = sys.executable
SLACK_S = 10.0  # on top of the grace period: a loaded 2-core machine starting a dozen interpreters

ENV_DUMP = """
import json, os, sys
print(json.dumps({k: v for k, v in os.environ.items() if k.startswith("ICND_")}), flush=True)
if os.environ["ICND_RANK"] == "0":
    print("stdin:" + sys.stdin.read(), flush=True)
"""

CHATTY = """
import os, sys
r = os.environ["ICND_RANK"]
for i in range(3):
    print(f"out {r} line {i}", flush=True)
print(f"err {r}", file=sys.stderr, flush=True)
sys.stdout.write(f"tail {r}")  # a last line without its newline
"""

# rank 1 fails once every rank has started; rank 2 ignores SIGTERM (so only SIGKILL ends it)
FAILING = """
import os, signal, sys, time
rank, pids = int(os.environ["ICND_RANK"]), sys.argv[1]
if rank == 2:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(os.path.join(pids, str(rank)), "w") as f:
    f.write(str(os.getpid()))
if rank == 1:
    deadline = time.monotonic() + 20
    while len(os.listdir(pids)) < int(os.environ["ICND_SIZE"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.exit(3)
time.sleep(120)
"""

SLEEPER = """
import os, sys, time
print("started", flush=True)
with open(os.path.join(sys.argv[1], os.environ["ICND_RANK"]), "w") as f:
    f.write(str(os.getpid()))
time.sleep(120)
"""


def icnd_exec(*args: str, input: bytes | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
    return run_cli("exec", *args, input=input, timeout=timeout)


def script(tmp: Path, text: str) -> str:
    path = tmp / f"rank_{abs(hash(text))}.py"
    path.write_text(text)
    return str(path)


def json_lines(out: bytes) -> list[dict[str, str]]:
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def group_info(socket: str, group: str) -> dict:
    r = run_cli("group", "show", group, "--json", "--socket", socket)
    assert r.returncode == 0, r.stderr
    info: dict = json.loads(r.stdout)
    return info


def pids_when_all_written(directory: Path, n: int, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = list(directory.iterdir())
        if len(files) == n and all(f.read_text() for f in files):
            return [int(f.read_text()) for f in files]
        time.sleep(0.05)
    raise AssertionError(f"only {len(list(directory.iterdir()))} of {n} ranks started within {timeout:g}s")


@pytest.fixture(scope="module")
def node():
    """One ``icnd run`` (/node/s) for the module."""
    with short_tempdir("icnd-exec-") as workdir, lone_node(workdir) as d:
        yield d


@pytest.fixture(scope="module")
def pair():
    """Nodes a and b, neighbours (link-state routing) on loopback."""
    with short_tempdir("icnd-exec2-") as workdir, neighbours(workdir) as both:
        yield both


def test_every_rank_gets_the_environment_protocol_and_the_group_exists(node, tmp_path) -> None:
    r = icnd_exec("-n", "3", "--socket", node.socket, "--", PY, script(tmp_path, ENV_DUMP), input=b"to rank 0")
    assert r.returncode == 0, r.stderr
    envs = sorted(json_lines(r.stdout), key=lambda e: int(e["ICND_RANK"]))
    assert [e["ICND_RANK"] for e in envs] == ["0", "1", "2"]
    group = envs[0]["ICND_GROUP"]
    assert group.startswith("exec-") and len(group) == len("exec-") + 12
    for i, env in enumerate(envs):
        assert env == {"ICND_SOCKET": node.socket, "ICND_GROUP": group, "ICND_RANK": str(i), "ICND_SIZE": "3",
                       "ICND_MEMBER": f"rank{i}"}
    assert "stdin:to rank 0" in r.stdout.decode().splitlines()  # rank 0 reads icnd exec's standard input
    info = group_info(node.socket, group)
    assert info["members"] == ["rank0@s", "rank1@s", "rank2@s"] and info["deadline_ms"] == 0

    again = icnd_exec("-n", "1", "--socket", node.socket, "--", PY, script(tmp_path, ENV_DUMP))
    assert again.returncode == 0 and json_lines(again.stdout)[0]["ICND_GROUP"] != group  # a fresh group per job


def test_group_and_timeout_are_passed_on(node, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ICND_TIMEOUT", "99")  # an enclosing job's: replaced by --timeout here
    r = icnd_exec("-n", "2", "--socket", node.socket, "--group", "mine", "--timeout", "7.5", "--",
                  PY, script(tmp_path, ENV_DUMP))
    assert r.returncode == 0, r.stderr
    envs = json_lines(r.stdout)
    assert len(envs) == 2 and all(e["ICND_GROUP"] == "mine" and e["ICND_TIMEOUT"] == "7.5" for e in envs)
    assert group_info(node.socket, "mine")["deadline_ms"] == 7500
    without = icnd_exec("-n", "1", "--socket", node.socket, "--", PY, script(tmp_path, ENV_DUMP))
    assert "ICND_TIMEOUT" not in json_lines(without.stdout)[0]


def test_output_is_forwarded_whole_lines_and_tagged_on_request(node, tmp_path) -> None:
    program = script(tmp_path, CHATTY)
    plain = icnd_exec("-n", "2", "--socket", node.socket, "--", PY, program)
    assert plain.returncode == 0, plain.stderr
    text = plain.stdout.decode()
    assert text.count("tail 0") == text.count("tail 1") == 1  # untagged: the bytes as written, no newline added
    lines = text.replace("tail 0", "").replace("tail 1", "").splitlines()
    for r in (0, 1):
        assert [line for line in lines if line.startswith(f"out {r} ")] == [f"out {r} line {i}" for i in range(3)]
    assert len([line for line in lines if line]) == 6  # whole lines: none cut by another rank's
    assert sorted(plain.stderr.decode().splitlines()) == ["err 0", "err 1"]

    tagged = icnd_exec("-n", "2", "--socket", node.socket, "--tag-output", "--", PY, program)
    assert tagged.returncode == 0, tagged.stderr
    out = tagged.stdout.decode().splitlines()
    for r in (0, 1):
        mine = [line for line in out if line.startswith(f"[1,{r}]<stdout>: ")]
        assert mine == [f"[1,{r}]<stdout>: out {r} line {i}" for i in range(3)] + [f"[1,{r}]<stdout>: tail {r}"]
    assert len(out) == 8
    assert sorted(tagged.stderr.decode().splitlines()) == ["[1,0]<stderr>: err 0", "[1,1]<stderr>: err 1"]


def test_a_failing_rank_fails_the_job_and_the_others_are_killed(node, tmp_path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    started = time.monotonic()
    r = icnd_exec("-n", "4", "--socket", node.socket, "--", PY, script(tmp_path, FAILING), str(pids))
    took = time.monotonic() - started
    assert r.returncode == 3, r.stderr
    assert took < STOP_GRACE_S + SLACK_S, took
    ranks = {int(f.name): int(f.read_text()) for f in pids.iterdir()}
    assert sorted(ranks) == [0, 1, 2, 3]
    assert all(gone(pid) for pid in ranks.values()), ranks
    text = r.stderr.decode()
    assert "Traceback" not in text
    assert f"rank 1 (rank1@s, pid {ranks[1]}) exited with code 3" in text
    assert "rank 2 still running" in text and "SIGKILL" in text  # it ignored SIGTERM
    assert "rank 0 still running" not in text  # it obeyed SIGTERM


def test_a_rank_killed_by_a_signal_gives_128_plus_the_signal(node, tmp_path) -> None:
    program = script(tmp_path, "import os, signal, time\n"
                               "os.environ['ICND_RANK'] == '0' and os.kill(os.getpid(), signal.SIGKILL)\n"
                               "time.sleep(120)\n")
    r = icnd_exec("-n", "2", "--socket", node.socket, "--", PY, program)
    assert r.returncode == 128 + signal.SIGKILL
    assert "rank 0 (rank0@s, pid" in r.stderr.decode() and "was killed by SIGKILL" in r.stderr.decode()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_icnd_exec_stops_the_job(node, tmp_path, sig) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    proc = subprocess.Popen([PY, "-m", "icnd", "exec", "-n", "3", "--socket", node.socket, "--",
                             PY, script(tmp_path, SLEEPER), str(pids)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        ranks = pids_when_all_written(pids, 3)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=STOP_GRACE_S + SLACK_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert out.decode().splitlines() == ["started"] * 3
    assert f"got {signal.Signals(sig).name}" in err.decode()
    assert all(gone(pid) for pid in ranks), ranks


def test_two_sockets_place_ranks_round_robin_on_two_nodes(pair, tmp_path) -> None:
    a, b = pair
    r = icnd_exec("-n", "4", "--socket", a.socket, "--socket", b.socket, "--", PY, script(tmp_path, ENV_DUMP))
    assert r.returncode == 0, r.stderr
    envs = sorted(json_lines(r.stdout), key=lambda e: int(e["ICND_RANK"]))
    assert [e["ICND_SOCKET"] for e in envs] == [a.socket, b.socket, a.socket, b.socket]
    group = envs[0]["ICND_GROUP"]
    members = ["rank0@a", "rank1@b", "rank2@a", "rank3@b"]
    assert group_info(a.socket, group)["members"] == members
    assert group_info(b.socket, group)["members"] == members  # installed at b too: its ranks can use it


def test_launch_errors_are_one_clear_line(node, pair, tmp_path) -> None:
    program = script(tmp_path, ENV_DUMP)
    r = icnd_exec("-n", "0", "--socket", node.socket, "--", PY, program)
    assert r.returncode == 2 and b"argument -n: must be >= 1" in r.stderr
    r = icnd_exec("-n", "2", "--socket", node.socket)
    assert r.returncode == 2 and "PROGRAM is missing" in one_line_error(r)
    r = icnd_exec("-n", "2", "--socket", node.socket, "--", "icnd-no-such-program")
    assert r.returncode == 127 and "icnd-no-such-program: command not found" in one_line_error(r)
    r = icnd_exec("-n", "2", "--socket", str(tmp_path), "--", PY, program)  # a directory: no node there
    assert r.returncode == 1 and f"cannot connect to icnd at {tmp_path}" in one_line_error(r)
    a, _ = pair
    started = time.monotonic()
    r = icnd_exec("-n", "2", "--socket", node.socket, "--socket", a.socket, "--timeout", "1", "--", PY, program)
    assert r.returncode == 1 and "node s has no route to node a within 1s" in one_line_error(r)
    assert time.monotonic() - started < 1 + SLACK_S
    assert not r.stdout  # nothing started


def test_help_names_every_flag_and_the_environment() -> None:
    r = run_cli("exec", "--help")
    assert r.returncode == 0
    text = r.stdout.decode()
    for word in ("-n N", "--socket S", "--group NAME", "--timeout S", "--tag-output", "-- PROGRAM [ARGS ...]",
                 "ICND_SOCKET", "ICND_GROUP", "ICND_RANK", "ICND_SIZE", "ICND_MEMBER", "ICND_TIMEOUT",
                 "[1,<rank>]<stdout>:", f"SIGKILL {STOP_GRACE_S:g}s later", "docs/mpi.md"):
        assert word in text, word
    assert "exec" in run_cli("--help").stdout.decode()


def allreduce_job(*sockets: str, n: int = 3, group: tuple[str, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    """``apps/allreduce_job.py`` (allreduce, allgather, barrier through the communicator) under ``icnd exec``."""
    flags = [arg for s in sockets for arg in ("--socket", s)]
    return icnd_exec("-n", str(n), *flags, *group, "--timeout", "20", "--tag-output", "--",
                     PY, "-m", "apps.allreduce_job", timeout=90)


def test_a_communicator_allreduce_under_icnd_exec_on_one_node(node) -> None:
    r = allreduce_job(node.socket)
    assert r.returncode == 0, r.stderr
    lines = sorted(r.stdout.decode().splitlines())
    assert lines == [f"[1,{i}]<stdout>: rank {i} of 3 on /node/s: allreduce sum = [0.0, 6.0, 12.0, 18.0] (ok); "
                     f"ranks' nodes: /node/s, /node/s, /node/s" for i in range(3)], r.stderr


def test_a_communicator_allreduce_under_icnd_exec_across_two_nodes(pair) -> None:
    a, b = pair
    r = allreduce_job(a.socket, b.socket)
    assert r.returncode == 0, r.stderr
    lines = sorted(r.stdout.decode().splitlines())
    assert lines == [f"[1,{i}]<stdout>: rank {i} of 3 on /node/{'ab'[i % 2]}: allreduce sum = [0.0, 6.0, 12.0, 18.0] "
                     f"(ok); ranks' nodes: /node/a, /node/b, /node/a" for i in range(3)], r.stderr


def test_a_named_group_cannot_be_rerun_and_says_why(node) -> None:
    first = allreduce_job(node.socket, n=2, group=("--group", "rerun"))
    assert first.returncode == 0, first.stderr
    again = allreduce_job(node.socket, n=2, group=("--group", "rerun"))
    assert again.returncode == 1 and not again.stdout
    assert "group rerun version 1 was used by an earlier job" in one_line_error(again)


MPI_CHECK = str(Path(__file__).resolve().parents[1] / "mpi" / "mpi_check_program.py")


@pytest.mark.parametrize("nodes", ["one", "two"])
def test_an_mpi4py_style_program_runs_under_icnd_exec(node, pair, nodes) -> None:
    """tests/mpi/mpi_check_program.py (every icnd.mpi method against numpy, written as for
    mpi4py but for its import line) as a 3-rank job on one node and across two."""
    sockets = [node.socket] if nodes == "one" else [d.socket for d in pair]
    flags = [arg for s in sockets for arg in ("--socket", s)]
    r = icnd_exec("-n", "3", *flags, "--timeout", "30", "--", PY, MPI_CHECK, "--big", "100000", timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    lines = sorted(r.stdout.decode().splitlines())
    assert [line.split(":")[0] for line in lines] == [f"rank {i} of 3" for i in range(3)], lines
    assert all(": ok (" in line for line in lines), lines
