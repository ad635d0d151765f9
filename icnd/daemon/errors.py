"""The daemon's own error: what stops a node from starting."""

from __future__ import annotations

from icnd.errors import Error


class StartupError(Error):
    """The node cannot start (bad address, port in use, unusable data dir)."""
