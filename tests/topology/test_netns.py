"""The topology launcher in network-namespace mode (root only).

Skipped, with the reason, where namespaces cannot be created.  Checks that
every namespace the launcher records exists while it runs and none is left
afterwards -- also when the launcher is killed with SIGKILL and `topo down`
cleans up after it."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
from pathlib import Path

import pytest
import trio

import icnd
from icnd import Interest, Name
from icnd.testing.processes import gone, wait_exit
from icnd.topology import netns, parse
from icnd.topology.launcher import STATE_FILE, launch, topo_down

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
LINE3 = TOPOLOGIES / "line3.toml"


def _unavailable() -> str | None:
    try:
        netns.check_available(need_tc=True)
    except netns.NetnsUnavailable as exc:
        return str(exc)
    probe = f"icnd-probe-{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True)
    return None


REASON = _unavailable()
needs_netns = pytest.mark.skipif(REASON is not None, reason=f"--netns mode unavailable: {REASON}")


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


async def test_netns_needs_root(monkeypatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(netns.NetnsUnavailable, match="needs root"):
        async with launch(LINE3, netns=True):
            pass


def test_plan_names_fit_and_addresses_are_per_link() -> None:
    spec = parse({"nodes": {f"n{i}": {} for i in range(4)},
                  "links": [{"ends": [f"n{i}", f"n{i + 1}"]} for i in range(3)]})
    plan = netns.plan(spec, "a1b2c3")
    assert plan.namespaces["n0"] == "icnd-a1b2c3-n0"
    assert all(len(v) <= 15 for v in plan.veth_names())
    assert len(set(plan.veth_names())) == 6
    assert plan.peer_address("n1", "n2") == "10.213.0.6" and plan.peer_address("n2", "n1") == "10.213.0.5"
    assert plan.addresses("n1") == ["10.213.0.2", "10.213.0.5"]


@needs_netns
async def test_line3_in_namespaces(workdir) -> None:
    spec = parse(
        {
            "nodes": {"a": {}, "b": {}, "c": {}},
            "links": [{"ends": ["a", "b"]}, {"ends": ["b", "c"], "bandwidth_mbps": 50, "delay_ms": 5}],
        },
        "line3-netns",
    )
    with trio.fail_after(40):
        async with launch(spec, workdir=workdir, netns=True) as net:
            state = json.loads(Path(workdir, STATE_FILE).read_text())
            recorded = set(state["netns"])
            assert state["mode"] == "netns" and len(recorded) == 3
            assert recorded <= namespaces()
            assert {h.netns for h in net.nodes.values()} == recorded
            pids = [h.pid for h in net.nodes.values()]
            # addresses exist only inside the namespaces
            b = net.nodes["b"]
            inside = subprocess.run(["ip", "-n", b.netns, "-o", "addr"], capture_output=True, text=True).stdout
            assert all(addr in inside for addr in b.addresses) and len(b.addresses) == 2
            host = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
            assert not any(f" {addr}/" in host for addr in b.addresses)
            # bandwidth as tbf on both ends of the b-c veth
            veth_b, _ = net.netplan.link_between("b", "c").end("b")
            qdisc = subprocess.run(["tc", "-n", b.netns, "qdisc", "show", "dev", veth_b],
                                   capture_output=True, text=True).stdout
            assert "tbf" in qdisc

            c = await net.connect("c")
            a = await net.connect("a")
            await c.publish("/node/c/hello", b"across namespaces")
            assert (await a.fetch("/node/c/hello", timeout=8)).content == b"across namespaces"
            start = trio.current_time()
            await a.express(Interest(Name(f"/node/c/ping/{secrets.token_hex(4)}"), must_be_fresh=True),
                            timeout=4, retx=None)
            assert trio.current_time() - start >= 0.010  # 5 ms each way on b-c
            await net.cut("a", "b")
            with pytest.raises((icnd.Timeout, icnd.Nacked)):
                await a.fetch("/node/c/other", timeout=1.0)
            await net.heal("a", "b")
            await c.publish("/node/c/after", b"healed")
            assert (await a.fetch("/node/c/after", timeout=8)).content == b"healed"
    assert not (recorded & namespaces())
    assert all(gone(pid) for pid in pids)
    assert not [p for p in os.listdir(workdir) if p.endswith(".sock")]
    assert not os.path.exists(os.path.join(workdir, STATE_FILE))


@needs_netns
async def test_a_large_object_crosses_the_shipped_dumbbell_bottleneck(workdir) -> None:
    """#19: across dumbbell's tbf-shaped 10 Mbit/s link, a 4 MB object with the default 1 MiB
    segments arrives (it used to fail: "seg=0: no answer after 8 attempts")."""
    blob = os.urandom(4 * 1000 * 1000)
    with trio.fail_after(60):
        async with launch(TOPOLOGIES / "dumbbell.toml", workdir=workdir, netns=True) as net:
            r2, l2 = await net.connect("r2"), await net.connect("l2")
            await r2.publish_object("/node/r2/big", blob)
            started = trio.current_time()
            assert await l2.fetch_object("/node/r2/big", timeout=30) == blob
            took = trio.current_time() - started
            assert took >= 4 * 8 / 10 * 0.9  # it did cross the 10 Mbit/s link (~3.2 s at least)


@needs_netns
async def test_topo_down_after_the_launcher_was_killed(workdir, tmp_path, background) -> None:
    proc, state = await background(LINE3, workdir, tmp_path / "up.out", netns=True, timeout=30)
    recorded = set(state["netns"])
    assert len(recorded) == 3 and recorded <= namespaces()
    pids = [info["pid"] for info in state["nodes"].values()]
    proc.send_signal(signal.SIGKILL)
    await wait_exit(proc, timeout=10)
    assert recorded <= namespaces()  # a crashed launcher leaves its namespaces behind...
    assert await trio.to_thread.run_sync(topo_down, workdir) == 0
    assert not (recorded & namespaces())  # ...and `topo down` removes exactly them
    assert all(gone(pid) for pid in pids)
    assert not os.path.exists(os.path.join(workdir, STATE_FILE))


async def test_topo_up_without_root_falls_back_to_processes(workdir, tmp_path, background) -> None:
    out = tmp_path / "up.out"
    proc, state = await background(LINE3, workdir, out, netns=True, prelude="import os; os.geteuid = lambda: 1000",
                                   timeout=30)
    assert state["mode"] == "process" and state["netns"] == []
    assert await trio.to_thread.run_sync(topo_down, workdir) == 0
    assert await wait_exit(proc, timeout=10) == 0
    text = out.read_text()
    assert "needs root" in text and "falling back to processes on loopback" in text
