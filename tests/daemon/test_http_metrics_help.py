"""Every figure of ``/metrics`` says what it counts (issue 27, item 15: the HELP lines repeated the name).

An in-process node with every part that adds figures to its status (link-state
routing, the status page, UDP, TCP and NDN listeners, a face with traffic) is
asked for ``status --json``'s keys and for ``/metrics``: every counter and
table key must have its line in `icnd.daemon.http.help.HELP`, and no HELP
line of the exposition may merely repeat its metric's name.  Before the fix
every counter's HELP was ``status counter <key>`` and every table's ``status
table size <key>``.
"""

from __future__ import annotations

import re
from pathlib import Path

import trio
from prometheus_client.parser import text_string_to_metric_families
from test_http_bounded import get

from icnd.daemon.config import NodeConfig
from icnd.daemon.http.help import HELP, MISSING
from icnd.daemon.http.metrics import exposition, metric_name
from icnd.daemon.node import Node
from icnd.faces.memory import memory_face_pair

# words a HELP line may have besides the name's and still say nothing
NAME_ONLY = {"icnd", "total", "status", "counter", "counters", "table", "tables", "size", "face", "faces",
             "of", "the", "a", "number", "count"}


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def says_more_than_its_name(name: str, text: str) -> bool:
    """At least two words of `text` are neither the metric's name's nor filler."""
    return len(words(text) - words(name) - NAME_ONLY) >= 2


def test_a_help_line_that_repeats_the_name_is_told_apart() -> None:
    assert not says_more_than_its_name("icnd_interests_in_total", "status counter interests_in")
    assert not says_more_than_its_name("icnd_pit_entries", "status table size pit_entries")
    assert not says_more_than_its_name("icnd_face_in_bytes_total", "face counter in_bytes")
    assert says_more_than_its_name("icnd_interests_in_total", HELP["interests_in"])


async def test_every_figure_of_a_node_says_what_it_counts(tmp_path: Path) -> None:
    node = Node(NodeConfig(name="/node/a", socket=str(tmp_path / "a.sock"),
                           listen=["udp://127.0.0.1:0", "tcp://127.0.0.1:0"],
                           ndn_listen=[f"unix://{tmp_path / 'ndn.sock'}"], http="127.0.0.1:0"))
    await node.bind()
    async with trio.open_nursery() as nursery:
        await nursery.start(node.serve)
        with trio.fail_after(10):
            mine, _ = memory_face_pair()
            node.faces.add(mine).counters.in_packets = 3
            assert node.routing is not None  # the routing counters and tables are in the report
            status = node.status()
            keys = [*status["counters"], *status["tables"]]
            assert any(k.startswith("routing_") for k in keys) and "http_requests" in keys
            assert [k for k in keys if k not in HELP] == []

            code, body = await get(node, "/metrics")
        nursery.cancel_scope.cancel()
    assert code == 200
    helps = {f.name: f.documentation for f in text_string_to_metric_families(body.decode())}
    for key in keys:  # the parser names a counter family without its _total
        assert helps[metric_name(key)] == HELP[key]
    assert helps["icnd_face_in_packets"] == HELP["face_in_packets"]
    repeating = {name: text for name, text in helps.items() if not says_more_than_its_name(name, text)}
    assert repeating == {}


def test_a_figure_without_a_line_still_scrapes_and_says_so() -> None:
    figures = {"status": {"name": "/node/a", "version": "0", "uptime_s": 1.0,
                          "counters": {"interests_in": 4, "new_counter": 1}, "tables": {"new_table": 2}},
               "faces": [], "other_faces": None, "functions": [], "neighbors": None}
    text = exposition(figures).decode()
    assert f"# HELP icnd_interests_in_total {HELP['interests_in']}\n" in text
    assert f"# HELP icnd_new_counter_total {MISSING}\n" in text
    assert f"# HELP icnd_new_table {MISSING}\n" in text
    assert "icnd_new_counter_total 1.0\n" in text and "icnd_new_table 2.0\n" in text
