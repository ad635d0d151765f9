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
and the problem.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Iterator, Union

from icnd.errors import Error, VerificationError
from icnd.name import Name, component_from_uri, component_to_uri
from icnd.security import verify_with

from icnd.trust.cert import Certificate, CertificateError, load_certificate

MAX_RULES = 256
MAX_ANY = 2  # <**> per pattern: matching stays polynomial and small
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


@dataclass(frozen=True)
class Pattern:
    """A compiled name pattern."""

    text: str
    comps: tuple[PatternComp, ...]

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
        if sum(1 for c in comps if c is ANY) > MAX_ANY:
            raise ValueError(f"{text!r}: at most {MAX_ANY} <**> in one pattern")
        return cls(text, tuple(comps))

    @property
    def captures(self) -> frozenset[str]:
        return frozenset(c for c in self.comps if isinstance(c, str))

    def matches(self, name: Name, bound: dict[str, bytes] | None = None) -> Iterator[dict[str, bytes]]:
        """Every way `name` matches, as the captures of each (consistent with
        `bound`, the captures already fixed); nothing if it does not match."""
        yield from _match(self.comps, 0, name.comps, 0, dict(bound or {}))

    def match(self, name: Name, bound: dict[str, bytes] | None = None) -> dict[str, bytes] | None:
        """The captures of the first way `name` matches, or None."""
        return next(self.matches(name, bound), None)

    def __str__(self) -> str:
        return self.text


def _match(pat: tuple[PatternComp, ...], i: int, comps: tuple[bytes, ...], j: int,
           caps: dict[str, bytes]) -> Iterator[dict[str, bytes]]:
    while i < len(pat):
        p = pat[i]
        if p is ANY:
            for k in range(len(comps), j - 1, -1):  # longest first
                yield from _match(pat, i + 1, comps, k, caps)
            return
        if j >= len(comps):
            return
        c = comps[j]
        if isinstance(p, bytes):
            if p != c:
                return
        elif isinstance(p, str):
            seen = caps.get(p)
            if seen is None:
                caps = {**caps, p: c}
            elif seen != c:
                return
        i += 1
        j += 1
    if j == len(comps):
        yield caps


@dataclass(frozen=True)
class Rule:
    name: str
    data: Pattern
    signer: Pattern

    def accepts(self, data_name: Name, signer: Name) -> bool:
        """True if the rule matches `data_name` and allows `signer` for it."""
        for caps in self.data.matches(data_name):
            if self.signer.match(signer, caps) is not None:
                return True
        return False


@dataclass
class Schema:
    """Anchors and rules, as loaded from one file."""

    rules: list[Rule]
    anchors: list[Certificate]
    source: str = "<schema>"
    _anchor_keys: dict[Name, Certificate] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._anchor_keys = {a.key_name: a for a in self.anchors}

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
        """Why no rule accepts `signer` for `data_name` (for error messages)."""
        candidates = self.matching(data_name)
        if not candidates:
            return "no rule matches its name"
        return "; ".join(f"rule {r.name!r} wants a signer matching {r.signer}{_bound(r, data_name)}, not {signer}"
                         for r in candidates)

    # --- loading -----------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Schema":
        """Load a schema file; SchemaError naming the file, the rule and the problem."""
        path = os.fspath(path)
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError as exc:
            raise SchemaError(f"{path}: cannot read the trust schema: {exc.strerror or exc}") from None
        try:
            doc = tomllib.loads(text.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise SchemaError(f"{path}: not a TOML trust schema: {exc}") from None
        return cls.from_dict(doc, path, os.path.dirname(os.path.abspath(path)))

    @classmethod
    def from_dict(cls, doc: dict, source: str, base_dir: str) -> "Schema":
        _no_unknown(doc, _SCHEMA_KEYS, f"{source}")
        anchors_field = doc.get("anchors")
        if not isinstance(anchors_field, list) or not anchors_field:
            raise SchemaError(f"{source}: 'anchors' must list at least one anchor certificate file")
        anchors: list[Certificate] = []
        for entry in anchors_field:
            if not isinstance(entry, str):
                raise SchemaError(f"{source}: anchor {entry!r} is not a file name")
            file = os.path.join(base_dir, entry)
            try:
                cert = load_certificate(file)
            except FileNotFoundError:
                raise SchemaError(f"{source}: anchor {entry!r}: no such file ({file})") from None
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
            label = raw.get("name") if isinstance(raw.get("name"), str) else f"#{n}"
            where = f"{source}: rule {label!r}"
            _no_unknown(raw, _RULE_KEYS, where)
            for key in _RULE_KEYS:
                if not isinstance(raw.get(key), str) or not raw[key]:
                    raise SchemaError(f"{where}: '{key}' is missing (a string)")
            if raw["name"] in names:
                raise SchemaError(f"{where}: a second rule with this name")
            names.add(raw["name"])
            patterns = []
            for key in ("data", "signer"):
                try:
                    patterns.append(Pattern.parse(raw[key]))
                except ValueError as exc:
                    raise SchemaError(f"{where}: {key}: {exc}") from None
            data, signer = patterns
            rules.append(Rule(raw["name"], data, signer))
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


def _no_unknown(table: dict, known: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
            raise SchemaError(f"{where}: unknown key {key!r}{hint}")
