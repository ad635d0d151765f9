"""``icnd announce | withdraw | routing`` and ``Client.announce/withdraw/routing``
(interface §12) against real daemons linked only by ``--neighbor``.

Two nodes, a and b, each naming the other as its neighbour: once their
hellos meet, each shows the other as an up neighbour and holds both
link-state records; a prefix announced at b reaches a's database and a's
FIB (origin ``routing``), and leaves both when withdrawn.  Single nodes
show a neighbour that never answered, the bound on announcements, and a
node with routing off.  Everything is read through the public interface:
the CLI (``--json`` for values, the tables smoke-tested) and the client.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import icnd
from icnd.errors import CommandError
from icnd.testing.processes import Daemon, free_ports, neighbours
from icnd.testing.processes import run_cli as icnd_cli

CONVERGE = 15.0  # seconds: hellos every 1 s, records synchronized within a few


def routing(sock: str) -> dict[str, Any]:
    r = icnd_cli("routing", "--json", "--socket", sock)
    assert r.returncode == 0, r.stderr.decode()
    return dict(json.loads(r.stdout))


def until(what: str, check: Callable[[], Any], timeout: float = CONVERGE) -> Any:
    """`check()` once it is truthy; fails naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what}")
        time.sleep(0.2)


def one_line_error(r: subprocess.CompletedProcess) -> str:
    text = r.stderr.decode()
    assert r.returncode == 1 and r.stdout == b"", (r.returncode, r.stdout, text)
    assert "Traceback" not in text and len(text.splitlines()) == 1 and text.startswith("icnd: error: "), text
    return text


def prefixes_of(status: dict[str, Any], origin: str) -> list[str]:
    for record in status["lsdb"]:
        if record["origin"] == origin:
            return [p["prefix"] for p in record["prefixes"]]
    return []


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Any:
    workdir: Path = tmp_path_factory.mktemp("routing-cmds")
    with neighbours(workdir, b_cost=3) as both:
        yield both


def test_routing_json_shows_the_neighbour_and_both_records(pair) -> None:
    a, b = pair

    def a_knows_b() -> dict | None:
        status = routing(a.socket)
        neighbours = [n for n in status["neighbors"] if n["name"] == "/node/b" and n["state"] == "up"]
        b_lists_a = any(a["name"] == "/node/a" for r in status["lsdb"] if r["origin"] == "/node/b"
                        for a in r["adjacencies"])
        return status if neighbours and b_lists_a and any(r["origin"] == "/node/a" for r in status["lsdb"]) else None

    status = until("a sees b up and holds both records, b's listing a", a_knows_b)
    assert status["name"] == "/node/a" and status["routing"] == "link-state"
    (nb,) = status["neighbors"]
    pb = b.uri("udp").rsplit(":", 1)[1]
    assert nb["uri"].endswith(f":{pb}") and isinstance(nb["face"], int) and nb["cost"] == 1
    assert nb["last_hello_s"] is not None and 0 <= nb["last_hello_s"] < 3
    record = next(r for r in status["lsdb"] if r["origin"] == "/node/b")
    assert {"name": "/node/a", "cost": 3} in [{"name": x["name"], "cost": x["cost"]} for x in record["adjacencies"]]
    assert "/node/b" in prefixes_of(status, "/node/b") and "/node/a" in status["announced"]
    for key in ("version", "age_s", "expires_in_s"):
        assert isinstance(record[key], (int, float)), key
    assert isinstance(status["routes"], int) and isinstance(status["counters"], dict)

    r = icnd_cli("routing", "--socket", a.socket)  # the same for people
    text = r.stdout.decode()
    assert r.returncode == 0 and "neighbours" in text and "link-state database" in text
    assert any(line.split()[:1] == ["/node/b"] and " up " in line for line in text.splitlines())


def test_announce_reaches_the_other_node_and_withdraw_takes_it_back(pair) -> None:
    a, b = pair
    r = icnd_cli("announce", "/h17/videos", "--socket", b.socket)
    assert r.returncode == 0 and r.stdout.decode() == "/h17/videos announced\n", r.stderr.decode()
    until("b announces /h17/videos", lambda: "/h17/videos" in routing(b.socket)["announced"])
    until("a learns /h17/videos from b", lambda: "/h17/videos" in prefixes_of(routing(a.socket), "/node/b"))

    def a_routes() -> list[dict]:
        r = icnd_cli("route", "list", "--json", "--socket", a.socket)
        assert r.returncode == 0, r.stderr.decode()
        return [e for e in json.loads(r.stdout) if e["prefix"] == "/h17/videos"]

    (entry,) = until("a installs a route to /h17/videos", a_routes)
    assert entry["origin"] == "routing"

    r = icnd_cli("withdraw", "/h17/videos", "--socket", b.socket)
    assert r.returncode == 0 and r.stdout.decode() == "/h17/videos withdrawn\n", r.stderr.decode()
    until("a forgets /h17/videos", lambda: "/h17/videos" not in prefixes_of(routing(a.socket), "/node/b"))
    until("a's route to /h17/videos goes", lambda: not a_routes())

    assert "not announced" in one_line_error(icnd_cli("withdraw", "/h17/videos", "--socket", b.socket))
    one_line_error(icnd_cli("announce", "/localhost/x", "--socket", b.socket))
    assert "/localhost/x" not in routing(b.socket)["announced"]


def test_the_client_announces_and_withdraws(pair) -> None:
    a, b = pair
    with icnd.sync.connect(b.socket) as c:
        c.announce("/h17/py")
        until("b announces /h17/py", lambda: "/h17/py" in c.routing()["announced"])  # after a short debounce
        until("a learns /h17/py", lambda: "/h17/py" in prefixes_of(routing(a.socket), "/node/b"))
        c.withdraw("/h17/py")
        until("b no longer announces /h17/py", lambda: "/h17/py" not in c.routing()["announced"])
        with pytest.raises(CommandError) as info:
            c.withdraw("/h17/py")
        assert info.value.status == 404
        with pytest.raises(CommandError) as info:
            c.announce("/localhop/x")
        assert info.value.status == 400


def test_a_neighbour_that_never_answered_is_down_and_nameless(tmp_path) -> None:
    (silent,) = free_ports(1)
    d = Daemon(tmp_path, "--name", "/node/lonely", "--listen", "udp://127.0.0.1:0",
               "--neighbor", f"udp://127.0.0.1:{silent},cost=7", name="lonely")
    try:
        d.wait_ready()
        (nb,) = routing(d.socket)["neighbors"]
        assert (nb["name"], nb["state"], nb["cost"], nb["last_hello_s"]) == (None, "down", 7, None)
        assert nb["uri"].endswith(f":{silent}")
        text = icnd_cli("routing", "--socket", d.socket).stdout.decode()
        assert any(line.split()[:1] == ["-"] and "down" in line and "never" in line for line in text.splitlines())
    finally:
        d.kill()


def test_a_node_without_routing_refuses_the_commands(tmp_path) -> None:
    config = tmp_path / "off.toml"
    config.write_text('[routing]\nmode = "off"\n')
    d = Daemon(tmp_path, "--config", str(config), "--name", "/node/off", "--listen", "udp://127.0.0.1:0", name="off")
    try:
        d.wait_ready()
        for argv in (["routing"], ["announce", "/x"], ["withdraw", "/x"]):
            assert "routing is off on this node" in one_line_error(icnd_cli(*argv, "--socket", d.socket))
        with icnd.sync.connect(d.socket) as c, pytest.raises(CommandError) as info:
            c.announce("/x")
        assert info.value.status == 409
    finally:
        d.kill()


def test_announcing_beyond_the_nodes_bound_is_refused(tmp_path) -> None:
    config = tmp_path / "small.toml"
    config.write_text("[routing]\nmax_prefixes = 3\n")  # the node prefix counts too
    d = Daemon(tmp_path, "--config", str(config), "--name", "/node/small", "--listen", "udp://127.0.0.1:0",
               name="small")
    try:
        d.wait_ready()
        results = [icnd_cli("announce", f"/p{i}", "--socket", d.socket) for i in range(4)]
        accepted = [r.returncode == 0 for r in results]
        assert accepted[0] and not accepted[-1] and accepted == sorted(accepted, reverse=True), accepted
        refusal = one_line_error(results[-1])
        assert "/p3" in refusal and "max_prefixes" in refusal
        assert icnd_cli("withdraw", "/p0", "--socket", d.socket).returncode == 0  # room again
        assert icnd_cli("announce", f"/p{accepted.index(False)}", "--socket", d.socket).returncode == 0
    finally:
        d.kill()
