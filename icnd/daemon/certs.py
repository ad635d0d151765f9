"""The certificates a node serves under their names (interface §13).

A node answers, from its internal face, Interests for the certificates it
holds: its own (``icnd run --cert``, or the self-signed one it made), its
trust schema's anchors, and those its clients published (``repo publish`` of
a certificate Data: the repo serves it by its full name, this table also by
its key name).  An Interest for a key name ``/<id>/KEY/<kid>`` with
CanBePrefix, or for the certificate's name or any prefix of it from the key
name on, gets the newest certificate of that key held here.  Each key name
gets a route to the internal face, so the Interests reach the node.

It is a store of the producer table (`icnd.daemon.producers`), consulted
after the repo and the object store: a miss costs three dictionary lookups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from icnd.name import Name
from icnd.packet import Data, Interest
from icnd.trust.cert import Certificate, CertificateError, is_certificate_name, parse_certificate

MAX_CERTS = 4096  # certificates served (the node's own and its anchors are never dropped)


class CertificateTable:
    """Certificates by key name, and the routes that bring their Interests here."""

    def __init__(self, add_route: Callable[[Name], object], max_certs: int = MAX_CERTS) -> None:
        self._by_key: dict[tuple[bytes, ...], Certificate] = {}
        self._pinned: set[tuple[bytes, ...]] = set()
        self._add_route = add_route
        self.max_certs = max_certs

    def __len__(self) -> int:
        return len(self._by_key)

    def add(self, cert: Certificate, *, pinned: bool = False) -> bool:
        """Serve `cert` (the newest version of a key wins); False if not kept."""
        comps = cert.key_name.comps
        if comps in self._pinned and not pinned:
            return False  # the node's own certificate and its anchors are not replaced by a client's
        old = self._by_key.get(comps)
        if old is not None and old.version > cert.version:
            return False
        if old is None and len(self._by_key) >= self.max_certs and not pinned:
            return False
        self._by_key[comps] = cert
        if pinned:
            self._pinned.add(comps)
        if old is None:
            self._add_route(cert.key_name)
        return True

    def add_all(self, certs: Iterable[Certificate], *, pinned: bool = False) -> None:
        for cert in certs:
            self.add(cert, pinned=pinned)

    def published(self, data: Data) -> Certificate | None:
        """A Data a client published: kept if it is a certificate."""
        if not is_certificate_name(data.name):
            return None
        try:
            cert = parse_certificate(data)
        except CertificateError:
            return None
        return cert if self.add(cert) else None

    def certificates(self) -> list[Certificate]:
        return list(self._by_key.values())

    def lookup(self, interest: Interest) -> Data | None:
        """The certificate the Interest asks for (see the module docstring)."""
        comps = interest.name.comps
        by_key = self._by_key
        for cut in (0, 1, 2):  # the Interest is the key name, or it plus the issuer, or the full name
            if len(comps) - cut < 3:
                return None
            cert = by_key.get(comps[:len(comps) - cut] if cut else comps)
            if cert is not None:
                if cert.data.name.comps == comps or (interest.can_be_prefix
                                                     and cert.data.name.comps[:len(comps)] == comps):
                    return cert.data
                return None
        return None
