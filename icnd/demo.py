"""`make demo`: named data crossing a small network of forwarder cores.

Runs the real forwarding core in-process on a virtual clock (icnd.sim): a
producer on one node, consumers on others, a lossy link, and the counters
that show caching, aggregation and retransmission at work.
"""

from __future__ import annotations

import sys

from .name import Name
from .packet import Data
from .sim import SimNetwork


def face_toward(net: SimNetwork, node: str, peer: str) -> int:
    return next(f for f, (_, p, _) in net.nodes[node].peers.items() if p.name == peer)


def main() -> int:
    net = SimNetwork(seed=7)
    for n in ("alice", "r1", "r2", "bob", "carol"):
        net.add_node(n)
    net.link("alice", "r1", delay=0.002)
    net.link("r1", "r2", delay=0.010, loss=0.1)
    net.link("r2", "bob", delay=0.002)
    net.link("carol", "r1", delay=0.002)
    for node, peer in (("alice", "r1"), ("carol", "r1"), ("r1", "r2"), ("r2", "bob")):
        net.nodes[node].fw.add_route(Name("/bob"), face_toward(net, node, peer))

    producer = net.app("bob")
    producer.serve("/bob/photos", lambda i: Data(i.name, b"jpeg bytes of " + i.name.to_uri().encode(), freshness_ms=60_000))

    print("icnd demo: alice and carol fetch /bob/photos/* through r1 and r2 (10% loss on r1-r2)\n")
    alice, carol = net.app("alice"), net.app("carol")
    first = [alice.fetch(f"/bob/photos/{i}", retx_ms=100) for i in range(20)]
    net.run(until=0.001)
    second = [carol.fetch(f"/bob/photos/{i}", retx_ms=100) for i in range(20)]
    net.run(until=5)
    third = [carol.fetch(f"/bob/photos/{i}") for i in range(20)]
    net.run(until=10)

    ok = all(isinstance(f.result, Data) for f in first + second + third)
    for label, fetches in (("alice (cold)", first), ("carol (same time)", second), ("carol (again)", third)):
        rtts = sorted(f.rtt for f in fetches if f.rtt is not None)
        got = sum(isinstance(f.result, Data) for f in fetches)
        print(f"  {label:<18} {got}/{len(fetches)} fetched, median RTT {1000 * rtts[len(rtts) // 2]:.1f} ms")
    print()
    header = ("node", "interests_in", "data_out", "cs_hits", "pit_aggregated", "retransmissions")
    print("  " + "".join(f"{h:>16}" for h in header))
    for name, node in net.nodes.items():
        c = node.fw.counters.as_dict()
        print("  " + f"{name:>16}" + "".join(f"{c[h]:>16}" for h in header[1:]))
    print("\nr1 merged carol's Interests with alice's (pit_aggregated); carol's node answered her repeat from its cache (cs_hits).")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
