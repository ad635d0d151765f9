"""`make demo`: the showcase on a local topology of real daemons.

Starts `topologies/default.toml` (one `icnd run` process per node on
loopback, links with emulated delay) with link-state routing: each node is
given only its neighbours (``--neighbor``), and the network forms itself --
the demo prints the routes the protocol installed, then a worker publishes
an object under a name of its own choosing (``/videos/...``), the route to it
appears at the client, and the client fetches it.  Then: a worker publishes named data,
the client fetches it across two routers and fetches it again from a cache,
a second consumer's request is answered by a cache; then named functions:
a matrix product computed by one of two hosts, the same call as a pure
function answered from a cache, and a slow call completed through a thunk;
then collective reduction: the workers allreduce arrays (one in-network
computation for all three) and the client fetches their max by name; and a
collective job started like an MPI job, with ``icnd exec``, one rank per worker.
A per-node counter table shows where the packets went.  Everything is torn down at the
end; the exit code is 0 only if every step worked.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import trio

from icnd.client import Client
from icnd.errors import Error
from icnd.topology import launch, load

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TOPOLOGY = os.path.join(os.path.dirname(HERE), "topologies", "default.toml")
COLUMNS = ("interests_in", "interests_out", "data_out", "cs_hits", "pit_aggregated", "agg_combined")


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


async def showcase(path: str) -> bool:
    started = time.monotonic()
    spec = load(path)
    link_state = spec.routing == "link-state"
    how = "given only their neighbours, no routes" if link_state else "static routes derived from the graph"
    step(f"starting {os.path.relpath(path)}: one icnd process per node on loopback, {how}")
    async with launch(spec) as net:
        for handle in net.nodes.values():
            neighbours = ", ".join(peer for peer, _ in spec.neighbours(handle.name))
            print(f"  {handle.name:<8} {handle.prefix:<14} pid {handle.pid:<7} {handle.udp_uri:<22} "
                  f"--neighbor {neighbours}" if link_state else
                  f"  {handle.name:<8} {handle.prefix:<14} pid {handle.pid:<7} {handle.udp_uri}")
        print(f"  all {len(net.nodes)} nodes ready in {time.monotonic() - started:.1f}s")

        w3 = await net.connect("w3")
        client = await net.connect("client")
        r1 = await net.connect("r1")
        ok = True

        if link_state:
            step("the network formed itself: hellos, link-state records, routes (origin routing)")
            print(f"  every node routes to every node {net.converged_s:.1f}s after the start "
                  f"(daemons answering after {net.daemons_ready_s:.1f}s)")
            for line in await _routes(client, "client", lambda p: p.startswith("/node/")):
                print(f"  {line}")

            step("w3 publishes an object under /videos: w3 announces it, the route appears at client")
            video = bytes(range(256)) * 300
            t0 = trio.current_time()
            await w3.publish_object("/videos/demo/cat.mp4", video)
            with trio.fail_after(10):
                while not (lines := await _routes(client, "client", lambda p: p.startswith("/videos/"))):
                    await trio.sleep(0.02)
            for line in lines:
                print(f"  {line}, {1000 * (trio.current_time() - t0):.0f} ms after the publish")
            fetched = await client.fetch_object("/videos/demo/cat.mp4", timeout=10)
            ok = fetched == video
            print(f"  client fetched {len(fetched)} bytes: {'ok' if ok else 'MISMATCH'}")

        step("w3 publishes /node/w3/photos/cat.jpg (signed with w3's Ed25519 identity)")
        content = b"\xff\xd8 a picture of a cat " * 40
        await w3.publish("/node/w3/photos/cat.jpg", content, freshness=60)
        print(f"  published {len(content)} bytes")

        step("client fetches it: client -> r2 -> w3 and back, signature verified")
        t0 = trio.current_time()
        data = await client.fetch("/node/w3/photos/cat.jpg")
        first_ms = 1000 * (trio.current_time() - t0)
        ok = ok and data.content == content
        print(f"  {len(data.content)} bytes in {first_ms:.1f} ms, signed by {data.signer}: {'ok' if ok else 'MISMATCH'}")

        step("client fetches it again: answered by its own node's Content Store")
        t0 = trio.current_time()
        await client.fetch("/node/w3/photos/cat.jpg")
        print(f"  {1000 * (trio.current_time() - t0):.1f} ms (cs_hits at client: "
              f"{(await net.status('client'))['counters']['cs_hits']})")

        step("r1 fetches it: the request meets a cached copy before reaching w3")
        before = {name: (await net.status(name))["counters"] for name in net.nodes}
        t0 = trio.current_time()
        again = await r1.fetch("/node/w3/photos/cat.jpg")
        took = 1000 * (trio.current_time() - t0)
        after = {name: (await net.status(name))["counters"] for name in net.nodes}
        hits = [n for n in net.nodes if after[n]["cs_hits"] > before[n]["cs_hits"]]
        reached_w3 = after["w3"]["interests_in"] > before["w3"]["interests_in"]
        ok = ok and again.content == content and bool(hits) and not reached_w3
        print(f"  {took:.1f} ms, answered from the cache at {', '.join(hits) or 'nowhere'}; "
              f"w3 {'was asked again' if reached_w3 else 'never saw the request'}")

        step("a name nobody serves: asked again while a route may appear (1 s here), then refused (Nack)")
        try:
            await client.fetch("/nobody/serves/this", timeout=1)
            ok = False
            print("  unexpectedly answered")
        except Error as exc:
            print(f"  {type(exc).__name__}: {exc}")

        step("client calls /fn/matmul (hosted by w1 and w2): the host pulls the arguments back")
        import numpy as np

        a = np.arange(6, dtype=np.float64).reshape(2, 3)
        b = np.ones((3, 2))
        t0 = trio.current_time()
        product = await client.call("/fn/matmul", a, b)
        correct = bool(np.array_equal(product, a @ b))
        ok = ok and correct
        print(f"  {a.shape} @ {b.shape} = {product.tolist()} in {1000 * (trio.current_time() - t0):.1f} ms: "
              f"{'ok' if correct else 'WRONG'}")

        step("the same call as a pure function, twice: the second is answered by a cache")
        first = await client.call("/fn/matmul", a, b, pure=True)
        hosts_before = [(await net.status(w))["counters"]["interests_in"] for w in ("w1", "w2")]
        t0 = trio.current_time()
        second = await r1.call("/fn/matmul", a, b, pure=True)
        cached_ms = 1000 * (trio.current_time() - t0)
        hosts_after = [(await net.status(w))["counters"]["interests_in"] for w in ("w1", "w2")]
        untouched = hosts_after == hosts_before
        ok = ok and bool(np.array_equal(first, second)) and untouched
        print(f"  second call from r1 in {cached_ms:.1f} ms; "
              f"{'no host saw it' if untouched else 'a host was asked again'}")

        step("client calls /fn/slow (1.5 s of work on w3): a thunk now, the result by name later")
        t0 = trio.current_time()
        answer = await client.call("/fn/slow", 1.5, "slow result", lifetime=1.0)
        ok = ok and answer == "slow result"
        print(f"  {answer!r} after {trio.current_time() - t0:.1f} s (trigger lifetime 1 s: polled through a thunk)")

        step("allreduce: w1, w2, w3 each contribute an array and fetch the sum of all three by name")
        import numpy as np

        workers = ["w1", "w2", "w3"]
        members = {w: await net.connect(w) for w in workers}
        arrays = {w: np.arange(6, dtype=np.float32) * (i + 1) for i, w in enumerate(workers)}
        results: dict[str, np.ndarray] = {}
        before = {w: (await net.status(w))["counters"]["agg_roots"] for w in net.nodes}
        t0 = trio.current_time()

        async def member(w: str) -> None:
            results[w] = await members[w].allreduce("demo", 1, arrays[w], "sum")

        async with trio.open_nursery() as nursery:
            for w in workers:
                nursery.start_soon(member, w)
        expected = sum(arrays.values())
        same = all(results[w].tobytes() == results["w1"].tobytes() for w in workers)
        ok = ok and same and np.allclose(results["w1"], expected)
        roots = {w: (await net.status(w))["counters"]["agg_roots"] - before[w] for w in net.nodes}
        print(f"  sum = {results['w1'].tolist()} in {1000 * (trio.current_time() - t0):.1f} ms, identical at "
              f"{', '.join(workers) if same else 'NOT all members'}; combined once, at "
              f"{', '.join(w for w, n in roots.items() if n) or 'nowhere'} (the rendezvous)")
        r = await client.reduce("demo", 1, "max")
        ok = ok and r.complete and np.array_equal(r.array, np.maximum.reduce(list(arrays.values())))
        print(f"  client: max over {', '.join(r.contributors)} = {r.array.tolist()}")

        ok = await _exec_job([net.nodes[w].socket for w in workers]) and ok

        step("per-node counters")
        print("  " + f"{'node':<8}" + "".join(f"{c:>16}" for c in COLUMNS))
        for name in net.nodes:
            counters = (await net.status(name))["counters"]
            print("  " + f"{name:<8}" + "".join(f"{counters[c]:>16}" for c in COLUMNS))
        step("tearing down")
    print(f"  done in {time.monotonic() - started:.1f}s: {'success' if ok else 'FAILED'}")
    return ok


EXEC_TIMEOUT_S = 60.0
"""The whole `icnd exec` job of the demo: started, run and ended within this (its calls have a 20 s deadline)."""


async def _exec_job(sockets: list[str]) -> bool:
    """A collective job started as with ``mpirun``: ``icnd exec`` runs one rank of
    ``apps/allreduce_job.py`` per worker node; the ranks allreduce, allgather and
    meet at a barrier through a communicator.  Its tagged output is shown."""
    n = len(sockets)
    argv = [sys.executable, "-m", "icnd", "exec", "-n", str(n), *[a for s in sockets for a in ("--socket", s)],
            "--timeout", "20", "--tag-output", "--", sys.executable, "-m", "apps.allreduce_job"]
    nodes = ", ".join(os.path.basename(s).removesuffix(".sock") for s in sockets)
    step(f"a collective job: icnd exec -n {n} --socket <{nodes}> --tag-output -- python -m apps.allreduce_job")
    t0 = trio.current_time()
    try:
        with trio.fail_after(EXEC_TIMEOUT_S):
            done = await trio.run_process(argv, capture_stdout=True, capture_stderr=True, check=False)
    except trio.TooSlowError:
        print(f"  icnd exec did not finish within {EXEC_TIMEOUT_S:g}s")
        return False
    for line in sorted(done.stdout.decode(errors="replace").splitlines()):
        print(f"  {line}")
    for line in done.stderr.decode(errors="replace").splitlines():
        print(f"  {line}")
    print(f"  exit code {done.returncode} after {trio.current_time() - t0:.1f} s "
          f"(one process per rank, group rank0..rank{n - 1} created by icnd exec)")
    return done.returncode == 0


async def _routes(client: Client, node: str, wanted: Callable[[str], bool]) -> list[str]:
    """``node: route PREFIX via NEIGHBOUR (routing, cost N)`` for each routing route `wanted` picks."""
    names = {n["face"]: (n["name"] or "?").removeprefix("/node/") for n in (await client.routing())["neighbors"]}
    out = []
    for entry in await client.command("route", "list"):
        hops = [h for h in entry["nexthops"] if h["origin"] == "routing"]
        if hops and wanted(entry["prefix"]):
            via = ", ".join(f"{names.get(h['face'], h['uri'])} (cost {h['cost']})" for h in hops)
            out.append(f"{node}: route {entry['prefix']} via {via} (routing)")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = args[0] if args else DEFAULT_TOPOLOGY
    try:
        return 0 if trio.run(showcase, path) else 1
    except Error as exc:
        print(f"icnd demo: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
