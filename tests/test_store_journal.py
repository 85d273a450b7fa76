"""The journal on its own: which requests are writes, checksummed lines, torn tails, voided entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbubble.store.journal import Journal, is_write, read_journal, repair_tail, segments


@pytest.mark.parametrize(
    ("method", "target", "write"),
    [
        ("POST", "/_bulk", True),
        ("POST", "/esbubble-traces-2026.11/_bulk?refresh=true", True),
        ("PUT", "/esbubble-chunks-v1", True),
        ("DELETE", "/esbubble-runs-2026.10", True),
        ("POST", "/esbubble-chunks/_delete_by_query", True),
        ("PUT", "/_index_template/esbubble-chunks", True),
        ("PUT", "/_component_template/esbubble-settings", True),
        ("POST", "/_aliases", True),
        ("PUT", "/esbubble-chunks-v1/_mapping", True),
        ("POST", "/esbubble-chunks/_search", False),
        ("POST", "/esbubble-chunks/_count", False),
        ("POST", "/esbubble-chunks/_refresh", False),
        ("GET", "/esbubble-chunks/_doc/a", False),
        ("HEAD", "/esbubble-chunks", False),
        ("DELETE", "/_search/scroll", False),
        ("POST", "/_search/scroll", False),
    ],
)
def test_is_write(method: str, target: str, write: bool) -> None:
    assert is_write(method, target) is write


def _entry(n: int) -> dict[str, object]:
    return {
        "id": f"e{n}",
        "m": "PUT",
        "p": f"/i/_doc/{n}",
        "ct": "application/json",
        "b": json.dumps({"n": n}),
    }


def test_entries_come_back_in_order_and_voided_ones_are_left_out(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    with journal.locked():
        for n in range(3):
            journal.append(_entry(n))
        journal.append({"void": "e1"})
        assert journal.rotate() == 1
        journal.append(_entry(3))
    read = read_journal(tmp_path)
    assert [e.entry_id for e in read.entries] == ["e0", "e2", "e3"]
    assert read.damaged == ()
    assert [e.entry_id for e in read_journal(tmp_path, after_segment=1).entries] == ["e3"]


@given(cut=st.integers(min_value=1, max_value=60))
def test_a_torn_last_line_is_skipped_and_cut_and_nothing_else_is_lost(
    tmp_path_factory: pytest.TempPathFactory, cut: int
) -> None:
    directory = tmp_path_factory.mktemp("journal")
    journal = Journal(directory)
    with journal.locked():
        for n in range(3):
            journal.append(_entry(n))
    path = segments(directory)[-1]
    whole = path.read_bytes()
    last_start = whole[:-1].rfind(b"\n") + 1
    path.write_bytes(whole[: max(last_start + 1, len(whole) - cut)])  # the last append died midway
    read = read_journal(directory)
    assert [e.entry_id for e in read.entries] == ["e0", "e1"]
    assert len(read.damaged) == 1
    assert repair_tail(directory) > 0
    assert repair_tail(directory) == 0, "cutting twice cuts nothing more"
    with journal.locked():
        journal.append(_entry(9))
    again = read_journal(directory)
    assert [e.entry_id for e in again.entries] == ["e0", "e1", "e9"] and again.damaged == ()


def test_a_corrupt_line_in_the_middle_is_reported_not_replayed(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    with journal.locked():
        for n in range(3):
            journal.append(_entry(n))
    path = segments(tmp_path)[-1]
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"/i/_doc/1", b"/i/_doc/7")
    path.write_bytes(b"\n".join(lines))
    read = read_journal(tmp_path)
    assert [e.entry_id for e in read.entries] == ["e0", "e2"]
    assert read.damaged == (f"{path.name}:2: checksum or JSON mismatch",)
