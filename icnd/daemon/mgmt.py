"""Management: nfdc-like commands over the local socket.

A command is an Interest ``/localhost/icnd/<module>/<verb>/params-sha256=…``
whose application parameters are a msgpack map of arguments.  The answer is
a Data with the same name whose content is a msgpack map:
``{"ok": true, "result": …}`` or ``{"ok": false, "code": N, "error": "…"}``
(codes follow HTTP: 400 bad arguments, 404 no such thing, 409 conflict,
500 internal).  The node intercepts these Interests before the forwarder and
only from local faces; from any other face the forwarder refuses /localhost
with Nack *prohibited*.  The full command list is in docs/management.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import msgpack
import trio

from icnd.codec import decode, encode
from icnd.core.tables.fib import TableFull
from icnd.errors import DecodeError
from icnd.faces import Face
from icnd.faces.link import LinkParams
from icnd.name import T_RNP, Name
from icnd.objects.manifest import Manifest
from icnd.objects.store import ObjectStoreError
from icnd.packet import Data, Interest
from icnd.reduction.contrib import ReductionError
from icnd.reduction.group import GroupDescriptor
from icnd.security import DigestKey

if TYPE_CHECKING:
    from icnd.daemon.node import Node

log = logging.getLogger("icnd.mgmt")

MAX_LIST = 10_000


class CommandError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


Handler = Callable[[Face, dict[str, Any]], Awaitable[Any]]


def _arg(args: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    if key not in args:
        if default is ...:
            raise CommandError(400, f"missing argument {key!r}")
        return default
    value = args[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise CommandError(400, f"argument {key!r} has the wrong type")
    return value


def _name(text: str, what: str = "prefix") -> Name:
    try:
        return Name(text)
    except ValueError as exc:
        raise CommandError(400, f"bad {what} {text!r}: {exc}") from None


class Management:
    def __init__(self, node: "Node") -> None:
        self.node = node
        self._digest = DigestKey()
        self.handlers: dict[tuple[str, str], Handler] = {
            ("status", "get"): self.status,
            ("face", "list"): self.face_list,
            ("face", "create"): self.face_create,
            ("face", "destroy"): self.face_destroy,
            ("face", "link"): self.face_link,
            ("route", "list"): self.route_list,
            ("route", "add"): self.route_add,
            ("route", "remove"): self.route_remove,
            ("cs", "list"): self.cs_list,
            ("cs", "erase"): self.cs_erase,
            ("strategy", "list"): self.strategy_list,
            ("strategy", "set"): self.strategy_set,
            ("strategy", "unset"): self.strategy_unset,
            ("repo", "publish"): self.repo_publish,
            ("repo", "unpublish"): self.repo_unpublish,
            ("object", "begin"): self.object_begin,
            ("object", "append"): self.object_append,
            ("object", "commit"): self.object_commit,
            ("object", "abort"): self.object_abort,
            ("object", "list"): self.object_list,
            ("object", "remove"): self.object_remove,
            ("group", "create"): self.group_create,
            ("group", "show"): self.group_show,
            ("group", "list"): self.group_list,
            ("reduce", "contribute"): self.reduce_contribute,
        }

    async def handle(self, face: Face, interest: Interest) -> None:
        comps = interest.name.comps
        verb = tuple(c[1:].decode("utf-8", "replace") for c in comps[2:4])
        try:
            handler = self.handlers.get(verb)  # type: ignore[arg-type]
            if handler is None:
                raise CommandError(404, f"unknown command {'/'.join(verb)!r}")
            args: Any = {}
            if interest.app_params:
                try:
                    args = msgpack.unpackb(interest.app_params, raw=False, strict_map_key=False)
                except Exception:
                    raise CommandError(400, "command parameters are not a msgpack map") from None
            if not isinstance(args, dict):
                raise CommandError(400, "command parameters are not a msgpack map")
            reply: dict[str, Any] = {"ok": True, "result": await handler(face, args)}
        except CommandError as exc:
            reply = {"ok": False, "code": exc.code, "error": str(exc)}
        except Exception as exc:  # a bug must not kill the node; the caller learns of it
            log.exception("management command %s failed", "/".join(verb))
            reply = {"ok": False, "code": 500, "error": f"internal error: {exc.__class__.__name__}: {exc}"}
        data = self._digest.sign(Data(interest.name, msgpack.packb(reply, use_bin_type=True)))
        face.send(encode(data))

    # --- commands ---------------------------------------------------------------
    async def status(self, face: Face, args: dict) -> Any:
        return self.node.status()

    def _face_info(self, face: Face) -> dict:
        info = {
            "id": face.id,
            "remote_uri": face.remote_uri,
            "local_uri": face.local_uri,
            "local": face.local,
            "persistent": face.persistent,
            "wire_format": getattr(face, "wire_format", "icnd"),
            "counters": face.counters.as_dict(),
        }
        link = self.node.links.get(face.id)
        if link is not None:
            sender = link[0]
            params = sender.model.params
            info["link"] = {
                "delay_ms": params.delay_ms, "loss": params.loss, "bandwidth_mbps": params.bandwidth_mbps,
                "queue_bytes": params.queue_bytes, "up": params.up,
                "stats": {**sender.model.stats(), "dropped_in_flight": sender.dropped_in_flight},
            }
        return info

    async def face_list(self, face: Face, args: dict) -> Any:
        return [self._face_info(f) for f in sorted(self.node.faces.values(), key=lambda f: f.id)]

    async def face_create(self, face: Face, args: dict) -> Any:
        uri = _arg(args, "uri", str)
        try:
            with trio.fail_after(10):
                created = await self.node.face_for_uri(uri)
        except ValueError as exc:
            raise CommandError(400, str(exc)) from None
        except (OSError, trio.TooSlowError) as exc:
            raise CommandError(409, f"cannot create face {uri}: {exc}") from None
        return self._face_info(created)

    async def face_destroy(self, face: Face, args: dict) -> Any:
        face_id = _arg(args, "id", int)
        if not await self.node.destroy_face(face_id):
            raise CommandError(404, f"no face {face_id}")
        return {"id": face_id}

    async def face_link(self, face: Face, args: dict) -> Any:
        """Emulated link parameters on a face's outgoing traffic (see faces/link.py)."""
        target = await self._resolve_face(face, _arg(args, "face", (int, str)))
        current = self.node.links.get(target.id)
        base = current[0].model.params if current is not None else LinkParams()
        try:
            params = LinkParams(
                delay_ms=_arg(args, "delay_ms", (int, float), base.delay_ms),
                loss=_arg(args, "loss", (int, float), base.loss),
                bandwidth_mbps=_arg(args, "bandwidth_mbps", (int, float), base.bandwidth_mbps),
                queue_bytes=_arg(args, "queue_bytes", int, base.queue_bytes),
                up=_arg(args, "up", bool, base.up),
            )
        except (TypeError, ValueError) as exc:
            raise CommandError(400, str(exc)) from None
        self.node.set_link(target.id, params, _arg(args, "seed", int, None))
        return self._face_info(target)

    async def _resolve_face(self, requester: Face, spec: Any) -> Face:
        if spec == "self":
            return requester
        if isinstance(spec, int) and not isinstance(spec, bool):
            found = self.node.faces.get(spec)
            if found is None:
                raise CommandError(404, f"no face {spec}")
            return found
        if isinstance(spec, str):
            if spec.isdigit():
                return await self._resolve_face(requester, int(spec))
            try:
                with trio.fail_after(10):
                    return await self.node.face_for_uri(spec)
            except ValueError as exc:
                raise CommandError(400, str(exc)) from None
            except (OSError, trio.TooSlowError) as exc:
                raise CommandError(409, f"cannot create face {spec}: {exc}") from None
        raise CommandError(400, "face must be an id, a URI or 'self'")

    async def route_list(self, face: Face, args: dict) -> Any:
        faces = self.node.faces
        out = []
        for entry in sorted(self.node.fw.fib, key=lambda e: e.prefix):
            out.append({
                "prefix": entry.prefix.to_uri(),
                "nexthops": [
                    {"face": f, "cost": c, "uri": faces[f].remote_uri if f in faces else "internal://"}
                    for f, c in entry.nexthops
                ],
            })
        return out

    async def route_add(self, face: Face, args: dict) -> Any:
        prefix = _name(_arg(args, "prefix", str))
        if any(c[0] == T_RNP for c in prefix.comps):
            raise CommandError(400, f"{prefix}: a route may not contain an rnp= component")
        cost = _arg(args, "cost", int, 0)
        if cost < 0:
            raise CommandError(400, "cost must be >= 0")
        target = await self._resolve_face(face, _arg(args, "face", (int, str)))
        try:
            self.node.fw.add_route(prefix, target.id, cost)
        except TableFull as exc:
            raise CommandError(409, str(exc)) from None
        return {"prefix": prefix.to_uri(), "face": target.id, "cost": cost}

    async def route_remove(self, face: Face, args: dict) -> Any:
        prefix = _name(_arg(args, "prefix", str))
        spec = _arg(args, "face", (int, str))
        if spec == "self":
            target_id = face.id
        elif isinstance(spec, int) or spec.isdigit():
            target_id = int(spec)
        else:
            found = self.node.find_face(spec)
            if found is None:
                raise CommandError(404, f"no face {spec}")
            target_id = found.id
        if not self.node.fw.fib.remove(prefix, target_id):
            raise CommandError(404, f"no route {prefix} via face {target_id}")
        return {"prefix": prefix.to_uri(), "face": target_id}

    async def cs_list(self, face: Face, args: dict) -> Any:
        prefix = _name(_arg(args, "prefix", str, "/"))
        limit = min(_arg(args, "limit", int, 1000), MAX_LIST)
        now = trio.current_time()
        out = []
        for entry in self.node.fw.cs.entries(prefix.comps):
            if len(out) >= limit:
                break
            out.append({
                "name": entry.data.name.to_uri(),
                "size": entry.size,
                "fresh": entry.fresh_until > now,
                "content_type": int(entry.data.content_type),
            })
        return out

    async def cs_erase(self, face: Face, args: dict) -> Any:
        prefix = _name(_arg(args, "prefix", str))
        return {"erased": self.node.fw.cs.erase(prefix.comps)}

    async def strategy_list(self, face: Face, args: dict) -> Any:
        return [{"prefix": p.to_uri(), "strategy": s} for p, s in self.node.fw.strategies.items()]

    async def strategy_set(self, face: Face, args: dict) -> Any:
        prefix = _name(_arg(args, "prefix", str))
        strategy = _arg(args, "strategy", str)
        try:
            self.node.fw.strategies.set(prefix, strategy)
        except ValueError as exc:
            raise CommandError(400, str(exc)) from None
        except TableFull as exc:
            raise CommandError(409, str(exc)) from None
        return {"prefix": prefix.to_uri(), "strategy": strategy}

    async def strategy_unset(self, face: Face, args: dict) -> Any:
        prefix = _name(_arg(args, "prefix", str))
        if not self.node.fw.strategies.unset(prefix):
            raise CommandError(404, f"no strategy set at {prefix}")
        return {"prefix": prefix.to_uri()}

    async def repo_publish(self, face: Face, args: dict) -> Any:
        packets = _arg(args, "packets", list)
        sign = _arg(args, "sign", bool, False)
        node = self.node
        names = []
        for data in _data_packets(packets):
            if any(c[0] == T_RNP for c in data.name.comps):
                raise CommandError(400, f"{data.name}: a published name may not contain an rnp= component")
            if sign:
                assert node.key is not None
                data = node.key.sign(Data(data.name, data.content, data.content_type, data.freshness_ms,
                                          data.final_block_id))
            try:
                node.publish(data)
            except ValueError as exc:
                raise CommandError(409, str(exc)) from None
            except TableFull as exc:
                raise CommandError(409, str(exc)) from None
            names.append(data.name.to_uri())
        return {"published": len(names), "names": names}

    async def repo_unpublish(self, face: Face, args: dict) -> Any:
        name = _name(_arg(args, "name", str), "name")
        if not self.node.unpublish(name):
            raise CommandError(404, f"{name} is not published here")
        return {"name": name.to_uri()}

    # --- large objects (see objstore.py) ---------------------------------------------------
    def _objects(self):  # type: ignore[no-untyped-def]
        assert self.node.objects is not None
        return self.node.objects

    async def object_begin(self, face: Face, args: dict) -> Any:
        name = _name(_arg(args, "name", str), "name")
        if any(c[0] == T_RNP for c in name.comps):
            raise CommandError(400, f"{name}: an object name may not contain an rnp= component")
        try:
            upload = self._objects().begin(
                name, _arg(args, "size", int), _arg(args, "segment_size", int),
                _arg(args, "freshness_ms", int, 3_600_000),
            )
        except ObjectStoreError as exc:
            raise CommandError(409, str(exc)) from None
        return {"upload": upload}

    async def object_append(self, face: Face, args: dict) -> Any:
        try:
            received = self._objects().append(_arg(args, "upload", str), _arg(args, "offset", int),
                                              _arg(args, "data", bytes))
        except ObjectStoreError as exc:
            raise CommandError(409, str(exc)) from None
        return {"received": received}

    async def object_commit(self, face: Face, args: dict) -> Any:
        node = self.node
        assert node.key is not None
        try:
            manifest = self._objects().commit(_arg(args, "upload", str), node.key)
        except ObjectStoreError as exc:
            raise CommandError(409, str(exc)) from None
        try:
            node.fw.add_route(manifest.name, node.INTERNAL_FACE, 0)
        except TableFull as exc:
            raise CommandError(409, str(exc)) from None
        return self._manifest_info(manifest)

    @staticmethod
    def _manifest_info(manifest: Manifest) -> dict:
        return {
            "name": manifest.name.to_uri(), "version": manifest.version, "size": manifest.size,
            "segment_size": manifest.segment_size, "segments": manifest.segments,
            "manifest": manifest.manifest_name().to_uri(),
        }

    async def object_abort(self, face: Face, args: dict) -> Any:
        upload = _arg(args, "upload", str)
        try:
            self._objects().abort(upload)
        except ObjectStoreError as exc:
            raise CommandError(404, str(exc)) from None
        return {"upload": upload}

    async def object_list(self, face: Face, args: dict) -> Any:
        return [self._manifest_info(m) for m in self._objects().objects()]

    async def object_remove(self, face: Face, args: dict) -> Any:
        name = _name(_arg(args, "name", str), "name")
        removed = self._objects().remove(name)
        if not removed:
            raise CommandError(404, f"{name} is not a published object here")
        self.node.fw.fib.remove(name, self.node.INTERNAL_FACE)
        return {"name": name.to_uri(), "versions": [m.version for m in removed]}

    # --- collective reduction (see icnd.reduction) -------------------------------------------
    async def group_create(self, face: Face, args: dict) -> Any:
        """A new version of a group (the same contents again: the current version)."""
        node = self.node
        name = _arg(args, "name", str)
        members = _arg(args, "members", list)
        try:
            desc = GroupDescriptor.create(
                name, members, version=node.groups.next_version(name), rendezvous=_arg(args, "rendezvous", list, None),
                ops=_arg(args, "ops", list, None), seg_bytes=_arg(args, "segment_bytes", int, None),
                deadline_ms=_arg(args, "deadline_ms", int, None),
            )
        except ValueError as exc:
            raise CommandError(400, str(exc)) from None
        assert node.key is not None
        latest = node.groups.latest(name)
        if latest is not None and latest[0] == _with_version(desc, latest[0].version):
            desc, data = latest  # the same contents: the current version
        else:
            try:
                data = node.create_group(desc)
            except ReductionError as exc:
                raise CommandError(exc.code, str(exc)) from None
        info = self._group_info(desc, data)
        if data.key_locator == node.key.name:  # signed here: the client announces it (again)
            info["key"] = node.key.public_bytes()
        return info

    async def group_show(self, face: Face, args: dict) -> Any:
        try:
            desc, data = self.node.groups.get(_arg(args, "name", str), _arg(args, "version", int, None))
        except ReductionError as exc:
            raise CommandError(exc.code, str(exc)) from None
        return self._group_info(desc, data)

    async def group_list(self, face: Face, args: dict) -> Any:
        return [desc.info() for desc in self.node.groups.groups()]

    @staticmethod
    def _group_info(desc: GroupDescriptor, data: Data) -> dict:
        return {**desc.info(), "descriptor": encode(data)}

    async def reduce_contribute(self, face: Face, args: dict) -> Any:
        """Contribution segments (encoded Data named /node/<this>/member/<m>/contrib/...)."""
        added = 0
        for data in _data_packets(_arg(args, "packets", list)):
            try:
                added += self.node.contribute(data)
            except ReductionError as exc:
                raise CommandError(exc.code, str(exc)) from None
        return {"added": added}


def _data_packets(packets: list) -> list[Data]:
    """The encoded Data packets of a command's ``packets`` argument, decoded."""
    out = []
    for wire in packets:
        if not isinstance(wire, bytes):
            raise CommandError(400, "packets must be encoded Data (bytes)")
        try:
            data = decode(wire)
        except DecodeError as exc:
            raise CommandError(400, f"malformed Data: {exc}") from None
        if not isinstance(data, Data):
            raise CommandError(400, "packets must be Data, not Interests or Nacks")
        out.append(data)
    return out


def _with_version(desc: GroupDescriptor, version: int) -> GroupDescriptor:
    from dataclasses import replace

    return replace(desc, version=version)
