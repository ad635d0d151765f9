"""Bounded matching cost of trust schemas (issue #26 T1).

A legal schema of 256 rules ``/<**>/<a>/<**>/<b>`` took 19.4 s of CPU to
refuse one 62-component Data (every binding of the data pattern re-matched
the signer pattern, itself tried at every split).  Patterns now match in a
bounded number of steps (`Pattern.steps`), a rule matches its signer once
per decision, and a schema whose rules could cost more than `MAX_STEPS` is
refused at load.  The matcher is checked against a plain reference matcher
(every split of every ``<**>`` tried) so the semantics stay those of
interface §13."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd.errors import VerificationError
from icnd.keyfiles import load_schema
from icnd.name import Name, generic
from icnd.packet import Data
from icnd.trust import Validator
from icnd.trust.schema import ANY, MAX_STEPS, ONE, Pattern, PatternComp, Rule, Schema, SchemaError

from ._pki import T, anchor, key, write_schema

# --- the same answers as every split tried --------------------------------------------------------


def _reference(pat: tuple[PatternComp, ...], comps: tuple[bytes, ...],
               caps: dict[str, bytes]) -> list[dict[str, bytes]]:
    """Every binding, by trying every split of every <**> (first <**> longest first)."""
    if not pat:
        return [caps] if not comps else []
    p, rest = pat[0], pat[1:]
    if p is ANY:
        return [found for k in range(len(comps), -1, -1) for found in _reference(rest, comps[k:], caps)]
    if not comps:
        return []
    c = comps[0]
    if isinstance(p, bytes) and p != c:
        return []
    if isinstance(p, str):
        if caps.get(p, c) != c:
            return []
        caps = {**caps, p: c}
    return _reference(rest, comps[1:], caps)


def _distinct(found: list[dict[str, bytes]]) -> list[dict[str, bytes]]:
    out: list[dict[str, bytes]] = []
    for caps in found:
        if caps not in out:
            out.append(caps)
    return out


_ALPHABET = [generic(x) for x in ("a", "b", "KEY")]
_pattern_comp = st.one_of(st.sampled_from(_ALPHABET), st.sampled_from(["x", "y"]), st.just(ONE), st.just(ANY))


@st.composite
def _patterns(draw: st.DrawFn) -> Pattern:
    comps = draw(st.lists(_pattern_comp, max_size=7))
    while sum(1 for c in comps if c is ANY) > 2:
        comps.remove(ANY)
    return Pattern("(generated)", tuple(comps))


_names = st.lists(st.sampled_from(_ALPHABET), max_size=8).map(lambda comps: Name.from_wire(tuple(comps)))
_bound = st.dictionaries(st.sampled_from(["x", "y"]), st.sampled_from(_ALPHABET), max_size=2)


@settings(max_examples=400, deadline=None)
@given(_patterns(), _names, _bound)
def test_matches_are_those_of_every_split_in_the_same_order(pattern, name, bound):
    expected = _distinct(_reference(pattern.comps, name.comps, dict(bound)))
    assert _distinct(list(pattern.matches(name, bound))) == expected
    assert pattern.match(name, bound) == (expected[0] if expected else None)


@settings(max_examples=400, deadline=None)
@given(_patterns(), _patterns(), _names, _names)
def test_a_rule_accepts_when_some_binding_of_its_data_suits_its_signer(data, signer, data_name, signer_name):
    if not signer.captures <= data.captures or not signer.can_match_key_name():
        return  # refused at load (test_schema_mistakes.py)
    rule = Rule("r", data, signer)
    expected = any(_reference(signer.comps, signer_name.comps, caps)
                   for caps in _reference(data.comps, data_name.comps, {}))
    assert rule.accepts(data_name, signer_name) == expected


# --- the T1 schema: decided in milliseconds --------------------------------------------------------
T1_RULES = 256


def _t1_schema(tmp_path) -> Schema:
    rules = "".join(f'[[rule]]\nname = "r{i}"\ndata = "/<**>/<a>/<**>/<b>"\nsigner = "/<**>/<a>/<**>/<b>"\n'
                    for i in range(T1_RULES))
    return load_schema(write_schema(tmp_path, 'anchors = ["anchor.cert"]\n' + rules, {"anchor.cert": anchor()[1]}))


def test_256_two_any_rules_refuse_a_62_component_data_in_milliseconds(tmp_path):
    schema = _t1_schema(tmp_path)
    assert schema.steps <= MAX_STEPS  # the bound that holds for any name, checked at load
    signer = key("/" + "/".join(["x"] * 58))  # a key name of 60 components, every one but the id "x"
    data = signer.sign(Data(Name("/" + "/".join(["x"] * 62)), b"payload"))
    validator = Validator(schema, clock=lambda: T)
    start = time.process_time()
    with pytest.raises(VerificationError, match="rule 'r0' wants a signer matching"):
        validator.validate_carried(data, [])
    assert time.process_time() - start < 1.0  # was 6-20 s
    assert validator.counters["refused"] == 1


def test_the_t1_refusal_explains_three_rules_and_counts_the_rest(tmp_path):
    schema = _t1_schema(tmp_path)
    why = schema.refusal(Name("/" + "/".join(["x"] * 62)), Name("/y/KEY/k"))
    assert why.count("wants a signer matching") == 3
    assert why.endswith(f"; and {T1_RULES - 3} more rules whose data matches")


@pytest.mark.parametrize("text,steps", [
    ("/net/<user>/KEY/<*>", 5),  # no <**>: one comparison per component, plus one
    ("/net/<user>/<**>", 3),  # one <**>: head and tail at the ends of the name
    ("/<**>/<a>/<**>/<b>", 128),  # the middle <a> tried at 63 places of a 64-component name
    ("/a/<**>/<**>/b", 3),  # two adjacent <**> are one
])
def test_pattern_steps(text, steps):
    assert Pattern.parse(text).steps == steps


def test_a_schema_that_could_cost_too_much_is_refused_at_load_naming_its_costliest_rule(tmp_path):
    middle = "/".join(f"<c{i}>" for i in range(32))  # the costliest middle: 33 places x 33 steps
    rules = "".join(f'[[rule]]\nname = "cheap{i}"\ndata = "/net/<u>/<**>"\nsigner = "/net/<u>/KEY/<*>"\n'
                    for i in range(3))
    rules += "".join(f'[[rule]]\nname = "wide{i}"\ndata = "/<**>/{middle}/<**>"\nsigner = "/net/KEY/<*>"\n'
                     for i in range(100))
    path = write_schema(tmp_path, 'anchors = ["anchor.cert"]\n' + rules, {"anchor.cert": anchor()[1]})
    with pytest.raises(SchemaError) as err:
        load_schema(path)
    message = str(err.value)
    assert message.startswith(f"{path}: deciding one name could take ")
    assert f"more than {MAX_STEPS}" in message and "the costliest is rule 'wide0'" in message
    assert "\n" not in message
