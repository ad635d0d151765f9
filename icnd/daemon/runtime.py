"""Process-wide tuning for a long-running forwarder process.

A Content Store holds hundreds of thousands of small Data objects; with
CPython's default thresholds the cyclic garbage collector runs a young
collection every 700 allocations and, as the cache turns over, full
collections that walk every cached object (hundreds of milliseconds each).
None of the forwarder's tables form reference cycles, so the daemon raises
the young-generation threshold and freezes everything allocated at start-up
(imported modules, configuration) out of the collector's reach.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000


def tune_gc() -> None:
    """Apply the daemon's garbage-collector settings to this process."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
    gc.collect()
    gc.freeze()
