"""Logging for the daemon and the command-line tools: stderr only.

Two formats, chosen by ``--log-json``:

* plain, one line per record, UTC timestamps with milliseconds::

      2026-11-21T23:59:59.123Z INFO icnd.node: node /node/a ready on ...

* JSON lines, one object per record with the keys ``ts``, ``level``,
  ``logger``, ``msg`` (and ``exc``, the formatted traceback, when the record
  carries an exception) — for log shippers and tests.

Only the ``icnd`` logger hierarchy is configured; it does not propagate to
the root logger, so libraries and applications keep their own logging.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TextIO

LOGGER = "icnd"
LEVELS = ("debug", "info", "warning", "error")


def _timestamp(created: float) -> str:
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


class PlainFormatter(logging.Formatter):
    """``<ts> <LEVEL> <logger>: <message>``, traceback lines (if any) after it."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record.created)} {record.levelname} {record.name}: {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg (and exc)."""

    def format(self, record: logging.LogRecord) -> str:
        obj = {
            "ts": _timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            obj["exc"] = self.formatException(record.exc_info)
        return json.dumps(obj, ensure_ascii=False)


def setup_logging(level: str = "info", json_lines: bool = False, stream: TextIO | None = None) -> logging.Logger:
    """Send the ``icnd`` logger's records at `level` and above to stderr.

    Calling it again replaces the previous configuration (no duplicate
    handlers).  Raises ValueError for a level outside `LEVELS`."""
    name = level.lower()
    if name not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
    logger = logging.getLogger(LOGGER)
    for old in list(logger.handlers):
        logger.removeHandler(old)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else PlainFormatter())
    logger.addHandler(handler)
    logger.setLevel(getattr(logging, name.upper()))
    logger.propagate = False
    return logger
