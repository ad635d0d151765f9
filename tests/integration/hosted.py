"""Functions the integration tests host in daemons (imported by `icnd run --function`)."""

from __future__ import annotations

import numpy as np

import icnd

_counted_runs = 0


def echo(value):
    return value


@icnd.function(pure=True)
def counted(x: int) -> int:
    """Doubles x; counted(-1) reports how many times it ran with other arguments."""
    global _counted_runs
    if x == -1:
        return _counted_runs
    _counted_runs += 1
    return 2 * x


def big(nbytes: int) -> np.ndarray:
    return (np.arange(nbytes, dtype=np.int64) % 251).astype(np.uint8)


def pid() -> int:
    """The process the function runs in."""
    import os

    return os.getpid()


def crash() -> None:
    """A worker that dies mid-call."""
    import os

    os._exit(3)


def sleep(seconds: float, pid_file: str = "") -> float:
    """Sleeps; first writes the process id to `pid_file`, if given."""
    import os
    import time

    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    time.sleep(seconds)
    return seconds


def exit_now() -> None:
    """A function that raises SystemExit."""
    import sys

    sys.exit(3)
