"""What one trace record costs the engine, by bulk request size.

    python benchmarks/trace_bulk_sizes.py [--records 6000] [--sizes 200,1000,5000] [--url URL]

Builds real trace records (the sample corpus, its 25 queries, ``build_bubble``),
then, for each bulk size, writes the same records into fresh trace indices
with ``elasticsearch.helpers.bulk`` in requests of that size, one refresh per
request, as the trace writers do. Prints milliseconds per record. On the
embedded engine (osmem) requests of 100-999 documents are re-indexed when ten
of them pile up, which is why the trace writers send up to 5,000 records per
request (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import bench_core
import bench_engine
from bench_stats import machine
from elasticsearch.helpers import bulk

from esbubble.config import load_profile
from esbubble.ingest import IngestOptions, ingest_paths
from esbubble.queryset import load_queries
from esbubble.store.audit import TraceWriter
from esbubble.store.connection import Store
from esbubble.store.retrieve import retrieve
from esbubble.store.templates import init_indices

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"


def trace_actions(store: Store, records: int) -> list[dict[str, Any]]:
    """At least ``records`` bulk actions of real trace records and manifests, cycling the sample queries."""
    config = load_profile(SAMPLE / "profile.toml")
    queries = [case.query for case in load_queries(SAMPLE / "queries.jsonl").cases]
    documents = [SAMPLE / name for name in bench_core.SAMPLE_FILES]
    ingest_paths(store, documents, IngestOptions.of(config))
    writer = TraceWriter.for_store(store)
    retrievals = [retrieve(store, query, config) for query in queries]
    actions: list[dict[str, Any]] = []
    number = 0
    while len(actions) < records:
        retrieval = retrievals[number % len(retrievals)]
        manifest, trace = bench_engine.built_run(store, retrieval, config, f"size-{number}")
        actions += writer.actions(manifest, trace)
        number += 1
    return actions[:records]


def ms_per_record(store: Store, actions: list[dict[str, Any]], size: int) -> float:
    """Write ``actions`` into fresh indices in requests of ``size``, refreshing after each; ms per record."""
    target = bench_engine.with_prefix(store, f"size-{uuid.uuid4().hex[:8]}")
    init_indices(target)
    renamed = [{**action, "_index": action["_index"].replace(store.names.prefix, target.names.prefix, 1)}
               for action in actions]  # fmt: skip
    started = time.perf_counter()
    for start in range(0, len(renamed), size):
        _, errors = bulk(target.client, renamed[start : start + size], chunk_size=size, stats_only=True)
        if errors:
            raise RuntimeError(f"{errors} records refused at bulk size {size}")
        target.client.indices.refresh(
            index=f"{target.names.traces},{target.names.runs}", ignore_unavailable=True, allow_no_indices=True
        )
    elapsed = time.perf_counter() - started
    bench_engine.drop_prefix(target)
    return elapsed * 1000.0 / len(renamed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=6000)
    parser.add_argument("--sizes", default="200,1000,5000", help="comma-separated bulk sizes")
    parser.add_argument("--repeats", type=int, default=3, help="runs per size; the median is printed")
    parser.add_argument("--url", help="a real cluster instead of the embedded engine")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="esbubble-bulk-") as temp:
        prefix = f"bulk-{uuid.uuid4().hex[:8]}"
        with bench_engine.bench_store(args.url, Path(temp) / "home", prefix) as store:
            try:
                init_indices(store)
                actions = trace_actions(store, args.records)
                engine = f"{store.engine.name} {store.engine.version}"
                print(f"engine {engine}, {len(actions)} records", file=sys.stderr)
                for size in sizes:
                    runs = [ms_per_record(store, actions, size) for _ in range(args.repeats)]
                    print(f"bulk size {size:>5}: {statistics.median(runs):.3f} ms per record "
                          f"(runs: {', '.join(f'{run:.3f}' for run in runs)})")  # fmt: skip
            finally:
                if args.url is not None:
                    bench_engine.drop_prefix(store)
    print(f"machine: {machine()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
