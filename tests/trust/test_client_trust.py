"""The client under a trust schema, against a real daemon: `icnd.connect(key=,
cert=, trust=)` and the CLI's ``--key``/``--cert``/``--trust`` (interface §13)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import AsyncIterator

import pytest
import trio

import icnd
from icnd.keyfiles import save_certificate
from icnd.name import Name
from icnd.security import Ed25519Key
from icnd.testing.processes import Daemon, run_cli
from icnd.trust.cert import Certificate, issue, self_signed
from icnd.trust.schema import Schema

from ._pki import USER_SCHEMA


class Pki:
    """An anchor /net, alice certified by it, and schema.toml, in a directory (real time)."""

    def __init__(self, tmp: Path) -> None:
        self.dir = tmp
        now = time.time()
        self.anchor_key = Ed25519Key.generate(Name("/net"))
        self.anchor = self_signed(self.anchor_key, now=now - 60)
        self.alice_key = Ed25519Key.generate(Name("/net/alice"))
        self.alice = issue(self.anchor_key, self.alice_key, now=now - 60, days=30)
        save_certificate(self.anchor, tmp / "anchor.cert")
        self.schema_path = tmp / "schema.toml"
        self.schema_path.write_text(USER_SCHEMA)
        self.key_file("alice", self.alice_key)
        save_certificate(self.alice, tmp / "alice.cert")

    def key_file(self, who: str, key: Ed25519Key) -> str:
        path = self.dir / f"{who}.key"
        path.write_bytes(key.to_bytes())
        return str(path)


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Daemon]:
    daemon = Daemon(tmp_path, "--name", "/node/a", "--listen", "tcp://127.0.0.1:0", name="a")
    try:
        await daemon.until_ready(15)
        yield daemon
    finally:
        daemon.stop()


async def test_schema_accepts_a_certified_user_and_refuses_others(node: Daemon, tmp_path: Path) -> None:
    pki = Pki(tmp_path)
    mallory_key = Ed25519Key.generate(Name("/net/mallory"))
    rogue_anchor = Ed25519Key.generate(Name("/net"))  # same name as the real anchor, another key
    eve_key = Ed25519Key.generate(Name("/net/eve"))
    eve_cert = issue(rogue_anchor, eve_key, now=time.time())
    with trio.fail_after(30):
        async with icnd.connect(node.socket, key=pki.alice_key, cert=pki.alice) as alice, \
                icnd.connect(node.socket, key=mallory_key, cert=self_signed(mallory_key, now=time.time())) as mallory, \
                icnd.connect(node.socket, key=eve_key, cert=eve_cert) as eve, \
                icnd.connect(node.socket) as anonymous, \
                icnd.connect(node.socket, trust=str(pki.schema_path)) as consumer:
            assert isinstance(consumer.validator.schema, Schema)
            await alice.publish("/net/alice/hello", b"from alice")
            await mallory.publish("/net/mallory/hello", b"from mallory")
            await mallory.publish("/net/alice/forged", b"mallory in alice's namespace")
            await eve.publish("/net/eve/hello", b"from eve")
            await anonymous.publish("/net/alice/digest", b"no signer", sign_by="client")

            data = await consumer.fetch("/net/alice/hello")  # alice's certificate fetched from the node
            assert data.content == b"from alice" and data.key_locator == pki.alice_key.name
            assert consumer.validator.counters["certs_fetched"] == 1
            await consumer.fetch("/net/alice/hello", must_be_fresh=True)
            assert consumer.validator.counters["certs_fetched"] == 1  # the chain is cached

            with pytest.raises(icnd.VerificationError, match="self-signed and not a trust anchor"):
                await consumer.fetch("/net/mallory/hello")
            with pytest.raises(icnd.VerificationError, match="/net/alice/forged"):
                await consumer.fetch("/net/alice/forged")
            with pytest.raises(icnd.VerificationError, match="/net/eve"):
                await consumer.fetch("/net/eve/hello")
            with pytest.raises(icnd.VerificationError, match="digest-only"):
                await consumer.fetch("/net/alice/digest")

            # without a schema (integrity only) the same client accepts what verifies with the named key
            async with icnd.connect(node.socket) as plain:
                assert (await plain.fetch("/net/mallory/hello")).content == b"from mallory"
                with pytest.raises(icnd.VerificationError, match="digest-only"):
                    await plain.fetch("/net/alice/digest")


async def test_an_object_published_by_a_certified_user_is_accepted_under_the_schema(node: Daemon,
                                                                                     tmp_path: Path) -> None:
    """publish_object by a client with a key: the client signs the manifest itself (the node
    keeps it only if it matches the bytes), so a schema can require the user's key."""
    pki = Pki(tmp_path)
    blob = bytes(range(256)) * 1000  # 256,000 bytes: 4 segments of 64 KiB, the last short
    with trio.fail_after(30):
        async with icnd.connect(node.socket, key=pki.alice_key, cert=pki.alice) as alice, \
                icnd.connect(node.socket) as keyless, \
                icnd.connect(node.socket, trust=str(pki.schema_path)) as consumer:
            await alice.publish_object("/net/alice/video", blob, segment_size=65536)
            manifest_data = await consumer.fetch("/net/alice/video", can_be_prefix=True, must_be_fresh=True,
                                                 verify=False)
            assert manifest_data.key_locator == pki.alice_key.name  # alice's, not the node's
            assert await consumer.fetch_object("/net/alice/video") == blob
            # a keyless publisher's object is signed by the node: the schema has no rule for that key
            await keyless.publish_object("/net/alice/other", blob, segment_size=65536)
            with pytest.raises(icnd.VerificationError, match="user-data.*user=alice"):
                await consumer.fetch_object("/net/alice/other")
            # the empty object: one empty segment, signed by alice too
            await alice.publish_object("/net/alice/empty", b"")
            assert await consumer.fetch_object("/net/alice/empty") == b""


async def test_the_node_keeps_a_publisher_manifest_only_if_it_matches_the_upload(node: Daemon) -> None:
    from icnd.codec import encode
    from icnd.errors import CommandError
    from icnd.objects.manifest import Manifest
    from icnd.packet import ContentType, Data

    mallory = Ed25519Key.generate(Name("/net/mallory"))
    async with icnd.connect(node.socket, key=mallory) as c:
        begun = await c.command("object", "begin", name="/net/mallory/x", size=10, segment_size=1024)
        await c.command("object", "append", upload=begun["upload"], offset=0, data=b"0123456789")
        lie = Manifest(Name("/net/mallory/x"), begun["version"], 10, 1024, b"\0" * 32)  # wrong digest
        signed = mallory.sign(Data(lie.manifest_name(), lie.encode(), ContentType.MANIFEST, 1000))
        with pytest.raises(CommandError, match="does not describe the bytes uploaded"):
            await c.command("object", "commit", upload=begun["upload"], manifest=encode(signed))
        listed = await c.command("object", "list")
        assert not any(o["name"] == "/net/mallory/x" for o in listed)  # nothing half-published


async def test_connect_loads_files_and_checks_that_the_cert_certifies_the_key(node: Daemon, tmp_path: Path) -> None:
    pki = Pki(tmp_path)
    other = Ed25519Key.generate(Name("/net/alice"))
    with pytest.raises(ValueError, match="does not certify"):
        async with icnd.connect(node.socket, key=other, cert=pki.alice):
            pass
    with pytest.raises(ValueError, match="needs the Ed25519 key"):
        async with icnd.connect(node.socket, cert=str(tmp_path / "alice.cert")):
            pass
    (tmp_path / "bad.key").write_bytes(b"not a key")
    with pytest.raises(ValueError, match="bad.key"):
        async with icnd.connect(node.socket, key=str(tmp_path / "bad.key")):
            pass
    async with icnd.connect(node.socket, key=str(tmp_path / "alice.key"), cert=str(tmp_path / "alice.cert"),
                            trust=pki.schema_path) as c:
        assert isinstance(c.key, Ed25519Key) and c.key.name == pki.alice_key.name
        assert isinstance(c.cert, Certificate) and c.cert.name == pki.alice.name
        # its own certificate is served by the node under the key name, signature kept
        got = await c.fetch(pki.alice_key.name, can_be_prefix=True)
        assert got.name == pki.alice.name and got.sig_value == pki.alice.data.sig_value


async def test_sync_client_passes_key_cert_and_trust(node: Daemon, tmp_path: Path) -> None:
    pki = Pki(tmp_path)

    def run() -> bytes:
        with icnd.sync.connect(node.socket, key=pki.alice_key, cert=pki.alice) as alice, \
                icnd.sync.connect(node.socket, trust=pki.schema_path) as consumer:
            alice.publish("/net/alice/sync", b"synced")
            return bytes(consumer.fetch("/net/alice/sync").content)

    assert await trio.to_thread.run_sync(run) == b"synced"


def cli(*args: str) -> tuple[int, bytes, bytes]:
    proc = run_cli(*args)
    return proc.returncode, proc.stdout, proc.stderr


async def test_cli_key_cert_and_trust(node: Daemon, tmp_path: Path) -> None:
    pki = Pki(tmp_path)
    sock = node.socket
    schema, key, cert = str(pki.schema_path), str(tmp_path / "alice.key"), str(tmp_path / "alice.cert")
    mallory = Ed25519Key.generate(Name("/net/mallory"))
    save_certificate(self_signed(mallory, now=time.time()), tmp_path / "mallory.cert")
    mallory_key = pki.key_file("mallory", mallory)
    async with icnd.connect(sock, key=pki.alice_key) as alice, \
            icnd.connect(sock, key=mallory, cert=self_signed(mallory, now=time.time())) as m:
        await alice.publish("/net/alice/note", b"alice's note")
        await m.publish("/net/mallory/note", b"mallory's note")

    def run(*args: str) -> tuple[int, bytes, bytes]:
        return cli(*args)

    # `icnd publish --key --cert`: the certificate reaches the node, which serves it from then on
    code, out, err = await trio.to_thread.run_sync(
        run, "publish", "--socket", sock, "--key", key, "--cert", cert, "/net/alice/file", schema)
    assert code == 0, err
    code, out, err = await trio.to_thread.run_sync(run, "fetch", "--socket", sock, "--trust", schema,
                                                   "/net/alice/note")
    assert (code, out) == (0, b"alice's note"), err
    code, out, err = await trio.to_thread.run_sync(run, "fetch", "--socket", sock, "--trust", schema,
                                                   "/net/mallory/note")
    assert code == 1 and out == b"" and b"self-signed" in err and err.count(b"\n") == 1, err
    code, out, err = await trio.to_thread.run_sync(run, "fetch", "--socket", sock, "/net/mallory/note")
    assert (code, out) == (0, b"mallory's note"), err  # integrity only without --trust
    # bad files: one line, exit 2, naming the flag and the file
    (tmp_path / "junk").write_bytes(b"junk")
    for args, what in [(("--trust", str(tmp_path / "missing.toml")), b"--trust"),
                       (("--trust", str(tmp_path / "junk")), b"--trust"),
                       (("--key", str(tmp_path / "junk")), b"--key"),
                       (("--key", key, "--cert", str(tmp_path / "junk")), b"--cert"),
                       (("--cert", cert), b"--cert"),
                       (("--key", mallory_key, "--cert", cert), b"does not certify")]:
        code, out, err = await trio.to_thread.run_sync(run, "fetch", "--socket", sock, *args, "/net/alice/note")
        assert code == 2 and out == b"" and what in err and err.count(b"\n") == 1, (args, err)
        assert err.startswith(b"icnd: error: ")
    # the flags reach commands that open the client through the shared session too (icnd call)
    code, out, err = await trio.to_thread.run_sync(run, "call", "--socket", sock, "--trust",
                                                   str(tmp_path / "junk"), "/fn/none")
    assert code == 2 and b"--trust" in err, err
