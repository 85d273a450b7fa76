"""Shared fixtures. Every test runs with its own ESBUBBLE_HOME, never the user's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Keep tests out of the user's data directory and away from any configured cluster."""
    home = tmp_path_factory.mktemp("esbubble-home")
    monkeypatch.setenv("ESBUBBLE_HOME", str(home))
    yield home
