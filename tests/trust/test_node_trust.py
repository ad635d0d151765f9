"""The node side of trust (issue #16, interface §13 "Node:"): ``icnd run --key
--cert --trust``, the certificates a node serves, function callers checked
through certificate chains (pure calls and sessions too), and group
descriptors accepted only from owners the schema allows.

Real daemons on loopback; the function host's policy also driven directly
(sans network) with an injected clock, for expiry during a session."""

from __future__ import annotations

import time
from pathlib import Path

import msgpack
import numpy as np
import pytest
import trio

import icnd
from icnd.codec import encode
from icnd.compute.caller import Caller
from icnd.compute.host import FunctionHost, HostLimits
from icnd.compute.registry import hosted
from icnd.errors import Nacked
from icnd.keyfiles import load_certificate, load_schema, save_certificate
from icnd.name import Name
from icnd.packet import ContentType, Data, Interest, Nack
from icnd.reduction.group import GroupDescriptor
from icnd.security import Ed25519Key, KeyChain
from icnd.testing.processes import Daemon, run_cli, short_tempdir
from icnd.trust import Validator, issue, self_signed
from icnd.trust.cert import parse_certificate

NOW = time.time()
DAY = 86_400.0

SCHEMA = """\
anchors = ["anchor.cert"]
[[rule]]
name = "user-certs"
data = "/net/<user>/KEY/<**>"
signer = "/net/KEY/<*>"
[[rule]]
name = "node-certs"
data = "/node/<n>/KEY/<**>"
signer = "/net/KEY/<*>"
[[rule]]
name = "groups"
data = "/group/<**>"
signer = "/node/<*>/KEY/<*>"
[[rule]]
name = "contributions"
data = "/node/<*>/member/<**>"
signer = "/net/<*>/KEY/<*>"
"""

ALLOW = "/net/<user>/KEY/<*>"


class Pki:
    """An anchor (/net), a schema beside it, and keys/certificates written as files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.anchor_key = Ed25519Key.generate(Name("/net"))
        self.anchor = self_signed(self.anchor_key, now=NOW - DAY)
        save_certificate(self.anchor, root / "anchor.cert")
        (root / "schema.toml").write_text(SCHEMA)
        self.other_anchor_key = Ed25519Key.generate(Name("/net"))  # same identity, another key

    def key(self, identity: str, file: str) -> Ed25519Key:
        key = Ed25519Key.generate(Name(identity))
        (self.root / file).write_bytes(key.to_bytes())
        return key

    def cert(self, key: Ed25519Key, file: str, *, issuer: Ed25519Key | None = None, now: float = NOW - 60,
             days: float = 30) -> Path:
        cert = issue(issuer or self.anchor_key, key, now=now, days=days)
        save_certificate(cert, self.root / file)
        return self.root / file


@pytest.fixture
def tmp():
    with short_tempdir() as path:
        yield Path(path)


@pytest.fixture
def started():
    daemons: list[Daemon] = []
    yield daemons
    for d in daemons:
        d.stop()


async def _start(daemons: list[Daemon], root: Path, name: str, *args: str) -> Daemon:
    d = Daemon(root, "--name", f"/node/{name}", "--listen", "udp://127.0.0.1:0", *args, name=name)
    daemons.append(d)
    await d.until_ready()
    return d


# --- icnd run --key --cert --trust ------------------------------------------------------------
async def test_a_node_runs_with_key_cert_and_trust_and_serves_its_certificate(tmp, started) -> None:
    pki = Pki(tmp)
    key = pki.key("/net/n1", "node.key")
    pki.cert(key, "node.cert")
    d = await _start(started, tmp, "n1", "--key", str(tmp / "node.key"), "--cert", str(tmp / "node.cert"),
                     "--trust", str(tmp / "schema.toml"))
    assert d.status["key"] == key.name.to_uri()  # the identity from --key, not a fresh one
    async with d.connect() as c:
        data = await c.fetch(key.name, can_be_prefix=True, verify=False)  # its key name, outside /node/n1
        cert = parse_certificate(data)
        assert cert.key_name == key.name and cert.public_key == key.public_bytes()
        assert cert.signer is not None and cert.signer == pki.anchor_key.name  # the --cert, not self-signed
        assert (await c.fetch(cert.name, verify=False)).name == cert.name  # and by its full name
        anchor = await c.fetch(pki.anchor_key.name, can_be_prefix=True, verify=False)  # the schema's anchor
        assert parse_certificate(anchor).self_signed and anchor.name == pki.anchor.name


async def test_config_keys_are_relative_to_the_config_file_and_a_node_without_cert_self_signs(tmp, started) -> None:
    pki = Pki(tmp)
    key = pki.key("/node/n2", "node.key")
    (tmp / "node.toml").write_text('key = "node.key"\ntrust = "schema.toml"\n')
    d = Daemon(tmp, "--name", "/node/n2", "--listen", "udp://127.0.0.1:0", "--config", str(tmp / "node.toml"),
               name="n2")
    started.append(d)
    await d.until_ready()
    async with d.connect() as c:
        for name in (key.name, Name("/node/n2/KEY")):  # by key name, and under the node's /KEY
            cert = parse_certificate(await c.fetch(name, can_be_prefix=True, verify=False))
            assert cert.key_name == key.name and cert.self_signed


def _run_fails(tmp: Path, *args: str) -> str:
    out = run_cli("run", "--name", "/node/bad", "--socket", str(tmp / "bad.sock"), "--listen",
                  "udp://127.0.0.1:0", *args, timeout=30)
    assert out.returncode == 2, out
    err = out.stderr.decode().strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_cert_of_another_key_or_a_bad_schema_is_a_one_line_error(tmp) -> None:
    pki = Pki(tmp)
    pki.key("/net/n3", "node.key")
    other = pki.key("/net/n3", "other.key")
    pki.cert(other, "other.cert")
    err = _run_fails(tmp, "--key", str(tmp / "node.key"), "--cert", str(tmp / "other.cert"))
    assert "other.cert" in err and "not the node's key" in err
    (tmp / "junk.cert").write_bytes(b"not a certificate")
    assert "junk.cert" in _run_fails(tmp, "--key", str(tmp / "node.key"), "--cert", str(tmp / "junk.cert"))
    (tmp / "bad.toml").write_text('anchors = ["anchor.cert"]\n[[rule]]\nname = "r"\ndata = "/a/<?>"\n'
                                  'signer = "/net/KEY/<*>"\n')
    err = _run_fails(tmp, "--trust", str(tmp / "bad.toml"))
    assert "bad.toml" in err and "<?>" in err
    (tmp / "noanchor.toml").write_text('anchors = ["missing.cert"]\n')
    assert "missing.cert" in _run_fails(tmp, "--trust", str(tmp / "noanchor.toml"))


# --- function callers ----------------------------------------------------------------------------
async def _runs(d: Daemon) -> tuple[int, int]:
    counters = (await d.get_status())["counters"]
    return counters["fn_executions"], counters["fn_unauthorized"]


@pytest.mark.parametrize("mode", ["call", "reflexive", "pure-call"])
async def test_a_host_under_a_schema_admits_only_callers_certified_by_its_anchor(tmp, started, mode) -> None:
    pki = Pki(tmp)
    (tmp / "host.toml").write_text(
        'trust = "schema.toml"\n'
        '[[function]]\ntarget = "apps.functions:add"\nprefix = "/fn/add"\nallow = ["%s"]\n'
        '[[function]]\ntarget = "tests.integration.hosted:counted"\nprefix = "/fn/counted"\nallow = ["%s"]\n'
        % (ALLOW, ALLOW))
    d = await _start(started, tmp, "h", "--config", str(tmp / "host.toml"))
    pure, reflexive = mode == "pure-call", mode == "reflexive"  # signed small call, RICE handshake, pure
    fn, args = ("/fn/counted", (21,)) if pure else ("/fn/add", (40, 2))
    expect = 42
    alice = pki.key("/net/alice", "alice.key")
    async with icnd.connect(d.socket, key=alice, cert=pki.cert(alice, "alice.cert")) as c:
        assert await c.call(fn, *args, pure=pure, reflexive=reflexive) == expect
        assert await c.call(fn, *args, pure=pure, reflexive=reflexive) == expect  # again (a session, if small)
    zoe = pki.key("/net/zoe", "zoe.key")  # certified, her certificate published nowhere: only carried
    async with icnd.connect(d.socket, key=zoe) as c:
        c.cert = load_certificate(pki.cert(zoe, "zoe.cert"))
        assert await c.call(fn, *args, pure=pure, reflexive=reflexive) == expect
    runs, refused = await _runs(d)
    assert runs >= 1
    mallory = pki.key("/net/mallory", "mallory.key")  # no certificate at all
    eve = pki.key("/net/eve", "eve.key")  # certified by another anchor
    old = pki.key("/net/old", "old.key")  # certified, but expired
    callers = [
        (mallory, None),
        (eve, pki.cert(eve, "eve.cert", issuer=pki.other_anchor_key)),
        (old, pki.cert(old, "old.cert", now=NOW - 10 * DAY, days=1)),
    ]
    for key, cert in callers:
        async with icnd.connect(d.socket, key=key) as c:
            if cert is not None:
                c.cert = load_certificate(cert)  # carried in its calls (not published)
            with pytest.raises(icnd.Unauthorized):
                await c.call(fn, *args, pure=pure, reflexive=reflexive, timeout=10)
    runs_after, refused_after = await _runs(d)
    assert runs_after == runs  # nothing ran for them
    assert refused_after >= refused + len(callers)


async def test_a_caller_whose_certificate_is_published_is_admitted_without_carrying_it(tmp, started) -> None:
    """The host fetches the certificate by key name when the call carries none."""
    pki = Pki(tmp)
    (tmp / "host.toml").write_text('trust = "schema.toml"\n[[function]]\ntarget = "apps.functions:add"\n'
                                   'prefix = "/fn/add"\nallow = ["%s"]\n' % ALLOW)
    d = await _start(started, tmp, "h2", "--config", str(tmp / "host.toml"))
    bob = pki.key("/net/bob", "bob.key")
    cert = issue(pki.anchor_key, bob, now=NOW - 60, days=30)
    async with icnd.connect(d.socket, key=bob) as c:
        await c.command("repo", "publish", packets=[encode(cert.data)])  # as a client publishes its own
        got = parse_certificate(await c.fetch(bob.name, can_be_prefix=True, verify=False))  # served by key name
        assert got.name == cert.name
        assert await c.call("/fn/add", 1, 2) == 3


# --- the same policy without a network: sessions do not outlive the certificate ----------------------
class _HostEndpoint:
    def __init__(self) -> None:
        self.key = Ed25519Key.generate(Name("/node/h"))
        self.keychain = KeyChain()
        self.keychain.add_signing_key(self.key)

    def sign(self, data: Data) -> Data:
        return self.key.sign(data)


class _CallerEndpoint:
    def __init__(self, host: FunctionHost, keychain: KeyChain, key: Ed25519Key, cert) -> None:
        self.host, self.keychain, self.key, self.cert = host, keychain, key, cert

    async def verify(self, data: Data) -> None:
        if data.sig_type != 4:  # HMAC answers are checked by the caller against its session
            self.keychain.verify(data)

    def passes_fds(self) -> bool:  # not a local Unix connection: no shared memory
        return False

    async def express(self, interest: Interest, *, timeout: float, retx: float | None = None) -> Data:
        answer = await self.host._on_call(interest)
        if isinstance(answer, Nack):
            raise Nacked(answer.reason.name.lower(), str(interest.name))
        assert answer is not None
        return answer


@icnd.function(pure=True)
def _add(a, b):
    return a + b


async def test_a_session_stops_admitting_once_the_callers_certificate_expires(tmp) -> None:
    pki = Pki(tmp)
    clock = [NOW]
    validator = Validator(load_schema(tmp / "schema.toml"), clock=lambda: clock[0])
    alice = Ed25519Key.generate(Name("/net/alice"))
    cert = issue(pki.anchor_key, alice, now=NOW - 60, days=1)

    async def no_fetch(name: Name) -> Data:
        raise icnd.Error(f"nothing to fetch {name}")

    async with trio.open_nursery() as nursery:
        ep = _HostEndpoint()
        host = FunctionHost(ep, [hosted("/fn/add", _add, allow=[ALLOW])], Name("/node/h"),  # type: ignore[arg-type]
                            limits=HostLimits(), validator=validator, fetch_cert=no_fetch)
        host._nursery = nursery
        caller = Caller(_CallerEndpoint(host, ep.keychain, alice, cert))  # type: ignore[arg-type]
        assert await caller.call(Name("/fn/add"), (1, 2), timeout=5, pure=False) == 3
        assert await caller.call(Name("/fn/add"), (2, 2), timeout=5, pure=False) == 4
        assert host.counters["fn_session_calls"] >= 1  # the second call came under the session
        clock[0] = NOW + 2 * DAY  # the certificate has expired; the session has not
        with pytest.raises(icnd.Unauthorized):
            await caller.call(Name("/fn/add"), (3, 2), timeout=5, pure=False)
        assert host.counters["fn_executions"] == 2
        nursery.cancel_scope.cancel()


# --- group descriptors ---------------------------------------------------------------------------
async def _announce(c: icnd.Client, node: str, owner: Ed25519Key, group: str) -> Data:
    desc = GroupDescriptor.create(group, [f"m@{node}"])
    signed = owner.sign(desc.to_data())
    params = msgpack.packb({"desc": encode(signed), "key": owner.public_bytes()})
    interest = Interest.with_params(Name(["node", node, "group", "install"]), params, lifetime_ms=4000)
    return await c.express(interest, timeout=5)


async def test_a_node_with_a_schema_accepts_group_descriptors_only_from_owners_it_allows(tmp, started) -> None:
    pki = Pki(tmp)
    d = await _start(started, tmp, "g", "--trust", str(tmp / "schema.toml"))
    certified = pki.key("/node/other", "other.key")  # a node certified by the anchor: the rule "groups"
    user = pki.key("/net/carol", "carol.key")  # certified, but as a user: no rule lets it sign groups
    stranger = Ed25519Key.generate(Name("/node/stranger"))  # uncertified (trust on first use took it)
    async with d.connect() as c:
        for key, file in ((certified, "other.cert"), (user, "carol.cert")):
            cert = issue(pki.anchor_key, key, now=NOW - 60, days=30)
            save_certificate(cert, tmp / file)
            await c.command("repo", "publish", packets=[encode(cert.data)])  # fetchable through the node
        ok = await _announce(c, "g", certified, "good")
        assert ok.content_type != ContentType.ERROR, ok.content
        for key, group in ((user, "by-user"), (stranger, "by-stranger")):
            refused = await _announce(c, "g", key, group)
            assert refused.content_type == ContentType.ERROR
            assert b"403" in refused.content and b"not trusted" in refused.content
        groups = {g["group"] for g in await c.command("group", "list")}
        assert "good" in groups and not groups & {"by-user", "by-stranger"}
        status = await c.status()
        assert status["counters"]["groups_refused_untrusted"] == 2


# --- contributions handed over by other nodes ----------------------------------------------------------
async def test_a_node_with_a_schema_stores_only_contributions_its_validator_accepts(tmp, started) -> None:
    pki = Pki(tmp)
    g = await _start(started, tmp, "g", "--trust", str(tmp / "schema.toml"), "--group", "grp=m@g")
    k = await _start(started, tmp, "k", "--group", "grp=m@g", "--route", f"/node/g={g.uri()}")
    carol = pki.key("/net/carol", "carol.key")
    cert = issue(pki.anchor_key, carol, now=NOW - 60, days=30)
    async with g.connect() as at_g:  # where g's validator finds carol's certificate
        await at_g.command("repo", "publish", packets=[encode(cert.data)])
    async with icnd.connect(k.socket, key=carol) as c:  # carol contributes for m, who lives on g
        assert (await c.contribute("grp", 1, np.arange(4.0), member="m"))["added"] == 1
    dave = pki.key("/net/dave", "dave.key")  # uncertified
    for key in (dave, None):  # signed by an uncertified key; digest only
        async with icnd.connect(k.socket, key=key) as c:
            with pytest.raises(icnd.Error, match="not trusted"):
                await c.contribute("grp", 2, np.arange(4.0), member="m")
    counters = (await g.get_status())["counters"]
    assert counters["contrib_refused_untrusted"] == 2 and counters["contrib_segments"] == 1


# --- the certificate table (sans-IO) -------------------------------------------------------------------
def test_the_certificate_table_serves_by_key_name_and_keeps_pinned_certificates() -> None:
    from icnd.daemon.certs import CertificateTable

    routes: list[Name] = []
    table = CertificateTable(routes.append, routes.remove, keep=lambda data: None)
    anchor_key = Ed25519Key.generate(Name("/net"))
    node = Ed25519Key.generate(Name("/net/n"))
    own = issue(anchor_key, node, now=NOW - 60)
    table.add(own, pinned=True)
    assert routes == [node.name]

    def ask(name: Name, prefix: bool) -> Data | None:
        return table.lookup(Interest(name, nonce=1, can_be_prefix=prefix))

    assert ask(node.name, True) is own.data and ask(own.name, False) is own.data
    assert ask(node.name, False) is None  # the key name alone, without CanBePrefix: not the certificate
    assert ask(Name("/net"), True) is None and ask(Name("/elsewhere/x/y/z"), True) is None
    forged = self_signed(node, now=NOW)  # a client publishing another certificate of the node's key
    assert table.published(forged.data) is None and ask(node.name, True) is own.data
    alice = Ed25519Key.generate(Name("/net/alice"))
    first, newer = issue(anchor_key, alice, now=NOW - 60), issue(anchor_key, alice, now=NOW)
    kept = table.published(newer.data)
    assert kept is not None and kept.name == newer.name
    assert table.published(first.data) is None  # an older version does not replace the newest
    served = ask(alice.name, True)
    assert served is not None and served.name == newer.name
    assert table.published(Data(Name("/net/alice/file"), b"x")) is None  # not a certificate: ignored


async def test_a_host_in_a_client_process_applies_its_clients_trust_schema(tmp, started) -> None:
    pki = Pki(tmp)
    d = await _start(started, tmp, "hc")
    runs: list[int] = []

    def guarded(x):
        runs.append(x)
        return x

    alice, mallory = pki.key("/net/alice", "alice.key"), pki.key("/net/mallory", "mallory.key")
    host = pki.key("/net/host", "host.key")  # signs its answers; its certificate is served by the node
    async with icnd.connect(d.socket, key=host, cert=pki.cert(host, "host.cert"),
                            trust=tmp / "schema.toml") as host_client:
        async with host_client.host({"/fn/guarded": guarded}, allow={"/fn/guarded": [ALLOW]}):
            async with icnd.connect(d.socket, key=alice, cert=pki.cert(alice, "alice.cert")) as c:
                assert await c.call("/fn/guarded", 1) == 1
            async with icnd.connect(d.socket, key=mallory) as c:  # a key name the pattern matches, uncertified
                with pytest.raises(icnd.Unauthorized):
                    await c.call("/fn/guarded", 2, timeout=10)
    assert runs == [1]
