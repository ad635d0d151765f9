"""Real daemons: SIGHUP reloads neighbours, faces, routes, functions and groups
from the config file without dropping the faces that stay (issue #19).

Node a runs from a config file; b and c are its would-be neighbours.  The
file is edited and a is sent SIGHUP; what the CLI shows (`icnd route list
--json`, `icnd routing --json`, `icnd status --json`) and what calls do
must follow, and b's face must keep its id.  A broken file changes nothing."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path
from typing import Any

import trio

import icnd
from icnd.testing.processes import Daemon, free_ports, run_cli

ROUTING = """
[routing]
hello_interval_s = 0.2
dead_interval_s = 1.0
"""


def write_config(path: Path, *, neighbors: list[int], routes: dict[str, str], functions: dict[str, str],
                 groups: dict[str, list[str]]) -> None:
    text = 'name = "/node/a"\n' + ROUTING
    for port in neighbors:
        text += f'[[neighbors]]\nuri = "udp://127.0.0.1:{port}"\n'
    for prefix, face in routes.items():
        text += f'[[routes]]\nprefix = "{prefix}"\nface = "{face}"\ncost = 3\n'
    for prefix, target in functions.items():
        text += f'[[function]]\ntarget = "{target}"\nprefix = "{prefix}"\n'
    for name, members in groups.items():
        text += f'[[group]]\nname = "{name}"\nmembers = {json.dumps(members)}\n'
    path.write_text(text)


def cli_json(node: Daemon, *args: str) -> Any:
    done = run_cli("--socket", node.socket, *args, "--json")
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


async def command(node: Daemon, *verb: str) -> Any:
    """What ``icnd <verb> --json`` prints (the CLI prints the command's answer; checked once below)."""
    async with node.connect() as client:
        return await client.command(*verb)


async def until(check: Any, what: str, deadline: float = 10.0) -> Any:
    """The first truthy value of the coroutine function `check`."""
    with trio.move_on_after(deadline):
        while True:
            value = await check()
            if value:
                return value
            await trio.sleep(0.1)
    raise AssertionError(f"not within {deadline:g}s: {what}")


def neighbor_states(routing: dict[str, Any]) -> dict[str, str]:
    return {nb["uri"]: nb["state"] for nb in routing["neighbors"]}


async def neighbors(node: Daemon) -> dict[str, str]:
    return neighbor_states(await command(node, "routing", "status"))


def static_routes(routes: list[dict[str, Any]]) -> dict[str, int]:
    return {r["prefix"]: r["cost"] for r in routes if any(h["origin"] == "static" for h in r["nexthops"])}


async def routes(node: Daemon) -> dict[str, int]:
    return static_routes(await command(node, "route", "list"))


async def counters(node: Daemon) -> dict[str, int]:
    status: dict[str, Any] = await command(node, "status", "get")
    return status["counters"]


async def face_ids(node: Daemon) -> dict[str, int]:
    return {f["remote_uri"]: f["id"] for f in await command(node, "face", "list")}


async def test_sighup_applies_the_edited_config_and_keeps_the_faces_that_stay(daemons, tmp_path: Path) -> None:
    pa, pb, pc = free_ports(3)
    pt = free_ports(1, socket.SOCK_STREAM)[0]
    b_uri, c_uri = f"udp://127.0.0.1:{pb}", f"udp://127.0.0.1:{pc}"
    a_udp = f"udp://127.0.0.1:{pa}"
    routing = ("--hello-interval", "0.2", "--dead-interval", "1")
    b = await daemons.start("b", "--neighbor", a_udp, *routing, listen=(b_uri,))
    c = await daemons.start("c", "--neighbor", a_udp, *routing, listen=(c_uri,))
    config = tmp_path / "a.toml"
    write_config(config, neighbors=[pb], routes={"/old": f"tcp://127.0.0.1:{pt}"},
                 functions={"/fn/double": "apps.functions:double"}, groups={})
    a = await daemons.start("a", "--config", str(config), listen=(a_udp,))

    async def b_up() -> bool:
        return (await neighbors(a)).get(b_uri) == "up"

    await until(b_up, "b is a's neighbour")
    b_face = (await face_ids(a))[b_uri]
    assert await routes(a) == {"/old": 3}
    async with a.connect() as client:
        assert await client.call("/fn/double", 21) == 42

    # edit: c joins, /old goes and /new comes, /fn/double is replaced by /fn/add, group g appears
    write_config(config, neighbors=[pb, pc], routes={"/new": f"tcp://127.0.0.1:{pt}"},
                 functions={"/fn/add": "apps.functions:add"}, groups={"g": ["a", "b", "c"]})
    a.proc.send_signal(signal.SIGHUP)

    async def reloaded(n: int) -> bool:
        return (await counters(a))["config_reloads"] == n

    async def both_up() -> bool:
        return await neighbors(a) == {b_uri: "up", c_uri: "up"}

    await until(lambda: reloaded(1), "the reload is counted")
    await until(both_up, "c is a's neighbour too")
    # as the CLI shows them
    assert static_routes(cli_json(a, "route", "list")) == {"/new": 3}
    assert neighbor_states(cli_json(a, "routing")) == {b_uri: "up", c_uri: "up"}
    assert (await face_ids(a))[b_uri] == b_face  # the face that stayed is the same face
    async with a.connect() as client:
        assert await client.call("/fn/add", 2, 3) == 5
        try:
            await client.call("/fn/double", 1, timeout=0.5)
            raise AssertionError("/fn/double is still served")
        except icnd.Nacked as exc:
            assert exc.reason == "no-route"
        groups = await client.command("group", "list")
    assert [g["group"] for g in groups] == ["g"]
    async with b.connect() as client:  # b learns of /fn/add through routing and calls it on a
        with trio.fail_after(10):
            while True:
                try:
                    assert await client.call("/fn/add", 40, 2, timeout=2) == 42
                    break
                except icnd.Nacked:
                    await trio.sleep(0.1)

    # a broken file changes nothing, the node runs on and says why
    config.write_text("neighbours = []\n" + config.read_text())  # a typo

    async def refused() -> dict[str, int] | None:
        seen = await counters(a)
        return seen if seen["config_reload_errors"] == 1 else None

    a.proc.send_signal(signal.SIGHUP)
    seen = await until(refused, "the refusal is counted")
    assert seen["config_reloads"] == 1
    assert "reload refused" in a.log_tail() and "'neighbours'" in a.log_tail()
    assert await routes(a) == {"/new": 3}
    assert await neighbors(a) == {b_uri: "up", c_uri: "up"}

    # b removed: its face is closed, c's stays
    c_face = (await face_ids(a))[c_uri]
    write_config(config, neighbors=[pc], routes={}, functions={"/fn/add": "apps.functions:add"},
                 groups={"g": ["a", "b", "c"]})
    a.proc.send_signal(signal.SIGHUP)
    await until(lambda: reloaded(2), "the second reload is counted")
    assert await neighbors(a) == {c_uri: "up"}
    faces = await face_ids(a)
    assert faces[c_uri] == c_face and faces.get(b_uri) != b_face
    assert f"tcp://127.0.0.1:{pt}" not in faces  # the routes' face, no longer named
    assert await routes(a) == {}
    async with a.connect() as client:
        assert await client.call("/fn/add", 1, 1) == 2  # functions unchanged: still served
    assert a.proc.poll() is None
