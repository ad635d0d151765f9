"""Unit tests for the Routing Information Base (icnd.core.tables.rib) and the forwarder's use of it."""

from __future__ import annotations

import pytest

from icnd.core.fw.forwarder import Forwarder
from icnd.core.tables.fib import Fib, TableFull
from icnd.core.tables.rib import ORIGIN_APP, ORIGIN_ROUTING, ORIGIN_STATIC, Rib, route_bytes
from icnd.name import Name, rnp
from icnd.packet import Interest

P = Name("/p")
Q = Name("/q")


def fib_hops(fib: Fib, prefix: Name) -> dict[int, int]:
    entry = fib.get(prefix)
    return dict(entry.costs) if entry is not None else {}


def test_add_writes_the_fib_and_remove_clears_it():
    rib = Rib(Fib())
    rib.add(P, 1, 10, ORIGIN_STATIC)
    assert fib_hops(rib.fib, P) == {1: 10}
    assert len(rib) == 1
    assert rib.remove(P, 1, ORIGIN_STATIC)
    assert rib.fib.get(P) is None and len(rib) == 0 and rib.bytes_used == 0
    assert not rib.remove(P, 1, ORIGIN_STATIC)


def test_cheapest_origin_per_face_wins_and_the_other_comes_back():
    rib = Rib(Fib())
    rib.add(P, 1, 10, ORIGIN_ROUTING)
    rib.add(P, 1, 3, ORIGIN_STATIC)
    rib.add(P, 2, 7, ORIGIN_ROUTING)
    assert fib_hops(rib.fib, P) == {1: 3, 2: 7}
    assert rib.remove(P, 1, ORIGIN_STATIC)
    assert fib_hops(rib.fib, P) == {1: 10, 2: 7}  # the routing route is still there
    rib.add(P, 1, 20, ORIGIN_APP)
    assert fib_hops(rib.fib, P) == {1: 10, 2: 7}  # a dearer route does not displace the cheaper one


def test_routes_sorted_cheapest_first_and_ties_by_origin_app_static_routing():
    rib = Rib(Fib())
    rib.add(P, 5, 4, ORIGIN_ROUTING)
    rib.add(P, 5, 4, ORIGIN_STATIC)
    rib.add(P, 5, 4, ORIGIN_APP)
    rib.add(P, 2, 1, ORIGIN_ROUTING)
    order = [(r.face, r.cost, r.origin) for r in rib.routes(P)]
    assert order == [(2, 1, "routing"), (5, 4, "app"), (5, 4, "static"), (5, 4, "routing")]
    assert fib_hops(rib.fib, P) == {2: 1, 5: 4}


def test_cost_update_of_an_existing_route():
    rib = Rib(Fib())
    rib.add(P, 1, 5, ORIGIN_STATIC)
    rib.add(P, 1, 2, ORIGIN_STATIC)
    assert fib_hops(rib.fib, P) == {1: 2} and len(rib) == 1


def test_remove_face_removes_every_origin_through_it():
    rib = Rib(Fib())
    for origin in (ORIGIN_APP, ORIGIN_STATIC, ORIGIN_ROUTING):
        rib.add(P, 1, 1, origin)
    rib.add(Q, 1, 1, ORIGIN_STATIC)
    rib.add(Q, 2, 1, ORIGIN_STATIC)
    assert rib.remove_face(1) == 4
    assert rib.fib.get(P) is None and fib_hops(rib.fib, Q) == {2: 1}
    assert rib.remove_face(1) == 0
    assert [r.face for r in rib] == [2]


def test_set_routes_replaces_one_origin_only():
    rib = Rib(Fib())
    rib.add(P, 1, 0, ORIGIN_APP)
    rib.set_routes(P, ORIGIN_ROUTING, {1: 5, 2: 6, 3: 7})
    assert fib_hops(rib.fib, P) == {1: 0, 2: 6, 3: 7}
    rib.set_routes(P, ORIGIN_ROUTING, {3: 1, 4: 2})
    assert fib_hops(rib.fib, P) == {1: 0, 3: 1, 4: 2}
    assert {(r.face, r.origin) for r in rib.routes(P)} == {(1, "app"), (3, "routing"), (4, "routing")}
    rib.set_routes(P, ORIGIN_ROUTING, {})
    assert fib_hops(rib.fib, P) == {1: 0} and len(rib) == 1


def test_remove_origin():
    rib = Rib(Fib())
    rib.set_routes(P, ORIGIN_ROUTING, {1: 5, 2: 6})
    rib.set_routes(Q, ORIGIN_ROUTING, {1: 5})
    rib.add(Q, 3, 1, ORIGIN_STATIC)
    assert rib.remove_origin(ORIGIN_ROUTING) == 3
    assert rib.fib.get(P) is None and fib_hops(rib.fib, Q) == {3: 1}


def test_change_listeners_hear_each_changed_prefix_once():
    rib = Rib(Fib())
    heard: list[str] = []
    rib.on_change.append(lambda prefix: heard.append(prefix.to_uri()))
    rib.add(P, 1, 1, ORIGIN_STATIC)
    rib.add(P, 1, 1, ORIGIN_STATIC)  # identical: no change
    rib.add(P, 1, 2, ORIGIN_STATIC)  # a cost change is a change
    rib.set_routes(Q, ORIGIN_ROUTING, {1: 1, 2: 2})
    rib.set_routes(Q, ORIGIN_ROUTING, {2: 2, 1: 1})  # the same routes: no change
    rib.remove_face(1)
    assert heard[:3] == ["/p", "/p", "/q"] and sorted(heard[3:]) == ["/p", "/q"]
    heard.clear()
    assert not rib.remove(P, 9, ORIGIN_STATIC)
    assert heard == []


def test_bounds_in_routes_refuse_and_count_and_change_nothing():
    rib = Rib(Fib(), max_routes=2)
    rib.add(P, 1, 1, ORIGIN_STATIC)
    rib.add(P, 2, 1, ORIGIN_STATIC)
    with pytest.raises(TableFull, match="RIB is full"):
        rib.add(P, 3, 1, ORIGIN_STATIC)
    with pytest.raises(TableFull):
        rib.set_routes(Q, ORIGIN_ROUTING, {1: 1})
    assert rib.refused == 2 and len(rib) == 2 and fib_hops(rib.fib, P) == {1: 1, 2: 1}
    assert rib.fib.get(Q) is None
    rib.add(P, 1, 9, ORIGIN_STATIC)  # updating an existing route needs no room
    rib.set_routes(P, ORIGIN_STATIC, {3: 1, 4: 1})  # replacing within the bound is fine
    assert fib_hops(rib.fib, P) == {3: 1, 4: 1}


def test_bounds_in_bytes():
    rib = Rib(Fib(), max_bytes=route_bytes(P) * 2)
    rib.add(P, 1, 1, ORIGIN_STATIC)
    rib.add(P, 1, 1, ORIGIN_APP)
    assert rib.bytes_used == 2 * route_bytes(P)
    with pytest.raises(TableFull, match="bytes"):
        rib.add(P, 1, 1, ORIGIN_ROUTING)
    assert rib.refused == 1


def test_fib_refusal_leaves_rib_and_fib_unchanged():
    rib = Rib(Fib(max_entries=1, max_nexthops=2))
    rib.add(P, 1, 1, ORIGIN_STATIC)
    with pytest.raises(TableFull):
        rib.add(Q, 1, 1, ORIGIN_STATIC)  # the FIB has no room for a second entry
    assert rib.get(Q, 1, ORIGIN_STATIC) is None and len(rib) == 1
    rib.set_routes(P, ORIGIN_ROUTING, {2: 5})
    with pytest.raises(TableFull):
        rib.set_routes(P, ORIGIN_ROUTING, {2: 4, 3: 5})  # a third next hop: refused, all or nothing
    assert fib_hops(rib.fib, P) == {1: 1, 2: 5}
    assert {(r.face, r.cost) for r in rib.routes(P)} == {(1, 1), (2, 5)}
    assert rib.refused == 2


def test_bad_input_is_refused_before_any_change():
    rib = Rib(Fib())
    with pytest.raises(ValueError, match="origin"):
        rib.add(P, 1, 1, "bgp")
    with pytest.raises(ValueError, match="cost"):
        rib.add(P, 1, -1, ORIGIN_STATIC)
    with pytest.raises(ValueError, match="rnp"):
        rib.add(Name("/p").append_wire(rnp(bytes(16))), 1, 1, ORIGIN_STATIC)
    with pytest.raises(ValueError, match="cost"):
        rib.set_routes(P, ORIGIN_ROUTING, {1: -3})
    assert len(rib) == 0 and len(rib.fib) == 0


def test_expiry_removes_only_routes_that_are_due_and_not_renewed():
    scheduled: list[float] = []
    rib = Rib(Fib(), schedule=scheduled.append)
    rib.add(P, 1, 1, ORIGIN_APP, expires=10.0)
    rib.add(Q, 1, 1, ORIGIN_APP, expires=10.0)
    rib.add(Q, 1, 1, ORIGIN_APP, expires=30.0)  # renewed
    rib.add(P, 2, 1, ORIGIN_STATIC)  # no expiry
    assert scheduled == [10.0, 10.0, 30.0] and rib.next_expiry() == 10.0
    assert rib.expire(9.9) == 0
    assert rib.expire(10.0) == 1
    assert fib_hops(rib.fib, P) == {2: 1} and fib_hops(rib.fib, Q) == {1: 1}
    assert rib.expire(29.0) == 0 and rib.next_expiry() == 30.0
    assert rib.expire(30.0) == 1 and rib.fib.get(Q) is None and rib.next_expiry() is None


def test_renewal_without_expiry_makes_a_route_permanent():
    rib = Rib(Fib())
    rib.add(P, 1, 1, ORIGIN_APP, expires=5.0)
    rib.add(P, 1, 1, ORIGIN_APP)
    assert rib.expire(100.0) == 0 and fib_hops(rib.fib, P) == {1: 1}


def test_stale_expiries_are_compacted():
    rib = Rib(Fib())
    for i in range(1000):
        rib.add(P, 1, 1, ORIGIN_APP, expires=1000.0 + i)  # one route, refreshed over and over
    assert len(rib._expiries) <= 2 * len(rib) + 65


# --- the forwarder ---------------------------------------------------------------------------


def test_forwarder_routes_through_its_rib_and_a_face_down_drops_them():
    fw = Forwarder()
    fw.add_face(1)
    fw.add_face(2)
    fw.add_route(P, 1, 3)
    fw.add_route(P, 2, 1, ORIGIN_APP)
    assert {r.origin for r in fw.rib.routes(P)} == {"static", "app"}
    assert fib_hops(fw.fib, P) == {1: 3, 2: 1}
    assert fw.table_sizes()["rib_routes"] == 2
    fw.on_face_down(2)
    assert fib_hops(fw.fib, P) == {1: 3} and len(fw.rib) == 1


def test_forwarder_times_route_expiry():
    fw = Forwarder()
    fw.add_face(1, local=True)
    fw.add_face(2)
    fw.add_route(P, 2, 0, ORIGIN_APP, expires=5.0)
    assert fw.next_deadline() == 5.0
    sent = fw.on_packet(1, Interest(Name("/p/x"), nonce=1), 1.0)
    assert [s.face for s in sent] == [2]
    fw.on_timer(5.0)
    assert fw.fib.get(P) is None
    sent = fw.on_packet(1, Interest(Name("/p/y"), nonce=2), 6.0)
    assert [s.face for s in sent] == [1]  # no route: Nacked back
    assert fw.counters.no_route == 1


def test_use_rib_keeps_routes_and_their_expiry_timers():
    old = Forwarder()
    old.add_route(P, 2, 0, ORIGIN_APP, expires=5.0)
    new = Forwarder()
    new.use_rib(old.rib)
    assert new.fib is old.rib.fib and fib_hops(new.fib, P) == {2: 0}
    assert new.next_deadline() == 5.0
    new.add_route(Q, 3, 1)
    new.on_timer(5.0)
    assert new.fib.get(P) is None and fib_hops(new.fib, Q) == {3: 1}
