"""Topology files: every shipped file loads; schema violations are reported
with the file, the entry and the problem (interface §6)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from icnd.topology import (
    GroupMember,
    LinkParams,
    LinkSpec,
    TopologyError,
    TopologySpec,
    load,
    parse,
)

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
SHIPPED = ["line3", "star5", "tree7", "grid9", "dumbbell", "ring8", "default"]


def _connected(spec: TopologySpec) -> bool:
    start = next(iter(spec.nodes))
    seen, todo = {start}, [start]
    while todo:
        for other, _ in spec.neighbours(todo.pop()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen == set(spec.nodes)


# ------------------------------------------------------------------ shipped files


def test_all_required_files_are_shipped() -> None:
    present = {p.stem for p in TOPOLOGIES.glob("*.toml")}
    assert set(SHIPPED) <= present


@pytest.mark.parametrize("path", sorted(TOPOLOGIES.glob("*.toml")), ids=lambda p: p.stem)
def test_shipped_file_loads(path: Path) -> None:
    text = path.read_text()
    assert text.startswith("#"), "each topology file starts with a describing comment"
    spec = load(path)
    assert spec.source == str(path)
    assert spec.nodes
    assert _connected(spec)


@pytest.mark.parametrize(
    "stem, nodes, links",
    [("line3", 3, 2), ("star5", 5, 4), ("tree7", 7, 6), ("grid9", 9, 12), ("dumbbell", 6, 7), ("ring8", 8, 8)],
)
def test_shipped_shapes(stem: str, nodes: int, links: int) -> None:
    spec = load(TOPOLOGIES / f"{stem}.toml")
    assert (len(spec.nodes), len(spec.links)) == (nodes, links)


def test_shapes_in_detail() -> None:
    degrees = lambda spec: sorted(len(spec.neighbours(n)) for n in spec.nodes)  # noqa: E731
    assert degrees(load(TOPOLOGIES / "star5.toml")) == [1, 1, 1, 1, 4]
    assert degrees(load(TOPOLOGIES / "tree7.toml")) == [1, 1, 1, 1, 2, 3, 3]
    assert degrees(load(TOPOLOGIES / "grid9.toml")) == [2, 2, 2, 2, 3, 3, 3, 3, 4]
    assert degrees(load(TOPOLOGIES / "ring8.toml")) == [2] * 8
    line = load(TOPOLOGIES / "line3.toml")
    assert list(line.nodes) == ["a", "b", "c"]
    assert {frozenset(link.ends) for link in line.links} == {frozenset("ab"), frozenset("bc")}


def test_dumbbell_has_one_bottleneck() -> None:
    spec = load(TOPOLOGIES / "dumbbell.toml")
    bridges = []
    for link in spec.links:
        rest = TopologySpec(spec.nodes, [x for x in spec.links if x is not link], {}, source="t")
        if not _connected(rest):
            bridges.append(link)
    assert len(bridges) == 1
    (bottleneck,) = bridges
    assert bottleneck.bandwidth_mbps > 0
    assert bottleneck.delay_ms > spec.defaults.delay_ms
    assert all(link.bandwidth_mbps == 0 for link in spec.links if link is not bottleneck)
    # a shaped link is TCP by default (its congestion control paces to the limit), the others UDP
    assert bottleneck.transport == "tcp"
    assert all(link.transport == "udp" for link in spec.links if link is not bottleneck)


def test_a_shaped_link_defaults_to_tcp_unless_it_says_otherwise() -> None:
    spec = parse({"nodes": {"a": {}, "b": {}, "c": {}, "d": {}},
                  "defaults": {"bandwidth_mbps": 5},
                  "links": [{"ends": ["a", "b"]}, {"ends": ["b", "c"], "transport": "udp"},
                            {"ends": ["c", "d"], "bandwidth_mbps": 0}]}, "t")
    assert [link.transport for link in spec.links] == ["tcp", "udp", "udp"]


def test_default_has_demo_group_and_two_hosts_of_matmul() -> None:
    spec = load(TOPOLOGIES / "default.toml")
    assert 4 <= len(spec.nodes) <= 8
    assert len(spec.groups["demo"].members) >= 3
    hosts = [n.name for n in spec.nodes.values() if "/fn/matmul" in n.function_prefixes]
    assert len(hosts) == 2  # the demo spreads calls over two hosts


# ------------------------------------------------------------------ valid input


FULL = """
[defaults]
delay_ms = 2
loss = 0.01
bandwidth_mbps = 100

[nodes.a]
functions = ["apps.functions:matmul=/fn/matmul", "pkg.mod:Cls.method=/fn/x/y"]
[nodes.b]
[nodes.c-1]
[nodes.d_2]

[[links]]
ends = ["a", "b"]
delay_ms = 5
cost = 3
transport = "tcp"

[[links]]
ends = ["b", "c-1"]
loss = 0
bandwidth_mbps = 0

[groups.g1]
members = ["b", "m7@c-1", "d_2"]
"""


def test_parse_full_schema() -> None:
    spec = parse(FULL, "full.toml")
    assert list(spec.nodes) == ["a", "b", "c-1", "d_2"]
    assert spec.nodes["a"].functions == ["apps.functions:matmul=/fn/matmul", "pkg.mod:Cls.method=/fn/x/y"]
    assert spec.nodes["a"].function_prefixes == ["/fn/matmul", "/fn/x/y"]
    assert spec.nodes["c-1"].prefix == "/node/c-1"
    assert spec.defaults == LinkParams(delay_ms=2, loss=0.01, bandwidth_mbps=100)
    assert spec.links == [
        LinkSpec("a", "b", delay_ms=5, loss=0.01, bandwidth_mbps=100, cost=3, transport="tcp"),
        LinkSpec("b", "c-1", delay_ms=2, loss=0, bandwidth_mbps=0, cost=1, transport="udp"),
    ]
    assert spec.groups["g1"].members == [GroupMember("b", "b"), GroupMember("m7", "c-1"), GroupMember("d_2", "d_2")]
    assert spec.groups["g1"].nodes == ["b", "c-1", "d_2"]
    assert spec.link("c-1", "b") is spec.links[1]
    assert spec.link("a", "d_2") is None
    assert [n for n, _ in spec.neighbours("b")] == ["a", "c-1"]
    assert spec.source == "full.toml"


def test_single_node_without_links() -> None:
    spec = parse("[nodes.solo]\n")
    assert list(spec.nodes) == ["solo"]
    assert spec.links == [] and spec.groups == {}
    assert spec.defaults == LinkParams()


def test_parse_accepts_a_mapping() -> None:
    spec = parse({"nodes": {"a": {}, "b": {}}, "links": [{"ends": ["a", "b"], "cost": 2}]}, "gen")
    assert spec.links == [LinkSpec("a", "b", cost=2)]
    assert spec.source == "gen"


def test_parse_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        parse(42)  # type: ignore[arg-type]


# ------------------------------------------------------------------ errors


NODES3 = "[nodes.a]\n[nodes.b]\n[nodes.c]\n"

BAD = {
    # name: (toml text, expected entry, expected words of the problem)
    "unknown_link_node": (NODES3 + '[[links]]\nends = ["a", "x"]\n', "links[0]", "unknown node 'x'"),
    "third_link_unknown_node": (
        NODES3 + '[[links]]\nends = ["a", "b"]\n[[links]]\nends = ["b", "c"]\n[[links]]\nends = ["c", "zz"]\n',
        "links[2]",
        "unknown node 'zz'",
    ),
    "duplicate_link": (
        NODES3 + '[[links]]\nends = ["a", "b"]\n[[links]]\nends = ["b", "a"]\n',
        "links[1]",
        "duplicate link",
    ),
    "self_link": (NODES3 + '[[links]]\nends = ["a", "a"]\n', "links[0]", "two distinct nodes"),
    "three_ends": (NODES3 + '[[links]]\nends = ["a", "b", "c"]\n', "links[0]", "exactly two"),
    "missing_ends": (NODES3 + "[[links]]\ncost = 1\n", "links[0]", "missing ends"),
    "duplicate_node": ("[nodes.a]\n[nodes.b]\n[nodes.a]\n", "nodes.a", "duplicate node"),
    "duplicate_group": (NODES3 + '[groups.g]\nmembers=["a"]\n[groups.g]\n', "groups.g", "duplicate group"),
    "negative_delay": (NODES3 + '[[links]]\nends = ["a", "b"]\ndelay_ms = -5\n', "links[0].delay_ms", ">= 0"),
    "negative_default_delay": (NODES3 + "[defaults]\ndelay_ms = -1\n", "defaults.delay_ms", ">= 0"),
    "loss_above_one": (NODES3 + '[[links]]\nends = ["a", "b"]\nloss = 1.5\n', "links[0].loss", "between 0 and 1"),
    "negative_loss_default": (NODES3 + "[defaults]\nloss = -0.1\n", "defaults.loss", "between 0 and 1"),
    "negative_bandwidth": (
        NODES3 + '[[links]]\nends = ["a", "b"]\nbandwidth_mbps = -1\n',
        "links[0].bandwidth_mbps",
        ">= 0",
    ),
    "string_delay": (NODES3 + '[[links]]\nends = ["a", "b"]\ndelay_ms = "5"\n', "links[0].delay_ms", "number"),
    "zero_cost": (NODES3 + '[[links]]\nends = ["a", "b"]\ncost = 0\n', "links[0].cost", "integer >= 1"),
    "float_cost": (NODES3 + '[[links]]\nends = ["a", "b"]\ncost = 1.5\n', "links[0].cost", "integer >= 1"),
    "bool_cost": (NODES3 + '[[links]]\nends = ["a", "b"]\ncost = true\n', "links[0].cost", "integer >= 1"),
    "bad_transport": (NODES3 + '[[links]]\nends = ["a", "b"]\ntransport = "quic"\n', "links[0].transport", "udp, tcp"),
    "unknown_top_key": ("colour = 1\n" + NODES3, "colour", "unknown key (allowed: defaults, nodes, links, groups, trust, routing)"),
    "unknown_node_key": ("[nodes.a]\nroutes = []\n", "nodes.a.routes", "unknown key"),
    "unknown_link_key": (NODES3 + '[[links]]\nends = ["a", "b"]\ndelay = 5\n', "links[0].delay", "unknown key"),
    "unknown_default_key": (NODES3 + "[defaults]\ncost = 2\n", "defaults.cost", "unknown key"),
    "unknown_group_key": (NODES3 + '[groups.g]\nmembers = ["a"]\nop = "sum"\n', "groups.g.op", "unknown key"),
    "bad_node_name": ('[nodes."a.b"]\n', 'nodes."a.b"', "bad node name 'a.b'"),
    "bad_node_name_space": ('[nodes."a b"]\n', 'nodes."a b"', "bad node name"),
    "no_nodes": ("[defaults]\ndelay_ms = 1\n", "nodes", "at least one"),
    "empty_nodes": ("[nodes]\n", "nodes", "at least one node"),
    "node_not_table": ("[nodes]\na = 1\n", "nodes.a", "must be a table"),
    "links_not_array": (NODES3 + "[links]\nends = 1\n", "links", "array of tables"),
    "unknown_group_member": (NODES3 + '[groups.g1]\nmembers = ["a", "q"]\n', "groups.g1.members[1]", "unknown node 'q'"),
    "unknown_member_node": (NODES3 + '[groups.g1]\nmembers = ["m@q"]\n', "groups.g1.members[0]", "unknown node 'q'"),
    "duplicate_member": (
        NODES3 + '[groups.g1]\nmembers = ["a", "b", "a"]\n',
        "groups.g1.members[2]",
        "duplicate member 'a'",
    ),
    "duplicate_member_id": (
        NODES3 + '[groups.g1]\nmembers = ["m@a", "m@b"]\n',
        "groups.g1.members[1]",
        "duplicate member 'm'",
    ),
    "bad_member_id": (NODES3 + '[groups.g1]\nmembers = ["m/1@a"]\n', "groups.g1.members[0]", "bad member id"),
    "empty_group": (NODES3 + "[groups.g1]\nmembers = []\n", "groups.g1.members", "non-empty"),
    "group_without_members": (NODES3 + "[groups.g1]\n", "groups.g1", "missing members"),
    "bad_group_name": (NODES3 + '[groups."g!"]\nmembers = ["a"]\n', 'groups."g!"', "bad group name"),
    "function_without_prefix": ('[nodes.a]\nfunctions = ["apps.functions:matmul"]\n', "nodes.a.functions[0]", "MODULE:CALLABLE=/fn/NAME"),
    "function_without_callable": ('[nodes.a]\nfunctions = ["apps=/fn/x"]\n', "nodes.a.functions[0]", "MODULE:CALLABLE=/fn/NAME"),
    "function_wrong_prefix": ('[nodes.a]\nfunctions = ["m:f=/node/x"]\n', "nodes.a.functions[0]", "/fn/NAME"),
    "function_bare_fn": ('[nodes.a]\nfunctions = ["m:f=/fn"]\n', "nodes.a.functions[0]", "/fn/NAME"),
    "function_twice": (
        '[nodes.a]\nfunctions = ["m:f=/fn/x", "m:g=/fn/x"]\n',
        "nodes.a.functions[1]",
        "already hosted",
    ),
    "functions_not_list": ('[nodes.a]\nfunctions = "m:f=/fn/x"\n', "nodes.a.functions", "list of strings"),
    "invalid_toml": ("[nodes.a\n", "line 1", "invalid TOML"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_schema_error_names_file_entry_and_problem(case: str, tmp_path: Path) -> None:
    text, entry, problem = BAD[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    with pytest.raises(TopologyError) as info:
        load(path)
    err = info.value
    message = str(err)
    assert message.startswith(f"{path}: "), message
    assert entry in message, message
    assert problem in message, message
    assert err.source == str(path)
    assert entry in err.entry
    assert problem in err.problem
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("case", ["duplicate_node", "negative_delay", "unknown_group_member"])
def test_parse_uses_given_source(case: str) -> None:
    text, entry, _ = BAD[case]
    with pytest.raises(TopologyError) as info:
        parse(text, "mine.toml")
    assert str(info.value).startswith(f"mine.toml: {entry}")


def test_missing_file_is_a_topology_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(TopologyError, match="nope.toml: file: cannot read"):
        load(path)


def test_topology_problem_survives_pickling() -> None:
    err = TopologyError("f.toml", "links[0]", "bad")
    again = pickle.loads(pickle.dumps(err))
    assert (again.source, again.entry, again.problem, str(again)) == ("f.toml", "links[0]", "bad", str(err))


def test_trust_files_are_resolved_against_the_topology_file(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('trust = "schema.toml"\n'
                    '[nodes.a]\nkey = "keys/a.key"\ncert = "keys/a.cert"\n'
                    '[nodes.b]\ntrust = "/etc/other.toml"\n[nodes.c]\n')
    spec = load(path)
    a, b, c = spec.nodes["a"], spec.nodes["b"], spec.nodes["c"]
    assert (a.key, a.cert, a.trust) == (str(tmp_path / "keys/a.key"), str(tmp_path / "keys/a.cert"),
                                        str(tmp_path / "schema.toml"))
    assert b.trust == "/etc/other.toml" and b.key is None
    assert c.trust == str(tmp_path / "schema.toml")


def test_a_node_certificate_needs_its_key(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('[nodes.a]\ncert = "a.cert"\n')
    with pytest.raises(TopologyError, match=r"nodes\.a\.cert: a certificate needs the node's key"):
        load(path)
