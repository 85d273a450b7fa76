"""Fixed-budget gap repair: SEAL-RAG's "Replace, Don't Expand" (docs/algorithm.md), lexically.

Facets are the query terms ``T(q)`` plus the profile's facet groups; a facet
is a gap when no selected chunk contains any of its terms, words compared as
the bubble's relevance mode compares them: analysed as the chunk index's
``english`` analyzer does under ``bm25`` (so "boxes" covers "box", as it does
for selection), raw tokens under the paper's ``tf``. The store runs one
micro-query per gap (batched); this module decides, purely, which newcomer
replaces which selected chunk. Per loop, the selected chunk of lowest utility
``λ1·gap_coverage + λ2·novelty − λ3·redundancy`` (measured against the rest of
the bubble) is the victim; the best newcomer replaces it only when it beats
the victim by ε, closes a current gap and passes every gate of the bubble
after the swap. The chunk count never changes and the token total never
grows. A chunk that just entered cannot be evicted for ``dwell`` loops, and an
evicted chunk never comes back, so repair cannot oscillate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from esbubble.config import BubbleConfig, BubbleParams
from esbubble.core.analysis import analyze, analyze_indexed, standard_tokens
from esbubble.core.bubble import selected_chunk
from esbubble.core.budget import Budget, BudgetRules
from esbubble.core.gates import GateResults, Redundancy, Verdicts, overlap, run_gates
from esbubble.core.relevance import TermStats, facet_terms
from esbubble.core.score import (
    ScoredCandidate,
    Scorer,
    chunk_words,
    contains_phrase,
    query_facets_of,
    scorer_for,
)
from esbubble.core.select import gate_switches, relevance_value
from esbubble.core.trace import Decision, RunContext, trace_record
from esbubble.core.variants import VARIANTS
from esbubble.models import Bubble, Candidate, Chunk, ReplacementEvent, SelectedChunk, TraceDict
from esbubble.text import query_terms, tokenize


class Facet(BaseModel):
    """One thing the query asks about: a query term, or a profile facet group (any of its terms)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    terms: list[str]
    analysed: bool = False  # bm25: terms and texts compared as the index's analyzer makes them

    def words(self, text: str) -> list[str]:
        """A term of the facet as it is compared: analysed as a query is, or raw tokens (tf)."""
        return analyze(text) if self.analysed else tokenize(text)

    def text_words(self, text: str) -> list[str]:
        """A chunk's text as it is compared: analysed as the index analyses it (each identifier
        followed by its parts), or raw tokens (tf)."""
        return analyze_indexed(text) if self.analysed else tokenize(text)

    def covered_by(self, tokens: Sequence[str]) -> bool:
        """Some term of the facet occurs, as a phrase, in ``tokens`` (a text's ``words``)."""
        return any(contains_phrase(tokens, self.words(term)) for term in self.terms)


class Utility(BaseModel):
    """A chunk's repair utility against the rest of the bubble, with its parts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk_id: str
    gap_coverage: float
    novelty: float
    redundancy: float
    utility: float


class RepairResult(BaseModel):
    """The repaired bubble, every swap made, and the gaps before and after."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bubble: Bubble
    events: list[ReplacementEvent]
    gaps_before: list[str]
    gaps_after: list[str]
    loops: int


def facets_of(query: str, config: BubbleConfig) -> list[Facet]:
    """The query terms ``T(q)``, then the profile's facet groups, in a stable order."""
    analysed = config.bubble.relevance == "bm25"
    terms = (
        _query_words(query, config.bubble.stop_words)
        if analysed
        else query_terms(query, config.bubble.stop_words)
    )
    facets = [Facet(name=term, terms=[term], analysed=analysed) for term in terms]
    for name, group in sorted(config.repair.facets.items()):
        facets.append(Facet(name=name, terms=list(group), analysed=analysed))
    # A term the analyzer drops entirely (one of its stop words) can be neither found nor retrieved.
    kept = [f.model_copy(update={"terms": [t for t in f.terms if f.words(t)]}) for f in facets]
    return [f for f in kept if f.terms]


def _query_words(query: str, stop_words: Sequence[str]) -> list[str]:
    """The query's distinct words as the analyzer reads them ("Cotswold's" is one word, not "cotswold"
    and "s"), lowercased, less the profile's stop words."""
    stops = frozenset(stop_words)
    words = (word.lower() for word in standard_tokens(query))
    return list(dict.fromkeys(word for word in words if word not in stops))


ChunkWords = Callable[[Chunk], Sequence[str]]
ChunkWordSet = Callable[[Chunk], frozenset[str]]
_Reading = TypeVar("_Reading")


def _once_per_chunk(read: Callable[[Chunk], _Reading]) -> Callable[[Chunk], _Reading]:
    """``read``, remembered by chunk id: repair reads the bubble's chunks for every utility it measures."""
    known: dict[str, _Reading] = {}

    def reading(chunk: Chunk) -> _Reading:
        found = known.get(chunk.chunk_id)
        if found is None:
            found = known[chunk.chunk_id] = read(chunk)
        return found

    return reading


def reader(facets: Sequence[Facet]) -> ChunkWords:
    """A chunk's text as ``facets`` (all from one ``facets_of``) compare it, each chunk read once
    (analysing a text costs ~0.1 ms)."""
    if not facets:
        return lambda chunk: []
    return _once_per_chunk(lambda chunk: facets[0].text_words(chunk.text))


def gate_reader(params: BubbleParams) -> ChunkWordSet:
    """A chunk's ``words(x)`` as the redundancy gate reads them under ``params``, each chunk read once."""
    stops, standard = frozenset(params.stop_words), params.standard_words
    return _once_per_chunk(lambda chunk: chunk_words(chunk, stops, standard=standard))


def measurer(config: BubbleConfig, asked: Iterable[str], words: ChunkWordSet | None = None) -> ChunkWordSet:
    """A chunk's words as the redundancy gate compares them, each chunk read once: ``words(x)`` (read
    by ``words``, a ``gate_reader``) and, under the ``chunk`` overlap, less the words the query asks
    about (``asked``), which every relevant chunk holds (``Redundancy.compared``). Without that,
    novelty and redundancy called the evidence row "Cotswold; LULUCF" redundant for sharing
    "cotswold" and "lulucf" with its neighbours, and an off-topic definition novel enough to replace
    it."""
    read = words or gate_reader(config.bubble)
    rule = Redundancy(config.bubble.overlap_mode, asked)
    return _once_per_chunk(lambda chunk: rule.compared(read(chunk)))


def uncovered(
    facets: Sequence[Facet], chunks: Sequence[Chunk], read: ChunkWords | None = None
) -> list[Facet]:
    """The facets no chunk in ``chunks`` covers (``read``: a ``reader`` of ``facets`` to reuse)."""
    read = read or reader(facets)
    token_lists = [read(c) for c in chunks]
    return [f for f in facets if not any(f.covered_by(tokens) for tokens in token_lists)]


def micro_queries(gaps: Sequence[Facet]) -> list[str]:
    """One query per gap, restricted to the gap's terms."""
    return [" ".join(gap.terms) for gap in gaps]


def micro_query_config(config: BubbleConfig) -> BubbleConfig:
    """The profile a micro-query runs with: ``micro_k`` hits and no priors.

    Without priors the engine body is a plain BM25 match on the gap terms, so
    prior-boosted sections cannot crowd out the chunks that close the gap.
    """
    source = "repair micro-query"
    no_priors = config.with_section("priors", {"sections": {}, "keywords": {}}, source=source)
    return no_priors.with_section("bubble", {"candidate_k": config.repair.micro_k}, source=source)


def utility(
    chunk: Chunk,
    rest: Sequence[Chunk],
    facets: Sequence[Facet],
    config: BubbleConfig,
    *,
    measure: ChunkWordSet,
    read: ChunkWords | None = None,
) -> Utility:
    """``λ1·gap_coverage + λ2·novelty − λ3·redundancy`` of ``chunk`` against ``rest``.

    gap_coverage: the share of all facets ``chunk`` covers that ``rest`` does not;
    novelty: the share of its words not yet in ``rest``; redundancy: its largest
    overlap with any single chunk of ``rest`` (the MMR-style penalty). Words are
    the redundancy gate's (``measure``, a ``measurer``); ``read`` reuses a
    repair's readings of the facets.
    """
    read = read or reader(facets)
    open_facets = uncovered(facets, rest, read)
    tokens = read(chunk)
    closes = sum(1 for f in open_facets if f.covered_by(tokens))
    gap_coverage = closes / len(facets) if facets else 0.0
    words = measure(chunk)
    rest_words = [measure(c) for c in rest]
    novelty = 1.0 - overlap(words, set().union(*rest_words)) if words else 0.0
    redundancy = max((overlap(words, other) for other in rest_words), default=0.0)
    params = config.repair
    value = (
        params.gap_weight * gap_coverage
        + params.novelty_weight * novelty
        - params.redundancy_weight * redundancy
    )
    return Utility(
        chunk_id=chunk.chunk_id,
        gap_coverage=gap_coverage,
        novelty=novelty,
        redundancy=redundancy,
        utility=value,
    )


@dataclass(frozen=True, slots=True)
class _Rules:
    """The bubble's own decision rules, for a newcomer: its scoring (θ and term statistics of the
    bubble, so scores compare), the gate table with the variant's switches, and selection's
    redundancy rule (the overlap mode of the profile, query words left out under ``chunk``)."""

    bubble: Bubble
    config: BubbleConfig
    budget_rules: BudgetRules
    scorer: Scorer | None
    verdicts: Verdicts
    run: RunContext
    asked: frozenset[str]
    words: ChunkWordSet  # ``gate_reader``: each chunk's words(x), read once per repair

    @classmethod
    def of(cls, bubble: Bubble, config: BubbleConfig) -> _Rules:
        stats = TermStats.from_json(bubble.term_stats) if bubble.term_stats is not None else None
        switches = VARIANTS[bubble.variant]
        return cls(
            bubble=bubble,
            config=config,
            budget_rules=BudgetRules.of(config),
            scorer=cls._scorer(bubble, config, stats, None)
            if stats or config.bubble.relevance == "tf"
            else None,
            verdicts=Verdicts(gate_switches(switches)),
            run=RunContext(
                run_id=bubble.run_id,
                timestamp=bubble.trace[0]["@timestamp"],
                query_digest=bubble.query_hash,
                variant=bubble.variant,
                delta=bubble.delta,
                batch_id=bubble.batch_id,
            ),
            asked=frozenset(facet_terms(query_facets_of(bubble.query, config))),
            words=gate_reader(config.bubble),
        )

    @staticmethod
    def _scorer(
        bubble: Bubble, config: BubbleConfig, stats: TermStats | None, first: Candidate | None
    ) -> Scorer:
        use_priors = VARIANTS[bubble.variant].priors
        return scorer_for(
            bubble.query, config, use_priors=use_priors, theta=bubble.theta or 1.0, stats=stats, first=first
        )

    def score(self, candidate: Candidate) -> ScoredCandidate:
        """eq. 5–8 for a newcomer, as selection scored the bubble's own candidates."""
        scorer = self.scorer or self._scorer(self.bubble, self.config, None, candidate)
        return scorer.score(candidate)

    def swap_gates(
        self, newcomer: ScoredCandidate, victim: Chunk, rest: Sequence[Chunk]
    ) -> tuple[GateResults, str | None]:
        """Every gate of the table for ``newcomer`` entering in ``victim``'s place, and the chunk of
        ``rest`` its overlap was measured against (``Redundancy.measure``)."""
        bubble, params = self.bubble, self.config.bubble
        rules = self.budget_rules
        budget = Budget.after(bubble, rest, rules)
        freed = victim.token_count if rules.bucket_of(victim) == newcomer.bucket else 0
        redundancy = Redundancy(params.overlap_mode, self.asked)
        for chunk in rest:
            redundancy.admit(self.words(chunk), chunk.chunk_id)
        tokens = float(newcomer.tokens)
        overlap_value, nearest = redundancy.measure(newcomer.words)
        return run_gates(
            self.verdicts,
            relevance=(relevance_value(newcomer, params), params.min_score),
            # a swap is decided by its utility (``epsilon``), not by a gain: the gain gate is off and
            # logs the newcomer's score, which its record gives as its gain (``_RepairState.apply``)
            gain=(newcomer.score_final, 0.0),
            redundancy=(overlap_value, bubble.delta),
            section_budget=(tokens, budget.swap_room(newcomer.bucket, freed)),
            # Never grow the token total: the newcomer may spend at most what the victim frees.
            global_budget=(tokens, float(min(budget.remaining(), victim.token_count))),
            max_chunks=(float(len(rest)), float(params.max_chunks)),
        ), nearest


def _pool(candidates: Sequence[Candidate]) -> list[Candidate]:
    """One candidate per chunk id (the best engine score), in chunk-id order."""
    best: dict[str, Candidate] = {}
    for candidate in candidates:
        seen = best.get(candidate.chunk.chunk_id)
        if seen is None or candidate.es_score > seen.es_score:
            best[candidate.chunk.chunk_id] = candidate
    return [best[k] for k in sorted(best)]


@dataclass(frozen=True)
class _Swap:
    victim: SelectedChunk
    victim_utility: Utility
    newcomer: ScoredCandidate
    newcomer_utility: Utility
    gates: GateResults
    overlap_with: str | None  # the chunk of the bubble its overlap was measured against


@dataclass
class _RepairState:
    """The bubble as repair changes it: selected chunks, trace records, who entered when, who left."""

    bubble: Bubble
    config: BubbleConfig
    rules: _Rules
    facets: list[Facet]
    read: ChunkWords  # ``reader(facets)``: each chunk's words, read once per repair
    measure: ChunkWordSet  # ``measurer``: each chunk's words as the redundancy gate measures them
    selected: list[SelectedChunk]
    records: dict[str, TraceDict]
    extra_records: list[TraceDict] = field(default_factory=list)
    inserted_at: dict[str, int] = field(default_factory=dict)
    evicted: set[str] = field(default_factory=set)

    @property
    def chunks(self) -> list[Chunk]:
        return [s.chunk for s in self.selected]

    def victim(self, loop: int) -> tuple[Utility, SelectedChunk] | None:
        """The lowest-utility selected chunk that dwell does not protect (ties: worst rank first)."""
        chunks = self.chunks
        scored = [
            (
                utility(
                    s.chunk,
                    [c for c in chunks if c.chunk_id != s.chunk.chunk_id],
                    self.facets,
                    self.config,
                    read=self.read,
                    measure=self.measure,
                ),
                s,
            )
            for s in self.selected
            if loop - self.inserted_at.get(s.chunk.chunk_id, -(10**9)) > self.config.repair.dwell
        ]
        return min(scored, key=lambda v: (v[0].utility, -v[1].rank, v[1].chunk.chunk_id), default=None)

    def best_swap(
        self, victim: SelectedChunk, victim_utility: Utility, pool: Sequence[Candidate]
    ) -> _Swap | None:
        """The best gap-closing newcomer that beats the victim by ε and passes every gate."""
        chunks = self.chunks
        gaps = uncovered(self.facets, chunks, self.read)
        present = {c.chunk_id for c in chunks} | self.evicted
        hashes = {c.content_hash for c in chunks}
        rest = [c for c in chunks if c.chunk_id != victim.chunk.chunk_id]
        ranked = [
            (utility(c.chunk, rest, self.facets, self.config, read=self.read, measure=self.measure), c)
            for c in pool
            if c.chunk.chunk_id not in present
            and c.chunk.content_hash not in hashes
            and any(gap.covered_by(self.read(c.chunk)) for gap in gaps)
        ]
        ranked.sort(key=lambda u: (-u[0].utility, u[1].chunk.chunk_id))
        for newcomer_utility, candidate in ranked:
            if newcomer_utility.utility <= victim_utility.utility + self.config.repair.epsilon:
                return None
            scored = self.rules.score(candidate)
            gates, nearest = self.rules.swap_gates(scored, victim.chunk, rest)
            if gates.passed:
                return _Swap(victim, victim_utility, scored, newcomer_utility, gates, nearest)
        return None

    def apply(self, swap: _Swap, loop: int) -> ReplacementEvent:
        """Make the swap and record it on both trace records."""
        bubble, config = self.bubble, self.config
        victim_id, candidate = swap.victim.chunk.chunk_id, swap.newcomer
        event = ReplacementEvent(
            victim_chunk_id=victim_id,
            newcomer_chunk_id=candidate.chunk_id,
            victim_utility=swap.victim_utility.utility,
            newcomer_utility=swap.newcomer_utility.utility,
            margin=config.repair.epsilon,
            loop=loop,
        )
        self.evicted.add(victim_id)
        self.inserted_at[candidate.chunk_id] = loop
        order = max(s.selection_order for s in self.selected) + 1
        parts = f"newcomer {swap.newcomer_utility.model_dump()}, victim {swap.victim_utility.model_dump()}"
        known = self.records.get(candidate.chunk_id)
        rank = known["rank"] if known is not None else len(bubble.trace) + len(self.extra_records) + 1
        gates = swap.gates
        entrant = selected_chunk(candidate, rank=rank, order=order, overlap=gates.redundancy["value"])
        self.selected = [s for s in self.selected if s is not swap.victim] + [entrant]
        decision = Decision(
            # The newcomer's record lists no facet or term matches: repair's facets are lexical, not
            # the scoring facets (the record says which gap it closed in its notes).
            scored=candidate._replace(matches=()),
            rank=rank,
            gates=gates,
            overlap=gates.redundancy["value"],
            budget_remaining=gates.global_budget["limit"],
            bucket_remaining=gates.section_budget["limit"],
            selection_order=order,
            final_reason="passed_all_gates",
            gain=candidate.score_final,
            overlap_with=swap.overlap_with,
        )
        record = trace_record(
            decision,
            self.rules.run,
            stage="repair",
            replacement=event,
            notes=[f"repair loop {loop}: {parts}"],
        )
        if known is not None:
            record["es_rank"] = known["es_rank"]
        else:
            self.extra_records.append(record)
        self.records[record["chunk_id"]] = record
        # Records are shared with the bubble repair started from: the victim's is copied, not changed.
        victim = self.records[victim_id].copy()
        details = victim["step_details"].copy()
        details["replacement"] = event.model_dump(mode="json")
        victim["final_decision"] = "rejected"
        victim["final_reason"] = "replaced"
        victim["stage"] = "repair"
        victim["step_decision"] = "fail"
        victim["step_details"] = details
        self.records[victim_id] = victim
        return event


def plan_repair(bubble: Bubble, candidates: Sequence[Candidate], config: BubbleConfig) -> RepairResult:
    """Swap low-utility chunks for gap-closing newcomers, one swap per loop; pure and deterministic."""
    facets = facets_of(bubble.query, config)
    rules = _Rules.of(bubble, config)
    state = _RepairState(
        bubble=bubble,
        config=config,
        rules=rules,
        facets=facets,
        read=reader(facets),
        measure=measurer(config, rules.asked, rules.words),
        selected=sorted(bubble.selected, key=lambda s: s.selection_order),
        records={r["chunk_id"]: r for r in bubble.trace},
    )
    gaps_before = [f.name for f in uncovered(facets, state.chunks, state.read)]
    pool = _pool(candidates)
    events: list[ReplacementEvent] = []
    loops = 0
    for loop in range(1, config.repair.loops + 1):
        if not state.selected or not uncovered(facets, state.chunks, state.read):
            break
        loops = loop
        victim = state.victim(loop)
        swap = state.best_swap(victim[1], victim[0], pool) if victim is not None else None
        if swap is None:
            break
        events.append(state.apply(swap, loop))
    trace = [state.records[r["chunk_id"]] for r in bubble.trace]
    trace += [state.records[r["chunk_id"]] for r in state.extra_records]
    return RepairResult(
        bubble=bubble.model_copy(update={"selected": state.selected, "trace": trace}),
        events=events,
        gaps_before=gaps_before,
        gaps_after=[f.name for f in uncovered(facets, state.chunks, state.read)],
        loops=loops,
    )
