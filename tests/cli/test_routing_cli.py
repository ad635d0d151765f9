"""``icnd announce | withdraw | routing`` (interface §12): parsing, what is sent,
what is printed, exit codes -- with the node replaced by canned answers.

`icnd.cli.session.command` is the one place a management command leaves the
CLI; here it records the command and returns (or refuses with) a canned
result (the `node` fixture of conftest.py), so these tests see exactly what
`main` sends and prints.  The same
commands against a real daemon are in tests/integration.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from icnd.cli import build_parser, main
from icnd.cli.errors import CliError
from icnd.cli.routing import PREFIXES_WIDTH, routing_text
from tests.cli.conftest import FakeNode

STATUS: dict[str, Any] = {
    "name": "/node/a",
    "routing": "link-state",
    "neighbors": [
        {"name": "/node/b", "uri": "tcp://10.0.0.2:6363", "face": 5, "state": "up", "cost": 1, "last_hello_s": 0.4},
        {"name": None, "uri": "udp://10.0.0.3:6363", "face": 12, "state": "down", "cost": 10, "last_hello_s": None},
    ],
    "lsdb": [
        {"origin": "/node/b", "version": 1700000000123, "age_s": 1.2, "expires_in_s": 1790.0,
         "adjacencies": [{"name": "/node/a", "cost": 1}, {"name": "/node/c", "cost": 3}],
         "prefixes": [{"prefix": "/node/b"}, {"prefix": "/videos/cats"}, {"prefix": "/fn/matmul", "load": 3}]
         + [{"prefix": f"/data/set{i}"} for i in range(20)]},
        {"origin": "/node/a", "version": 7, "age_s": 100.0, "expires_in_s": 1700.0,
         "adjacencies": [{"name": "/node/b", "cost": 1}], "prefixes": [{"prefix": "/node/a"}]},
    ],
    "announced": ["/node/a", "/x"],
    "routes": 12,
    "counters": {"hellos_in": 40},
}

EXPECTED = """\
/node/a: link-state, 1/2 neighbours up, 2 origins, 12 routes

neighbours
  NAME     URI                  FACE  STATE  COST  LAST HELLO
  /node/b  tcp://10.0.0.2:6363     5  up        1  0.4s ago
  -        udp://10.0.0.3:6363    12  down     10  never

link-state database
  ORIGIN         VERSION  AGE    ADJ  #PFX  PREFIXES
  /node/a              7  1m40s    1     1  /node/a
  /node/b  1700000000123  1.2s     2    23  /node/b, /videos/cats, /fn/matmul, /data/set0, /data/set1 (+18 more)

announced: /node/a, /x"""


def test_routing_prints_neighbours_the_lsdb_and_the_announced_prefixes(node: FakeNode, capsys) -> None:
    node.results[("routing", "status")] = STATUS
    assert main(["routing", "--socket", "/tmp/n.sock"]) == 0
    out = capsys.readouterr()
    assert out.out == EXPECTED + "\n" and out.err == ""
    assert node.sent == [("/tmp/n.sock", "routing", "status", {})]


def test_routing_json_is_exactly_what_the_node_returned(node: FakeNode, capsys) -> None:
    node.results[("routing", "status")] = STATUS
    assert main(["routing", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == STATUS
    assert node.sent == [(None, "routing", "status", {})]


def test_routing_of_a_fresh_node_says_so_instead_of_printing_empty_tables() -> None:
    text = routing_text(None, {"name": "/node/z", "routing": "link-state", "neighbors": [], "lsdb": [],
                               "announced": [], "routes": 0, "counters": {}})
    assert text.splitlines() == [
        "/node/z: link-state, 0/0 neighbours up, 0 origins, 0 routes", "", "neighbours", "  (none)", "",
        "link-state database", "  (empty)", "", "announced: (nothing)"]


def test_prefix_lists_are_cut_to_whole_prefixes_and_counted() -> None:
    many = [{"prefix": f"/p{i:03d}"} for i in range(100)]
    one_long = [{"prefix": "/" + "x" * 200}, {"prefix": "/y"}]
    status = {**STATUS, "neighbors": [], "lsdb": [
        {"origin": "/node/m", "version": 1, "age_s": 0.0, "adjacencies": [], "prefixes": many},
        {"origin": "/node/n", "version": 1, "age_s": 0.0, "adjacencies": [], "prefixes": one_long},
        {"origin": "/node/o", "version": 1, "age_s": None, "adjacencies": [], "prefixes": []},
    ]}
    rows = {line.split()[0]: line for line in routing_text(None, status).splitlines() if line.startswith("  /node/")}
    m = rows["/node/m"].split("  /p000", 1)[1]
    shown = ("/p000" + m).rsplit(" (+", 1)
    assert len(shown[0]) <= PREFIXES_WIDTH and shown[0].endswith("/p007")  # 8 whole prefixes: 8 * 5 + 7 * 2 = 54
    assert shown[1] == "92 more)"
    assert rows["/node/n"].endswith("/" + "x" * (PREFIXES_WIDTH - 4) + "... (+1 more)")
    assert rows["/node/o"].split()[-1] == "-" and rows["/node/o"].split()[2] == "-"  # no age known, no prefixes


def test_announce_and_withdraw_send_the_prefix_and_say_what_happened(node: FakeNode, capsys) -> None:
    node.results[("routing", "announce")] = {"prefix": "/videos"}
    node.results[("routing", "withdraw")] = {"prefix": "/videos"}
    assert main(["announce", "/videos", "--socket", "/s"]) == 0
    assert main(["withdraw", "/videos/"]) == 0
    assert capsys.readouterr().out == "/videos announced\n/videos withdrawn\n"
    assert node.sent == [("/s", "routing", "announce", {"prefix": "/videos"}),
                         (None, "routing", "withdraw", {"prefix": "/videos"})]


def test_a_refused_command_is_one_line_on_stderr_and_exit_1(node: FakeNode, capsys) -> None:
    for verb, argv in (("status", ["routing"]), ("announce", ["announce", "/x"]), ("withdraw", ["withdraw", "/x"])):
        node.results[("routing", verb)] = CliError(f"routing {verb}: routing is off on this node")
        assert main(argv) == 1
        out = capsys.readouterr()
        assert out.out == "" and out.err == f"icnd: error: routing {verb}: routing is off on this node\n"


@pytest.mark.parametrize("argv", [["announce"], ["announce", "videos"], ["withdraw", "/a/%zz"],
                                  ["announce", "/a", "/b"], ["routing", "/x"]])
def test_usage_errors_exit_2_before_anything_is_sent(node: FakeNode, capsys, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage: icnd" in capsys.readouterr().err
    assert node.sent == []


@pytest.mark.parametrize("command", ["announce", "withdraw", "routing"])
def test_each_command_has_help(command: str, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: icnd {command}" in text and "--socket" in text
    assert ("PREFIX" in text) == (command != "routing")
    assert command in build_parser().format_help()  # listed in `icnd --help`
