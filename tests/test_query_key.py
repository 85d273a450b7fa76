"""The key of the keyed query hash: created once, private to the user, stable across invocations."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from esbubble.app.query_key import KEY_FILE, query_key
from esbubble.errors import ConfigError


def test_the_key_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = query_key(home)
    assert len(key) == 32
    assert stat.S_IMODE((home / KEY_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert query_key(home) == key


def test_concurrent_first_uses_agree_on_one_key(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        keys = set(pool.map(lambda _: query_key(tmp_path), range(16)))
    assert len(keys) == 1


def test_a_damaged_key_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_text("not hex")
    with pytest.raises(ConfigError, match="not a hex key"):
        query_key(tmp_path)
