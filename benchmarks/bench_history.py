"""The embedded engine at real use: ``bubble`` through the CLI as the audit history grows, engine start.

    python benchmarks/bench_history.py                  # history 0, 50k, 500k; start at 20k chunks
    python benchmarks/bench_history.py --sizes 0,5000 --chunks 2000   # smaller, faster
    python benchmarks/run.py --history 0,50000,500000   # the same, from the main script

Each size gets a fresh ``ESBUBBLE_HOME``. The sample corpus is ingested through
the CLI (which starts the background engine), one real ``bubble`` is run, and
its trace records and manifest are cloned into N records of history spread
over the 8–180 days before now: the trace records written straight into the
history archive (the format compaction writes), one run manifest per clone
indexed into the engine (where manifests live). ``engine stop`` compacts;
then ``bubble`` runs through the CLI ``rounds`` times (p50, wall clock, the
engine running). The largest size then gets ``--chunks`` chunks (a
replicated sample workbook), is stopped, and ``engine start`` is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_engine import replicate_workbook
from bench_stats import machine

from esbubble.store.audit import read_run
from esbubble.store.chunks import count_chunks
from esbubble.store.connection import open_store
from esbubble.store.engine import stop_daemon
from esbubble.store.history import archive
from esbubble.store.names import IndexNames
from esbubble.store.settings import Settings

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"
QUERY = "scope of work"
ARCHIVE_BATCH = 20_000  # trace records per archive file, about what one compacted journal segment holds


def _cli(home: Path, *args: str) -> tuple[float, str]:
    """Run the CLI; wall seconds and stdout. Fails loudly."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("esbubble")), *args],
        env={**os.environ, "ESBUBBLE_HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"esbubble {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done.stdout


def help_wall_s(rounds: int = 5) -> float:
    home = Path(tempfile.mkdtemp(prefix="esbubble-help-"))
    return round(statistics.median(_cli(home, "--help")[0] for _ in range(rounds)), 3)


def _seed_history(home: Path, records: int) -> int:
    """Clone one real run into ``records`` trace records of history (and their manifests); runs made."""
    settings = Settings(home=home)
    names = IndexNames.for_prefix(settings.prefix)
    _, out = _cli(home, "bubble", QUERY, "--json")
    run_id = json.loads(out)["run_id"]
    with open_store(settings) as store:
        manifest, traces = read_run(store, run_id)
        per_run = len(traces)
        runs = -(-records // per_run) if records else 0
        now = datetime.now(UTC)
        manifests = []
        actions: list[dict[str, object]] = []
        for n in range(runs):
            stamp = now - timedelta(days=8 + (172 * n) // max(runs, 1), seconds=n)
            clone_id = f"history-{n:07d}"
            source = manifest.model_dump(mode="json", by_alias=True)
            source.update({"run_id": clone_id, "@timestamp": stamp.isoformat()})
            manifests.append({"_index": names.runs_index(stamp), "_id": clone_id, "_source": source})
            for record in traces[: min(per_run, records - n * per_run)]:
                body: dict[str, object] = {
                    **record,
                    "run_id": clone_id,
                    "trace_id": f"{clone_id}:{record['rank']}",
                    "@timestamp": stamp.isoformat(),
                }
                actions.append(
                    {"_index": names.traces_index(stamp), "_id": body["trace_id"], "_source": body}
                )
            if len(actions) >= ARCHIVE_BATCH or n == runs - 1:
                archive(home, f"seed-{n:07d}", actions)
                actions = []
        from elasticsearch.helpers import bulk

        for start in range(0, len(manifests), 2000):
            bulk(store.client, manifests[start : start + 2000], refresh=False)
        store.client.indices.refresh(index=names.runs)
    return runs


def bubble_p50_s(home: Path, rounds: int) -> float:
    _cli(home, "bubble", QUERY, "--json")  # warm: the engine is running, the page cache is warm
    return round(statistics.median(_cli(home, "bubble", QUERY, "--json")[0] for _ in range(rounds)), 3)


def after_rebubbles(home: Path, batches: int, rounds: int) -> dict[str, object]:
    """``bubble`` p50 after ``batches`` re-bubblings of the sample query set, and a restart's time."""
    for _ in range(batches):
        _cli(
            home,
            "rebubble",
            str(SAMPLE / "queries.jsonl"),
            "--profile",
            str(SAMPLE / "profile.toml"),
            "--json",
        )
    after = bubble_p50_s(home, rounds)
    stop_daemon(Settings(home=home))
    restart = _cli(home, "engine", "start")[0]
    return {
        f"bubble_cli_s_p50_after_{batches}_rebubbles": after,
        f"engine_restart_s_after_{batches}_rebubbles": round(restart, 3),
    }


def measure(sizes: list[int], chunks: int, rounds: int, rebubbles: int = 10) -> dict[str, object]:
    results: dict[str, object] = {"esbubble_help_s": help_wall_s()}
    temp = Path(tempfile.mkdtemp(prefix="esbubble-history-"))
    last_home = None
    for size in sizes:
        home = temp / f"home-{size}"
        _cli(home, "init")
        _cli(
            home,
            "ingest",
            *(str(SAMPLE / name) for name in ("quote_job.xlsx", "site_memo.md", "specification.pdf")),
        )
        results[f"history_runs_{size}"] = _seed_history(home, size)
        stop_daemon(Settings(home=home))  # compaction
        _cli(home, "engine", "start")
        results[f"bubble_cli_s_p50_history_{size}"] = bubble_p50_s(home, rounds)
        if size == sizes[0] and rebubbles:
            results.update(after_rebubbles(home, rebubbles, rounds))
        last_home = home
    if sizes and sizes[0] == 0 and results[f"bubble_cli_s_p50_history_{sizes[0]}"]:
        top = results[f"bubble_cli_s_p50_history_{sizes[-1]}"]
        assert isinstance(top, float)
        bottom = results[f"bubble_cli_s_p50_history_{sizes[0]}"]
        assert isinstance(bottom, float)
        results["bubble_ratio_largest_over_0"] = round(top / bottom, 3)
    if last_home is not None and chunks:
        workbook = temp / "chunks.xlsx"
        replicate_workbook(SAMPLE / "quote_job.xlsx", workbook, chunks)
        _cli(last_home, "ingest", str(workbook))
        with open_store(Settings(home=last_home)) as store:
            results["engine_start_chunks"] = count_chunks(store)
        stop_daemon(Settings(home=last_home))
        results["engine_start_history_records"] = sizes[-1]
        results["engine_start_s"] = round(_cli(last_home, "engine", "start")[0], 3)
        results["snapshot_mb"] = round(
            sum(p.stat().st_size for p in (last_home / "engine" / "snapshot").resolve().iterdir()) / 1e6, 1
        )
        results["history_mb"] = round(
            sum(p.stat().st_size for p in (last_home / "history").rglob("*.gz")) / 1e6, 1
        )
        stop_daemon(Settings(home=last_home))
    for size in sizes[:-1]:
        stop_daemon(Settings(home=temp / f"home-{size}"))
    results["machine"] = machine()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="0,50000,500000", help="history sizes (trace records)")
    parser.add_argument("--chunks", type=int, default=20_000, help="chunks for the engine-start measure")
    parser.add_argument("--rounds", type=int, default=7, help="bubble runs per size")
    parser.add_argument("--rebubbles", type=int, default=10, help="rebubble batches before re-measuring")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    started = time.perf_counter()
    results = measure(sizes, args.chunks, args.rounds, args.rebubbles)
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["command"] = " ".join(["python", "benchmarks/bench_history.py", *(argv or sys.argv[1:])])
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
