"""``status/get``: the node's status report (`Node.status`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icnd.daemon.mgmt.dispatcher import Commands
from icnd.faces import Face


class StatusManager:
    def __init__(self, status: Callable[[], dict[str, Any]]) -> None:
        self.status = status

    def commands(self) -> Commands:
        return {("status", "get"): self.get}

    async def get(self, face: Face, args: dict[str, Any]) -> Any:
        return self.status()
