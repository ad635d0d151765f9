"""Group descriptors and the node's group table (sans-IO)."""

from __future__ import annotations

import pytest

from icnd.name import Name
from icnd.reduction.contrib import GroupTable, ReductionError
from icnd.reduction.group import GroupDescriptor, Member
from icnd.security import Ed25519Key


def test_descriptor_round_trip_and_determinism():
    a = GroupDescriptor.create("g", ["w1", "m2@b"], rendezvous=["r"], deadline_ms=500)
    b = GroupDescriptor.create("g", ["w1", "m2@b"], rendezvous=["r"], deadline_ms=500)
    assert a.to_content() == b.to_content()
    assert GroupDescriptor.from_content(a.to_content()) == a
    assert a.members == (Member("w1", "w1"), Member("m2", "b"))
    assert a.rendezvous_for(0) == "r" and GroupDescriptor.create("h", ["x", "y"]).rendezvous_for(3) == "y"


@pytest.mark.parametrize("members,why", [
    ([], "at least one member"), (["a", "a"], "appears twice"), (["a/b"], "letters, digits"),
    ([1], "must be a string"),
])
def test_bad_descriptors_are_refused(members, why):
    with pytest.raises(ValueError, match=why):
        GroupDescriptor.create("g", members)


def test_configured_groups_cannot_be_taken_over_by_announcements():
    table = GroupTable()
    table.add_config(GroupDescriptor.create("g", ["w1", "w2"]))
    intruder = Ed25519Key.generate(Name("/node/evil"))
    v2 = intruder.sign(GroupDescriptor.create("g", ["w1", "evil"], version=2).to_data())
    with pytest.raises(ReductionError, match="configured on this node"):
        table.install(v2, intruder.public_bytes())
    assert table.latest("g")[0].version == 1


def test_announced_groups_trust_their_first_signer():
    table = GroupTable()
    owner, other = Ed25519Key.generate(Name("/node/a")), Ed25519Key.generate(Name("/node/b"))
    table.install(owner.sign(GroupDescriptor.create("g", ["w1"]).to_data()), owner.public_bytes())
    v2 = GroupDescriptor.create("g", ["w1", "w2"], version=2)
    with pytest.raises(ReductionError, match="owned by another key"):
        table.install(other.sign(v2.to_data()), other.public_bytes())
    with pytest.raises(ReductionError, match="does not match"):
        table.install(other.sign(v2.to_data()), owner.public_bytes())
    table.install(owner.sign(v2.to_data()), owner.public_bytes())
    assert table.latest("g")[0].version == 2 and [d.version for d in table.versions("g")] == [1, 2]


def test_the_descriptor_cache_parses_each_distinct_encoding_once_and_stays_bounded():
    from icnd.codec import encode
    from icnd.reduction.group import DescriptorCache

    wires = [encode(GroupDescriptor.create(f"g{i}", ["w1", f"m{i}@b"]).to_data()) for i in range(6)]
    cache = DescriptorCache(max_entries=4, max_bytes=10 * len(wires[0]))
    first = cache.parse(wires[0])
    assert first == GroupDescriptor.create("g0", ["w1", "m0@b"])
    assert cache.parse(bytes(wires[0])) is first and (cache.hits, cache.misses) == (1, 1)
    for w in wires[1:]:
        cache.parse(w)
    assert len(cache) == 4 and cache.bytes == sum(map(len, wires[2:]))  # the oldest two went
    assert cache.parse(wires[0]) == first and cache.misses == 7  # parsed again, equal
    small = DescriptorCache(max_entries=100, max_bytes=2 * len(wires[0]) + 10)
    for w in wires:
        small.parse(w)
    assert len(small) == 2 and small.bytes <= small.max_bytes
    for bad in (b"\x00junk", encode(GroupDescriptor.create("g", ["a"]).to_data())[:-3]):
        with pytest.raises(ValueError):
            cache.parse(bad)
        assert bad not in cache._parsed
