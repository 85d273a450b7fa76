"""Typed records that flow through esbubble: chunks, candidates, trace, manifest.

These are plain data. The stages that produce and consume them live in their
own modules (``score``, ``gates``, ``select`` …); the Elasticsearch side
serialises them with ``model_dump(mode="json", by_alias=True)``. Trace records
are the exception: the core builds them as plain dictionaries (``TraceDict``),
whose schema is the pydantic ``TraceRecord``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, model_validator
from typing_extensions import TypedDict

SourceType = Literal["xlsx", "csv", "pdf", "docx", "markdown", "text"]
Variant = Literal["engine_topk", "flat_topk", "structure", "diversity", "full"]
GateName = Literal["relevance", "gain", "redundancy", "section_budget", "global_budget", "max_chunks"]
FinalDecision = Literal["selected", "rejected"]
FinalReason = Literal[
    "passed_all_gates",
    "low_relevance",
    "low_gain",
    "too_redundant",
    "section_budget_exceeded",
    "budget_exceeded",
    "max_chunks",
    "replaced",
    "expanded_into",
]
REJECTION_REASONS: tuple[FinalReason, ...] = (
    "too_redundant",
    "budget_exceeded",
    "section_budget_exceeded",
    "low_relevance",
    "low_gain",
    "max_chunks",
)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ChunkTerms(_Record):
    """A chunk's normalised terms, computed at ingest so post-processing never re-tokenises.

    ``counts`` counts every token of ``text`` (what the paper's tf and keyword
    priors need); ``compare`` lists the distinct tokens of ``compare_text`` (the
    redundancy gate's words under ``tf``, before stop words are removed) and ``words``
    its distinct words as the standard tokenizer cuts them, lower-cased (the gate's
    words under ``bm25``: a decimal number stays one word); ``stems`` and
    ``context_stems`` count the analysed terms of ``text`` and ``context``, as
    the chunk index's ``english`` analyzer makes them (what ``bm25`` relevance
    counts). ``cells``, for a table row, holds the analysed words of each of its
    cell values and linked labels (``core.named.cell_terms``: which of them a
    question names); None for prose, and for rows indexed before it was stored,
    whose cells are then read from the text. ``version`` is
    ``esbubble.text.TERMS_VERSION`` at ingest; a chunk whose version differs is
    scored from its text instead.
    """

    version: int
    counts: dict[str, int]
    compare: list[str]
    words: list[str] = Field(default_factory=list)
    stems: dict[str, int] = Field(default_factory=dict)
    context_stems: dict[str, int] = Field(default_factory=dict)
    cells: list[list[str]] | None = None


class ChunkEmbedding(_Record):
    """A chunk's sentence embedding, computed at ingest (``esbubble.embedding``): the model's name and
    the unit vector of the chunk's context and text, base64 of little-endian float32."""

    model: str
    vector: str


class Chunk(_Record):
    """One indexed unit of a document that keeps its structural identity.

    ``text`` is what a reader sees and what tf counts; ``compare_text`` is what
    the redundancy gate compares. For a table row, ``compare_text`` holds the
    cell values only, so the header names every row of a sheet repeats do not
    make all rows look redundant. For prose both are the same text.
    ``context`` says where the text sits — document title, heading path or
    sheet name, a table's column headers — so a query can match the place
    as well as the words; it is indexed apart from ``text``. ``line_start``
    and ``line_end`` are the 1-based lines of a text or Markdown file the
    chunk was read from, for citations.
    """

    chunk_id: str
    doc_id: str
    source_path: str | None = Field(
        default=None,
        description="the file ingested, absolute and resolved; None for chunks indexed before esbubble "
        "stored it. Guards a doc id against silently changing hands (see ``replace_document``).",
    )
    source_type: SourceType
    section: str
    sheet_name: str | None = None
    bucket: str
    row_number: int | None = None
    page: int | None = None
    line_start: int | None = Field(default=None, ge=1)
    line_end: int | None = Field(default=None, ge=1)
    position: int = Field(ge=0, description="order within the document, for window expansion")
    parent_id: str | None = None
    token_count: int = Field(ge=0)
    encoding: str = "o200k_base"
    content_hash: str
    text: str
    compare_text: str
    context: str = Field(
        default="",
        description="title, heading path or sheet name, column headers: searched, weighted lower",
    )
    terms: ChunkTerms | None = Field(
        default=None, description="precomputed at ingest; None for chunks indexed before esbubble stored them"
    )
    embedding: ChunkEmbedding | None = Field(
        default=None, description="computed at ingest under [ingest] embedding_model; None: no vector"
    )
    ingested_at: datetime | None = None


class Candidate(_Record):
    """A chunk as the engine returned it for a query."""

    chunk: Chunk
    es_score: float = 0.0
    es_rank: int = Field(ge=1, default=1)
    similarity: float | None = Field(
        default=None,
        description="cosine of the question and the chunk under the index's embedding model; None: no vector",
    )


class GateResult(_Record):
    """One gate's verdict on one candidate, with the numbers that decided it.

    ``value`` is what was measured (score, gain or fill value, overlap, tokens needed, chunk count)
    and ``limit`` what it was compared with (min_score, the gain floor, δ, tokens remaining,
    max_chunks), so the verdict can be re-derived from the record alone.
    """

    gate: GateName
    passed: bool
    value: float
    limit: float
    rule: str = Field(description="the comparison that must hold to pass, e.g. 'value < limit'")
    enabled: bool = True


class ExpansionEvent(_Record):
    """A neighbour or parent added to (or refused for) a selected chunk."""

    anchor_chunk_id: str
    mode: Literal["window", "parent"]
    added: bool
    tokens: int
    reason: str
    chunk_id: str | None = Field(default=None, description="the neighbour; None for a whole-parent decision")


class ReplacementEvent(_Record):
    """A fixed-budget swap made by repair: the victim leaves, the newcomer enters."""

    victim_chunk_id: str
    newcomer_chunk_id: str
    victim_utility: float
    newcomer_utility: float
    margin: float
    loop: int


class TermMatch(_Record):
    """One analysed query term in one chunk: its idf, its counts, and what it contributed."""

    facet: str
    term: str
    idf: float
    tf: int
    context_tf: int
    weight: float = Field(description="idf · saturation(tf + context_weight · context_tf)")


class StepDetails(_Record):
    """Everything a stage decided about one candidate (stored, not indexed)."""

    gates: list[GateResult] = Field(default_factory=list)
    second_pass: list[GateResult] = Field(
        default_factory=list, description="global_pool slack: the gates re-run in the second pass"
    )
    pool_remaining: float | None = None
    expansion: list[ExpansionEvent] = Field(default_factory=list)
    replacement: ReplacementEvent | None = None
    notes: list[str] = Field(default_factory=list)
    terms: list[TermMatch] = Field(
        default_factory=list, description="bm25: each query term the chunk matches, with its idf and weight"
    )
    covered: list[str] = Field(
        default_factory=list, description="coverage selection: the facets the bubble covered at decision time"
    )
    coverage: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "coverage selection: how much of each covered facet the bubble covered at decision time"
            " (each selected chunk adds its weight for the facet over the best candidate's)"
        ),
    )


class TraceRecord(_Record):
    """One candidate's fate in one run: the paper's Appendix A1 fields and more."""

    trace_id: str = Field(description="derived from run_id and chunk_id, so a replay never duplicates")
    run_id: str
    batch_id: str | None = None
    timestamp: datetime = Field(alias="@timestamp")
    query_hash: str = Field(description="keyed hash of the query; the text is in the run manifest only")
    variant: Variant
    rank: int = Field(ge=1, description="order in which selection decided the candidate (1 = first)")
    chunk_id: str
    doc_id: str
    section: str
    sheet_name: str | None
    bucket: str
    row_number: int | None
    page: int | None
    token_count: int
    tf: float = Field(description="eq. 5: occurrences of the query terms in the text")
    relevance: float | None = Field(
        default=None, description="tf (relevance = 'tf') or the Σ of facet weights (bm25); None: older record"
    )
    boost: float
    len_penalty: float
    score_raw: float = Field(description="relevance + boost")
    score_final: float = Field(description="(relevance + boost) · len_penalty")
    gain: float | None = Field(
        default=None, description="what selection ranked by: score_final, or the marginal gain; None: older"
    )
    document_share: float | None = Field(
        default=None,
        description="coverage order: the share of the query's facet weight the chunk's document matches,"
        " which scales its facet weights in the gain (1 when off); None: older record",
    )
    document_engine: float | None = Field(
        default=None,
        description="coverage order: the engine score of the best candidate of the chunk's document over"
        " the best candidate's of all, which also scales its facet weights in the gain (1 when off);"
        " None: older record",
    )
    chunk_share: float | None = Field(
        default=None,
        description="coverage order: the share of the query's facet weight the chunk itself matches (its"
        " facets, each at the best weight any candidate has for it), whose chunk_share-th power also"
        " scales its facet weights in the gain (1 when off); None: older record",
    )
    fill_value: float | None = Field(
        default=None,
        description="coverage order: a spent candidate's gain on the empty bubble times its engine score over"
        " the best candidate's, which ordered it after every candidate whose gain was at least spent_gain"
        " of the best; None: its gain ordered it (and under score order, and in older records)",
    )
    named: str | None = Field(
        default=None,
        description="a table row: its cell value the question names (the value's analysed words a run of"
        " the question's), else the label its context links one of its codes to that the question names;"
        " None: none, prose, or named_row off",
    )
    named_weight: float | None = Field(
        default=None,
        description="coverage order: 1 + named_row for a row the question names, which also scales its"
        " facet weights in the gain (1 when off or not named); None: older record",
    )
    rank_weight: float | None = Field(
        default=None,
        description="coverage order: 1 + engine_rank / (es_rank + 1), what the engine's rank of the chunk"
        " weighs its facet weights by in the gain (1 when off); None: older record",
    )
    near: list[str] = Field(
        default_factory=list,
        description="bm25 coverage order: the question's successive word pairs (analysed, 'a b') the chunk"
        " holds within proximity_window words of each other",
    )
    proximity_weight: float | None = Field(
        default=None,
        description="coverage order: 1 + proximity x the share of the question's word pairs the chunk holds"
        " near each other, what its facet weights count by in the gain (1 when off); None: older record",
    )
    similarity: float | None = Field(
        default=None,
        description="cosine of the question and the chunk under the embedding model; None: no vector"
        " (or an older record)",
    )
    semantic_weight: float | None = Field(
        default=None,
        description="coverage order: the chunk's similarity over the best candidate's, to the power"
        " semantic, what its facet weights count by in the gain (1 when off); None: older record",
    )
    facets: list[str] = Field(default_factory=list, description="the query facets the chunk matches")
    facets_new: list[str] = Field(
        default_factory=list, description="of those, the ones the bubble did not cover at decision time"
    )
    es_score: float
    es_rank: int
    overlap: float
    overlap_with: str | None = Field(
        default=None,
        description='overlap = "chunk": the chunk_id of the admitted chunk the overlap was measured against'
        " (the first admitted of those sharing the most words with this one); None when it shares no"
        ' word with the bubble, under overlap = "bubble" (measured against the union) and in older records',
    )
    threshold: float = Field(description="δ, the redundancy threshold in force")
    budget_remaining: float = Field(description="global tokens left when this candidate was decided")
    bucket_remaining: float = Field(description="bucket tokens left when this candidate was decided")
    stage: str = Field(description="the stage that made the final decision")
    step_decision: Literal["pass", "fail"]
    final_decision: FinalDecision
    final_reason: FinalReason
    selection_order: int | None = Field(default=None, description="1-based order of entry into the bubble")
    step_details: StepDetails

    @model_validator(mode="before")
    @classmethod
    def _without_legacy_query(cls, data: Any) -> Any:
        """Records written before the query moved to the manifest still carry it: read them anyway."""
        if isinstance(data, dict) and "query" in data:
            return {key: value for key, value in data.items() if key != "query"}
        return data


# The trace as the core builds it: plain JSON-ready dictionaries, built once per candidate and written
# to the audit index as they are. Their schema is ``TraceRecord`` above (with ``GateResult``,
# ``TermMatch``, ``StepDetails``): tests validate what the core builds against it
# (``tests/test_trace_schema.py``), and records read back from Elasticsearch pass through it
# (``trace_dict``). ``typing_extensions.TypedDict`` because pydantic needs it on Python 3.11.
class GateDict(TypedDict):
    gate: GateName
    passed: bool
    value: float
    limit: float
    rule: str
    enabled: bool


class TermMatchDict(TypedDict):
    facet: str
    term: str
    idf: float
    tf: int
    context_tf: int
    weight: float


class StepDetailsDict(TypedDict):
    gates: list[GateDict]
    second_pass: list[GateDict]
    pool_remaining: float | None
    expansion: list[dict[str, Any]]  # ExpansionEvent, as JSON
    replacement: dict[str, Any] | None  # ReplacementEvent, as JSON
    notes: list[str]
    terms: list[TermMatchDict]
    covered: list[str]
    coverage: dict[str, float]


TraceDict = TypedDict(
    "TraceDict",
    {
        "trace_id": str,
        "run_id": str,
        "batch_id": str | None,
        "@timestamp": str,
        "query_hash": str,
        "variant": Variant,
        "rank": int,
        "chunk_id": str,
        "doc_id": str,
        "section": str,
        "sheet_name": str | None,
        "bucket": str,
        "row_number": int | None,
        "page": int | None,
        "token_count": int,
        "tf": float,
        "relevance": float | None,
        "boost": float,
        "len_penalty": float,
        "score_raw": float,
        "score_final": float,
        "gain": float | None,
        "document_share": float | None,
        "document_engine": float | None,
        "chunk_share": float | None,
        "fill_value": float | None,
        "named": str | None,
        "named_weight": float | None,
        "rank_weight": float | None,
        "near": list[str],
        "proximity_weight": float | None,
        "similarity": float | None,
        "semantic_weight": float | None,
        "facets": list[str],
        "facets_new": list[str],
        "es_score": float,
        "es_rank": int,
        "overlap": float,
        "overlap_with": str | None,
        "threshold": float,
        "budget_remaining": float,
        "bucket_remaining": float,
        "stage": str,
        "step_decision": Literal["pass", "fail"],
        "final_decision": FinalDecision,
        "final_reason": FinalReason,
        "selection_order": int | None,
        "step_details": StepDetailsDict,
    },
)


def trace_dict(source: Any) -> TraceDict:
    """A trace record read from outside (Elasticsearch, a spool file) as the core's plain structure,
    validated against ``TraceRecord`` on the way in."""
    return cast(TraceDict, TraceRecord.model_validate(source).model_dump(mode="json", by_alias=True))


class EngineInfo(_Record):
    name: str
    version: str
    distribution: str = "elasticsearch"


class RunTotals(_Record):
    candidates: int
    selected: int
    tokens_used: int
    budget: int
    sections: list[str]
    rejected: dict[str, int]
    avg_overlap: float


class RunManifest(_Record):
    """One per run: what was asked, with which configuration, against what, and how long it took."""

    run_id: str
    batch_id: str | None = None
    timestamp: datetime = Field(alias="@timestamp")
    query: str | None
    query_hash: str
    variant: Variant
    config: dict[str, Any] = Field(description="the full resolved BubbleConfig, as JSON")
    config_hash: str
    slack_policy: str
    index: str
    index_doc_count: int | None = None
    engine: EngineInfo | None = None
    esbubble_version: str
    request_body: dict[str, Any] | None = Field(default=None, description="the exact retrieval request")
    totals: RunTotals
    term_stats: dict[str, Any] | None = Field(
        default=None, description="bm25: the engine's document count and per-term document frequencies used"
    )
    bucket_shares: dict[str, float] = Field(default_factory=dict, description="ρ_b per bucket, as resolved")
    timings_ms: dict[str, float] = Field(default_factory=dict)
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None


class SelectedChunk(_Record):
    """A chunk in the bubble with the numbers that put it there."""

    rank: int
    selection_order: int
    chunk: Chunk
    tf: float
    relevance: float
    boost: float
    len_penalty: float
    score: float
    es_score: float
    overlap: float


class Bubble(_Record):
    """The result of the pure core: the selected chunks and one trace record per candidate."""

    run_id: str
    query: str
    variant: Variant
    budget: int
    delta: float
    selected: list[SelectedChunk]
    # Built by the core from validated values (its schema is tested, see ``TraceDict``): not re-validated.
    trace: Annotated[list[TraceDict], SkipValidation]
    batch_id: str | None = None
    query_redacted: bool = False
    query_hash: str = Field(description="keyed hash of the query (see esbubble.app.query_key)")
    theta: float | None = Field(default=None, description="θ of the length penalty, resolved")
    bucket_caps: dict[str, int] = Field(default_factory=dict, description="ρ_b·T_B per bucket, whole tokens")
    bucket_shares: dict[str, float] = Field(default_factory=dict, description="ρ_b per bucket, as resolved")
    term_stats: dict[str, Any] | None = Field(
        default=None, description="bm25: document count and frequencies"
    )
    pool: int | None = Field(default=None, description="global_pool slack available to the second pass")

    @property
    def tokens_used(self) -> int:
        return sum(s.chunk.token_count for s in self.selected)

    @property
    def sections(self) -> list[str]:
        """Distinct sections in selection order."""
        return list(dict.fromkeys(s.chunk.section for s in self.selected))

    @property
    def rejected(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(REJECTION_REASONS, 0)
        for record in self.trace:
            if record["final_decision"] == "rejected" and record["final_reason"] in counts:
                counts[record["final_reason"]] += 1
        return counts
