"""Load: eight concurrent `bubble` processes and a `rebubble` batch against one daemon engine.

Every run's trace must be complete (one record per candidate) and belong to
its own run id. The test prints the measured throughput (run with ``-s``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from esbubble.queryset import load_queries
from esbubble.store.audit import find_manifests, read_run, trace_records
from esbubble.store.connection import open_store
from esbubble.store.settings import load_settings

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
PROFILE = str(SAMPLE / "profile.toml")
CONCURRENT_BUBBLES = 8


def _cli(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "ESBUBBLE_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-c", "from esbubble.app.cli import main; main()", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ok(process: subprocess.Popen[str], timeout: float = 300) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return out


@pytest.fixture
def daemon(isolated_home: Path) -> Iterator[Path]:
    _ok(_cli(isolated_home, "engine", "start"))
    try:
        _ok(_cli(isolated_home, "init"))
        sample = [str(SAMPLE / n) for n in ("quote_job.xlsx", "site_memo.md", "specification.pdf")]
        _ok(_cli(isolated_home, "ingest", *sample, "--profile", PROFILE))
        yield isolated_home
    finally:
        _cli(isolated_home, "engine", "stop").communicate(timeout=120)


def test_eight_bubbles_and_a_batch_at_once_keep_every_trace_whole_and_separate(daemon: Path) -> None:
    cases = load_queries(SAMPLE / "queries.jsonl").cases
    queries = [case.query for case in cases[:CONCURRENT_BUBBLES]]
    started = time.perf_counter()
    bubbles = [_cli(daemon, "bubble", q, "--profile", PROFILE, "--json") for q in queries]
    batch = _cli(
        daemon, "rebubble", str(SAMPLE / "queries.jsonl"), "--profile", PROFILE, "--workers", "2", "--json"
    )
    outputs = [json.loads(_ok(p)) for p in bubbles]
    batch_out = json.loads(_ok(batch))
    elapsed = time.perf_counter() - started

    with open_store(load_settings()) as store:
        run_ids = [o["run_id"] for o in outputs]
        assert len(set(run_ids)) == CONCURRENT_BUBBLES
        records_total = 0
        for query, output in zip(queries, outputs, strict=True):
            manifest, records = read_run(store, output["run_id"])
            assert manifest.query == query
            assert len(records) == manifest.totals.candidates > 0
            assert {r["run_id"] for r in records} == {output["run_id"]}
            assert {r["query_hash"] for r in records} == {manifest.query_hash}
            assert len({r["trace_id"] for r in records}) == len(records)
            selected = [
                r["chunk_id"]
                for r in sorted(records, key=lambda r: r["selection_order"] or 0)
                if r["selection_order"]
            ]
            assert selected == [c["chunk_id"] for c in output["selected"]]
            records_total += len(records)
        manifests = find_manifests(store, batch_out["batch_id"])
        assert len(manifests) == len(cases)
        batch_records = trace_records(store, [m.run_id for m in manifests])
        for manifest in manifests:
            mine = [r for r in batch_records if r["run_id"] == manifest.run_id]
            assert len(mine) == manifest.totals.candidates
            assert {r["batch_id"] for r in mine} == {batch_out["batch_id"]}
        records_total += len(batch_records)
    runs = CONCURRENT_BUBBLES + len(cases)
    print(
        f"\nload: {runs} runs ({CONCURRENT_BUBBLES} concurrent `bubble` processes "
        f"+ a {len(cases)}-query batch) "
        f"in {elapsed:.2f} s = {runs / elapsed:.1f} runs/s, {records_total / elapsed:.0f} trace records/s "
        f"(wall time includes {CONCURRENT_BUBBLES + 1} Python process start-ups)"
    )
