"""Who this process is in its job: rank, size and group, from its environment.

Launchers, in the order they are looked for (the first whose variables are
set wins):

===============  ===================================  ==========================================
launcher         rank / size                          group (unless ``ICND_GROUP`` names it)
===============  ===================================  ==========================================
``icnd exec``    ``ICND_RANK`` / ``ICND_SIZE``        ``ICND_GROUP`` (made by ``icnd exec``)
Slurm (srun)     ``SLURM_PROCID`` / ``SLURM_NTASKS``  ``slurm-<SLURM_JOB_ID>-<SLURM_STEP_ID>``
Open MPI         ``OMPI_COMM_WORLD_RANK`` / ``_SIZE`` ``ompi-<OMPI_MCA_ess_base_jobid>`` (or
                                                      ``PMIX_NAMESPACE``)
PMI (Hydra, ..)  ``PMI_RANK`` / ``PMI_SIZE``          ``pmi-<PMI_JOBID>``; Hydra sets no job id,
                                                      so pass ``ICND_GROUP`` there
none             rank 0 of 1 (a lone process, as with mpi4py)
===============  ===================================  ==========================================

Every rank of one launch must name the same group and no other launch may
(a communicator refuses a group version its member already used, so a
reused name is an error, never another job's data): the launchers' job ids
are unique per job (Slurm: per job step), and ``ICND_GROUP`` set by hand
should be too (``ICND_GROUP=job-$(date +%s%N)``).

Other variables: ``ICND_MEMBER`` (this rank's member id; default
``rank<i>``), ``ICND_SOCKET`` (the node to attach to; default: the default
socket, as every icnd client resolves it), ``ICND_TIMEOUT`` (seconds, the
deadline of every call and of the start), ``ICND_NODES`` (under an external
launcher: the node ids that rank 0 places members on, round-robin; default:
its own node).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

EXEC = "icnd exec"
SLURM = "Slurm"
OPEN_MPI = "Open MPI"
PMI = "PMI"

# (launcher, rank variable, size variable, job id variables)
LAUNCHERS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (EXEC, "ICND_RANK", "ICND_SIZE", ()),
    (SLURM, "SLURM_PROCID", "SLURM_NTASKS", ("SLURM_JOB_ID",)),
    (OPEN_MPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", ("OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE")),
    (PMI, "PMI_RANK", "PMI_SIZE", ("PMI_JOBID",)),
)
PREFIX = {SLURM: "slurm", OPEN_MPI: "ompi", PMI: "pmi"}


class LaunchError(ValueError):
    """The environment does not say who this process is, or says it inconsistently."""


@dataclass(frozen=True)
class Launch:
    """This process's place in its job (module docstring)."""

    launcher: str | None  # None: a lone process, rank 0 of 1, no group
    rank: int
    size: int
    group: str | None
    member: str
    socket: str | None  # None: the default socket
    timeout: float | None  # None: the group's deadline (else 30 s)
    create: bool  # an external launcher: rank 0 makes the group if it does not exist
    nodes: tuple[str, ...]  # where rank 0 places members (empty: its own node)

    def members(self, own_node: str) -> list[str]:
        """The members rank 0 creates the group with: ``rank<i>@<node>``, nodes round-robin."""
        nodes = self.nodes or (own_node,)
        return [f"rank{i}@{nodes[i % len(nodes)]}" for i in range(self.size)]


def _int(env: Mapping[str, str], var: str) -> int:
    text = env[var].strip()
    try:
        return int(text)
    except ValueError:
        raise LaunchError(f"{var}={env[var]!r} is not an integer") from None


def _group_name(text: str) -> str:
    """A group name made from a job id: only ``[A-Za-z0-9._-]`` (job ids such as PMIx namespaces may hold others)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def detect(env: Mapping[str, str] | None = None) -> Launch:
    """This process's `Launch`, read from `env` (default ``os.environ``).
    `LaunchError` naming the variable when one is malformed or missing."""
    env = os.environ if env is None else env
    socket = env.get("ICND_SOCKET") or None
    timeout = None
    if env.get("ICND_TIMEOUT"):
        try:
            timeout = float(env["ICND_TIMEOUT"])
        except ValueError:
            raise LaunchError(f"ICND_TIMEOUT={env['ICND_TIMEOUT']!r} is not a number of seconds") from None
        if not timeout > 0:
            raise LaunchError(f"ICND_TIMEOUT={env['ICND_TIMEOUT']!r} must be positive")
    nodes = tuple(n.strip() for n in env.get("ICND_NODES", "").split(",") if n.strip())
    for launcher, rank_var, size_var, job_vars in LAUNCHERS:
        if rank_var not in env:
            continue
        if size_var not in env:
            raise LaunchError(f"{rank_var} is set but {size_var} is not: cannot tell the job's size")
        rank, size = _int(env, rank_var), _int(env, size_var)
        if size < 1:
            raise LaunchError(f"{size_var}={size}: a job has at least one rank")
        if not 0 <= rank < size:
            raise LaunchError(f"{rank_var}={rank} is out of range for {size_var}={size}")
        group = env.get("ICND_GROUP") or None
        if group is None:
            if launcher == EXEC:
                raise LaunchError("ICND_RANK is set but ICND_GROUP is not (icnd exec sets both)")
            job = next((env[v] for v in job_vars if env.get(v)), None)
            if job is None:
                raise LaunchError(f"running under {launcher} ({rank_var}={rank}) without a job id "
                                  f"({' or '.join(job_vars)}): set ICND_GROUP to a name unique to this job, "
                                  "the same for every rank")
            group = _group_name(f"{PREFIX[launcher]}-{job}")
            if launcher == SLURM and env.get("SLURM_STEP_ID"):
                group += "-" + _group_name(env["SLURM_STEP_ID"])
        return Launch(launcher, rank, size, group, env.get("ICND_MEMBER") or f"rank{rank}", socket, timeout,
                      create=launcher != EXEC, nodes=nodes)
    if "ICND_SIZE" in env:
        raise LaunchError("ICND_SIZE is set but ICND_RANK is not (icnd exec sets both)")
    return Launch(None, 0, 1, None, env.get("ICND_MEMBER") or "rank0", socket, timeout, create=False, nodes=nodes)
