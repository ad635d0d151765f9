"""One rate-limited logger for refusals, shared by every layer.

A refusal (a full table, a bad packet, a budget exceeded) may repeat once
per packet; logging each would let a peer flood the log.  `RateLimitedLog`
writes the first refusal at once, then at most one line per `interval`
seconds, saying how many it left out since the line before.

The caller passes the time to `warning`, so sans-IO code (the forwarder,
which has no clock of its own) uses it with the time it was given, and the
shell with its monotonic clock.  One instance is one kind of refusal: code
that rate-limits several kinds apart keeps one per kind.
"""

from __future__ import annotations

import logging

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    """Logs a warning at most once per `interval` seconds, with how many were left out since."""

    __slots__ = ("_log", "_interval", "_next", "_suppressed")

    def __init__(self, logger: logging.Logger, interval: float = 10.0) -> None:
        self._log = logger
        self._interval = interval
        self._next: float | None = None  # the earliest time of the next line; None: nothing logged yet
        self._suppressed = 0

    @property
    def suppressed(self) -> int:
        """How many warnings were left out since the last line written."""
        return self._suppressed

    def warning(self, now: float, message: str, *args: object) -> None:
        """Log `message % args` at `now` (seconds, any monotonic origin) unless a
        line was written less than `interval` ago; then only count it."""
        if self._next is not None and now < self._next:
            self._suppressed += 1
            return
        self._next = now + self._interval
        if self._suppressed:
            message += f" (and {self._suppressed} more since the last report)"
            self._suppressed = 0
        self._log.warning(message, *args)
