"""Interoperability with unmodified NDN applications: the real python-ndn from PyPI.

python-ndn is asyncio-based and icnd runs on trio, so every python-ndn
application here is a subprocess (a small script written into the test's
temporary directory) pointed at an icnd NDN listener with
``NDN_CLIENT_TRANSPORT``.  The network is three ``icnd run`` daemons in a
line, started once for the module::

    python-ndn producer ── A ── B ── C ── python-ndn consumer
                          (fn)            (native clients too)

A and C listen for NDN applications on Unix sockets (``--ndn-listen``); the
inter-node faces and routes (``/ndn``, ``/native``, ``/fn``) are native.
Protocol details the apps cannot show (PIT tokens, error replies, datasets)
are checked against an in-process node with a raw socket, decoding with
python-ndn's own parsers.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import msgpack
import pytest
import trio

import icnd
from icnd.compute.values import decode_value, encode_value
from icnd.daemon.config import NodeConfig
from icnd.daemon.node import Node
from icnd.testing.processes import stop_process

ndn = pytest.importorskip("ndn", reason="python-ndn (the test extra) is not installed")
from ndn import encoding as ndn_enc  # noqa: E402
from ndn.app_support import nfd_mgmt  # noqa: E402
from ndn.encoding import ndnlp_v2  # noqa: E402

STEP = 20.0  # bound on any one wait

APP_SCRIPT = r'''
"""python-ndn helper for icnd's interop tests: produce, legacy-produce, consume."""
import asyncio, json, logging, sys

from ndn import appv2, app as legacy
from ndn.encoding import Name, Component
from ndn.security import DigestSha256Signer, KeychainDigest
from ndn.types import InterestNack, InterestTimeout, ValidationFailure, InterestCanceled

logging.basicConfig(level=logging.WARNING)


def out(obj):
    print(json.dumps(obj), flush=True)


def content_for(name):
    """Content and content type the producers answer with: /.../ct/<N> asks for type N."""
    uri = Name.to_str(name)
    ctype = 0
    for i, comp in enumerate(name[:-1]):
        if Component.get_value(comp) == b"ct":
            ctype = int(bytes(Component.get_value(name[i + 1])).decode())
    return ("ndn:" + uri).encode(), ctype


async def read_commands(handle):
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        await handle(json.loads(line))


def produce(spec):
    """appv2: v0.3 signed-Interest registration; answers until stdin closes."""
    app = appv2.NDNApp()

    def on_interest(name, app_param, reply, context):
        content, ctype = content_for(name)
        reply(app.make_data(name, content, signer=DigestSha256Signer(), freshness_period=spec.get("freshness", 0),
                            content_type=ctype))

    async def main():
        result = {}
        for prefix in spec["prefixes"]:
            app.attach_handler(prefix, on_interest)
            result[prefix] = await app.register(prefix)
        out({"registered": result})

        async def handle(cmd):
            if "unregister" in cmd:
                out({"unregistered": await app.unregister(cmd["unregister"])})
        await read_commands(handle)
        app.shutdown()

    app.run_forever(after_start=main())


def legacy_produce(spec):
    """ndn.app (legacy): 4-component command Interests."""
    app = legacy.NDNApp(keychain=KeychainDigest())

    def on_interest(name, param, app_param):
        content, ctype = content_for(name)
        app.put_data(name, content, freshness_period=spec.get("freshness", 0), content_type=ctype)

    async def main():
        result = {}
        for prefix in spec["prefixes"]:
            result[prefix] = await app.register(prefix, on_interest)
        out({"registered": result})

        async def handle(cmd):
            if "unregister" in cmd:
                out({"unregistered": await app.unregister(cmd["unregister"])})
        await read_commands(handle)
        app.shutdown()

    app.run_forever(after_start=main())


def consume(spec):
    """Express every request at once; print one JSON list of results.

    ``"api": "legacy"`` (default): the legacy app's ``express_interest`` (its
    default validator rejects a wrong DigestSha256; parameters go unsigned);
    ``"api": "v2"``: appv2 ``express`` (parameters in a DigestSha256-signed
    Interest)."""
    v2 = spec.get("api") == "v2"
    app = appv2.NDNApp() if v2 else legacy.NDNApp(keychain=KeychainDigest())

    async def one(req):
        kwargs = dict(must_be_fresh=req.get("must_be_fresh", False), can_be_prefix=req.get("can_be_prefix", False),
                      lifetime=req.get("lifetime", 4000))
        param = bytes.fromhex(req["app_param"]) if req.get("app_param") is not None else None
        try:
            if v2:
                signer = DigestSha256Signer() if param is not None else None
                name, content, ctx = await app.express(req["name"], appv2.pass_all, app_param=param,
                                                       signer=signer, **kwargs)
                ctype = ctx["meta_info"].content_type
            else:
                if param is not None:
                    kwargs["signer"] = None  # an unsigned Interest with parameters
                name, meta, content = await app.express_interest(req["name"], app_param=param, **kwargs)
                ctype = meta.content_type
            return {"ok": True, "name": Name.to_str(name), "content": bytes(content or b"").hex(),
                    "content_type": 0 if ctype is None else int(ctype)}
        except InterestNack as exc:
            return {"ok": False, "error": "nack", "reason": exc.reason}
        except InterestTimeout:
            return {"ok": False, "error": "timeout"}
        except ValidationFailure:
            return {"ok": False, "error": "validation"}
        except InterestCanceled:
            return {"ok": False, "error": "canceled"}

    async def main():
        try:
            out(await asyncio.gather(*(one(r) for r in spec["requests"])))
        finally:
            app.shutdown()

    app.run_forever(after_start=main())


if __name__ == "__main__":
    mode, spec = sys.argv[1], json.loads(sys.argv[2])
    {"produce": produce, "legacy-produce": legacy_produce, "consume": consume}[mode](spec)
'''

FUNCTIONS = '''
import icnd

@icnd.function(pure=True)
def double(x):
    return 2 * x
'''


# --- processes ---------------------------------------------------------------------------


def _read_line(proc: subprocess.Popen, timeout: float) -> str | None:
    """One line of a child's stdout, or None at EOF or after `timeout` (no buffering past the line)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        ch = os.read(fd, 1)
        if not ch:
            return None
        if ch == b"\n":
            return buf.decode()
        buf += ch


class Net:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen] = {}
        self.script = tmp / "ndnapp.py"
        self.script.write_text(APP_SCRIPT)
        (tmp / "ndn_fns.py").write_text(FUNCTIONS)
        self.home = tmp / "home"
        self.home.mkdir()

    def sock(self, node: str) -> str:
        return str(self.tmp / f"{node}.sock")

    def ndn_sock(self, node: str) -> str:
        return str(self.tmp / f"{node}-ndn.sock")

    def start(self, node: str, *extra: str) -> None:
        args = [sys.executable, "-m", "icnd", "run", "--name", f"/node/{node}", "--socket", self.sock(node),
                "--listen", "tcp://127.0.0.1:0", *extra]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.tmp), os.getcwd(),
                                                             os.environ.get("PYTHONPATH", "")])}
        log = open(self.tmp / f"{node}.log", "ab")
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env)
        log.close()
        self.procs[node] = proc
        line = _read_line(proc, STEP)
        if line is None or "ready" not in line:
            raise RuntimeError(f"{node} did not start: {(self.tmp / f'{node}.log').read_text()[-2000:]}")

    def app_env(self, node: str, transport: str | None = None) -> dict[str, str]:
        return {**os.environ, "HOME": str(self.home),
                "NDN_CLIENT_TRANSPORT": transport or f"unix://{self.ndn_sock(node)}"}

    def stop_all(self) -> None:
        for proc in self.procs.values():
            stop_process(proc)


class App:
    """A long-running python-ndn producer (subprocess)."""

    def __init__(self, net: Net, node: str, mode: str, spec: dict) -> None:
        self.proc = subprocess.Popen([sys.executable, str(net.script), mode, json.dumps(spec)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=net.app_env(node))

    def line(self) -> dict:
        text = _read_line(self.proc, STEP)
        if text is None:
            self.stop()
            raise AssertionError(f"python-ndn app said nothing: {self.proc.stderr.read().decode()[-2000:]}")
        return json.loads(text)

    def command(self, **cmd) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
        self.proc.stdin.flush()
        return self.line()

    def stop(self) -> None:
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        stop_process(self.proc)


def consume(net: Net, node: str, requests: list[dict], transport: str | None = None, api: str = "legacy") -> list[dict]:
    """Run a python-ndn consumer against `node`; its results, one per request."""
    spec = {"requests": requests, "api": api}
    proc = subprocess.run([sys.executable, str(net.script), "consume", json.dumps(spec)],
                          capture_output=True, env=net.app_env(node, transport), timeout=STEP)
    assert proc.returncode == 0 and proc.stdout, proc.stderr.decode()[-2000:]
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


async def native_routes(net: Net, node: str) -> list[dict]:
    async with icnd.connect(net.sock(node)) as c:
        return await c.command("route", "list")


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ndn")
    net = Net(tmp)
    try:
        net.start("a", "--ndn-listen", f"unix://{net.ndn_sock('a')}", "--function", "ndn_fns:double=/fn/double")
        via_a = f"unix://{net.sock('a')}"
        net.start("b", "--route", f"/ndn={via_a}", "--route", f"/fn={via_a}")
        via_b = f"unix://{net.sock('b')}"
        net.start("c", "--ndn-listen", f"unix://{net.ndn_sock('c')}", "--route", f"/ndn={via_b}",
                  "--route", f"/fn={via_b}")
        yield net
    finally:
        net.stop_all()


@pytest.fixture(scope="module")
def producer(net):
    """A python-ndn (appv2) producer of /ndn/a on node A."""
    app = App(net, "a", "produce", {"prefixes": ["/ndn/a"]})
    try:
        assert app.line() == {"registered": {"/ndn/a": True}}
        yield app
    finally:
        app.stop()


# --- python-ndn <-> python-ndn through icnd -------------------------------------------------


def test_two_hops_with_every_content_type(net, producer):
    requests = [{"name": "/ndn/a/hello"}] + [{"name": f"/ndn/a/ct/{t}"} for t in range(6)]
    results = consume(net, "c", requests)
    assert results[0] == {"ok": True, "name": "/ndn/a/hello", "content": b"ndn:/ndn/a/hello".hex(),
                          "content_type": 0}
    for t, result in enumerate(results[1:]):
        assert result["ok"], (t, result)
        assert result["content_type"] == t
        assert bytes.fromhex(result["content"]) == f"ndn:/ndn/a/ct/{t}".encode()


def test_nack_reaches_python_ndn_consumer(net, producer):
    results = consume(net, "c", [
        {"name": "/nowhere/at/all"},  # C has no route: Nack from C
        {"name": "/ndn/zzz/x"},  # routed C -> B -> A, where nobody serves it: Nack from A, relayed
    ])
    assert results == [{"ok": False, "error": "nack", "reason": 150}] * 2


async def test_native_and_python_ndn_exchange_data(net, producer):
    async with icnd.connect(net.sock("c")) as c:
        await c.publish("/native/doc", b"published by a native icnd client", freshness=10.0)
        results = await trio.to_thread.run_sync(consume, net, "c", [{"name": "/native/doc"}])  # <- native producer
        assert results == [{"ok": True, "name": "/native/doc",
                            "content": b"published by a native icnd client".hex(), "content_type": 0}]
        # native consumer on C <- python-ndn producer on A, two hops.  An NDN face hands Data over
        # re-signed DigestSha256 (its NDN signature is not carried): integrity of the translation
        # only, which `verify=True` never accepts for a name nothing vouches for (docs/security.md)
        data = await c.fetch("/ndn/a/for-native", timeout=STEP, verify=False)
        assert data.content == b"ndn:/ndn/a/for-native"
        assert data.name == icnd.Name("/ndn/a/for-native")
        assert data.sig_type == icnd.SigType.DIGEST_SHA256
        with pytest.raises(icnd.VerificationError, match="digest-only"):
            await c.fetch("/ndn/a/for-native", timeout=STEP)


def test_pure_function_call_from_python_ndn(net):
    args = msgpack.packb([encode_value(21)], use_bin_type=True).hex()
    args2 = msgpack.packb([encode_value(50)], use_bin_type=True).hex()
    results = consume(net, "c", [{"name": "/fn/double", "app_param": args}])  # express_interest, unsigned
    results += consume(net, "c", [{"name": "/fn/double", "app_param": args2}], api="v2")  # signed Interest
    for result, want in zip(results, (42, 100)):
        assert result["ok"], result
        assert result["name"].startswith("/fn/double/params-sha256=")
        assert result["content_type"] == 0
        assert decode_value(bytes.fromhex(result["content"])) == want


async def test_register_forms_unregister_and_face_close(net):
    legacy = App(net, "a", "legacy-produce", {"prefixes": ["/ndn/legacy"]})
    try:
        assert legacy.line() == {"registered": {"/ndn/legacy": True}}  # 4-component command Interest
        results = await trio.to_thread.run_sync(consume, net, "a", [{"name": "/ndn/legacy/x"}])
        assert results[0]["ok"] and bytes.fromhex(results[0]["content"]) == b"ndn:/ndn/legacy/x"
        routes = {r["prefix"] for r in await native_routes(net, "a")}
        assert "/ndn/legacy" in routes
        assert legacy.command(unregister="/ndn/legacy") == {"unregistered": True}
        routes = {r["prefix"] for r in await native_routes(net, "a")}
        assert "/ndn/legacy" not in routes
    finally:
        legacy.stop()
    app = App(net, "a", "produce", {"prefixes": ["/ndn/short-lived"]})
    try:
        assert app.line() == {"registered": {"/ndn/short-lived": True}}
        assert "/ndn/short-lived" in {r["prefix"] for r in await native_routes(net, "a")}
    finally:
        app.stop()
    with trio.fail_after(STEP):  # the face closed: its routes went with it
        while "/ndn/short-lived" in {r["prefix"] for r in await native_routes(net, "a")}:
            await trio.sleep(0.05)


# --- protocol details, against an in-process node ---------------------------------------------


@pytest.fixture
async def node(tmp_path, nursery):
    cfg = NodeConfig(name="/node/local", socket=str(tmp_path / "n.sock"), listen=["tcp://127.0.0.1:0"],
                     ndn_listen=[f"unix://{tmp_path}/nfd/nfd.sock", "tcp://127.0.0.1:0"])
    n = Node(cfg)
    await n.bind()
    await nursery.start(n.serve)
    return n


class RawNdn:
    """A raw NDN stream connection: TLV blocks back to back."""

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.sock = sock
        self.buf = b""

    @classmethod
    async def connect(cls, uri: str) -> "RawNdn":
        if uri.startswith("unix://"):
            sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            await sock.connect(uri[len("unix://"):])
        else:
            host, _, port = uri[len("tcp://"):].rpartition(":")
            sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            await sock.connect((host, int(port)))
        return cls(sock)

    async def send(self, wire: bytes) -> None:
        await self.sock.send(bytes(wire))

    async def recv(self) -> bytes:
        with trio.fail_after(STEP):
            while True:
                if self.buf:
                    typ, n1 = ndn_enc.parse_tl_num(self.buf)
                    if len(self.buf) > n1:
                        length, n2 = ndn_enc.parse_tl_num(self.buf, n1)
                        total = n1 + n2 + length
                        if len(self.buf) >= total:
                            frame, self.buf = self.buf[:total], self.buf[total:]
                            return frame
                chunk = await self.sock.recv(65536)
                assert chunk, "connection closed"
                self.buf += chunk

    def close(self) -> None:
        self.sock.close()


def _interest(name: str, **kw) -> bytes:
    kw.setdefault("nonce", 0x01020304)
    kw.setdefault("lifetime", 2000)
    return bytes(ndn_enc.make_interest(name, ndn_enc.InterestParam(**kw)))


def _name_tlv(uri: str) -> bytes:
    return bytes(ndn_enc.Name.encode(ndn_enc.Name.from_str(uri)))


def _command(verb: str, cp_value: bytes, scope: str = "localhost") -> bytes:
    """A 4-component (legacy) command Interest with the given ControlParameters value."""
    cp = b"\x68" + bytes([len(cp_value)]) + cp_value
    name = ndn_enc.Name.from_str(f"/{scope}/nfd/rib/{verb}") + [
        ndn_enc.Component.from_bytes(cp), ndn_enc.Component.from_bytes(b"\x00" * 8),
        ndn_enc.Component.from_bytes(b"\x01" * 8), ndn_enc.Component.from_bytes(b"\x16\x03\x1b\x01\x00"),
        ndn_enc.Component.from_bytes(b"\x17\x20" + b"\x00" * 32)]
    return bytes(ndn_enc.make_interest(name, ndn_enc.InterestParam(nonce=7, lifetime=1000)))


async def test_register_reply_and_errors_carry_a_body(node):
    raw = await RawNdn.connect(node.ndn_listen_uris()[0])
    try:
        # a good registration, FaceId absent: the requesting face, defaults filled in
        await raw.send(_command("register", _name_tlv("/raw/prefix")))
        name, meta, content, sig = ndn_enc.parse_data(await raw.recv())
        assert ndn_enc.Name.to_str(name).startswith("/localhost/nfd/rib/register/")
        assert sig.signature_info.signature_type == 0  # DigestSha256
        response = nfd_mgmt.parse_response(content)
        assert response["status_code"] == 200
        assert ndn_enc.Name.to_str(response["name"]) == "/raw/prefix"
        assert response["face_id"] > 0 and response["origin"] == 0 and response["cost"] == 0
        assert response["flags"] == 1
        assert any(e.prefix == icnd.Name("/raw/prefix") for e in node.fw.fib)
        # errors: no Name (400) and an unknown face (410), each with a ControlParameters body
        await raw.send(_command("register", b"\x6a\x01\x05"))
        response = nfd_mgmt.parse_response(ndn_enc.parse_data(await raw.recv())[2])
        assert response["status_code"] == 400 and response["cost"] == 5  # (parse_response needs the body)
        await raw.send(_command("register", _name_tlv("/x") + b"\x69\x02\x7f\xff"))
        response = nfd_mgmt.parse_response(ndn_enc.parse_data(await raw.recv())[2])
        assert response["status_code"] == 410 and response["face_id"] == 0x7FFF
        # remote registration is refused
        await raw.send(_command("register", _name_tlv("/remote"), scope="localhop"))
        response = nfd_mgmt.parse_response(ndn_enc.parse_data(await raw.recv())[2])
        assert response["status_code"] == 403
        # unregister
        await raw.send(_command("unregister", _name_tlv("/raw/prefix")))
        response = nfd_mgmt.parse_response(ndn_enc.parse_data(await raw.recv())[2])
        assert response["status_code"] == 200
        assert not any(e.prefix == icnd.Name("/raw/prefix") for e in node.fw.fib)
    finally:
        raw.close()


async def test_register_origins_and_expiration_period(node):
    """NFD route origins map onto icnd's (255 static, 128 routing, others app),
    and a registration with an ExpirationPeriod is removed when it runs out."""
    raw = await RawNdn.connect(node.ndn_listen_uris()[0])
    try:
        for uri, origin, expected in (("/o/static", 255, "static"), ("/o/nlsr", 128, "routing"),
                                      ("/o/client", 65, "app")):
            await raw.send(_command("register", _name_tlv(uri) + b"\x6f\x01" + bytes([origin])))
            response = nfd_mgmt.parse_response(ndn_enc.parse_data(await raw.recv())[2])
            assert response["status_code"] == 200 and response["origin"] == origin
            assert [r.origin for r in node.fw.rib.routes(icnd.Name(uri))] == [expected]
        registered = trio.current_time()
        await raw.send(_command("register", _name_tlv("/o/short") + b"\x6d\x02\x01\x2c"))  # 300 ms
        response = nfd_mgmt.parse_response(ndn_enc.parse_data(await raw.recv())[2])
        assert response["status_code"] == 200 and response["expiration_period"] == 300
        assert node.fw.fib.get(icnd.Name("/o/short")) is not None
        with trio.fail_after(STEP):
            while node.fw.fib.get(icnd.Name("/o/short")) is not None:
                await trio.sleep(0.01)
        assert trio.current_time() - registered >= 0.29
        assert node.fw.rib.routes(icnd.Name("/o/short")) == []
        assert node.fw.fib.get(icnd.Name("/o/nlsr")) is not None  # routes without a period stay
        # unregister names the origin: the NLSR-origin route goes, an app one would not
        await raw.send(_command("unregister", _name_tlv("/o/nlsr")))  # origin absent: 0 (app)
        assert nfd_mgmt.parse_response(ndn_enc.parse_data(await raw.recv())[2])["status_code"] == 200
        assert node.fw.fib.get(icnd.Name("/o/nlsr")) is not None
        await raw.send(_command("unregister", _name_tlv("/o/nlsr") + b"\x6f\x01\x80"))
        assert nfd_mgmt.parse_response(ndn_enc.parse_data(await raw.recv())[2])["status_code"] == 200
        assert node.fw.fib.get(icnd.Name("/o/nlsr")) is None
    finally:
        raw.close()


async def test_pit_tokens_are_echoed(node):
    node.published.publish(node.key.sign(icnd.Data(icnd.Name("/tok/data"), b"tokens", freshness_ms=10_000)))
    raw = await RawNdn.connect(node.ndn_listen_uris()[1])  # over TCP this time
    try:
        for name, token in (("/tok/data", b"\xaa\xbb\xcc\xdd"), ("/tok/missing", b"\x01\x02")):
            lp = ndnlp_v2.LpPacket()
            lp.lp_packet = ndnlp_v2.LpPacketValue()
            lp.lp_packet.pit_token = token
            lp.lp_packet.fragment = _interest(name)
            await raw.send(lp.encode())
            reply = ndnlp_v2.LpPacket.parse(await raw.recv())
            assert bytes(reply.lp_packet.pit_token) == token
            if name == "/tok/data":
                data_name, _, content, _ = ndn_enc.parse_data(reply.lp_packet.fragment)
                assert bytes(content) == b"tokens"
            else:
                assert reply.lp_packet.nack is not None and reply.lp_packet.nack.nack_reason == 150
                nacked, _, _, _ = ndn_enc.parse_interest(reply.lp_packet.fragment)
                assert ndn_enc.Name.to_str(nacked) == "/tok/missing"
        # and a bare Interest gets a bare answer
        await raw.send(_interest("/tok/data", nonce=99))
        assert (await raw.recv())[0] == 0x06
    finally:
        raw.close()


async def test_status_datasets(node):
    raw = await RawNdn.connect(node.ndn_listen_uris()[0])
    try:
        await raw.send(_interest("/localhost/nfd/status/general", can_be_prefix=True, must_be_fresh=True))
        name, meta, content, _ = ndn_enc.parse_data(await raw.recv())
        assert ndn_enc.Component.get_type(name[-1]) == ndn_enc.Component.TYPE_SEGMENT
        assert ndn_enc.Component.get_type(name[-2]) == ndn_enc.Component.TYPE_VERSION
        status = nfd_mgmt.GeneralStatus.parse(content)
        assert status.nfd_version.startswith("icnd ")
        assert status.n_fib_entries >= 1
        await raw.send(_interest("/localhost/nfd/faces/list", can_be_prefix=True, must_be_fresh=True, nonce=5))
        name, meta, content, _ = ndn_enc.parse_data(await raw.recv())
        faces = nfd_mgmt.FaceStatusMsg.parse(content).face_status
        mine = [f for f in faces if f.local_uri == node.ndn_listen_uris()[0]]
        assert len(mine) == 1 and mine[0].face_scope.value == 1 and mine[0].n_in_interests == 2
        # icnd's own face list tells NDN faces apart
        listed = await node.mgmt.handlers["face", "list"](None, {})
        assert [f["wire_format"] for f in listed if f["local_uri"] == node.ndn_listen_uris()[0]] == ["ndn"]
    finally:
        raw.close()


async def test_python_ndn_over_tcp(node, tmp_path):
    node.published.publish(node.key.sign(icnd.Data(icnd.Name("/tcp/data"), b"over tcp", freshness_ms=10_000)))
    net = Net(tmp_path)
    tcp = node.ndn_listen_uris()[1]
    result = await trio.to_thread.run_sync(lambda: consume(net, "x", [{"name": "/tcp/data"}], transport=tcp))
    assert result == [{"ok": True, "name": "/tcp/data", "content": b"over tcp".hex(), "content_type": 0}]


def test_config_and_flags(tmp_path):
    from icnd.cli import build_parser, build_config
    from icnd.daemon.config import ConfigError, from_dict

    cfg = from_dict({"ndn-listen": ["unix:///run/nfd/nfd.sock", "tcp://0.0.0.0:6363"]})
    assert cfg.ndn_listen == ["unix:///run/nfd/nfd.sock", "tcp://0.0.0.0:6363"]
    with pytest.raises(ConfigError, match="ndn_listen"):
        from_dict({"ndn_listen": ["udp://127.0.0.1:6363"]})
    args = build_parser().parse_args(["run", "--ndn-listen", "unix:///tmp/x.sock", "--ndn-listen", "tcp://[::1]:6363"])
    assert build_config(args).ndn_listen == ["unix:///tmp/x.sock", "tcp://[::1]:6363"]
