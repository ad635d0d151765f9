"""``cs/*``: the Content Store."""

from __future__ import annotations

from typing import Any

import trio

from icnd.core.tables.cs import ContentStore
from icnd.daemon.mgmt.args import arg, name_arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.faces import Face

MAX_LIST = 10_000


class CsManager:
    def __init__(self, cs: ContentStore) -> None:
        self.cs = cs

    def commands(self) -> Commands:
        return {("cs", "list"): self.list, ("cs", "erase"): self.erase}

    async def list(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str, "/"))
        limit = min(arg(args, "limit", int, 1000), MAX_LIST)
        now = trio.current_time()
        out: list[dict[str, Any]] = []
        for entry in self.cs.entries(prefix.comps):
            if len(out) >= limit:
                break
            out.append({
                "name": entry.data.name.to_uri(),
                "size": entry.size,
                "fresh": entry.fresh_until > now,
                "content_type": int(entry.data.content_type),
            })
        return out

    async def erase(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str))
        return {"erased": self.cs.erase(prefix.comps)}
