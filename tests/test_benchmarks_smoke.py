"""The benchmark script runs in quick mode and reports every key as a number (no timing asserted)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
NUMERIC_KEYS = (
    "postprocess_ms_p50_k50",
    "postprocess_ms_p95_k50",
    "postprocess_ms_p50_k200",
    "postprocess_ms_p95_k200",
    "postprocess_ms_p50_k1000",
    "postprocess_ms_p95_k1000",
    "search_ms_p50_k200",
    "bubble_ms_p50",
    "trace_write_ms_p50",
    "rebubble_qps_sequential",
    "rebubble_qps_batched",
    "ingest_chunks_per_s",
    "raw_bulk_docs_per_s",
    "tokenize_tokens_per_s",
    "embedding_load_s",
    "embedding_chunks_per_s",
    "embedding_question_ms",
    "peak_rss_mb",
    "cli_help_s_p50",
    "python_startup_s_p50",
)


@pytest.mark.integration
def test_quick_benchmark_prints_every_key_as_a_number() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    for key in NUMERIC_KEYS:
        value = results[key]
        assert isinstance(value, int | float) and not isinstance(value, bool), key
        assert math.isfinite(value) and value > 0, (key, value)
    assert results["engine"].startswith("osmem-server")
    assert results["machine"]["cores"] >= 1 and results["machine"]["cpu_model"]
    assert set(results["targets"]) and all(isinstance(v, bool) for v in results["targets"].values())
    assert "PASS" in done.stderr or "FAIL" in done.stderr


def test_the_floor_script_measures_each_part_and_sums_them() -> None:
    """``bench_floor.py`` on a few candidates: every part is a positive time, the floor is their sum."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT.parent / "bench_floor.py"), "--k", "20", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    values = dict(line.split()[:2] for line in done.stdout.splitlines() if line.endswith(tuple("0123456789")))
    parts = ("records_ms_p50", "score_ms_p50", "words_ms_p50", "select_ms_p50")
    assert all(float(values[part]) > 0 for part in (*parts, "build_bubble_ms_p50"))
    assert float(values["floor_ms"]) == pytest.approx(sum(float(values[part]) for part in parts), abs=0.002)
