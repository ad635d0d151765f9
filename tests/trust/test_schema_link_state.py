"""A trust schema that refuses link-state routing Data is said at start (issue #27 item 7).

A node applies its schema to every routing record
(``/node/<n>/routing/ls/v=<k>``) and hello proof
(``/node/<n>/routing/hello/<challenge>``); a schema with no rule for them
(bench/rmi.py's had none) refuses them all and the node silently has no
routes.  `Schema.refuses` says why a name and signer would be refused; the
node warns at start, naming the rule to add."""

from __future__ import annotations

from pathlib import Path

import pytest

from icnd.core.routing.lsdb import record_name
from icnd.keyfiles import load_schema
from icnd.name import Name
from icnd.testing.processes import Daemon, short_tempdir
from icnd.trust import Schema

from ._pki import anchor, key, write_schema

CERTS_ONLY = """\
anchors = ["anchor.cert"]
[[rule]]
name = "node-certs"
data = "/node/<node>/KEY/<**>"
signer = "/net/KEY/<*>"
[[rule]]
name = "answers"
data = "/fn/<**>"
signer = "/node/<*>/KEY/<*>"
"""
WITH_RECORDS = CERTS_ONLY + """\
[[rule]]
name = "node-records"
data = "/node/<node>/routing/<**>"
signer = "/node/<node>/KEY/<*>"
"""


def test_refuses_says_why_a_record_would_be_refused_or_none(tmp_path):
    anchors = {"anchor.cert": anchor()[1]}
    record = record_name(Name("/node/a"), 7)
    own = key("/node/a").name
    schema = load_schema(write_schema(tmp_path, CERTS_ONLY, anchors))
    assert schema.refuses(record, own) == "no rule matches its name"
    schema = load_schema(write_schema(tmp_path, WITH_RECORDS, anchors))
    assert schema.refuses(record, own) is None
    other = key("/node/b").name
    assert schema.refuses(record, other) == (
        f"rule 'node-records' wants a signer matching /node/<node>/KEY/<*> with node=a, not {other}")


@pytest.fixture
def tmp():
    with short_tempdir() as path:
        yield Path(path)


async def _stderr_at_start(tmp: Path, schema_text: str, name: str) -> str:
    write_schema(tmp, schema_text, {"anchor.cert": anchor()[1]})
    d = Daemon(tmp, "--name", f"/node/{name}", "--listen", "udp://127.0.0.1:0", "--trust", str(tmp / "schema.toml"),
               name=name)
    try:
        await d.until_ready()
    finally:
        d.stop()
    return d.log_tail()


async def test_a_node_whose_schema_refuses_link_state_warns_at_start_naming_the_missing_rule(tmp) -> None:
    log = await _stderr_at_start(tmp, CERTS_ONLY, "lonely")
    assert "refuses link-state routing Data such as this node's /node/lonely/routing/ls/v=1" in log
    assert "(no rule matches its name)" in log and "this node learns no routes" in log
    assert 'add a rule for them: data = "/node/<node>/routing/<**>", signer = "/node/<node>/KEY/<*>"' in log


async def test_a_schema_with_a_rule_for_records_only_is_warned_about_hello_proofs(tmp) -> None:
    records_only = WITH_RECORDS.replace("/node/<node>/routing/<**>", "/node/<node>/routing/ls/<*>")
    log = await _stderr_at_start(tmp, records_only, "half")
    assert "refuses link-state routing Data such as this node's /node/half/routing/hello/challenge" in log


async def test_a_node_whose_schema_accepts_its_records_does_not_warn(tmp) -> None:
    log = await _stderr_at_start(tmp, WITH_RECORDS, "fine")
    assert "link-state routing Data" not in log
