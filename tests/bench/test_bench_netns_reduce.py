"""bench/reduce.py --netns (issue #30): the set-up of the shaped-link benchmark.

The plan is pure and checked here without root: the layouts' topologies, the
routes that carry MPI's TCP through the switch namespaces (walked hop by hop
by an independent forwarding loop over the planned tables), the commands
(never an interface that is not ours), mpirun's command line and the byte
arithmetic.  One real 2-host run (icnd and MPI over 100 Mbit/s tbf links in
namespaces) needs root and namespaces and is skipped with the reason
otherwise; it also checks that nothing it created is left behind."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

from icnd.topology import netns, parse

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """bench/netns_reduce.py (it imports bench/reduce.py and _common from bench/, kept on
    sys.path while these tests run)."""
    saved = list(sys.path)
    sys.path.insert(0, str(BENCH))
    try:
        import netns_reduce

        yield netns_reduce
    finally:
        sys.path[:] = saved
        for name in ("netns_reduce", "reduce", "_common"):
            sys.modules.pop(name, None)


def plan_of(bench: ModuleType, layout: str, members: int = 8) -> tuple[object, object]:
    spec = parse(bench.topology_dict(layout, members), source=f"test {layout}")
    netplan = netns.plan(spec, "a1b2c3")
    return netplan, bench.mgmt_link(netplan, bench.centre(layout))


def test_layouts_shape_every_link_and_aggregate_at_the_centre(bench: ModuleType) -> None:
    star = parse(bench.topology_dict("star", 8, segment_bytes=256 * 1024))
    assert set(star.nodes) == {f"w{i}" for i in range(1, 9)} | {"hub"}
    assert all(link.bandwidth_mbps == 100 and link.transport == "tcp" and "hub" in link.ends for link in star.links)
    group = star.groups["bench"]
    assert list(group.rendezvous) == ["hub"] and group.segment_bytes == 256 * 1024
    assert star.routing == "static"
    tree = parse(bench.topology_dict("tree", 8))
    rates = {frozenset(link.ends): link.bandwidth_mbps for link in tree.links}
    assert rates[frozenset({"agg1", "root"})] == rates[frozenset({"agg2", "root"})] == 200
    assert rates[frozenset({"agg1", "w4"})] == rates[frozenset({"agg2", "w5"})] == 100
    assert len(rates) == 10 and list(tree.groups["bench"].rendezvous) == ["root"]
    assert bench.case_name(16 << 20, 8, "tree") == "allreduce-16MiB-8-tree100"


def _walk(bench: ModuleType, netplan, mgmt, src: str, dest: str) -> list[str]:
    """Forward a packet from namespace `src` (`bench.ROOT`: the root namespace) to address
    `dest` with the planned routes plus each namespace's connected subnets; the nodes it
    visits.  Fails on a loop, a missing route, or a next hop not on the named interface."""
    plan = bench.route_plan(netplan, mgmt)
    ends: dict[str, list[tuple[str, str, str]]] = {}  # node -> (interface, address, subnet)
    for ln in netplan.links:
        for node, (veth, addr) in ((ln.a, (ln.veth_a, ln.addr_a)), (ln.b, (ln.veth_b, ln.addr_b))):
            ends.setdefault(node, []).append((veth, addr, str(ipaddress.ip_interface(f"{addr}/30").network)))
    ends.setdefault(bench.ROOT, []).append((mgmt.root_if, mgmt.root_addr, mgmt.network))
    ends[mgmt.node].append((mgmt.ns_if, mgmt.ns_addr, mgmt.network))
    owner = {addr: node for node, mine in ends.items() for _, addr, _ in mine}
    path, node = [src], src
    for _ in range(8):
        if any(addr == dest for _, addr, _ in ends[node]):
            return path
        connected = [(ifname, subnet) for ifname, _, subnet in ends[node]
                     if ipaddress.ip_address(dest) in ipaddress.ip_network(subnet)]
        if connected:
            node = owner[dest]
        else:
            routes = [r for r in plan[node] if ipaddress.ip_address(dest) in ipaddress.ip_network(r.dest)]
            assert len(routes) == 1, f"{node or 'root'}: {len(routes)} routes to {dest}"
            route = routes[0]
            mine = {ifname: subnet for ifname, _, subnet in ends[node]}
            assert ipaddress.ip_address(route.via) in ipaddress.ip_network(mine[route.dev]), route
            node = owner[route.via]
        path.append(node)
    raise AssertionError(f"loop from {src} to {dest}: {path}")


@pytest.mark.parametrize("layout", ["star", "tree"])
def test_routes_carry_host_to_host_traffic_through_the_switches(bench: ModuleType, layout: str) -> None:
    netplan, mgmt = plan_of(bench, layout)
    hosts = [f"w{i}" for i in range(1, 9)]
    for src in hosts:
        for dst in hosts:
            if src != dst:
                path = _walk(bench, netplan, mgmt, src, netplan.addresses(dst)[0])
                if layout == "star":
                    assert path == [src, "hub", dst]
                else:
                    leaf = {h: "agg1" if int(h[1:]) <= 4 else "agg2" for h in (src, dst)}
                    assert path == ([src, leaf[src], dst] if leaf[src] == leaf[dst]
                                    else [src, leaf[src], "root", leaf[dst], dst])
        # every host reaches mpirun's side of the management link, and the root namespace
        # reaches every host (PMIx both ways)
        assert _walk(bench, netplan, mgmt, src, mgmt.root_addr)[-1] == bench.ROOT
        assert _walk(bench, netplan, mgmt, bench.ROOT, netplan.addresses(src)[0])[-1] == src


def test_commands_touch_only_our_interfaces(bench: ModuleType) -> None:
    netplan, mgmt = plan_of(bench, "tree")
    hosts = [f"w{i}" for i in range(1, 9)]
    cmds = bench.setup_commands(netplan, mgmt, hosts)
    assert cmds[0] == ["ip", "link", "add", mgmt.root_if, "type", "veth", "peer", "name", mgmt.ns_if,
                       "netns", netplan.namespaces["root"]]
    ours = set(netplan.veth_names()) | {mgmt.root_if, mgmt.ns_if}
    for cmd in cmds:
        if "dev" in cmd:
            assert cmd[cmd.index("dev") + 1] in ours, cmd
        if cmd[:2] == ["ip", "route"]:  # the root namespace: only through the management veth
            assert cmd[-1] == mgmt.root_if and ipaddress.ip_network(cmd[3]).subnet_of(bench.LINK_BLOCK), cmd
    forwarding = [c[3] for c in cmds if "net.ipv4.ip_forward=1" in c]
    assert sorted(forwarding) == sorted(netplan.namespaces[n] for n in ("agg1", "agg2", "root"))
    assert bench.teardown_commands(mgmt) == [["ip", "link", "delete", mgmt.root_if]]
    assert len(mgmt.root_if) < 16 and not ipaddress.ip_network(mgmt.network).overlaps(bench.LINK_BLOCK)


def test_host_links_are_the_hosts_veths(bench: ModuleType) -> None:
    netplan, _ = plan_of(bench, "star")
    links = bench.host_links(netplan, ["w1", "w8"])
    assert links["w1"] == (netplan.namespaces["w1"], netplan.link_between("hub", "w1").end("w1")[0])
    with pytest.raises(ValueError, match="hub has 8 links"):
        bench.host_links(netplan, ["hub"])


@pytest.mark.parametrize("algorithm", ["default", "ring"])
def test_mpirun_line_puts_one_rank_in_each_namespace(bench: ModuleType, algorithm: str) -> None:
    netplan, mgmt = plan_of(bench, "star")
    order = [netplan.namespaces[f"w{i}"] for i in range(1, 9)]
    argv = bench.mpi_argv(order, mgmt, algorithm, 16 << 20, 3, python="/py")
    contexts = " ".join(argv).split(" : ")
    assert len(contexts) == 8
    for i, ctx in enumerate(contexts):
        assert f"-np 1 ip netns exec {order[i]} /py {bench.MPI_SCRIPT} " in ctx
        assert "--sizes 16777216" in ctx and "--reps 3" in ctx and "--ops allreduce" in ctx
    head = " ".join(argv[: argv.index("-np")])
    assert "--mca btl tcp,self --mca btl_tcp_if_include 10.213.0.0/16" in head
    assert "-x PMIX_MCA_ptl_tcp_if_include -x PMIX_MCA_ptl_tcp_remote_connections" in head
    assert "--allow-run-as-root --oversubscribe" in head
    assert ("coll_tuned_allreduce_algorithm 4" in head) == (algorithm == "ring")
    assert bench.mpi_env(mgmt) == {"PMIX_MCA_ptl_tcp_if_include": mgmt.root_if,
                                   "PMIX_MCA_ptl_tcp_remote_connections": "1"}


def test_bytes_per_link_per_operation(bench: ModuleType) -> None:
    before = {"w1": (100, 1000), "w2": (0, 0)}
    after = {"w1": (100 + 2 * 3000, 1000 + 2 * 1000), "w2": (2 * 2000, 2 * 2000)}
    got = bench.link_bytes(before, after, 2, 1000)
    assert got == {"up": 1500, "down": 2500, "both": 4000, "max_both": 4000, "x_array": 4.0}
    assert bench.mpi_calls(16 << 20, 3, 1) == 5 and bench.mpi_calls(1024, 3, 200) == 620


def test_netns_options(bench: ModuleType) -> None:
    R = sys.modules["reduce"]
    opts = R.parse_args(["--netns"])
    assert opts.sizes == [1 << 20, 16 << 20, 64 << 20] and opts.members == [8] and opts.reps == 3
    assert opts.layouts == ["star", "tree"] and opts.segment_bytes == bench.SEGMENT_BYTES and opts.extra == []
    assert R.parse_args(["--netns", "--quick"]).layouts == ["star"]
    assert R.parse_args(["--netns", "--segment-bytes", "1MiB"]).segment_bytes == 1 << 20
    for bad in (["--members", "3"], ["--members", "4,8"], ["--netns-layouts", "ring"], ["--layout", "star"]):
        with pytest.raises(SystemExit):
            R.parse_args(["--netns", *bad])


def test_without_root_it_says_why_and_prints_no_line(bench: ModuleType, monkeypatch, capsys) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    opts = sys.modules["reduce"].parse_args(["--netns"])
    assert bench.main(opts) == 0
    out, err = capsys.readouterr()
    assert out == "" and "needs root" in err and "skipped" in err


def _netns_unavailable() -> str | None:
    try:
        netns.check_available(need_tc=True)
    except netns.NetnsUnavailable as exc:
        return str(exc)
    return None


REASON = _netns_unavailable()


def _ours() -> tuple[set[str], set[str]]:
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    return {n for n in names if n.startswith("icnd-")}, {i for i in os.listdir("/sys/class/net") if i.startswith("icm")}


@pytest.mark.skipif(REASON is not None, reason=f"the shaped-link bench needs namespaces: {REASON}")
def test_two_hosts_over_shaped_links_icnd_and_mpi() -> None:
    """A real run: 2 hosts around a switch, 1 MiB, icnd and (if installed) MPI; both move the
    array about once each way per host link (2 ranks: MPI's ring is no worse than aggregation)."""
    before = _ours()
    mpi = shutil.which("mpirun") is not None and subprocess.run(
        [sys.executable, "-c", "import mpi4py"], capture_output=True).returncode == 0
    argv = [sys.executable, str(BENCH / "reduce.py"), "--netns", "--members", "2", "--sizes", "1MiB", "--reps", "1",
            "--netns-layouts", "star", "--json-only", *([] if mpi else ["--no-mpi"])]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (rec,) = [json.loads(t) for t in proc.stdout.splitlines() if t.startswith("{")]
    assert rec["case"] == "allreduce-1MiB-2-star100" and rec["values_checked"] and not rec.get("error")
    assert rec["value"] > 1.9 * (1 << 20) * 8 / 100e6 / 2  # at most ~100 Mbit/s: the link is shaped
    icnd_bytes = rec["bytes_per_link"]["icnd"]
    assert 1.9 <= icnd_bytes["x_array"] <= 3.0 and icnd_bytes["up"] >= 1 << 20 and icnd_bytes["down"] >= 1 << 20
    if mpi:
        assert rec["baseline"] > 0 and rec["baseline_ring"] > 0 and rec["ratio"] > 0
        assert 1.9 <= rec["bytes_per_link"]["mpi"]["x_array"] <= 3.0
    assert _ours() == before, "namespaces or management veths left behind"
