"""A client's cache of group descriptors is bounded, least recently used dropped."""

from __future__ import annotations

from typing import Any

from icnd.reduction.consumer import MAX_CACHED_GROUPS, DescriptorCache


def test_the_cache_keeps_the_most_recently_used_groups() -> None:
    cache = DescriptorCache()
    entry: Any = ("desc", b"wire")
    for i in range(MAX_CACHED_GROUPS):
        cache.put(f"g{i}", entry)
    assert cache.get("g0") is entry  # used: now the most recent
    cache.put("new", entry)  # one over the bound: the least recently used (g1) goes
    assert cache.get("g1") is None and cache.get("g0") is entry and cache.get("new") is entry
    cache.drop("g0")
    assert cache.get("g0") is None
