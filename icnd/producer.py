"""What a node-side feature needs to answer Interests routed to its node.

The node's producer table (`icnd.daemon.producers.ProducerTable`) answers
the Interests the forwarder sends to the node's internal face.  A feature
that answers some of them (`icnd.objects.service`, `icnd.reduction.service`)
registers with it through this protocol, so it never imports the daemon.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from icnd.packet import Data, Interest, Nack

Store = Callable[[Interest], Data | None]
"""A lookup by exact name: the Data it holds, or None."""

Producer = Callable[[Interest], Data | Nack | None]
"""Answers the Interests under its prefix: Data, a Nack, or None (held; answered later)."""

Comps = tuple[bytes, ...]


class Producers(Protocol):
    """Where a feature registers what it answers (see `icnd.daemon.producers`)."""

    def add_store(self, lookup: Store) -> None:
        """Consult `lookup` for every Interest, after the stores added before it."""

    def add(self, prefix: Comps, handler: Producer) -> None:
        """Answer Interests under `prefix` (the longest registered prefix wins)."""
