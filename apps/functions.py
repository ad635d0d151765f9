"""Example named functions, hosted with ``icnd run --function apps.functions:NAME=/fn/NAME``
or listed under a node's ``functions`` in a topology file.

Arguments and results are plain values and numpy arrays (never pickled).
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

import icnd


@icnd.function(pure=True)
def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Matrix product; pure, so equal calls are answered from caches."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"cannot multiply {a.shape} by {b.shape}")
    return a @ b


@icnd.function(pure=True)
def add(a: float, b: float) -> float:
    return a + b


def word_count(text: str | bytes, top: int = 10) -> list[list]:
    """The `top` most frequent words of a text (str or UTF-8 bytes)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    words = [w.strip(".,;:!?\"'()[]").lower() for w in text.split()]
    return [[w, n] for w, n in Counter(w for w in words if w).most_common(int(top))]


async def word_count_object(name: str, top: int = 10) -> list[list]:
    """Word count over a text published as a named object: the host fetches it by name."""
    async with icnd.connect() as client:
        text = await client.fetch_object(name)
    return word_count(text, top)


@icnd.function(pure=True)
def normalize(image: np.ndarray) -> np.ndarray:
    """An array transform: scale to [0, 1] per channel (last axis), as float32."""
    x = np.asarray(image, dtype=np.float32)
    lo = x.min(axis=tuple(range(x.ndim - 1)), keepdims=True)
    hi = x.max(axis=tuple(range(x.ndim - 1)), keepdims=True)
    return (x - lo) / np.where(hi > lo, hi - lo, 1)


def slow(seconds: float, value: object = "done") -> object:
    """Deliberately slow: sleeps, then returns `value` (exercises thunks)."""
    time.sleep(float(seconds))
    return value


def fail(message: str = "boom") -> None:
    """Always raises: the caller gets icnd.RemoteError('ValueError', message)."""
    raise ValueError(message)


def double(x):
    """Twice x (numbers and numpy arrays alike)."""
    return x * 2


def total(x: np.ndarray | bytes) -> float:
    """The sum of an array's elements (of a bytes value's bytes): a small
    answer about a large argument, e.g. one passed as ``icnd.Ref(name)``."""
    if isinstance(x, (bytes, bytearray, memoryview)):
        return float(sum(bytes(x)))
    return float(np.asarray(x).sum())


@icnd.function(pure=True)
def digest(x: np.ndarray | bytes) -> str:
    """SHA-256 (hex) of a bytes value, or of an array's dtype, shape and
    bytes; pure, so a repeated call with the same bytes is answered from the
    memo (a named argument's memo key is its content's digest, not its name)."""
    import hashlib

    if isinstance(x, (bytes, bytearray, memoryview)):
        return hashlib.sha256(bytes(x)).hexdigest()
    a = np.ascontiguousarray(x)
    return hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()
