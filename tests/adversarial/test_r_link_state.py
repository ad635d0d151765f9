"""Issue #26: link-state routing attacked by a hostile peer (rows R1-R12).

Each test reproduces one attack on the sans-IO router (`Net`: routers joined
by in-memory links on an explicit clock), with real Ed25519 keys and the
node's own verifier (`routing_verifier`) where keys matter; the single
datagram of R4 is also sent to a real daemon (tests/integration/test_routing_attacks.py).  Each failed before the fix:
the exception, the route or the stored record named in its docstring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack

from icnd.codec import encode
from icnd.core.routing.lsdb import Announcement, LinkState, encode_record, record_name
from icnd.core.routing.router import ROUTING_PREFIX, Router, RouterConfig, Transmit
from icnd.daemon.routing import routing_verifier
from icnd.name import Name
from icnd.packet import Data, Interest
from icnd.security import Ed25519Key, make_data
from icnd.keyfiles import load_schema, save_certificate
from icnd.trust import Validator, issue, self_signed
from tests.core.routing.routing_net import Net, accept_all, bring_up, digest_sign, hello_answer, hellos_on

T = 1_800_000_000.0


def keyed(name: str, validator: Validator | None = None, key: Ed25519Key | None = None,
          cert_data: Data | None = None) -> dict[str, Any]:
    """Router arguments for node `name` signing with a real key (its own, unless given) and verifying as a node does."""
    key = key or Ed25519Key.generate(Name(f"/node/{name}"))
    cert = cert_data if cert_data is not None else self_signed(key, now=T).data

    def sign(n: Name, content: bytes) -> Data:
        return make_data(n, content, key=key)

    return {"sign": sign, "verify": routing_verifier(validator or Validator(clock=lambda: T)), "certs": (encode(cert),)}


def fetch_answer(r: Router, face: int, records: list[bytes], now: float) -> None:
    """Make `r` want something from its up neighbour on `face` and answer the fetch with `records`."""
    sync = Interest.with_params(ROUTING_PREFIX.append("sync"), msgpack.packb({"n": "/node/b", "v": [["/node/z", 9]]}))
    actions = r.on_interest(face, sync, now)
    (fetch,) = [a.packet for a in actions if isinstance(a, Transmit) and isinstance(a.packet, Interest)
                and a.packet.name.comps[3] == Name("/ls").comps[0]]
    r.on_data(face, make_data(fetch.name, msgpack.packb(records)), now)


def record(origin: str, version: int, prefixes: list[str], adjacencies: list[list[Any]] | None = None,
           sign: Any = digest_sign, lifetime: float = 100.0, certs: tuple[bytes, ...] = ()) -> bytes:
    content = msgpack.unpackb(encode_record(LinkState(origin, version, lifetime, (),
                                                      tuple(Announcement(p) for p in prefixes)), certs))
    content["a"] = adjacencies or []
    return encode(sign(record_name(Name(origin), version), msgpack.packb(content)))


def keyed_line() -> Net:
    """a - b - c, each with its own key, converged."""
    net = Net()
    for n in "abc":
        net.add(n, **keyed(n)).set_prefixes({f"/node/{n}": (None, None)}, 0.0)
    net.link("a", "b")
    net.link("b", "c")
    net.run(4.0)
    return net


def neighbour_b() -> Router:
    r = Router(Name("/node/a"), sign=digest_sign, verify=accept_all, now=0.0)
    r.add_neighbor(5, 1)
    bring_up(r, 5, "/node/b", 0.1)
    return r


def test_r1_a_record_announcing_a_name_that_does_not_parse_is_refused_at_decode() -> None:
    """Before: stored, then `Router._compute` raised ``bad percent-escape in '%ZZ'`` (the node exited)."""
    for bad in ("/%ZZ", "/<svg/onload=alert(1)>", "/a//b", "/" + "x" * 600):
        r = neighbour_b()
        fetch_answer(r, 5, [record("/node/z", 9, ["/ok", bad])], 0.2)
        for t in (0.3, 0.6, 1.2, 2.0):
            r.on_timer(t)
        assert "/node/z" not in r.lsdb, bad
        assert r.counters["records_malformed"] == 1, bad
        assert "/ok" not in r.routes


def test_r1_a_bad_record_does_not_travel_down_a_chain() -> None:
    """Before: the bad record propagated and every node of the chain failed on it."""
    net = Net()
    for n in "abcd":
        net.add(n).set_prefixes({f"/node/{n}": (None, None)}, 0.0)
    for x, y in ("ab", "bc", "cd"):
        net.link(x, y)
    net.run(3.0)
    b = net.routers["b"]
    face_to_a = next(f for f, nb in b.neighbors.items() if nb.name == "/node/a")
    fetch_answer(b, face_to_a, [record("/node/a", b.lsdb.version_of("/node/a") + 1, ["/%ZZ"])], net.now)
    net.run(6.0)
    for n in "bcd":
        assert net.routers[n].lsdb.get("/node/a") is not None
        assert all(p.prefix != "/%ZZ" for p in net.routers[n].lsdb.get("/node/a").state.prefixes)
    assert net.next_hops("d", "/node/a") == [("c", 3)]


def test_r4_a_sync_cannot_exhaust_or_move_the_nodes_own_version() -> None:
    """Before: 2**64-1 made the next record's version overflow (exit), 2**63-1 was copied into the
    node's own version, from any face, credited to whichever neighbour the sync named."""
    r = neighbour_b()
    before = r.version
    for face in (5, 77):  # the neighbour's own face, and a stranger's
        for ver in (2**64 - 1, 2**63 - 1):
            sync = Interest.with_params(ROUTING_PREFIX.append("sync"),
                                        msgpack.packb({"n": "/node/b", "v": [["/node/a", ver]]}))
            r.on_interest(face, sync, 0.5)
    assert r.counters["messages_not_neighbor"] >= 1 and r.counters["messages_malformed"] >= 1
    for t in (0.6, 1.0, 2.0, 5.0):
        r.on_timer(t)
    assert r.version < before + 10  # it only originated (a few versions more), never jumped


def test_r4_a_record_of_the_nodes_own_name_signed_by_another_key_is_refused() -> None:
    mine = keyed("a")
    r = Router(Name("/node/a"), now=0.0, **mine)
    r.add_neighbor(5, 1)
    r.on_timer(0.0)
    before = r.version
    forger = keyed("a")  # a fresh key, also named /node/a/KEY/...
    r.neighbors[5].up, r.neighbors[5].name, r.neighbors[5].heard_at = True, "/node/b", 0.0
    fetch_answer(r, 5, [record("/node/a", 2**63 - 1, ["/x"], sign=forger["sign"], certs=forger["certs"])], 0.1)
    assert r.counters["own_name_claimed"] == 1
    r.on_timer(0.2)
    assert r.version < before + 10


def test_r10_a_neighbour_cannot_claim_another_nodes_name() -> None:
    """Before: hellos naming /node/c from m made a route /node/c -> m (lowest cost)."""
    net = keyed_line()
    assert net.next_hops("a", "/node/c") == [("b", 2)]
    # m speaks for /node/c with its own key (honestly named /node/c/KEY/<its id>): no schema
    mallory = net.add("m", **keyed("c"))
    mallory.name, mallory.me = Name("/node/c"), "/node/c"
    mallory.set_prefixes({"/node/c": (None, None)}, net.now)
    net.link("a", "m")
    net.run(10.0)
    a = net.routers["a"]
    assert net.next_hops("a", "/node/c") == [("b", 2)]
    assert a.counters["hellos_refused"] > 0
    assert all(nb.name != "/node/c" for nb in a.neighbors.values())


def test_r10_with_a_schema_a_certified_neighbour_cannot_claim_another_name(tmp_path: Path) -> None:
    anchor = Ed25519Key.generate(Name("/net"))
    save_certificate(self_signed(anchor, now=T - 86400), tmp_path / "anchor.cert")
    (tmp_path / "schema.toml").write_text(
        'anchors = ["anchor.cert"]\n'
        '[[rule]]\nname = "nodes"\ndata = "/node/<n>/<**>"\nsigner = "/node/<n>/KEY/<*>"\n'
        '[[rule]]\nname = "node-certs"\ndata = "/node/<n>/KEY/<**>"\nsigner = "/net/KEY/<*>"\n')
    schema = load_schema(tmp_path / "schema.toml")

    def node(n: str) -> dict[str, Any]:
        key = Ed25519Key.generate(Name(f"/node/{n}"))
        return keyed(n, Validator(schema, clock=lambda: T), key, issue(anchor, key, now=T - 86400).data)

    r = Router(Name("/node/a"), now=0.0, **node("a"))
    r.add_neighbor(5, 1)
    m = node("m")  # certified, as /node/m
    r.link_state(5, False, 0.1)
    (hello,) = hellos_on(r.link_state(5, True, 0.1), 5)
    r.on_data(5, hello_answer(hello, "/node/c", sign=m["sign"], certs=m["certs"]), 0.1)
    assert not r.neighbors[5].up and r.counters["hellos_refused"] == 1
    (hello,) = hellos_on(r.link_state(5, False, 0.2) + r.link_state(5, True, 0.2), 5)
    r.on_data(5, hello_answer(hello, "/node/m", sign=m["sign"], certs=m["certs"]), 0.2)
    assert r.neighbors[5].up and r.neighbors[5].name == "/node/m"


def test_r10b_a_hello_name_that_is_no_node_name_is_never_copied_into_the_record() -> None:
    for bad in ("nope", "/" + "x" * 600, "/%ZZ"):
        r = Router(Name("/node/a"), sign=digest_sign, verify=accept_all, now=0.0)
        r.add_neighbor(5, 1)
        r.link_state(5, False, 0.1)
        (hello,) = hellos_on(r.link_state(5, True, 0.1), 5)
        answer = hello_answer(hello, "/node/b")
        content = msgpack.unpackb(answer.content)
        content["n"] = bad
        r.on_data(5, make_data(answer.name, msgpack.packb(content)), 0.1)
        r.on_timer(0.5)
        assert not r.neighbors[5].up and r.counters["messages_malformed"] == 1
        assert r.lsdb.get("/node/a").state.adjacencies == ()


def test_r3_without_a_schema_a_fresh_key_named_for_a_live_node_is_refused() -> None:
    """Before: c's record signed by any key named /node/c/KEY/<id>, version 2**63-1, was accepted
    and c's own records were refused everywhere for as long as the attacker chose."""
    net = keyed_line()
    a = net.routers["a"]
    real = a.lsdb.get("/node/c")
    forger = keyed("c")
    face = next(f for f, nb in a.neighbors.items() if nb.name == "/node/b")
    fetch_answer(a, face, [record("/node/c", 2**63 - 1, ["/node/c"], [["/node/a", 1]], sign=forger["sign"],
                                  lifetime=7 * 86400, certs=forger["certs"])], net.now)
    assert a.counters["records_wrong_key"] == 1
    assert a.lsdb.get("/node/c").state.version == real.state.version
    net.run(net.now + 700)  # c refreshes: its own records are still taken
    assert a.lsdb.get("/node/c").state.version > real.state.version
    assert net.next_hops("a", "/node/c") == [("b", 2)]


def test_r3_a_node_restarted_with_a_new_key_gets_its_routes_back() -> None:
    """The other side of trust on first use: c's name is free again once c is gone (orphaned)."""
    net = keyed_line()
    net.kill("c")
    net.run(10.0)
    old = net.routers["c"]
    fresh = Router(old.name, now=net.now, version_base=int(net.now * 1000), **keyed("c"))
    for nb in old.neighbors.values():
        fresh.add_neighbor(nb.face, nb.cost, nb.uri)
    net.routers["c"] = fresh
    net.alive["c"] = True
    fresh.set_prefixes({"/node/c": (None, None)}, net.now)
    net._schedule(net.now, "c")
    net.run(20.0)
    assert net.next_hops("a", "/node/c") == [("b", 2)]
    assert net.routers["b"].counters["keys_replaced"] >= 1


def test_r7_a_flood_of_invented_origins_is_capped_per_neighbour_and_computation_is_held_down() -> None:
    """Before: 1,100 invented origins were all stored, each one a full recomputation over every prefix."""
    r = Router(Name("/node/a"), sign=digest_sign, verify=accept_all, now=0.0,
               config=RouterConfig(max_origins_per_neighbor=100))
    r.add_neighbor(5, 1)
    bring_up(r, 5, "/node/b", 0.1)
    r.on_timer(0.5)
    now = 1.0
    sent = 0
    while sent < 300:
        batch = [record(f"/node/x{i}", 1, [f"/x{i}/p{j}" for j in range(50)], [["/node/b", 1]])
                 for i in range(sent, sent + 20)]
        fetch_answer(r, 5, batch, now)
        sent += 20
        now += 0.02
    assert r.counters["records_origin_cap"] == 200
    assert len(r.lsdb) == 1 + 100  # itself and the cap
    computations = r.counters["route_computations"]
    assert computations <= 4  # held down, not one per record


def test_r7_a_fetch_answer_larger_than_the_documented_bound_is_refused() -> None:
    r = neighbour_b()
    big = [record(f"/node/x{i}", 1, [f"/p{j}" for j in range(200)]) for i in range(80)]
    assert sum(map(len, big)) > 2 * 64 * 1024
    fetch_answer(r, 5, big, 0.2)
    assert r.counters["replies_over_bounds"] == 1 and len(r.lsdb) == 1


def test_r12_a_record_replayed_after_it_expired_is_not_stored_again() -> None:
    r = neighbour_b()
    wire = record("/node/z", 5, ["/z"], lifetime=10.0)
    fetch_answer(r, 5, [wire], 0.2)
    assert "/node/z" in r.lsdb
    for t in range(1, 13):
        bring_up(r, 5, "/node/b", float(t))
        r.on_timer(float(t) + 0.5)
    assert "/node/z" not in r.lsdb and r.counters["records_expired"] == 1
    fetch_answer(r, 5, [wire], 13.0)
    assert "/node/z" not in r.lsdb and r.counters["records_replayed"] == 1
    fetch_answer(r, 5, [record("/node/z", 6, ["/z"], lifetime=10.0)], 13.5)  # a newer one is taken
    assert r.lsdb.version_of("/node/z") == 6
