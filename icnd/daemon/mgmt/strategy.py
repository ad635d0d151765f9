"""``strategy/*``: the strategy choice table."""

from __future__ import annotations

from typing import Any

from icnd.core.fw.strategy_choice import StrategyChoice
from icnd.core.tables.fib import TableFull
from icnd.daemon.mgmt.args import arg, name_arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.errors import CommandError
from icnd.faces import Face


class StrategyManager:
    def __init__(self, strategies: StrategyChoice) -> None:
        self.strategies = strategies

    def commands(self) -> Commands:
        return {
            ("strategy", "list"): self.list,
            ("strategy", "set"): self.set,
            ("strategy", "unset"): self.unset,
        }

    async def list(self, face: Face, args: dict[str, Any]) -> Any:
        return [{"prefix": p.to_uri(), "strategy": s} for p, s in self.strategies.items()]

    async def set(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str))
        strategy = arg(args, "strategy", str)
        try:
            self.strategies.set(prefix, strategy)
        except ValueError as exc:
            raise CommandError(400, str(exc)) from None
        except TableFull as exc:
            raise CommandError(409, str(exc)) from None
        return {"prefix": prefix.to_uri(), "strategy": strategy}

    async def unset(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str))
        if not self.strategies.unset(prefix):
            raise CommandError(404, f"no strategy set at {prefix}")
        return {"prefix": prefix.to_uri()}
