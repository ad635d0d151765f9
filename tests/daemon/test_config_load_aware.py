"""``[routing] load_aware``: whether load-balance weighs the capacity and load function hosts announce."""

from __future__ import annotations

from pathlib import Path

import pytest

from icnd.daemon.config import ConfigError, load


def test_load_aware_defaults_on_and_turns_off(tmp_path: Path) -> None:
    path = tmp_path / "node.toml"
    path.write_text("")
    assert load(str(path)).routing.load_aware is True
    path.write_text("[routing]\nload_aware = false\n")
    assert load(str(path)).routing.load_aware is False


def test_load_aware_must_be_a_boolean(tmp_path: Path) -> None:
    path = tmp_path / "node.toml"
    path.write_text("[routing]\nload_aware = 0\n")
    with pytest.raises(ConfigError, match="load_aware: expected bool"):
        load(str(path))
