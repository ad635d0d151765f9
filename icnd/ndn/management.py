"""The subset of NFD management that NDN applications need from icnd.

NDN applications speak to their forwarder under ``/localhost/nfd``.  icnd
answers, for Interests arriving on NDN faces (`icnd.ndn.face`):

- ``rib/register`` and ``rib/unregister`` commands, in both forms python-ndn
  and ndn-cxx send: the v0.3 signed Interest
  (``/localhost/nfd/rib/register/<ControlParameters>/params-sha256=…``) and
  the older 4-component command Interest (timestamp, nonce, SignatureInfo,
  SignatureValue as extra components); parsing is
  `icnd.ndn.nfdmgmt.parse_command`.  A registration adds a RIB route for the
  prefix toward the requesting face (or the FaceId given) with the given
  cost; unregister removes it; a face's routes go when the face closes
  (`Forwarder.on_face_down`).  NFD's numeric origins map onto icnd's three
  (`rib_origin`): 255 (static) -> ``static``, 128 (NLSR) -> ``routing``,
  any other (0 app, 64 autoreg, 65 client, ...) -> ``app``.  An
  ExpirationPeriod is honoured: the route is removed when it runs out (the
  RIB's expiry, timed by the forwarder's timers) unless registered again.
  Flags: icnd's FIB has no child inheritance (the longest match is the only
  match), so every route behaves as CAPTURE and CHILD_INHERIT has no effect;
  both are echoed back as given.  Signatures are not checked: as in NFD's
  default configuration, any command arriving on a *local* face is accepted.
- the status datasets ``status/general`` and ``faces/list``, versioned and
  segmented as NFD publishes them (``/…/v=<ms>/seg=<n>`` with FinalBlockId),
  enough for ``nfd-status``-style monitoring.

Every command is answered with a Data named exactly like the Interest whose
content is a ControlResponse: status code, text and *always* a
ControlParameters body (python-ndn fails on a response without one), on
errors too: 400 malformed, 403 not allowed (``/localhop`` remote
registration), 404 unknown command, 410 no such face, 500 table full.

The node's receive path hands `NdnManagement.receive` the Interests under
its `scopes` (``/localhop/nfd``, and ``/localhost/nfd`` from local faces)
that arrive on NDN faces, before the forwarder.  The answers are plain
`Data` in icnd's model; the face's `NdnLinkService` echoes the command's
PIT token and signs them with DigestSha256 when they leave.  The manager is
handed the face table, the RIB and the forwarder's counters, not the node.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from icnd.version import __version__
from icnd.core.tables.fib import TableFull
from icnd.core.tables.rib import ORIGIN_APP, ORIGIN_ROUTING, ORIGIN_STATIC, Rib
from icnd.errors import CommandError
from icnd.faces import Face, LinkService
from icnd.name import Name, generic, segment, version
from icnd.ndn.face import NdnLinkService
from icnd.ndn.nfdmgmt import ORIGIN_APP as ROUTE_ORIGIN_APP
from icnd.ndn.nfdmgmt import ORIGIN_NLSR as ROUTE_ORIGIN_NLSR
from icnd.ndn.nfdmgmt import ORIGIN_STATIC as ROUTE_ORIGIN_STATIC
from icnd.ndn.nfdmgmt import ROUTE_FLAG_CHILD_INHERIT, ControlParameters, ControlResponse, parse_command
from icnd.ndn.tlv import (
    T_FACE_ID,
    T_FLAGS,
    T_URI,
    T_LOCAL_URI,
    T_FACE_PERSISTENCY,
    T_FACE_STATUS,
    T_FACE_SCOPE,
    T_LINK_TYPE,
    T_N_IN_INTERESTS,
    T_N_IN_DATA,
    T_N_OUT_INTERESTS,
    T_N_OUT_DATA,
    T_N_IN_BYTES,
    T_N_OUT_BYTES,
    T_N_IN_NACKS,
    T_N_OUT_NACKS,
    T_NFD_VERSION,
    T_START_TIMESTAMP,
    T_CURRENT_TIMESTAMP,
    T_N_NAME_TREE_ENTRIES,
    T_N_FIB_ENTRIES,
    T_N_PIT_ENTRIES,
    T_N_MEASUREMENTS_ENTRIES,
    T_N_CS_ENTRIES,
    T_N_SATISFIED_INTERESTS,
    T_N_UNSATISFIED_INTERESTS,
    encode_tlv,
    nni_tlv,
)
from icnd.packet import Data, Interest

log = logging.getLogger("icnd.ndn.mgmt")

LOCALHOST_NFD = (generic("localhost"), generic("nfd"))
LOCALHOP_NFD = (generic("localhop"), generic("nfd"))
DATASET_SEGMENT = 7000  # bytes of dataset per segment, well inside 8800-byte packets
DATASET_KEEP = 8  # versions of each dataset kept for fetching its later segments
DATASET_FRESHNESS_MS = 1000
COMMAND_FRESHNESS_MS = 1000


class Faces(Protocol):
    """The face table, as far as NFD management needs it (`icnd.daemon.faces.FaceTable`)."""

    def get(self, face_id: int) -> Face | None: ...

    def link(self, face_id: int) -> LinkService | None: ...

    def __iter__(self) -> Iterator[Face]: ...


def is_nfd_name(comps: tuple[bytes, ...]) -> bool:
    """``/localhost/nfd/...`` or ``/localhop/nfd/...``: answered by `NdnManagement`."""
    return len(comps) > 2 and (comps[:2] == LOCALHOST_NFD or comps[:2] == LOCALHOP_NFD)


def rib_origin(origin: int) -> str:
    """icnd's route origin for an NFD route origin number."""
    if origin == ROUTE_ORIGIN_STATIC:
        return ORIGIN_STATIC
    if origin == ROUTE_ORIGIN_NLSR:
        return ORIGIN_ROUTING
    return ORIGIN_APP


class NdnManagement:
    """Answers ``/localhost/nfd`` Interests from NDN faces; synchronous (no I/O).

    ``counters()`` and ``table_sizes()`` are the forwarder's (as dicts),
    ``started_at()`` the node's start time (Unix seconds), ``clock()`` the
    forwarder's clock (route expiry times are on it)."""

    def __init__(self, faces: Faces, rib: Rib, *, counters: Callable[[], dict[str, int]],
                 table_sizes: Callable[[], dict[str, int]], started_at: Callable[[], float],
                 clock: Callable[[], float]) -> None:
        self.faces = faces
        self.rib = rib
        self._clock = clock
        self._counters = counters
        self._table_sizes = table_sizes
        self._started_at = started_at
        self._datasets: dict[str, dict[int, list[bytes]]] = {}
        self.commands = 0
        self.datasets: dict[tuple[str, str], Callable[[], bytes]] = {
            ("status", "general"): self._status_general,
            ("faces", "list"): self._faces_list,
        }

    def scopes(self, face: Face) -> tuple[tuple[bytes, ...], ...]:
        """The name prefixes (first two components) answered on `face`: from a
        non-local face, ``/localhost`` is the forwarder's to refuse."""
        return (LOCALHOST_NFD, LOCALHOP_NFD) if face.local else (LOCALHOP_NFD,)

    def receive(self, face: Face, link: LinkService, interest: Interest) -> bool:
        """Answer a management Interest on its NDN face; False: not one (forward it)."""
        if len(interest.name.comps) <= 2 or not isinstance(link, NdnLinkService):
            return False
        try:
            data = self.handle(face, interest)
        except Exception:  # a bug must not kill the node
            log.exception("NDN management command %s failed", interest.name)
            data = None
        link.answer(interest, data)
        return True

    def handle(self, face: Face, interest: Interest) -> Data | None:
        """The answer to a management Interest (None: no answer)."""
        comps = interest.name.comps
        try:
            module = comps[2][1:].decode()
            verb = comps[3][1:].decode() if len(comps) > 3 else ""
        except UnicodeDecodeError:
            module = verb = ""
        dataset = self.datasets.get((module, verb)) if comps[:2] == LOCALHOST_NFD else None
        if dataset is not None:
            return self._dataset(f"{module}/{verb}", interest, dataset)
        self.commands += 1
        return self._command(face, interest)

    # --- commands -------------------------------------------------------------------
    def _command(self, face: Face, interest: Interest) -> Data:
        params = None
        try:
            if interest.name.comps[:2] == LOCALHOP_NFD:
                raise CommandError(403, "remote prefix registration (/localhop) is not enabled")
            try:
                module, verb, params = parse_command(interest)
            except ValueError as exc:
                raise CommandError(400, f"malformed command: {exc}") from None
            if (module, verb) == ("rib", "register"):
                params = self._register(face, params)
            elif (module, verb) == ("rib", "unregister"):
                params = self._unregister(face, params)
            else:
                raise CommandError(404, f"unsupported command {module}/{verb}")
            response = ControlResponse(200, "OK", params)
        except CommandError as exc:
            log.debug("face %d: %s: %d %s", face.id, interest.name, exc.status, exc.message)
            response = ControlResponse(exc.status, exc.message, params if params is not None else ControlParameters())
        return Data(interest.name, response.encode(), freshness_ms=COMMAND_FRESHNESS_MS)

    def _target_face(self, face: Face, params: ControlParameters) -> int:
        face_id = params.face_id or face.id  # 0 or absent: the requesting face
        if face_id != face.id and self.faces.get(face_id) is None:
            raise CommandError(410, f"no face {face_id}")
        return face_id

    def _register(self, face: Face, params: ControlParameters) -> ControlParameters:
        if params.name is None:
            raise CommandError(400, "rib/register needs a Name")
        face_id = self._target_face(face, params)
        cost = params.cost if params.cost is not None else 0
        origin = params.origin if params.origin is not None else ROUTE_ORIGIN_APP
        flags = params.flags if params.flags is not None else ROUTE_FLAG_CHILD_INHERIT
        period = params.expiration_period  # ms; absent: until unregistered or the face closes
        expires = self._clock() + period / 1000 if period is not None else None
        name = params.name
        try:
            self.rib.add(name, face_id, cost, rib_origin(origin), expires=expires)
        except TableFull as exc:
            raise CommandError(500, str(exc)) from None
        except ValueError as exc:
            raise CommandError(400, f"cannot route {name}: {exc}") from None
        log.info("face %d registered %s (route via face %d, cost %d, origin %d%s)", face.id, name, face_id,
                 cost, origin, "" if period is None else f", for {period} ms")
        return ControlParameters(name=params.name, face_id=face_id, origin=origin, cost=cost, flags=flags,
                                 expiration_period=period)

    def _unregister(self, face: Face, params: ControlParameters) -> ControlParameters:
        if params.name is None:
            raise CommandError(400, "rib/unregister needs a Name")
        face_id = self._target_face(face, params)
        origin = params.origin if params.origin is not None else ROUTE_ORIGIN_APP
        name = params.name
        if self.rib.remove(name, face_id, rib_origin(origin)):  # like NFD: unregistering nothing still succeeds
            log.info("face %d unregistered %s (face %d)", face.id, name, face_id)
        return ControlParameters(name=params.name, face_id=face_id, origin=origin)

    # --- datasets -------------------------------------------------------------------
    def _dataset(self, key: str, interest: Interest, build: Callable[[], bytes]) -> Data | None:
        comps = interest.name.comps
        base = comps[:4]
        rest = comps[4:]
        versions = self._datasets.setdefault(key, {})
        if not rest:  # a new version
            ver = int(time.time() * 1000)
            while ver in versions:
                ver += 1
            content = build()
            versions[ver] = [content[i : i + DATASET_SEGMENT] for i in range(0, len(content), DATASET_SEGMENT)] or [b""]
            while len(versions) > DATASET_KEEP:
                del versions[next(iter(versions))]
            seg = 0
        else:
            try:
                if rest[0][0] != version(0)[0]:
                    return None
                ver = int.from_bytes(rest[0][1:], "big")
                seg = int.from_bytes(rest[1][1:], "big") if len(rest) > 1 and rest[1][0] == segment(0)[0] else 0
            except IndexError:
                return None
        segments = versions.get(ver)
        if segments is None or seg >= len(segments):
            return None
        name = Name.from_wire(base + (version(ver), segment(seg)))
        return Data(name, segments[seg], freshness_ms=DATASET_FRESHNESS_MS,
                    final_block_id=segment(len(segments) - 1))

    def _status_general(self) -> bytes:
        c = self._counters()
        tables = self._table_sizes()
        now_ms = int(time.time() * 1000)
        return b"".join((
            encode_tlv(T_NFD_VERSION, f"icnd {__version__}".encode()),
            nni_tlv(T_START_TIMESTAMP, int(self._started_at() * 1000)),
            nni_tlv(T_CURRENT_TIMESTAMP, now_ms),
            nni_tlv(T_N_NAME_TREE_ENTRIES, tables["fib_entries"] + tables["pit_entries"]),
            nni_tlv(T_N_FIB_ENTRIES, tables["fib_entries"]),
            nni_tlv(T_N_PIT_ENTRIES, tables["pit_entries"]),
            nni_tlv(T_N_MEASUREMENTS_ENTRIES, 0),
            nni_tlv(T_N_CS_ENTRIES, tables["cs_entries"]),
            nni_tlv(T_N_IN_INTERESTS, c["interests_in"]),
            nni_tlv(T_N_IN_DATA, c["data_in"]),
            nni_tlv(T_N_IN_NACKS, c["nacks_in"]),
            nni_tlv(T_N_OUT_INTERESTS, c["interests_out"]),
            nni_tlv(T_N_OUT_DATA, c["data_out"]),
            nni_tlv(T_N_OUT_NACKS, c["nacks_out"]),
            nni_tlv(T_N_SATISFIED_INTERESTS, c["pit_satisfied"]),
            nni_tlv(T_N_UNSATISFIED_INTERESTS, c["pit_expired"]),
        ))

    def _faces_list(self) -> bytes:
        out = []
        for face in self.faces:
            link = self.faces.link(face.id)
            fc = face.counters
            kinds = link.counts if isinstance(link, NdnLinkService) else (0, 0, 0, 0, 0, 0)
            uri = face.remote_uri if "://" in face.remote_uri else f"internal://{face.remote_uri}"
            body = b"".join((
                nni_tlv(T_FACE_ID, face.id),
                encode_tlv(T_URI, uri.encode()),
                encode_tlv(T_LOCAL_URI, face.local_uri.encode()),
                nni_tlv(T_FACE_SCOPE, 1 if face.local else 0),
                nni_tlv(T_FACE_PERSISTENCY, 0 if face.persistent else 1),  # persistent / on-demand
                nni_tlv(T_LINK_TYPE, 0),  # point-to-point
                nni_tlv(T_N_IN_INTERESTS, kinds[0]),
                nni_tlv(T_N_IN_DATA, kinds[1]),
                nni_tlv(T_N_IN_NACKS, kinds[2]),
                nni_tlv(T_N_OUT_INTERESTS, kinds[3]),
                nni_tlv(T_N_OUT_DATA, kinds[4]),
                nni_tlv(T_N_OUT_NACKS, kinds[5]),
                nni_tlv(T_N_IN_BYTES, fc.in_bytes),
                nni_tlv(T_N_OUT_BYTES, fc.out_bytes),
                nni_tlv(T_FLAGS, 0),
            ))
            out.append(encode_tlv(T_FACE_STATUS, body))
        return b"".join(out)
