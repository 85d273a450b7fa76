"""Batch re-bubbling: run a whole query set under one profile and one batch id, and compare batches.

Users change a profile (a prior, a share, δ) and want to know what moved.
``run_batch`` retrieves every query in one ``msearch`` per worker slice,
builds each bubble with the pure core, and writes every manifest and trace
under one ``batch_id`` (run ids are derived from it, so re-running never
collides). ``compare_runs`` then says, per query, which chunks entered or
left the bubble and how tokens and sections changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError
from pydantic import BaseModel, ConfigDict, Field

from esbubble.errors import EngineError, NotFoundError
from esbubble.models import RunManifest, TraceRecord
from esbubble.store.connection import Store

PAGE_SIZE = 1000


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


class Comparison(_Model):
    """Per-query changes, plus the queries only one side ran."""

    baseline: str
    changes: list[QueryChange]
    only_in_new: list[str] = Field(description="run ids with no baseline run of the same query")
    only_in_baseline: list[str]

    @property
    def changed(self) -> int:
        return sum(1 for change in self.changes if change.changed)


def summarise(manifest: RunManifest, records: Sequence[TraceRecord]) -> RunSummary:
    """A run summary from its manifest and (at least) its selected trace records."""
    chosen = sorted(
        (r for r in records if r.final_decision == "selected"),
        key=lambda r: (r.selection_order or 0, r.rank),
    )
    return RunSummary(
        run_id=manifest.run_id,
        batch_id=manifest.batch_id,
        query=manifest.query,
        query_hash=manifest.query_hash,
        variant=manifest.variant,
        config_hash=manifest.config_hash,
        tokens_used=manifest.totals.tokens_used,
        sections=list(manifest.totals.sections),
        selected=[r.chunk_id for r in chosen],
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


def _search_pages(
    store: Store, index: str, query: dict[str, Any], sort_field: str
) -> Iterator[dict[str, Any]]:
    """Every hit of ``query`` on ``index``, paged with ``search_after`` (works on every engine)."""
    after: list[Any] | None = None
    while True:
        try:
            response = store.client.search(
                index=index,
                query=query,
                sort=[{sort_field: "asc"}],
                size=PAGE_SIZE,
                search_after=after,
                track_total_hits=False,
                ignore_unavailable=True,
                allow_no_indices=True,
            )
        except (ApiError, TransportError) as error:
            reason = error.message if isinstance(error, ApiError) else error
            raise EngineError(f"searching {index} on {store.display_url} failed: {reason}") from None
        hits = response.body["hits"]["hits"]
        yield from (hit["_source"] for hit in hits)
        if len(hits) < PAGE_SIZE:
            return
        after = hits[-1]["sort"]


def find_manifests(store: Store, run_or_batch_id: str) -> list[RunManifest]:
    """The manifests of one run, or of every run of a batch, ordered by run id."""
    query = {
        "bool": {
            "should": [{"term": {"run_id": run_or_batch_id}}, {"term": {"batch_id": run_or_batch_id}}],
            "minimum_should_match": 1,
        }
    }
    manifests = [
        RunManifest.model_validate(doc) for doc in _search_pages(store, store.names.runs, query, "run_id")
    ]
    if not manifests:
        raise NotFoundError(
            f"no run or batch with id {run_or_batch_id!r} in {store.names.runs}",
            hint="use the run id `bubble` printed or the batch id `rebubble` printed",
        )
    return manifests


def trace_records(store: Store, run_ids: Sequence[str], *, selected_only: bool = False) -> list[TraceRecord]:
    """Trace records of these runs, ordered by run id then rank."""
    if not run_ids:
        return []
    filters: list[dict[str, Any]] = [{"terms": {"run_id": list(run_ids)}}]
    if selected_only:
        filters.append({"term": {"final_decision": "selected"}})
    docs = _search_pages(store, store.names.traces, {"bool": {"filter": filters}}, "trace_id")
    records = [TraceRecord.model_validate(doc) for doc in docs]
    return sorted(records, key=lambda r: (r.run_id, r.rank))


def load_summaries(store: Store, run_or_batch_id: str) -> list[RunSummary]:
    """Summaries of a stored run or batch, for ``compare_runs``."""
    manifests = find_manifests(store, run_or_batch_id)
    records = trace_records(store, [m.run_id for m in manifests], selected_only=True)
    per_run: dict[str, list[TraceRecord]] = {}
    for record in records:
        per_run.setdefault(record.run_id, []).append(record)
    return [summarise(m, per_run.get(m.run_id, [])) for m in manifests]
