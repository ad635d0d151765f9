"""The status page and /metrics read a node through `StatusView` alone (icnd.daemon.status):
its status report and the few tables they list, never the whole `Node`."""

from __future__ import annotations

from typing import Any

from icnd.core.fw.forwarder import Forwarder
from icnd.core.tables.rib import ORIGIN_STATIC
from icnd.daemon.config import NodeConfig
from icnd.daemon.faces import FaceTable
from icnd.daemon.functions import NodeFunctions
from icnd.daemon.http.metrics import NodeCollector, exposition
from icnd.daemon.http.page import render_page, snapshot
from icnd.daemon.mgmt.functions import FunctionReports
from icnd.daemon.status import StatusView
from icnd.name import Name
from icnd.reduction.contrib import GroupTable
from icnd.reduction.group import GroupDescriptor


def _unused(*args: Any) -> Any:
    raise AssertionError("the status page must not reach past its view")


def test_the_page_and_metrics_read_only_their_view() -> None:
    fw = Forwarder()
    fw.add_route(Name("/app/video"), 7, 3, ORIGIN_STATIC)
    groups = GroupTable(8, local_reserve=2)
    groups.add_config(GroupDescriptor.create("g", ["w1", "w2@b"], rendezvous=["r"], deadline_ms=500))
    status = {"name": "/node/v", "version": "0", "uptime_s": 1.0, "pid": 1, "listen": [], "ndn_listen": [],
              "counters": {"interests_in": 4, "data_out": 2}, "tables": {"pit_entries": 0}}
    view = StatusView(
        status=lambda: status,
        faces=FaceTable(first_id=2, receiver=_unused, on_up=_unused, on_down=_unused),
        rib=fw.rib, fib=fw.fib, reductions={}, groups=groups, router=None,
        functions=NodeFunctions(NodeConfig(name="/node/v"), Name("/node/v"), client=_unused, fetch_cert=_unused),
        function_reports=FunctionReports(fw.rib),
    )
    page = snapshot(view)
    assert page["status"] is status and page["faces_total"] == 0 and page["routing"] is None
    assert page["routes_total"] == 1 and page["routes"][0]["prefix"] == "/app/video"
    assert [g["group"] for g in page["groups"]] == ["g"] and page["groups_total"] == 1
    assert page["functions"] == [] and page["functions_total"] == 0 and not page["truncated"]
    assert "/app/video" in render_page(page, ())
    figures = NodeCollector(view).read()
    assert figures["faces"] == [] and figures["functions"] == [] and figures["neighbors"] is None
    assert b"icnd_interests_in_total 4.0" in exposition(figures)
