"""docs/deployment.md runs as written, its three hosts played on one machine (issue 27, acceptance).

The page deploys nodes A, B and C on three hosts.  What needs the hosts
themselves (installing into ``/opt``, systemd, nftables) is fenced ```sh
no-test, as in the README; everything else runs here, with the same kind of
substitution `test_readme` makes (a scratch directory, free ports) and
nothing more:

- step 2's key and certificate block runs as written, in a scratch
  directory (the "machine you trust"); its files are copied to each host's
  directory as the text says (the anchor, ``schema.toml``, the host's
  certificate, its key as ``node.key``), with ``schema.toml`` the page's own
  block;
- each host's configuration is step 3's block for A, and for B and C the
  changes the text lists (name, certificate, neighbours; C's function block
  and its module, the page's Python block, in a directory of its own on
  C's ``PYTHONPATH``); the hosts' addresses become 127.0.0.1 with a port per
  host, the status page's port 0;
- each node starts with the command line step 4's drop-in gives systemd
  (``ExecStart=``), its paths in that host's directory; it says ``ready``
  on stdout, as the page says it does outside systemd;
- step 6's checks run on A once routing has found the other two, and say
  what their comments say; step 7's call prints 42; step 8's contribution
  runs on each host and the reduction prints ``[3. 3. 3. 3.]``.

Every block the page lets run is run; every process is ended at the end."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from test_readme import BLOCK_TIMEOUT, FENCE, ROOT, Shell, blocks, end_all

from icnd.testing.processes import Daemon, run_cli, short_tempdir

DEPLOYMENT_MD = ROOT / "docs" / "deployment.md"
HOSTS = {"a": "192.0.2.1", "b": "192.0.2.2", "c": "192.0.2.3"}  # the page's table
PORT = "6363"
ROUTED_WITHIN = 60.0  # seconds for link-state routing to route the triangle on a loaded machine


def fenced(lang: str) -> list[str]:
    """The page's blocks fenced `lang`, in order."""
    return [code for found, _, code in FENCE.findall(DEPLOYMENT_MD.read_text()) if found == lang]


def runnable() -> dict[str, str]:
    """The page's runnable blocks by the step they belong to; exactly these six (a new runnable
    block fails this until the test knows where it runs)."""
    found = [(lang, code) for lang, code, runs in blocks(DEPLOYMENT_MD.read_text()) if runs]
    marks = {"keys": "icnd keygen", "function": "def double", "checks": "icnd status --wait",
             "call": "icnd call", "contribute": "icnd contribute", "reduce": "icnd reduce"}
    by_step = {step: [code for _, code in found if mark in code] for step, mark in marks.items()}
    assert all(len(codes) == 1 for codes in by_step.values()), by_step
    assert len(found) == len(marks), [code for _, code in found]
    return {step: codes[0] for step, codes in by_step.items()}


def test_the_blocks_are_found_and_the_convention_holds() -> None:
    steps = runnable()
    skipped = "\n".join(code for _, code, runs in blocks(DEPLOYMENT_MD.read_text()) if not runs)
    for host_only in ("pip install", "systemctl enable", "nft add rule"):
        assert host_only in skipped, host_only
    assert "ExecStart=/usr/local/bin/icnd run" in "\n".join(fenced("ini"))
    assert fenced("toml")[0].startswith("# schema.toml\n")
    assert "[[function]]" in fenced("toml")[2] and "def double" in steps["function"]


def dual_ports(n: int) -> list[int]:
    """`n` distinct loopback ports free now for both UDP and TCP (the page listens on both at one port)."""
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, \
                socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            udp.bind(("127.0.0.1", 0))
            port = udp.getsockname()[1]
            try:
                tcp.bind(("127.0.0.1", port))
            except OSError:
                continue
            if port not in ports:
                ports.append(port)
    return ports


def host_config(host: str, ports: dict[str, int]) -> str:
    """Step 3's configuration of `host`: A's block, changed for B and C as the text says, on loopback."""
    config_a, function = fenced("toml")[1], fenced("toml")[2]
    text = config_a
    if host != "a":
        text = text.replace('"/node/a"', f'"/node/{host}"').replace('"a.cert"', f'"{host}.cert"')
        text = text.replace(f'"udp://{HOSTS[host]}:{PORT}"', f'"udp://{HOSTS["a"]}:{PORT}"')
    if host == "c":
        text += "\n" + function
    text = text.replace(f"0.0.0.0:{PORT}", f"127.0.0.1:{ports[host]}").replace("127.0.0.1:8080", "127.0.0.1:0")
    for other, address in HOSTS.items():
        text = text.replace(f"{address}:{PORT}", f"127.0.0.1:{ports[other]}")
    return text


def exec_start(etc: Path) -> list[str]:
    """The arguments of `icnd run` in step 4's drop-in, its paths under `etc` (the host's directory)."""
    line = next(line for line in "\n".join(fenced("ini")).splitlines() if line.startswith("ExecStart=/"))
    args = line.removeprefix("ExecStart=/usr/local/bin/icnd run ").split()
    paths = {"/etc/icnd": str(etc), "/run/icnd": str(etc), "/var/lib/icnd": str(etc / "lib"), "%d": str(etc)}
    return [re.sub("|".join(map(re.escape, paths)), lambda m: paths[m.group(0)], a) for a in args]


@contextmanager
def hosts(scratch: Path) -> Iterator[dict[str, Daemon]]:
    """Nodes a, b and c, each in its own directory, configured and started as the page says; ready."""
    ports = dict(zip(HOSTS, dual_ports(len(HOSTS))))
    functions = scratch / "c" / "functions"  # the page's /opt/icnd-functions
    functions.mkdir(parents=True)
    (functions / "demo_functions.py").write_text(runnable()["function"])
    nodes: dict[str, Daemon] = {}
    try:
        for host in HOSTS:
            etc = scratch / host  # the host's /etc/icnd (and its /run/icnd, /var/lib/icnd)
            etc.mkdir(exist_ok=True)
            for name in ("anchor.cert", f"{host}.cert"):
                shutil.copy(scratch / name, etc / name)
            (etc / "schema.toml").write_text(fenced("toml")[0])
            shutil.copy(scratch / f"{host}.key", etc / "node.key")
            (etc / "node.key").chmod(0o600)
            (etc / "icnd.toml").write_text(host_config(host, ports))
            with pytest.MonkeyPatch.context() as mp:
                if host == "c":  # the drop-in's Environment=PYTHONPATH=/opt/icnd-functions
                    mp.setenv("PYTHONPATH", str(functions))
                daemon = Daemon(etc, *exec_start(etc), name="icnd")
            nodes[host] = daemon
            assert daemon.socket == str(etc / "icnd.sock")  # the --socket of ExecStart
        for daemon in nodes.values():
            daemon.wait_ready(BLOCK_TIMEOUT)
        yield nodes
    finally:
        for daemon in nodes.values():
            daemon.stop()


def cli_json(node: Daemon, *args: str) -> Any:
    out = run_cli(*args, "--json", "--socket", node.socket)
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)


def wait_routed(node: Daemon, prefixes: set[str]) -> None:
    """Until `node` has routes to `prefixes` (routing finds them a few hellos after the nodes start)."""
    deadline = time.monotonic() + ROUTED_WITHIN
    while not prefixes <= (held := {route["prefix"] for route in cli_json(node, "route", "list")}):
        if time.monotonic() > deadline:
            pytest.fail(f"routes {sorted(prefixes - held)} missing after {ROUTED_WITHIN:g}s: {sorted(held)}\n"
                        + node.log_tail())
        time.sleep(0.2)


def test_deployment_md_runs_as_written_on_one_machine() -> None:
    steps = runnable()
    with short_tempdir("icnd-deploy-") as tmp:
        scratch = Path(tmp)
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "PYTHONUNBUFFERED": "1"}
        env.pop("ICND_SOCKET", None)
        env.pop("PYTHONPATH", None)
        shell = Shell(str(scratch), env)
        try:
            shell.run(steps["keys"], 2, BLOCK_TIMEOUT)
            with hosts(scratch) as nodes:
                a = nodes["a"]
                wait_routed(a, {"/node/b", "/node/c", "/fn/double"})
                on_a = steps["checks"].replace("/run/icnd/icnd.sock", a.socket)
                checks = shell.run(on_a, 6, BLOCK_TIMEOUT)
                for name in ("/node/a", "/node/b", "/node/c", "/fn/double"):
                    assert name in checks, checks
                # what the comments say, read as JSON: both neighbours up, three nodes in the link-state
                # database, /node/b and /node/c routed by routing, /fn/double first via C
                routing = cli_json(a, "routing")
                assert [nb["state"] for nb in routing["neighbors"]] == ["up", "up"], routing
                assert sorted(r["origin"] for r in routing["lsdb"]) == ["/node/a", "/node/b", "/node/c"], routing
                routes = {route["prefix"]: route for route in cli_json(a, "route", "list")}
                assert routes["/node/b"]["origin"] == routes["/node/c"]["origin"] == "routing", routes
                assert routes["/fn/double"]["nexthops"][0]["uri"] == nodes["c"].uri("udp"), routes

                called = shell.run(steps["call"], 7, BLOCK_TIMEOUT)  # as alice, on A (ICND_SOCKET still A's)
                assert called.split() == ["42"], called

                x = str(scratch / "x.npy")
                contribute = (steps["contribute"].replace("/opt/icnd/bin/python", sys.executable)
                              .replace("/tmp/x.npy", x))
                for node in nodes.values():
                    shell.run(f"export ICND_SOCKET={node.socket}\n{contribute}", 8, BLOCK_TIMEOUT)
                reduced = shell.run(steps["reduce"], 8, BLOCK_TIMEOUT)
                assert "[3. 3. 3. 3.]" in reduced, reduced
        finally:
            shell.close()
            end_all(tmp)
