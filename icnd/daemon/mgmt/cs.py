"""``cs/*``: the Content Store."""

from __future__ import annotations

import logging
from typing import Any

import trio

from icnd.core.tables.cs import ContentStore
from icnd.daemon.mgmt.args import arg, name_arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.errors import CommandError
from icnd.faces import Face
from icnd.name import T_DIGEST

MAX_LIST = 10_000
LOG_INTERVAL = 60.0  # seconds between log lines about evicted unverifiable Data
log = logging.getLogger("icnd.cs")


class CsManager:
    def __init__(self, cs: ContentStore) -> None:
        self.cs = cs
        self._last_log = -LOG_INTERVAL

    def commands(self) -> Commands:
        return {("cs", "list"): self.list, ("cs", "erase"): self.erase, ("cs", "evict"): self.evict}

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

    async def evict(self, face: Face, args: dict[str, Any]) -> Any:
        """Remove the one Data whose full name (ending in its implicit digest) is
        `name`: what a local consumer asks for a Data that failed its
        verification, so that its retry goes past this cache (a cache never keeps answering with a
        Data its consumers refuse)."""
        name = name_arg(arg(args, "name", str))
        comps = name.comps
        if not comps or comps[-1][0] != T_DIGEST:
            raise CommandError(400, "name must end with the Data's implicit digest (sha256digest=...)")
        evicted = self.cs.discard_exact(comps)
        if evicted:
            now = trio.current_time()
            if now - self._last_log >= LOG_INTERVAL:
                self._last_log = now
                log.warning("evicted %s from the content store: a local consumer could not verify it "
                            "(%d so far)", name[:-1], self.cs.evicted_unverified)
        return {"evicted": int(evicted)}
