"""The certificates a node serves under their names (interface §13).

A node answers, from its internal face, Interests for the certificates it
holds: its own (``icnd run --cert``, or the self-signed one it made), its
trust schema's anchors, those published through it (``repo publish`` of a
certificate Data: the repo serves it by its full name, this table also by
its key name), and those of its connected clients (``cert/add``, which
`icnd.connect` sends for ``cert=``).  An Interest for a key name
``/<id>/KEY/<kid>`` with CanBePrefix, or for the certificate's name or any
prefix of it from the key name on, gets the newest certificate of that key
held here.  Each key name gets a route to the internal face, so the
Interests reach the node (and, with link-state routing, every node).

A connected client's certificate lasts as long as a connection that
presented it: when the last one goes, so do the certificate and its route
(else a departed client's key would stay announced network-wide).  One
thing keeps it longer: Data signed by that key published through the node
(``repo publish`` of a client-signed Data, ``object/commit`` of a
client-signed manifest) outlives the client and must stay verifiable, so
the certificate is then published too (`keep`: into the repo, as a
published certificate, for good).

It is a store of the producer table (`icnd.daemon.producers`), consulted
after the repo and the object store: a miss costs three dictionary lookups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from icnd.daemon.mgmt.args import arg, data_packets
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.errors import CommandError
from icnd.faces import Face
from icnd.name import Name
from icnd.packet import Data, Interest
from icnd.trust.cert import Certificate, CertificateError, is_certificate_name, parse_certificate

MAX_CERTS = 4096  # certificates served (the node's own and its anchors are never dropped)


class CertificateTable:
    """Certificates by key name, and the routes that bring their Interests here."""

    def __init__(self, add_route: Callable[[Name], object], remove_route: Callable[[Name], object],
                 keep: Callable[[Data], object], max_certs: int = MAX_CERTS) -> None:
        """`add_route`/`remove_route`: route a key name to the node, or stop;
        `keep`: publish a client's certificate for good (module docstring)."""
        self._by_key: dict[tuple[bytes, ...], Certificate] = {}
        self._pinned: set[tuple[bytes, ...]] = set()
        # certificates held only for connected clients: key name -> their faces (absent: held for good)
        self._owners: dict[tuple[bytes, ...], set[int]] = {}
        self._owned_by: dict[int, set[tuple[bytes, ...]]] = {}  # face -> the key names it holds here
        self._add_route = add_route
        self._remove_route = remove_route
        self._keep = keep
        self.max_certs = max_certs

    def __len__(self) -> int:
        return len(self._by_key)

    def add(self, cert: Certificate, *, pinned: bool = False, owner: int | None = None) -> bool:
        """Serve `cert` (the newest version of a key wins); False if not kept.
        With `owner` (a client's face), only while that face, or another
        owner of the same key's certificate, is connected -- unless it is, or
        becomes, held for good (pinned, or added without an owner)."""
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
        if owner is None:
            self._disown(comps)
        elif old is None or comps in self._owners:
            self._owners.setdefault(comps, set()).add(owner)
            self._owned_by.setdefault(owner, set()).add(comps)
        if old is None:
            self._add_route(cert.key_name)
        return True

    def _disown(self, comps: tuple[bytes, ...]) -> None:
        """Hold the certificate of key `comps` for good, whatever its owners do."""
        for face in self._owners.pop(comps, ()):
            owned = self._owned_by.get(face)
            if owned is not None:
                owned.discard(comps)
                if not owned:
                    del self._owned_by[face]

    def face_down(self, face: int) -> None:
        """A client's connection went: the certificates only it held go, routes and all."""
        for comps in self._owned_by.pop(face, ()):
            owners = self._owners[comps]
            owners.discard(face)
            if not owners:
                del self._owners[comps]
                cert = self._by_key.pop(comps)
                self._remove_route(cert.key_name)

    def add_all(self, certs: Iterable[Certificate], *, pinned: bool = False) -> None:
        for cert in certs:
            self.add(cert, pinned=pinned)

    def published(self, data: Data) -> Certificate | None:
        """A Data a client published: kept if it is a certificate; if it is
        signed by a connected client's key, that key's certificate is kept
        with it, for good (`keep`)."""
        if not is_certificate_name(data.name):
            locator = data.key_locator
            if locator is not None and locator.comps in self._owners:
                self._disown(locator.comps)
                self._keep(self._by_key[locator.comps].data)
            return None
        try:
            cert = parse_certificate(data)
        except CertificateError:
            return None
        return cert if self.add(cert) else None

    # --- cert/add: a connected client's certificate ----------------------------------------------
    def commands(self) -> Commands:
        return {("cert", "add"): self.add_command}

    async def add_command(self, face: Face, args: dict[str, Any]) -> Any:
        """``cert/add`` ``{packets: [certificate Data]}``: serve the requesting
        client's certificate while it is connected (`icnd.connect` with
        ``cert=``).  ``served`` is false when a newer certificate of that key
        is held here (it is served instead) or the table is full."""
        served = []
        for data in data_packets(arg(args, "packets", list)):
            try:
                cert = parse_certificate(data)
            except CertificateError as exc:
                raise CommandError(400, f"not a certificate: {exc}") from None
            if self.add(cert, owner=face.id):
                served.append(cert.name.to_uri())
        return {"served": served}

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
