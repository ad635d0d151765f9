"""Schema mistakes refused at load (issue #27 items 5 and 15).

A typo in a capture used to widen a rule silently: ``data =
"/node/<node>/<**>"`` with ``signer = "/node/<nod>/KEY/<*>"`` loaded, and
node a's key could then sign for node b.  Every such mistake is now a
one-line error naming the file, the rule and the problem."""

from __future__ import annotations

import pytest

import icnd
from icnd.keyfiles import load_certificate, load_schema
from icnd.name import Name
from icnd.testing.processes import one_line_error, run_cli
from icnd.trust.cert import CertificateError
from icnd.trust.schema import Pattern, Rule, Schema, SchemaError

from ._pki import anchor, key, write_schema

TYPO = """\
anchors = ["anchor.cert"]
[[rule]]
name = "node-certs"
data = "/node/<node>/KEY/<**>"
signer = "/net/KEY/<*>"
[[rule]]
name = "node-data"
data = "/node/<node>/<**>"
signer = "/node/<nod>/KEY/<*>"
"""


@pytest.fixture
def anchors():
    return {"anchor.cert": anchor()[1]}


def _load_error(tmp_path, text: str, anchors) -> str:
    path = write_schema(tmp_path, text, anchors)
    with pytest.raises(SchemaError) as err:
        load_schema(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message


def test_a_capture_of_the_signer_that_data_does_not_bind_is_refused_naming_rule_and_capture(tmp_path, anchors):
    message = _load_error(tmp_path, TYPO, anchors)
    assert "rule 'node-data'" in message
    assert "captures <nod>, which data /node/<node>/<**> does not bind" in message
    assert "(did you mean <node>?)" in message


def test_the_typo_fixed_the_rule_holds_each_node_to_its_own_names(tmp_path, anchors):
    schema = load_schema(write_schema(tmp_path, TYPO.replace("<nod>", "<node>"), anchors))
    a = key("/node/a").name
    assert schema.accepting(Name("/node/a/x"), a).name == "node-data"
    assert schema.accepting(Name("/node/b/x"), a) is None  # what the typo let through


def test_an_unbound_capture_with_no_close_name_suggests_any_component(tmp_path, anchors):
    text = TYPO.replace("/node/<nod>/KEY/<*>", "/node/<zzz>/KEY/<*>")
    assert "(write <*> for any component)" in _load_error(tmp_path, text, anchors)
    with pytest.raises(ValueError, match="captures <x>"):  # the same for a rule built in code
        Rule("r", Pattern.parse("/a/<**>"), Pattern.parse("/<x>/KEY/<*>"))


@pytest.mark.parametrize("signer", ["/node/<node>", "/node/<node>/KEY", "/<**>/KEY", "/<**>/x/<*>", "/KEY/<*>", "/"])
def test_a_signer_no_key_name_matches_is_refused(tmp_path, anchors, signer):
    message = _load_error(tmp_path, TYPO.replace("/node/<nod>/KEY/<*>", signer), anchors)
    assert f"rule 'node-data': signer {signer} matches no key name (/<identity>/KEY/<key-id>)" in message


@pytest.mark.parametrize("signer", ["/node/<node>/KEY/<*>", "/<**>", "/node/<**>/KEY/<*>", "/node/<node>/<**>",
                                    "/<**>/<*>", "/net/<*>/<*>"])
def test_signers_some_key_name_matches_load(tmp_path, anchors, signer):
    load_schema(write_schema(tmp_path, TYPO.replace("/node/<nod>/KEY/<*>", signer), anchors))


def test_a_pattern_longer_than_any_name_is_refused(tmp_path, anchors):
    long = "/node/<node>" + "/x" * 63
    message = _load_error(tmp_path, TYPO.replace('data = "/node/<node>/<**>"', f'data = "{long}/<**>"'), anchors)
    assert "rule 'node-data': data:" in message and "65 components besides <**>" in message


@pytest.mark.parametrize("field,value,why", [
    ("signer", "5", "'signer' must be a string, not int 5"),
    ("data", "[\"/a\"]", "'data' must be a string, not list ['/a']"),
    ("data", '""', "'data' is empty"),
])
def test_a_field_that_is_not_a_pattern_says_what_it_is(tmp_path, anchors, field, value, why):
    text = TYPO.replace(f'{field} = "/node/<node>/<**>"' if field == "data" else f'{field} = "/node/<nod>/KEY/<*>"',
                        f"{field} = {value}")
    message = _load_error(tmp_path, text, anchors)
    assert f"rule 'node-data': {why}" in message and "missing" not in message


def test_a_rule_name_that_is_not_a_string_is_named_by_position(tmp_path, anchors):
    message = _load_error(tmp_path, TYPO.replace('name = "node-data"', "name = 7"), anchors)
    assert "rule '#2': 'name' must be a string, not int 7" in message


def test_a_key_file_given_as_anchor_is_named_as_such(tmp_path):
    (tmp_path / "anchor.key").write_bytes(key("/net").to_bytes())
    message = _load_error(tmp_path, TYPO.replace("anchor.cert", "anchor.key"), {})
    assert f"anchor 'anchor.key': {tmp_path / 'anchor.key'} is a key file, not a certificate" in message
    assert "msgpack" not in message


def test_the_cli_says_the_same_in_one_line(tmp_path, anchors):
    path = write_schema(tmp_path, TYPO, anchors)
    err = one_line_error(run_cli("fetch", "--trust", str(path), "--socket", str(tmp_path / "none.sock"), "/x"))
    assert str(path) in err and "rule 'node-data'" in err and "<nod>" in err


def test_a_key_file_where_a_certificate_is_expected_is_named_as_such(tmp_path):
    path = tmp_path / "node.key"
    path.write_bytes(key("/node/a").to_bytes())
    with pytest.raises(CertificateError, match=f"^{path} is a key file, not a certificate"):
        load_certificate(path)


def test_certificate_and_schema_errors_are_icnd_errors(tmp_path):
    """What `connect(cert=..., trust=...)` and the CLI raise for a bad file is an `icnd.Error`."""
    path = tmp_path / "node.key"
    path.write_bytes(key("/node/a").to_bytes())
    with pytest.raises(icnd.Error):
        load_certificate(path)
    with pytest.raises(icnd.Error):
        load_schema(write_schema(tmp_path, TYPO, {}))
