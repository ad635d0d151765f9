"""Trust schemas: which keys may sign which names (interface §13).

A schema is a TOML file::

    anchors = ["anchor.cert"]                 # paths relative to this file
    [[rule]]
    name = "user-data"
    data = "/net/<user>/<**>"
    signer = "/net/<user>/KEY/<*>"

Patterns are names whose components may be ``<x>`` (one component,
captured as ``x``), ``<*>`` (one component) or ``<**>`` (any number of
components, none included); anything else inside ``<...>`` is an error.
A Data is accepted by a rule when the rule's ``data`` pattern matches the
Data's name and its ``signer`` pattern matches the key locator *with the
same captures* (a capture named in both must bind the same component).

Patterns are compiled once, at load; every error names the file, the rule
and the problem.  Besides malformed patterns, a load refuses rules that
cannot mean what they say: a capture in ``signer`` that ``data`` does not
bind (it would match any component: a typo that widens the rule), a
``signer`` that no key name (``/<identity>/KEY/<key-id>``) can match, a
pattern longer than any name.

**Bounded cost.**  A pattern has at most two ``<**>``, so its components
fall into a head, at most one floating middle and a tail: the head and
the tail sit at the ends of the name, and only the middle is tried at each
position in between -- at most ``MAX_COMPONENTS`` matches, each found in
as many steps as the middle has components.  `Pattern.steps` is that
worst case for any name; a rule costs its two patterns' steps (the
bindings of the signer are found once and looked up, never re-matched per
binding of the data), and a schema whose rules together could cost more
than `MAX_STEPS` to decide one name is refused at load, naming its
costliest rule.  Deciding a name is thus bounded whatever the name.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Union

from icnd.errors import Error, VerificationError
from icnd.name import MAX_COMPONENTS, T_GENERIC, Name, component_from_uri, component_to_uri
from icnd.security import KEY_ID_LEN, verify_with

from icnd.trust.cert import KEY, Certificate, CertificateError

MAX_RULES = 256
MAX_ANY = 2  # <**> per pattern: one floating middle at most, so a match takes O(name x pattern) steps
MAX_STEPS = 100_000  # the worst-case steps of all the rules of one schema, for one name (Schema.steps)
MAX_REFUSALS_SHOWN = 3  # rules an error message explains (then "and N more")
_CAPTURE = re.compile(r"<([A-Za-z_][A-Za-z0-9_-]*)>\Z")
_SCHEMA_KEYS = ("anchors", "rule")
_RULE_KEYS = ("name", "data", "signer")


class SchemaError(Error, ValueError):
    """A trust schema that cannot be loaded (names the file, rule and problem)."""


class _One:
    """``<*>``"""


class _Any:
    """``<**>``"""


ONE = _One()
ANY = _Any()
PatternComp = Union[bytes, str, _One, _Any]  # bytes: a literal wire component; str: a capture's name
Segment = tuple[PatternComp, ...]  # components between two <**>: none of them is ANY


@dataclass(frozen=True)
class Pattern:
    """A compiled name pattern.

    Raises ValueError (saying why) for more than `MAX_ANY` ``<**>`` or more
    components than a name can hold."""

    text: str
    comps: tuple[PatternComp, ...]
    _head: Segment = field(init=False, repr=False, compare=False)  # at the start of the name
    _middle: Segment | None = field(init=False, repr=False, compare=False)  # between two <**>, anywhere
    _tail: Segment | None = field(init=False, repr=False, compare=False)  # at the end; None: no <**> at all
    steps: int = field(init=False, repr=False, compare=False)  # the most steps one match can take

    def __post_init__(self) -> None:
        segments: list[list[PatternComp]] = [[]]
        for c in self.comps:
            if c is ANY:
                segments.append([])
            else:
                segments[-1].append(c)
        if len(segments) - 1 > MAX_ANY:
            raise ValueError(f"{self.text!r}: at most {MAX_ANY} <**> in one pattern")
        fixed = sum(len(s) for s in segments)
        if fixed > MAX_COMPONENTS:
            raise ValueError(f"{self.text!r} has {fixed} components besides <**>, and a name at most "
                             f"{MAX_COMPONENTS}: it would never match")
        head = tuple(segments[0])
        middle = tuple(segments[1]) if len(segments) == 3 and segments[1] else None  # <**>/<**> is one <**>
        tail = tuple(segments[-1]) if len(segments) > 1 else None
        steps = 1 + fixed
        if middle is not None:
            places = MAX_COMPONENTS - fixed + 1
            steps += places * (len(middle) + 1) - len(middle)
        object.__setattr__(self, "_head", head)
        object.__setattr__(self, "_middle", middle)
        object.__setattr__(self, "_tail", tail)
        object.__setattr__(self, "steps", steps)

    @classmethod
    def parse(cls, text: str) -> "Pattern":
        """Compile `text`; ValueError saying which component is wrong."""
        if not isinstance(text, str) or not text.startswith("/"):
            raise ValueError(f"pattern {text!r} does not start with '/'")
        parts = [p for p in text[1:].split("/")]
        if parts and parts[-1] == "":
            parts.pop()
        comps: list[PatternComp] = []
        for part in parts:
            if part.startswith("<") or part.endswith(">"):
                if part == "<*>":
                    comps.append(ONE)
                elif part == "<**>":
                    comps.append(ANY)
                else:
                    m = _CAPTURE.match(part)
                    if m is None:
                        raise ValueError(f"unknown pattern {part!r} in {text!r} (use <name>, <*> or <**>)")
                    comps.append(m.group(1))
            else:
                try:
                    comps.append(component_from_uri(part))
                except ValueError as exc:
                    raise ValueError(f"bad component {part!r} in {text!r}: {exc}") from None
        return cls(text, tuple(comps))

    @property
    def captures(self) -> frozenset[str]:
        return frozenset(c for c in self.comps if isinstance(c, str))

    def matches(self, name: Name, bound: dict[str, bytes] | None = None) -> Iterator[dict[str, bytes]]:
        """Every way `name` matches, as the captures of each (consistent with
        `bound`, the captures already fixed); nothing if it does not match.
        The first ``<**>`` is tried longest first; at most `steps` steps."""
        comps = name.comps
        n = len(comps)
        head, middle, tail = self._head, self._middle, self._tail
        if tail is None:
            ends = _segment(head, comps, 0, dict(bound or {})) if n == len(head) else None
            if ends is not None:
                yield ends
            return
        last = n - len(tail)  # where the tail starts
        if last - len(head) - (len(middle) if middle is not None else 0) < 0:
            return
        ends = _segment(head, comps, 0, dict(bound or {}))
        caps = _segment(tail, comps, last, ends) if ends is not None else None
        if caps is None:
            return
        if middle is None:
            yield caps
            return
        for start in range(last - len(middle), len(head) - 1, -1):
            found = _segment(middle, comps, start, caps)
            if found is not None:
                yield found

    def match(self, name: Name, bound: dict[str, bytes] | None = None) -> dict[str, bytes] | None:
        """The captures of the first way `name` matches, or None."""
        return next(self.matches(name, bound), None)

    def can_match_key_name(self) -> bool:
        """True if some key name (``/<identity>/KEY/<key-id>``, an identity of
        at least one component) matches the pattern: what a signer must be."""
        comps = self.comps
        if not comps or (type(comps[-1]) is bytes and not _key_id_shaped(comps[-1])):
            return False
        if ANY in comps[-2:]:
            return True  # a <**> can end with KEY/<key-id>, or with KEY before it
        if len(comps) < 3 and ANY not in comps:
            return False  # no room for an identity
        return comps[-2] == KEY or comps[-2] is ONE or isinstance(comps[-2], str)

    def __str__(self) -> str:
        return self.text


def _key_id_shaped(comp: bytes) -> bool:
    """A literal component that can be a key id (generic, `KEY_ID_LEN` bytes)."""
    return comp[0] == T_GENERIC and len(comp) == 1 + KEY_ID_LEN


def _segment(seg: Segment, comps: tuple[bytes, ...], start: int,
             caps: dict[str, bytes]) -> dict[str, bytes] | None:
    """`caps` extended by matching `seg` at `comps[start:]` (a copy when it
    binds something new; `caps` itself is never changed), or None."""
    j = start
    for p in seg:
        c = comps[j]
        if type(p) is bytes:
            if p != c:
                return None
        elif type(p) is str:
            seen = caps.get(p)
            if seen is None:
                caps = {**caps, p: c}
            elif seen != c:
                return None
        j += 1
    return caps


@dataclass(frozen=True)
class Rule:
    """A rule: `signer` may sign Data whose name matches `data`.

    Raises ValueError for a rule that cannot mean what it says: a capture
    of `signer` that `data` does not bind, or a `signer` no key name matches."""

    name: str
    data: Pattern
    signer: Pattern
    _shared: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unbound = sorted(self.signer.captures - self.data.captures)
        if unbound:
            capture = unbound[0]
            close = difflib.get_close_matches(capture, sorted(self.data.captures), n=1)
            hint = f"did you mean <{close[0]}>?" if close else "write <*> for any component"
            raise ValueError(f"signer {self.signer} captures <{capture}>, which data {self.data} does not "
                             f"bind, so it would match any component ({hint})")
        if not self.signer.can_match_key_name():
            raise ValueError(f"signer {self.signer} matches no key name (/<identity>/KEY/<key-id>): "
                             f"the signer is the name of the key that signs")
        object.__setattr__(self, "_shared", tuple(sorted(self.signer.captures)))

    @property
    def steps(self) -> int:
        """The most steps `accepts` can take."""
        return self.data.steps + self.signer.steps

    def accepts(self, data_name: Name, signer: Name) -> bool:
        """True if the rule matches `data_name` and allows `signer` for it."""
        shared = self._shared
        allowed: set[tuple[bytes, ...]] | None = None
        for caps in self.data.matches(data_name):
            if allowed is None:  # the signer's bindings, found once
                allowed = {tuple(s[k] for k in shared) for s in self.signer.matches(signer)}
            if tuple(caps[k] for k in shared) in allowed:
                return True
        return False


@dataclass
class Schema:
    """Anchors and rules, as loaded from one file.

    Raises SchemaError if the rules could cost more than `MAX_STEPS` to
    decide one name (see the module docstring)."""

    rules: list[Rule]
    anchors: list[Certificate]
    source: str = "<schema>"
    _anchor_keys: dict[Name, Certificate] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._anchor_keys = {a.key_name: a for a in self.anchors}
        if self.steps > MAX_STEPS:
            worst = max(self.rules, key=lambda r: r.steps)
            raise SchemaError(
                f"{self.source}: deciding one name could take {self.steps} steps with these {len(self.rules)} "
                f"rules, more than {MAX_STEPS}; the costliest is rule {worst.name!r} ({worst.steps} steps: "
                f"a pattern with two <**> is tried at every position of a name): use fewer such rules, or "
                f"one <**> per pattern")

    @property
    def steps(self) -> int:
        """The most steps `accepting` can take for one name (the rules' `steps`)."""
        return sum(r.steps for r in self.rules)

    def anchor(self, key: Name) -> Certificate | None:
        """The anchor certificate of key `key`, if `key` is an anchor."""
        return self._anchor_keys.get(key)

    def matching(self, data_name: Name) -> list[Rule]:
        """The rules whose data pattern matches `data_name`."""
        return [r for r in self.rules if r.data.match(data_name) is not None]

    def accepting(self, data_name: Name, signer: Name) -> Rule | None:
        """The first rule that accepts `signer` for `data_name`, or None."""
        for rule in self.rules:
            if rule.accepts(data_name, signer):
                return rule
        return None

    def refusal(self, data_name: Name, signer: Name) -> str:
        """Why no rule accepts `signer` for `data_name` (for error messages;
        the first `MAX_REFUSALS_SHOWN` rules whose data pattern matches)."""
        candidates = self.matching(data_name)
        if not candidates:
            return "no rule matches its name"
        why = "; ".join(f"rule {r.name!r} wants a signer matching {r.signer}{_bound(r, data_name)}, not {signer}"
                        for r in candidates[:MAX_REFUSALS_SHOWN])
        more = len(candidates) - MAX_REFUSALS_SHOWN
        return why + (f"; and {more} more rule{'s' if more > 1 else ''} whose data matches" if more > 0 else "")

    def refuses(self, data_name: Name, signer: Name) -> str | None:
        """Why the rules refuse `signer` for `data_name` (`refusal`), or None
        if one accepts it (its certificate chain aside): e.g. to check at
        start that a node's own records would pass."""
        return None if self.accepting(data_name, signer) is not None else self.refusal(data_name, signer)

    # --- loading -----------------------------------------------------------------------
    @classmethod
    def from_dict(cls, doc: dict[str, Any], source: str, read_anchor: Callable[[str], Certificate]) -> "Schema":
        """The schema in `doc` (a parsed TOML file named `source`);
        ``read_anchor(entry)`` returns the certificate an ``anchors`` entry
        names (OSError or CertificateError if it cannot: `icnd.keyfiles`
        reads it from a file).  SchemaError naming `source`, the rule and
        the problem."""
        _no_unknown(doc, _SCHEMA_KEYS, f"{source}")
        anchors_field = doc.get("anchors")
        if not isinstance(anchors_field, list) or not anchors_field:
            raise SchemaError(f"{source}: 'anchors' must list at least one anchor certificate file")
        anchors: list[Certificate] = []
        for entry in anchors_field:
            if not isinstance(entry, str):
                raise SchemaError(f"{source}: anchor {entry!r} is not a file name")
            try:
                cert = read_anchor(entry)
            except FileNotFoundError as exc:
                raise SchemaError(f"{source}: anchor {entry!r}: no such file ({exc.filename})") from None
            except OSError as exc:
                raise SchemaError(f"{source}: anchor {entry!r}: {exc.strerror or exc}") from None
            except CertificateError as exc:
                raise SchemaError(f"{source}: anchor {entry!r}: {exc}") from None
            if not cert.self_signed:
                raise SchemaError(f"{source}: anchor {entry!r}: {cert.name} is not self-signed")
            try:
                verify_with(cert.data, cert.verify_key())
            except VerificationError as exc:
                raise SchemaError(f"{source}: anchor {entry!r}: {exc}") from None
            anchors.append(cert)
        rules_field = doc.get("rule", [])
        if not isinstance(rules_field, list) or not all(isinstance(r, dict) for r in rules_field):
            raise SchemaError(f"{source}: rules are [[rule]] tables")
        if not rules_field:
            raise SchemaError(f"{source}: no [[rule]]: nothing would be accepted")
        if len(rules_field) > MAX_RULES:
            raise SchemaError(f"{source}: {len(rules_field)} rules; at most {MAX_RULES}")
        rules: list[Rule] = []
        names: set[str] = set()
        for n, raw in enumerate(rules_field, 1):
            label = raw.get("name") if isinstance(raw.get("name"), str) and raw["name"] else f"#{n}"
            where = f"{source}: rule {label!r}"
            _no_unknown(raw, _RULE_KEYS, where)
            for key in _RULE_KEYS:
                value = raw.get(key)
                if value is None:
                    raise SchemaError(f"{where}: '{key}' is missing (a string)")
                if not isinstance(value, str):
                    raise SchemaError(f"{where}: '{key}' must be a string, not {type(value).__name__} {value!r}")
                if not value:
                    raise SchemaError(f"{where}: '{key}' is empty")
            if raw["name"] in names:
                raise SchemaError(f"{where}: a second rule with this name")
            names.add(raw["name"])
            patterns = []
            for key in ("data", "signer"):
                try:
                    patterns.append(Pattern.parse(raw[key]))
                except ValueError as exc:
                    raise SchemaError(f"{where}: {key}: {exc}") from None
            try:
                rules.append(Rule(raw["name"], *patterns))
            except ValueError as exc:
                raise SchemaError(f"{where}: {exc}") from None
        return cls(rules, anchors, source)


def _bound(rule: Rule, data_name: Name, limit: int = 3) -> str:
    """The captures the data pattern binds that the signer pattern must
    repeat, as ``" with user=alice"`` (``" or user=bob"`` for other
    bindings); "" when there are none."""
    shared = sorted(rule.signer.captures & rule.data.captures)
    if not shared:
        return ""
    seen: list[str] = []
    for caps in rule.data.matches(data_name):
        text = ", ".join(f"{k}={component_to_uri(caps[k])}" for k in shared)
        if text not in seen:
            seen.append(text)
            if len(seen) > limit:
                break
    more = " or ..." if len(seen) > limit else ""
    return " with " + " or ".join(seen[:limit]) + more


def _no_unknown(table: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
            raise SchemaError(f"{where}: unknown key {key!r}{hint}")
