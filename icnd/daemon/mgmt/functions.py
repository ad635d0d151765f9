"""``function/report``: the functions local applications host (`Client.host`), as their hosts report them.

A function host in an application (`icnd.compute.host.FunctionHost`) tells
its node, when they change and at most every ``LOAD_REPORT_INTERVAL``, each
of its prefixes with the calls it has taken, its capacity and its load.  The
node keeps the last report per (face, prefix) so that its status page lists
those functions beside its own ``--function`` ones (`icnd.daemon.http.page`);
nothing here decides anything about forwarding.

A report is taken only for a prefix the reporting face serves (its ``app``
route), and only `MAX_REPORTED` (face, prefix) pairs are kept: reports of a
face whose route is gone (the application left) are dropped to make room,
beyond that a new pair is refused (409) and counted in
``fn_reports_refused``, like a report for a prefix the face does not serve
(404) or with bad arguments (400).  The node's own in-process host (its
``--function`` callables, listed from the host itself) is not kept twice:
reports from `internal_face` are answered and ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from icnd.core.tables.rib import ORIGIN_APP, Rib
from icnd.daemon.mgmt.args import arg, name_arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.daemon.mgmt.routing import MAX_LOAD_VALUE
from icnd.errors import CommandError
from icnd.faces import Face
from icnd.name import Name

MAX_REPORTED = 1024  # (face, prefix) pairs kept
MAX_CALLS = 2**63 - 1  # the largest call count a host may report
COUNTERS = ("fn_reports", "fn_reports_refused")


@dataclass(slots=True)
class FunctionReport:
    """What a host last said of one function it serves through `face`."""

    face: int
    prefix: Name
    calls: int
    capacity: int
    load: int


class FunctionReports:
    def __init__(self, rib: Rib, *, max_reported: int = MAX_REPORTED) -> None:
        self.rib = rib
        self.max_reported = max_reported
        self.internal_face: int | None = None  # the node's own host: its reports are not kept
        self.counters = dict.fromkeys(COUNTERS, 0)
        self._reports: dict[tuple[int, tuple[bytes, ...]], FunctionReport] = {}

    def commands(self) -> Commands:
        return {("function", "report"): self.report}

    def __iter__(self) -> Iterator[FunctionReport]:
        """The reports whose function is still served by its face, in the order they first came."""
        return (r for r in self._reports.values() if self._served(r.face, r.prefix))

    def live(self) -> int:
        """How many reports `__iter__` yields (at most `max_reported`)."""
        return sum(1 for _ in self)

    async def report(self, face: Face, args: dict[str, Any]) -> Any:
        try:
            return self._report(face, args)
        except CommandError:
            self.counters["fn_reports_refused"] += 1
            raise

    def _report(self, face: Face, args: dict[str, Any]) -> dict[str, Any]:
        prefix = name_arg(arg(args, "prefix", str))
        values = {"calls": arg(args, "calls", int)}
        if not 0 <= values["calls"] <= MAX_CALLS:
            raise CommandError(400, f"calls {values['calls']} is out of range (0..{MAX_CALLS})")
        for what in ("capacity", "load"):
            value = arg(args, what, int)
            if not 0 <= value <= MAX_LOAD_VALUE:
                raise CommandError(400, f"{what} {value} is out of range (0..{MAX_LOAD_VALUE})")
            values[what] = value
        if not self._served(face.id, prefix):
            raise CommandError(404, f"{prefix}: this application does not serve it (no app route through "
                                    f"face {face.id})")
        self.counters["fn_reports"] += 1
        if face.id == self.internal_face:
            return {"prefix": prefix.to_uri(), **values}
        key = (face.id, prefix.comps)
        if key not in self._reports and len(self._reports) >= self.max_reported:
            self._reports = {k: r for k, r in self._reports.items() if self._served(r.face, r.prefix)}
            if len(self._reports) >= self.max_reported:
                raise CommandError(409, f"{prefix}: the node already lists {self.max_reported} functions "
                                        "hosted by applications")
        self._reports[key] = FunctionReport(face.id, prefix, values["calls"], values["capacity"], values["load"])
        return {"prefix": prefix.to_uri(), **values}

    def _served(self, face: int, prefix: Name) -> bool:
        return self.rib.get(prefix, face, ORIGIN_APP) is not None
