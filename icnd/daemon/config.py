"""Daemon configuration: TOML file, then command-line flags on top.

Every key is documented in docs/configuration.md.  `load` rejects unknown
keys and wrong types with a `ConfigError` that names the file and the key,
so a typo never silently falls back to a default.
"""

from __future__ import annotations

import os
import socket as _socket
import tomllib
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from icnd.errors import Error
from icnd.faces.permanent import ReconnectPolicy
from icnd.faces.uri import parse_face_uri, parse_listen_uri
from icnd.name import Name
from icnd.trust.schema import Pattern

if TYPE_CHECKING:
    from icnd.reduction.group import GroupDescriptor


class ConfigError(Error):
    """The configuration is invalid; the message names the file and the key."""


@dataclass
class RouteSpec:
    prefix: str
    face: str  # face URI
    cost: int = 0


@dataclass
class NeighborConfig:
    """A neighbour (``--neighbor URI[,cost=N]``, ``[[neighbors]]``): a permanent face and its link cost.

    The default cost is 1, as for a topology link without ``cost``
    (`icnd.topology.spec`): a network started with neighbours alone computes
    the same route costs as the routes a topology derives (hop counts)."""

    uri: str  # udp://HOST:PORT or tcp://HOST:PORT
    cost: int = 1  # >= 1


ROUTING_MODES = ("link-state", "off")


@dataclass
class RoutingConfig:
    """The routing protocol's knobs (``[routing]``); consumed by the node's routing shell."""

    mode: str = "link-state"  # "link-state" or "off" (static and application routes only)
    hello_interval_s: float = 1.0  # a hello to every neighbour this often
    dead_interval_s: float = 3.0  # a neighbour silent this long is down (> hello_interval_s)
    lsa_refresh_s: float = 600.0  # a node re-originates its record this often
    lsa_lifetime_s: float = 1800.0  # a record not refreshed this long is dropped (> lsa_refresh_s)
    max_prefixes: int = 1000  # prefixes one node may announce
    max_record_kb: int = 64  # the largest link-state record accepted
    max_nodes: int = 10_000  # records (origin nodes) the link-state database holds
    max_routes: int = 20_000  # prefixes routing installs routes for (the rest are counted, not routed)
    # without a trust schema: origins one neighbour may introduce (a flood of invented nodes); 0 = no cap
    max_origins_per_neighbor: int = 1024
    load_aware: bool = True  # load-balance weighs the capacity/load function hosts announce; false: RTT only


@dataclass
class FunctionSpec:
    target: str  # MODULE:CALLABLE
    prefix: str  # /fn/NAME
    allow: list[str] = field(default_factory=list)  # key-name prefixes; empty: any signed caller


@dataclass
class GroupConfig:
    """A reduction group this node knows from configuration (``[[group]]``)."""

    name: str
    members: list[str]  # "id" (member on node id) or "id@node"
    rendezvous: list[str] = field(default_factory=list)  # nodes; default: the members' nodes
    ops: list[str] = field(default_factory=list)  # default: sum, max, min
    segment_bytes: int = 0  # default 512 KiB
    deadline_ms: int = 0  # longest wait for stragglers; 0: the request's lifetime

    def descriptor(self) -> GroupDescriptor:
        from icnd.reduction.group import GroupDescriptor

        return GroupDescriptor.create(self.name, self.members, rendezvous=self.rendezvous or None,
                                      ops=self.ops or None, seg_bytes=self.segment_bytes or None,
                                      deadline_ms=self.deadline_ms or None)


@dataclass
class NodeConfig:
    name: str = ""  # /node/NAME; default /node/<hostname>
    socket: str = ""  # local Unix socket; default per icnd.endpoint.resolve_socket_path
    listen: list[str] = field(default_factory=list)
    ndn_listen: list[str] = field(default_factory=list)  # NDN-format listeners (unix:///path, tcp://HOST:PORT)
    faces: list[str] = field(default_factory=list)
    routes: list[RouteSpec] = field(default_factory=list)
    neighbors: list[NeighborConfig] = field(default_factory=list)  # permanent faces routing runs over
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    face_reconnect_initial_s: float = 0.1  # permanent faces: first wait before reconnecting ...
    face_reconnect_max_s: float = 10.0  # ... doubling up to this
    face_connect_timeout_s: float = 5.0  # one connection attempt's deadline
    functions: list[FunctionSpec] = field(default_factory=list)
    groups: list[GroupConfig] = field(default_factory=list)
    data_dir: str = ""
    key: str = ""  # the node's identity key file (icnd keygen); default: data_dir/identity.key or ephemeral
    cert: str = ""  # a certificate of that key (icnd cert); default: a self-signed one made at start
    trust: str = ""  # the trust schema (TOML) the node applies; default: none (integrity only)
    log_level: str = "info"
    log_json: bool = False
    http: str = ""  # HOST:PORT of the read-only status page and /metrics (icnd.daemon.http); "": off
    cs_capacity_mb: float = 64.0
    repo_capacity_mb: float = 1024.0
    pit_max_entries: int = 100_000
    pit_max_mb: float = 256.0  # Interest parameter bytes the PIT holds in all
    pit_face_max_mb: float = 64.0  # ... from one non-local face
    pit_local_reserve_percent: float = 10.0  # of the PIT's entries and bytes, kept for local faces
    udp_idle_timeout_s: float = 600.0
    stream_max_connections: int = 1024  # open connections per TCP listener (faces: FaceLimits)
    stream_max_per_source: int = 64  # open connections per remote address on a TCP listener
    unix_max_connections: int = 1024  # open connections on the local Unix listener (its own budget)
    stream_frame_timeout_s: float = 30.0  # a partial stream frame must complete within this
    udp_max_faces: int = 1024  # on-demand UDP faces per listener
    udp_reassembly_mb: float = 64.0  # partial fragmented packets held over all faces of a UDP listener
    udp_reassembly_per_source_mb: float = 8.0  # ... and per face (source address)
    function_workers: int = 4  # threads (or processes) running synchronous hosted functions
    function_pool: str = "threads"  # where synchronous hosted functions run: "threads" or "processes"
    function_max_jobs: int = 32  # calls handshaked or running at once; beyond: Nack no-resources
    function_max_arg_mb: float = 64.0
    function_retention_s: float = 60.0  # how long a finished result stays fetchable
    function_memo_mb: float = 64.0  # pure results a function host remembers (LRU); 0: none
    function_ref_max_mb: float = 256.0  # the largest named argument (icnd.Ref) a call's host fetches
    function_ref_timeout_s: float = 300.0  # how long a call's host waits for its named arguments (futures too)
    function_ref_budget_mb: float = 1024.0  # named arguments' bytes a host holds at once, over all its calls
    contrib_store_mb: float = 1024.0  # members' contributions kept by this node (encoded + content)
    groups_max: int = 1024  # group descriptors known (configured, made here, announced): a bounded table
    groups_local_reserve: int = 64  # ... of which announcements from other nodes cannot take these
    groups_per_source: int = 32  # announced groups per announcing key
    groups_remote_idle_s: float = 3600.0  # an announced group unused this long is forgotten
    aggregate_max_mb: float = 256.0  # aggregation buffers in the forwarder
    aggregate_max_entries: int = 1024  # aggregations in progress
    aggregate_max_rounds: int = 16  # concurrent rounds per group
    aggregate_face_max_rounds: int = 8  # ... of which one non-local face may start (a quarter kept local)
    default_strategy: str = "best-route"
    strategies: dict[str, str] = field(default_factory=dict)  # prefix -> strategy

    def node_name(self) -> Name:
        text = self.name or f"/node/{_socket.gethostname().split('.')[0]}"
        if not text.startswith("/"):
            text = f"/node/{text}"
        return Name(text)

    def reconnect_policy(self) -> ReconnectPolicy:
        """How the node's permanent faces retry (`icnd.faces.permanent`)."""
        return ReconnectPolicy(initial=self.face_reconnect_initial_s, maximum=self.face_reconnect_max_s,
                               connect_timeout=self.face_connect_timeout_s)


_LIST_OF_STR = ("listen", "ndn_listen", "faces")
_PATHS_RELATIVE_TO_FILE = ("key", "cert", "trust")


def load(path: str) -> NodeConfig:
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    cfg = from_dict(raw, origin=path)
    base = os.path.dirname(os.path.abspath(path))
    for attr in _PATHS_RELATIVE_TO_FILE:  # as a trust schema's anchors: relative to the file that names them
        value = getattr(cfg, attr)
        if value and not os.path.isabs(value):
            setattr(cfg, attr, os.path.join(base, value))
    return cfg


def from_dict(raw: dict[str, Any], origin: str = "<config>") -> NodeConfig:
    cfg = NodeConfig()
    known = {f.name: f for f in fields(NodeConfig)}
    aliases = {"face": "faces", "route": "routes", "function": "functions", "strategy": "strategies",
               "group": "groups", "neighbor": "neighbors"}
    for key, value in raw.items():
        attr = aliases.get(key, key.replace("-", "_"))
        if attr not in known:
            import difflib  # only on this error path

            close = difflib.get_close_matches(key, sorted({*known, *aliases}), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{origin}: unknown key {key!r}{hint}")
        where = f"{origin}: {key}"
        if attr in _LIST_OF_STR:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: expected a list of URI strings")
            setattr(cfg, attr, list(value))
        elif attr == "routes":
            cfg.routes = [_route(v, f"{where}[{i}]") for i, v in enumerate(_table_list(value, where))]
        elif attr == "neighbors":
            cfg.neighbors = [_neighbor(v, f"{where}[{i}]") for i, v in enumerate(_table_list(value, where))]
        elif attr == "routing":
            cfg.routing = _routing(value, where)
        elif attr == "functions":
            cfg.functions = [_function(v, f"{where}[{i}]") for i, v in enumerate(_table_list(value, where))]
        elif attr == "groups":
            cfg.groups = [_group(v, f"{where}[{i}]") for i, v in enumerate(_table_list(value, where))]
        elif attr == "strategies":
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise ConfigError(f"{where}: expected a table of prefix = \"strategy\"")
            cfg.strategies = dict(value)
        else:
            default = getattr(cfg, attr)
            expected = type(default)
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if type(value) is not expected:
                raise ConfigError(f"{where}: expected {expected.__name__}, got {type(value).__name__}")
            setattr(cfg, attr, value)
    validate(cfg, origin)
    return cfg


def _table_list(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"{where}: expected an array of tables ([[...]])")
    return value


def _route(v: dict[str, Any], where: str) -> RouteSpec:
    extra = set(v) - {"prefix", "face", "cost"}
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {sorted(extra)}")
    if not isinstance(v.get("prefix"), str) or not isinstance(v.get("face"), str):
        raise ConfigError(f"{where}: needs prefix and face strings")
    cost = v.get("cost", 0)
    if type(cost) is not int or cost < 0:
        raise ConfigError(f"{where}: cost must be a non-negative integer")
    return RouteSpec(v["prefix"], v["face"], cost)


def _neighbor(v: dict[str, Any], where: str) -> NeighborConfig:
    extra = set(v) - {"uri", "cost"}
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {sorted(extra)}")
    if not isinstance(v.get("uri"), str):
        raise ConfigError(f"{where}: needs a uri string (udp://HOST:PORT or tcp://HOST:PORT)")
    cost = v.get("cost", 1)
    if type(cost) is not int:
        raise ConfigError(f"{where}: cost must be an integer >= 1")
    return NeighborConfig(v["uri"], cost)


def _routing(value: Any, where: str) -> RoutingConfig:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table ([routing])")
    routing = RoutingConfig()
    known = {f.name for f in fields(RoutingConfig)}
    for key, item in value.items():
        attr = key.replace("-", "_")
        if attr not in known:
            raise ConfigError(f"{where}: unknown key {key!r}; known: {', '.join(sorted(known))}")
        expected = type(getattr(routing, attr))
        if expected is float and isinstance(item, int) and not isinstance(item, bool):
            item = float(item)
        if type(item) is not expected:
            raise ConfigError(f"{where}.{key}: expected {expected.__name__}, got {type(item).__name__}")
        setattr(routing, attr, item)
    return routing


def _function(v: dict[str, Any], where: str) -> FunctionSpec:
    extra = set(v) - {"target", "prefix", "allow"}
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {sorted(extra)}")
    if not isinstance(v.get("target"), str) or not isinstance(v.get("prefix"), str):
        raise ConfigError(f"{where}: needs target (MODULE:CALLABLE) and prefix (/fn/NAME) strings")
    allow = v.get("allow", [])
    if not isinstance(allow, list) or not all(isinstance(a, str) and a.startswith("/") for a in allow):
        raise ConfigError(f"{where}: allow must be a list of key-name prefixes like \"/client/alice\" "
                          "or schema patterns like \"/net/<user>/KEY/<*>\"")
    for a in allow:
        if "<" in a:
            try:
                Pattern.parse(a)
            except ValueError as exc:
                raise ConfigError(f"{where}: allow: {exc}") from None
    return FunctionSpec(v["target"], v["prefix"], list(allow))


def _group(v: dict[str, Any], where: str) -> GroupConfig:
    extra = set(v) - {"name", "members", "rendezvous", "ops", "segment_bytes", "deadline_ms"}
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {sorted(extra)}")
    lists = {k: v.get(k, []) for k in ("members", "rendezvous", "ops")}
    if not isinstance(v.get("name"), str) or any(
            not isinstance(x, list) or not all(isinstance(i, str) for i in x) for x in lists.values()):
        raise ConfigError(f"{where}: needs a name string and members (a list of strings)")
    seg, deadline = v.get("segment_bytes", 0), v.get("deadline_ms", 0)
    if type(seg) is not int or type(deadline) is not int:
        raise ConfigError(f"{where}: segment_bytes and deadline_ms must be integers")
    group = GroupConfig(v["name"], lists["members"], lists["rendezvous"], lists["ops"], seg, deadline)
    try:
        group.descriptor()
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return group


def parse_route_flag(text: str) -> RouteSpec:
    """--route PREFIX=URI[,cost]"""
    prefix, sep, rest = text.partition("=")
    if not sep or not prefix.startswith("/") or not rest:
        raise ConfigError(f"--route {text!r}: expected PREFIX=URI[,cost]")
    uri, _, cost = rest.partition(",")
    try:
        cost_value = int(cost) if cost else 0
    except ValueError:
        raise ConfigError(f"--route {text!r}: cost must be an integer") from None
    if cost_value < 0:
        raise ConfigError(f"--route {text!r}: cost must be >= 0")
    _check_face(uri, f"--route {text!r}")
    return RouteSpec(prefix, uri, cost_value)


def parse_face_flag(text: str) -> str:
    """--face URI"""
    _check_face(text, f"--face {text!r}")
    return text


def parse_listen_flag(text: str) -> str:
    """--listen URI (or a bare HOST: UDP and TCP on port 6363)"""
    _check_listen(text, f"--listen {text!r}")
    return text


def parse_neighbor_flag(text: str) -> NeighborConfig:
    """--neighbor URI[,cost=N]"""
    uri, *options = text.split(",")
    neighbor = NeighborConfig(uri)
    for option in options:
        key, sep, value = option.partition("=")
        if key.strip() != "cost" or not sep:
            raise ConfigError(f"--neighbor {text!r}: unknown option {option!r}; expected URI[,cost=N]")
        try:
            neighbor.cost = int(value)
        except ValueError:
            raise ConfigError(f"--neighbor {text!r}: cost must be an integer >= 1") from None
    _check_neighbor(neighbor, f"--neighbor {text!r}")
    return neighbor


def parse_function_flag(text: str) -> FunctionSpec:
    """--function MODULE:CALLABLE=/fn/NAME"""
    target, sep, prefix = text.partition("=")
    if not sep or ":" not in target or not prefix.startswith("/"):
        raise ConfigError(f"--function {text!r}: expected MODULE:CALLABLE=/fn/NAME")
    return FunctionSpec(target, prefix)


def parse_group_flag(text: str) -> GroupConfig:
    """--group NAME=MEMBER,MEMBER@NODE,...[;rendezvous=NODE,...][;segment_bytes=N][;deadline_ms=N]"""
    head, *options = text.split(";")
    name, sep, members = head.partition("=")
    if not sep or not members:
        raise ConfigError(f"--group {text!r}: expected NAME=MEMBER,MEMBER@NODE,...[;rendezvous=NODE,...]")
    raw: dict[str, Any] = {"name": name, "members": members.split(",")}
    for option in options:
        key, sep, value = option.partition("=")
        if key == "rendezvous" and sep:
            raw["rendezvous"] = value.split(",")
        elif key in ("segment_bytes", "deadline_ms") and value.isdigit():
            raw[key] = int(value)
        else:
            raise ConfigError(f"--group {text!r}: unknown option {option!r} "
                              "(rendezvous=..., segment_bytes=N, deadline_ms=N)")
    return _group(raw, "--group")


LOG_LEVELS = ("debug", "info", "warning", "error")


def parse_http_address(text: str, origin: str = "--http") -> tuple[str, int]:
    """``HOST:PORT`` (``[V6ADDR]:PORT`` for IPv6) of the status page: the host is explicit (no
    default to every address: the page shows the node's faces and routes), the port 0..65535
    (0: a free one, reported by ``status`` as ``http``)."""
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or int(port) > 65535 or any(c in host for c in "/[] "):
        raise ConfigError(f"{origin}: http: {text!r} is not HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080)")
    return host, int(port)


def validate(cfg: NodeConfig, origin: str = "<config>") -> None:
    try:
        cfg.node_name()
    except ValueError as exc:
        raise ConfigError(f"{origin}: name: {exc}") from None
    if cfg.http:
        parse_http_address(cfg.http, origin)
    for r in cfg.routes:
        try:
            Name(r.prefix)
        except ValueError as exc:
            raise ConfigError(f"{origin}: route prefix {r.prefix!r}: {exc}") from None
        _check_face(r.face, f"{origin}: route {r.prefix} face {r.face!r}")
    for uri in cfg.faces:
        _check_face(uri, f"{origin}: face {uri!r}")
    for uri in cfg.listen:
        _check_listen(uri, f"{origin}: listen {uri!r}")
    _validate_neighbors(cfg, origin)
    _validate_routing(cfg, origin)
    for uri in cfg.ndn_listen:
        try:
            parsed = parse_face_uri(uri)
        except ValueError as exc:
            raise ConfigError(f"{origin}: ndn_listen: {exc}") from None
        if parsed.scheme not in ("unix", "tcp"):
            raise ConfigError(f"{origin}: ndn_listen: {uri!r}: an NDN listener is unix:///path or tcp://HOST:PORT")
    if cfg.function_memo_mb < 0:
        raise ConfigError(f"{origin}: function_memo_mb must be >= 0")
    if cfg.function_ref_max_mb < 0 or cfg.function_ref_budget_mb < 0:
        raise ConfigError(f"{origin}: function_ref_max_mb and function_ref_budget_mb must be >= 0")
    if not cfg.function_ref_timeout_s > 0:
        raise ConfigError(f"{origin}: function_ref_timeout_s must be > 0")
    if cfg.function_pool not in ("threads", "processes"):
        raise ConfigError(f"{origin}: function_pool must be threads or processes, not {cfg.function_pool!r}")
    if cfg.log_level.lower() not in LOG_LEVELS:
        raise ConfigError(f"{origin}: log_level must be one of {', '.join(LOG_LEVELS)}")
    for key in ("cs_capacity_mb", "repo_capacity_mb", "udp_idle_timeout_s"):
        if getattr(cfg, key) <= 0:
            raise ConfigError(f"{origin}: {key} must be > 0")
    for key in ("stream_max_connections", "stream_max_per_source", "unix_max_connections", "stream_frame_timeout_s",
                "udp_max_faces", "udp_reassembly_mb", "udp_reassembly_per_source_mb"):
        if getattr(cfg, key) <= 0:
            raise ConfigError(f"{origin}: {key} must be > 0")
    from icnd.core.fw.strategy_choice import STRATEGIES

    for where, strategy in [("default_strategy", cfg.default_strategy), *cfg.strategies.items()]:
        if strategy not in STRATEGIES:
            raise ConfigError(f"{origin}: {where}: unknown strategy {strategy!r}; known: {', '.join(sorted(STRATEGIES))}")
    for key in ("contrib_store_mb", "aggregate_max_mb", "aggregate_max_entries", "aggregate_max_rounds",
                "aggregate_face_max_rounds"):
        if getattr(cfg, key) <= 0:
            raise ConfigError(f"{origin}: {key} must be > 0")
    if cfg.pit_max_entries <= 0:
        raise ConfigError(f"{origin}: pit_max_entries must be > 0")
    for key in ("groups_max", "groups_per_source", "groups_remote_idle_s"):
        if getattr(cfg, key) <= 0:
            raise ConfigError(f"{origin}: {key} must be > 0")
    if not 0 <= cfg.groups_local_reserve < cfg.groups_max:
        raise ConfigError(f"{origin}: groups_local_reserve must be within 0..groups_max-1")
    for key in ("pit_max_mb", "pit_face_max_mb"):
        if getattr(cfg, key) <= 0:
            raise ConfigError(f"{origin}: {key} must be > 0")
    if not 0 <= cfg.pit_local_reserve_percent <= 90:
        raise ConfigError(f"{origin}: pit_local_reserve_percent must be within 0..90")


def _validate_neighbors(cfg: NodeConfig, origin: str) -> None:
    """Each neighbour a udp:// or tcp:// URI, once, with a cost >= 1; the reconnect policy sound."""
    seen: set[str] = set()
    for n in cfg.neighbors:
        where = f"{origin}: neighbor {n.uri!r}"
        canonical = _check_neighbor(n, where)
        if canonical in seen:
            raise ConfigError(f"{where}: listed twice")
        seen.add(canonical)
    try:
        cfg.reconnect_policy()
    except ValueError as exc:
        raise ConfigError(f"{origin}: face_reconnect_initial_s, face_reconnect_max_s, face_connect_timeout_s: "
                          f"{exc}") from None


def _check_face(uri: str, where: str) -> None:
    try:
        parse_face_uri(uri)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _check_listen(uri: str, where: str) -> None:
    try:
        parse_listen_uri(uri)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _check_neighbor(n: NeighborConfig, where: str) -> str:
    """The neighbour's canonical URI; a `ConfigError` starting with `where` if it is unusable."""
    try:
        parsed = parse_face_uri(n.uri)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if parsed.scheme not in ("udp", "tcp"):
        raise ConfigError(f"{where}: a neighbour is udp://HOST:PORT or tcp://HOST:PORT")
    if n.cost < 1:
        raise ConfigError(f"{where}: cost must be an integer >= 1, not {n.cost}")
    return str(parsed)


def _validate_routing(cfg: NodeConfig, origin: str) -> None:
    r = cfg.routing
    if r.mode not in ROUTING_MODES:
        raise ConfigError(f"{origin}: routing.mode must be one of {', '.join(ROUTING_MODES)}, not {r.mode!r}")
    for key in ("hello_interval_s", "dead_interval_s", "lsa_refresh_s", "lsa_lifetime_s", "max_prefixes",
                "max_record_kb", "max_nodes", "max_routes"):
        value = getattr(r, key)
        if not value > 0 or value == float("inf"):
            raise ConfigError(f"{origin}: routing.{key} must be a finite number > 0, not {value!r}")
    if r.max_origins_per_neighbor < 0:
        raise ConfigError(f"{origin}: routing.max_origins_per_neighbor must be >= 0 (0: no cap), "
                          f"not {r.max_origins_per_neighbor!r}")
    if r.dead_interval_s <= r.hello_interval_s:
        raise ConfigError(f"{origin}: routing.dead_interval_s ({r.dead_interval_s:g}) must exceed "
                          f"routing.hello_interval_s ({r.hello_interval_s:g}) (--dead-interval, --hello-interval)")
    if r.lsa_lifetime_s <= r.lsa_refresh_s:
        raise ConfigError(f"{origin}: routing.lsa_lifetime_s ({r.lsa_lifetime_s:g}) must exceed "
                          f"routing.lsa_refresh_s ({r.lsa_refresh_s:g})")
