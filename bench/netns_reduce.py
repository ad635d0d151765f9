"""Shaped links (issue #30): icnd's in-network allreduce against MPI in the same
network namespaces, over the same tbf-shaped links (``bench/reduce.py --netns``).

Why this benchmark exists: on links that are the bottleneck, an MPI ring
allreduce moves about ``2 (N - 1) / N`` times the array over every host's
link in each direction, while aggregation on the way moves it once up and
once down.  The loopback cannot show that (there the CPUs are the
bottleneck); 100 Mbit/s links can.

Layouts (the node names of bench/reduce.py's `layout_nodes`):

- ``star``: hosts ``w1..wN`` each linked to one switch node ``hub``, every
  link shaped to ``HOST_MBPS`` (the launcher's ``bandwidth_mbps``: a tbf
  qdisc on both veth ends); rendezvous ``hub``;
- ``tree``: ``w1..wN/2`` under leaf switch ``agg1``, the rest under
  ``agg2``, both under ``root``; host links ``HOST_MBPS``, switch links
  ``SWITCH_MBPS``; rendezvous ``root``.

icnd: ``icnd.topology.launch(spec, netns=True)``: one namespace and one
daemon per node (hosts and switches), link-state routing; one client per
host (all in this process, through the hosts' Unix sockets), each calling
``allreduce`` on float32 arrays, checked against numpy's answer.

MPI, in the very same namespaces while the icnd daemons sit idle: the
switch namespaces forward IPv4, every namespace has a route to every link
subnet it is not on (via the neighbour on the shortest path: `route_plan`),
so rank-to-rank TCP crosses the same shaped links.  ``mpirun`` runs in the
root namespace; its ranks (``ip netns exec <host ns> python
bench/mpi_allreduce.py``, one per host, MPMD form) reach its PMIx server
over an unshaped management veth between the root namespace and the
central switch (`MgmtLink`), as issue #30 found works for Open MPI 4.1:
``PMIX_MCA_ptl_tcp_if_include=<root end>`` and
``PMIX_MCA_ptl_tcp_remote_connections=1`` (in the environment and with
``-x``), BTL ``tcp,self`` restricted to the link block 10.213.0.0/16.  Two
launches per size: Open MPI's default algorithm (the baseline) and the ring
(``coll_tuned_allreduce_algorithm 4``).

Bytes per link: every host link's interface counters
(``/sys/class/net/<veth>/statistics/{rx,tx}_bytes`` read inside the host's
namespace) before and after; icnd around each timed repetition, MPI around
the whole launch divided by its calls (warm-up and timed, so the Barrier and
the timing reduction of each repetition are counted too: a few hundred
bytes).

Cleanup: the namespaces are the launcher's (deleted on exit, error or
Ctrl-C, processes inside killed first); the management veth is ours and is
deleted in a ``finally`` (deleting it also removes the routes through it; it
would also vanish with the switch's namespace).  Nothing else of the host is
touched, and nothing is set up if the host already routes the link block or
the management subnet.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_common.py, bench/reduce.py
import _common as C  # noqa: E402
import reduce as R  # noqa: E402  (bench/reduce.py: layouts, checks, meters, MPI result parsing)

import numpy as np  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
HOST_MBPS = 100.0
SWITCH_MBPS = 200.0  # tree: leaf <-> root
LAYOUTS = ("star", "tree")
SIZES = (MiB, 16 * MiB, 64 * MiB)
QUICK_SIZES = (MiB,)
MEMBERS = 8
REPS = 3
TARGET_RATIO = 0.67  # issue #30: icnd at most 0.67x MPI's time ...
TARGET_FROM = 16 * MiB  # ... at 16 MiB and above
LINK_BLOCK = ipaddress.IPv4Network("10.213.0.0/16")  # icnd.topology.netns.ADDRESS_BLOCK
MGMT_BLOCK = ipaddress.IPv4Network("10.214.0.0/16")  # one /30 per run for the management veth
ROOT = ""  # the root namespace, as a node of the route graph
SEGMENT_BYTES = MiB
"""The group's segments (``--segment-bytes`` overrides): measured best of 256 KiB..2 MiB at 16 and
64 MiB (docs/performance.md "Shaped links"; 256 KiB is a little faster at 1 MiB, whose 4
segments then pipeline over the hops).  icnd's windows count segments (8 per consumer, 4 per
next hop) up to 8 MiB, so larger segments keep more in flight over the links' round trip;
before issue #30's fixes they also made sub-requests outlive their RTO and be sent twice."""
ROUTING = "static"
"""icnd's routes: derived from the graph (``--netns-routing link-state``: the nodes' own
link-state routing, which holds under this load since issue #30's fixes; before them the
duplicated segments kept seconds of queue on a link, hellos waited behind it past the 3 s
dead interval and a round failed with "no route")."""
MPI_SCRIPT = C.BENCH_DIR / "mpi_allreduce.py"
MPI_ALGORITHMS = {  # label -> extra mpirun flags
    "default": [],
    "ring": ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_allreduce_algorithm", "4"],
}
MPI_LAUNCH_TIMEOUT = 900.0  # s, one mpirun (64 MiB x 5 calls over 100 Mbit/s takes ~50 s)
READY_TIMEOUT = 60.0  # s: 9-11 daemons in namespaces on 2 cores, then link-state convergence
CMD_TIMEOUT = 10.0  # s, one ip/tc/sysctl command


class SetupError(Exception):
    """The MPI routing could not be set up (the message says which command and why)."""


# --- the plan (pure) ----------------------------------------------------------------------------------


def case_name(nbytes: int, members: int, layout: str) -> str:
    """``allreduce-16MiB-8-star100``: the layout and its host link rate."""
    return f"allreduce-{R.size_label(nbytes)}-{members}-{layout}{HOST_MBPS:g}"


def topology_dict(layout: str, members: int, *, segment_bytes: int = 0, transport: str = "tcp",
                  routing: str = ROUTING, host_mbps: float = HOST_MBPS,
                  switch_mbps: float = SWITCH_MBPS) -> dict[str, Any]:
    """The topology (as `icnd.topology.parse` takes it) of `layout` with `members` hosts:
    host links at `host_mbps`, switch-to-switch links at `switch_mbps`, group
    ``bench`` of the hosts with the central switch as rendezvous, `routing` as in
    interface section 12."""
    workers, switches = R.layout_nodes(members, layout)
    links = [{"ends": [s, n], "bandwidth_mbps": host_mbps if n in workers else switch_mbps, "transport": transport}
             for s, neighbours in switches.items() for n in neighbours]
    group: dict[str, Any] = {"members": workers, "rendezvous": [centre(layout)]}
    if segment_bytes:
        group["segment_bytes"] = segment_bytes
    return {"nodes": {name: {} for name in [*workers, *switches]}, "links": links, "groups": {R.GROUP: group},
            "routing": routing}


def centre(layout: str) -> str:
    """The switch every host is fewest hops from: the rendezvous, and where the management link goes."""
    return "hub" if layout == "star" else "root"


@dataclass(frozen=True)
class MgmtLink:
    """The unshaped veth pair between the root namespace (``root_if``, where mpirun's
    PMIx server listens) and the central switch's namespace (``ns_if``)."""

    node: str
    namespace: str
    root_if: str
    ns_if: str
    root_addr: str
    ns_addr: str
    prefixlen: int = 30

    @property
    def network(self) -> str:
        return str(ipaddress.IPv4Interface(f"{self.root_addr}/{self.prefixlen}").network)


def mgmt_link(netplan: Any, node: str) -> MgmtLink:
    """The management link of a launch (`netplan`: its `icnd.topology.netns.NetnsPlan`) to
    `node`: names from the run id (so two runs never share one), a /30 of `MGMT_BLOCK`."""
    run_id = netplan.run_id
    base = MGMT_BLOCK.network_address + 4 * (int(run_id, 16) % (MGMT_BLOCK.num_addresses // 4))
    return MgmtLink(node, netplan.namespaces[node], f"icm{run_id}r", f"icm{run_id}s", str(base + 1), str(base + 2))


@dataclass(frozen=True)
class Route:
    """``ip route add <dest> via <via> dev <dev>`` in one namespace."""

    dest: str
    via: str
    dev: str


@dataclass(frozen=True)
class _Edge:
    ends: tuple[str, str]
    network: str
    at: dict[str, tuple[str, str]]  # node -> (interface, address) of its end


def _edges(netplan: Any, mgmt: MgmtLink) -> list[_Edge]:
    edges = [_Edge((ln.a, ln.b), str(ipaddress.IPv4Interface(f"{ln.addr_a}/{ln.prefixlen}").network),
                   {ln.a: (ln.veth_a, ln.addr_a), ln.b: (ln.veth_b, ln.addr_b)}) for ln in netplan.links]
    edges.append(_Edge((ROOT, mgmt.node), mgmt.network,
                       {ROOT: (mgmt.root_if, mgmt.root_addr), mgmt.node: (mgmt.ns_if, mgmt.ns_addr)}))
    return edges


def _first_hops(source: str, adjacency: Mapping[str, list[str]]) -> tuple[dict[str, int], dict[str, str]]:
    """Breadth-first from `source`: (hops to every node, the neighbour of `source` on that path).
    Neighbours are visited in sorted order, so ties always break the same way."""
    dist = {source: 0}
    hop: dict[str, str] = {}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        for nxt in sorted(adjacency[node]):
            if nxt not in dist:
                dist[nxt] = dist[node] + 1
                hop[nxt] = nxt if node == source else hop[node]
                queue.append(nxt)
    return dist, hop


def route_plan(netplan: Any, mgmt: MgmtLink) -> dict[str, list[Route]]:
    """Static routes that make every link subnet reachable from every namespace (and from
    the root namespace, key `ROOT`, through the management link): for each subnet a
    namespace is not on, via the neighbour on a shortest path to the subnet's nearer end.
    A tree (our layouts) has exactly one such path, so traffic takes the links icnd uses."""
    edges = _edges(netplan, mgmt)
    adjacency: dict[str, list[str]] = {}
    for e in edges:
        a, b = e.ends
        adjacency.setdefault(a, []).append(b)
        adjacency.setdefault(b, []).append(a)
    plan: dict[str, list[Route]] = {}
    for source in [ROOT, *netplan.namespaces]:
        dist, hop = _first_hops(source, adjacency)
        routes = []
        for e in edges:
            if source in e.ends:
                continue  # connected: the kernel has the route
            reachable = [end for end in e.ends if end in dist]
            if not reachable:
                continue
            nearer = min(reachable, key=lambda end: (dist[end], end))
            nh = hop[nearer]
            via_edge = next(x for x in edges if set(x.ends) == {source, nh})
            routes.append(Route(e.network, via_edge.at[nh][1], via_edge.at[source][0]))
        plan[source] = routes
    return plan


def forwarders(netplan: Any, hosts: Iterable[str]) -> list[str]:
    """The namespaces that must forward IPv4: every node that is not a host (the switches)."""
    hosts = set(hosts)
    return [node for node in netplan.namespaces if node not in hosts]


def setup_commands(netplan: Any, mgmt: MgmtLink, hosts: Iterable[str]) -> list[list[str]]:
    """Every command that prepares the namespaces of `netplan` for MPI, in order: the
    management veth (created in the root namespace with its peer in the switch's
    namespace), forwarding on the switches, the routes of `route_plan`."""
    ns = netplan.namespaces
    cmds = [
        ["ip", "link", "add", mgmt.root_if, "type", "veth", "peer", "name", mgmt.ns_if, "netns", mgmt.namespace],
        ["ip", "addr", "add", f"{mgmt.root_addr}/{mgmt.prefixlen}", "dev", mgmt.root_if],
        ["ip", "link", "set", mgmt.root_if, "up"],
        ["ip", "-n", mgmt.namespace, "addr", "add", f"{mgmt.ns_addr}/{mgmt.prefixlen}", "dev", mgmt.ns_if],
        ["ip", "-n", mgmt.namespace, "link", "set", mgmt.ns_if, "up"],
    ]
    cmds += [["ip", "netns", "exec", ns[node], "sysctl", "-qw", "net.ipv4.ip_forward=1"]
             for node in forwarders(netplan, hosts)]
    for node, routes in route_plan(netplan, mgmt).items():
        where = ["ip"] if node == ROOT else ["ip", "-n", ns[node]]
        cmds += [[*where, "route", "add", r.dest, "via", r.via, "dev", r.dev] for r in routes]
    return cmds


def teardown_commands(mgmt: MgmtLink) -> list[list[str]]:
    """Deleting the root end deletes its peer and every route through it."""
    return [["ip", "link", "delete", mgmt.root_if]]


def host_links(netplan: Any, hosts: Iterable[str]) -> dict[str, tuple[str, str]]:
    """host -> (its namespace, the veth of its one link): where its link's counters are read."""
    out = {}
    for host in hosts:
        mine = [ln for ln in netplan.links if host in (ln.a, ln.b)]
        if len(mine) != 1:
            raise ValueError(f"host {host} has {len(mine)} links; the shaped-link bench expects one")
        out[host] = (netplan.namespaces[host], mine[0].end(host)[0])
    return out


def mpi_env(mgmt: MgmtLink) -> dict[str, str]:
    """PMIx settings that let ranks in the namespaces reach mpirun's server over the management link."""
    return {"PMIX_MCA_ptl_tcp_if_include": mgmt.root_if, "PMIX_MCA_ptl_tcp_remote_connections": "1"}


def mpi_argv(namespaces: list[str], mgmt: MgmtLink, algorithm: str, nbytes: int, reps: int,
             python: str = sys.executable) -> list[str]:
    """One mpirun: rank i in ``namespaces[i]`` (MPMD form, one ``-np 1`` app context per
    namespace), ``bench/mpi_allreduce.py`` at one size."""
    env_flags = [flag for var in mpi_env(mgmt) for flag in ("-x", var)]
    argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
            "--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", str(LINK_BLOCK),
            *env_flags, *MPI_ALGORITHMS[algorithm]]
    for i, ns in enumerate(namespaces):
        if i:
            argv.append(":")
        argv += ["-np", "1", "ip", "netns", "exec", ns, python, str(MPI_SCRIPT), "--label", f"netns-{algorithm}",
                 "--reps", str(reps), "--sizes", str(nbytes), "--ops", "allreduce"]
    return argv


def mpi_calls(nbytes: int, reps: int, inner: int) -> int:
    """Allreduce calls one bench/mpi_allreduce.py launch makes at one size (its `warmup_calls`
    and `inner` per repetition): what the link counters of the launch are divided by."""
    return (20 if nbytes <= 4096 else 2) + reps * inner


def link_bytes(before: Mapping[str, tuple[int, int]], after: Mapping[str, tuple[int, int]],
               ops: int, nbytes: int) -> dict[str, Any]:
    """Bytes per host link per operation from two counter snapshots (host -> (rx, tx) at its
    end: tx is up toward the switch, rx down): the mean over hosts of up, down and both,
    the largest link's both, and both as a multiple of the array."""
    up = [(after[h][1] - before[h][1]) / ops for h in before]
    down = [(after[h][0] - before[h][0]) / ops for h in before]
    total = [u + d for u, d in zip(up, down)]
    mean_total = statistics.fmean(total)
    return {"up": round(statistics.fmean(up)), "down": round(statistics.fmean(down)), "both": round(mean_total),
            "max_both": round(max(total)), "x_array": R._r(mean_total / nbytes, 3)}


# --- doing it (root) ----------------------------------------------------------------------------------


def unavailable() -> str | None:
    """Why the shaped-link bench cannot run here, or None."""
    from icnd.topology import netns

    try:
        netns.check_available(need_tc=True)
    except netns.NetnsUnavailable as exc:
        return str(exc)
    return None


def _run(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=CMD_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"`{' '.join(argv)}` failed: {exc}") from None
    if proc.returncode != 0:
        raise SetupError(f"`{' '.join(argv)}` failed: {proc.stderr.strip() or f'exit code {proc.returncode}'}")
    return proc.stdout


def host_clash(mgmt: MgmtLink) -> str | None:
    """Whether the root namespace already routes the link block or the management subnet
    (then our routes would change the host's own routing: refuse), or None."""
    ours = [LINK_BLOCK, ipaddress.IPv4Network(mgmt.network)]
    for line in _run(["ip", "-4", "route", "show", "table", "all"]).splitlines():
        dest = line.split()[0] if line.split() else ""
        if dest in ("default", "local", "broadcast", "unreachable", "blackhole", "prohibit"):
            dest = line.split()[1] if dest != "default" and len(line.split()) > 1 else ""
        try:
            net = ipaddress.IPv4Network(dest, strict=False)
        except ValueError:
            continue
        if net.prefixlen == 0:
            continue
        if any(net.overlaps(o) for o in ours):
            return f"the host already routes {net} (`{line.strip()}`), which overlaps {', '.join(map(str, ours))}"
    return None


def setup_mpi_routing(netplan: Any, mgmt: MgmtLink, hosts: list[str]) -> None:
    """Run `setup_commands`; the caller runs `teardown_mpi_routing` in a finally whatever happens."""
    clash = host_clash(mgmt)
    if clash:
        raise SetupError(f"not touching the host's routing: {clash}")
    for argv in setup_commands(netplan, mgmt, hosts):
        _run(argv)


def teardown_mpi_routing(mgmt: MgmtLink) -> list[str]:
    """Delete the management veth (if it exists); returns the problems."""
    problems = []
    if os.path.exists(f"/sys/class/net/{mgmt.root_if}"):
        for argv in teardown_commands(mgmt):
            try:
                _run(argv)
            except SetupError as exc:
                problems.append(str(exc))
    return problems


def read_counters(links: Mapping[str, tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """host -> (rx_bytes, tx_bytes) of its link's veth, read in its namespace."""
    out = {}
    for host, (ns, veth) in links.items():
        stats = f"/sys/class/net/{veth}/statistics"
        rx, tx = _run(["ip", "netns", "exec", ns, "cat", f"{stats}/rx_bytes", f"{stats}/tx_bytes"]).split()
        out[host] = (int(rx), int(tx))
    return out


async def run_mpi(opts: Any, netplan: Any, mgmt: MgmtLink, hosts: list[str], links: Mapping[str, tuple[str, str]],
                  algorithm: str, nbytes: int, workdir: str) -> R.Timing:
    """One mpirun at one size in the namespaces: time per call (median over reps, max over
    ranks) and the bytes per host link per call."""
    import json

    import trio

    argv = mpi_argv([netplan.namespaces[h] for h in hosts], mgmt, algorithm, nbytes, opts.reps)
    log_path = os.path.join(workdir, f"mpi-{algorithm}-{R.size_label(nbytes)}.log")
    C.log(f"  mpi-{algorithm} {R.size_label(nbytes)}: {' '.join(argv[:24])} ...", opts.quiet)
    before = await trio.to_thread.run_sync(read_counters, links)
    with open(log_path, "wb") as log:
        try:
            with trio.fail_after(MPI_LAUNCH_TIMEOUT):
                proc = await trio.run_process(argv, capture_stdout=True, stderr=log, check=False,
                                              env={**os.environ, **mpi_env(mgmt)})
        except trio.TooSlowError:
            return R.Timing(error=f"mpirun did not finish within {MPI_LAUNCH_TIMEOUT:g} s; {log_path}")
    after = await trio.to_thread.run_sync(read_counters, links)
    recs = [json.loads(t) for t in proc.stdout.decode("utf-8", "replace").splitlines() if t.startswith("{")]
    if proc.returncode != 0 or not recs:
        return R.Timing(error=f"mpirun exited with {proc.returncode}; {log_path}: {R.log_excerpt(log_path)}")
    rec = recs[0]
    timing = R.Timing(rec["median_s"], rec["min_s"], rec["max_s"], rec["reps"],
                      {"version": f"{rec['mpi']}; mpi4py {rec['mpi4py']}",
                       "bytes_per_link": link_bytes(before, after, mpi_calls(nbytes, rec["reps"], rec["inner"]),
                                                    nbytes)})
    if not rec.get("ok"):
        timing.error = rec.get("error", "wrong result")
    C.log(f"    {R.fmt_time(timing.median)} ({R.fmt_time(timing.lo)}..{R.fmt_time(timing.hi)}), "
          f"{timing.extra['bytes_per_link']['x_array']}x the array per host link"
          + (f" WRONG: {timing.error}" if timing.error else ""), opts.quiet)
    return timing


COUNTERS = ("agg_retransmissions", "agg_duplicates", "agg_late", "unsolicited_data", "pit_aggregated")
"""Node counters summed over the timed rounds: why a link carries more than the array once each way."""


async def counters(net: Any) -> dict[str, int]:
    """`COUNTERS` summed over every node."""
    total = dict.fromkeys(COUNTERS, 0)
    for node in net.spec.nodes:
        got = (await net.status(node))["counters"]
        for k in COUNTERS:
            total[k] += got.get(k, 0)
    return total


async def run_icnd(opts: Any, net: Any, bench: R.IcndBench, pids: Mapping[str, int | None],
                   links: Mapping[str, tuple[str, str]], nbytes: int) -> R.Timing:
    """Warm-up, then `opts.reps` timed allreduce rounds (`bench`: one per launch, so rounds
    never repeat across sizes), each checked and its host links counted; also how busy each
    node was (CPU seconds / wall seconds over the timed rounds)."""
    import trio

    members = len(bench.clients)
    n = nbytes // 4
    arrays = [np.full(n, i + 1, dtype=np.float32) for i in range(members)]
    expected = np.full(n, members * (members + 1) / 2, dtype=np.float32)
    samples: list[float] = []
    counted: list[dict[str, Any]] = []
    try:
        warm, _ = await bench.allreduce(arrays, expected, timed=False)
        counters0 = await counters(net)
        cpu0 = {name: C.cpu_seconds(p) for name, p in pids.items() if p}
        self0 = C.self_cpu_seconds()
        for _ in range(opts.reps):
            before = await trio.to_thread.run_sync(read_counters, links)
            elapsed, _ = await bench.allreduce(arrays, expected, timed=True)
            after = await trio.to_thread.run_sync(read_counters, links)
            samples.append(elapsed)
            counted.append(link_bytes(before, after, 1, nbytes))
        wall = sum(samples)
        busy = {name: R._r((C.cpu_seconds(p) - cpu0[name]) / wall, 2) for name, p in pids.items() if p}
        busy["clients"] = R._r((C.self_cpu_seconds() - self0) / wall, 2)
        counters1 = await counters(net)
    except Exception as exc:
        return R.Timing(error=f"{R.describe(exc)} (after {len(samples)} timed reps)")
    per_link = {k: (R._r(statistics.median(c[k] for c in counted), 3) if k == "x_array"
                    else round(statistics.median(c[k] for c in counted))) for k in counted[0]}
    return R.Timing.of(samples, warmup_s=R._r(warm), bytes_per_link=per_link, cpu_busy=busy,
                       node_counters={k: counters1[k] - counters0[k] for k in COUNTERS})


async def run_layout(opts: Any, layout: str) -> dict[int, dict[str, R.Timing]]:
    """Every size of `opts.sizes` on one launch of `layout`: MPI (each algorithm), then icnd."""
    import trio

    from icnd.topology import launch, parse

    members = opts.members[0]
    spec = parse(topology_dict(layout, members, segment_bytes=opts.segment_bytes, transport=opts.link_transport,
                               routing=opts.netns_routing),
                 source=f"bench/reduce.py --netns {layout}-{members}")
    hosts, _ = R.layout_nodes(members, layout)
    results: dict[int, dict[str, R.Timing]] = {n: {} for n in opts.sizes}
    workdir = tempfile.mkdtemp(prefix="icnd-netns-bench-")
    mpi_error = "skipped (--no-mpi)" if opts.no_mpi else R.mpi_unavailable()
    t0 = time.perf_counter()
    async with launch(spec, netns=True, log_level="warning", ready_timeout=READY_TIMEOUT,
                      workdir=os.path.join(workdir, "topology")) as net:  # kept, with the daemons' logs, on failure
        C.log(f"{layout}: {len(spec.nodes)} namespaces up and routed in {time.perf_counter() - t0:.1f} s "
              f"(run {net.netplan.run_id})", opts.quiet)
        links = host_links(net.netplan, hosts)
        mgmt = mgmt_link(net.netplan, centre(layout))
        bench: R.IcndBench | None = None
        pids: dict[str, int | None] = {}
        try:
            if not mpi_error:
                try:
                    await trio.to_thread.run_sync(setup_mpi_routing, net.netplan, mgmt, hosts)
                except SetupError as exc:
                    mpi_error = str(exc)
            for nbytes in opts.sizes:
                for algorithm in MPI_ALGORITHMS:
                    results[nbytes][f"mpi-{algorithm}"] = (
                        R.Timing(error=mpi_error) if mpi_error else
                        await run_mpi(opts, net.netplan, mgmt, hosts, links, algorithm, nbytes, workdir))
                if opts.no_icnd:
                    results[nbytes]["icnd"] = R.Timing(error="skipped (--no-icnd)")
                    continue
                if bench is None:
                    clients = [await net.connect(h) for h in hosts]
                    pids = {name: net[name].pid for name in spec.nodes}
                    bench = R.IcndBench(clients, R.CpuMeter(pids, hosts), opts.timeout)
                t = results[nbytes]["icnd"] = await run_icnd(opts, net, bench, pids, links, nbytes)
                C.log(f"  icnd {R.size_label(nbytes)}: " + (f"FAILED: {t.error}" if t.error else
                      f"{R.fmt_time(t.median)} ({R.fmt_time(t.lo)}..{R.fmt_time(t.hi)}), "
                      f"{t.extra['bytes_per_link']['x_array']}x the array per host link; busy {t.extra['cpu_busy']}; "
                      f"{t.extra['node_counters']}"),
                      opts.quiet)
        finally:
            problems = teardown_mpi_routing(mgmt)
            for p in problems:
                C.log(f"cleanup: {p}", False)
    if not any(t.error and not t.error.startswith("skipped") for by in results.values() for t in by.values()):
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        C.log(f"{layout}: logs kept in {workdir}", False)
    return results


def line(opts: Any, layout: str, nbytes: int, by: dict[str, R.Timing]) -> dict[str, Any]:
    """The JSON line of one case."""
    members = opts.members[0]
    mine, base, ring = by["icnd"], by["mpi-default"], by["mpi-ring"]
    value = None if mine.error else mine.median
    bvalue = None if base.error else base.median
    rvalue = None if ring.error else ring.median
    ratio = value / bvalue if value and bvalue else None
    rec: dict[str, Any] = {
        "bench": "reduce", "case": case_name(nbytes, members, layout), "op": "allreduce", "bytes": nbytes,
        "members": members, "value": R._r(value), "unit": "s",
        **{k: v for k, v in mine.summary().items() if k not in ("median_s", "bytes_per_link")},
        "baseline": R._r(bvalue), "baseline_name": "mpi-tcp-netns (Open MPI default algorithm)",
        "ratio": R._r(ratio, 3),
        "baseline_ring": R._r(rvalue), "ratio_ring": R._r(value / rvalue, 3) if value and rvalue else None,
        "bytes_per_link": {"icnd": mine.extra.get("bytes_per_link"), "mpi": base.extra.get("bytes_per_link"),
                           "mpi_ring": ring.extra.get("bytes_per_link")},
        "layout": layout, "host_link_mbps": HOST_MBPS, "switch_link_mbps": SWITCH_MBPS if layout == "tree" else None,
        "rendezvous": centre(layout), "link_transport": opts.link_transport, "routing": opts.netns_routing,
        "segment_bytes": opts.segment_bytes or R.DEFAULT_SEG_BYTES, "values_checked": True,
        "mpi": {"default": base.summary(), "ring": ring.summary()},
    }
    if nbytes >= TARGET_FROM:
        rec["target"] = TARGET_RATIO
        rec["met"] = ratio is not None and ratio <= TARGET_RATIO
    if mine.error:
        rec["error"] = mine.error
    return rec


def _x(rec: dict[str, Any], side: str) -> str:
    b = rec["bytes_per_link"].get(side)
    return f"{b['x_array']:.2f}" if b else "-"


def main(opts: Any) -> int:
    """``bench/reduce.py --netns``: exit 0 with a message and no lines without root."""
    import trio

    why = unavailable()
    if why:
        print(f"reduce --netns: skipped: {why}. The shaped-link benchmark needs root, network namespaces and "
              "tc (iproute2); run it as root.", file=sys.stderr)
        return 0
    t0 = time.perf_counter()
    C.log(f"reduce --netns: {opts.members[0]} hosts, layouts {opts.layouts}, sizes "
          f"{[R.size_label(s) for s in opts.sizes]}, {opts.reps} reps, host links {HOST_MBPS:g} Mbit/s (tbf)",
          opts.quiet)
    lines: list[dict[str, Any]] = []
    for layout in opts.layouts:
        try:
            results = trio.run(run_layout, opts, layout)
        except Exception as exc:
            error = R.describe(exc)
            C.log(f"{layout}: FAILED: {error}", False)
            results = {n: {k: R.Timing(error=error) for k in ("icnd", "mpi-default", "mpi-ring")} for n in opts.sizes}
        lines += [line(opts, layout, n, results[n]) for n in opts.sizes]
    if not opts.quiet:
        print()
        print(f"{'case':<28} {'icnd':>10} {'mpi':>10} {'mpi-ring':>10} {'ratio':>6} {'ring':>6}  "
              "bytes per host link / array (icnd, mpi, ring)")
        for rec in lines:
            shown = R.fmt_time(rec["value"]) if not rec.get("error") else "FAILED"
            print(f"{rec['case']:<28} {shown:>10} {R.fmt_time(rec['baseline']):>10} "
                  f"{R.fmt_time(rec['baseline_ring']):>10} {R._fmt_ratio(rec['ratio']):>6} "
                  f"{R._fmt_ratio(rec['ratio_ring']):>6}  {_x(rec, 'icnd')}, {_x(rec, 'mpi')}, {_x(rec, 'mpi_ring')}"
                  + ("" if "met" not in rec else f"  target {TARGET_RATIO}: {'met' if rec['met'] else 'MISSED'}"))
        print(f"star: w1..w{opts.members[0]} around hub; tree: two leaves of {opts.members[0] // 2} under root "
              f"({SWITCH_MBPS:g} Mbit/s); host links {HOST_MBPS:g} Mbit/s tbf; ratio = icnd / MPI (default "
              f"algorithm), ring = icnd / MPI ring; {time.perf_counter() - t0:.0f} s")
        print()
    for rec in lines:
        C.emit_json(rec)
    return 1 if any(rec.get("error") for rec in lines) else 0
