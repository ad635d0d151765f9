"""Issue #27's newcomer friction in the CLI (items 11, 12 and 15), each as a new user met it.

What a command sends and prints is checked against the fake node
(conftest.py); what needs a node, against a real ``icnd run``.
"""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from icnd.cli import main
from icnd.testing.processes import Daemon, free_ports, one_line_error, short_tempdir
from icnd.testing.processes import run_cli as icnd
from tests.cli.conftest import READY_TIMEOUT, FakeNode

ROOT = Path(__file__).resolve().parents[2]


# --- 15: `face` (and `group`) take --socket before the verb, as `route` does ---------------------------------


@pytest.mark.parametrize("argv", [["face", "--socket", "x.sock", "list"],
                                  ["face", "--socket", "x.sock", "--json", "list"],
                                  ["group", "--socket", "x.sock", "list"], ["cs", "--socket", "x.sock", "list"]])
def test_a_group_takes_socket_before_its_verb(node: FakeNode, argv: list[str], tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    node.results = {("face", "list"): [], ("group", "list"): [], ("cs", "list"): []}
    assert main(argv) == 0
    assert node.sent[0][0] == str(tmp_path / "x.sock")


# --- 15: `face list` says "permanent", as the configuration and the docs do -----------------------------------


def _face(face_id: int, uri: str, **flags: Any) -> dict[str, Any]:
    return {"id": face_id, "remote_uri": uri, "local_uri": "udp://127.0.0.1:6363", "local": False,
            "persistent": False, "permanent": False, "state": "up", "wire_format": "icnd",
            "counters": {"in_packets": 0, "out_packets": 0}, **flags}


def test_face_list_names_each_face_s_persistency(node: FakeNode, capsys) -> None:
    node.results[("face", "list")] = [
        _face(1, "udp://10.0.0.2:6363", persistent=True, permanent=True),
        _face(2, "tcp://10.0.0.3:6363", persistent=True, permanent=True, state="down"),
        _face(3, "udp://10.0.0.4:6363", persistent=True),
        _face(4, "udp://10.0.0.5:6363"),
    ]
    assert main(["face", "list"]) == 0
    flags = {line.split()[0]: line.split()[3] for line in capsys.readouterr().out.splitlines()[1:]}
    assert flags == {"1": "permanent", "2": "permanent,down", "3": "persistent", "4": "on-demand"}


def test_face_list_of_a_real_node_shows_its_configured_face_permanent() -> None:
    with short_tempdir() as workdir:
        (port,) = free_ports(1)
        d = Daemon(workdir, "--name", "/node/p", "--listen", "udp://127.0.0.1:0",
                   "--face", f"udp://127.0.0.1:{port}")
        try:
            d.wait_ready(READY_TIMEOUT)
            r = icnd("face", "list", "--socket", d.socket)
            assert r.returncode == 0, r.stderr.decode()
            row = next(line for line in r.stdout.decode().splitlines() if f"udp://127.0.0.1:{port}" in line)
            assert "permanent" in row.split()[3] and "persistent" not in row
        finally:
            d.kill()


# --- 15: tables fit 80 columns; names too long for them get a line of their own ----------------------------------

LONG = "/reduce/g/sum/3/params-sha256=" + "0123456789abcdef" * 4
KEY = "/node/b/KEY/%8D%07j%89%24s%21%28"


def _fits(out: str, names: list[str], width: int = 80) -> None:
    lines = out.splitlines()
    for name in names:  # every name in full, never cut
        assert any(line.split()[:1] == [name] for line in lines), (name, out)
    for line in lines:
        assert len(line) <= width or line in names, (line, out)


def test_route_list_fits_80_columns(node: FakeNode, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    hop = {"face": 7, "cost": 10, "origin": "routing", "uri": "udp://192.0.2.2:6363"}
    node.results[("route", "list")] = [{"prefix": p, "origin": "routing", "cost": 10, "nexthops": [hop]}
                                       for p in ("/node/b", KEY, LONG)]
    assert main(["route", "list"]) == 0
    out = capsys.readouterr().out
    _fits(out, ["/node/b", KEY, LONG])
    lines = out.splitlines()
    after_long = lines[lines.index(LONG) + 1]
    assert after_long.split() == ["7", "10", "routing", "udp://192.0.2.2:6363"]
    assert after_long.index("routing") == lines[0].index("ORIGIN")  # the rest of its row stays in its columns


def test_cs_list_fits_80_columns(node: FakeNode, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    names = [f"{KEY}/self/v=1769000000000", f"{LONG}/sha256digest={'ab' * 32}", "/demo/hello"]
    node.results[("cs", "list")] = [{"name": n, "size": 1200, "fresh": True, "content_type": 0} for n in names]
    assert main(["cs", "list"]) == 0
    _fits(capsys.readouterr().out, names)


# --- 15: `contribute` with a file that is not .npy ---------------------------------------------------------------


def test_contribute_refuses_a_file_that_is_not_npy_saying_so(tmp_path, capsys) -> None:
    text = tmp_path / "x.txt"
    text.write_text("1 2 3\n")
    archive = tmp_path / "x.npz"
    np.savez(archive, a=np.ones(3))
    for path in (text, archive):
        assert main(["contribute", "g", "1", str(path), "--socket", str(tmp_path / "none.sock")]) == 1
        err = capsys.readouterr().err
        assert err == f"icnd: error: {path}: not a .npy file (write the array with numpy.save(path, array))\n"


# --- 15: `topo sim` -----------------------------------------------------------------------------------------------


def test_topo_sim_with_an_unknown_node_lists_the_valid_ones(capsys) -> None:
    assert main(["topo", "sim", str(ROOT / "topologies/line3.toml"), "--fetch", "a", "zz"]) == 2
    assert "unknown node 'zz' (nodes: a, b, c)" in capsys.readouterr().err


def test_topo_sim_without_fetch_does_not_report_0_of_0(capsys) -> None:
    assert main(["topo", "sim", str(ROOT / "topologies/line3.toml")]) == 0
    out = capsys.readouterr().out
    assert "0/0" not in out and "no fetches asked for (--fetch FROM TO)" in out


# --- 15: a clean SIGTERM does not log "reconnecting" ----------------------------------------------------------------


def test_sigterm_stops_permanent_faces_without_reconnecting() -> None:
    with short_tempdir() as workdir:
        (udp,) = free_ports(1)
        (tcp,) = free_ports(1, socket.SOCK_STREAM)
        d = Daemon(workdir, "--name", "/node/q", "--listen", "udp://127.0.0.1:0", "--listen", f"tcp://127.0.0.1:{tcp}",
                   "--face", f"udp://127.0.0.1:{udp}", "--face", f"tcp://127.0.0.1:{tcp}")  # the TCP one to itself
        try:
            d.wait_ready(READY_TIMEOUT)
            deadline = time.monotonic() + READY_TIMEOUT
            while True:
                faces = json.loads(icnd("face", "list", "--json", "--socket", d.socket).stdout)
                if sum(f["permanent"] and f["state"] == "up" for f in faces) == 2:
                    break
                assert time.monotonic() < deadline, faces
                time.sleep(0.05)
            assert d.stop(signal.SIGTERM) == 0
            log = d.stderr_path.read_text()
            assert "node /node/q stopped" in log
            assert "reconnecting" not in log, log
        finally:
            d.kill()


# --- 11: one face-URI parser, one message, for --listen as for --neighbor (and --face, --route, the file) ------------

NO_SCHEME = ("bad face URI '127.0.0.1:25100': no scheme; "
             "did you mean udp://127.0.0.1:25100 or tcp://127.0.0.1:25100?")


@pytest.mark.parametrize("flag, value", [("--listen", "127.0.0.1:25100"), ("--neighbor", "127.0.0.1:25100"),
                                         ("--face", "127.0.0.1:25100"), ("--route", "/p=127.0.0.1:25100")])
def test_a_uri_without_scheme_is_the_same_message_for_every_flag(tmp_path, capsys, flag: str, value: str) -> None:
    assert main(["run", flag, value, "--socket", str(tmp_path / "x.sock")]) == 2
    assert capsys.readouterr().err == f"icnd: error: {flag} {value!r}: {NO_SCHEME}\n"


@pytest.mark.parametrize("entry, where", [('listen = ["127.0.0.1:25100"]', "listen '127.0.0.1:25100'"),
                                          ('faces = ["127.0.0.1:25100"]', "face '127.0.0.1:25100'")])
def test_a_uri_without_scheme_in_the_config_file_is_the_same_message(tmp_path, capsys, entry: str, where: str) -> None:
    config = tmp_path / "icnd.toml"
    config.write_text(entry + "\n")
    assert main(["run", "--config", str(config), "--socket", str(tmp_path / "x.sock")]) == 2
    assert capsys.readouterr().err == f"icnd: error: {config}: {where}: {NO_SCHEME}\n"


def test_a_listen_uri_without_scheme_is_one_line_exit_2_from_the_shell(tmp_path) -> None:
    r = icnd("run", "--listen", "127.0.0.1:25100", "--socket", str(tmp_path / "x.sock"))
    assert r.returncode == 2
    assert one_line_error(r) == f"icnd: error: --listen '127.0.0.1:25100': {NO_SCHEME}"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0"])
def test_listen_still_takes_a_bare_host(host: str) -> None:
    from icnd.cli import build_config, build_parser

    assert build_config(build_parser().parse_args(["run", "--listen", host])).listen == [host]


# --- 12: a node's identity from --key: not "ephemeral", and a warning when it is another node's key -------------------


def _run_with_key(workdir: str, key_name: str, node_name: str) -> str:
    key = Path(workdir, "k.key")
    r = icnd("keygen", "--name", key_name, "--out", str(key))
    assert r.returncode == 0, r.stderr.decode()
    d = Daemon(workdir, "--name", node_name, "--listen", "udp://127.0.0.1:0", "--key", str(key))
    try:
        d.wait_ready(READY_TIMEOUT)
    finally:
        d.stop()
    return d.stderr_path.read_text()


def test_a_key_from_a_file_is_not_called_ephemeral_nor_foreign() -> None:
    with short_tempdir() as workdir:
        log = _run_with_key(workdir, "/node/x", "/node/x")
    assert "ephemeral" not in log and "WARNING" not in log, log


def test_a_key_of_another_node_is_a_warning_naming_both() -> None:
    with short_tempdir() as workdir:
        log = _run_with_key(workdir, "/node/b", "/node/x")
    assert "ephemeral" not in log, log
    warning = next(line for line in log.splitlines() if "WARNING" in line)
    assert "the key /node/b/KEY/" in warning and "is /node/b's, not this node's (/node/x)" in warning
