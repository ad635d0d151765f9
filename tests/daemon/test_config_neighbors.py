"""``--neighbor``, ``[[neighbors]]``, ``[routing]`` and the reconnect knobs: parsed, validated, refused clearly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from icnd.cli.app import build_parser
from icnd.cli.run import build_config
from icnd.daemon.config import ConfigError, NeighborConfig, NodeConfig, RoutingConfig, from_dict, load
from icnd.testing.processes import run_cli


def config_from(*argv: str) -> NodeConfig:
    return build_config(build_parser().parse_args(["run", *argv]))


def test_neighbor_flags_with_and_without_cost() -> None:
    cfg = config_from("--neighbor", "udp://10.0.0.2:6363", "--neighbor", "tcp://[::1]:7000,cost=25",
                      "--hello-interval", "0.5", "--dead-interval", "2")
    assert cfg.neighbors == [NeighborConfig("udp://10.0.0.2:6363", 1), NeighborConfig("tcp://[::1]:7000", 25)]
    assert (cfg.routing.hello_interval_s, cfg.routing.dead_interval_s) == (0.5, 2.0)
    assert cfg.routing.mode == "link-state" and cfg.routing.lsa_refresh_s == 600.0


def test_toml_neighbors_routing_and_reconnect(tmp_path: Path) -> None:
    path = tmp_path / "node.toml"
    path.write_text('face_reconnect_max_s = 30\nface_connect_timeout_s = 2.5\n'
                    '[[neighbors]]\nuri = "udp://10.0.0.2:6363"\ncost = 10\n'
                    '[[neighbors]]\nuri = "tcp://10.0.0.3:6363"\n'
                    '[routing]\nmode = "off"\nhello_interval_s = 2\ndead_interval_s = 6.0\nmax_prefixes = 50\n')
    cfg = load(str(path))
    assert cfg.neighbors == [NeighborConfig("udp://10.0.0.2:6363", 10), NeighborConfig("tcp://10.0.0.3:6363", 1)]
    assert cfg.routing == RoutingConfig(mode="off", hello_interval_s=2.0, dead_interval_s=6.0, max_prefixes=50)
    policy = cfg.reconnect_policy()
    assert (policy.initial, policy.maximum, policy.connect_timeout) == (0.1, 30.0, 2.5)
    flags = build_config(build_parser().parse_args(["run", "--config", str(path), "--neighbor", "udp://h:1"]))
    assert flags.neighbors == [NeighborConfig("udp://h:1", 1)]  # a list flag replaces the file's list


@pytest.mark.parametrize(("argv", "expected"), [
    (["--neighbor", "udp//10.0.0.2"], "no scheme"),
    (["--neighbor", "udp://10.0.0.2:6363,cost=0"], "cost must be an integer >= 1"),
    (["--neighbor", "udp://10.0.0.2:6363,cost=x"], "cost must be an integer"),
    (["--neighbor", "udp://10.0.0.2:6363,weight=3"], "unknown option 'weight=3'"),
    (["--neighbor", "unix:///tmp/x.sock"], "udp://HOST:PORT or tcp://HOST:PORT"),
    (["--neighbor", "udp://10.0.0.2", "--neighbor", "udp://10.0.0.2:6363"],
     "command line: neighbor 'udp://10.0.0.2:6363': listed twice"),
    (["--hello-interval", "3"], "dead_interval_s (3) must exceed routing.hello_interval_s (3)"),
])
def test_bad_neighbor_or_routing_flags(argv: list[str], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from(*argv)
    assert expected in str(info.value)


@pytest.mark.parametrize(("raw", "expected"), [
    ({"neighbors": [{"uri": "udp://h:1", "cost": -1}]}, "neighbor 'udp://h:1': cost must be"),
    ({"neighbors": [{"uri": "udp://h:1", "cost": "1"}]}, "neighbors[0]: cost must be an integer"),
    ({"neighbors": [{"url": "udp://h:1"}]}, "neighbors[0]: unknown key(s) ['url']"),
    ({"neighbors": {"uri": "udp://h:1"}}, "neighbors: expected an array of tables"),
    ({"routing": "link-state"}, "routing: expected a table ([routing])"),
    ({"routing": {"mode": "ospf"}}, "routing.mode must be one of link-state, off"),
    ({"routing": {"hello": 1}}, "routing: unknown key 'hello'"),
    ({"routing": {"max_nodes": 0}}, "routing.max_nodes must be a finite number > 0"),
    ({"routing": {"lsa_refresh_s": 60, "lsa_lifetime_s": 30}}, "lsa_lifetime_s (30) must exceed"),
    ({"routing": {"hello_interval_s": "1"}}, "routing.hello_interval_s: expected float, got str"),
    ({"face_reconnect_initial_s": 20.0}, "initial (20) <= maximum (10)"),
])
def test_bad_toml_entries_name_the_entry(raw: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        from_dict(raw, origin="node.toml")
    assert str(info.value).startswith("node.toml: ") and expected in str(info.value)


def test_icnd_run_refuses_a_bad_neighbor_with_one_line_and_exit_2(tmp_path: Path) -> None:
    r: subprocess.CompletedProcess[bytes] = run_cli(
        "run", "--socket", str(tmp_path / "x.sock"), "--neighbor", "tcp://10.0.0.2:6363,cost=0", timeout=10)
    assert r.returncode == 2
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("icnd: error: ")
    assert "--neighbor 'tcp://10.0.0.2:6363,cost=0': cost must be an integer >= 1" in lines[0]
    assert not (tmp_path / "x.sock").exists()
