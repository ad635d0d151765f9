"""Named functions: the decorator, loading ``MODULE:CALLABLE``, and the
per-function settings a host needs (purity, authorization policy).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar, overload

from icnd.name import Name
from icnd.trust.schema import Pattern
from icnd.trust.validator import caller_allowed

_ATTR = "__icnd_function__"


@dataclass(frozen=True)
class FunctionInfo:
    pure: bool = False
    freshness_ms: int = 3_600_000  # how long a pure result may be cached


F = TypeVar("F", bound=Callable[..., Any])


@overload
def function(_fn: F, *, pure: bool = ..., freshness: float = ...) -> F: ...


@overload
def function(_fn: None = None, *, pure: bool = ..., freshness: float = ...) -> Callable[[F], F]: ...


def function(_fn: F | None = None, *, pure: bool = False, freshness: float = 3600.0) -> F | Callable[[F], F]:
    """Mark a callable as a named function.

    ``pure=True`` declares that the result is determined by the name and the
    arguments: results are then cached and shared (calls named by
    ``params-sha256=`` are answered from Content Stores, and the host
    memoizes RICE calls), so equal calls run the function once.  A host with
    an allow list for it answers only proven callers (see
    `icnd.compute.rice`): then results are shared only among them."""

    def mark(fn: F) -> F:
        setattr(fn, _ATTR, FunctionInfo(pure=pure, freshness_ms=int(freshness * 1000)))
        return fn

    return mark(_fn) if _fn is not None else mark


def info(fn: Callable[..., Any]) -> FunctionInfo:
    return getattr(fn, _ATTR, FunctionInfo())


@dataclass
class HostedFunction:
    prefix: Name
    fn: Callable[..., Any]
    # who may call: key-name prefixes or schema patterns ("/net/<user>/KEY/<*>"); empty: any proven caller
    allow: tuple[Name | Pattern, ...] = ()
    info: FunctionInfo = field(default_factory=FunctionInfo)
    target: str | None = None  # MODULE:CALLABLE that imports `fn` (what a worker process runs), when known

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    def allows(self, key_name: Name) -> bool:
        """`key_name` matches an allow entry (a prefix, or a schema pattern as in
        `caller_allowed`), or there is no allow list."""
        return not self.allow or caller_allowed(self.allow, key_name)


def load_callable(target: str) -> Callable[..., Any]:
    """Import ``MODULE:CALLABLE`` (the callable may be dotted: ``mod:Class.method``)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{target!r}: expected MODULE:CALLABLE")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"{target!r}: cannot import {module_name}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{target!r}: {module_name} has no {attr}") from None
    if not callable(obj):
        raise ValueError(f"{target!r} is not callable")
    return obj


def target_of(fn: Callable[..., Any]) -> str | None:
    """``MODULE:CALLABLE`` naming `fn` if importing it gives `fn` back (not a
    lambda, a closure or a bound method), else None."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or not qualname or "<" in qualname:
        return None
    target = f"{module}:{qualname}"
    try:
        return target if load_callable(target) is fn else None
    except Exception:  # not importable by that name, for whatever reason
        return None


def hosted(prefix: str | Name, fn: Callable[..., Any], allow: Sequence[str | Name | Pattern] = (),
           target: str | None = None) -> HostedFunction:
    prefix = Name(prefix)
    if len(prefix) < 1:
        raise ValueError("a function prefix needs at least one component, e.g. /fn/NAME")
    entries: list[Name | Pattern] = []
    for a in allow:
        if isinstance(a, (Name, Pattern)):
            entries.append(a)
        elif "<" in a:
            entries.append(Pattern.parse(a))  # ValueError naming the bad component
        else:
            entries.append(Name(a))
    return HostedFunction(prefix, fn, tuple(entries), info(fn), target)
