"""The boundary where a defect in handling one packet or timer stops.

Every received packet, every routing record and every timer is handled by
code that validates what it reads; still, a defect there must cost one
packet, never a read loop, a face or the node.  The node's receive path and
its timer loops catch whatever a handler raises, here: the packet is
dropped, the error counted by component (``handler_errors_<component>`` in
``icnd status --json``, and their sum ``handler_errors``), and logged at
most once per interval with what was being handled (the traceback at debug
level).  Cancellation and KeyboardInterrupt are not ``Exception``s and pass.
"""

from __future__ import annotations

import logging
import time

from icnd.ratelog import RateLimitedLog

__all__ = ["COMPONENTS", "HandlerErrors"]

log = logging.getLogger("icnd.node")

COMPONENTS = ("forwarder", "routing", "management", "timers", "routing_timers")


class HandlerErrors:
    """Counts and reports exceptions caught at the boundary (see the module docstring)."""

    def __init__(self, interval: float = 10.0) -> None:
        self.counts = dict.fromkeys(COMPONENTS, 0)
        self._log = RateLimitedLog(log, interval)

    def caught(self, component: str, what: object, exc: BaseException) -> None:
        self.counts[component] = self.counts.get(component, 0) + 1
        self._log.warning(time.monotonic(), "%s: dropped %s after a handler error: %s: %s", component, what,
                          type(exc).__name__, exc)
        log.debug("%s: handler error on %s", component, what, exc_info=exc)

    def as_counters(self) -> dict[str, int]:
        out = {f"handler_errors_{c}": n for c, n in self.counts.items()}
        out["handler_errors"] = sum(self.counts.values())
        return out
