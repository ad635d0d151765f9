"""Whether the routing neighbours answer, in the log.

A ``--neighbor`` face is permanent and "connects" to whatever is at its URI:
over UDP at once, even to a port nobody listens on.  Only hellos tell that an
icnd node is there (`icnd.core.routing.router`, Rule 1).  `NeighborWatch`
reads the router's neighbour table (``up``: heard within the dead interval;
``link_up``: the face is connected) once per hello interval and logs what
an operator has to know:

- a neighbour whose face is connected but which has not answered a hello
  within the dead interval: a warning naming its URI, once (a wrong address
  or port, a firewall, no node running there);
- a neighbour that was up and is no longer: a warning;
- a neighbour that answers after either warning: said once, at the same
  level, so whoever saw the warning sees it resolved; its first answer
  otherwise is an info line.

A face whose connection fails is not this watch's to report: the permanent
face logs its failed attempts (`icnd.faces.permanent`).
"""

from __future__ import annotations

import logging

import trio

from icnd.core.routing.router import Router

log = logging.getLogger("icnd.routing")


class NeighborWatch:
    """The log lines of the module docstring for `router`'s neighbours; `run` checks every `interval` s."""

    def __init__(self, router: Router, *, dead_interval: float, interval: float) -> None:
        self._router = router
        self._dead = dead_interval
        self._interval = interval
        self._silent_since: dict[int, float] = {}  # face -> when it was first seen connected, not answering
        self._warned: set[int] = set()  # faces whose silence or loss was warned about
        self._up: set[int] = set()  # faces whose neighbour was up at the last check

    async def run(self) -> None:
        while True:
            self.check(trio.current_time())
            await trio.sleep(self._interval)

    def check(self, now: float) -> None:
        neighbors = self._router.neighbors
        for face, nb in list(neighbors.items()):
            if nb.up:
                if face in self._warned:
                    log.warning("neighbor %s (%s, face %d): answers hellos again", nb.name, nb.uri, face)
                elif face not in self._up:
                    log.info("neighbor %s (%s, face %d): up", nb.name, nb.uri, face)
                self._warned.discard(face)
                self._silent_since.pop(face, None)
                self._up.add(face)
            elif face in self._up:
                self._up.discard(face)
                self._warned.add(face)
                why = f"no hello answered for {self._dead:g} s" if nb.link_up else "its face lost the peer"
                log.warning("neighbor %s (%s, face %d): down, %s", nb.name, nb.uri, face, why)
            elif not nb.link_up:
                self._silent_since.pop(face, None)
            elif now - self._silent_since.setdefault(face, now) >= self._dead and face not in self._warned:
                self._warned.add(face)
                log.warning("neighbor %s (face %d): connected, but no hello answered within %g s: is an icnd "
                            "node listening there? (check the address, the port and any firewall)",
                            nb.uri, face, self._dead)
        for gone in (self._up | self._warned | set(self._silent_since)) - neighbors.keys():
            self._up.discard(gone)
            self._warned.discard(gone)
            self._silent_since.pop(gone, None)
