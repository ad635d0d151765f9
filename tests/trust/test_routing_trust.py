"""Link state under a trust schema (interface §12-13): a record is believed only
when signed by a node certificate the schema allows; without a schema, only
when signed by a key of the node it names.  Real daemons on loopback."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import trio

from icnd.keyfiles import save_certificate
from icnd.name import Name
from icnd.security import Ed25519Key
from icnd.testing.processes import Daemon, free_ports, short_tempdir
from icnd.trust import issue, self_signed

SCHEMA = """\
anchors = ["anchor.cert"]
[[rule]]
name = "node-data"
data = "/node/<n>/<**>"
signer = "/node/<n>/KEY/<*>"
[[rule]]
name = "node-certs"
data = "/node/<n>/KEY/<**>"
signer = "/net/KEY/<*>"
"""


async def _routing(d: Daemon) -> dict[str, Any]:
    async with d.connect() as client:
        status: dict[str, Any] = await client.routing()
        return status


async def _wait(cond, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(timeout):
        while not await cond():
            await trio.sleep(0.05)


async def test_a_node_the_anchor_did_not_certify_gets_no_routes() -> None:
    with short_tempdir("icnd-rt-") as tmp:
        d = Path(tmp)
        anchor = Ed25519Key.generate(Name("/net"))
        save_certificate(self_signed(anchor, now=time.time()), d / "anchor.cert")
        (d / "schema.toml").write_text(SCHEMA)
        for n in ("a", "b", "m"):
            key = Ed25519Key.generate(Name(f"/node/{n}"))
            (d / f"{n}.key").write_bytes(key.to_bytes())
            # m's certificate is its own: well formed, signed, and not the anchor's
            save_certificate(self_signed(key, now=time.time()) if n == "m" else issue(anchor, key, now=time.time()), d / f"{n}.cert")
        ports = dict(zip("abm", free_ports(3)))
        links = {"a": ["b"], "b": ["a", "m"], "m": ["b"]}
        daemons = {}
        try:
            for n in "abm":
                args = ["--name", f"/node/{n}", "--listen", f"udp://127.0.0.1:{ports[n]}",
                        "--key", str(d / f"{n}.key"), "--cert", str(d / f"{n}.cert"),
                        "--trust", str(d / "schema.toml")]
                for m in links[n]:
                    args += ["--neighbor", f"udp://127.0.0.1:{ports[m]}"]
                daemons[n] = Daemon(tmp, *args, name=n)
            for daemon in daemons.values():
                await daemon.until_ready()

            async def a_knows_b() -> bool:
                async with daemons["a"].connect() as client:
                    return any(r["prefix"] == "/node/b" for r in await client.command("route", "list"))

            await _wait(a_knows_b)
            b = daemons["b"]

            async def b_refused_m() -> bool:
                return (await _routing(b))["counters"]["hellos_refused"] > 0

            await _wait(b_refused_m)
            status = await _routing(b)
            assert "/node/m" not in [r["origin"] for r in status["lsdb"]]
            assert "/node/m" in (status["last_refusal"] or "")
            # nor is m b's neighbour: its hellos' proofs are signed by a key the schema refuses (issue #26, R10)
            assert not any(nb["name"] == "/node/m" and nb["state"] == "up" for nb in status["neighbors"])
            async with daemons["a"].connect() as client:
                routes = {r["prefix"] for r in await client.command("route", "list")}
                node_status = await client.status()
            assert "/node/b" in routes and "/node/m" not in routes
            assert "/node/m" not in [r["origin"] for r in (await _routing(daemons["a"]))["lsdb"]]
            assert node_status["counters"]["routing_records_stored"] >= 2
        finally:
            for daemon in daemons.values():
                daemon.stop()


async def test_without_a_schema_a_record_must_be_signed_by_the_node_it_names() -> None:
    """b names its key /node/x/KEY/..., so its hello proofs (and so its records) are refused by a."""
    with short_tempdir("icnd-rt-") as tmp:
        d = Path(tmp)
        (d / "b.key").write_bytes(Ed25519Key.generate(Name("/node/x")).to_bytes())
        ports = dict(zip("ab", free_ports(2)))
        daemons = {}
        try:
            daemons["a"] = Daemon(tmp, "--name", "/node/a", "--listen", f"udp://127.0.0.1:{ports['a']}",
                                  "--neighbor", f"udp://127.0.0.1:{ports['b']}", name="a")
            daemons["b"] = Daemon(tmp, "--name", "/node/b", "--listen", f"udp://127.0.0.1:{ports['b']}",
                                  "--key", str(d / "b.key"),
                                  "--neighbor", f"udp://127.0.0.1:{ports['a']}", name="b")
            for daemon in daemons.values():
                await daemon.until_ready()

            async def refused() -> bool:
                return (await _routing(daemons["a"]))["counters"]["hellos_refused"] > 0

            await _wait(refused)
            status = await _routing(daemons["a"])
            assert "not by a key of /node/b" in status["last_refusal"]
            assert [r["origin"] for r in status["lsdb"]] == ["/node/a"]
            # b believes a: a signs with its own node key (its record arrives after a's refusal, not with it)

            async def b_has_a() -> bool:
                return "/node/a" in [r["origin"] for r in (await _routing(daemons["b"]))["lsdb"]]

            await _wait(b_has_a)
        finally:
            for daemon in daemons.values():
                daemon.stop()
