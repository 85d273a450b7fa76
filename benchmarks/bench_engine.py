"""Costs that involve the engine: search, one bubble end to end, trace writing, batch re-bubbling, ingest."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import openpyxl
from bench_stats import percentile

from esbubble.app.rebubble import new_batch_id, run_batch
from esbubble.app.runner import RunOptions, run_bubble
from esbubble.config import BubbleConfig
from esbubble.core.bubble import build_bubble
from esbubble.core.manifest import build_manifest
from esbubble.ingest import IngestOptions, ingest_paths, read_document
from esbubble.models import RunManifest, TraceDict
from esbubble.queryset import QueryCase
from esbubble.store.audit import BackgroundTraceWriter, TraceWriter, WriteResult
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store, open_store
from esbubble.store.engine import stop_daemon
from esbubble.store.names import IndexNames
from esbubble.store.retrieve import Retrieval, retrieve
from esbubble.store.settings import Settings
from esbubble.store.templates import init_indices

# Rows above this line in each sample sheet hold titles and headers; only rows below are replicated.
_FIRST_DATA_ROW = 6


@contextlib.contextmanager
def bench_store(url: str | None, home: Path, prefix: str) -> Iterator[Store]:
    """A store on ``url``, or on an embedded engine this process starts (data kept under ``home``)."""
    settings = Settings(url=url, prefix=prefix, home=home)
    try:
        with open_store(settings) as store:
            yield store
    finally:
        if url is None:
            stop_daemon(settings)  # the embedded engine outlives commands; the benchmark's must not


def with_prefix(store: Store, prefix: str) -> Store:
    """The same connection, on another set of indices (for side-by-side ingest runs)."""
    settings = store.settings.model_copy(update={"prefix": prefix})
    return dataclasses.replace(store, names=IndexNames.for_prefix(prefix), settings=settings)


def drop_prefix(store: Store) -> None:
    """Delete every index of the store's prefix (an external cluster is left as it was found)."""
    names = list(store.client.indices.get(index=store.names.pattern, expand_wildcards="all").body)
    for name in names:
        store.client.indices.delete(index=name)


def search_samples(store: Store, queries: Sequence[str], config: BubbleConfig, *, rounds: int) -> list[float]:
    """Engine round trips (client call to parsed response) for each query, ``rounds`` times."""
    retrieve(store, queries[0], config)
    return [retrieve(store, query, config).took_ms for _ in range(rounds) for query in queries]


def bubble_samples(
    store: Store, queries: Sequence[str], config: BubbleConfig, *, rounds: int
) -> dict[str, list[float]]:
    """Per query: ``run_bubble`` end to end, and one run's trace write, synchronous and backgrounded (ms).

    ``end_to_end`` uses the default (synchronous) ``TraceWriter``; ``write`` is that writer alone on a
    prepared run; ``blocking`` is how long ``BackgroundTraceWriter.write`` holds up the caller, and
    ``drain`` how long closing it then takes. The background writer runs in a loop of its own, so its
    bulk requests never compete with the synchronous writes being timed.
    """
    writer = TraceWriter.for_store(store)
    samples: dict[str, list[float]] = {"end_to_end": [], "write": [], "blocking": [], "drain": []}
    for round_number in range(rounds):
        for number, query in enumerate(queries):
            started = time.perf_counter()
            run_bubble(store, query, config, writer=writer)
            samples["end_to_end"].append((time.perf_counter() - started) * 1000.0)
            manifest, trace = _prepared_run(store, query, config, f"bench-write-{round_number}-{number}")
            started = time.perf_counter()
            writer.write(manifest, trace)
            samples["write"].append((time.perf_counter() - started) * 1000.0)
    background = BackgroundTraceWriter.for_store(store)
    for round_number in range(rounds):
        for number, query in enumerate(queries):
            manifest, trace = _prepared_run(store, query, config, f"bench-blocking-{round_number}-{number}")
            started = time.perf_counter()
            background.write(manifest, trace)
            samples["blocking"].append((time.perf_counter() - started) * 1000.0)
    started = time.perf_counter()
    summary = background.close()
    samples["drain"].append((time.perf_counter() - started) * 1000.0)
    if summary.spooled or summary.lost:
        raise RuntimeError(f"benchmark trace writes failed: {summary}")
    return samples


def _prepared_run(
    store: Store, query: str, config: BubbleConfig, run_id: str
) -> tuple[RunManifest, list[TraceDict]]:
    return built_run(store, retrieve(store, query, config), config, run_id)


def built_run(
    store: Store, retrieval: Retrieval, config: BubbleConfig, run_id: str
) -> tuple[RunManifest, list[TraceDict]]:
    """The manifest and trace records of one run on ``retrieval``, ready to write."""
    now = datetime.now(UTC)
    bubble = build_bubble(retrieval.query, retrieval.candidates, config, run_id=run_id, now=now)
    manifest = build_manifest(
        bubble,
        config,
        index=store.names.chunks,
        engine=store.engine,
        request_body=retrieval.request_body,
        index_doc_count=None,
        timings_ms={},
        now=now,
    )
    return manifest, bubble.trace


def batch_cases(cases: Sequence[QueryCase], size: int) -> list[QueryCase]:
    """A batch of ``size`` queries cycling through the query set, with distinct ids."""
    return [
        case.model_copy(update={"id": f"{case.id}-{index}"})
        for index, case in ((i, cases[i % len(cases)]) for i in range(size))
    ]


def rebubble_qps(
    store: Store, cases: Sequence[QueryCase], config: BubbleConfig, *, workers: int
) -> dict[str, float]:
    """Queries per second over one batch, two ways, every trace record written in both.

    Sequential: one ``run_bubble`` per query (search, bubble, synchronous trace write).
    Batched: ``run_batch`` (msearch per worker slice, ``workers`` threads) with a
    ``BackgroundTraceWriter``, timed until the writer has written everything.
    """
    writer = TraceWriter.for_store(store)
    started = time.perf_counter()
    for case in cases:
        run_bubble(store, case.query, config, writer=writer)
    sequential_s = time.perf_counter() - started
    now = datetime.now(UTC)
    started = time.perf_counter()
    with BackgroundTraceWriter.for_store(store) as background:
        run_batch(
            store,
            cases,
            config,
            RunOptions(batch_id=new_batch_id(now), now=now),
            workers=workers,
            writer=background,
        )
        computed_s = time.perf_counter() - started
    batched_s = time.perf_counter() - started
    return {
        "rebubble_qps_sequential": len(cases) / sequential_s,
        "rebubble_qps_batched": len(cases) / batched_s,
        "rebubble_batched_compute_s": computed_s,
        "rebubble_batched_drain_s": batched_s - computed_s,
    }


class CountingWriter(TraceWriter):
    """Diagnostics only: counts records instead of writing them, to show the cost without the audit."""

    def __init__(self, store: Store) -> None:
        super().__init__(store.client, store.names, store.settings.home)
        self.records = 0

    def write(self, manifest: RunManifest, records: Sequence[TraceDict]) -> WriteResult:
        self.records += len(records) + 1
        return WriteResult(written=0)


def rebubble_qps_without_audit(
    store: Store, cases: Sequence[QueryCase], config: BubbleConfig, *, workers: int
) -> dict[str, float]:
    """The same two ways without the trace write: what retrieval batching and threads buy alone."""
    sequential = CountingWriter(store)
    started = time.perf_counter()
    for case in cases:
        run_bubble(store, case.query, config, writer=sequential)
    sequential_s = time.perf_counter() - started
    batched = CountingWriter(store)
    now = datetime.now(UTC)
    started = time.perf_counter()
    run_batch(
        store, cases, config, RunOptions(batch_id=new_batch_id(now), now=now), workers=workers, writer=batched
    )
    batched_s = time.perf_counter() - started
    if sequential.records != batched.records:
        raise RuntimeError("the two ways built a different number of trace records")
    return {
        "rebubble_qps_sequential_without_audit": len(cases) / sequential_s,
        "rebubble_qps_batched_without_audit": len(cases) / batched_s,
        "rebubble_trace_records": float(batched.records),
    }


def replicate_workbook(source: Path, target: Path, rows: int) -> int:
    """Copy the sample workbook, repeating each visible sheet's data rows until it has ``rows`` in total.

    When ``rows`` is fewer than the sample has (quick mode), each sheet is cut short instead.
    """
    book = openpyxl.load_workbook(source, data_only=True)
    sheets = [sheet for sheet in book.worksheets if sheet.sheet_state == "visible"]
    keep = _FIRST_DATA_ROW + rows // len(sheets)
    if sum(sheet.max_row for sheet in sheets) > rows:
        for sheet in sheets:
            if sheet.max_row > keep:
                sheet.delete_rows(keep + 1, sheet.max_row - keep)
    blocks = {
        sheet.title: [list(row) for row in sheet.iter_rows(min_row=_FIRST_DATA_ROW, values_only=True)]
        for sheet in sheets
    }
    total = sum(int(sheet.max_row) for sheet in sheets)
    while total < rows:
        for sheet in sheets:
            for values in blocks[sheet.title]:
                sheet.append(values)
                total += 1
    book.save(target)
    return total


def ingest_rates(store: Store, workbook: Path, options: IngestOptions) -> tuple[float, float, int]:
    """Chunks/s of ``ingest_paths`` (read + chunk + tokenise + bulk) and docs/s of the bulk helper alone.

    Each goes into its own fresh indices, so both index the same documents from empty.
    """
    reading = with_prefix(store, "bench-ingest")
    raw = with_prefix(store, "bench-raw")
    for target in (reading, raw):
        init_indices(target)
    started = time.perf_counter()
    summary = ingest_paths(reading, [workbook], options)
    ingest_s = time.perf_counter() - started
    if not summary.ok:
        raise RuntimeError(f"benchmark ingest failed: {summary.failures[0].reason}")
    chunks = read_document(workbook, options, doc_id=summary.documents[0].doc_id)
    stamp = datetime.now(UTC)
    prebuilt = [chunk.model_copy(update={"ingested_at": stamp}) for chunk in chunks]
    started = time.perf_counter()
    written = index_chunks(raw, prebuilt).indexed
    raw_s = time.perf_counter() - started
    for target in (reading, raw):
        drop_prefix(target)
    return summary.added / ingest_s, written / raw_s, summary.added


def p50(samples: Sequence[float]) -> float:
    return round(percentile(samples, 0.5), 3)
