"""The status page's pieces without a node: the traffic plot and the template's escaping
(icnd.daemon.http.page; the page of a real node: tests/integration/test_status_page.py)."""

from __future__ import annotations

import re

import pytest

from icnd.daemon.config import ConfigError, from_dict, parse_http_address
from icnd.daemon.http.page import Sample, _nice, _template, rates, traffic_svg


def test_rates_between_samples() -> None:
    samples = [Sample(0.0, 0, 0), Sample(2.0, 20, 10), Sample(4.0, 20, 30)]
    assert rates(samples, "interests_in") == [(2.0, 10.0), (0.0, 0.0)]
    assert rates(samples, "data_out") == [(2.0, 5.0), (0.0, 10.0)]
    assert rates([], "data_out") == [] and rates(samples[:1], "data_out") == []


def test_plot_draws_both_series_to_scale() -> None:
    samples = [Sample(t * 2.0, t * 30, t * 10) for t in range(31)]  # 15 Interests/s, 5 Data/s for a minute
    svg = traffic_svg(samples)
    assert svg.startswith('<svg id="traffic-plot"') and svg.endswith("</svg>")
    lines = re.findall(r'<polyline class="series"[^>]*points="([^"]+)"', svg)
    assert len(lines) == 2
    top_y = 10  # the plot's top edge; the scale's top is 20/s (1-2-5 steps above 15)
    interests = [float(p.split(",")[1]) for p in lines[0].split()]
    data = [float(p.split(",")[1]) for p in lines[1].split()]
    assert len(interests) == 30 and len(set(interests)) == 1 and len(set(data)) == 1
    height = 150 - 40
    assert interests[0] == pytest.approx(top_y + height * (1 - 15 / 20), abs=0.1)
    assert data[0] == pytest.approx(top_y + height * (1 - 5 / 20), abs=0.1)
    assert "-1 min" in svg and "collecting samples" not in svg
    for few in ([], samples[:2]):  # a line needs two rates, i.e. three samples
        assert "collecting samples" in traffic_svg(few) and "<polyline" not in traffic_svg(few)


def test_nice_scale() -> None:
    assert [_nice(v) for v in (0.3, 1, 1.5, 3, 7, 15, 999, 1001)] == [1, 1, 2, 5, 10, 20, 1000, 2000]


def test_template_escapes_names_from_the_network() -> None:
    evil = '<script>alert(1)</script>"'
    status = {"name": "/node/a", "version": "0", "uptime_s": 1.0, "pid": 1, "listen": [evil],
              "counters": {"interests_in": 1}, "tables": {"pit_entries": 0}}
    face = {"id": 2, "remote_uri": evil, "local_uri": "x", "local": False, "persistent": True, "wire_format": "icnd",
            "permanent": False, "state": "up", "counters": {"in_packets": 1}}
    html = _template().render(
        status=status, faces=[face], faces_total=1,
        routes=[{"prefix": evil, "origin": "static", "cost": 0, "nexthops": [{"face": 2, "uri": evil, "cost": 0,
                                                                              "origin": "static"}]}],
        routes_total=1, routing={"neighbors": [{"name": evil, "uri": evil, "face": 2, "state": "up", "link": "up",
                                                "cost": 1, "last_hello_s": 0.5}], "neighbors_total": 1, "nodes": 1},
        functions=[{"prefix": evil, "host": evil, "calls": 3, "capacity": 4, "load": 0}], functions_total=1,
        reductions=[{"name": evil, "children": 1, "pending": 1}], reductions_total=1,
        groups=[{"group": evil, "version": 1, "members": [evil]}], groups_total=1,
        plot="", refresh_s=5, generated="now", max_rows=200)
    assert "<script" not in html
    assert html.count("&lt;script&gt;") >= 9
    assert 'id="face-2"' in html and 'class="route"' in html and 'class="neighbor"' in html


def test_http_address() -> None:
    assert parse_http_address("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_http_address("[::1]:0") == ("::1", 0)
    assert from_dict({"http": "127.0.0.1:9100"}).http == "127.0.0.1:9100"
    for bad in ("8080", ":8080", "host:", "h:65536", "h:x", "[::1]", "a b:80"):
        with pytest.raises(ConfigError, match="HOST:PORT"):
            parse_http_address(bad)
    with pytest.raises(ConfigError, match="conf.toml: http"):
        from_dict({"http": "localhost"}, origin="conf.toml")
