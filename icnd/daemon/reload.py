"""Reloading the configuration of a running node (``SIGHUP``, ``systemctl reload``).

What a reload changes, each by the code path start-up uses for it
(`Node._apply_config`, `Node.bind`):

- **neighbours** (``[[neighbors]]``): one added gets a permanent face and
  joins routing; one removed leaves routing and its face is closed (unless
  the new configuration still names that face); one whose cost changed
  rejoins routing with the new cost on the same face.
- **faces** (``faces``): added ones are opened (permanent), removed ones
  closed, under the same rule.
- **static routes** (``[[route]]``): the previous configuration's routes
  that the new one does not name are removed from the RIB (origin
  ``static``); every route the new one names is added (or its cost
  updated).  Routes added at run time with ``icnd route add`` stay: a reload
  withdraws only what a configuration put there.
- **functions** (``[[function]]``): when the list changed, the node's
  function host is replaced (`Node.set_functions`): calls in flight on it
  end, every prefix is served again at once by the new host.  A module
  already imported is not imported again: new code needs a restart.
- **groups** (``[[group]]``): new groups become known; a group whose
  definition changed, or that was removed, stays as it was until a restart
  (other nodes hold the same version 1 of it).

Faces that stay are never touched, so their ids, counters and routes
survive.  Every other key (listen addresses, socket, name, identity, table
sizes, ...) takes effect at the next start; a reload that finds one changed
says so in the log.

Invariant: a configuration that does not load, or names a function that
cannot be imported, changes nothing: the whole new configuration is read
and checked (`plan`) before anything is applied, the error is logged with
the file and the key, and ``config_reload_errors`` counts it.  Faces that
cannot be opened while applying (an unresolvable host) are logged and
skipped as at start-up; the rest is applied.  Whatever else goes wrong
while applying (a bug) is logged with its traceback and counted too: the
node runs on with what was applied.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from icnd.compute.registry import HostedFunction, hosted, load_callable
from icnd.core.tables.fib import TableFull
from icnd.core.tables.rib import ORIGIN_STATIC
from icnd.daemon.config import ConfigError, GroupConfig, NeighborConfig, NodeConfig
from icnd.faces import PermanentFace, parse_face_uri
from icnd.name import Name

if TYPE_CHECKING:
    from icnd.daemon.node import Node

log = logging.getLogger("icnd.reload")

RELOADED = ("neighbors", "faces", "routes", "functions", "groups")  # NodeConfig fields a reload applies
LOGGING = ("log_level", "log_json")  # not the node's: `icnd run` sets logging up once


def canonical(uri: str) -> str:
    """The face table's spelling of a face URI (``find`` compares these)."""
    return str(parse_face_uri(uri))


@dataclass
class Plan:
    """What a reload will do, worked out before anything is done."""

    config: NodeConfig
    functions: list[HostedFunction] | None = None  # None: unchanged
    new_groups: list[GroupConfig] = field(default_factory=list)
    kept_groups_changed: list[str] = field(default_factory=list)
    restart_needed: list[str] = field(default_factory=list)  # keys that changed but are not reloaded


def plan(node: Node, new: NodeConfig) -> Plan:
    """Check `new` against the running node; `ConfigError` if it cannot be applied."""
    old = node.config
    result = Plan(new)
    if _function_specs(old) != _function_specs(new):
        try:
            result.functions = [hosted(f.prefix, load_callable(f.target), f.allow, target=f.target)
                                for f in new.functions]
        except ValueError as exc:
            raise ConfigError(f"function: {exc}") from None
    old_groups = {g.name: g for g in old.groups}
    for group in new.groups:
        before = old_groups.get(group.name)
        if before is None:
            result.new_groups.append(group)
        elif before != group:
            result.kept_groups_changed.append(group.name)
    result.kept_groups_changed += sorted(set(old_groups) - {g.name for g in new.groups})
    skip = {*RELOADED, *LOGGING}
    result.restart_needed = [f.name for f in fields(NodeConfig)
                             if f.name not in skip and getattr(old, f.name) != getattr(new, f.name)]
    return result


def _function_specs(cfg: NodeConfig) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(f.target, f.prefix, tuple(f.allow)) for f in cfg.functions]


def _wanted_faces(cfg: NodeConfig) -> set[str]:
    """The canonical URIs of every face a configuration names (all valid: the config was validated)."""
    uris = [n.uri for n in cfg.neighbors] + list(cfg.faces) + [r.face for r in cfg.routes]
    out = set()
    for uri in uris:
        try:
            out.add(canonical(uri))
        except ValueError:
            continue  # reported when the face is opened, as at start-up
    return out


async def apply(node: Node, p: Plan) -> None:
    """Make the running node match `p` (see the module docstring)."""
    old, new = node.config, p.config
    await _apply_neighbors(node, new.neighbors)
    await _apply_routes(node, old, new)
    for uri in new.faces:
        try:
            await node.faces.open(uri, permanent=True)
        except (OSError, ValueError) as exc:
            log.warning("face %s: %s", uri, exc)
    wanted = _wanted_faces(new)
    for uri in sorted(_wanted_faces(old) - wanted):
        face = node.faces.find(uri)
        if isinstance(face, PermanentFace):
            log.info("reload: closing face %d %s (no longer configured)", face.id, uri)
            await face.aclose()
    for group in p.new_groups:
        try:
            node.groups.add_config(group.descriptor())
        except ValueError as exc:
            log.warning("reload: group %s: %s", group.name, exc)
    if p.kept_groups_changed:
        log.warning("reload: group(s) %s changed or removed in the configuration: they stay as they are "
                    "until a restart", ", ".join(p.kept_groups_changed))
    if p.functions is not None:
        await node.set_functions(p.functions)
    for attr in RELOADED:
        setattr(node.config, attr, getattr(new, attr))
    if p.restart_needed:
        log.warning("reload: %s changed; that takes effect at the next start", ", ".join(p.restart_needed))


async def _apply_neighbors(node: Node, neighbors: list[NeighborConfig]) -> None:
    wanted = {canonical(n.uri): n for n in neighbors}
    kept: list[tuple[PermanentFace, NeighborConfig]] = []
    for face, before in node.neighbor_faces:
        now = wanted.pop(canonical(before.uri), None)
        if now is None:
            log.info("reload: neighbour %s removed", before.uri)
            if node.routing is not None:
                node.routing.face_down(face.id)
            continue  # its face is closed with the others no longer named
        if now.cost != before.cost and node.routing is not None:
            log.info("reload: neighbour %s: cost %d -> %d", now.uri, before.cost, now.cost)
            node.routing.face_down(face.id)
            node.routing.add_neighbor(face, now.cost)
        kept.append((face, now))
    for neighbor in wanted.values():
        try:
            face = await node.faces.open(neighbor.uri, permanent=True)
        except (OSError, ValueError) as exc:
            log.warning("neighbor %s: %s", neighbor.uri, exc)
            continue
        log.info("reload: neighbour %s added (face %d)", neighbor.uri, face.id)
        if node.routing is not None:
            node.routing.add_neighbor(face, neighbor.cost)
        kept.append((face, neighbor))
    node.neighbor_faces[:] = kept


async def _apply_routes(node: Node, old: NodeConfig, new: NodeConfig) -> None:
    named = {(Name(r.prefix), canonical(r.face)) for r in new.routes}
    for route in old.routes:
        key = (Name(route.prefix), canonical(route.face))
        face = node.faces.find(key[1])
        if key not in named and face is not None and node.fw.rib.remove(key[0], face.id, ORIGIN_STATIC):
            log.info("reload: route %s via %s removed", route.prefix, route.face)
    for route in new.routes:
        try:
            face = await node.faces.open(route.face, permanent=True)
            node.fw.add_route(Name(route.prefix), face.id, route.cost, ORIGIN_STATIC)
        except (OSError, ValueError, TableFull) as exc:
            log.warning("route %s via %s: %s", route.prefix, route.face, exc)


async def reload(node: Node, load: Callable[[], NodeConfig]) -> bool:
    """Read the configuration with `load` and apply it; whether it was applied.

    A configuration that cannot be applied changes nothing; the error is
    logged and counted (``config_reload_errors``)."""
    try:
        p = plan(node, load())
    except ConfigError as exc:
        node.config_reload_errors += 1
        log.error("reload refused, still running the previous configuration: %s", exc)
        return False
    try:
        await apply(node, p)
    except Exception:  # a bug, not the file: the node must outlive it (what was applied stays)
        node.config_reload_errors += 1
        log.exception("reload failed while applying the configuration; the node runs on")
        return False
    node.config_reloads += 1
    log.info("configuration reloaded")
    return True
