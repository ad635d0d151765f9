"""Dead-nonce list: (name, nonce) pairs recently satisfied or expired.

An Interest whose (name, nonce) is here is looping back after its PIT entry
is gone.  Invariants: every record lives exactly ``lifetime`` seconds (all
records have the same lifetime, so insertion order is expiry order and the
oldest is always first); at most ``capacity`` records (the oldest is evicted
first when full).

`records` ((name components, nonce) -> expiry, oldest first) is public,
read-only for callers, so the forwarder skips `has` at the cost of one
truth test while the list is empty; only this class changes it.
"""

from __future__ import annotations

from collections import OrderedDict


class DeadNonceList:
    def __init__(self, lifetime: float = 6.0, capacity: int = 65536) -> None:
        self.lifetime = lifetime
        self.capacity = capacity
        # OrderedDict, not dict: popping the oldest of a plain dict rescans the
        # deleted slots at its front every time (quadratic under churn)
        self.records: OrderedDict[tuple[tuple[bytes, ...], int], float] = OrderedDict()

    def __len__(self) -> int:
        return len(self.records)

    def add(self, comps: tuple[bytes, ...], nonce: int, now: float) -> None:
        key = (comps, nonce)
        records = self.records
        if key in records:  # re-adding moves it to the back with a new expiry
            records.move_to_end(key)
        elif len(records) >= self.capacity:
            records.popitem(last=False)
        records[key] = now + self.lifetime

    def has(self, comps: tuple[bytes, ...], nonce: int, now: float) -> bool:
        expiry = self.records.get((comps, nonce))
        return expiry is not None and expiry > now

    def evict_expired(self, now: float) -> None:
        records = self.records
        while records:
            key, expiry = next(iter(records.items()))
            if expiry > now:
                break
            records.popitem(last=False)
