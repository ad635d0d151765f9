"""Multi-forwarder scenarios on the virtual clock (icnd.sim.network)."""

from __future__ import annotations

from icnd import Data, Name
from icnd.sim.network import SimNetwork


def face_toward(net: SimNetwork, node: str, peer: str) -> int:
    return next(f for f, (_, p, _) in net.nodes[node].peers.items() if p.name == peer)


def producer(net: SimNetwork, node: str, prefix: str):
    app = net.app(node)
    app.serve(prefix, lambda i: Data(i.name, b"payload:" + i.name.to_uri().encode(), freshness_ms=10_000))
    return app


def test_five_node_line_delivers_everything_and_caches() -> None:
    net = SimNetwork(seed=3)
    names = "abcde"
    for n in names:
        net.add_node(n)
    for x, y in zip(names, names[1:]):
        net.link(x, y, delay=0.002)
    for x, y in zip(names, names[1:]):
        net.nodes[x].fw.add_route(Name("/p"), face_toward(net, x, y))
    producer(net, "e", "/p")
    consumer = net.app("a")
    fetches = [consumer.fetch(f"/p/{i}") for i in range(50)]
    net.run(until=10)
    assert all(isinstance(f.result, Data) for f in fetches)
    assert all(f.result.content == b"payload:" + f.name.to_uri().encode() for f in fetches)
    assert all(abs(f.rtt - 0.016) < 1e-9 for f in fetches)  # 4 links each way
    # a second consumer one hop from the first gets every answer from a's neighbour b's cache
    second = net.app("b")
    again = [second.fetch(f"/p/{i}") for i in range(50)]
    net.run(until=20)
    assert all(isinstance(f.result, Data) for f in again)
    assert net.nodes["b"].fw.counters.cs_hits == 50
    assert net.nodes["e"].fw.counters.interests_in == 50


def test_diamond_with_lossy_link_delivers_every_data_with_retransmission() -> None:
    net = SimNetwork(seed=11)
    for n in "abcd":
        net.add_node(n)
    lossy = net.link("a", "b", delay=0.005, loss=0.3)
    net.link("a", "c", delay=0.010)
    net.link("b", "d", delay=0.005)
    net.link("c", "d", delay=0.010)
    net.nodes["a"].fw.add_route(Name("/p"), face_toward(net, "a", "b"), 1)
    net.nodes["a"].fw.add_route(Name("/p"), face_toward(net, "a", "c"), 2)
    net.nodes["b"].fw.add_route(Name("/p"), face_toward(net, "b", "d"), 1)
    net.nodes["c"].fw.add_route(Name("/p"), face_toward(net, "c", "d"), 1)
    producer(net, "d", "/p")
    consumer = net.app("a")
    fetches = [consumer.fetch(f"/p/{i}", lifetime_ms=1000, retx_ms=100, retries=8) for i in range(200)]
    net.run(until=30)
    assert all(isinstance(f.result, Data) for f in fetches), [f.name for f in fetches if not f.done]
    assert lossy.dropped > 0
    retried = [f for f in fetches if f.attempts > 1]
    assert retried, "the lossy link should have forced retransmissions"
    assert net.nodes["a"].fw.counters.retransmissions >= len(retried)
    # retransmissions fail over to the untried path through c
    assert net.nodes["c"].fw.counters.interests_in > 0
    # every PIT drains once the exchanges are over
    net.run(until=60)
    assert all(len(node.fw.pit) == 0 for node in net.nodes.values())


def test_nack_no_route_travels_back_over_hops() -> None:
    net = SimNetwork()
    for n in "abc":
        net.add_node(n)
    net.link("a", "b")
    net.link("b", "c")
    net.nodes["a"].fw.add_route(Name("/p"), face_toward(net, "a", "b"))
    net.nodes["b"].fw.add_route(Name("/p"), face_toward(net, "b", "c"))
    consumer = net.app("a")
    f = consumer.fetch("/p/x", retries=0)
    net.run(until=5)
    assert f.result is not None and f.result.reason.label == "no-route"
    assert f.rtt < 0.01
