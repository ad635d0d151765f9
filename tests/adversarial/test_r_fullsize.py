"""Issue #26's link-state floods at full size (marker ``fullsize``: `make test-adversarial`).

R7 as it was reported: a neighbour floods records of 1,100 invented origins, or of 200 origins
announcing 1,000 prefixes each (44 MiB of link state), into one node's router, paced as a
neighbour's fetch answers arrive.  Before the fix: ~100% CPU for a minute, 56 -> 463 MiB, every
origin a full recomputation over every prefix.  Each prints a ``FULLSIZE {...}`` line with what
the router kept, the route computations it made, the CPU it spent and the memory it grew by;
the neighbour stays up throughout (a long dead interval: no hellos are played), over about 11 s
of the router's time.
"""

from __future__ import annotations

import json
import time
import tracemalloc

import msgpack
import pytest

from icnd.core.routing.router import Router, RouterConfig
from icnd.name import Name
from icnd.security import make_data
from tests.adversarial.test_r_link_state import fetch_answer, record
from tests.core.routing.routing_net import accept_all, bring_up, digest_sign

pytestmark = pytest.mark.fullsize


def flood(origins: int, prefixes: int, config: RouterConfig) -> dict[str, object]:
    r = Router(Name("/node/a"), sign=digest_sign, verify=accept_all, now=0.0, config=config)
    r.add_neighbor(5, 1)
    bring_up(r, 5, "/node/b", 0.1)
    r.on_timer(0.5)
    tracemalloc.start()
    cpu = time.process_time()
    now, sent = 1.0, 0
    while sent < origins:
        batch = []
        size = 0
        while sent < origins and size < config.max_reply_bytes:  # what one fetch answer may carry
            wire = record(f"/node/x{sent}", 1, [f"/x{sent}/p{j}" for j in range(prefixes)], [["/node/b", 1]])
            batch.append(wire)
            size += len(wire)
            sent += 1
        nb = r.neighbors[5]
        if nb.fetch is not None:  # a fetch already in flight (the router asks again while it wants more)
            r.on_data(5, make_data(nb.fetch[0], msgpack.packb(batch)), now)
        else:
            fetch_answer(r, 5, batch, now)
        now += 0.02
        if r.next_deadline() <= now:
            r.on_timer(now)
    for _ in range(100):  # ten more seconds: the held-down computations run
        now += 0.1
        if r.next_deadline() <= now:
            r.on_timer(now)
    cpu = time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"origins_sent": origins, "prefixes_each": prefixes, "stored": len(r.lsdb) - 1,
            "lsdb_bytes": r.lsdb.bytes_used, "routes": len(r.routes),
            "refused_origin_cap": r.counters["records_origin_cap"],
            "refused_no_room": r.counters["records_no_room"],
            "routes_over_limit": r.counters["routes_over_limit"],
            "route_computations": r.counters["route_computations"], "cpu_s": round(cpu, 2),
            "peak_mib": round(peak / 2**20, 1)}


def test_fullsize_r7_many_invented_origins() -> None:
    config = RouterConfig(max_origins_per_neighbor=1024, dead_interval=1e6)  # the default without a schema
    out = flood(1100, 1, config)
    print("FULLSIZE " + json.dumps({"attack": "R7-origins", **out}))
    assert out["stored"] == 1024 and out["refused_origin_cap"] == 1100 - 1024
    assert out["route_computations"] < 30


def test_fullsize_r7_many_prefixes() -> None:
    out = flood(200, 1000, RouterConfig(max_origins_per_neighbor=1024, dead_interval=1e6))
    print("FULLSIZE " + json.dumps({"attack": "R7-prefixes", **out}))
    assert out["lsdb_bytes"] <= RouterConfig().max_lsdb_bytes
    assert out["routes"] <= RouterConfig().max_routes
    assert out["route_computations"] < 30
