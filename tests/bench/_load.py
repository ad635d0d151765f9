"""Load a bench/ script as a module for its tests (one loader for all of them)."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

BENCH = Path(__file__).resolve().parents[2] / "bench"


@contextlib.contextmanager
def bench_module(script: str, *, helpers: tuple[str, ...] = ()) -> Iterator[ModuleType]:
    """bench/`script` as a module, registered while the block runs (dataclasses need that).
    The script puts bench/ on sys.path (and may import `helpers` from it): both are undone after."""
    name = "icnd_bench_" + script.removesuffix(".py")
    saved = list(sys.path)
    had = {m: sys.modules.get(m) for m in helpers}
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path[:] = saved
        sys.modules.pop(name, None)
        for m, old in had.items():
            if old is None:
                sys.modules.pop(m, None)
