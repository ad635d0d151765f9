"""Topology files: parse and validate ``topologies/*.toml`` (interface §6).

A topology describes a network: nodes (with the functions they host), links
(with emulated delay, loss and bandwidth, a routing cost and a transport) and
reduction groups.  The schema::

    [defaults]                 # optional, applies to every link
    delay_ms = 0               # >= 0
    loss = 0.0                 # probability per packet, 0..1
    bandwidth_mbps = 0         # >= 0, 0 = unlimited

    [nodes.a]                  # node "a", routable as /node/a
    functions = ["apps.functions:matmul=/fn/matmul"]
    [nodes.b]

    [nodes.c]                  # optional identity and trust (paths relative to
    key = "keys/c.key"         # this file): icnd run --key / --cert / --trust
    cert = "keys/c.cert"
    trust = "schema.toml"      # default: the top-level `trust`, if any

    [[links]]
    ends = ["a", "b"]          # exactly two distinct known nodes
    delay_ms = 5               # optional per-link overrides of [defaults]
    loss = 0.01
    bandwidth_mbps = 100
    cost = 1                   # routing cost, integer >= 1 (default 1)
    transport = "udp"          # "udp" or "tcp"; default udp, tcp on a link with a bandwidth limit

    [groups.g1]
    members = ["a", "m2@b"]    # "NODE", or "MEMBER@NODE" for a member id
                               # that differs from the name of its node
    rendezvous = ["c"]         # optional: nodes where splits start (default:
                               # the members' nodes, segment s at node s mod n)
    segment_bytes = 524288     # optional: 1024..4194304
    deadline_ms = 0            # optional: longest wait for stragglers (0: none)

`load` and `parse` return a `TopologySpec` or raise `TopologyError`, whose
message is ``"<source>: <entry>: <problem>"`` -- the file, the entry (for
example ``links[2].ends``, ``nodes.x``, ``groups.g1.members[0]``) and what is
wrong with it.  Unknown keys are errors everywhere, so a typo never silently
falls back to a default.

Invariants of a `TopologySpec` returned by `load`/`parse`:

- there is at least one node; node, group and member names are non-empty and
  made of ASCII letters, digits, ``-`` and ``_`` (at most `MAX_NAME_LEN`), so
  each is a single name component that never needs percent-encoding;
- every link joins two distinct known nodes, no two links join the same pair,
  and its parameters are resolved (``[defaults]`` applied): ``delay_ms >= 0``,
  ``0 <= loss <= 1``, ``bandwidth_mbps >= 0``, ``cost`` an ``int >= 1``,
  ``transport`` in `TRANSPORTS`;
- every function entry has the form ``MODULE:CALLABLE=/fn/NAME`` and no node
  hosts the same function prefix twice;
- every group has at least one member, every member lives on a known node and
  member ids are unique within a group;
- ``nodes`` and ``groups`` keep the file's order, ``links`` too;
- ``routing`` is one of `ROUTING_MODES`.

The topology may be disconnected: routing simply has no routes between the
parts (tests cut links on purpose).
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from icnd.errors import Error
from icnd.name import T_GENERIC, Name

__all__ = [
    "MAX_NAME_LEN",
    "NODE_PREFIX",
    "ROUTING_MODES",
    "TRANSPORTS",
    "GroupMember",
    "GroupSpec",
    "LinkParams",
    "LinkSpec",
    "NodeSpec",
    "TopologyError",
    "TopologySpec",
    "load",
    "node_prefix",
    "parse",
    "parse_function_entry",
]

NODE_PREFIX = "/node"
"""Every node ``x`` is routable as ``/node/x``."""

TRANSPORTS = ("udp", "tcp")
"""Link transports; the first is the default."""

ROUTING_MODES = ("link-state", "static")
"""Top-level ``routing``: how nodes get their routes; the first is the default."""

MAX_NAME_LEN = 64
"""Longest node, group or member name (node names become socket file names)."""

_NAME_RE = re.compile(r"[A-Za-z0-9_-]+\Z", re.ASCII)
_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+\Z", re.ASCII)
_DOTTED_IDENT = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_TARGET_RE = re.compile(rf"{_DOTTED_IDENT}:{_DOTTED_IDENT}\Z", re.ASCII)
_TOML_POS_RE = re.compile(r"\s*\((at line (\d+), column (\d+)|at end of document)\)\s*\Z")
_TOML_TWICE_RE = re.compile(r"Cannot declare \((.*)\) twice")

_TOP_KEYS = ("defaults", "nodes", "links", "groups", "trust", "routing")
_PARAM_KEYS = ("delay_ms", "loss", "bandwidth_mbps")
_LINK_KEYS = ("ends", *_PARAM_KEYS, "cost", "transport")
_NODE_KEYS = ("functions", "key", "cert", "trust")
_GROUP_KEYS = ("members", "rendezvous", "segment_bytes", "deadline_ms")


class TopologyError(Error, ValueError):
    """A topology violates the schema.

    ``str(err)`` is ``"<source>: <entry>: <problem>"``; the three parts are
    also available as attributes.
    """

    def __init__(self, source: str, entry: str, problem: str) -> None:
        super().__init__(f"{source}: {entry}: {problem}")
        self.source = source
        self.entry = entry
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.source, self.entry, self.problem))


def node_prefix(node: str) -> str:
    """The routable prefix of node ``node``: ``/node/<node>``."""
    return f"{NODE_PREFIX}/{node}"


def parse_function_entry(entry: str) -> tuple[str, str]:
    """Split ``"MODULE:CALLABLE=/fn/NAME"`` into ``(target, prefix)``.

    ``target`` is ``MODULE:CALLABLE`` (dotted identifiers on both sides);
    ``prefix`` is the canonical URI of a name of at least two components whose
    first is the generic component ``fn``.  Raises ``ValueError`` otherwise.
    """
    target, sep, prefix = entry.partition("=")
    if not sep or not _TARGET_RE.match(target):
        raise ValueError(f"expected MODULE:CALLABLE=/fn/NAME, got {entry!r}")
    if not prefix.startswith("/"):
        raise ValueError(f"function prefix must start with /fn/, got {prefix!r}")
    try:
        name = Name(prefix)
    except ValueError as exc:
        raise ValueError(f"bad function prefix {prefix!r}: {exc}") from None
    if len(name) < 2 or name[0].type != T_GENERIC or name[0] != b"fn":
        raise ValueError(f"function prefix must be /fn/NAME, got {prefix!r}")
    return target, name.to_uri()


@dataclass(frozen=True)
class LinkParams:
    """Emulated link properties: the ``[defaults]`` table.

    ``delay_ms >= 0`` (one way), ``0 <= loss <= 1`` (per packet),
    ``bandwidth_mbps >= 0`` with 0 meaning unlimited.
    """

    delay_ms: float = 0
    loss: float = 0.0
    bandwidth_mbps: float = 0


@dataclass(frozen=True)
class NodeSpec:
    """One node.  ``functions`` holds ``MODULE:CALLABLE=/fn/NAME`` entries."""

    name: str
    functions: list[str] = field(default_factory=list)
    key: str | None = None  # the node's identity key file (icnd run --key), an absolute path
    cert: str | None = None  # its certificate file (--cert)
    trust: str | None = None  # the trust schema it applies (--trust); the top-level `trust` by default

    @property
    def prefix(self) -> str:
        """The node's routable prefix, ``/node/<name>``."""
        return node_prefix(self.name)

    @property
    def function_prefixes(self) -> list[str]:
        """The ``/fn/NAME`` prefixes this node hosts, in file order."""
        return [parse_function_entry(f)[1] for f in self.functions]


@dataclass(frozen=True)
class LinkSpec:
    """A bidirectional link between nodes ``a`` and ``b`` (``a != b``).

    Parameters are resolved: per-link values, else ``[defaults]``.  ``cost``
    (an ``int >= 1``) is the routing cost in both directions.
    """

    a: str
    b: str
    delay_ms: float = 0
    loss: float = 0.0
    bandwidth_mbps: float = 0
    cost: int = 1
    transport: str = "udp"

    @property
    def ends(self) -> tuple[str, str]:
        return (self.a, self.b)

    def other(self, node: str) -> str:
        """The end of the link that is not ``node``."""
        if node == self.a:
            return self.b
        if node == self.b:
            return self.a
        raise ValueError(f"{node!r} is not an end of link {self.a}-{self.b}")


class GroupMember(NamedTuple):
    """A group member: its id and the node it lives on.

    A bare ``"b"`` in the file gives ``GroupMember("b", "b")``; ``"m1@b"``
    gives ``GroupMember("m1", "b")``.
    """

    member_id: str
    node: str


@dataclass(frozen=True)
class GroupSpec:
    """A reduction group: ``members`` in file order, member ids unique."""

    name: str
    members: list[GroupMember] = field(default_factory=list)
    rendezvous: list[str] = field(default_factory=list)  # nodes; empty: the members' nodes
    segment_bytes: int = 0  # 0: the default
    deadline_ms: int = 0  # 0: none (the request's lifetime)

    def flag(self) -> str:
        """The ``icnd run --group`` value for this group."""
        members = ",".join(m.member_id if m.member_id == m.node else f"{m.member_id}@{m.node}" for m in self.members)
        text = f"{self.name}={members}"
        if self.rendezvous:
            text += ";rendezvous=" + ",".join(self.rendezvous)
        if self.segment_bytes:
            text += f";segment_bytes={self.segment_bytes}"
        if self.deadline_ms:
            text += f";deadline_ms={self.deadline_ms}"
        return text

    @property
    def nodes(self) -> list[str]:
        """The distinct nodes hosting members, in first-appearance order."""
        return list(dict.fromkeys(m.node for m in self.members))


@dataclass(frozen=True)
class TopologySpec:
    """A validated topology (see the module docstring for the invariants)."""

    nodes: dict[str, NodeSpec]
    links: list[LinkSpec]
    groups: dict[str, GroupSpec]
    defaults: LinkParams = LinkParams()
    source: str = "<string>"
    routing: str = ROUTING_MODES[0]  # "link-state": the routing protocol; "static": derived routes

    def neighbours(self, node: str) -> list[tuple[str, LinkSpec]]:
        """``(neighbour, link)`` pairs of ``node``, in link order."""
        return [(link.other(node), link) for link in self.links if node in (link.a, link.b)]

    def link(self, a: str, b: str) -> LinkSpec | None:
        """The link joining ``a`` and ``b`` (either order), or None."""
        for link in self.links:
            if {link.a, link.b} == {a, b}:
                return link
        return None


# --------------------------------------------------------------------------- loading


def load(path: str | os.PathLike[str]) -> TopologySpec:
    """Read and validate the topology file at ``path``.

    Unreadable files and invalid TOML (including a node table declared twice)
    raise `TopologyError` naming the file, like any schema violation.
    """
    source = os.fspath(path)
    try:
        with open(source, "rb") as fh:
            raw = fh.read()
        text = raw.decode("utf-8")
    except OSError as exc:
        raise TopologyError(source, "file", f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TopologyError(source, "file", f"not UTF-8: {exc}") from exc
    return parse(text, source)


def parse(text_or_dict: str | Mapping[str, Any], source: str = "<string>") -> TopologySpec:
    """Validate a topology given as TOML text or as an already-parsed mapping.

    ``source`` names the origin in error messages (a file path for `load`).
    """
    if isinstance(text_or_dict, str):
        data: Mapping[str, Any] = _loads(text_or_dict, source)
    elif isinstance(text_or_dict, Mapping):
        data = text_or_dict
    else:
        raise TypeError(f"parse() takes TOML text or a mapping, not {type(text_or_dict).__name__}")
    return _Parser(source).topology(data)


def _loads(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = "toml"
        pos = _TOML_POS_RE.search(message)
        if pos:
            message = message[: pos.start()]
            where = f"line {pos.group(2)}" if pos.group(2) else "end of file"
        twice = _TOML_TWICE_RE.match(message)
        if twice:
            keys = re.findall(r"'((?:[^'\\]|\\.)*)'", twice.group(1))
            entry = ".".join(_key(k) for k in keys) if keys else where
            problem = f"declared more than once ({where}); each node, group or table may appear only once"
            if len(keys) == 2 and keys[0] == "nodes":
                problem = f"duplicate node ({where})"
            elif len(keys) == 2 and keys[0] == "groups":
                problem = f"duplicate group ({where})"
            raise TopologyError(source, entry, problem) from exc
        raise TopologyError(source, where, f"invalid TOML: {message}") from exc


def _key(key: str) -> str:
    """A TOML key as it would be written in a dotted path."""
    return key if _BARE_KEY_RE.match(key) else json.dumps(key)


class _Parser:
    """Turns a parsed TOML mapping into a `TopologySpec`, failing on the first error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, entry: str, problem: str) -> TopologyError:
        return TopologyError(self.source, entry, problem)

    # -- helpers -----------------------------------------------------------------

    def table(self, value: Any, entry: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(entry, f"must be a table, got {_describe(value)}")
        return value

    def known_keys(self, table: Mapping[str, Any], allowed: tuple[str, ...], entry: str) -> None:
        for key in table:
            if key not in allowed:
                raise self.error(
                    f"{entry}.{_key(str(key))}" if entry else _key(str(key)),
                    f"unknown key (allowed: {', '.join(allowed)})",
                )

    def ident(self, value: Any, entry: str, what: str) -> str:
        if not isinstance(value, str):
            raise self.error(entry, f"{what} must be a string, got {_describe(value)}")
        if not _NAME_RE.match(value) or len(value) > MAX_NAME_LEN:
            raise self.error(
                entry,
                f"bad {what} {value!r}: use 1 to {MAX_NAME_LEN} letters, digits, '-' or '_'",
            )
        return value

    def number(self, value: Any, entry: str, low: float, high: float | None = None) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(entry, f"must be a number, got {_describe(value)}")
        if value < low or (high is not None and value > high):
            bound = f"between {low:g} and {high:g}" if high is not None else f">= {low:g}"
            raise self.error(entry, f"must be {bound}, got {value!r}")
        return value

    def params(self, table: Mapping[str, Any], entry: str, base: LinkParams) -> LinkParams:
        def get(key: str, low: float, high: float | None, default: float) -> float:
            if key not in table:
                return default
            return self.number(table[key], f"{entry}.{key}", low, high)

        return LinkParams(
            delay_ms=get("delay_ms", 0, None, base.delay_ms),
            loss=get("loss", 0, 1, base.loss),
            bandwidth_mbps=get("bandwidth_mbps", 0, None, base.bandwidth_mbps),
        )

    # -- sections ----------------------------------------------------------------

    def topology(self, data: Mapping[str, Any]) -> TopologySpec:
        self.known_keys(data, _TOP_KEYS, "")
        routing = data.get("routing", ROUTING_MODES[0])
        if routing not in ROUTING_MODES:
            raise self.error("routing", f"must be one of {', '.join(ROUTING_MODES)}, got {routing!r}")
        defaults = LinkParams()
        if "defaults" in data:
            table = self.table(data["defaults"], "defaults")
            self.known_keys(table, _PARAM_KEYS, "defaults")
            defaults = self.params(table, "defaults", defaults)
        trust = self.path(data["trust"], "trust") if "trust" in data else None
        nodes = self.nodes(data.get("nodes"), trust)
        links = self.links(data.get("links", []), nodes, defaults)
        groups = self.groups(data.get("groups", {}), nodes)
        return TopologySpec(nodes=nodes, links=links, groups=groups, defaults=defaults, source=self.source,
                            routing=routing)

    def path(self, value: Any, entry: str) -> str:
        """A file name, relative to the topology file's directory (or to the
        working directory for a topology given as a string)."""
        if not isinstance(value, str) or not value:
            raise self.error(entry, f"must be a file name, got {_describe(value)}")
        base = os.path.dirname(os.path.abspath(self.source)) if os.path.exists(self.source) else os.getcwd()
        return os.path.join(base, os.path.expanduser(value))

    def nodes(self, value: Any, trust: str | None = None) -> dict[str, NodeSpec]:
        if value is None:
            raise self.error("nodes", "missing: a topology needs at least one [nodes.NAME] table")
        table = self.table(value, "nodes")
        if not table:
            raise self.error("nodes", "a topology needs at least one node")
        nodes: dict[str, NodeSpec] = {}
        for raw_name, body in table.items():
            entry = f"nodes.{_key(str(raw_name))}"
            name = self.ident(raw_name, entry, "node name")
            body = self.table(body, entry)
            self.known_keys(body, _NODE_KEYS, entry)
            files = {k: self.path(body[k], f"{entry}.{k}") for k in ("key", "cert", "trust") if k in body}
            if "cert" in files and "key" not in files:
                raise self.error(f"{entry}.cert", "a certificate needs the node's key too (key = ...)")
            nodes[name] = NodeSpec(name=name, functions=self.functions(body.get("functions", []), entry),
                                   key=files.get("key"), cert=files.get("cert"), trust=files.get("trust", trust))
        return nodes

    def functions(self, value: Any, entry: str) -> list[str]:
        entry = f"{entry}.functions"
        if not isinstance(value, list):
            raise self.error(entry, f"must be a list of strings, got {_describe(value)}")
        seen: dict[str, int] = {}
        out: list[str] = []
        for i, item in enumerate(value):
            where = f"{entry}[{i}]"
            if not isinstance(item, str):
                raise self.error(where, f"must be a string MODULE:CALLABLE=/fn/NAME, got {_describe(item)}")
            try:
                _, prefix = parse_function_entry(item)
            except ValueError as exc:
                raise self.error(where, str(exc)) from None
            if prefix in seen:
                raise self.error(where, f"{prefix} is already hosted by {entry}[{seen[prefix]}]")
            seen[prefix] = i
            out.append(item)
        return out

    def links(self, value: Any, nodes: Mapping[str, NodeSpec], defaults: LinkParams) -> list[LinkSpec]:
        if not isinstance(value, list):
            raise self.error("links", f"must be an array of tables ([[links]]), got {_describe(value)}")
        seen: dict[frozenset[str], int] = {}
        links: list[LinkSpec] = []
        for i, body in enumerate(value):
            entry = f"links[{i}]"
            body = self.table(body, entry)
            self.known_keys(body, _LINK_KEYS, entry)
            a, b = self.ends(body, entry, nodes)
            pair = frozenset((a, b))
            if pair in seen:
                raise self.error(entry, f"duplicate link {a}-{b}: links[{seen[pair]}] already joins them")
            seen[pair] = i
            params = self.params(body, entry, defaults)
            cost = body.get("cost", 1)
            if isinstance(cost, bool) or not isinstance(cost, int) or cost < 1:
                raise self.error(f"{entry}.cost", f"must be an integer >= 1, got {cost!r}")
            # a link with a bandwidth limit defaults to TCP: icnd's UDP faces send a large Data's
            # fragments as one burst, which a shaper (tbf under --netns) drops past its queue, and
            # nothing paces them; TCP's congestion control paces to the limit
            transport = body.get("transport", "tcp" if params.bandwidth_mbps > 0 else TRANSPORTS[0])
            if transport not in TRANSPORTS:
                raise self.error(
                    f"{entry}.transport", f"must be one of {', '.join(TRANSPORTS)}, got {transport!r}"
                )
            links.append(
                LinkSpec(
                    a=a,
                    b=b,
                    delay_ms=params.delay_ms,
                    loss=params.loss,
                    bandwidth_mbps=params.bandwidth_mbps,
                    cost=cost,
                    transport=transport,
                )
            )
        return links

    def ends(self, body: Mapping[str, Any], entry: str, nodes: Mapping[str, NodeSpec]) -> tuple[str, str]:
        where = f"{entry}.ends"
        if "ends" not in body:
            raise self.error(entry, 'missing ends = ["NODE", "NODE"]')
        ends = body["ends"]
        if not isinstance(ends, list) or len(ends) != 2:
            raise self.error(where, f"must list exactly two nodes, got {ends!r}")
        for end in ends:
            if not isinstance(end, str):
                raise self.error(where, f"node names must be strings, got {_describe(end)}")
            if end not in nodes:
                raise self.error(where, f"unknown node {end!r}")
        a, b = ends
        if a == b:
            raise self.error(where, f"a link needs two distinct nodes, got {a!r} twice")
        return a, b

    def groups(self, value: Any, nodes: Mapping[str, NodeSpec]) -> dict[str, GroupSpec]:
        table = self.table(value, "groups")
        groups: dict[str, GroupSpec] = {}
        for raw_name, body in table.items():
            entry = f"groups.{_key(str(raw_name))}"
            name = self.ident(raw_name, entry, "group name")
            body = self.table(body, entry)
            self.known_keys(body, _GROUP_KEYS, entry)
            if "members" not in body:
                raise self.error(entry, 'missing members = ["NODE" or "MEMBER@NODE", ...]')
            members = body["members"]
            if not isinstance(members, list) or not members:
                raise self.error(f"{entry}.members", f"must be a non-empty list of strings, got {members!r}")
            out: list[GroupMember] = []
            seen: dict[str, int] = {}
            for i, item in enumerate(members):
                where = f"{entry}.members[{i}]"
                if not isinstance(item, str):
                    raise self.error(where, f"must be a string NODE or MEMBER@NODE, got {_describe(item)}")
                member_id, at, node = item.partition("@")
                if not at:
                    node = member_id
                self.ident(member_id, where, "member id")
                self.ident(node, where, "node name")
                if node not in nodes:
                    raise self.error(where, f"unknown node {node!r}")
                if member_id in seen:
                    first = f"{entry}.members[{seen[member_id]}]"
                    raise self.error(where, f"duplicate member {member_id!r} (also {first})")
                seen[member_id] = i
                out.append(GroupMember(member_id, node))
            rendezvous = body.get("rendezvous", [])
            if not isinstance(rendezvous, list):
                raise self.error(f"{entry}.rendezvous", f"must be a list of node names, got {_describe(rendezvous)}")
            for i, node in enumerate(rendezvous):
                self.ident(node, f"{entry}.rendezvous[{i}]", "node name")
                if node not in nodes:
                    raise self.error(f"{entry}.rendezvous[{i}]", f"unknown node {node!r}")
            seg = body.get("segment_bytes", 0)
            if type(seg) is not int or (seg and not 1024 <= seg <= 4 * 1024 * 1024):
                raise self.error(f"{entry}.segment_bytes", "must be an integer from 1024 to 4194304")
            deadline = body.get("deadline_ms", 0)
            if type(deadline) is not int or not 0 <= deadline <= 3_600_000:
                raise self.error(f"{entry}.deadline_ms", "must be an integer from 0 (none) to 3600000")
            groups[name] = GroupSpec(name=name, members=out, rendezvous=list(rendezvous), segment_bytes=seg,
                                     deadline_ms=deadline)
        return groups


def _describe(value: Any) -> str:
    kind = {dict: "table", list: "array", str: "string", bool: "boolean", int: "integer", float: "float"}
    return f"{kind.get(type(value), type(value).__name__)} {value!r}"
