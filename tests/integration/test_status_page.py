"""The status page and metrics of a real ``icnd run --http`` (issue 19; docs/management.md#http-status-page-and-metrics).

Two nodes on loopback, neighbours of each other; a serves ``--http`` on a free
port.  ``/``, ``/status.json`` and ``/metrics`` are fetched; the metrics are
parsed with prometheus_client's own parser and move after traffic; only GET
and HEAD are answered; garbage, an oversized request head and a silent
connection cost the node nothing.
"""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

import icnd
from icnd.client import connect
from icnd.errors import CommandError
from icnd.testing.processes import Daemon, run_cli
from icnd.trust.cert import self_signed
from tests.integration.status_net import free_tcp_port, http, two_nodes


def metrics(text: str) -> dict[str, list[Any]]:
    """Family name -> its samples, as Prometheus' parser reads the exposition."""
    families: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        assert family.name not in families, f"family {family.name} exposed twice"
        families[family.name] = family.samples
    return families


def value(families: dict[str, list[Any]], sample: str, **labels: str) -> float:
    family = sample if sample in families else sample.removesuffix("_total")
    for s in families[family]:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return float(s.value)
    raise AssertionError(f"no sample {sample} {labels}")


def raw_exchange(port: int, payload: bytes, timeout: float = 5.0) -> bytes:
    """Send `payload` on a fresh connection and read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            pass
        return b"".join(chunks)


async def test_page_json_and_metrics_of_a_running_node(tmp_path: Path) -> None:
    port = free_tcp_port()
    a, b = await two_nodes(tmp_path, f"127.0.0.1:{port}")
    try:
        base = f"http://127.0.0.1:{port}"
        status = await a.get_status()
        assert status["http"] == base + "/"

        page = await http(base + "/")
        assert page.status == 200 and page.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in page.headers["content-security-policy"]
        html = page.text
        assert '<h1 id="node-name">/node/a</h1>' in html
        assert 'id="traffic-plot"' in html and "<script" not in html
        assert "/node/b" in html and 'id="neighbors"' in html  # the routed prefix and the neighbour

        js = await http(base + "/status.json")
        assert js.status == 200 and js.headers["content-type"] == "application/json"
        report = json.loads(js.body)
        assert set(report) == set(status) and report["name"] == "/node/a"
        assert set(report["counters"]) == set(status["counters"])  # the same report as `icnd status --json`

        before = metrics((await http(base + "/metrics")).text)
        assert value(before, "icnd_info", name="/node/a", version=status["version"]) == 1
        assert value(before, "icnd_uptime_seconds") >= 0
        for counter in status["counters"]:
            assert f"icnd_{counter}" in before, counter
        for table in ("pit_entries", "cs_entries", "cs_bytes", "fib_entries", "faces"):
            assert f"icnd_{table}" in before
        faces = {s.labels["face"]: s.labels["uri"] for s in before["icnd_face_in_packets"]}
        assert faces, "no per-face counters"
        assert value(before, "icnd_routing_neighbor_up", neighbor="/node/b") == 1
        documented = (Path(__file__).parents[2] / "docs" / "management.md").read_text()
        async with a.connect() as client:
            face_counters = {key for face in await client.command("face", "list") for key in face["counters"]}
        derived = {f"icnd_{key}" for key in (*status["counters"], *status["tables"])} | \
            {f"icnd_face_{key}" for key in face_counters}
        for family in before:  # every name is documented: by the rule icnd_<status key>, or by name
            assert family in derived or f"`{family}`" in documented or f"`{family}_total`" in documented, \
                f"{family} is not in docs/management.md"

        result = await trio.to_thread.run_sync(
            lambda: run_cli("ping", "--socket", a.socket, "/node/b", "-c", "5", "-i", "0.02"))
        assert result.returncode == 0, result.stderr
        after = metrics((await http(base + "/metrics")).text)
        assert value(after, "icnd_interests_out_total") >= value(before, "icnd_interests_out_total") + 5
        assert value(after, "icnd_data_in_total") >= value(before, "icnd_data_in_total") + 5
        face_to_b = next(f for f, uri in faces.items() if uri.startswith("udp://"))
        assert value(after, "icnd_face_out_packets_total", face=face_to_b) >= \
            value(before, "icnd_face_out_packets_total", face=face_to_b) + 5
        assert value(after, "icnd_http_requests_total") > value(before, "icnd_http_requests_total")
        assert "icnd_http_requests" in (await http(base + "/metrics")).text
    finally:
        a.stop()
        b.stop()


async def test_read_only_bounded_and_robust(tmp_path: Path) -> None:
    a, b = await two_nodes(tmp_path, "127.0.0.1:0")  # port 0: a free one, reported by status
    try:
        url = (await a.get_status())["http"]
        port = int(url.rsplit(":", 1)[1].strip("/"))
        refused = (await a.get_status())["counters"]["http_refused"]
        for method in ("POST", "PUT", "DELETE"):
            r = await http(url, method)
            assert r.status == 405 and r.headers["allow"] == "GET, HEAD"
        assert (await http(url + "nothing-here")).status == 404
        assert (await a.get_status())["counters"]["http_refused"] == refused + 4
        head = await http(url + "metrics", "HEAD")
        assert head.status == 200 and head.body == b"" and int(head.headers["content-length"]) > 0

        # a silent client holds a connection; the page and the node answer meanwhile
        with socket.create_connection(("127.0.0.1", port)) as silent:
            silent.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never finishes its head
            assert (await http(url)).status == 200
            with trio.fail_after(5):
                await a.get_status()
        answer = await trio.to_thread.run_sync(raw_exchange, port, b"\x00\xffGARBAGE\r\n\r\n" * 10)
        assert answer == b"" or answer.startswith(b"HTTP/1.1 400")
        huge = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"
        answer = await trio.to_thread.run_sync(raw_exchange, port, huge)
        assert answer == b"" or answer.split(b"\r\n", 1)[0] in (b"HTTP/1.1 400 ", b"HTTP/1.1 431 ")
        assert (await http(url)).status == 200  # still serving
        assert a.proc.poll() is None
        assert a.stop() == 0
    finally:
        a.stop()
        b.stop()


def test_bad_http_address_is_a_usage_error(tmp_path: Path) -> None:
    for bad in ("8080", "127.0.0.1:99999"):  # the parser's cases: tests/daemon/test_http_page.py
        r = run_cli("run", "--socket", str(tmp_path / "s.sock"), "--listen", "udp://127.0.0.1:0", "--http", bad)
        assert r.returncode == 2, (bad, r.stderr)
        assert b"http" in r.stderr and b"HOST:PORT" in r.stderr and b"Traceback" not in r.stderr


def test_http_port_in_use_is_a_startup_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run_cli("run", "--socket", str(tmp_path / "s.sock"), "--listen", "udp://127.0.0.1:0",
                    "--http", f"127.0.0.1:{port}")
    assert r.returncode == 2
    line = r.stderr.decode().strip()
    assert f"--http 127.0.0.1:{port}" in line and "in use" in line and "Traceback" not in line


def _function_rows(html: str) -> dict[str, tuple[str, int]]:
    """The page's hosted functions: prefix -> (hosted by, calls)."""
    rows = re.findall(r'<tr class="function"><td class="mono function-prefix">([^<]*)</td><td class="mono">([^<]*)'
                      r'</td>\s*<td class="n function-calls">([\d,]+)</td>', html)
    return {prefix: (host, int(calls.replace(",", ""))) for prefix, host, calls in rows}


async def test_page_lists_functions_hosted_by_applications(tmp_path: Path) -> None:
    """Issue #27, item 8: a function hosted with `Client.host` is listed under "Hosted functions",
    with its calls, beside the --function ones; not once its application stops serving it."""
    a = Daemon(tmp_path, "--name", "/node/a", "--listen", "udp://127.0.0.1:0", "--http", "127.0.0.1:0",
               "--function", "tests.integration.hosted:echo=/fn/echo", name="a")
    try:
        await a.until_ready()
        url = (await a.get_status())["http"]
        key = icnd.security.Ed25519Key.generate(icnd.Name("/fn/double/host"))
        async with connect(a.socket, key=key, cert=self_signed(key, now=time.time())) as host_client, \
                host_client.host({"/fn/double": lambda x: 2 * x}, workers=2):
            async with connect(a.socket) as caller:
                for x in range(3):
                    assert await caller.call("/fn/double", x) == 2 * x
            with trio.fail_after(10):  # the host reports its calls at most every LOAD_REPORT_INTERVAL
                while _function_rows((await http(url)).text).get("/fn/double", ("", 0))[1] < 3:
                    await trio.sleep(0.1)
            html = (await http(url)).text
            rows = _function_rows(html)
            assert rows["/fn/double"][1] == 3 and rows["/fn/double"][0].startswith("application on face ")
            assert rows["/fn/echo"] == ("--function tests.integration.hosted:echo", 0)
            assert "Hosted functions (2)" in html

            # a report for a prefix this application does not serve, or out of range, is refused and counted
            refused = (await a.get_status())["counters"]["fn_reports_refused"]
            with pytest.raises(CommandError) as err:
                await host_client.command("function", "report", prefix="/fn/echo", calls=1, capacity=1, load=0)
            assert err.value.status == 404
            with pytest.raises(CommandError) as err:
                await host_client.command("function", "report", prefix="/fn/double", calls=-1, capacity=1, load=0)
            assert err.value.status == 400
            assert (await a.get_status())["counters"]["fn_reports_refused"] == refused + 2
        with trio.fail_after(10):  # the application left: its route went, and its row with it
            while "/fn/double" in _function_rows((await http(url)).text):
                await trio.sleep(0.1)
    finally:
        a.stop()
