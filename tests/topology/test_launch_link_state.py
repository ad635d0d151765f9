"""The launcher under ``routing = "link-state"`` (the default; interface §12):
nodes start with ``--neighbor`` for their links and no routes; `launch`
yields only once every node routes to every node; a refused link state makes
it fail naming the nodes and the refusal; cut, heal and restart (over TCP,
with link emulation) keep working without any route being added."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

import pytest
import trio

from icnd import Interest, Name
from icnd.security import Ed25519Key
from icnd.topology import launch, load, parse
from icnd.topology.launcher import STATE_FILE, LaunchError
from icnd.keyfiles import save_certificate
from icnd.trust import issue, self_signed

CONVERGE = 15.0


async def routing_routes(client, prefix: str) -> list[dict]:  # type: ignore[no-untyped-def]
    for entry in await client.command("route", "list"):
        if entry["prefix"] == prefix:
            return [h for h in entry["nexthops"] if h["origin"] == "routing"]
    return []


async def test_nodes_start_with_neighbours_only_and_are_ready_once_routed(workdir) -> None:
    spec = parse({"nodes": {"a": {}, "b": {}, "c": {"functions": ["apps.functions:add=/fn/add"]}},
                  "links": [{"ends": ["a", "b"], "cost": 3}, {"ends": ["b", "c"]}]}, "line3-costs")
    assert spec.routing == "link-state"
    with trio.fail_after(40):
        async with launch(spec, workdir=workdir) as net:
            state = json.loads(Path(workdir, STATE_FILE).read_text())
            assert state["routing"] == "link-state" and state["ready"]
            assert net.converged_s is not None and 0 < net.converged_s < 20
            for name in net.nodes:
                client = await net.connect(name)
                routes = await client.command("route", "list")
                assert not [r for r in routes if any(h["origin"] == "static" for h in r["nexthops"])], routes
                for other in net.nodes:
                    if other != name:  # at once: launch waited for it
                        assert await routing_routes(client, f"/node/{other}"), (name, other, routes)
            a = await net.connect("a")
            assert [h["cost"] for h in await routing_routes(a, "/node/c")] == [4]  # 3 + 1
            assert await routing_routes(a, "/fn/add")  # the hosted function is routed too
            assert await a.call("/fn/add", 2, 3) == 5
            b = (await (await net.connect("b")).routing())["neighbors"]
            assert sorted((n["name"], n["cost"], n["state"]) for n in b) == [("/node/a", 3, "up"),
                                                                            ("/node/c", 1, "up")]
            assert {n["uri"] for n in b} == {net.nodes["a"].udp_uri, net.nodes["c"].udp_uri}


async def test_cut_heal_and_restart_over_tcp_with_emulated_delay(workdir) -> None:
    spec = parse({"nodes": {"a": {}, "b": {}, "c": {}},
                  "links": [{"ends": ["a", "b"], "transport": "tcp", "delay_ms": 20},
                            {"ends": ["b", "c"], "transport": "tcp"}]}, "line3-tcp")
    with trio.fail_after(60):
        async with launch(spec, workdir=workdir) as net:
            a = await net.connect("a")
            (hop,) = await routing_routes(a, "/node/c")
            assert hop["uri"] == net.nodes["b"].tcp_uri

            async def rtt() -> float:
                t0 = trio.current_time()
                await a.express(Interest(Name(f"/node/c/ping/{secrets.token_hex(4)}"), must_be_fresh=True),
                                timeout=4, retx=None)
                return trio.current_time() - t0

            assert min([await rtt() for _ in range(3)]) >= 0.040  # both directions of a-b shaped

            await net.cut("a", "b")  # hellos stop too: routing notices after the dead interval
            with trio.fail_after(CONVERGE):
                while await routing_routes(a, "/node/c"):
                    await trio.sleep(0.1)
            await net.heal("a", "b")
            assert await net.wait_routes(timeout=CONVERGE) >= 0
            assert [h["face"] for h in await routing_routes(a, "/node/c")] == [hop["face"]]

            old = net.nodes["b"].pid
            await net.restart("b")  # same ports: a's and c's permanent faces reconnect; no route added
            assert net.nodes["b"].pid != old
            assert [h["face"] for h in await routing_routes(a, "/node/c")] == [hop["face"]]
            assert min([await rtt() for _ in range(3)]) >= 0.040  # b's new faces are shaped again


async def test_a_refused_link_state_fails_the_launch_naming_nodes_and_refusal(workdir, tmp_path) -> None:
    d = tmp_path
    anchor = Ed25519Key.generate(Name("/net"))
    save_certificate(self_signed(anchor, now=time.time()), d / "anchor.cert")
    for node in ("a", "b"):
        k = Ed25519Key.generate(Name(f"/node/{node}"))
        (d / f"{node}.key").write_bytes(k.to_bytes())
        save_certificate(issue(anchor, k, now=time.time()), d / f"{node}.cert")
    # node certificates are allowed, but no rule lets a node sign its own link state
    (d / "schema.toml").write_text('anchors = ["anchor.cert"]\n[[rule]]\nname = "node-certs"\n'
                                   'data = "/node/<n>/KEY/<**>"\nsigner = "/net/KEY/<*>"\n')
    (d / "pair.toml").write_text('trust = "schema.toml"\n[nodes.a]\nkey = "a.key"\ncert = "a.cert"\n'
                                 '[nodes.b]\nkey = "b.key"\ncert = "b.cert"\n[[links]]\nends = ["a", "b"]\n')
    with trio.fail_after(40), pytest.raises(LaunchError) as info:
        async with launch(load(d / "pair.toml"), workdir=workdir, ready_timeout=8):
            pass
    text = str(info.value)
    assert "did not converge" in text and "a lacks /node/b" in text and "b lacks /node/a" in text, text
    assert "last refused link state" in text and "no rule matches" in text, text
    assert not Path(workdir, STATE_FILE).exists()  # torn down
