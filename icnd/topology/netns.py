"""Network-namespace mode of the topology launcher (``icnd topo up --netns``).

One network namespace per node, one veth pair per link, addresses inside the
namespaces only (the host's own interfaces and routes are never touched):

- namespace of node ``n``: ``icnd-<run id>-<n>`` (``run id``: 6 hex digits
  chosen per launch, so two launches never share a name);
- veth pair of link ``i``: ``ic<run id><i>a`` in the namespace of
  ``links[i].a`` and ``ic<run id><i>b`` in that of ``links[i].b``
  (interface names are at most 15 characters: ``IFNAMSIZ - 1``);
- addresses: link ``i`` gets the ``/30`` at ``10.213.0.0 + 4 i``: end ``a``
  the first host address, end ``b`` the second.  The block is private and
  exists only inside our namespaces (each namespace sees only its own
  links), so it cannot clash with anything on the host;
- ``lo`` is brought up in every namespace; bandwidth limits become a ``tbf``
  qdisc on each end of the veth (``tc qdisc ... tbf rate R burst 32kbit
  latency 400ms``); delay and loss stay in user space (``face link``), since
  the kernel here has no netem.

Cleanup is by name only: `destroy` deletes exactly the namespaces (and, if
one ever ended up in the host namespace, the veths) that it is given -- the
launcher records every name in its state file *before* creating it, so a
crashed launcher's leftovers can be removed by ``icnd topo down`` later.
Deleting a namespace deletes the veth ends inside it, and with them their
peers.  Processes still running inside one of our namespaces (found with
``ip netns pids NAME``) are killed first, so the namespace really goes away.

Everything here needs root and iproute2; `check_available` raises
`NetnsUnavailable` with the reason otherwise.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

import trio

from icnd.errors import Error
from icnd.topology.spec import TopologySpec

__all__ = [
    "ADDRESS_BLOCK",
    "PORT",
    "LinkPlan",
    "NetnsError",
    "NetnsPlan",
    "NetnsUnavailable",
    "check_available",
    "create",
    "destroy",
    "exec_prefix",
    "existing_namespaces",
    "plan",
    "set_bandwidth",
]

ADDRESS_BLOCK = ipaddress.IPv4Network("10.213.0.0/16")
"""Link addresses (inside the namespaces only): one /30 per link."""

PORT = 6363
"""Every daemon listens on UDP and TCP port 6363 of every address in its namespace."""

IFNAMSIZ = 16
NETNS_DIR = "/run/netns"
_CMD_TIMEOUT = 10.0


class NetnsError(Error):
    """Setting up or tearing down network namespaces failed."""


class NetnsUnavailable(NetnsError):
    """Network namespaces cannot be used here (not root, no iproute2, no kernel support)."""


def check_available(*, need_tc: bool = False) -> None:
    """Raise `NetnsUnavailable` saying why, unless this process can create namespaces."""
    if os.geteuid() != 0:
        raise NetnsUnavailable(f"--netns needs root (this process runs as uid {os.geteuid()})")
    if shutil.which("ip") is None:
        raise NetnsUnavailable("--netns needs the `ip` command (iproute2), which is not installed")
    if need_tc and shutil.which("tc") is None:
        raise NetnsUnavailable("bandwidth limits in --netns mode need the `tc` command (iproute2)")
    try:
        proc = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=_CMD_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetnsUnavailable(f"`ip netns list` failed: {exc}") from None
    if proc.returncode != 0:
        raise NetnsUnavailable(f"network namespaces do not work here: {proc.stderr.strip() or proc.returncode}")


@dataclass(frozen=True)
class LinkPlan:
    """Link ``index`` of the spec: veth ``veth_a`` (in ``a``'s namespace) to ``veth_b``."""

    index: int
    a: str
    b: str
    veth_a: str
    veth_b: str
    addr_a: str
    addr_b: str
    prefixlen: int = 30
    bandwidth_mbps: float = 0

    def end(self, node: str) -> tuple[str, str]:
        """``(veth, address)`` of ``node``'s end of the link."""
        if node == self.a:
            return self.veth_a, self.addr_a
        if node == self.b:
            return self.veth_b, self.addr_b
        raise ValueError(f"{node!r} is not an end of link {self.a}-{self.b}")


@dataclass(frozen=True)
class NetnsPlan:
    """Every name and address a netns launch will create (computed before creating anything)."""

    run_id: str
    namespaces: dict[str, str]  # node -> namespace name
    links: list[LinkPlan] = field(default_factory=list)

    def namespace_names(self) -> list[str]:
        return list(self.namespaces.values())

    def veth_names(self) -> list[str]:
        return [name for link in self.links for name in (link.veth_a, link.veth_b)]

    def link_between(self, a: str, b: str) -> LinkPlan:
        for link in self.links:
            if {link.a, link.b} == {a, b}:
                return link
        raise KeyError(f"no link {a}-{b}")

    def addresses(self, node: str) -> list[str]:
        """``node``'s addresses, one per link, in link order."""
        return [link.end(node)[1] for link in self.links if node in (link.a, link.b)]

    def peer_address(self, node: str, peer: str) -> str:
        """The address of ``peer`` on the link joining it to ``node``."""
        return self.link_between(node, peer).end(peer)[1]


def plan(spec: TopologySpec, run_id: str) -> NetnsPlan:
    """Names and addresses for ``spec`` (pure: nothing is created)."""
    if not (run_id and len(run_id) <= 6 and all(c in "0123456789abcdef" for c in run_id)):
        raise ValueError(f"run id must be 1 to 6 lowercase hex digits, got {run_id!r}")
    max_links = ADDRESS_BLOCK.num_addresses // 4
    if len(spec.links) > max_links:
        raise NetnsError(f"{spec.source}: {len(spec.links)} links; --netns mode supports at most {max_links}")
    namespaces = {node: f"icnd-{run_id}-{node}" for node in spec.nodes}
    links = []
    for i, link in enumerate(spec.links):
        veth_a, veth_b = f"ic{run_id}{i}a", f"ic{run_id}{i}b"
        if len(veth_a) >= IFNAMSIZ:
            raise NetnsError(f"{spec.source}: too many links for --netns interface names ({len(spec.links)})")
        base = ADDRESS_BLOCK.network_address + 4 * i
        links.append(
            LinkPlan(i, link.a, link.b, veth_a, veth_b, str(base + 1), str(base + 2),
                     bandwidth_mbps=link.bandwidth_mbps)
        )
    return NetnsPlan(run_id, namespaces, links)


def exec_prefix(namespace: str) -> list[str]:
    """The argv prefix that runs a command inside ``namespace``."""
    return ["ip", "netns", "exec", namespace]


async def _run(*argv: str) -> None:
    try:
        with trio.fail_after(_CMD_TIMEOUT):
            proc = await trio.run_process(list(argv), capture_stdout=True, capture_stderr=True, check=False)
    except (OSError, trio.TooSlowError) as exc:
        raise NetnsError(f"`{' '.join(argv)}` failed: {exc}") from None
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
        raise NetnsError(f"`{' '.join(argv)}` failed: {detail}")


def _rate(mbps: float) -> str:
    return f"{max(1, round(mbps * 1000))}kbit"


async def set_bandwidth(namespace: str, veth: str, mbps: float) -> None:
    """Limit ``veth``'s egress to ``mbps`` with tbf (0: remove the limit)."""
    if mbps > 0:
        await _run("tc", "-n", namespace, "qdisc", "replace", "dev", veth, "root", "tbf",
                   "rate", _rate(mbps), "burst", "32kbit", "latency", "400ms")
    else:
        try:
            await _run("tc", "-n", namespace, "qdisc", "del", "dev", veth, "root")
        except NetnsError:
            pass  # there was no limit


async def create(netplan: NetnsPlan) -> None:
    """Create the namespaces and veth pairs of ``netplan`` (names already recorded by the caller)."""
    for ns in netplan.namespace_names():
        await _run("ip", "netns", "add", ns)
        await _run("ip", "-n", ns, "link", "set", "lo", "up")
    for link in netplan.links:
        ns_a, ns_b = netplan.namespaces[link.a], netplan.namespaces[link.b]
        await _run("ip", "-n", ns_a, "link", "add", link.veth_a, "type", "veth",
                   "peer", "name", link.veth_b, "netns", ns_b)
        for ns, veth, addr in ((ns_a, link.veth_a, link.addr_a), (ns_b, link.veth_b, link.addr_b)):
            await _run("ip", "-n", ns, "addr", "add", f"{addr}/{link.prefixlen}", "dev", veth)
            await _run("ip", "-n", ns, "link", "set", veth, "up")
            if link.bandwidth_mbps > 0:
                await set_bandwidth(ns, veth, link.bandwidth_mbps)


def existing_namespaces() -> set[str]:
    """Names of the namespaces that exist now (``ip netns list``)."""
    try:
        proc = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=_CMD_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}


def _namespace_pids(ns: str) -> list[int]:
    try:
        proc = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=_CMD_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [int(tok) for tok in proc.stdout.split() if tok.isdigit()]


def destroy(namespaces: Sequence[str], veths: Sequence[str] = ()) -> list[str]:
    """Delete exactly the named namespaces (killing what still runs inside) and any
    named veth left in the host namespace.  Idempotent; returns the problems
    (names that could not be removed), empty when all is gone."""
    problems: list[str] = []
    if not namespaces and not veths:
        return problems
    if os.geteuid() != 0 or shutil.which("ip") is None:
        present = [ns for ns in namespaces if os.path.exists(os.path.join(NETNS_DIR, ns))]
        return [f"namespace {ns}: cannot delete it without root and iproute2" for ns in present]
    existing = existing_namespaces()
    for ns in namespaces:
        if ns not in existing and not os.path.exists(os.path.join(NETNS_DIR, ns)):
            continue
        for pid in _namespace_pids(ns):
            if pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        proc = subprocess.run(["ip", "netns", "delete", ns], capture_output=True, text=True,
                              timeout=_CMD_TIMEOUT)
        if proc.returncode != 0 and os.path.exists(os.path.join(NETNS_DIR, ns)):
            problems.append(f"namespace {ns}: {proc.stderr.strip() or proc.returncode}")
    for veth in veths:
        # created inside the namespaces, so normally gone with them; a veth can only be
        # here if something moved it to the host namespace
        if os.path.exists(os.path.join("/sys/class/net", veth)):
            proc = subprocess.run(["ip", "link", "delete", veth], capture_output=True, text=True,
                                  timeout=_CMD_TIMEOUT)
            if proc.returncode != 0 and os.path.exists(os.path.join("/sys/class/net", veth)):
                problems.append(f"interface {veth}: {proc.stderr.strip() or proc.returncode}")
    return problems
