"""The node's producer table: who answers the Interests routed to the node itself.

The forwarder sends an Interest to the internal face (`icnd.daemon.node.INTERNAL_FACE`) when
the FIB routes its name to the node: the node's own prefix ``/node/<name>``,
every name published through it, every object it stores (each gets a route
to the internal face).  The node's send path hands such an Interest to
`ProducerTable.produce`, which answers it in this order:

1. stores (`add_store`), in the order they were added: lookups by exact
   name that may hold any name -- the repo, then the object store
   (`icnd.objects.service`), then the certificates the node holds
   (`icnd.daemon.certs`, also by key name);
2. handlers (`add`), by the longest registered prefix of the name:
   ``/node/<n>/member`` and ``/node/<n>/group/install``
   (`icnd.reduction.service`), ``/node/<n>/ping``, ``/node/<n>/KEY`` and
   ``/node/<n>/status`` (the node itself, `add_node_producers`);
3. otherwise a Nack *no-route*: "<node> has no such data".

A store returns Data or None (not here).  A handler returns Data or a Nack,
or None: it holds the Interest and answers later through `Node.deliver`
(a member's contribution not made yet).  The answer goes back to the
forwarder as a packet from the internal face, like any producer's.

Adding a node-side producer (routing, trust, ...): make a service in its
feature package with a ``register(producers: icnd.producer.Producers)``
method that calls `add` (the feature never imports the daemon), and have
the node call it in ``Node.bind``.

The node also answers, in a way, for its *keyless* local applications
(`KeylessSigning`): a client without a key of its own that hosts functions
(`Client.host`) asks its node (``signing/add``) to sign its answers, as
``publish`` has the node sign for such a client.  The node then signs, with
its own key, the DigestSha256 Data that client's face sends under the
prefixes it registered -- only answers to Interests the node sent that
face, never under a name the node produces itself -- so that callers, who
refuse digest-only answers, can verify them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from icnd.core.tables.rib import ORIGIN_APP, Rib
from icnd.daemon.mgmt.args import arg, name_arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.errors import CommandError
from icnd.faces import Face
from icnd.name import LOCALHOST, Name, generic
from icnd.packet import Data, Interest, Nack, NackReason, SigType
from icnd.producer import Comps, Producer, Store
from icnd.security import Ed25519Key
from icnd.trust.cert import Certificate


PING = generic("ping")
KEY = generic("KEY")
STATUS = generic("status")


class ProducerTable:
    """Stores, then handlers by longest prefix; see the module docstring.
    Features register with it through `icnd.producer.Producers`."""

    def __init__(self, node_name: Name) -> None:
        self.node_name = node_name
        self._stores: list[Store] = []
        self._handlers: dict[Comps, Producer] = {}
        self._longest = 0  # components of the longest registered prefix

    def add_store(self, lookup: Store) -> None:
        """Consult `lookup` for every Interest, after the stores added before it."""
        self._stores.append(lookup)

    def add(self, prefix: Comps, handler: Producer) -> None:
        """Answer Interests under `prefix` (the longest registered prefix wins)."""
        if prefix in self._handlers:
            raise ValueError(f"a producer already answers {Name.from_wire(prefix)}")
        self._handlers[prefix] = handler
        self._longest = max(self._longest, len(prefix))

    def produce(self, interest: Interest) -> Data | Nack | None:
        """The answer to an Interest routed to the node (None: held)."""
        for lookup in self._stores:
            found = lookup(interest)
            if found is not None:
                return found
        comps = interest.name.comps
        handlers = self._handlers
        for n in range(min(len(comps), self._longest), 0, -1):
            handler = handlers.get(comps[:n])
            if handler is not None:
                return handler(interest)
        return self.no_such_data(interest)

    def no_such_data(self, interest: Interest) -> Nack:
        return Nack(interest.name, interest.nonce, NackReason.NO_ROUTE, f"{self.node_name} has no such data")

    def reserved(self, prefix: Name) -> bool:
        """`prefix` holds or is held by a name the node answers itself: the
        node's own name or one of its ancestors, or a handler's prefix
        (``/node/<n>/KEY``, ``/status``, ``/routing``...) or a name under it."""
        comps = prefix.comps
        if self.node_name.comps[:len(comps)] == comps:
            return True
        return any(h[:len(comps)] == comps or comps[:len(h)] == h for h in self._handlers)


MAX_SIGNED_PREFIXES = 64  # prefixes one face may have its node sign under


class KeylessSigning:
    """The node's signature on what a keyless local application hosts (see
    the module docstring): ``signing/add`` and ``signing/remove``, and
    `sign`, which the receive path applies to every Data from a local native
    face.

    Rules: a face registers a prefix it serves (an ``app`` route of that
    face, made by `Client.serve`/`Client.host`), outside the names the node
    answers itself (`ProducerTable.reserved`) and holding no ``KEY``
    component (no key or certificate name), at most `MAX_SIGNED_PREFIXES`
    per face.  A Data from that face is signed with the node's key only if
    it carries a digest only and its name is under one of the face's
    registered prefixes that the face still serves (its ``app`` route is
    still there).  Signed or not, the forwarder then takes it only as the
    answer to an Interest the node sent to that face (other Data is
    unsolicited: dropped, never cached), so what leaves the node signed for
    an application answers what the node asked it, under its own prefixes.
    (Not the FIB's longest match: a thunk's result stored on the node gets
    a longer route of the node's own while its host's last poll answer is
    on its way.)  Registrations end with ``signing/remove`` or when the face
    goes.  Every refusal is a `CommandError` and counts in
    ``signing_refused``; every Data signed counts in ``app_data_signed``."""

    def __init__(self, key: Ed25519Key, rib: Rib, producers: ProducerTable) -> None:
        self._key = key
        self._rib = rib
        self._producers = producers
        self._by_face: dict[int, list[Name]] = {}
        self.counters = {"app_data_signed": 0, "signing_refused": 0}

    def commands(self) -> Commands:
        return {("signing", "add"): self.add, ("signing", "remove"): self.remove}

    def _refuse(self, status: int, message: str) -> CommandError:
        self.counters["signing_refused"] += 1
        return CommandError(status, message)

    async def add(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str))
        if prefix.comps[:1] == (LOCALHOST,):
            raise self._refuse(400, f"{prefix}: /localhost names are not signed for applications")
        if self._producers.reserved(prefix):
            raise self._refuse(403, f"{prefix}: the node answers names there itself; it signs for an "
                                    "application only under prefixes of its own")
        if KEY in prefix.comps:
            raise self._refuse(403, f"{prefix}: the node never signs key or certificate names for an application")
        if self._rib.get(prefix, face.id, ORIGIN_APP) is None:
            raise self._refuse(409, f"{prefix}: not served by this application (serve it first: route/add "
                                    "with face \"self\")")
        prefixes = self._by_face.setdefault(face.id, [])
        if prefix not in prefixes:
            if len(prefixes) >= MAX_SIGNED_PREFIXES:
                raise self._refuse(409, f"{prefix}: this application already has the node sign under "
                                        f"{MAX_SIGNED_PREFIXES} prefixes")
            prefixes.append(prefix)
        return {"prefix": prefix.to_uri(), "key": self._key.name.to_uri() if self._key.name else None}

    async def remove(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str))
        prefixes = self._by_face.get(face.id, [])
        if prefix not in prefixes:
            raise self._refuse(404, f"{prefix}: the node does not sign under it for this application")
        prefixes.remove(prefix)
        if not prefixes:
            del self._by_face[face.id]
        return {"prefix": prefix.to_uri()}

    def face_down(self, face_id: int) -> None:
        self._by_face.pop(face_id, None)

    def sign(self, face_id: int, data: Data) -> Data:
        """`data` from local face `face_id`, signed by the node if the rules
        (class docstring) say so, else unchanged."""
        prefixes = self._by_face.get(face_id)
        if prefixes is None or data.sig_type != SigType.DIGEST_SHA256:
            return data
        comps = data.name.comps
        for prefix in prefixes:
            if comps[:len(prefix.comps)] == prefix.comps and self._rib.get(prefix, face_id, ORIGIN_APP):
                self.counters["app_data_signed"] += 1
                return self._key.sign(data)
        return data


def add_node_producers(producers: ProducerTable, cert: Certificate, key: Ed25519Key,
                       status: Callable[[], dict[str, Any]]) -> None:
    """The node's own names: ``/node/<n>/ping`` (an empty signed Data),
    ``/node/<n>/KEY/...`` (the node's certificate, when its key is named
    there: `cert`; a key named elsewhere, ``icnd run --key``, is served under
    its own name by `icnd.daemon.certs`) and ``/node/<n>/status``
    (`Node.status`, msgpack)."""
    own = producers.node_name.comps
    cert_name = cert.data.name.comps

    def ping(interest: Interest) -> Data:
        return key.sign(Data(interest.name, b"", freshness_ms=0))

    def certificate(interest: Interest) -> Data | Nack:
        # the certificate by its name, or by any prefix of it (its key name...) with CanBePrefix
        comps = interest.name.comps
        if comps == cert_name or (interest.can_be_prefix and cert_name[:len(comps)] == comps):
            return cert.data
        return producers.no_such_data(interest)

    def node_status(interest: Interest) -> Data:
        return key.sign(Data(interest.name, msgpack.packb(status()), freshness_ms=1000))

    producers.add(own + (PING,), ping)
    producers.add(own + (KEY,), certificate)
    producers.add(own + (STATUS,), node_status)
