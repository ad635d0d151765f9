"""The one failure a command raises on purpose, and how it reaches the user."""

from __future__ import annotations

import sys

from icnd.errors import Error

PROG = "icnd"


class CliError(Error):
    """An expected failure: printed as one line, exits with `code` (1 the
    operation failed, 2 usage or configuration)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def print_error(message: str) -> None:
    """``icnd: error: <message>`` on stderr: the whole of an expected failure's output."""
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
