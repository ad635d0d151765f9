"""The `icnd` command line against real daemons (subprocesses).

One daemon serves the management, ping, publish/fetch tests (module
fixture); start-up failures and shutdown get daemons of their own.  Every
daemon is killed in a finalizer whatever happens.  Output is parsed from
``--json`` where the command has it; the human tables are only smoke-tested.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import time
from pathlib import Path

import pytest
import trio

from icnd import connect
from icnd.security import Ed25519Key
from icnd.testing.processes import Daemon, one_line_error
from icnd.testing.processes import run_cli as icnd

READY_TIMEOUT = 10.0

REQUIRED_COUNTERS = (
    "interests_in", "interests_out", "data_in", "data_out", "nacks_in", "nacks_out",
    "cs_hits", "cs_misses", "unsolicited_data", "decode_errors", "pit_aggregated",
)
REQUIRED_TABLES = ("pit_entries", "fib_entries", "cs_entries", "cs_bytes", "faces")


def icnd_json(*args: str, sock: Path) -> object:
    r = icnd(*args, "--socket", str(sock), "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cli-node")
    daemon = Daemon(workdir, "--name", "/node/t", "--listen", "udp://127.0.0.1:0", "--listen", "tcp://127.0.0.1:0")
    try:
        daemon.wait_ready(READY_TIMEOUT)
        yield daemon
    finally:
        daemon.kill()


@pytest.fixture
def udp_port():
    """A UDP port with a socket bound to it (so a face to it has a peer address)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    try:
        yield s.getsockname()[1]
    finally:
        s.close()


# --- management ------------------------------------------------------------------------


def test_status_json_has_the_documented_keys(node):
    status = icnd_json("status", sock=node.sock)
    assert status["name"] == "/node/t"
    assert isinstance(status["version"], str) and status["version"]
    assert status["uptime_s"] >= 0
    for key in REQUIRED_COUNTERS:
        assert isinstance(status["counters"][key], int), key
    for key in REQUIRED_TABLES:
        assert isinstance(status["tables"][key], int), key
    human = icnd("status", "--socket", str(node.sock))
    assert human.returncode == 0
    assert "/node/t" in human.stdout.decode() and "interests_in" in human.stdout.decode()


def test_face_create_list_destroy(node, udp_port):
    uri = f"udp://127.0.0.1:{udp_port}"
    face = icnd_json("face", "create", uri, sock=node.sock)
    assert face["remote_uri"] == uri and face["persistent"] is True and face["wire_format"] == "icnd"
    faces = icnd_json("face", "list", sock=node.sock)
    assert any(f["id"] == face["id"] and f["remote_uri"] == uri for f in faces)
    assert any(f["local"] for f in faces)  # the CLI's own connection
    table = icnd("face", "list", "--socket", str(node.sock)).stdout.decode()
    assert uri in table and "persistent" in table

    assert icnd_json("face", "destroy", str(face["id"]), sock=node.sock) == {"id": face["id"]}
    deadline = time.monotonic() + 5
    while any(f["id"] == face["id"] for f in icnd_json("face", "list", sock=node.sock)):
        assert time.monotonic() < deadline, "destroyed face still listed"
        time.sleep(0.1)


def test_route_add_list_remove(node, udp_port):
    uri = f"udp://127.0.0.1:{udp_port}"
    added = icnd_json("route", "add", "/test/route", uri, "--cost", "7", sock=node.sock)
    assert added["prefix"] == "/test/route" and added["cost"] == 7
    face_id = added["face"]
    by_id = icnd_json("route", "add", "/test/other", str(face_id), sock=node.sock)
    assert by_id == {"prefix": "/test/other", "face": face_id, "cost": 0, "origin": "static"}

    routes = {r["prefix"]: r["nexthops"] for r in icnd_json("route", "list", sock=node.sock)}
    assert {"face": face_id, "cost": 7, "uri": uri, "origin": "static"} in routes["/test/route"]
    assert routes["/node/t"][0]["origin"] == "app"  # the node's own prefix

    assert icnd_json("route", "remove", "/test/route", str(face_id), sock=node.sock) == {
        "prefix": "/test/route", "face": face_id, "origins": ["static"]}
    assert icnd_json("route", "remove", "/test/other", uri, sock=node.sock)["face"] == face_id
    prefixes = {r["prefix"] for r in icnd_json("route", "list", sock=node.sock)}
    assert not {"/test/route", "/test/other"} & prefixes


async def test_route_origins_static_and_app(node, udp_port):
    """A static route (``route add``) and an application's own route
    (`Client.serve`) for one prefix: both listed with their origins, the
    cheapest first; the app's goes when it stops serving, the static stays."""
    uri = f"udp://127.0.0.1:{udp_port}"

    def cli(*args: str) -> object:
        return icnd_json(*args, sock=node.sock)

    added = await trio.to_thread.run_sync(cli, "route", "add", "/test/origins", uri, "--cost", "3")
    assert added["origin"] == "static"
    async with connect(str(node.sock)) as c:
        async with c.serve("/test/origins", lambda interest: b"served", cost=5):
            routes = {r["prefix"]: r for r in await trio.to_thread.run_sync(cli, "route", "list")}
            entry = routes["/test/origins"]
            assert (entry["origin"], entry["cost"]) == ("static", 3)  # the cheapest route's
            assert [(h["origin"], h["cost"]) for h in entry["nexthops"]] == [("static", 3), ("app", 5)]
            app_face = entry["nexthops"][1]["face"]
            assert app_face != added["face"]  # the client's own face
            table = (await trio.to_thread.run_sync(
                lambda: icnd("route", "list", "--socket", str(node.sock)))).stdout.decode()
            assert "ORIGIN" in table.splitlines()[0]
            lines = [line.split() for line in table.splitlines() if line.startswith("/test/origins")]
            assert sorted(line[3] for line in lines) == ["app", "static"]
            # removing an origin the face has no route of fails and changes nothing
            r = await trio.to_thread.run_sync(
                lambda: icnd("route", "remove", "/test/origins", str(app_face), "--origin", "routing",
                             "--socket", str(node.sock)))
            assert r.returncode == 1 and "no routing route" in one_line_error(r)
        with trio.fail_after(5):  # serve's end removed the app route (its command is sent on the way out)
            while True:
                routes = {r["prefix"]: r for r in await trio.to_thread.run_sync(cli, "route", "list")}
                if [h["origin"] for h in routes["/test/origins"]["nexthops"]] == ["static"]:
                    break
                await trio.sleep(0.05)
    removed = await trio.to_thread.run_sync(cli, "route", "remove", "/test/origins", uri)
    assert removed["origins"] == ["static"]
    status = await trio.to_thread.run_sync(cli, "status")
    assert status["tables"]["rib_routes"] >= 1 and status["counters"]["rib_refused"] == 0


def test_route_add_refuses_the_routing_origin(node):
    r = icnd("route", "add", "/test/x", "self", "--origin", "routing", "--socket", str(node.sock))
    assert r.returncode == 2  # not a choice: routing routes come from the routing protocol


def test_strategy_set_list_unset(node):
    assert icnd_json("strategy", "set", "/test/strat", "multicast", sock=node.sock) == {
        "prefix": "/test/strat", "strategy": "multicast"}
    choices = icnd_json("strategy", "list", sock=node.sock)
    assert {"prefix": "/test/strat", "strategy": "multicast"} in choices
    assert any(c["prefix"] == "/" for c in choices)
    assert icnd_json("strategy", "unset", "/test/strat", sock=node.sock) == {"prefix": "/test/strat"}
    assert all(c["prefix"] != "/test/strat" for c in icnd_json("strategy", "list", sock=node.sock))

    r = icnd("strategy", "set", "/test/strat", "no-such-strategy", "--socket", str(node.sock))
    assert r.returncode == 1
    assert "no-such-strategy" in one_line_error(r)


def test_commands_on_a_nonexistent_face_fail_with_exit_1(node):
    r = icnd("face", "destroy", "9999", "--socket", str(node.sock))
    assert r.returncode == 1 and r.stdout == b""
    assert "no face 9999" in one_line_error(r)
    r = icnd("route", "add", "/test/x", "9999", "--socket", str(node.sock), "--json")
    assert r.returncode == 1
    assert "9999" in one_line_error(r)


def test_no_daemon_is_exit_1(tmp_path):
    r = icnd("status", "--socket", str(tmp_path / "nobody.sock"))
    assert r.returncode == 1
    assert "nobody.sock" in one_line_error(r)


def test_usage_errors_are_exit_2():
    assert icnd("route", "add", "/only-prefix").returncode == 2
    assert icnd("frobnicate").returncode == 2
    assert icnd("ping", "no-slash").returncode == 2


# --- using the network -----------------------------------------------------------------------


def test_publish_fetch_and_the_content_store(node, tmp_path):
    blob = bytes(range(256)) * 400 + os.urandom(1000)
    src = tmp_path / "blob.bin"
    src.write_bytes(blob)
    r = icnd("publish", "/demo/blob", str(src), "--freshness", "60", "--socket", str(node.sock))
    assert r.returncode == 0, r.stderr.decode()

    out = tmp_path / "out.bin"
    r = icnd("fetch", "/demo/blob", "-o", str(out), "--socket", str(node.sock))
    assert r.returncode == 0, r.stderr.decode()
    assert out.read_bytes() == blob
    r = icnd("fetch", "/demo/blob", "--socket", str(node.sock))
    assert r.returncode == 0 and r.stdout == blob

    r = icnd("publish", "/demo/stdin", "-", "--socket", str(node.sock), input=b"\x00from stdin\xff")
    assert r.returncode == 0, r.stderr.decode()
    r = icnd("fetch", "/demo/stdin", "--socket", str(node.sock))
    assert r.stdout == b"\x00from stdin\xff"

    cached = icnd_json("cs", "list", "--prefix", "/demo", sock=node.sock)
    for obj in ("/demo/blob/", "/demo/stdin/"):  # its manifest, cached on the way out
        assert any(e["name"].startswith(obj) and e["name"].endswith("/manifest") for e in cached), cached
    # the small object's segment too; the large one's came in shared memory from the node's store (#18)
    assert any(e["name"].startswith("/demo/stdin/") and e["name"].endswith("/seg=0") for e in cached), cached
    assert not any(e["name"].startswith("/demo/blob/") and "/seg=" in e["name"] for e in cached), cached
    assert all(e["size"] > 0 for e in cached)
    assert len(icnd_json("cs", "list", "--prefix", "/demo", "--limit", "1", sock=node.sock)) == 1
    assert icnd_json("cs", "erase", "/demo", sock=node.sock)["erased"] >= 2
    assert icnd_json("cs", "list", "--prefix", "/demo", sock=node.sock) == []

    r = icnd("fetch", "/demo/nothing-here", "--timeout", "1", "--socket", str(node.sock))
    assert r.returncode == 1 and r.stdout == b""
    one_line_error(r)


def test_publish_and_fetch_a_multi_segment_object(node, tmp_path):
    blob = os.urandom(3 * 1024 * 1024 + 17)
    src = tmp_path / "large.bin"
    src.write_bytes(blob)
    r = icnd("publish", "/demo/large", str(src), "--segment-size", "65536", "--socket", str(node.sock),
             timeout=30)
    assert r.returncode == 0, r.stderr.decode()
    assert b"49 segments" in r.stdout
    out = tmp_path / "large.out"
    r = icnd("fetch", "/demo/large", "-o", str(out), "--socket", str(node.sock), timeout=30)
    assert r.returncode == 0, r.stderr.decode()
    assert out.read_bytes() == blob
    r = icnd("publish", "/demo/bad", str(src), "--segment-size", "10", "--socket", str(node.sock))
    assert r.returncode == 1 and "segment size" in one_line_error(r)


def test_fetch_output_is_all_or_nothing(node, tmp_path):
    """D13 (issue #15): -o writes a temporary file beside FILE and renames it on
    success; a failed fetch leaves FILE as it was and no temporary file."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "keep.bin"
    out.write_bytes(b"previous")
    r = icnd("fetch", "/demo/never-published", "-o", str(out), "--timeout", "1", "--socket", str(node.sock))
    assert r.returncode == 1
    one_line_error(r)
    assert out.read_bytes() == b"previous" and os.listdir(out_dir) == ["keep.bin"]
    r = icnd("publish", "/demo/atomic", "-", "--socket", str(node.sock), input=b"new contents")
    assert r.returncode == 0, r.stderr.decode()
    r = icnd("fetch", "/demo/atomic", "-o", str(out), "--socket", str(node.sock))
    assert r.returncode == 0, r.stderr.decode()
    assert out.read_bytes() == b"new contents" and os.listdir(out_dir) == ["keep.bin"]


def test_ping_own_prefix_and_counters(node):
    before = icnd_json("status", sock=node.sock)["counters"]
    r = icnd("ping", "/node/t", "-c", "3", "-i", "0.05", "--socket", str(node.sock))
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert out.count("content from /node/t: seq=") == 3
    assert "3 packets transmitted, 3 received, 0% packet loss" in out
    assert "rtt min/avg/max/mdev = " in out
    after = icnd_json("status", sock=node.sock)["counters"]
    assert after["interests_in"] >= before["interests_in"] + 3
    assert after["data_out"] >= before["data_out"] + 3

    r = icnd("ping", "/no/such/prefix", "-c", "1", "--timeout", "1", "--socket", str(node.sock))
    assert r.returncode == 1
    assert "nack from /no/such/prefix: seq=0 reason=no-route" in r.stdout.decode()
    assert "1 packets transmitted, 0 received, 100% packet loss" in r.stdout.decode()


def test_keygen(tmp_path):
    out = tmp_path / "alice.key"
    r = icnd("keygen", "--out", str(out), "--name", "/alice")
    assert r.returncode == 0, r.stderr.decode()
    key_name = r.stdout.decode().strip()
    assert key_name.startswith("/alice/KEY/")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    key = Ed25519Key.from_bytes(out.read_bytes())
    assert key.name.to_uri() == key_name

    before = out.read_bytes()
    r = icnd("keygen", "--out", str(out), "--name", "/alice")
    assert r.returncode == 1
    assert "refusing to overwrite" in one_line_error(r)
    assert out.read_bytes() == before


# --- the daemon's life ----------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_shuts_down_cleanly(tmp_path, signum):
    config = tmp_path / "node.toml"
    config.write_text('name = "/node/fromfile"\nlisten = ["udp://127.0.0.1:0"]\nlog_level = "warning"\n')
    flags = ["--log-json", "--log-level", "info"] if signum == signal.SIGTERM else []
    daemon = Daemon(tmp_path, "--config", str(config), "--listen", "tcp://127.0.0.1:0",
                    "--function", "apps.functions:double=/fn/double", *flags)
    try:
        status = daemon.wait_ready(READY_TIMEOUT)
        assert status["name"] == "/node/fromfile"
        listen = status["listen"]
        assert any(u.startswith("tcp://127.0.0.1:") for u in listen)
        assert not any(u.startswith("udp://") for u in listen)  # the flag's list replaced the file's
        daemon.proc.send_signal(signum)
        assert daemon.proc.wait(timeout=10) == 0
    finally:
        daemon.kill()
    assert not daemon.sock.exists()
    stdout = daemon.stdout_path.read_text()
    assert stdout == "ready\n"  # one line once it serves: what scripts wait for
    stderr = daemon.stderr_path.read_text().splitlines()
    if signum == signal.SIGTERM:  # --log-json and the flag's level beat the file's "warning"
        records = [json.loads(line) for line in stderr]
        assert records and all({"ts", "level", "logger", "msg"} <= set(r) for r in records)
        assert any("SIGTERM" in r["msg"] for r in records)
        assert records[0]["ts"].endswith("Z")
    else:  # the file's "warning" level: no info lines
        assert stderr == []


def test_busy_port_is_exit_2_before_anything_starts(tmp_path):
    busy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    busy.bind(("127.0.0.1", 0))
    port = busy.getsockname()[1]
    try:
        r = icnd("run", "--socket", str(tmp_path / "b.sock"), "--listen", f"udp://127.0.0.1:{port}",
                 timeout=10)
    finally:
        busy.close()
    assert r.returncode == 2
    assert f"127.0.0.1:{port}" in one_line_error(r)
    assert r.stdout == b""
    assert not (tmp_path / "b.sock").exists()


def test_bad_config_is_exit_2_naming_file_and_key(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text('name = "/node/x"\nlisten_on = ["udp://127.0.0.1:0"]\n')
    r = icnd("run", "--config", str(config), "--socket", str(tmp_path / "x.sock"), timeout=10)
    assert r.returncode == 2
    line = one_line_error(r)
    assert str(config) in line and "listen_on" in line
    assert not (tmp_path / "x.sock").exists()

    r = icnd("run", "--route", "no-equals-sign", "--socket", str(tmp_path / "x.sock"), timeout=10)
    assert r.returncode == 2
    assert "--route" in one_line_error(r)


@pytest.mark.parametrize("key, value", [("default_strategy", "no-such-strategy"), ("function_pool", "fibers")])
def test_unknown_choice_is_a_config_error_naming_file_and_key(tmp_path, key, value):
    config = tmp_path / "choice.toml"
    config.write_text(f'{key} = "{value}"\n')
    r = icnd("run", "--config", str(config), "--socket", str(tmp_path / "x.sock"), timeout=10)
    assert r.returncode == 2
    line = one_line_error(r)
    assert str(config) in line and key in line


def test_unknown_function_pool_flag_is_a_usage_error(tmp_path):
    r = icnd("run", "--function-pool", "fibers", "--socket", str(tmp_path / "x.sock"), timeout=10)
    assert r.returncode == 2 and "--function-pool" in r.stderr.decode()
