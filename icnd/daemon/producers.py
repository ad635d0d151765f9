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
feature package with a ``register(producers)`` method that calls `add`, and
have the node call it in ``Node.bind``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from icnd.name import Name, generic
from icnd.packet import Data, Interest, Nack, NackReason
from icnd.security import Ed25519Key
from icnd.trust.cert import Certificate

Store = Callable[[Interest], Data | None]
Producer = Callable[[Interest], Data | Nack | None]
Comps = tuple[bytes, ...]

PING = generic("ping")
KEY = generic("KEY")
STATUS = generic("status")


class ProducerTable:
    """Stores, then handlers by longest prefix; see the module docstring."""

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
