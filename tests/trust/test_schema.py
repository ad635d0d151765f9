"""Trust schemas: patterns and loading (icnd.trust.schema)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd.keyfiles import load_schema
from icnd.name import Name, generic
from icnd.trust.cert import issue
from icnd.trust.schema import ANY, ONE, Pattern, Rule, SchemaError

from ._pki import USER_SCHEMA, T, anchor, certified, key, write_schema

# --- patterns ------------------------------------------------------------------------------------


def test_parse_components():
    p = Pattern.parse("/net/<user>/<*>/<**>/v=3/a%20b")
    assert p.comps == (generic("net"), "user", ONE, ANY, Name("/v=3").comps[0], generic("a b"))
    assert p.captures == frozenset({"user"})
    assert str(p) == "/net/<user>/<*>/<**>/v=3/a%20b"
    assert Pattern.parse("/").comps == () and Pattern.parse("/a/").comps == (generic("a"),)


@pytest.mark.parametrize("text,why", [
    ("net/<user>", "does not start with '/'"),
    ("/net/<a b>", "unknown pattern '<a b>'"),
    ("/net/<>", "unknown pattern '<>'"),
    ("/net/<***>", "unknown pattern"),
    ("/net/x<y>", "unknown pattern"),
    ("/net/<1x>", "unknown pattern"),
    ("/net/bad%2", "bad component"),
    ("/net/nosuchtype=4", "bad component"),
    ("/<**>/a/<**>/b/<**>", "at most 2 <**>"),
])
def test_parse_errors(text, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        Pattern.parse(text)


def test_capture_binds_one_component():
    p = Pattern.parse("/net/<user>/doc")
    assert p.match(Name("/net/alice/doc")) == {"user": generic("alice")}
    assert p.match(Name("/net/alice/x/doc")) is None
    assert p.match(Name("/net/doc")) is None
    assert p.match(Name("/other/alice/doc")) is None


def test_repeated_capture_must_agree():
    p = Pattern.parse("/<x>/<x>")
    assert p.match(Name("/a/a")) == {"x": generic("a")}
    assert p.match(Name("/a/b")) is None
    assert p.match(Name("/a/a"), {"x": generic("b")}) is None  # bound beforehand
    assert p.match(Name("/b/b"), {"x": generic("b")}) == {"x": generic("b")}


def test_one_is_exactly_one_and_not_captured():
    p = Pattern.parse("/net/<*>")
    assert p.match(Name("/net/a")) == {}
    assert p.match(Name("/net")) is None and p.match(Name("/net/a/b")) is None


def test_any_is_zero_or_more():
    p = Pattern.parse("/net/<**>")
    for uri in ("/net", "/net/a", "/net/a/b/c/seg=3"):
        assert p.match(Name(uri)) == {}, uri
    assert p.match(Name("/other")) is None and p.match(Name("/")) is None
    mid = Pattern.parse("/a/<**>/z")
    assert mid.match(Name("/a/z")) is not None and mid.match(Name("/a/1/2/z")) is not None
    assert mid.match(Name("/a/1/2")) is None


def test_multiple_bindings():
    p = Pattern.parse("/<**>/<x>/<**>")
    found = [caps["x"] for caps in p.matches(Name("/a/b/c"))]
    assert sorted(found) == [generic("a"), generic("b"), generic("c")]
    # a rule accepts when any binding suits the signer
    rule = Rule("r", p, Pattern.parse("/<x>/KEY/<*>"))
    assert rule.accepts(Name("/a/b/c"), Name("/b/KEY/k"))
    assert not rule.accepts(Name("/a/b/c"), Name("/d/KEY/k"))


def test_literal_components_percent_encoded_and_typed():
    p = Pattern.parse("/net/hello%2Fworld/v=1")
    assert p.match(Name([b"net", b"hello/world"]).append("v=1")) == {}
    assert p.match(Name([b"net", b"hello/world", b"v=1"])) is None  # generic "v=1" is not a version


def test_rule_same_captures():
    rule = Rule("user-data", Pattern.parse("/net/<user>/<**>"), Pattern.parse("/net/<user>/KEY/<*>"))
    assert rule.accepts(Name("/net/alice/doc/seg=0"), Name("/net/alice/KEY/k1"))
    assert not rule.accepts(Name("/net/alice/doc"), Name("/net/bob/KEY/k1"))
    assert not rule.accepts(Name("/net/alice/doc"), Name("/net/alice/KEY/k1/extra"))


_comps = st.lists(st.binary(max_size=6).map(generic), min_size=0, max_size=6)


@settings(max_examples=200, deadline=None)
@given(_comps, st.data())
def test_pattern_from_own_components_matches(comps, data):
    """Each component written as a literal, a capture, <*>, or folded into <**>, matches the name."""
    name = Name.from_wire(tuple(comps))
    parts: list[str] = []
    expected: dict[str, bytes] = {}
    i = 0
    used_any = 0
    while i < len(comps):
        kind = data.draw(st.sampled_from(["lit", "cap", "one", "any"]))
        if kind == "any" and used_any < 2:
            n = data.draw(st.integers(0, len(comps) - i))
            parts.append("<**>")
            used_any += 1
            i += n
            continue
        if kind == "cap":
            parts.append(f"<c{i}>")
            expected[f"c{i}"] = comps[i]
        elif kind == "one":
            parts.append("<*>")
        else:
            parts.append(Name.from_wire((comps[i],)).to_uri()[1:])
        i += 1
    pattern = Pattern.parse("/" + "/".join(parts))
    caps = pattern.match(name)
    assert caps is not None, (pattern, name)
    if used_any == 0:
        assert caps == expected
        assert Pattern.parse("/" + "/".join([*parts, "<extra>"])).match(name) is None  # one too many


# --- loading -------------------------------------------------------------------------------------


@pytest.fixture
def anchor_cert():
    return anchor()[1]


def test_load_user_schema(tmp_path, anchor_cert):
    schema = load_schema(write_schema(tmp_path, USER_SCHEMA, {"anchor.cert": anchor_cert}))
    assert [r.name for r in schema.rules] == ["user-data", "user-certs"]
    assert schema.anchors == [anchor_cert]
    assert schema.anchor(anchor_cert.key_name) == anchor_cert and schema.anchor(Name("/net/KEY/x")) is None
    alice = Name("/net/alice/KEY/k")
    assert schema.accepting(Name("/net/alice/doc"), alice).name == "user-data"
    assert schema.accepting(Name("/net/alice/KEY/k/x/v=1"), anchor_cert.key_name).name == "user-certs"
    assert schema.accepting(Name("/net/alice/doc"), Name("/net/bob/KEY/k")) is None
    assert schema.source == str(tmp_path / "schema.toml")


def test_anchor_path_relative_to_schema(tmp_path, anchor_cert, monkeypatch):
    sub = tmp_path / "etc"
    sub.mkdir()
    path = write_schema(sub, USER_SCHEMA, {"anchor.cert": anchor_cert})
    monkeypatch.chdir(tmp_path)
    assert load_schema("etc/schema.toml").anchors == [anchor_cert]
    assert path.exists()


def test_refusal_messages(tmp_path, anchor_cert):
    schema = load_schema(write_schema(tmp_path, USER_SCHEMA, {"anchor.cert": anchor_cert}))
    why = schema.refusal(Name("/net/alice/doc"), Name("/net/bob/KEY/k"))
    assert why == "rule 'user-data' wants a signer matching /net/<user>/KEY/<*> with user=alice, not /net/bob/KEY/k"
    assert schema.refusal(Name("/elsewhere/doc"), Name("/net/bob/KEY/k")) == "no rule matches its name"
    both = schema.refusal(Name("/net/alice/KEY/k/i/v=1"), Name("/net/bob/KEY/k"))
    assert "rule 'user-data' wants a signer matching /net/<user>/KEY/<*> with user=alice" in both
    assert "rule 'user-certs' wants a signer matching /net/KEY/<*>, not /net/bob/KEY/k" in both


def _load_error(tmp_path, text, anchors) -> str:
    with pytest.raises(SchemaError) as err:
        load_schema(write_schema(tmp_path, text, anchors))
    message = str(err.value)
    assert message.startswith(str(tmp_path / "schema.toml") + ": ")
    assert "\n" not in message
    return message


@pytest.mark.parametrize("pattern,bad", [("<a b>", "'<a b>'"), ("<>", "'<>'")])
def test_unknown_pattern_names_file_and_rule(tmp_path, anchor_cert, pattern, bad):
    text = USER_SCHEMA.replace('signer = "/net/<user>/KEY/<*>"', f'signer = "/net/{pattern}/KEY/<*>"')
    message = _load_error(tmp_path, text, {"anchor.cert": anchor_cert})
    assert "rule 'user-data'" in message and "signer" in message
    assert f"unknown pattern {bad}" in message


def test_missing_anchor_file(tmp_path):
    message = _load_error(tmp_path, USER_SCHEMA, {})
    assert "anchor 'anchor.cert': no such file" in message and str(tmp_path / "anchor.cert") in message


def test_anchor_not_a_certificate(tmp_path):
    message = _load_error(tmp_path, USER_SCHEMA, {"anchor.cert": b"garbage"})
    assert "anchor 'anchor.cert'" in message and "not a certificate file" in message


def test_anchor_not_self_signed(tmp_path):
    issuer, _ = anchor("/other")
    _, cert = certified("/net", issuer)
    message = _load_error(tmp_path, USER_SCHEMA, {"anchor.cert": cert})
    assert f"anchor 'anchor.cert': {cert.name} is not self-signed" in message


def test_anchor_with_bad_signature(tmp_path, anchor_cert):
    from icnd.packet import Data
    forged = Data(anchor_cert.data.name, anchor_cert.data.content, anchor_cert.data.content_type,
                  anchor_cert.data.freshness_ms, None, anchor_cert.data.sig_type, anchor_cert.data.key_locator,
                  bytes(64))
    message = _load_error(tmp_path, USER_SCHEMA, {"anchor.cert": _wire(forged)})
    assert "anchor 'anchor.cert'" in message and "bad ed25519 signature" in message


def _wire(data):
    from icnd.codec import encode
    return encode(data)


def test_unknown_keys_with_suggestion(tmp_path, anchor_cert):
    message = _load_error(tmp_path, USER_SCHEMA.replace("signer =", "signr =", 1), {"anchor.cert": anchor_cert})
    assert "rule 'user-data': unknown key 'signr' (did you mean 'signer'?)" in message
    message = _load_error(tmp_path, "anchor = []\n" + USER_SCHEMA, {"anchor.cert": anchor_cert})
    assert "unknown key 'anchor' (did you mean 'anchors'?)" in message
    message = _load_error(tmp_path, "zzz = 1\n" + USER_SCHEMA, {"anchor.cert": anchor_cert})
    assert "unknown key 'zzz' (known: anchors, rule)" in message


@pytest.mark.parametrize("field", ["data", "signer", "name"])
def test_missing_rule_field(tmp_path, anchor_cert, field):
    lines = [ln for ln in USER_SCHEMA.splitlines() if not ln.startswith(f"{field} =")]
    message = _load_error(tmp_path, "\n".join(lines) + "\n", {"anchor.cert": anchor_cert})
    assert f"'{field}' is missing" in message
    assert "rule '#1'" in message or "rule 'user-data'" in message


def test_no_rules(tmp_path, anchor_cert):
    message = _load_error(tmp_path, 'anchors = ["anchor.cert"]\n', {"anchor.cert": anchor_cert})
    assert "no [[rule]]" in message


def test_no_anchors(tmp_path, anchor_cert):
    message = _load_error(tmp_path, USER_SCHEMA.replace('["anchor.cert"]', "[]"), {})
    assert "'anchors' must list at least one" in message


def test_duplicate_rule_name(tmp_path, anchor_cert):
    text = USER_SCHEMA.replace('name = "user-certs"', 'name = "user-data"')
    assert "a second rule with this name" in _load_error(tmp_path, text, {"anchor.cert": anchor_cert})


def test_bad_toml(tmp_path):
    message = _load_error(tmp_path, "anchors = [\n", {})
    assert "not a TOML trust schema" in message


def test_missing_schema_file(tmp_path):
    with pytest.raises(SchemaError, match="nope.toml: cannot read the trust schema"):
        load_schema(tmp_path / "nope.toml")


def test_rules_tried_in_order_any_accepts(tmp_path, anchor_cert):
    k = key("/net/alice")
    assert issue(anchor()[0], k, now=T).key_name == k.name  # sanity: fixtures in use
    text = USER_SCHEMA + '[[rule]]\nname = "admin"\ndata = "/net/<**>"\nsigner = "/net/admin/KEY/<*>"\n'
    schema = load_schema(write_schema(tmp_path, text, {"anchor.cert": anchor_cert}))
    assert schema.accepting(Name("/net/alice/doc"), Name("/net/admin/KEY/k")).name == "admin"
    assert schema.accepting(Name("/net/alice/doc"), Name("/net/alice/KEY/k")).name == "user-data"
