"""The sans-IO link-state router (icnd.core.routing) on an explicit clock."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd.codec import encode
from icnd.core.routing.lsdb import Announcement, LinkState, decode_record, encode_record, record_name
from icnd.core.routing.paths import multipath
from icnd.core.routing.router import ROUTING_PREFIX, Router, RouterConfig, Transmit
from icnd.errors import BoundsExceeded, DecodeError, VerificationError
from icnd.name import Name
from icnd.packet import Data, Interest
from icnd.security import make_data
from icnd.topology.routes import derive_routes
from icnd.topology.spec import parse

from tests.core.routing.routing_net import Net, accept_all, bring_up, digest_sign


def line(*names: str, config: RouterConfig | None = None) -> Net:
    net = Net(config)
    for n in names:
        net.add(n).set_prefixes({f"/node/{n}": (None, None)}, 0.0)
    for a, b in zip(names, names[1:]):
        net.link(a, b)
    return net


def test_line_converges_and_routes_point_along_it() -> None:
    net = line("a", "b", "c", "d")
    net.run(2.0)
    assert net.converged()
    assert net.next_hops("a", "/node/d") == [("b", 3)]
    assert net.next_hops("d", "/node/a") == [("c", 3)]
    assert net.next_hops("b", "/node/a") == [("a", 1)]
    # nothing routes to its own prefix
    assert "/node/a" not in net.fib["a"]


def test_multipath_matches_the_topology_definition_on_a_grid() -> None:
    text = "\n".join([f"[nodes.n{r}{c}]" for r in range(3) for c in range(3)])
    links = []
    for r in range(3):
        for c in range(3):
            if c < 2:
                links.append((f"n{r}{c}", f"n{r}{c + 1}", 1 + (r + c) % 3))
            if r < 2:
                links.append((f"n{r}{c}", f"n{r + 1}{c}", 1))
    text += "\n" + "\n".join(f'[[links]]\nends = ["{a}", "{b}"]\ncost = {k}' for a, b, k in links)
    spec = parse(text, "grid.toml")
    net = Net()
    for name in spec.nodes:
        net.add(name).set_prefixes({f"/node/{name}": (None, None)}, 0.0)
    for a, b, k in links:
        net.link(a, b, cost=k)
    net.run(3.0)
    expected = derive_routes(spec)
    for name in spec.nodes:
        want = sorted((r.prefix, r.via, r.cost) for r in expected[name])
        got = sorted((p, via, cost) for p in net.fib[name] for via, cost in net.next_hops(name, p))
        assert got == want, name


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 8).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(1, 5)), min_size=n, max_size=3 * n),
)))
def test_multipath_equals_derive_routes_on_random_graphs(case: tuple[int, list[tuple[int, int, int]]]) -> None:
    n, raw = case
    edges: dict[frozenset[int], int] = {}
    for a, b, c in raw:
        if a != b:
            edges.setdefault(frozenset({a, b}), c)
    text = "\n".join(f"[nodes.n{i}]" for i in range(n)) + "\n" + "\n".join(
        f'[[links]]\nends = ["n{min(e)}", "n{max(e)}"]\ncost = {c}' for e, c in edges.items())
    spec = parse(text, "random.toml")
    adj: dict[str, dict[str, int]] = {f"n{i}": {} for i in range(n)}
    for e, c in edges.items():
        a, b = sorted(e)
        adj[f"n{a}"][f"n{b}"] = c
        adj[f"n{b}"][f"n{a}"] = c
    origins = {f"/node/n{i}": [f"n{i}"] for i in range(n)}
    for name, routes in derive_routes(spec).items():
        got = sorted((p, h.via, h.cost) for p, hops in multipath(adj, name, origins).items() for h in hops)
        assert got == sorted((r.prefix, r.via, r.cost) for r in routes)


def test_a_cut_link_reconverges_within_the_dead_interval() -> None:
    net = line("a", "b", "c")
    net.link("a", "c", cost=5)
    net.run(2.0)
    assert net.next_hops("a", "/node/c") == [("b", 2), ("c", 5)]
    net.cut("b", "c")
    net.run(2.0 + 3.0 + 0.5)  # dead interval 3 s, hold-down 0.2 s
    assert net.next_hops("a", "/node/c") == [("c", 5)]
    assert net.next_hops("b", "/node/c") == [("a", 6)]
    net.heal("b", "c")
    net.run(8.0)
    assert net.next_hops("a", "/node/c") == [("b", 2), ("c", 5)]


def test_a_dead_node_loses_its_routes_and_its_record_ages_out() -> None:
    cfg = RouterConfig(refresh=5.0, lifetime=8.0)
    net = line("a", "b", "c", config=cfg)
    net.run(2.0)
    net.kill("c")
    net.run(6.0)
    assert "/node/c" not in net.fib["a"] and "/node/c" not in net.fib["b"]
    assert "/node/c" in net.routers["a"].lsdb  # unreachable, not yet aged out
    net.run(12.0)
    assert "/node/c" not in net.routers["a"].lsdb
    assert net.routers["a"].counters["records_expired"] == 1
    # b and a keep refreshing theirs
    assert net.routers["a"].lsdb.get("/node/b") is not None


def test_a_restarted_node_outgrows_its_previous_versions() -> None:
    net = line("a", "b")
    net.run(2.0)
    before = net.routers["a"].lsdb.version_of("/node/b")
    assert before >= 2
    net.kill("b")
    net.run(6.0)
    fresh = net.restart("b")
    net.announce("b", {"/node/b": (None, None), "/x": (None, None)})
    net.run(10.0)
    assert fresh.version > before
    assert net.routers["a"].lsdb.version_of("/node/b") == fresh.version
    assert net.next_hops("a", "/x") == [("b", 1)]


def test_anycast_gets_a_hop_toward_every_origin_with_their_capacity() -> None:
    net = line("h1", "r", "h2")
    net.add("c").set_prefixes({"/node/c": (None, None)}, 0.0)
    net.link("c", "r")
    net.routers["h1"].set_prefixes({"/node/h1": (None, None), "/fn/f": (4, 0)}, 0.0)
    net.routers["h2"].set_prefixes({"/node/h2": (None, None), "/fn/f": (1, 0)}, 0.0)
    net.run(2.0)
    hops = {net.links[("r", h.face)][0]: (h.cost, h.capacity) for h in net.fib["r"]["/fn/f"]}
    assert hops == {"h1": (1, 4), "h2": (1, 1)}
    (only,) = net.fib["c"]["/fn/f"]
    assert (only.cost, only.capacity) == (2, 5)  # both hosts at the same cost behind r


def test_load_only_changes_are_rate_limited() -> None:
    net = line("a", "b")
    net.run(2.0)
    a = net.routers["a"]
    originated = a.counters["originated"]
    for i in range(10):
        net.announce("a", {"/node/a": (None, None), "/fn/f": (4, i)})
        net.run(net.now + 0.05)
    # the first change (a new prefix) goes at once; the load changes at most once per load_interval
    assert a.counters["originated"] - originated <= 2
    net.run(net.now + 1.5)
    record = net.routers["b"].lsdb.get("/node/a")
    assert record is not None and Announcement("/fn/f", 4, 9) in record.state.prefixes


def test_steady_state_is_hellos_only() -> None:
    net = line("a", "b", "c")
    net.run(5.0)
    sent = dict(net.routers["b"].counters)
    net.run(15.0)
    after = net.routers["b"].counters
    assert after["syncs_out"] == sent["syncs_out"] and after["fetches_out"] == sent["fetches_out"]
    assert after["hellos_out"] - sent["hellos_out"] == 20  # 2 neighbours x 10 s


def test_refused_records_are_counted_and_not_stored() -> None:
    def refuse_b(data: Data, certs: tuple[bytes, ...]) -> bytes:
        if data.name.to_uri().startswith("/node/b/routing/ls/"):
            raise VerificationError("not b's key")
        return b""

    net = Net()
    net.add("a", verify=refuse_b).set_prefixes({"/node/a": (None, None)}, 0.0)
    net.add("b").set_prefixes({"/node/b": (None, None)}, 0.0)
    net.link("a", "b")
    net.run(5.0)
    a = net.routers["a"]
    assert "/node/b" not in a.lsdb and "/node/b" not in net.fib["a"]
    assert a.counters["records_refused"] >= 1
    assert "not b's key" in a.last_refusal
    # refused once per version: no fetch storm
    assert a.counters["fetches_out"] <= 4


def _router(name: str = "/node/a", **cfg: object) -> Router:
    return Router(Name(name), sign=digest_sign, verify=accept_all, now=0.0, config=RouterConfig(**cfg))


def _fetch_answer(r: Router, face: int, records: list[bytes]) -> list[object]:
    """Make `r` want records from a neighbour on `face`, then answer its fetch with `records`."""
    sync = Interest.with_params(ROUTING_PREFIX.append("sync"), msgpack.packb({"n": "/node/b", "v": [["/node/z", 9]]}))
    bring_up(r, face, "/node/b", 0.1)
    actions = r.on_interest(face, sync, 0.1)
    fetch = next(a.packet for a in actions if isinstance(a, Transmit) and isinstance(a.packet, Interest)
                 and a.packet.name.comps[3] == Name("/ls").comps[0])
    return r.on_data(face, make_data(fetch.name, msgpack.packb(records)), 0.2)


def _record(origin: str, version: int, prefixes: int = 1, adjacencies: int = 0) -> bytes:
    state = LinkState(origin, version, 100.0, tuple(), tuple(Announcement(f"/p/{i}") for i in range(prefixes)))
    content = encode_record(state)
    if adjacencies:
        obj = msgpack.unpackb(content)
        obj["a"] = [[f"/node/n{i}", 1] for i in range(adjacencies)]
        content = msgpack.packb(obj)
    return encode(make_data(record_name(Name(origin), version), content))


def test_an_over_announcing_node_is_refused_with_a_counter() -> None:
    r = _router(max_prefixes=10)
    r.add_neighbor(5, 1)
    _fetch_answer(r, 5, [_record("/node/z", 9, prefixes=11)])
    assert "/node/z" not in r.lsdb
    assert r.counters["records_over_bounds"] == 1
    assert "11 prefixes" in (r.last_refusal or "")


def test_oversized_and_malformed_records_are_refused() -> None:
    r = _router(max_record_bytes=2000)
    r.add_neighbor(5, 1)
    big = _record("/node/z", 9, prefixes=200)
    assert len(big) > 2000
    _fetch_answer(r, 5, [big, b"\x93garbage", encode(make_data("/node/z/routing/ls/v=3", b"\x01"))])
    assert r.counters["records_over_bounds"] == 1
    assert r.counters["records_malformed"] == 2
    assert len(r.lsdb) == 1  # its own


def test_a_malformed_record_is_counted_as_malformed_whatever_its_message_says() -> None:
    """The kind of refusal comes from the error's class (BoundsExceeded), not its text:
    a prefix that is not canonical is malformed, even when it reads "more than"."""
    r = _router()
    r.add_neighbor(5, 1)
    obj = msgpack.unpackb(encode_record(LinkState("/node/z", 9, 100.0)))
    obj["p"] = [["/more than", None, None]]
    _fetch_answer(r, 5, [encode(make_data(record_name(Name("/node/z"), 9), msgpack.packb(obj)))])
    assert "/node/z" not in r.lsdb
    assert "more than" in (r.last_refusal or "")
    assert (r.counters["records_malformed"], r.counters["records_over_bounds"]) == (1, 0)


def test_decode_record_says_over_bounds_by_its_class() -> None:
    content = encode_record(LinkState("/node/a", 1, 100.0, tuple(), tuple(Announcement(f"/p/{i}") for i in range(5))))
    with pytest.raises(BoundsExceeded):
        decode_record(Name("/node/a/routing/ls/v=1"), content, max_adjacencies=4, max_prefixes=4)


def test_a_record_whose_content_names_another_record_is_refused() -> None:
    r = _router()
    r.add_neighbor(5, 1)
    content = encode_record(LinkState("/node/z", 9, 100.0))
    forged = encode(make_data(record_name(Name("/node/y"), 9), content))
    _fetch_answer(r, 5, [forged])
    assert "/node/z" not in r.lsdb and "/node/y" not in r.lsdb
    assert r.counters["records_malformed"] == 1


def test_decode_record_rejects_garbage_with_decode_error() -> None:
    with pytest.raises(DecodeError):
        decode_record(Name("/node/a/routing/ls/v=1"), b"\xc1", max_adjacencies=4, max_prefixes=4)
    with pytest.raises(DecodeError):
        decode_record(Name("/node/a/routing/ls/v=1"), msgpack.packb({"o": 3}), max_adjacencies=4, max_prefixes=4)


def test_sync_from_a_stranger_is_ignored_and_hellos_from_anyone_answered() -> None:
    r = _router()
    sync = Interest.with_params(ROUTING_PREFIX.append("sync"), msgpack.packb({"n": "/node/b", "v": [["/node/z", 9]]}))
    assert r.on_interest(7, sync, 0.0) == [] or all(not isinstance(a, Transmit) or a.face != 7
                                                    for a in r.on_interest(7, sync, 0.0))
    assert r.counters["messages_not_neighbor"] >= 1
    hello = Interest.with_params(ROUTING_PREFIX.append("hello"), msgpack.packb({"n": "/node/b", "d": b"x",
                                                                                 "c": b"c" * 16}))
    answers = [a for a in r.on_interest(7, hello, 0.0) if isinstance(a, Transmit) and a.face == 7]
    assert len(answers) == 1 and isinstance(answers[0].packet, Data)


def test_malformed_routing_messages_never_raise() -> None:
    r = _router()
    r.add_neighbor(5, 1)
    for params in (b"\xc1", msgpack.packb([1, 2]), msgpack.packb({"v": "x"}), msgpack.packb({"n": 1, "d": 2})):
        for kind in ("hello", "sync", "ls", "other"):
            r.on_interest(5, Interest.with_params(ROUTING_PREFIX.append(kind), params), 0.0)
            r.on_data(5, make_data(ROUTING_PREFIX.append(kind), params), 0.0)
    r.on_interest(5, Interest(ROUTING_PREFIX.append("hello")), 0.0)  # no parameters
    assert r.counters["messages_malformed"] > 0


def test_requests_beyond_the_per_face_budget_are_dropped_and_counted() -> None:
    r = _router(max_requests_per_s=5)
    hello = Interest.with_params(ROUTING_PREFIX.append("hello"), msgpack.packb({"n": "/node/b", "d": b"x",
                                                                                 "c": b"c" * 16}))
    answered = sum(1 for _ in range(20) for a in r.on_interest(9, hello, 0.5) if isinstance(a, Transmit))
    assert answered == 5
    assert r.counters["messages_rate_limited"] == 15
    assert any(isinstance(a, Transmit) for a in r.on_interest(9, hello, 1.6))  # next second


def test_withdrawn_prefix_routes_are_removed() -> None:
    net = line("a", "b")
    net.routers["b"].set_prefixes({"/node/b": (None, None), "/x": (None, None)}, 0.0)
    net.run(2.0)
    assert net.next_hops("a", "/x") == [("b", 1)]
    net.announce("b", {"/node/b": (None, None)})
    net.run(3.0)
    assert "/x" not in net.fib["a"]


def test_a_new_prefix_is_routed_at_each_hop_before_the_next_hop_hears_of_it() -> None:
    """Announcements alone are routed at once (no hold-down, no Dijkstra), so a
    consumer at the far end never has a route whose next hop has none yet --
    even when that next hop's hold-down is still running (here b's is long)."""
    net = Net()
    for name in "abcd":
        config = RouterConfig(hold_down=1.0) if name == "b" else None
        net.add(name, **({"config": config} if config else {})).set_prefixes({f"/node/{name}": (None, None)}, 0.0)
    for x, y in zip("abc", "bcd"):
        net.link(x, y)
    net.run(3.0)
    net.announce("b", {"/node/b": (None, None), "/b/data": (None, None)})  # b computes now: held down 1 s
    net.run(3.5)
    computed = net.routers["b"].counters["route_computations"]
    net.announce("a", {"/node/a": (None, None), "/videos": (None, None)})
    t = net.now
    while "/videos" not in net.fib["d"]:
        t += 0.0005
        net.run(t)
        for upstream, downstream in (("b", "c"), ("c", "d")):
            if "/videos" in net.fib[downstream]:
                assert "/videos" in net.fib[upstream], (upstream, downstream, t)
        assert t < 5.0
    assert net.routers["b"].counters["route_updates_light"] >= 1
    assert net.routers["b"].counters["route_computations"] == computed  # no Dijkstra for it
