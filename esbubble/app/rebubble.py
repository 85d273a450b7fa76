"""Batch re-bubbling: run a whole query set under one profile and one batch id, and compare batches.

Users change a profile (a prior, a share, δ) and want to know what moved.
``run_batch`` retrieves the queries a few per ``msearch`` in each worker slice,
builds each bubble with the pure core, and writes every manifest and trace
under one ``batch_id`` (run ids are derived from it, so re-running never
collides). ``compare_runs`` then says, per query, which chunks entered or
left the bubble and how tokens and sections changed.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from esbubble.app.evaluate import CaseLike, EvalCase, evaluate_cases, evaluation_tables
from esbubble.app.meaning import Meaning
from esbubble.app.query_key import query_key
from esbubble.app.report import (
    DeltaPoint,
    ReportData,
    Table,
    VariantPoint,
    pruning_funnel,
    section_allocation,
)
from esbubble.app.runner import RunOptions, record_run
from esbubble.config import BubbleConfig, parse_config
from esbubble.errors import ConfigError, EngineError, InputError, NotFoundError
from esbubble.models import Candidate, Chunk, RunManifest, TraceDict
from esbubble.store.audit import (
    BackgroundTraceWriter,
    TraceWriter,
    WriteResult,
    find_manifests,
    spool_dir,
    trace_records,
)
from esbubble.store.chunks import count_chunks, get_chunks
from esbubble.store.connection import Store
from esbubble.store.retrieve import Retrieval, retrieve_many
from esbubble.text import preview

RETRIEVE_GROUP = 8  # queries per msearch: small enough that a lost cluster costs little finished work


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunSummary(_Model):
    """What one stored run selected, enough to compare it with another run of the same query."""

    run_id: str
    batch_id: str | None
    query: str | None
    query_hash: str
    variant: str
    config_hash: str
    index: str = Field(description="the chunk index the run searched (its manifest's)")
    tokens_used: int
    sections: list[str]
    selected: list[str] = Field(description="chunk ids in selection order")


class QueryChange(_Model):
    """How one query's bubble changed between two runs."""

    query: str | None
    query_hash: str
    old_run_id: str
    new_run_id: str
    entered: list[str]
    left: list[str]
    index_before: str = Field(description="the chunk index the baseline run searched")
    index_after: str = Field(description="the chunk index the new run searched")
    tokens_before: int
    tokens_after: int
    token_delta: int
    sections_before: list[str]
    sections_after: list[str]
    sections_entered: list[str]
    sections_left: list[str]

    @property
    def changed(self) -> bool:
        return bool(self.entered or self.left or self.token_delta)


class ChunkNote(_Model):
    """Where a chunk that entered or left a bubble sits and how it begins, so a reader need not look it up."""

    chunk_id: str
    doc_id: str
    section: str
    sheet_name: str | None
    row_number: int | None
    page: int | None
    snippet: str | None = Field(description="the chunk's first characters; None once it left the chunk index")


class Comparison(_Model):
    """Per-query changes, plus the queries only one side ran."""

    baseline: str
    changes: list[QueryChange]
    only_in_new: list[str] = Field(description="run ids with no baseline run of the same query")
    only_in_baseline: list[str]
    chunks: dict[str, ChunkNote] = Field(
        default_factory=dict, description="chunk id -> where it is, for every chunk that entered or left"
    )

    @property
    def changed(self) -> int:
        return sum(1 for change in self.changes if change.changed)


def summarise(manifest: RunManifest, records: Sequence[TraceDict]) -> RunSummary:
    """A run summary from its manifest and (at least) its selected trace records."""
    chosen = sorted(
        (r for r in records if r["final_decision"] == "selected"),
        key=lambda r: (r["selection_order"] or 0, r["rank"]),
    )
    return RunSummary(
        run_id=manifest.run_id,
        batch_id=manifest.batch_id,
        query=manifest.query,
        query_hash=manifest.query_hash,
        variant=manifest.variant,
        config_hash=manifest.config_hash,
        index=manifest.index,
        tokens_used=manifest.totals.tokens_used,
        sections=list(manifest.totals.sections),
        selected=[r["chunk_id"] for r in chosen],
    )


def _change(old: RunSummary, new: RunSummary) -> QueryChange:
    before, after = set(old.selected), set(new.selected)
    return QueryChange(
        query=new.query if new.query is not None else old.query,
        query_hash=new.query_hash,
        old_run_id=old.run_id,
        new_run_id=new.run_id,
        entered=[c for c in new.selected if c not in before],
        left=[c for c in old.selected if c not in after],
        index_before=old.index,
        index_after=new.index,
        tokens_before=old.tokens_used,
        tokens_after=new.tokens_used,
        token_delta=new.tokens_used - old.tokens_used,
        sections_before=old.sections,
        sections_after=new.sections,
        sections_entered=[s for s in new.sections if s not in old.sections],
        sections_left=[s for s in old.sections if s not in new.sections],
    )


def compare_runs(baseline: str, old: Sequence[RunSummary], new: Sequence[RunSummary]) -> Comparison:
    """Pair runs by query (same variant preferred) and list what changed, in the new runs' order."""
    by_query: dict[str, list[RunSummary]] = {}
    for run in sorted(old, key=lambda r: r.run_id):
        by_query.setdefault(run.query_hash, []).append(run)
    used: set[str] = set()
    changes: list[QueryChange] = []
    unmatched: list[str] = []
    for run in new:
        options = by_query.get(run.query_hash, [])
        same_variant = [o for o in options if o.variant == run.variant]
        if not options:
            unmatched.append(run.run_id)
            continue
        match = (same_variant or options)[0]
        used.add(match.run_id)
        changes.append(_change(match, run))
    return Comparison(
        baseline=baseline,
        changes=changes,
        only_in_new=unmatched,
        only_in_baseline=sorted(r.run_id for r in old if r.run_id not in used),
    )


SNIPPET_CHARS = 160


def describe_chunks(store: Store, comparison: Comparison) -> Comparison:
    """The comparison with a note (section, row or page, text snippet) for every chunk that moved.

    A chunk that entered is read from the chunk index its new run searched, one that left from the
    index its baseline run searched (each run's manifest names it; a batch may run on another index
    than its baseline). Chunks that left a bubble may have been re-ingested away since; their note
    keeps what the baseline's trace records said and no snippet.
    """
    wanted: dict[str, set[str]] = {}
    for change in comparison.changes:
        wanted.setdefault(change.index_after, set()).update(change.entered)
        wanted.setdefault(change.index_before, set()).update(change.left)
    notes: dict[str, ChunkNote] = {}
    for index, ids in sorted(wanted.items()):
        if ids:
            for chunk in get_chunks(store.at_chunk_index(index), sorted(ids)):
                notes.setdefault(chunk.chunk_id, _note(chunk))
    moved = sorted({c for change in comparison.changes for c in (*change.entered, *change.left)})
    missing = [chunk_id for chunk_id in moved if chunk_id not in notes]
    for record in trace_records_of_chunks(store, comparison, missing):
        notes.setdefault(
            record["chunk_id"],
            ChunkNote(
                chunk_id=record["chunk_id"], doc_id=record["doc_id"], section=record["section"],
                sheet_name=record["sheet_name"], row_number=record["row_number"], page=record["page"],
                snippet=None,
            ),
        )  # fmt: skip
    return comparison.model_copy(update={"chunks": dict(sorted(notes.items()))})


def _note(chunk: Chunk) -> ChunkNote:
    return ChunkNote(
        chunk_id=chunk.chunk_id, doc_id=chunk.doc_id, section=chunk.section, sheet_name=chunk.sheet_name,
        row_number=chunk.row_number, page=chunk.page, snippet=preview(chunk.text, SNIPPET_CHARS),
    )  # fmt: skip


def trace_records_of_chunks(
    store: Store, comparison: Comparison, chunk_ids: Sequence[str]
) -> list[TraceDict]:
    """The baseline's selected trace records of these chunks (where they were when they were chosen)."""
    if not chunk_ids:
        return []
    run_ids = sorted({change.old_run_id for change in comparison.changes})
    wanted = set(chunk_ids)
    return [r for r in trace_records(store, run_ids, selected_only=True) if r["chunk_id"] in wanted]


def load_summaries(store: Store, run_or_batch_id: str) -> list[RunSummary]:
    """Summaries of a stored run or batch, for ``compare_runs``."""
    manifests = find_manifests(store, run_or_batch_id)
    records = trace_records(store, [m.run_id for m in manifests], selected_only=True)
    per_run: dict[str, list[TraceDict]] = {}
    for record in records:
        per_run.setdefault(record["run_id"], []).append(record)
    return [summarise(m, per_run.get(m.run_id, [])) for m in manifests]


class FailedQuery(_Model):
    """A query of a batch that did not run, and why (resume the batch to run it)."""

    case_id: str
    query: str | None = Field(description="None when the batch runs with --redact-query")
    reason: str


class BatchResult(_Model):
    """One re-bubbling batch: a summary per query that ran (query-set order) and where the audit went.

    ``skipped`` are queries a resumed batch had already finished; ``failed``
    are queries that could not run (typically: the cluster went away).
    """

    batch_id: str
    case_ids: list[str]
    runs: list[RunSummary]
    written: int
    spooled: int
    lost: int
    skipped: list[str] = Field(default_factory=list)
    failed: list[FailedQuery] = Field(default_factory=list)
    audit_error: str | None = Field(default=None, description="why records were spooled or lost")
    spool: str | None = Field(default=None, description="where spooled records wait for `traces flush`")


def new_batch_id(now: datetime) -> str:
    """A batch id that sorts by time and never repeats."""
    return f"batch-{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


# A run id is a document ``_id`` (at most 512 bytes in Elasticsearch) and names spool files:
# query-set ids longer than this are shortened and given a hash suffix.
MAX_CASE_ID_BYTES = 120


def batch_run_id(batch_id: str, case_id: str) -> str:
    """Run ids are derived from the batch and the query-set id, so a batch's runs are findable by either.

    A long query-set id keeps its first characters (up to ``MAX_CASE_ID_BYTES``
    bytes) plus ``~`` and a hash of the whole id: the run id stays stable and
    unique, and far below Elasticsearch's 512-byte ``_id`` limit.
    """
    encoded = case_id.encode("utf-8")
    if len(encoded) <= MAX_CASE_ID_BYTES:
        return f"{batch_id}.{case_id}"
    head = encoded[: MAX_CASE_ID_BYTES - 17].decode("utf-8", errors="ignore")
    return f"{batch_id}.{head}~{hashlib.sha256(encoded).hexdigest()[:16]}"


def finished_case_ids(
    store: Store, batch_id: str, config: BubbleConfig, case_ids: Collection[str]
) -> set[str]:
    """The ``case_ids`` whose run in ``batch_id`` is stored, for ``--resume``; none if the batch is new.

    A resumed batch must use the profile and the chunk index it started with,
    or its runs would not be comparable: a different config hash or index is
    a ``ConfigError``.
    """
    try:
        manifests = find_manifests(store, batch_id)
    except NotFoundError:
        return set()
    hashes = {m.config_hash for m in manifests}
    if hashes != {config.config_hash}:
        raise ConfigError(
            f"batch {batch_id!r} was run with another profile (config hash {sorted(hashes)[0][:12]}, "
            f"now {config.config_hash[:12]})",
            hint="resume with the same --profile, --budget and --variant",
        )
    indices = {m.index for m in manifests}
    if indices != {store.names.chunks}:
        ran_on = sorted(indices)[0]
        raise ConfigError(
            f"batch {batch_id!r} searched the chunk index {ran_on!r}, not {store.names.chunks!r}",
            hint=f"resume with --index {ran_on}",
        )
    done = {m.run_id for m in manifests if m.batch_id == batch_id and m.status == "ok"}
    return {case_id for case_id in case_ids if batch_run_id(batch_id, case_id) in done}


def _groups(items: Sequence[CaseLike], size: int) -> list[Sequence[CaseLike]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _slices(items: Sequence[CaseLike], parts: int) -> list[Sequence[CaseLike]]:
    size = max(1, -(-len(items) // parts))
    return [items[i : i + size] for i in range(0, len(items), size)]


def run_batch(
    store: Store,
    cases: Sequence[CaseLike],
    config: BubbleConfig,
    options: RunOptions,
    *,
    workers: int = 1,
    writer: TraceWriter | None = None,
    on_done: Callable[[int], None] | None = None,
    skip: Collection[str] = (),
    meaning: Meaning | None = None,
) -> BatchResult:
    """Bubble every case with ``config`` and write all manifests and traces under ``options.batch_id``
    (required), every run stamped ``options.now`` (default: when the batch starts).

    ``workers`` threads each take a contiguous slice of the query set and
    retrieve it ``RETRIEVE_GROUP`` queries per ``msearch``; the result is the
    same whatever the number of workers (runs are returned in query-set
    order). Cases in ``skip`` (finished by an earlier attempt) are not run.
    When retrieval fails (the cluster went away) the rest of that slice is
    reported in ``failed`` with the reason; runs already done keep their
    traces, so the batch can be resumed.
    """
    if not cases:
        raise InputError("the query set is empty", hint="add at least one {id, query} line")
    if workers < 1:
        raise InputError(f"invalid --workers {workers}", hint="use 1 or more")
    batch_id = options.batch_id
    if batch_id is None:
        raise ValueError("run_batch needs options.batch_id")
    options = replace(options, now=options.now or datetime.now(UTC))
    redact_query = options.redact_query
    todo = [case for case in cases if case.id not in skip]
    if not todo:
        skipped = [case.id for case in cases]
        return BatchResult(
            batch_id=batch_id, case_ids=[], runs=[], written=0, spooled=0, lost=0, skipped=skipped
        )
    doc_count = count_chunks(store)
    key = query_key(store.settings.home)
    failures: dict[str, FailedQuery] = {}
    # Without a writer of the caller's, traces go through a background writer that sends
    # several runs per bulk request; closing it below waits until every record is written
    # or spooled, and its totals are the batch's.
    understood = meaning or Meaning()  # the embedding models, loaded once for every worker
    background: BackgroundTraceWriter | None = None
    audit: TraceWriter
    if writer is None:
        audit = background = BackgroundTraceWriter.for_store(store)
    else:
        audit = writer

    def retrieved(part: Sequence[CaseLike]) -> Iterator[tuple[CaseLike, Retrieval]]:
        for number, group in enumerate(_groups(part, RETRIEVE_GROUP)):
            try:
                found = retrieve_many(store, [c.query for c in group], config, options.filters)
                retrievals = understood.attach(found, config.bubble)
            except EngineError as error:
                reason = error.one_line()
                if redact_query:
                    for case in group:
                        reason = reason.replace(case.query, "<redacted>")
                for case in [c for g in _groups(part, RETRIEVE_GROUP)[number:] for c in g]:
                    failures[case.id] = FailedQuery(
                        case_id=case.id, query=None if redact_query else case.query, reason=reason
                    )
                    if on_done is not None:
                        on_done(1)
                return
            yield from zip(group, retrievals, strict=True)

    def work(part: Sequence[CaseLike]) -> list[tuple[RunSummary, WriteResult]]:
        done: list[tuple[RunSummary, WriteResult]] = []
        for case, retrieval in retrieved(part):
            bubble, manifest = record_run(
                store,
                retrieval,
                config,
                options,
                run_id=batch_run_id(batch_id, case.id),
                index_doc_count=doc_count,
                timings_ms={"retrieve": retrieval.took_ms},
                key=key,
            )
            done.append((summarise(manifest, bubble.trace), audit.write(manifest, bubble.trace)))
            if on_done is not None:
                on_done(1)
        return done

    parts = _slices(todo, min(workers, len(todo)))
    try:
        with ThreadPoolExecutor(max_workers=len(parts)) as pool:
            results = [item for chunk in pool.map(work, parts) for item in chunk]
    finally:
        totals = background.close() if background is not None else None
    if totals is None:
        totals = WriteResult(
            written=sum(w.written for _, w in results),
            spooled=sum(w.spooled for _, w in results),
            lost=sum(w.lost for _, w in results),
            error=next((w.error for _, w in results if w.error), None),
        )
    return BatchResult(
        batch_id=batch_id,
        case_ids=[case.id for case in todo if case.id not in failures],
        runs=[summary for summary, _ in results],
        written=totals.written,
        spooled=totals.spooled,
        lost=totals.lost,
        skipped=[case.id for case in cases if case.id in skip],
        failed=[failures[case.id] for case in todo if case.id in failures],
        audit_error=totals.error,
        spool=str(spool_dir(store.settings.home)) if totals.spooled or totals.lost else None,
    )


def _case_of_run(batch_id: str, manifest: RunManifest, cases: Sequence[CaseLike]) -> CaseLike | None:
    """The query-set entry a run answered: by run id (``batch.case``), else the one entry with its query."""
    for case in cases:
        if batch_run_id(batch_id, case.id) == manifest.run_id:
            return case
    same_query = [case for case in cases if case.query == manifest.query]
    return same_query[0] if len(same_query) == 1 else None


def _rebuilt_cases(
    store: Store,
    batch_id: str,
    manifests: Sequence[RunManifest],
    records: Sequence[TraceDict],
    queries: Sequence[CaseLike],
    *,
    chunk_index: str | None,
) -> tuple[list[EvalCase], list[str]]:
    """Each run's candidates, rebuilt from its trace and the chunk index it searched (its manifest's
    ``index``, or ``chunk_index`` for every run when given), with the category and gold of its
    query-set entry when ``queries`` has it, plus notes on what was skipped."""
    per_run: dict[str, list[TraceDict]] = {}
    for record in records:
        per_run.setdefault(record["run_id"], []).append(record)
    index_of = {m.run_id: chunk_index or m.index for m in manifests}
    wanted: dict[str, set[str]] = {}
    for record in records:
        wanted.setdefault(index_of[record["run_id"]], set()).add(record["chunk_id"])
    found = {
        index: {c.chunk_id: c for c in get_chunks(store.at_chunk_index(index), sorted(ids))}
        for index, ids in sorted(wanted.items())
    }
    notes: list[str] = []
    cases: list[EvalCase] = []
    for manifest in manifests:
        if manifest.query is None:
            notes.append(f"run {manifest.run_id}: query redacted, left out of Figures 2 and 3")
            continue
        index = index_of[manifest.run_id]
        chunks = found.get(index, {})
        run_records = per_run.get(manifest.run_id, [])
        missing = sum(1 for r in run_records if r["chunk_id"] not in chunks)
        if missing:
            notes.append(f"run {manifest.run_id}: {missing} candidates no longer in the chunk index {index}")
        candidates = [
            Candidate(
                chunk=chunks[r["chunk_id"]],
                es_score=r["es_score"],
                es_rank=r["es_rank"],
                similarity=r.get("similarity"),  # as the run had it (no model is loaded to report)
            )
            for r in run_records
            if r["chunk_id"] in chunks
        ]
        case = _case_of_run(batch_id, manifest, queries)
        if queries and case is None:
            notes.append(f"run {manifest.run_id}: no entry of the query set matches it, so no gold")
        cases.append(
            EvalCase(
                id=manifest.run_id,
                query=manifest.query,
                category=case.category if case is not None else None,
                gold=list(case.gold) if case is not None else [],
                evidence=list(case.evidence) if case is not None else [],
                candidates=candidates,
                term_stats=manifest.term_stats,  # the engine's statistics the run was scored with
            )
        )
    if not queries:
        notes.append("gold recall needs the query set: esbubble report BATCH_ID --queries QUERYSET")
    return cases, notes


def report_data(
    store: Store,
    batch_id: str,
    *,
    now: datetime,
    queries: Sequence[CaseLike] = (),
    chunk_index: str | None = None,
) -> ReportData:
    """The report of a stored batch: the funnel and allocation from its traces, and the variant and δ
    figures from re-bubbling its stored candidates (same chunks, same engine scores) under its profile.

    Each run's chunks are read from the chunk index it searched, or from ``chunk_index`` when given.
    With ``queries`` (the batch's query set), each run gets its entry's category and gold, so the
    tables carry gold recall overall and per category."""
    manifests = find_manifests(store, batch_id)
    records = trace_records(store, [m.run_id for m in manifests])
    config = parse_config(manifests[0].config, source=f"run {manifests[0].run_id} config")
    cases, notes = _rebuilt_cases(store, batch_id, manifests, records, queries, chunk_index=chunk_index)
    tables = [
        Table(
            title=f"Runs of batch {batch_id}",
            columns=["run", "query", "variant", "tokens used", "sections", "selected"],
            rows=[
                [
                    m.run_id,
                    m.query or "<redacted>",
                    m.variant,
                    str(m.totals.tokens_used),
                    str(len(m.totals.sections)),
                    str(m.totals.selected),
                ]
                for m in manifests
            ],
        )
    ]
    variants: list[VariantPoint] = []
    sweep: list[DeltaPoint] = []
    if cases:
        evaluation = evaluate_cases(cases, config, now=now)
        variants = [
            VariantPoint(variant=r.variant, tokens_used=r.tokens_used, unique_sections=r.unique_sections)
            for r in evaluation.table1
        ]
        sweep = [
            DeltaPoint(
                delta=d.delta,
                passed_redundancy=d.passed_redundancy,
                tokens_used=d.tokens_used,
                unique_sections=d.unique_sections,
            )
            for d in evaluation.delta_sweep
        ]
        tables += evaluation_tables(evaluation)
    if notes:
        tables.append(Table(title="Notes", columns=["note"], rows=[[note] for note in notes]))
    return ReportData(
        title=f"esbubble batch {batch_id}",
        batch_id=batch_id,
        generated_at=now,
        runs=len(manifests),
        variants=variants,
        delta_sweep=sweep,
        funnel=pruning_funnel(records),
        allocation=section_allocation(records),
        tables=tables,
    )
