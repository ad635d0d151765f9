"""Rank, size and group from the launcher's environment (icnd/mpi/launch.py)."""

from __future__ import annotations

import pytest

from icnd.mpi.launch import EXEC, OPEN_MPI, PMI, SLURM, LaunchError, detect


def test_icnd_exec_sets_everything() -> None:
    launch = detect({"ICND_RANK": "2", "ICND_SIZE": "4", "ICND_GROUP": "exec-0123456789ab", "ICND_MEMBER": "rank2",
                     "ICND_SOCKET": "/tmp/a.sock", "ICND_TIMEOUT": "2.5"})
    assert (launch.launcher, launch.rank, launch.size, launch.group, launch.member) == \
        (EXEC, 2, 4, "exec-0123456789ab", "rank2")
    assert (launch.socket, launch.timeout, launch.create) == ("/tmp/a.sock", 2.5, False)


def test_slurm_open_mpi_and_pmi_name_the_group_after_the_job() -> None:
    slurm = detect({"SLURM_PROCID": "1", "SLURM_NTASKS": "8", "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"})
    assert (slurm.launcher, slurm.rank, slurm.size, slurm.group, slurm.member, slurm.create) == \
        (SLURM, 1, 8, "slurm-4242-0", "rank1", True)
    ompi = detect({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "3", "OMPI_MCA_ess_base_jobid": "1374355457"})
    assert (ompi.launcher, ompi.size, ompi.group) == (OPEN_MPI, 3, "ompi-1374355457")
    pmix = detect({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "3", "PMIX_NAMESPACE": "prterun-h-12@1"})
    assert pmix.group == "ompi-prterun-h-12_1"  # only [A-Za-z0-9._-] in a derived name
    pmi = detect({"PMI_RANK": "3", "PMI_SIZE": "4", "PMI_JOBID": "77"})
    assert (pmi.launcher, pmi.rank, pmi.group) == (PMI, 3, "pmi-77")
    named = detect({"PMI_RANK": "0", "PMI_SIZE": "2", "ICND_GROUP": "mine", "ICND_NODES": "a, b,,c"})
    assert (named.group, named.nodes) == ("mine", ("a", "b", "c"))
    assert named.members("x") == ["rank0@a", "rank1@b"]
    assert slurm.members("n1")[:2] == ["rank0@n1", "rank1@n1"]


def test_icnd_exec_wins_over_the_launcher_that_started_it() -> None:
    launch = detect({"ICND_RANK": "0", "ICND_SIZE": "1", "ICND_GROUP": "g", "SLURM_PROCID": "5", "SLURM_NTASKS": "9"})
    assert (launch.launcher, launch.size) == (EXEC, 1)


def test_no_launcher_is_a_lone_process() -> None:
    launch = detect({})
    assert (launch.launcher, launch.rank, launch.size, launch.group, launch.create) == (None, 0, 1, None, False)


@pytest.mark.parametrize("env, words", [
    ({"ICND_RANK": "x", "ICND_SIZE": "2", "ICND_GROUP": "g"}, "ICND_RANK='x' is not an integer"),
    ({"ICND_RANK": "2", "ICND_SIZE": "2", "ICND_GROUP": "g"}, "ICND_RANK=2 is out of range for ICND_SIZE=2"),
    ({"ICND_RANK": "0", "ICND_SIZE": "0", "ICND_GROUP": "g"}, "at least one rank"),
    ({"ICND_RANK": "0", "ICND_SIZE": "2"}, "ICND_GROUP is not"),
    ({"ICND_SIZE": "2"}, "ICND_RANK is not"),
    ({"SLURM_PROCID": "0"}, "SLURM_NTASKS is not"),
    ({"PMI_RANK": "0", "PMI_SIZE": "2"}, "without a job id .PMI_JOBID.: set ICND_GROUP"),
    ({"ICND_TIMEOUT": "soon"}, "ICND_TIMEOUT='soon' is not a number"),
    ({"ICND_TIMEOUT": "0"}, "must be positive"),
])
def test_an_inconsistent_environment_is_refused_naming_the_variable(env: dict[str, str], words: str) -> None:
    with pytest.raises(LaunchError, match=words):
        detect(env)
