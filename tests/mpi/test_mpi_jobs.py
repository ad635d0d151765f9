"""icnd.mpi programs as jobs of real processes on real daemons.

The tests launch the ranks themselves with the environment protocol of
``icnd exec`` (ICND_SOCKET, ICND_GROUP, ICND_RANK, ICND_SIZE, ICND_MEMBER,
ICND_TIMEOUT) after making the group, so icnd.mpi is tested apart from the
launcher; as an external launcher would start them (Slurm's variables,
ranks on two nodes); and with Open MPI's ``mpirun``, which only starts the
processes: rank 0 makes the group and icnd carries every byte.  Each rank
runs tests/mpi/mpi_check_program.py, which checks every method against
numpy and prints ``rank R of N: ok``.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import icnd.sync
from icnd.testing.processes import Daemon, neighbours, short_tempdir

PROGRAM = str(Path(__file__).with_name("mpi_check_program.py"))
REPO = str(Path(__file__).resolve().parents[2])
JOB_TIMEOUT = 60.0  # seconds a whole job may take before the test kills it and fails
LAUNCHER_VARS = ("ICND_", "SLURM_", "OMPI_", "PMI_", "PMIX_")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any launcher's variables (the test's own runner may be one), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_VARS)}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def make_group(socket: str, nodes: list[str], size: int) -> str:
    """A fresh group of members rank0..rank<size-1>, placed round-robin on `nodes`, made through `socket`'s node."""
    group = f"job-{secrets.token_hex(6)}"
    with icnd.sync.connect(socket) as client:
        client.create_group(group, members=[f"rank{i}@{nodes[i % len(nodes)]}" for i in range(size)])
    return group


def launch(args: list[str], sockets: list[str], group: str, size: int, timeout: float = 20.0,
           ranks: range | None = None) -> list[subprocess.Popen[str]]:
    """Start ranks `ranks` (default: all) of a job of `size` running ``python ARGS``, as icnd exec would."""
    procs = []
    for rank in ranks if ranks is not None else range(size):
        env = clean_env(ICND_SOCKET=sockets[rank % len(sockets)], ICND_GROUP=group, ICND_RANK=str(rank),
                        ICND_SIZE=str(size), ICND_MEMBER=f"rank{rank}", ICND_TIMEOUT=str(timeout))
        procs.append(subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    return procs


def outcome(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of each process, once all ended (killed past `JOB_TIMEOUT`, failing the test)."""
    deadline = time.monotonic() + JOB_TIMEOUT
    results = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise AssertionError(f"a rank did not end within {JOB_TIMEOUT}s") from None
        results.append((proc.returncode, out, err))
    return results


def assert_all_ok(results: list[tuple[int, str, str]], size: int) -> None:
    for rank, (code, out, err) in enumerate(results):
        assert code == 0, f"rank {rank} exited with {code}:\n{out}\n{err}"
        assert out.strip().startswith(f"rank {rank} of {size}: ok"), out


def test_every_method_against_numpy_on_one_node(node: Daemon) -> None:
    group = make_group(node.socket, ["s"], 3)
    assert_all_ok(outcome(launch([PROGRAM], [node.socket], group, 3)), 3)


def test_a_job_of_one_rank_goes_through_its_node_too(node: Daemon) -> None:
    group = make_group(node.socket, ["s"], 1)
    assert_all_ok(outcome(launch([PROGRAM, "--big", "1000"], [node.socket], group, 1)), 1)


def test_ranks_on_two_nodes_started_by_slurm() -> None:
    """Under an external launcher (Slurm's variables, as ``srun`` sets them)
    rank 0 makes the group, placing the members round-robin on the nodes of
    ICND_NODES; each rank attaches to its own node."""
    with short_tempdir() as tmp, neighbours(tmp) as (a, b):
        for here, there in ((a, "b"), (b, "a")):
            with icnd.sync.connect(here.socket) as client:
                client.wait_routed(f"/node/{there}")
        job = str(secrets.randbelow(10 ** 9))
        procs = [subprocess.Popen([sys.executable, PROGRAM, "--big", "100000"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  env=clean_env(SLURM_PROCID=str(rank), SLURM_NTASKS="3", SLURM_JOB_ID=job,
                                                SLURM_STEP_ID="0", ICND_NODES="a,b", ICND_TIMEOUT="20",
                                                ICND_SOCKET=(a, b)[rank % 2].socket))
                 for rank in range(3)]
        assert_all_ok(outcome(procs), 3)
        with icnd.sync.connect(b.socket) as client:
            assert client.group(f"slurm-{job}-0")["members"] == ["rank0@a", "rank1@b", "rank2@a"]


MISSING_RANK = """
import time, numpy as np, icnd
from icnd.mpi import MPI
comm = MPI.COMM_WORLD
t = time.monotonic()
try:
    comm.Allreduce(np.ones(3), np.zeros(3))
except icnd.Timeout as exc:
    print("timeout", round(time.monotonic() - t, 2), ",".join(exc.missing), list(exc.ranks))
"""


def test_a_rank_that_never_comes_is_named_by_the_deadline(node: Daemon) -> None:
    group = make_group(node.socket, ["s"], 3)
    deadline = 2.0
    results = outcome(launch(["-c", MISSING_RANK], [node.socket], group, 3, timeout=deadline, ranks=range(2)))
    for code, out, err in results:
        assert code == 0, err
        word, took, missing, ranks = out.split(maxsplit=3)
        assert (word, missing, ranks.strip()) == ("timeout", "rank2", "[2]"), out
        assert float(took) <= deadline + 1.0, out


@pytest.mark.skipif(shutil.which("mpirun") is None,
                    reason="Open MPI's mpirun is not installed (make test installs openmpi-bin as root)")
def test_a_program_started_by_mpirun(node: Daemon) -> None:
    """mpirun only launches: the ranks read OMPI_COMM_WORLD_RANK/SIZE, rank 0
    makes the group ``ompi-<job id>`` on its node, and icnd carries every byte."""
    with icnd.sync.connect(node.socket) as client:
        before = {g["group"] for g in client.command("group", "list")}
    args = ["mpirun", "--oversubscribe", "-n", "3"]
    if os.geteuid() == 0:
        args.insert(1, "--allow-run-as-root")
    proc = subprocess.run([*args, sys.executable, PROGRAM, "--big", "100000"], capture_output=True, text=True,
                          timeout=JOB_TIMEOUT, env=clean_env(ICND_SOCKET=node.socket, ICND_TIMEOUT="20"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(re.findall(r"rank \d of \d: ok", proc.stdout)) == [f"rank {r} of 3: ok" for r in range(3)], \
        proc.stdout + proc.stderr  # (mpirun may interleave the ranks' lines)
    with icnd.sync.connect(node.socket) as client:
        made = [g for g in client.command("group", "list") if g["group"] not in before]
    assert [(g["group"].startswith("ompi-"), g["members"]) for g in made] == \
        [(True, ["rank0@s", "rank1@s", "rank2@s"])]
