"""The status page and /metrics cost the node's loop the same whatever its tables hold (issue #26, H1).

An in-process node (``--http``) is grown from 300 faces and 1,000 routes to
2,000 faces (one UDP packet per source port makes a face) and 50,000 routes;
its ASGI app answers ``/`` and ``/metrics`` while a profiler counts the
Python calls made on the loop's thread.  Deterministic: calls are counted,
not timed, and a worker thread's calls (the rendering) are not counted, as
they do not hold the loop.  Before the fix the page built every route row
and the metrics a series per face, all on the loop: 0.93 s and 0.37 s per
request with these tables.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import trio
from trio.testing import wait_all_tasks_blocked
from prometheus_client.parser import text_string_to_metric_families

from icnd.daemon.config import NodeConfig
from icnd.daemon.http import server
from icnd.daemon.http.metrics import MAX_FACE_SERIES
from icnd.daemon.http.page import MAX_ROWS
from icnd.daemon.node import Node
from icnd.faces.memory import memory_face_pair
from icnd.name import Name, generic

SMALL = (300, 1_000)  # faces, routes
LARGE = (2_000, 50_000)
IN_PACKETS = 7  # what each added face has received


async def get(node: Node, path: str) -> tuple[int, bytes]:
    """(status, body) of GET `path`, from the node's ASGI app."""
    assert node.http is not None
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "headers": [], "query_string": b""}
    await node.http.app(scope, receive, send)  # type: ignore[arg-type]
    return sent[0]["status"], sent[1]["body"]


async def answer(node: Node, path: str) -> tuple[int, int, bytes]:
    """(status, Python calls made on this thread meanwhile, body) of GET `path`."""
    calls = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(profile)
    try:
        status, body = await get(node, path)
    finally:
        sys.setprofile(None)
    return status, calls, body


async def grow(node: Node, faces: int, routes: range) -> None:
    """Memory faces up to `faces` (each having received `IN_PACKETS`), and static routes /p/<i>, i in `routes`."""
    while len(node.faces) < faces:
        mine, _ = memory_face_pair()
        node.faces.add(mine).counters.in_packets = IN_PACKETS
    last = max(node.faces.faces)
    p = generic("p")
    for i in routes:
        node.fw.rib.add(Name.from_wire((p, generic(str(i)))), last, 1, "static")
    await wait_all_tasks_blocked(0.05)  # the new faces' tasks have started: not counted with a request


def on_worker_thread(calls: list[bool], fn: Callable[..., Any]) -> Callable[..., Any]:
    def spy(*args: Any) -> Any:
        calls.append(threading.current_thread() is not threading.main_thread())
        return fn(*args)
    return spy


async def test_page_and_metrics_cost_the_loop_the_same_whatever_the_tables_hold(tmp_path: Path, monkeypatch) -> None:
    threads: list[bool] = []
    monkeypatch.setattr(server, "render_page", on_worker_thread(threads, server.render_page))
    monkeypatch.setattr(server, "exposition", on_worker_thread(threads, server.exposition))
    node = Node(NodeConfig(name="/node/a", socket=str(tmp_path / "a.sock"), listen=["udp://127.0.0.1:0"],
                           http="127.0.0.1:0"))
    await node.bind()
    async with trio.open_nursery() as nursery:
        await nursery.start(node.serve)
        with trio.fail_after(30):
            await grow(node, SMALL[0], range(SMALL[1]))
            status, small_page, _ = await answer(node, "/")
            assert status == 200
            status, small_metrics, _ = await answer(node, "/metrics")
            assert status == 200
            truncated = node.status()["counters"]["http_truncated"]

            await grow(node, LARGE[0], range(SMALL[1], LARGE[1]))
            status, large_page, html = await answer(node, "/")
            assert status == 200
            status, large_metrics, text = await answer(node, "/metrics")
            assert status == 200
            assert threads == [True] * 4  # every page and scrape formatted in a worker thread

            # the page: as much loop work for 50k routes and 2k faces as for 1k and 300 (before: 0.93 s,
            # millions of calls); it shows MAX_ROWS of each and says how many more there are
            assert large_page <= small_page * 1.25, (small_page, large_page)
            page = html.decode()
            routes_total = len(node.fw.fib)
            assert routes_total > LARGE[1] and f"Routes ({routes_total:,})" in page
            assert page.count('<tr class="route">') == MAX_ROWS
            assert f"and {routes_total - MAX_ROWS:,} more (icnd route list)" in page
            assert page.count('<tr class="face"') == MAX_ROWS
            assert f"and {len(node.faces) - MAX_ROWS:,} more (icnd face list)" in page

            # /metrics: the faces beyond MAX_FACE_SERIES cost at most a few calls each, and are one series
            assert large_metrics - small_metrics <= 3 * (LARGE[0] - SMALL[0]), (small_metrics, large_metrics)
            families = {f.name: f.samples for f in text_string_to_metric_families(text.decode())}
            in_packets = families["icnd_face_in_packets"]
            assert len(in_packets) == MAX_FACE_SERIES + 1
            assert len(families["icnd_face_up"]) == MAX_FACE_SERIES + 1
            other = [s for s in in_packets if s.labels["face"] == "other"]
            assert len(other) == 1 and other[0].value == IN_PACKETS * (len(node.faces) - MAX_FACE_SERIES)
            up = next(s for s in families["icnd_face_up"] if s.labels["face"] == "other")
            assert up.value == len(node.faces) - MAX_FACE_SERIES
            shown = {int(s.labels["face"]) for s in in_packets if s.labels["face"] != "other"}
            assert shown == set(list(node.faces.faces)[:MAX_FACE_SERIES])  # the first faces, by id
            assert node.status()["counters"]["http_truncated"] == truncated + 2
            assert re.search(r"^icnd_http_truncated_total \d+", text.decode(), re.M)
        nursery.cancel_scope.cancel()


async def test_a_request_waits_for_its_turn_with_a_deadline(tmp_path: Path, monkeypatch) -> None:
    """One page is made at a time; a request that cannot have its turn within RENDER_WAIT gets 503."""
    release = threading.Event()

    def slow(*args: Any) -> str:
        release.wait(10)
        return "<html></html>"

    monkeypatch.setattr(server, "render_page", slow)
    monkeypatch.setattr(server, "RENDER_WAIT", 0.2)
    node = Node(NodeConfig(name="/node/a", socket=str(tmp_path / "a.sock"), listen=["udp://127.0.0.1:0"],
                           http="127.0.0.1:0"))
    await node.bind()
    async with trio.open_nursery() as nursery:
        await nursery.start(node.serve)
        with trio.fail_after(10):
            refused = node.status()["counters"]["http_refused"]
            first: list[int] = []

            async def first_request() -> None:
                first.append((await get(node, "/"))[0])

            nursery.start_soon(first_request)
            await wait_all_tasks_blocked(0.05)  # the first request is being rendered
            status, body = await get(node, "/metrics")
            assert status == 503 and b"busy" in body
            assert node.status()["counters"]["http_refused"] == refused + 1
            assert node.status()["name"] == "/node/a"  # the loop answers meanwhile
            release.set()
            while not first:
                await trio.sleep(0.01)
            assert first == [200]
            assert (await get(node, "/metrics"))[0] == 200  # and the next one has its turn
        nursery.cancel_scope.cancel()
