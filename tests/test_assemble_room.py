"""``assemble`` with no room for context fails before a run or its trace is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from _store_data import QUOTE_JOB
from click.testing import CliRunner

from esbubble.app.cli import cli
from esbubble.app.deliver import run_delivery
from esbubble.config import parse_config
from esbubble.errors import ConfigError
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store

pytestmark = pytest.mark.integration


def _audit_documents(store: Store) -> int:
    names = f"{store.names.traces},{store.names.runs}"
    store.client.indices.refresh(index=names, ignore_unavailable=True, allow_no_indices=True)
    body = store.client.count(index=names, ignore_unavailable=True, allow_no_indices=True).body
    return int(body["count"])


def _spooled(home: Path) -> list[Path]:
    return [p for p in home.rglob("*") if p.is_file() and "spool" in p.parts]


@pytest.mark.parametrize(
    ("assemble_table", "needle"),
    [
        ({"max_tokens": 200, "reserved_tokens": 150}, "no room for context"),
        ({"max_tokens": 300, "reserved_tokens": 0, "system_prompt": "word " * 400}, "no room for context"),
    ],
)
def test_cli_assemble_without_room_records_nothing(
    store: Store, tmp_path: Path, isolated_home: Path, assemble_table: dict[str, object], needle: str
) -> None:
    index_chunks(store, QUOTE_JOB)
    lines = [f"{key} = {value!r}".replace("'", '"') for key, value in assemble_table.items()]
    profile = tmp_path / "tight.toml"
    profile.write_text("[assemble]\n" + "\n".join(lines) + "\n", encoding="utf-8")
    assert store.settings.url is not None
    flags = ["--url", store.settings.url, "--prefix", store.names.prefix]
    result = CliRunner().invoke(cli, [*flags, "assemble", "scaffold hire", "--profile", str(profile)])
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and needle in result.stderr
    assert _audit_documents(store) == 0
    assert _spooled(isolated_home) == []


def test_run_delivery_checks_room_before_retrieving(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    config = parse_config({"assemble": {"enabled": True, "max_tokens": 100, "reserved_tokens": 90}})
    with pytest.raises(ConfigError, match="no room for context"):
        run_delivery(store, "scaffold hire", config)
    assert _audit_documents(store) == 0
    # The same profile with room records one run.
    roomy = parse_config({"assemble": {"enabled": True}})
    run_delivery(store, "scaffold hire", roomy)
    assert _audit_documents(store) > 0
