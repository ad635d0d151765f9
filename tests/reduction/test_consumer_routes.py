"""The consumer's side of an unreachable rendezvous (the real client code
driven over the simulator, with trio's mock clock following it).

- Issue #27: a segment whose rendezvous the network has no route toward
  fails over to the next node of `GroupDescriptor.rendezvous_order`, which
  takes the role for the requests that name it (their ``step``).
- Issue #26 F1: when no rendezvous is reachable, `reduce` waits for a route
  (backing off, never past its deadline) instead of failing at the first
  no-route Nack, and the final error says how long it waited.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import trio
import trio.testing

from icnd.errors import Nacked
from icnd.name import Name
from icnd.reduction import consumer
from icnd.reduction.aggregate import Aggregator
from icnd.reduction.group import REDUCE, GroupDescriptor, ReduceRequest, reduce_interest
from icnd.sim.network import SimNetwork
from tests.adversarial.test_d12_partial_segments import MEMBERS, SimEndpoint, _network

ARRAYS = {m: np.full(16, i + 1, np.int64) for i, m in enumerate(MEMBERS)}


def _run(net: SimNetwork, wire: bytes, at: str, timeout: float,
         meanwhile: Callable[[], Any] | None = None) -> tuple[Any, float]:
    """`consumer.reduce` of round 1 from node `at`: (result or exception, seconds taken)."""
    clock = trio.testing.MockClock(autojump_threshold=0)
    out: list[Any] = []

    async def main() -> None:
        ep = SimEndpoint(net, net.app(at), wire, clock)
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ep.drive)
            if meanwhile is not None:
                nursery.start_soon(meanwhile)
            try:
                out.append(await consumer.reduce(ep, "g", 1, "sum", timeout=timeout,  # type: ignore[arg-type]
                                                 partial=False))
            except Exception as exc:
                out.append(exc)
            out.append(trio.current_time() - start)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=clock)
    return out[0], out[1]


def _aggregator(net: SimNetwork, node: str) -> Aggregator:
    agg = net.nodes[node].fw.hooks[REDUCE]
    assert isinstance(agg, Aggregator)
    return agg


def test_rendezvous_order_is_a_function_of_the_descriptor() -> None:
    desc = GroupDescriptor.create("g", ["w1", "w2", "m@w2", "w3"], rendezvous=["w3", "r"])
    assert desc.rendezvous_order(0) == ("w3", "r", "w1", "w2")
    assert desc.rendezvous_order(1) == ("r", "w3", "w1", "w2")
    assert [desc.rendezvous_for(1, k) for k in range(4)] == list(desc.rendezvous_order(1))
    spread = GroupDescriptor.create("g", ["a", "b", "c"])  # default: the members' nodes
    assert spread.rendezvous_order(4) == ("b", "c", "a")


def test_a_request_names_its_rendezvous_and_any_node_takes_the_role() -> None:
    net, wire = _network(ARRAYS)
    app = net.app("w4")
    interest = reduce_interest(wire, "g", "sum", 1, 0, step=2)  # order: r, w1, w2, ...
    assert ReduceRequest.parse(interest).rendezvous() == "w2"
    app.send(interest)
    net.run(until=2.0)
    (data,) = [p for p in app.received if p.name == interest.name]
    assert _aggregator(net, "w2").counters["agg_roots"] == 1
    assert _aggregator(net, "r").counters["agg_roots"] == 0
    with pytest.raises(ValueError, match="rendezvous step"):
        ReduceRequest.parse(reduce_interest(wire, "g", "sum", 1, 0, step=6))


def test_an_unreachable_rendezvous_is_passed_over() -> None:
    net, wire = _network(ARRAYS)
    fw = net.nodes["w4"].fw
    for face in list(fw.fib.longest_match(Name("/node/r").comps).faces):  # w4 lost its routes toward r
        fw.fib.remove(Name("/node/r"), face)
    result, took = _run(net, wire, "w4", 3.0)
    assert not isinstance(result, Exception), result
    assert result.complete and result.array.tolist() == [15] * 16
    assert _aggregator(net, "w1").counters["agg_roots"] == 1  # the next in the order, for every consumer
    assert took < 0.5


def _isolated() -> tuple[SimNetwork, bytes, Callable[[], None]]:
    """The network, plus node c linked to r with no routes; the function gives c its route toward r."""
    net, wire = _network(ARRAYS)
    net.add_node("c")
    link = net.link("c", "r", delay=0.001)
    return net, wire, lambda: net.nodes["c"].fw.add_route(Name("/node/r"), link.face_a, 1)


def test_reduce_waits_for_a_route_until_its_deadline() -> None:
    net, wire, route = _isolated()

    async def routes_come_back() -> None:
        await trio.sleep(1.5)
        route()

    result, took = _run(net, wire, "c", 5.0, routes_come_back)
    assert not isinstance(result, Exception), result
    assert result.complete and result.array.tolist() == [15] * 16
    assert 1.5 <= took < 3.0  # asked again soon after the route came (backoff at most 1 s)


def test_reduce_without_a_route_fails_at_its_deadline_saying_so() -> None:
    net, wire, _ = _isolated()
    result, took = _run(net, wire, "c", 2.0)
    assert isinstance(result, Nacked) and result.reason == "no-route", result
    assert 1.8 <= took <= 2.0
    assert result.retries >= 3 and f"{result.retries} retries" in str(result)
