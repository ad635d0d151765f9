"""The node's published data: what answers, from the node itself, the names published through it.

Two stores hold what applications publish through their node: the `Repo`
(single named Data, ``publish``) and the `ObjectStore` (segmented objects,
uploaded in chunks and served segment by segment).  `ObjectService` keeps
them and the routes that lead Interests for their names to the node's
internal face: a route per published name (withdrawn on unpublish or
eviction), one per stored object, all announced again at start-up.  They
are RIB routes of origin ``app`` (the node's own application), beside any
other origin's routes for the same names.  It
answers those Interests as a store of the node's producer table
(`icnd.daemon.producers`): the repo first, then the object store.

The management commands ``repo/*`` and ``object/*``
(`icnd.daemon.mgmt.objects`) operate on this service.
"""

from __future__ import annotations

from icnd.core.tables.cs import ContentStore
from icnd.core.tables.rib import ORIGIN_APP, Rib
from icnd.name import Name
from icnd.objects.manifest import Manifest
from icnd.objects.repo import Repo
from icnd.objects.store import ObjectStore
from icnd.packet import Data, Interest
from icnd.producer import Producers
from icnd.security import Ed25519Key


class ObjectService:
    """The repo and object store of a node, their routes, and their answers."""

    def __init__(self, repo: Repo, objects: ObjectStore, *, rib: Rib, cs: ContentStore, key: Ed25519Key,
                 face: int) -> None:
        self.repo = repo
        self.objects = objects
        self.key = key  # signs manifests (and, on request, published Data)
        self._rib = rib
        self._cs = cs
        self._face = face  # the node's internal face: where the routes lead

    def register(self, producers: Producers) -> None:
        producers.add_store(self.lookup)

    def announce(self) -> None:
        """Route every stored name to the node (at start-up)."""
        for data in self.repo.names():
            self._rib.add(data.name, self._face, 0, ORIGIN_APP)
        for name in self.objects.names():
            self._rib.add(name, self._face, 0, ORIGIN_APP)

    def lookup(self, interest: Interest) -> Data | None:
        """The published Data, or object segment or manifest, the Interest asks for."""
        stored = self.repo.get(interest.name.comps)
        if stored is not None:
            return stored
        return self.objects.lookup(interest)

    # --- single Data ---------------------------------------------------------------------
    def publish(self, data: Data) -> None:
        """Store `data` and route its name to the node.

        Raises ValueError (larger than the repo) or `TableFull` (no room for the route)."""
        for evicted in self.repo.put(data):
            self._rib.remove(evicted.name, self._face, ORIGIN_APP)
        self._rib.add(data.name, self._face, 0, ORIGIN_APP)
        self._cs.discard(data.name.comps)  # a cached older version must not shadow it

    def unpublish(self, name: Name) -> bool:
        if not self.repo.delete(name.comps):
            return False
        self._rib.remove(name, self._face, ORIGIN_APP)
        return True

    # --- segmented objects ---------------------------------------------------------------------
    def commit(self, upload: str, signed: Data | None = None) -> Manifest:
        """Finish an upload: sign its manifest (or take `signed`, the
        publisher's, if it matches) and route the object's name to the node.

        Raises `ObjectStoreError` or `TableFull`."""
        manifest = self.objects.commit(upload, self.key, signed)
        self._rib.add(manifest.name, self._face, 0, ORIGIN_APP)
        return manifest

    def remove(self, name: Name) -> list[Manifest]:
        """Remove every version of an object (and its route); returns their manifests."""
        removed = self.objects.remove(name)
        if removed:
            self._rib.remove(name, self._face, ORIGIN_APP)
        return removed

    def close(self) -> None:
        self.repo.close()
        self.objects.close()
