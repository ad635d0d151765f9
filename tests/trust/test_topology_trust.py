"""Three nodes that share one trust anchor (issue #16, acceptance): a client
publishes with its certificate, another client fetches under the schema, and a
function host admits only callers certified under ``/net/<user>``.

A line a - b - c launched from a topology file whose nodes carry ``key``,
``cert`` and a top-level ``trust`` (each node is ``icnd run --key --cert
--trust``).  The nodes run link-state routing (the schema lets each node sign
its own link state), so what alice publishes at a and what carol hosts at c
are announced and routed with no route added by hand -- carol's certificate
included, published at c under ``/net/carol``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

import icnd
from icnd.client import Client
from icnd.keyfiles import save_certificate
from icnd.name import Name
from icnd.security import Ed25519Key
from icnd.testing.processes import short_tempdir
from icnd.topology import launch, load
from icnd.trust import issue, self_signed

SCHEMA = """\
anchors = ["anchor.cert"]
[[rule]]
name = "user-data"
data = "/net/<user>/<**>"
signer = "/net/<user>/KEY/<*>"
[[rule]]
name = "user-certs"
data = "/net/<user>/KEY/<**>"
signer = "/net/KEY/<*>"
[[rule]]
name = "node-certs"
data = "/node/<n>/KEY/<**>"
signer = "/net/KEY/<*>"
[[rule]]
name = "answers"
data = "/fn/<**>"
signer = "/net/<*>/KEY/<*>"
[[rule]]
name = "node-link-state"
data = "/node/<n>/<**>"
signer = "/node/<n>/KEY/<*>"
"""

TOPOLOGY = """\
trust = "schema.toml"
[nodes.a]
key = "a.key"
cert = "a.cert"
[nodes.b]
key = "b.key"
cert = "b.cert"
[nodes.c]
key = "c.key"
cert = "c.cert"
[[links]]
ends = ["a", "b"]
[[links]]
ends = ["b", "c"]
"""


def _write_key(path: Path, key: Ed25519Key) -> None:
    path.write_bytes(key.to_bytes())


def _pki(d: Path) -> dict[str, Ed25519Key]:
    """The network's anchor (/net), node keys under /node/<n>, users under
    /net/<user>, all certified by the anchor; mallory is certified by a rogue
    anchor of her own instead."""
    anchor = Ed25519Key.generate(Name("/net"))
    save_certificate(self_signed(anchor, now=time.time()), d / "anchor.cert")
    keys: dict[str, Ed25519Key] = {}
    for who, identity in (("a", "/node/a"), ("b", "/node/b"), ("c", "/node/c"), ("alice", "/net/alice"),
                          ("bob", "/net/bob"), ("carol", "/net/carol")):
        keys[who] = Ed25519Key.generate(Name(identity))
        _write_key(d / f"{who}.key", keys[who])
        save_certificate(issue(anchor, keys[who], now=time.time()), d / f"{who}.cert")
    rogue = Ed25519Key.generate(Name("/net"))  # claims to be the anchor's namespace, is not the anchor
    keys["mallory"] = Ed25519Key.generate(Name("/net/mallory"))
    _write_key(d / "mallory.key", keys["mallory"])
    save_certificate(issue(rogue, keys["mallory"], now=time.time()), d / "mallory.cert")
    (d / "schema.toml").write_text(SCHEMA)
    (d / "line3.toml").write_text(TOPOLOGY)
    return keys


async def _routed(client: Client, names: tuple[str, ...], timeout: float = 10.0) -> None:
    """Wait until the node has a routing route at, above or under each of `names` (announced elsewhere)."""
    with trio.fail_after(timeout):
        while True:
            routes = await client.command("route", "list")
            have = [Name(r["prefix"]) for r in routes if any(h["origin"] == "routing" for h in r["nexthops"])]
            if all(any(p.is_prefix_of(Name(n)) or Name(n).is_prefix_of(p) for p in have) for n in names):
                return
            await trio.sleep(0.05)


def _connect(net, node: str, d: Path, who: str | None = None):  # type: ignore[no-untyped-def]
    kwargs = {"key": str(d / f"{who}.key"), "cert": str(d / f"{who}.cert")} if who else {}
    return icnd.connect(net[node].socket, trust=str(d / "schema.toml"), **kwargs)


async def test_three_nodes_one_anchor_publish_fetch_and_call() -> None:
    runs: list[str] = []

    async def whoami(x: int) -> int:
        runs.append("ran")
        return 2 * x

    with short_tempdir("icnd-tt-") as tmp:
        d = Path(tmp)
        _pki(d)
        spec = load(d / "line3.toml")
        assert spec.nodes["a"].trust == str(d / "schema.toml")
        async with launch(spec, workdir=str(d / "run"), log_level="warning") as net:
            ops = {n: await net.connect(n) for n in ("a", "b", "c")}
            # the node serves its certificate, issued by the anchor, under its routable key name
            status = await ops["a"].status()
            assert status["pid"] == net["a"].pid
            # users publish under /net/<user> at a; a announces what is published through it
            async with _connect(net, "a", d, "alice") as alice:
                await alice.publish("/net/alice/photo", b"alice's photo", freshness=60.0)
                # alice's key signing in bob's namespace: a certified user, the wrong namespace
                await alice.publish("/net/bob/forged", b"not bob's", freshness=60.0)
            await _routed(ops["c"], ("/net/alice/photo", "/net/bob/forged"))

            async with _connect(net, "c", d) as reader:  # a reader with only the schema
                got = await reader.fetch("/net/alice/photo", timeout=5.0)
                assert got.content == b"alice's photo"
                assert got.key_locator is not None and Name("/net/alice").is_prefix_of(got.key_locator)
                with pytest.raises(icnd.VerificationError, match="user-data.*user=bob"):
                    await reader.fetch("/net/bob/forged", timeout=5.0)
                assert reader.validator.counters["chain_walks"] >= 1

            # carol hosts /fn/double at c, admitting only callers certified under /net/<user>
            async with _connect(net, "c", d, "carol") as carol:
                async with carol.host({"/fn/double": whoami}, allow={"/fn/double": ["/net/<user>/KEY/<*>"]}):
                    for node in ("a", "b"):  # the function, and carol's certificate (published at c)
                        await _routed(ops[node], ("/fn/double", "/net/carol"))
                    async with _connect(net, "a", d, "bob") as bob:
                        assert await bob.call("/fn/double", 21, timeout=8.0) == 42
                    assert runs == ["ran"]
                    async with _connect(net, "a", d, "mallory") as mallory:  # certified by a rogue anchor
                        with pytest.raises(icnd.Unauthorized):
                            await mallory.call("/fn/double", 1, timeout=8.0)
                    async with _connect(net, "a", d) as anonymous:  # no key at all
                        with pytest.raises((icnd.Unauthorized, icnd.RemoteError)):
                            await anonymous.call("/fn/double", 2, timeout=8.0)
                    assert runs == ["ran"]  # refused callers ran nothing
