"""Unit tests for the Content Store (icnd.core.tables.cs)."""

from __future__ import annotations

from icnd.codec import encode, full_name
from icnd.core.tables.cs import ContentStore
from icnd.name import Name
from icnd.packet import Data, Interest


def data(uri: str, content: bytes = b"x", freshness_ms: int = 0) -> Data:
    return Data(Name(uri), content, freshness_ms=freshness_ms)


def size(d: Data) -> int:
    return len(encode(d)) + len(d.content)


def interest(uri: str | Name, cbp: bool = False, mbf: bool = False) -> Interest:
    name = uri if isinstance(uri, Name) else Name(uri)
    return Interest(name, nonce=1, can_be_prefix=cbp, must_be_fresh=mbf)


def check_invariants(cs: ContentStore) -> None:
    assert cs.bytes_used == sum(e.size for e in cs.by_name.values())
    assert cs.bytes_used <= cs.capacity_bytes
    assert list(cs._ordered()) == sorted(cs.by_name)
    assert len(cs) == len(cs.by_name) == len(cs._ordered())


# --- exact ---------------------------------------------------------------------------


def test_insert_and_exact_lookup():
    cs = ContentStore(10_000)
    d = data("/a/b", b"hello")
    assert cs.insert(d, 0.0) is True
    assert len(cs) == 1
    assert cs.bytes_used == size(d)
    assert cs.lookup(interest("/a/b"), 0.0) is d
    assert cs.lookup(interest("/a"), 0.0) is None  # exact only
    assert cs.lookup(interest("/a/b/c"), 0.0) is None
    assert cs.lookup(interest("/z"), 0.0) is None
    check_invariants(cs)


def test_reinsert_same_name_replaces():
    cs = ContentStore(10_000)
    d1 = data("/a", b"old")
    d2 = data("/a", b"a much longer new content")
    cs.insert(d1, 0.0)
    cs.insert(d2, 1.0)
    assert len(cs) == 1
    assert cs.bytes_used == size(d2)
    assert cs.lookup(interest("/a"), 1.0) is d2
    check_invariants(cs)


# --- freshness ----------------------------------------------------------------------


def test_must_be_fresh_before_and_after_freshness():
    cs = ContentStore(10_000)
    d = data("/a", freshness_ms=1000)
    cs.insert(d, 10.0)
    assert cs.lookup(interest("/a", mbf=True), 10.0) is d
    assert cs.lookup(interest("/a", mbf=True), 10.999) is d
    assert cs.lookup(interest("/a", mbf=True), 11.0) is None  # fresh *until* inserted + freshness
    assert cs.lookup(interest("/a", mbf=True), 12.0) is None
    # stale Data still answers an Interest without must_be_fresh
    assert cs.lookup(interest("/a"), 12.0) is d
    assert len(cs) == 1


def test_zero_freshness_is_immediately_stale():
    cs = ContentStore(10_000)
    d = data("/a", freshness_ms=0)
    cs.insert(d, 5.0)
    assert cs.lookup(interest("/a", mbf=True), 5.0) is None
    assert cs.lookup(interest("/a"), 5.0) is d


def test_reinsert_refreshes_freshness():
    cs = ContentStore(10_000)
    cs.insert(data("/a", freshness_ms=1000), 0.0)
    assert cs.lookup(interest("/a", mbf=True), 2.0) is None
    d = data("/a", freshness_ms=1000)
    cs.insert(d, 2.0)
    assert cs.lookup(interest("/a", mbf=True), 2.5) is d


# --- can_be_prefix ---------------------------------------------------------------------


def test_can_be_prefix_finds_data_under_prefix():
    cs = ContentStore(10_000)
    d = data("/p/a/1")
    cs.insert(d, 0.0)
    cs.insert(data("/q"), 0.0)
    cs.insert(data("/pq/a"), 0.0)  # string prefix, not a component prefix
    assert cs.lookup(interest("/p", cbp=True), 0.0) is d
    assert cs.lookup(interest("/p/a", cbp=True), 0.0) is d
    assert cs.lookup(interest("/p/a/1", cbp=True), 0.0) is d  # the name itself
    assert cs.lookup(interest("/p/b", cbp=True), 0.0) is None
    assert cs.lookup(interest("/p/a/1/x", cbp=True), 0.0) is None
    assert cs.lookup(interest("/", cbp=True), 0.0) is not None


def test_can_be_prefix_does_not_match_string_prefix():
    cs = ContentStore(10_000)
    cs.insert(data("/pq/a"), 0.0)
    cs.insert(data("/ab"), 0.0)
    assert cs.lookup(interest("/p", cbp=True), 0.0) is None
    assert cs.lookup(interest("/a", cbp=True), 0.0) is None


def test_can_be_prefix_must_be_fresh_skips_stale():
    cs = ContentStore(10_000)
    stale1 = data("/p/a", freshness_ms=0)
    stale2 = data("/p/b", freshness_ms=100)
    fresh = data("/p/c", freshness_ms=10_000)
    outside = data("/q", freshness_ms=10_000)
    for d in (stale1, stale2, fresh, outside):
        cs.insert(d, 0.0)
    now = 1.0
    assert cs.lookup(interest("/p", cbp=True, mbf=True), now) is fresh
    # without must_be_fresh, the first under the prefix (in name order) answers
    assert cs.lookup(interest("/p", cbp=True), now) is stale1
    assert cs.lookup(interest("/p/b", cbp=True, mbf=True), now) is None
    assert cs.lookup(interest("/p/b", cbp=True), now) is stale2


def test_can_be_prefix_all_stale_misses_with_must_be_fresh():
    cs = ContentStore(10_000)
    for i in range(5):
        cs.insert(data(f"/p/{i}", freshness_ms=0), 0.0)
    assert cs.lookup(interest("/p", cbp=True, mbf=True), 0.0) is None
    assert cs.lookup(interest("/p", cbp=True), 0.0) is not None


# --- implicit digest ---------------------------------------------------------------------


def test_implicit_digest_lookup():
    cs = ContentStore(10_000)
    d = data("/a/b", b"payload")
    cs.insert(d, 0.0)
    assert cs.lookup(interest(full_name(d)), 0.0) is d
    wrong = Name("/a/b").append("sha256digest=" + "00" * 32)
    assert cs.lookup(interest(wrong), 0.0) is None
    other = data("/a/b", b"other payload")
    assert cs.lookup(interest(full_name(other)), 0.0) is None
    # the digest of a different name does not match either
    assert cs.lookup(interest(full_name(data("/a/c", b"payload"))), 0.0) is None


def test_implicit_digest_lookup_respects_must_be_fresh():
    cs = ContentStore(10_000)
    d = data("/a", b"payload", freshness_ms=1000)
    cs.insert(d, 0.0)
    assert cs.lookup(interest(full_name(d), mbf=True), 0.5) is d
    assert cs.lookup(interest(full_name(d), mbf=True), 2.0) is None
    assert cs.lookup(interest(full_name(d)), 2.0) is d


# --- LRU eviction by bytes --------------------------------------------------------------


def same_size_items(n: int) -> list[Data]:
    items = [data(f"/d/{i}", b"z" * 100) for i in range(n)]
    assert len({size(d) for d in items}) == 1
    return items


def test_eviction_keeps_bytes_within_capacity():
    items = same_size_items(10)
    s = size(items[0])
    cs = ContentStore(3 * s + s // 2)
    for i, d in enumerate(items):
        assert cs.insert(d, float(i)) is True
        assert cs.bytes_used <= cs.capacity_bytes
        check_invariants(cs)
    assert len(cs) == 3
    assert cs.bytes_used == 3 * s
    assert cs.evictions == 7
    # the three most recently inserted survive
    for d in items[:7]:
        assert cs.lookup(interest(d.name), 100.0) is None
    for d in items[7:]:
        assert cs.lookup(interest(d.name), 100.0) is d


def test_lookup_refreshes_recency():
    a, b, c, d = same_size_items(4)
    cs = ContentStore(3 * size(a))
    cs.insert(a, 0.0)
    cs.insert(b, 1.0)
    cs.insert(c, 2.0)
    assert cs.lookup(interest(a.name), 3.0) is a  # a is now the most recently used
    cs.insert(d, 4.0)
    assert cs.lookup(interest(b.name), 5.0) is None  # b was least recently used
    for x in (a, c, d):
        assert cs.lookup(interest(x.name), 5.0) is x
    check_invariants(cs)


def test_prefix_lookup_refreshes_recency():
    a, b, c, d = same_size_items(4)
    cs = ContentStore(3 * size(a))
    cs.insert(a, 0.0)
    cs.insert(b, 1.0)
    cs.insert(c, 2.0)
    assert cs.lookup(interest("/d/0", cbp=True), 3.0) is a
    cs.insert(d, 4.0)
    assert cs.lookup(interest(b.name), 5.0) is None
    assert cs.lookup(interest(a.name), 5.0) is a


def test_digest_lookup_refreshes_recency():
    a, b, c, d = same_size_items(4)
    cs = ContentStore(3 * size(a))
    cs.insert(a, 0.0)
    cs.insert(b, 1.0)
    cs.insert(c, 2.0)
    assert cs.lookup(interest(full_name(a)), 3.0) is a
    cs.insert(d, 4.0)
    assert cs.lookup(interest(b.name), 5.0) is None
    assert cs.lookup(interest(a.name), 5.0) is a


def test_failed_lookup_does_not_refresh_recency():
    a, b, c, d = same_size_items(4)
    a = data("/d/0", b"z" * 100, freshness_ms=0)
    cs = ContentStore(3 * size(a))
    cs.insert(a, 0.0)
    cs.insert(b, 1.0)
    cs.insert(c, 2.0)
    assert cs.lookup(interest(a.name, mbf=True), 3.0) is None  # stale: a miss
    cs.insert(d, 4.0)
    assert cs.lookup(interest(a.name), 5.0) is None  # a is still the oldest
    assert cs.lookup(interest(b.name), 5.0) is b


def test_reinsert_refreshes_recency():
    a, b, c, d = same_size_items(4)
    cs = ContentStore(3 * size(a))
    cs.insert(a, 0.0)
    cs.insert(b, 1.0)
    cs.insert(c, 2.0)
    cs.insert(a, 3.0)
    cs.insert(d, 4.0)
    assert cs.lookup(interest(b.name), 5.0) is None
    assert cs.lookup(interest(a.name), 5.0) is a


def test_big_insert_evicts_several():
    small = same_size_items(4)
    s = size(small[0])
    cs = ContentStore(4 * s)
    for i, d in enumerate(small):
        cs.insert(d, float(i))
    big = data("/big", b"y" * s)
    assert s * 2 < size(big) <= 3 * s
    assert cs.insert(big, 10.0)
    assert cs.bytes_used <= cs.capacity_bytes
    assert cs.lookup(interest("/big"), 10.0) is big
    assert cs.lookup(interest(small[3].name), 10.0) is small[3]
    assert cs.lookup(interest(small[0].name), 10.0) is None
    check_invariants(cs)


def test_data_bigger_than_capacity_refused():
    cs = ContentStore(200)
    keep = data("/keep", b"k")
    cs.insert(keep, 0.0)
    before = cs.bytes_used
    huge = data("/huge", b"h" * 500)
    assert size(huge) > 200
    assert cs.insert(huge, 1.0) is False
    assert cs.bytes_used == before
    assert len(cs) == 1
    assert cs.lookup(interest("/huge"), 1.0) is None
    assert cs.lookup(interest("/keep"), 1.0) is keep  # nothing evicted for it
    assert cs.evictions == 0
    check_invariants(cs)


def test_data_exactly_capacity_accepted():
    d = data("/exact", b"e" * 50)
    cs = ContentStore(size(d))
    cs.insert(data("/other"), 0.0)
    assert cs.insert(d, 1.0) is True
    assert cs.bytes_used == cs.capacity_bytes
    assert cs.lookup(interest("/exact"), 1.0) is d
    assert len(cs) == 1
    check_invariants(cs)


# --- erase / entries -------------------------------------------------------------------


def test_erase_by_prefix():
    cs = ContentStore(100_000)
    under = [data(u, b"c" * i) for i, u in enumerate(["/p", "/p/a", "/p/a/b", "/p/z"])]
    over = [data(u) for u in ["/", "/o", "/pq", "/q/p"]]
    for d in under + over:
        cs.insert(d, 0.0)
    assert cs.erase(Name("/p").comps) == len(under)
    assert cs.bytes_used == sum(size(d) for d in over)
    for d in under:
        assert cs.lookup(interest(d.name), 0.0) is None
    for d in over:
        assert cs.lookup(interest(d.name), 0.0) is d
    assert cs.lookup(interest("/p", cbp=True), 0.0) is None
    check_invariants(cs)
    assert cs.erase(Name("/p").comps) == 0
    assert cs.erase(Name("/nothing").comps) == 0
    assert cs.erase(()) == len(over)
    assert cs.bytes_used == 0
    assert len(cs) == 0
    check_invariants(cs)


def test_erase_then_insert_and_evict():
    a, b, c, d = same_size_items(4)
    cs = ContentStore(3 * size(a))
    cs.insert(a, 0.0)
    cs.insert(b, 0.0)
    assert cs.erase(a.name.comps) == 1
    cs.insert(c, 0.0)
    cs.insert(d, 0.0)  # fits without eviction: a's bytes were released
    assert cs.evictions == 0
    assert len(cs) == 3
    check_invariants(cs)


def test_entries_iterates_in_name_order():
    cs = ContentStore(100_000)
    uris = ["/p/c", "/p/a/2", "/x", "/p/b", "/p/a", "/p/a/1", "/o", "/pq"]
    for i, u in enumerate(uris):
        cs.insert(data(u), float(i))
    got = [e.data.name for e in cs.entries(Name("/p").comps)]
    assert got == sorted(Name(u) for u in uris if Name("/p").is_prefix_of(Name(u)))
    assert [n.to_uri() for n in got] == ["/p/a", "/p/a/1", "/p/a/2", "/p/b", "/p/c"]
    assert [e.data.name for e in cs.entries()] == sorted(Name(u) for u in uris)
    assert list(cs.entries(Name("/nope").comps)) == []
    for e in cs.entries():
        assert e.size == size(e.data)
