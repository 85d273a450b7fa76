"""The audit history on disk: archived at compaction, read back when the engine no longer holds it, pushed."""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from esbubble.app.cli import cli
from esbubble.store.engine import daemon_status, stop_daemon
from esbubble.store.history import history_dir, prune
from esbubble.store.settings import load_settings

pytestmark = pytest.mark.integration
SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _ok(*args: str) -> Result:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return result


def test_history_is_read_back_from_disk_and_pushed_once(
    isolated_home: Path, engine_url: str, tmp_path: Path
) -> None:
    (isolated_home / "config.toml").write_text("[engine]\ntrace_window_runs = 0\n")  # the engine keeps none
    prefix = ["--prefix", f"h{uuid.uuid4().hex[:10]}"]
    _ok(*prefix, "init")
    _ok(*prefix, "ingest", str(SAMPLE / "quote_job.xlsx"), str(SAMPLE / "site_memo.md"))
    bubble = json.loads(_ok(*prefix, "bubble", "scope of work", "--json").stdout)
    before = json.loads(_ok(*prefix, "trace", bubble["run_id"], "--json").stdout)
    assert len(before["candidates"]) == bubble["candidates"] > 0
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q1", "query": "gutters"}\n{"id": "q2", "query": "scope of work"}\n')
    batch = json.loads(_ok(*prefix, "rebubble", str(queries), "--json").stdout)

    stop_daemon(load_settings(home=isolated_home))  # compaction: archive, then drop every trace record
    archived = list(history_dir(isolated_home).glob(f"{prefix[1]}-traces-*/*.ndjson.gz"))
    assert archived, "the trace records were archived"
    with gzip.open(archived[0], "rb") as lines:
        assert all({"_index", "_id", "_source"} == set(json.loads(line)) for line in lines)

    after = json.loads(_ok(*prefix, "trace", bubble["run_id"], "--json").stdout)
    assert daemon_status(load_settings(home=isolated_home)).running
    assert after == before, "the full trace is read back from disk"

    compared = json.loads(
        _ok(*prefix, "rebubble", str(queries), "--compare", batch["batch_id"], "--json").stdout
    )
    assert compared["comparison"] is not None
    changes = compared["comparison"]["changes"]
    assert len(changes) == 2
    assert all(not c["entered"] and not c["left"] and c["token_delta"] == 0 for c in changes), (
        "same corpus, same profile: the archived runs' selections were read back and match"
    )
    report = _ok(*prefix, "report", batch["batch_id"], "--out", str(tmp_path / "report.html"))
    assert "2 runs" in report.output

    first = json.loads(_ok(*prefix, "traces", "push", "--url", engine_url, "--json").stdout)
    assert first["sent"] > len(before["candidates"]) and first["failed"] == 0
    assert first["created"] == first["sent"]
    second = json.loads(_ok(*prefix, "traces", "push", "--url", engine_url, "--json").stdout)
    assert second["sent"] == first["sent"]
    assert second["created"] == 0 and second["existing"] == second["sent"], "a second push changes nothing"


def test_engine_status_exits_3_when_stopped(isolated_home: Path) -> None:
    result = run("engine", "status")
    assert result.exit_code == 3
    assert result.output.startswith("stopped")


def test_prune_drops_whole_months_and_part_of_the_cutoff_month(isolated_home: Path) -> None:
    def write(index: str, stamps: list[datetime]) -> None:
        directory = history_dir(isolated_home) / index
        directory.mkdir(parents=True)
        with gzip.open(directory / "00000001.ndjson.gz", "wb") as out:
            for n, stamp in enumerate(stamps):
                action = {
                    "_index": index,
                    "_id": f"{index}-{n}",
                    "_source": {"@timestamp": stamp.isoformat()},
                }
                out.write(json.dumps(action).encode() + b"\n")

    write("p-traces-2026.09", [datetime(2026, 9, 3, tzinfo=UTC)] * 3)
    write("p-traces-2026.10", [datetime(2026, 10, 2, tzinfo=UTC), datetime(2026, 10, 20, tzinfo=UTC)])
    dropped = prune(isolated_home, datetime(2026, 10, 10, tzinfo=UTC))
    assert dropped == 4
    assert not (history_dir(isolated_home) / "p-traces-2026.09").exists()
    with gzip.open(history_dir(isolated_home) / "p-traces-2026.10" / "00000001.ndjson.gz", "rb") as lines:
        kept = [json.loads(line)["_id"] for line in lines]
    assert kept == ["p-traces-2026.10-1"]
    assert prune(isolated_home, datetime(2026, 10, 10, tzinfo=UTC) - timedelta(days=1)) == 0


def test_archiving_a_segment_twice_writes_one_file_and_a_new_journal_never_overwrites(
    isolated_home: Path,
) -> None:
    from esbubble.store.history import archive_segment
    from esbubble.store.journal import Journal, segments

    def bulk_entry(trace_id: str) -> dict[str, object]:
        action = json.dumps({"index": {"_index": "p-traces-2026.11", "_id": trace_id}})
        source = json.dumps({"@timestamp": "2026-11-02T00:00:00+00:00", "run_id": "r", "trace_id": trace_id})
        return {
            "id": trace_id,
            "m": "PUT",
            "p": "/_bulk",
            "ct": "application/x-ndjson",
            "b": f"{action}\n{source}\n",
        }

    journal = Journal(isolated_home / "engine" / "journal")
    with journal.locked():
        journal.append(bulk_entry("t1"))
    segment = segments(journal.directory)[0]
    assert archive_segment(isolated_home, segment) == archive_segment(isolated_home, segment) == 1
    month = history_dir(isolated_home) / "p-traces-2026.11"
    assert len(list(month.glob("*.ndjson.gz"))) == 1, "re-archiving after a crash rewrites the same file"

    segment.unlink()  # a journal started afresh reuses segment number 1
    with journal.locked():
        journal.append(bulk_entry("t2"))
    archive_segment(isolated_home, segments(journal.directory)[0])
    ids = []
    for path in month.glob("*.ndjson.gz"):
        with gzip.open(path, "rb") as lines:
            ids += [json.loads(line)["_id"] for line in lines]
    ids.sort()
    assert ids == ["t1", "t2"], "the older archive is kept"
