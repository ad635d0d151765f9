"""Issue #19's newcomer friction in the CLI, each item as a new user meets it.

``status --wait`` and the compact ``status``; relative ``--socket`` paths;
``run --name`` without a leading slash; topologies that fail to start;
``route`` without a verb, a global ``--socket``, content type names, config
key suggestions; ``face link``; ``--json`` and transfer statistics on the
data commands, ``fetch``'s Interest flags and ``poke``.  What a command
sends and prints is checked against the fake node (conftest.py); what needs
a node's answer, against a real daemon (the module's `daemon`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from icnd.cli import build_parser, main
from icnd.cli.errors import CliError
from icnd.cli.nfdc import SUMMARY_COUNTERS, status_summary
from icnd.cli.options import merge_outer_options
from icnd.cli.topo import failure_line
from icnd.testing.processes import Daemon, free_ports, one_line_error, short_tempdir, stop_process
from icnd.testing.processes import run_cli as icnd
from icnd.testing.topology import start_background
from icnd.name import Name
from icnd.objects.fetch import FetchStats, fetch_object
from icnd.objects.manifest import segment_index
from icnd.objects.store import ObjectStore
from icnd.packet import Data, Interest, Nack
from icnd.security import Ed25519Key
from tests.cli.conftest import READY_TIMEOUT, FakeNode
from tests.fakes import StoreEndpoint, upload

ROOT = Path(__file__).resolve().parents[2]

STATUS: dict[str, Any] = {
    "name": "/node/a", "version": "0.1.0", "uptime_s": 3725.0, "pid": 42, "socket": "/run/icnd.sock",
    "listen": ["unix:///run/icnd.sock", "udp://127.0.0.1:6363"], "key": "/node/a/KEY/k",
    "counters": {**{key: i for i, key in enumerate(SUMMARY_COUNTERS)}, "agg_requests": 7, "fn_calls": 9},
    "tables": {"pit_entries": 3, "fib_entries": 5, "rib_routes": 6, "cs_entries": 10, "cs_bytes": 2048,
               "faces": 4, "lsdb_entries": 2},
}
NEIGHBOURS = [{"name": "/node/b", "uri": "tcp://10.0.0.2:6363", "state": "up"},
              {"name": None, "uri": "udp://10.0.0.3:6363", "state": "down"}]


def cli_json(*args: str, sock: str | Path) -> Any:
    r = icnd(*args, "--socket", str(sock), "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


# --- 1. status --wait ------------------------------------------------------------------------------


def test_status_wait_returns_once_a_node_started_later_answers(tmp_path) -> None:
    with short_tempdir() as workdir:
        sock = Path(workdir, "late.sock")
        waiter = subprocess.Popen([sys.executable, "-m", "icnd", "status", "--wait", "20", "--socket", str(sock)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        daemon = None
        try:
            time.sleep(0.5)  # the waiter polls a socket that is not there yet
            assert waiter.poll() is None
            daemon = Daemon(workdir, "--name", "/node/late", "--listen", "udp://127.0.0.1:0", name="late")
            out, err = waiter.communicate(timeout=READY_TIMEOUT + 5)
            assert waiter.returncode == 0, err.decode()
            assert out.decode().splitlines()[0].split() == ["name", "/node/late"]
        finally:
            stop_process(waiter)
            if daemon is not None:
                daemon.kill()


def test_status_wait_gives_up_with_one_line_and_exit_2(tmp_path) -> None:
    (tmp_path / "stale.sock").write_bytes(b"")  # a file nobody listens on: not ready either
    for name, why in (("nobody.sock", "no socket file"), ("stale.sock", "cannot connect")):
        started = time.monotonic()
        r = icnd("status", "--wait", "0.5", "--socket", str(tmp_path / name))
        assert r.returncode == 2 and r.stdout == b""
        line = one_line_error(r)
        assert f"no node ready at {tmp_path / name} within 0.5s" in line and why in line
        assert time.monotonic() - started < 10


def test_status_wait_of_a_running_node_prints_at_once(daemon) -> None:
    status = cli_json("status", "--wait", "5", sock=daemon.sock)
    assert status["name"] == "/node/t"


# --- 2. a compact status ---------------------------------------------------------------------------


def test_status_prints_a_summary_all_prints_everything_json_is_unchanged(node: FakeNode, capsys) -> None:
    node.results[("status", "get")] = STATUS
    node.results[("routing", "status")] = {"neighbors": NEIGHBOURS}
    assert main(["status"]) == 0
    summary = capsys.readouterr().out
    lines = summary.splitlines()
    assert len(lines) <= 20
    fields = {line.split(None, 1)[0]: line.split(None, 1)[1] for line in lines if line and not line[0].isspace()}
    assert fields["name"] == "/node/a" and fields["version"] == "0.1.0" and fields["uptime"] == "1h02m05s"
    assert fields["faces"] == "4" and fields["routes"] == "6 (5 FIB entries)"
    assert fields["pit"] == "3 entries" and fields["cs"] == "10 entries, 2048 bytes"
    assert fields["neighbours"] == "1 up, 1 down (udp://10.0.0.3:6363)"
    assert all(f"{key}={STATUS['counters'][key]}" in summary for key in SUMMARY_COUNTERS)
    assert "agg_requests" not in summary and "icnd status --all" in summary

    assert main(["status", "--all"]) == 0
    everything = capsys.readouterr().out
    assert "agg_requests" in everything and "fn_calls" in everything and "lsdb_entries" in everything

    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == STATUS
    assert [sent[1:3] for sent in node.sent] == [("status", "get"), ("routing", "status"), ("status", "get"),
                                                 ("status", "get")]


def test_status_summary_without_routing_has_no_neighbour_line(node: FakeNode, capsys) -> None:
    node.results[("status", "get")] = STATUS
    node.results[("routing", "status")] = CliError("routing status: routing is off on this node")
    assert main(["status"]) == 0
    assert "neighbours" not in capsys.readouterr().out
    assert "neighbours" not in status_summary(STATUS, [])


def test_status_of_a_real_node_is_short_and_names_it(daemon) -> None:
    r = icnd("status", "--socket", str(daemon.sock))
    assert r.returncode == 0, r.stderr.decode()
    text = r.stdout.decode()
    assert len(text.splitlines()) <= 20 and "/node/t" in text and "interests_in=" in text
    everything = icnd("status", "--all", "--socket", str(daemon.sock)).stdout.decode()
    assert len(everything.splitlines()) > 40


# --- 3. relative --socket paths --------------------------------------------------------------------


def test_relative_socket_is_resolved_for_every_command(daemon, tmp_path) -> None:
    [port] = free_ports(1)
    cwd = daemon.sock.parent
    r = icnd("route", "add", "/rel/route", f"udp://127.0.0.1:{port}", "--socket", daemon.sock.name, cwd=cwd)
    assert r.returncode == 0, r.stderr.decode()
    r = icnd("status", "--json", "--socket", f"./{daemon.sock.name}", cwd=cwd)
    assert r.returncode == 0 and json.loads(r.stdout)["name"] == "/node/t"
    r = icnd("--socket", daemon.sock.name, "route", "remove", "/rel/route", f"udp://127.0.0.1:{port}", cwd=cwd)
    assert r.returncode == 0, r.stderr.decode()
    for argv in (["status", "--socket", "x.sock"], ["run", "--socket", "x.sock"], ["--socket", "x.sock", "route"]):
        args = build_parser().parse_args(argv)
        merge_outer_options(args)
        assert args.socket == os.path.abspath("x.sock")


def test_run_with_a_relative_socket_serves_there(tmp_path) -> None:
    with short_tempdir() as workdir:
        proc = subprocess.Popen([sys.executable, "-m", "icnd", "run", "--name", "/node/r", "--socket", "rel.sock",
                                 "--listen", "udp://127.0.0.1:0"], cwd=workdir,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            r = icnd("status", "--wait", str(READY_TIMEOUT), "--json", "--socket", "rel.sock", cwd=workdir,
                     timeout=READY_TIMEOUT + 5)
            assert r.returncode == 0, r.stderr.decode()
            assert json.loads(r.stdout)["socket"] == os.path.join(workdir, "rel.sock")
        finally:
            stop_process(proc)


# --- 4. run --name without a leading slash -----------------------------------------------------------


@pytest.mark.parametrize("name, meant", [("node/z", "/node/z"), ("z", "/node/z")])
def test_run_refuses_a_name_without_a_slash_and_says_what_was_meant(tmp_path, name, meant) -> None:
    r = icnd("run", "--name", name, "--socket", str(tmp_path / "n.sock"), timeout=10)
    assert r.returncode == 2 and r.stdout == b""
    err = r.stderr.decode()
    assert "Traceback" not in err and f"bad name {name!r}" in err and f"did you mean {meant}?" in err
    assert not (tmp_path / "n.sock").exists()
    r = icnd("fetch", name)  # as fetch treats a name
    assert r.returncode == 2 and "a name URI starts with '/'" in r.stderr.decode()


# --- 5. topologies that cannot start ----------------------------------------------------------------


def test_a_node_that_fails_to_start_is_one_line_naming_it_exit_2(tmp_path) -> None:
    topology = tmp_path / "bad.toml"
    topology.write_text('[nodes.a]\nfunctions = ["no_such_module:f=/fn/f"]\n[nodes.b]\n'
                        '[[links]]\nends = ["a", "b"]\n')
    with short_tempdir() as workdir:
        r = icnd("topo", "up", str(topology), "--workdir", workdir, timeout=60)
    assert r.returncode == 2
    line = one_line_error(r)
    assert "node a exited" in line and "cannot import no_such_module" in line and "a.log" in line


async def test_a_second_topo_up_on_a_busy_workdir_is_one_line_exit_2(tmp_path) -> None:
    topology = tmp_path / "two.toml"
    topology.write_text('[nodes.a]\n[nodes.b]\n[[links]]\nends = ["a", "b"]\n')
    with short_tempdir() as workdir:
        proc, _ = await start_background(topology, workdir, tmp_path / "up.out", cwd=ROOT)
        try:
            r = await trio.to_thread.run_sync(lambda: icnd("topo", "up", str(topology), "--workdir", workdir))
            assert r.returncode == 2
            line = one_line_error(r)
            assert f"a topology is already running in {workdir}" in line and "icnd topo down" in line
            down = await trio.to_thread.run_sync(lambda: icnd("topo", "down", "--workdir", workdir, "--json"))
            assert down.returncode == 0, down.stderr.decode()
            assert json.loads(down.stdout) == {"workdir": workdir, "running": True, "stopped": True,
                                               "message": f"stopped the topology in {workdir} "
                                                          f"(launcher pid {proc.pid})"}
            with trio.fail_after(15):
                while proc.poll() is None:
                    await trio.sleep(0.05)
        finally:
            stop_process(proc)


def test_failure_line_keeps_the_node_the_cause_and_the_log() -> None:
    message = ("t.toml: node a exited with code 2 while starting; end of /w/a.log:\n"
               "2026-01-01 INFO starting\nicnd: error: --listen udp://127.0.0.1:1: address in use\n"
               "node b was not ready within 10s; end of /w/b.log")
    assert failure_line(message) == ("t.toml: node a exited with code 2 while starting: --listen "
                                     "udp://127.0.0.1:1: address in use (log: /w/a.log); 1 other node(s) failed too")
    assert failure_line("t.toml: node c was not ready within 10s; end of /w/c.log:\nTraceback\nKeyError: 'x'") == (
        "t.toml: node c was not ready within 10s: KeyError: 'x' (log: /w/c.log)")
    assert failure_line("netns: cannot create\nsecond line") == "netns: cannot create second line"


async def test_topo_up_json_prints_the_nodes_once_ready(tmp_path) -> None:
    topology = tmp_path / "two.toml"
    topology.write_text('[nodes.a]\n[nodes.b]\n[[links]]\nends = ["a", "b"]\n')
    with short_tempdir() as workdir:
        proc = subprocess.Popen([sys.executable, "-m", "icnd", "topo", "up", str(topology), "--workdir", workdir,
                                 "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
        try:
            assert proc.stdout is not None
            line = await trio.to_thread.run_sync(proc.stdout.readline)
            ready = json.loads(line)
            assert ready["workdir"] == workdir and set(ready["nodes"]) == {"a", "b"}
            a = ready["nodes"]["a"]
            assert a["socket"] == os.path.join(workdir, "a.sock") and a["prefix"] == "/node/a"
            assert a["udp"].startswith("udp://127.0.0.1:") and isinstance(a["pid"], int)
            status = await trio.to_thread.run_sync(lambda: cli_json("status", sock=a["socket"]))
            assert status["name"] == "/node/a"
            r = await trio.to_thread.run_sync(lambda: icnd("topo", "down", "--workdir", workdir))
            assert r.returncode == 0, r.stderr.decode()
        finally:
            stop_process(proc)


# --- 6. route alone, a global --socket, content type names, config key hints ----------------------


def test_route_without_a_verb_lists(node: FakeNode, capsys) -> None:
    node.results[("route", "list")] = [
        {"prefix": "/a", "origin": "static", "cost": 1, "nexthops": [
            {"face": 3, "uri": "udp://10.0.0.1:6363", "cost": 1, "origin": "static"}]}]
    assert main(["route"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == ["/a", "3", "1", "static", "udp://10.0.0.1:6363"]
    assert main(["--socket", "/g.sock", "route", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == node.results[("route", "list")]
    assert main(["route", "--socket", "/r.sock", "list"]) == 0
    assert [s[:3] for s in node.sent] == [(None, "route", "list"), ("/g.sock", "route", "list"),
                                          ("/r.sock", "route", "list")]
    with pytest.raises(SystemExit) as info:
        main(["face"])  # groups without a listing default still want their verb
    assert info.value.code == 2


def test_global_socket_before_the_command_and_the_command_own_after_it(node: FakeNode, capsys) -> None:
    node.results[("status", "get")] = STATUS
    node.results[("face", "list")] = []
    assert main(["--socket", "/global.sock", "status", "--json"]) == 0
    assert main(["--socket", "/global.sock", "face", "list", "--socket", "/verb.sock"]) == 0
    assert main(["face", "list", "--socket", "rel.sock"]) == 0
    capsys.readouterr()
    assert [s[0] for s in node.sent] == ["/global.sock", "/verb.sock", os.path.abspath("rel.sock")]


def test_cs_list_names_content_types(node: FakeNode, capsys) -> None:
    node.results[("cs", "list")] = [
        {"name": "/o/v=1/manifest", "size": 90, "fresh": True, "content_type": 6},
        {"name": "/k", "size": 300, "fresh": False, "content_type": 2},
        {"name": "/x", "size": 1, "fresh": True, "content_type": 99}]
    assert main(["cs", "list"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[-1] for row in rows] == ["manifest", "key", "99"]
    assert main(["cs", "list", "--json"]) == 0
    assert [e["content_type"] for e in json.loads(capsys.readouterr().out)] == [6, 2, 99]  # JSON unchanged


@pytest.mark.parametrize("key, hint", [("listn", "; did you mean 'listen'?"),
                                       ("neighbour", "; did you mean 'neighbor'?"), ("frobnicate", "")])
def test_unknown_config_key_suggests_the_closest_known_one(tmp_path, capsys, key, hint) -> None:
    config = tmp_path / "typo.toml"
    config.write_text(f'{key} = "x"\n')
    assert main(["run", "--config", str(config), "--socket", str(tmp_path / "x.sock")]) == 2  # before it starts
    assert capsys.readouterr().err == f"icnd: error: {config}: unknown key {key!r}{hint}\n"
    assert not (tmp_path / "x.sock").exists()


# --- 7. face link ------------------------------------------------------------------------------------


def test_face_link_sets_delay_loss_bandwidth_and_cuts(daemon) -> None:
    [port] = free_ports(1)
    uri = f"udp://127.0.0.1:{port}"
    face = cli_json("face", "link", uri, "--delay-ms", "20", "--loss", "0.25", "--bandwidth-mbps", "8",
                    "--queue-bytes", "50000", "--seed", "1", sock=daemon.sock)
    assert face["remote_uri"] == uri
    link = face["link"]
    assert (link["delay_ms"], link["loss"], link["bandwidth_mbps"], link["queue_bytes"], link["up"]) == (
        20, 0.25, 8, 50000, True)
    cut = cli_json("face", "link", str(face["id"]), "--down", sock=daemon.sock)["link"]
    assert cut["up"] is False and cut["delay_ms"] == 20  # what is not given stays
    r = icnd("face", "link", str(face["id"]), "--up", "--loss", "0", "--socket", str(daemon.sock))
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().splitlines()[0] == (
        f"face {face['id']} {uri}: delay 20 ms, loss 0, bandwidth 8 Mbit/s, queue 50000 bytes, up")
    icnd("face", "destroy", str(face["id"]), "--socket", str(daemon.sock))


@pytest.mark.parametrize("bad", [["--loss", "1.5"], ["--delay-ms", "-1"], ["--bandwidth-mbps", "x"],
                                 ["--queue-bytes", "0"]])
def test_face_link_bad_values_are_usage_errors(node: FakeNode, capsys, bad: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["face", "link", "3", *bad])
    assert info.value.code == 2 and bad[0] in capsys.readouterr().err and node.sent == []


def test_face_link_is_in_the_help_and_the_docs() -> None:
    assert "link" in build_parser().parse_args(["face", "link", "1"]).verb
    docs = (ROOT / "docs" / "management.md").read_text()
    assert "`face/link`" in docs and "icnd face link" in docs


# --- 8. --json, transfer statistics, fetch's Interest flags, poke ---------------------------------------


def test_publish_and_fetch_json_and_statistics(daemon, tmp_path) -> None:
    blob = os.urandom(5 * 4096 + 10)
    (tmp_path / "in.bin").write_bytes(blob)
    published = cli_json("publish", "/first/blob", str(tmp_path / "in.bin"), "--segment-size", "4096",
                         sock=daemon.sock)
    assert {k: published[k] for k in ("name", "bytes", "segments", "segment_size")} == {
        "name": "/first/blob", "bytes": len(blob), "segments": 6, "segment_size": 4096}
    assert published["version"] > 0 and published["seconds"] > 0 and published["goodput_mbps"] > 0

    out = tmp_path / "out.bin"
    fetched = cli_json("fetch", "/first/blob", "-o", str(out), sock=daemon.sock)
    assert out.read_bytes() == blob
    assert {k: fetched[k] for k in ("name", "bytes", "segments", "output")} == {
        "name": "/first/blob", "bytes": len(blob), "segments": 6, "output": str(out)}
    # (a small object: over the network even from the node that stores it; a large one would come in
    # shared memory, tests/integration/test_object_shm.py)
    assert not fetched["shared_memory"]
    assert fetched["interests"] == fetched["segments"] + fetched["retransmissions"]
    assert fetched["seconds"] > 0 and fetched["goodput_mbps"] > 0

    r = icnd("fetch", "/first/blob", "--socket", str(daemon.sock))
    assert r.returncode == 0 and r.stdout == blob
    stats = r.stderr.decode().splitlines()
    assert len(stats) == 1 and stats[0].startswith(f"fetched /first/blob: {len(blob)} bytes in 6 segments, ")
    assert "goodput" in stats[0] and "0 retransmissions (6 Interests)" in stats[0]
    assert icnd("fetch", "/first/blob", "-q", "--socket", str(daemon.sock)).stderr == b""

    r = icnd("fetch", "/first/blob", "--json", "--socket", str(daemon.sock))
    assert r.returncode == 2 and "needs -o FILE" in one_line_error(r)


def test_poke_and_fetch_with_interest_flags(daemon, tmp_path) -> None:
    r = icnd("poke", "/first/note", "--freshness", "0.05", "--socket", str(daemon.sock), input=b"hello")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode() == "published /first/note (5 bytes, one Data, freshness 0.05 s)\n"
    poked = cli_json("poke", "/first/other", "-", sock=daemon.sock)  # stdin empty: an empty Data
    assert poked == {"name": "/first/other", "bytes": 0, "freshness_ms": 3600000, "content_type": "blob"}

    assert icnd("fetch", "/first/note", "-q", "--socket", str(daemon.sock)).stdout == b"hello"
    r = icnd("publish", "/peek/obj", "-", "-q", "--socket", str(daemon.sock), input=b"an object")
    assert r.returncode == 0, r.stderr.decode()
    out = tmp_path / "peeked"
    peek = cli_json("fetch", "/peek/obj", "--can-be-prefix", "--lifetime", "2000", "-o", str(out), sock=daemon.sock)
    assert peek["name"].startswith("/peek/obj/v=") and peek["name"].endswith("/manifest")  # what answers the prefix
    assert out.stat().st_size == peek["bytes"] > 0
    assert (peek["segments"], peek["interests"], peek["retransmissions"], peek["output"]) == (1, 1, 0, str(out))
    r = icnd("fetch", "/peek/obj", "--lifetime", "500", "--timeout", "1", "--socket", str(daemon.sock))
    assert r.returncode == 1  # without CanBePrefix only a Data named /peek/obj itself answers
    time.sleep(0.1)  # past its freshness: a MustBeFresh Interest is not answered from the cache
    r = icnd("fetch", "/first/note", "--must-be-fresh", "--timeout", "2", "-q", "--socket", str(daemon.sock))
    assert r.returncode == 0 and r.stdout == b"hello"  # the repo answers it again, fresh
    r = icnd("fetch", "/first/nothing", "--lifetime", "300", "--timeout", "1", "--socket", str(daemon.sock))
    assert r.returncode == 1 and r.stdout == b""
    one_line_error(r)
    for bad in ("0", "60001", "x"):
        assert icnd("fetch", "/first/note", "--lifetime", bad).returncode == 2


def test_ping_json(daemon) -> None:
    r = icnd("ping", "/node/t", "-c", "2", "-i", "0.05", "--json", "--socket", str(daemon.sock))
    assert r.returncode == 0, r.stderr.decode()
    result = json.loads(r.stdout)
    assert {k: result[k] for k in ("prefix", "sent", "received", "loss_percent")} == {
        "prefix": "/node/t", "sent": 2, "received": 2, "loss_percent": 0.0}
    assert set(result["rtt_ms"]) == {"min", "avg", "max", "mdev"}
    assert [(p["seq"], p["result"]) for p in result["replies"]] == [(0, "content"), (1, "content")]
    r = icnd("ping", "/no/route", "-c", "1", "--timeout", "1", "--json", "--socket", str(daemon.sock))
    assert r.returncode == 1
    result = json.loads(r.stdout)
    assert result["received"] == 0 and result["rtt_ms"] is None
    assert result["replies"] == [{"seq": 0, "result": "nack", "reason": "no-route"}]


def test_keygen_and_cert_json(tmp_path) -> None:
    key = tmp_path / "k.key"
    r = icnd("keygen", "--out", str(key), "--name", "/alice", "--json")
    assert r.returncode == 0, r.stderr.decode()
    made = json.loads(r.stdout)
    assert made["key"].startswith("/alice/KEY/") and made["file"] == str(key)
    r = icnd("cert", "self", "--key", str(key), "--out", str(tmp_path / "k.cert"), "--json")
    assert r.returncode == 0, r.stderr.decode()
    cert = json.loads(r.stdout)
    assert cert["certificate"].startswith(made["key"] + "/self/") and cert["file"] == str(tmp_path / "k.cert")


class _CorruptOnce(StoreEndpoint):
    """The first copy of each segment in `corrupt` arrives damaged, the next ones whole."""

    def _answer(self, interest: Interest) -> Data | Nack:
        answer = super()._answer(interest)
        index = segment_index(interest.name.comps[-1])
        if index in self.corrupt:
            self.corrupt = self.corrupt - {index}
        return answer


async def test_fetch_statistics_count_retransmissions(tmp_path) -> None:
    """`FetchStats` (what ``icnd fetch`` reports) counts a segment asked again as a retransmission."""
    key = Ed25519Key.generate(Name("/node/t"))
    blob = os.urandom(9 * 1024 + 3)
    store = ObjectStore(str(tmp_path), 1 << 20)
    try:
        manifest = upload(store, "/files/b", blob, 1024, 4096, key)
        stats = FetchStats()
        ep = _CorruptOnce(store, key, corrupt=frozenset({2, 5}))
        assert await fetch_object(ep, "/files/b", stats=stats) == blob  # type: ignore[arg-type]  # a fake endpoint with only what is used
        assert (stats.segments, stats.bytes, stats.retransmissions) == (manifest.segments, len(blob), 2)
        assert stats.interests == ep.sent == manifest.segments + 2
        assert stats.seconds > 0 and stats.goodput_mbps == pytest.approx(len(blob) * 8 / stats.seconds / 1e6)
    finally:
        store.close()
