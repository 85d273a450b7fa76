"""``--index`` never turns an audit index into a chunk index: refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _store_data import QUOTE_JOB
from click.testing import CliRunner, Result

from esbubble.app.cli import cli
from esbubble.app.runner import run_bubble
from esbubble.config import BubbleConfig
from esbubble.errors import ConfigError
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store
from esbubble.store.names import IndexNames


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize(
    "index", ["esbubble-traces", "esbubble-runs", "esbubble-traces-2026.11", "esbubble-runs-2031.01"]
)
def test_audit_names_of_the_prefix_are_refused(index: str) -> None:
    with pytest.raises(ConfigError, match="audit trail"):
        IndexNames.for_prefix("esbubble").with_chunk_index(index)


@pytest.mark.parametrize(
    "index", ["esbubble-chunks", "esbubble-chunks-v2", "esbubble-tracesx", "other-traces"]
)
def test_names_that_only_look_alike_are_chunk_indices(index: str) -> None:
    assert IndexNames.for_prefix("esbubble").with_chunk_index(index).chunks == index


def _audit_state(store: Store) -> str:
    """The audit indices' mappings and documents, to show that nothing changed."""
    client = store.client
    client.indices.refresh(index=store.names.pattern)
    mappings = client.indices.get_mapping(index=f"{store.names.traces},{store.names.runs}").body
    hits = client.search(index=f"{store.names.traces},{store.names.runs}", size=1000).body["hits"]["hits"]
    return json.dumps([mappings, sorted(h["_id"] for h in hits)], sort_keys=True)


@pytest.fixture
def audited(store: Store, tmp_path: Path) -> tuple[Store, Path]:
    index_chunks(store, QUOTE_JOB)
    run_bubble(store, "scaffold hire", BubbleConfig())
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nScaffold towers are checked weekly.\n", encoding="utf-8")
    return store, folder


@pytest.mark.integration
@pytest.mark.parametrize("audit", ["traces", "runs"])
@pytest.mark.parametrize("command", ["ingest", "bubble", "assemble"])
def test_cli_refuses_the_prefix_audit_alias_and_writes_nothing(
    audited: tuple[Store, Path], audit: str, command: str
) -> None:
    store, folder = audited
    before = _audit_state(store)
    index = f"{store.names.prefix}-{audit}"
    assert store.settings.url is not None
    flags = ["--url", store.settings.url, "--prefix", store.names.prefix]
    argument = str(folder) if command == "ingest" else "scaffold"
    result = run(*flags, command, argument, "--index", index)
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "audit trail" in lines[0] and index in lines[0]
    assert _audit_state(store) == before


@pytest.mark.integration
def test_another_prefixes_audit_index_is_refused_by_its_mapping(audited: tuple[Store, Path]) -> None:
    store, folder = audited
    before = _audit_state(store)
    assert store.settings.url is not None
    result = run(
        "--url", store.settings.url, "--prefix", f"{store.names.prefix}x", "ingest", str(folder),
        "--index", store.names.traces,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "holds esbubble audit records" in result.stderr
    assert _audit_state(store) == before
