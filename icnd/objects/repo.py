"""The node's store of published Data.

Published Data is the node's own production: unlike the Content Store it is
not evicted by traffic, only by `unpublish` or, when full, oldest first (the
publisher is told through the return value).  With a data directory it lives
in SQLite (standard library) and survives restarts; without one it lives in
memory.

Invariants: ``bytes_used`` is the sum of stored wire sizes and never exceeds
``capacity_bytes``; a name maps to exactly one Data (re-publishing replaces).
"""

from __future__ import annotations

import os
import sqlite3
from collections import OrderedDict
from typing import cast

from icnd.codec import decode, encode
from icnd.packet import Data


class Repo:
    def __init__(self, capacity_bytes: int, data_dir: str | None = None) -> None:
        self.capacity_bytes = capacity_bytes
        self.bytes_used = 0
        self._db: sqlite3.Connection | None = None
        self._mem: OrderedDict[tuple[bytes, ...], bytes] = OrderedDict()
        if data_dir:
            os.makedirs(data_dir, exist_ok=True)
            self._db = sqlite3.connect(os.path.join(data_dir, "repo.sqlite3"), isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS data (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                " name BLOB UNIQUE NOT NULL, wire BLOB NOT NULL)"
            )
            row = self._db.execute("SELECT COALESCE(SUM(LENGTH(wire)), 0) FROM data").fetchone()
            self.bytes_used = int(row[0])

    @staticmethod
    def _key(comps: tuple[bytes, ...]) -> bytes:
        # length-prefixed components: unambiguous and order-preserving per component
        return b"".join(len(c).to_bytes(2, "big") + c for c in comps)

    def names(self) -> list[Data]:
        """Every stored Data (used at start-up to announce routes)."""
        if self._db is None:
            return [_data(w) for w in self._mem.values()]
        return [_data(bytes(w)) for (w,) in self._db.execute("SELECT wire FROM data ORDER BY seq")]

    def __len__(self) -> int:
        if self._db is None:
            return len(self._mem)
        return int(self._db.execute("SELECT COUNT(*) FROM data").fetchone()[0])

    def put(self, data: Data) -> list[Data]:
        """Store `data`; returns the Data evicted to make room (oldest first).

        Raises ValueError if the Data alone exceeds the capacity."""
        wire = encode(data)
        if len(wire) > self.capacity_bytes:
            raise ValueError(f"{data.name}: {len(wire)} bytes exceed the store's capacity")
        self.delete(data.name.comps)
        evicted: list[Data] = []
        while self.bytes_used + len(wire) > self.capacity_bytes:
            evicted.append(self._evict_oldest())
        if self._db is None:
            self._mem[data.name.comps] = wire
        else:
            self._db.execute("INSERT INTO data (name, wire) VALUES (?, ?)", (self._key(data.name.comps), wire))
        self.bytes_used += len(wire)
        return evicted

    def _evict_oldest(self) -> Data:
        if self._db is None:
            _, wire = self._mem.popitem(last=False)
        else:
            seq, wire = self._db.execute("SELECT seq, wire FROM data ORDER BY seq LIMIT 1").fetchone()
            self._db.execute("DELETE FROM data WHERE seq = ?", (seq,))
        self.bytes_used -= len(wire)
        return _data(bytes(wire))

    def get(self, comps: tuple[bytes, ...]) -> Data | None:
        if self._db is None:
            wire = self._mem.get(comps)
        else:
            row = self._db.execute("SELECT wire FROM data WHERE name = ?", (self._key(comps),)).fetchone()
            wire = None if row is None else bytes(row[0])
        return None if wire is None else _data(wire)

    def delete(self, comps: tuple[bytes, ...]) -> bool:
        if self._db is None:
            wire = self._mem.pop(comps, None)
        else:
            key = self._key(comps)
            row = self._db.execute("SELECT wire FROM data WHERE name = ?", (key,)).fetchone()
            wire = None if row is None else row[0]
            if wire is not None:
                self._db.execute("DELETE FROM data WHERE name = ?", (key,))
        if wire is None:
            return False
        self.bytes_used -= len(wire)
        return True

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _data(wire: bytes) -> Data:
    """A stored wire, decoded: only Data is ever stored (`put`)."""
    return cast(Data, decode(wire))
