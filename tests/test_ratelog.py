"""`icnd.ratelog.RateLimitedLog`: at most one line per interval, with how many were left out."""

from __future__ import annotations

import logging

import pytest

from icnd.ratelog import RateLimitedLog

LOGGER = "icnd.test.ratelog"


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_first_warning_is_written_at_once_whatever_the_clock_origin(caplog: pytest.LogCaptureFixture) -> None:
    rl = RateLimitedLog(logging.getLogger(LOGGER), interval=10.0)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        rl.warning(-1000.0, "refused %s", "a")
    assert _messages(caplog) == ["refused a"]


def test_warnings_within_the_interval_are_counted_not_written(caplog: pytest.LogCaptureFixture) -> None:
    rl = RateLimitedLog(logging.getLogger(LOGGER), interval=10.0)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for i in range(50):
            rl.warning(100.0 + i * 0.1, "refused %d", i)
        assert _messages(caplog) == ["refused 0"]
        assert rl.suppressed == 49
        rl.warning(109.99, "refused %d", 50)  # still inside the interval
        assert len(_messages(caplog)) == 1
        rl.warning(110.0, "refused %d", 51)  # the interval is over: one line, with the count
    assert _messages(caplog) == ["refused 0", "refused 51 (and 50 more since the last report)"]
    assert rl.suppressed == 0


def test_the_interval_restarts_at_each_written_line(caplog: pytest.LogCaptureFixture) -> None:
    rl = RateLimitedLog(logging.getLogger(LOGGER), interval=2.0)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        rl.warning(0.0, "x")
        rl.warning(5.0, "y")  # after a quiet spell: no count
        rl.warning(6.0, "z")  # within 2 s of the line at 5.0: left out
        rl.warning(7.0, "w")
    assert _messages(caplog) == ["x", "y", "w (and 1 more since the last report)"]


def test_separate_instances_limit_separately(caplog: pytest.LogCaptureFixture) -> None:
    a = RateLimitedLog(logging.getLogger(LOGGER))
    b = RateLimitedLog(logging.getLogger(LOGGER))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        a.warning(0.0, "a")
        b.warning(0.0, "b")
        a.warning(1.0, "a again")
    assert _messages(caplog) == ["a", "b"]
