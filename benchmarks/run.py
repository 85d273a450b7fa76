"""esbubble benchmarks: where the time goes, and whether the Python side is close to free.

    python benchmarks/run.py            # the table
    python benchmarks/run.py --json     # one JSON object on stdout, the table on stderr
    python benchmarks/run.py --quick    # a fast smoke run (fewer rounds, smaller batch and workbook)
    python benchmarks/run.py --url URL  # against a real cluster instead of the embedded engine
    python benchmarks/run.py --core     # only post-processing and search (~1 min): the core targets
    python benchmarks/run.py --history 0,50000,500000  # also: bubble via the CLI as the audit
                                        # history grows, engine start (benchmarks/bench_history.py)

The embedded engine (osmem-server) is started by this script on a fresh
ESBUBBLE_HOME under a temporary directory. Targets are checked and printed
as PASS/FAIL; the exit code is 0 unless ``--strict`` and a target failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import bench_cli
import bench_core
import bench_embedding
import bench_engine
import bench_history
from bench_stats import machine, peak_rss_mb

from esbubble.config import load_profile
from esbubble.ingest import IngestOptions, ingest_paths
from esbubble.queryset import load_queries
from esbubble.store.templates import init_indices

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


@dataclass(frozen=True)
class Plan:
    """How much work one benchmark run does."""

    core_rounds: int
    search_rounds: int
    bubble_rounds: int
    batch_size: int
    workbook_rows: int
    tokenize_rounds: int
    embed_texts: int = 200
    queries: int = 25
    workers: int = 2
    help_rounds: int = bench_cli.HELP_ROUNDS


FULL = Plan(
    core_rounds=8, search_rounds=4, bubble_rounds=2, batch_size=200, workbook_rows=20_000, tokenize_rounds=5
)
QUICK = Plan(
    core_rounds=1,
    search_rounds=1,
    bubble_rounds=1,
    batch_size=6,
    workbook_rows=200,
    tokenize_rounds=1,
    embed_texts=10,
    queries=3,
    help_rounds=2,
)


@dataclass(frozen=True)
class Target:
    name: str
    value: float | None
    limit: float
    rule: str  # "<=" or ">="

    @property
    def passed(self) -> bool:
        if self.value is None:
            return False
        return self.value <= self.limit if self.rule == "<=" else self.value >= self.limit


def _ratio(top: float, bottom: float) -> float | None:
    return round(top / bottom, 3) if bottom else None


def targets(r: dict[str, object], *, core_only: bool = False) -> list[Target]:
    """The issues' targets, computed from the results (never loosened)."""
    num = {k: float(v) for k, v in r.items() if isinstance(v, int | float)}
    core = [
        Target("postprocess_ms_p50_k200 <= 2 ms", num["postprocess_ms_p50_k200"], 2.0, "<="),
        Target(
            "k1000 / k200 post-processing <= 5.5",
            _ratio(num["postprocess_ms_p50_k1000"], num["postprocess_ms_p50_k200"]),
            5.5,
            "<=",
        ),
        Target(
            "postprocess k200 / search k200 <= 0.1",
            _ratio(num["postprocess_ms_p50_k200"], num["search_ms_p50_k200"]),
            0.1,
            "<=",
        ),
    ]
    if core_only:
        return core
    return [
        *core,
        Target(
            "rebubble batched / sequential >= 3",
            _ratio(num["rebubble_qps_batched"], num["rebubble_qps_sequential"]),
            3.0,
            ">=",
        ),
        Target(
            "ingest / raw bulk >= 0.6",
            _ratio(num["ingest_chunks_per_s"], num["raw_bulk_docs_per_s"]),
            0.6,
            ">=",
        ),
        Target(
            "trace write blocking <= bubble itself",
            num["trace_write_blocking_ms_p50"],
            num["postprocess_ms_p50_k200"],
            "<=",
        ),
        Target("esbubble --help wall time p50 <= 0.3 s", num["cli_help_s_p50"], 0.3, "<="),
    ]


def measure(plan: Plan, url: str | None, *, core_only: bool = False) -> dict[str, object]:
    config = load_profile(SAMPLE / "profile.toml")
    cases = load_queries(SAMPLE / "queries.jsonl").cases[: plan.queries]
    queries = [case.query for case in cases]
    results: dict[str, object] = {}
    if not core_only:
        results.update(bench_cli.help_stats(rounds=plan.help_rounds))
    chunks = bench_core.sample_chunks(SAMPLE, config)
    results.update(
        bench_core.postprocess_stats(queries, chunks, config, (50, 200, 1000), rounds=plan.core_rounds)
    )
    results.update(bench_core.cold_stats(queries, chunks, config, 200, rounds=plan.core_rounds))
    for k in (200, 1000):
        results.update(bench_core.stage_stats(queries, chunks, config, k, rounds=plan.core_rounds))
    if not core_only:
        results["tokenize_tokens_per_s"] = round(
            bench_core.tokenize_rate(chunks, config.bubble.encoding, rounds=plan.tokenize_rounds)
        )
        results.update(bench_embedding.encode_stats(chunks, texts=plan.embed_texts))
    options = IngestOptions.of(config)
    with tempfile.TemporaryDirectory(prefix="esbubble-bench-") as temp:
        home = Path(temp) / "home"
        prefix = f"bench-{uuid.uuid4().hex[:8]}"
        with bench_engine.bench_store(url, home, prefix) as store:
            results["engine"] = f"{store.engine.name} {store.engine.version}"
            try:
                init_indices(store)
                ingest_paths(store, [SAMPLE / name for name in bench_core.SAMPLE_FILES], options)
                search = bench_engine.search_samples(store, queries, config, rounds=plan.search_rounds)
                results["search_ms_p50_k200"] = bench_engine.p50(search)
                if core_only:
                    return {**results, "peak_rss_mb": peak_rss_mb(), "machine": machine()}
                runs = bench_engine.bubble_samples(store, queries, config, rounds=plan.bubble_rounds)
                results["bubble_ms_p50"] = bench_engine.p50(runs["end_to_end"])
                results["trace_write_ms_p50"] = bench_engine.p50(runs["write"])
                results["trace_write_blocking_ms_p50"] = bench_engine.p50(runs["blocking"])
                results["trace_write_background_drain_ms"] = bench_engine.p50(runs["drain"])
                batch = bench_engine.batch_cases(cases, plan.batch_size)
                rates = bench_engine.rebubble_qps(store, batch, config, workers=plan.workers)
                rates.update(
                    bench_engine.rebubble_qps_without_audit(store, batch, config, workers=plan.workers)
                )
                results.update({key: round(value, 3) for key, value in rates.items()})
                workbook = Path(temp) / "quote_job_replicated.xlsx"
                results["ingest_workbook_rows"] = bench_engine.replicate_workbook(
                    SAMPLE / "quote_job.xlsx", workbook, plan.workbook_rows
                )
                ingest, raw, count = bench_engine.ingest_rates(store, workbook, options)
                results["ingest_chunks"] = count
                results["ingest_chunks_per_s"] = round(ingest, 1)
                results["raw_bulk_docs_per_s"] = round(raw, 1)
            finally:
                if url is not None:
                    bench_engine.drop_prefix(store)
    results["peak_rss_mb"] = peak_rss_mb()
    results["machine"] = machine()
    return results


def table(results: dict[str, object], checks: list[Target]) -> str:
    lines = [f"{'metric':<34} {'value':>14}"]
    for key, value in results.items():
        if isinstance(value, int | float):
            lines.append(
                f"{key:<34} {value:>14,.3f}" if isinstance(value, float) else f"{key:<34} {value:>14,}"
            )
    lines.append(f"{'engine':<34} {results['engine']!s:>14}")
    info = results["machine"]
    assert isinstance(info, dict)
    lines.append(
        f"machine: {info['cores']} cores, {info['cpu_model']}, "
        f"load {info.get('load_avg_1m_at_start')} at start, {info['load_avg_1m']} at end"
    )
    lines.append("")
    for check in checks:
        shown = "n/a" if check.value is None else f"{check.value:g}"
        lines.append(f"{'PASS' if check.passed else 'FAIL'}  {check.name:<42} measured {shown}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    parser.add_argument("--url", default=None, help="a real cluster (default: the embedded engine)")
    parser.add_argument("--core", action="store_true", help="only post-processing and search, core targets")
    parser.add_argument("--history", metavar="SIZES", help="also run bench_history.py at these sizes")
    parser.add_argument("--history-chunks", type=int, default=20_000, help="chunks for its engine start")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    load_at_start = round(os.getloadavg()[0], 2)
    os.environ.pop("ESBUBBLE_HOME", None)
    results = measure(QUICK if args.quick else FULL, args.url, core_only=args.core)
    if args.history:
        sizes = [int(size) for size in args.history.split(",")]
        results["history"] = bench_history.measure(sizes, args.history_chunks, rounds=3 if args.quick else 7)
    checks = targets(results, core_only=args.core)
    info = results["machine"]
    assert isinstance(info, dict)
    info["load_avg_1m_at_start"] = load_at_start
    results["targets"] = {check.name: check.passed for check in checks}
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["command"] = " ".join(
        ["python", "benchmarks/run.py", *(argv if argv is not None else sys.argv[1:])]
    )
    rendered = table(results, checks)
    if args.json:
        print(json.dumps(results, indent=2))
        print(rendered, file=sys.stderr)
    else:
        print(rendered)
    return 1 if args.strict and not all(check.passed for check in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
