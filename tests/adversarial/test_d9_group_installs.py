"""D9: a flood of group announcements must not take the node's own `group create`.

The attack (sans-IO, through the node's ``/node/<n>/group/install`` producer,
as announcements arriving from the network): ~1,000 signed announcements
filled the group table (1,024, never expiring) and the node's own local
``group create`` then failed ``507 too many groups``.  Now remote installs
have a per-source quota, cannot take a reserve kept for local groups, expire
when unused, and every refusal is a counted 507.
"""

from __future__ import annotations

import msgpack

from icnd.codec import encode
from icnd.name import Name, generic
from icnd.packet import ContentType, Data, Interest
from icnd.reduction.contrib import ContributionStore, GroupTable
from icnd.reduction.group import GroupDescriptor
from icnd.reduction.service import INSTALL, ReductionService
from icnd.security import Ed25519Key

NODE = Name("/node/a")


class _Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def _service(groups: GroupTable, clock: _Clock) -> ReductionService:
    key = Ed25519Key.generate(NODE)
    return ReductionService(NODE, key, groups, ContributionStore(groups, "a"), deliver=lambda d: None, clock=clock)


def _announce(svc: ReductionService, signer: Ed25519Key, name: str) -> str | None:
    """Send one announcement as a peer would; the refusal's code, or None if installed."""
    data = signer.sign(GroupDescriptor.create(name, ["w1@b", "w2@c"]).to_data())
    params = msgpack.packb({"desc": encode(data), "key": signer.public_bytes()})
    interest = Interest.with_params(NODE.append_wire(generic("group")).append_wire(INSTALL), params)
    answer = svc._install_group(interest)
    assert isinstance(answer, Data)
    if answer.content_type == ContentType.ERROR:
        return bytes(answer.content).decode("utf-8", "replace")
    return None


def test_announcement_flood_leaves_room_for_local_group_create() -> None:
    clock = _Clock()
    groups = GroupTable()  # the node's defaults
    groups.clock = clock
    svc = _service(groups, clock)
    refused = 0
    signers = [Ed25519Key.generate(Name(f"/node/evil{i}")) for i in range(40)]
    for i in range(1100):  # the attack: more announcements than the table holds, from many keys
        if _announce(svc, signers[i % len(signers)], f"flood{i}") is not None:
            refused += 1
    assert refused > 0
    # the node's own group create still works, more than once
    for i in range(8):
        desc = GroupDescriptor.create(f"mine{i}", ["w1", "w2@b"], version=groups.next_version(f"mine{i}"))
        svc.create_group(desc)
        assert groups.get(f"mine{i}")[0] == desc
    assert len(groups) <= groups.max_groups
    counters = groups.counters
    assert counters["groups_refused_full"] + counters["groups_refused_source"] == refused


def test_one_source_is_held_to_its_quota() -> None:
    clock = _Clock()
    groups = GroupTable()
    groups.clock = clock
    svc = _service(groups, clock)
    evil = Ed25519Key.generate(Name("/node/evil"))
    results = [_announce(svc, evil, f"g{i}") for i in range(200)]
    installed = sum(r is None for r in results)
    assert installed < 200 and installed == groups.per_source
    assert all(r is None or "too many groups announced by this key" in r for r in results)
    # another (honest) source still gets its group in
    honest = Ed25519Key.generate(Name("/node/b"))
    assert _announce(svc, honest, "real") is None


def test_unused_remote_groups_expire() -> None:
    clock = _Clock()
    groups = GroupTable()
    groups.clock = clock
    svc = _service(groups, clock)
    evil = Ed25519Key.generate(Name("/node/evil"))
    honest = Ed25519Key.generate(Name("/node/b"))
    assert _announce(svc, honest, "used") is None
    n = 0
    while _announce(svc, evil, f"g{n}") is None:
        n += 1
    assert _announce(svc, evil, "one-more") is not None
    clock.now += 3000  # the default idle time is an hour (group_remote_idle_s)
    groups.get("used")  # in use: kept
    clock.now += 3000
    assert _announce(svc, evil, "one-more") is None  # the idle ones expired: room again
    assert groups.latest("g0") is None and groups.latest("used") is not None
    assert groups.counters["groups_expired"] >= n
