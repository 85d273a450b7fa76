"""Greedy selection under the gates and the slack policies.

Every candidate is decided once. Under ``selection = "score"`` (the paper)
candidates are considered in descending score, ties by chunk_id. Under
``selection = "coverage"`` the next candidate is the one with the best
marginal gain now: the weight of the query facets it matches, a facet the
bubble already covers ``n`` earning ``covered_weight ** n`` of its weight (a
chunk covers a facet in proportion to how strongly it matches it), with its
prior, times its length penalty. Gains only fall as the
bubble grows, so a lazy greedy (a heap of stale upper bounds, re-evaluated on
top) finds the same order as recomputing every gain at every step. Every
gate is evaluated for every candidate; the first failing gate gives the
reason. A candidate whose gain has fallen below ``spent_gain`` of the best
gain on the empty bubble has little left to cover: such *spent* candidates
come after all others, by their fill value (their gain on the empty bubble
times their engine score over the best candidate's), so a large budget is
filled with what the engine ranks high, not with whichever chunk's facets
happen to be covered a little less. Under ``global_pool`` a second pass lets
the candidates that only a bucket budget stopped spend what the buckets left
unspent; under ``strict`` nothing is re-considered.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal

from esbubble.config import BubbleParams
from esbubble.core.budget import Budget, bucket_caps
from esbubble.core.gates import GateResults, Redundancy, Verdicts, reason_of, run_gates
from esbubble.core.proximity import Proximity
from esbubble.core.relevance import Facet, facet_terms
from esbubble.core.score import ScoredCandidate, combine
from esbubble.core.trace import Decision
from esbubble.core.variants import VariantSwitches
from esbubble.models import GateName

__all__ = [
    "Decision", "Selection", "bucket_caps", "rank_weight", "relevance_demand", "resolve_shares", "select",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Selection:
    """All decisions in rank order, plus the bucket caps and the slack pool that applied."""

    decisions: list[Decision]
    bucket_caps: dict[str, int]
    bucket_shares: dict[str, float]
    pool: int | None


def resolve_shares(
    present: Iterable[str],
    shares: Mapping[str, float],
    mass: Mapping[str, float] | None = None,
    floor: float = 1.0,
    *,
    mode: Literal["pool", "demand", "equal"] = "equal",
) -> dict[str, float]:
    """ρ_b for every listed or present bucket.

    Listed buckets keep their share. Present buckets that are not listed get
    what the listed shares leave (``rest``):

    - ``pool``: each of them all of ``rest``, so they draw on one pool and only
      the global budget and the listed caps bound them (a share no profile
      asked for would only reject relevant chunks: Context Bubble sends what
      a section does not spend to a global slack pool);
    - ``equal``: ``rest`` split equally (the paper's homogeneous ρ);
    - ``demand``: ``floor`` of ``rest`` split equally, the rest in proportion to
      each bucket's relevance ``mass`` (``relevance_demand``; equally when no
      bucket has any).
    """
    resolved = dict(shares)
    unlisted = sorted({b for b in present if b not in shares})
    if not unlisted:
        return resolved
    rest = max(0.0, 1.0 - sum(shares.values()))
    if mode == "pool":
        return resolved | dict.fromkeys(unlisted, rest)
    if mode == "equal":
        floor = 1.0
    masses = {b: max(0.0, (mass or {}).get(b, 0.0)) for b in unlisted}
    total = sum(masses.values())
    for bucket in unlisted:
        proportional = masses[bucket] / total if total > 0 else 1.0 / len(unlisted)
        resolved[bucket] = rest * (floor / len(unlisted) + (1.0 - floor) * proportional)
    return resolved


def relevance_demand(
    scored: Sequence[ScoredCandidate],
    params: BubbleParams,
    order: Order,
    facet_count: int,
    proximity: Proximity | None = None,
) -> dict[str, float]:
    """Per bucket, the tokens its candidates would take if the budget were filled in the selection
    order with every relevant candidate (relevance above ``min_score``) that fits, no bucket capped:
    where the evidence is, in the unit the budget is spent in."""
    relevant = [c for c in scored if c.relevance > params.min_score]
    coverage = _Coverage.of(relevant, facet_count, params, by_gain=order is _gain_order, proximity=proximity)
    demand: dict[str, float] = {}
    left = params.token_budget
    for candidate, _, _ in order(relevant, coverage):
        if candidate.tokens <= left:
            demand[candidate.bucket] = demand.get(candidate.bucket, 0.0) + candidate.tokens
            left -= candidate.tokens
            coverage.admit(candidate)
    return demand


def document_shares(best: Sequence[float], per_document: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Per document, its share of the query: the facet weight its candidates match at best, over the
    facet weight all candidates match at best (``best``). 1 for every document when nothing matches.

    A document that answers most of what the query asks about holds the chunks worth reading; one whose
    candidates match a single weak facet ("figures" in a software manual, for a question about a
    statistics table's figures) matched by accident, and its short chunks would otherwise win on gain
    per token.
    """
    total = sum(best)
    if total <= 0:
        return dict.fromkeys(per_document, 1.0)
    return {document: sum(weights) / total for document, weights in per_document.items()}


def chunk_shares(hits: Mapping[int, Sequence[tuple[int, float]]], best: Sequence[float]) -> dict[int, float]:
    """Per candidate that matches a facet (``hits``: its facets by index), its own share of the query:
    the best weight any candidate has for each facet it matches, over the sum of those best weights.

    A chunk matching most of what the query asks about at once is likelier to answer it than one
    matching a single word the bubble has not covered yet: "What format must device lock files in
    /var/lock use?" lost the clause "lock files must be the HDB UUCP lock file format" (every facet
    already covered) to a line matching only *format* ("mailbox files … in the standard UNIX mailbox
    format").
    """
    total = sum(best)
    return {key: sum(best[index] for index, _ in matched) / total for key, matched in hits.items() if matched}


def engine_ratios(best_scores: Sequence[float], top: float) -> list[float]:
    """Each engine score over the best candidate's of all (``top``); 1 each when no score is positive.

    Per facet (``best_scores``: the best score among the candidates matching it) this is the facet
    engine weight. The engine ranks by the whole query at once. A question word the documents rarely
    use ("happen", "get") is a facet of its own with a high idf, but the chunks matching it are ones
    the engine ranks far down (30th–70th); without this weight one of them entered for covering it and
    the evidence the engine ranked 4th no longer fitted.
    """
    if top <= 0:
        return [1.0] * len(best_scores)
    return [max(score, 0.0) / top for score in best_scores]


def engine_weights(best_scores: Mapping[str, float], top: float) -> dict[str, float]:
    """Per document, the engine's score of its best candidate (``best_scores``) over the best
    candidate's of all (``top``). 1 for every document when no score is positive.

    The engine ranks by the whole query at once, with its own statistics and the profile's priors: a
    document whose best chunk it ranks far below the top (a software manual's glossary for a question
    about an emissions table, matched on "data" and "mean") is unlikely to hold the evidence, however
    cheap its chunks are.
    """
    return dict(zip(best_scores, engine_ratios(list(best_scores.values()), top), strict=True))


def rank_weight(es_rank: int, engine_rank: float) -> float:
    """What the engine's rank of a candidate weighs its facets by: ``1 + engine_rank / (es_rank + 1)``
    (1 when ``engine_rank`` is 0).

    The engine scores the whole query at once, with its own length normalisation and the words of
    every field; the facet gain reads the query word by word. Where the gain alone decided, evidence
    the engine ranked 4th–10th lost its place to chunks covering the same words more cheaply (a
    licence's liability clause, a glossary row), and the bubble kept less of the engine's first ten
    than the engine's own order cut at the budget. A reciprocal rank, as reciprocal-rank fusion
    reads a ranking: the first few weigh most, and past the first few dozen it is near 1, so what
    the gain finds further down still enters on its own merit.
    """
    return 1.0 + engine_rank / (es_rank + 1) if engine_rank else 1.0


def semantic_weights(similarities: Sequence[float | None], power: float) -> list[float] | None:
    """Per candidate, what its similarity to the question weighs its facets by: its similarity over
    the best candidate's, negatives 0, to ``power``. None (the weight off) when ``power`` is 0, when
    a candidate carries no similarity (its chunk has no vector under the run's embedding model:
    weighing only some would favour the others), or when no similarity is positive.

    Words match words; the question's meaning is matched by none of the other signals. The chunk
    that answers "Can the watchdog repeat?" says "it is a one-shot timer": a sentence embedding puts
    the two near each other, the facet weights see one shared word.
    """
    if not power or not similarities or any(s is None for s in similarities):
        return None
    top = max(s for s in similarities if s is not None)
    if top <= 0:
        return None
    return [(max(s, 0.0) / top) ** power for s in similarities if s is not None]


@dataclass(frozen=True, slots=True)
class Weight:
    """What a chunk's facet weights count in its gain, and the parts the trace records: its document's
    share of the query, the engine's weight of its document, its own share of the query, its
    weight as a row the query names and the weight of its engine rank."""

    share: float = 1.0
    engine: float = 1.0
    chunk_share: float = 1.0
    named: float = 1.0  # 1 + named_row for a row the query names (``core.named``), else 1
    rank: float = 1.0  # ``rank_weight`` of its engine rank (1 when off)
    proximity: float = 1.0  # ``Proximity.weight`` of the question's word pairs it holds (1 when off)
    semantic: float = 1.0  # ``semantic_weight`` of its similarity to the question (1 when off)
    factor: float = 1.0  # share × engine × chunk_share ** power × named × rank × proximity × semantic

    @classmethod
    def of(
        cls,
        share: float,
        engine: float,
        chunk_share: float,
        power: float,
        *,
        named: float = 1.0,
        rank: float = 1.0,
        proximity: float = 1.0,
        semantic: float = 1.0,
    ) -> Weight:
        factor = share * engine * chunk_share**power * named * rank * proximity * semantic  # x ** 0 is 1.0
        return cls(share, engine, chunk_share, named, rank, proximity, semantic, factor)


NEUTRAL = Weight()


def gate_value(value: float, weight: Weight) -> float:
    """What the gain gate compares with its floor: a gain (or fill value) without its proximity weight."""
    return value / weight.proximity


# The version a heap key that never changes is tagged with (a candidate that matches no facet, or a
# spent one): exact at every version.
_FIXED = -1


class _Coverage:
    """How much of each query facet the bubble covers, and each candidate's marginal gain given that.

    A chunk covers a facet in proportion to how strongly it matches it: its weight for the facet
    over the best weight any candidate has for it (a passing mention of "Source Code Form" covers
    little of it, the clause that defines it all of it). A facet covered ``n`` (a sum of such
    shares) earns ``covered_weight ** n`` of its weight: diminishing returns, so the fifth row of
    one table no longer outbids the first chunk on a facet nothing covers yet, and a definition is
    not shut out by the boilerplate that merely names its term. A chunk's facet weights count as much
    as its ``Weight`` says: its document's share of the query and engine weight (each 1 when off),
    its own share of the query, to the power ``chunk_power`` (``chunk_shares``; 1 when 0), and
    ``1 + named_row`` for a row the query names (``core.named``; 1 when 0), ``rank_weight`` of
    its engine rank (1 when ``engine_rank`` is 0), and ``Proximity.weight`` of the question's word
    pairs it holds close (``proximity``: the question's pairs and the strength; 1 when None). Each facet
    counts as much as the engine's best match for it (``engine_ratios``; 1 when off). A candidate whose
    gain is below ``floor`` (``spent_gain`` of the best gain on the empty bubble; none when that is 0
    or no gain is positive) is spent (``entry``). ``gain_floor`` is what the gain gate asks of what
    orders a candidate, both without their proximity weight (``gate_value``: ``min_gain`` of that best
    gain; None, the gate off, when that is 0 or no gain is positive).
    """

    def __init__(
        self,
        scored: Sequence[ScoredCandidate],
        facet_count: int,
        covered_weight: float,
        *,
        multiplicative: bool,
        by_share: bool = False,
        by_engine: bool = False,
        by_facet_engine: bool = False,
        chunk_power: float = 0.0,
        named_row: float = 0.0,
        engine_rank: float = 0.0,
        proximity: tuple[Proximity, float] | None = None,
        semantic: float = 0.0,
        spent_gain: float = 0.0,
        min_gain: float = 0.0,
    ) -> None:
        self.covered = [0.0] * facet_count
        best = [0.0] * facet_count
        # Per facet, the engine's best score among the candidates matching it (``engine_ratios``).
        facet_best_scores = [0.0] * facet_count
        # Per candidate (by object, for this selection's lifetime): the facets it matches, with their
        # weights, so a gain reads no zero weight.
        self._hits: dict[int, tuple[tuple[int, float], ...]] = {}
        # Per document, the best weight its candidates have for each facet (``document_shares``) and
        # the best engine score among them (``engine_weights``).
        per_document: dict[str, list[float]] = {}
        best_scores: dict[str, float] = {}
        owners: dict[int, str] = {}  # candidate (by object) -> its document
        named: dict[int, float] = {}  # candidate (by object) -> its weight as a named row, when not 1
        by_document = by_share or by_engine
        for candidate in scored:
            weights = candidate.facet_weights
            hits = (
                tuple((index, weight) for index, weight in enumerate(weights) if weight)
                if any(weights)
                else ()
            )
            for index, weight in hits:
                best[index] = max(best[index], weight)
                facet_best_scores[index] = max(facet_best_scores[index], candidate.candidate.es_score)
            if by_document:
                document = candidate.candidate.chunk.doc_id
                owners[id(candidate)] = document
                best_scores[document] = max(best_scores.get(document, 0.0), candidate.candidate.es_score)
                if hits:
                    mine = per_document.setdefault(document, [0.0] * facet_count)
                    for index, weight in hits:
                        mine[index] = max(mine[index], weight)
            self._hits[id(candidate)] = hits
            if named_row and candidate.named is not None:
                named[id(candidate)] = 1.0 + named_row
        self.best = best
        top = max((candidate.candidate.es_score for candidate in scored), default=0.0)
        # Per facet, what a weight for it counts: its engine weight (1 when off) times
        # ``covered_weight ** covered`` (1 while uncovered).
        self.engine = engine_ratios(facet_best_scores, top) if by_facet_engine else [1.0] * facet_count
        self.factors = list(self.engine)
        self.covered_weight = covered_weight
        self.multiplicative = multiplicative
        shares = document_shares(best, per_document) if by_share else {}
        engine = engine_weights(best_scores, top) if by_engine else {}
        chunks = chunk_shares(self._hits, best) if chunk_power else {}
        # Per candidate that matches a facet (by object): its weight (none when every switch is off).
        self._weights: dict[int, Weight] = {}
        pairs, strength = proximity or (None, 0.0)
        meaning = semantic_weights([c.candidate.similarity for c in scored], semantic)
        if by_document or chunk_power or named or engine_rank or pairs or meaning:
            for position, candidate in enumerate(scored):
                key = id(candidate)
                if self._hits[key]:
                    document = owners.get(key, "")
                    share, engine_weight = shares.get(document, 1.0), engine.get(document, 1.0)
                    self._weights[key] = Weight.of(
                        share,
                        engine_weight,
                        chunks.get(key, 1.0),
                        chunk_power,
                        named=named.get(key, 1.0),
                        rank=rank_weight(candidate.candidate.es_rank, engine_rank),
                        proximity=pairs.weight(len(candidate.near), strength) if pairs else 1.0,
                        semantic=meaning[position] if meaning else 1.0,
                    )
        self.version = 0  # how many admissions so far: a gain computed at this version is still exact
        self._snapshot: tuple[float, ...] = tuple(self.covered)
        # Each candidate's gain on the empty bubble (by object), the gain below which a candidate is
        # spent (``spent_gain`` of the best of those), the gain gate's floor (``min_gain`` of it) and
        # the engine score fill values are relative to.
        self.alone: dict[int, float] = (
            {id(candidate): self.gain(candidate) for candidate in scored} if spent_gain or min_gain else {}
        )
        best_alone = max(self.alone.values(), default=0.0)
        self.floor = spent_gain * best_alone if best_alone > 0 and spent_gain else -math.inf
        # The gain gate reads gains without their proximity weight (``gate_value``): proximity orders
        # candidates, it does not decide whether one is worth its tokens.
        best_plain = max(
            (gate_value(gain, self.weight_of(key)) for key, gain in self.alone.items()), default=0.0
        )
        self.gain_floor = min_gain * best_plain if best_plain > 0 and min_gain else None
        self._top = top

    @classmethod
    def of(
        cls,
        scored: Sequence[ScoredCandidate],
        facet_count: int,
        params: BubbleParams,
        *,
        by_gain: bool,
        proximity: Proximity | None = None,
    ) -> _Coverage:
        """The coverage the profile asks for; document weights only where the gain order reads them."""
        return cls(
            scored,
            facet_count,
            params.covered_weight,
            multiplicative=params.relevance == "bm25",
            by_share=by_gain and params.document_share,
            by_engine=by_gain and params.document_engine,
            by_facet_engine=by_gain and params.facet_engine,
            chunk_power=params.chunk_share if by_gain else 0.0,
            named_row=params.named_row if by_gain else 0.0,
            engine_rank=params.engine_rank if by_gain else 0.0,
            proximity=(proximity, params.proximity) if by_gain and proximity is not None else None,
            semantic=params.semantic if by_gain else 0.0,
            spent_gain=params.spent_gain if by_gain else 0.0,
            min_gain=params.min_gain if by_gain else 0.0,
        )

    def gain(self, scored: ScoredCandidate) -> float:
        """(the facet weights, each times its engine weight, a facet covered n at
        ``covered_weight ** n``, times the document's weight, the chunk's own share to the power
        ``chunk_power`` and its weight as a named row, with the prior) · lp."""
        hits = self._hits[id(scored)]
        total = 0.0
        if hits:
            factors = self.factors
            for index, weight in hits:
                total += weight * factors[index]
            if self._weights:
                total *= self._weights[id(scored)].factor
            if not total and self.multiplicative:
                # Every facet it matches is used up (covered_weight = 0), or its document or its facets
                # weigh nothing (the engine scored them 0): its prior does not stand in for them as it
                # does for a chunk that matches nothing, or its gain would rise as B grows.
                return 0.0
        return combine(total, scored.boost, multiplicative=self.multiplicative) * scored.len_penalty

    def fill_value(self, scored: ScoredCandidate) -> float:
        """What orders a spent candidate (``entry``): its gain on the empty bubble times its engine
        score over the best candidate's (a ratio of 1 when no score is positive)."""
        top = self._top
        ratio = max(scored.candidate.es_score, 0.0) / top if top > 0 else 1.0
        return self.alone[id(scored)] * ratio

    def entry(
        self, scored: ScoredCandidate, index: int, gain: float, computed_at: int
    ) -> tuple[int, float, str, int, int]:
        """The candidate's heap entry in the gain order: (spent, minus what orders it, chunk_id,
        position, the version its gain was computed at). Spent — its gain below ``floor`` — it is
        ordered by its fill value, which never changes; gains only fall, so it stays spent."""
        chunk_id = scored.candidate.chunk.chunk_id
        if gain < self.floor:
            return 1, -self.fill_value(scored), chunk_id, index, _FIXED
        return 0, -gain, chunk_id, index, computed_at

    def weight(self, scored: ScoredCandidate) -> Weight:
        """The candidate's weight (neutral when every switch is off or it matches no facet)."""
        return self.weight_of(id(scored))

    def weight_of(self, key: int) -> Weight:
        """``weight`` of the candidate whose ``id`` is ``key``."""
        return self._weights.get(key, NEUTRAL)

    def fixed(self, scored: ScoredCandidate) -> bool:
        """The candidate matches no facet, so no admission changes its gain."""
        return not self._hits[id(scored)]

    def snapshot(self) -> tuple[float, ...]:
        return self._snapshot

    def admit(self, scored: ScoredCandidate) -> None:
        covered, best, factors, share, engine = (
            self.covered, self.best, self.factors, self.covered_weight, self.engine
        )  # fmt: skip
        for index, weight in self._hits[id(scored)]:
            covered[index] += min(1.0, weight / best[index])
            factors[index] = engine[index] * share ** covered[index]
        self.version += 1
        self._snapshot = tuple(covered)


def _score_order(
    scored: Sequence[ScoredCandidate], coverage: _Coverage
) -> Iterator[tuple[ScoredCandidate, float, float | None]]:
    """The paper's order: as given (descending score), the gain being the score itself."""
    for candidate in scored:
        yield candidate, candidate.score_final, None


def _gain_order(
    scored: Sequence[ScoredCandidate], coverage: _Coverage
) -> Iterator[tuple[ScoredCandidate, float, float | None]]:
    """Best marginal gain first, re-evaluated lazily; ties by chunk_id. The caller admits between yields.

    A gain computed since the last admission is still exact, so it is not computed again; nor is the
    gain of a candidate that matches no facet. A spent candidate (``_Coverage.entry``) comes after
    every other, by its fill value (yielded third; None for the others), which no admission changes.
    """
    gain, fixed, entry = coverage.gain, coverage.fixed, coverage.entry
    version = coverage.version
    # before any admission each gain is the one on the empty bubble, which the coverage knows
    alone = coverage.alone if version == 0 and coverage.alone else None
    heap = [
        entry(c, i, alone[id(c)] if alone is not None else gain(c), _FIXED if fixed(c) else version)
        for i, c in enumerate(scored)
    ]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        spent, negative, _, index, computed_at = pop(heap)
        candidate = scored[index]
        if spent:
            yield candidate, gain(candidate), -negative
            continue
        version = coverage.version
        if computed_at in (version, _FIXED):
            yield candidate, -negative, None
            continue
        now = gain(candidate)
        fresh = entry(candidate, index, now, version)
        if heap and fresh > heap[0]:
            push(heap, fresh)  # another candidate is ahead of it now
            continue
        yield candidate, now, -fresh[1] if fresh[0] else None


# An order yields each candidate with its gain and, when it was spent, its fill value.
Order = Callable[
    [Sequence[ScoredCandidate], _Coverage], Iterator[tuple[ScoredCandidate, float, float | None]]
]


def relevance_value(scored: ScoredCandidate, params: BubbleParams) -> float:
    """What the relevance gate measures: the score, or under bm25 without ``fill_with_priors`` the
    relevance alone — a chunk that matches no query facet cannot enter on its prior."""
    return relevance_measure(params)(scored)


def relevance_measure(params: BubbleParams) -> Callable[[ScoredCandidate], float]:
    """``relevance_value`` under ``params``, chosen once: it reads one field of the scored candidate."""
    if params.relevance == "bm25" and not params.fill_with_priors:
        return attrgetter("relevance")
    return attrgetter("score_final")


def gate_switches(switches: VariantSwitches, *, gain: bool = False) -> dict[GateName, bool]:
    """Which gates of the table a variant runs (the global budget always); the gain gate only where
    the coverage order sets it a floor (``gain``)."""
    return {
        "relevance": switches.relevance_gate,
        "gain": gain,
        "redundancy": switches.redundancy,
        "section_budget": switches.section_budgets,
        "global_budget": True,
        "max_chunks": switches.max_chunks,
    }


class Bubbling:
    """The growing bubble every decision is made against: its budget, its words, its params."""

    __slots__ = (
        "_delta",
        "_gain_floor",
        "_max_chunks",
        "_min_score",
        "_relevance",
        "budget",
        "params",
        "redundancy",
        "verdicts",
    )

    def __init__(
        self,
        params: BubbleParams,
        budget: Budget,
        redundancy: Redundancy,
        verdicts: Verdicts,
        gain_floor: float = 0.0,
    ) -> None:
        self.params = params
        self.budget = budget
        self.redundancy = redundancy
        self.verdicts = verdicts
        # the limits every decision compares with, read once
        self._relevance = relevance_measure(params)
        self._min_score = params.min_score
        self._delta = params.delta
        self._gain_floor = gain_floor
        self._max_chunks = float(params.max_chunks)

    def decide(
        self,
        scored: ScoredCandidate,
        rank: int,
        gain: float,
        covered: tuple[float, ...] = (),
        weight: Weight = NEUTRAL,
        *,
        pool: float | None = None,
        first_pass: GateResults | None = None,
        fill: float | None = None,
    ) -> Decision:
        """Every gate on ``scored`` now; admitted into the bubble when all pass (first failure wins).

        The section budget gate's limit is what the bucket has left, or in the global_pool second
        pass the ``pool`` left, where the decision keeps its ``first_pass`` gates and adds these.
        ``fill`` is the fill value of a spent candidate (coverage order): what the gain gate measures
        in place of its gain.
        """
        budget = self.budget
        words = scored.words
        value, nearest = self.redundancy.measure(words)
        tokens = scored.candidate.chunk.token_count
        size = float(tokens)
        budget_left = budget.remaining()
        bucket_left = budget.bucket_remaining(scored.bucket)
        gates = run_gates(
            self.verdicts,
            relevance=(self._relevance(scored), self._min_score),
            gain=(gate_value(gain if fill is None else fill, weight), self._gain_floor),
            redundancy=(value, self._delta),
            section_budget=(size, bucket_left if pool is None else pool),
            global_budget=(size, budget_left),
            max_chunks=(float(budget.count), self._max_chunks),
        )
        reason = reason_of(gates)
        order = None
        if reason == "passed_all_gates":
            order = budget.spend(scored.bucket, tokens)
            self.redundancy.admit(words, scored.chunk_id)
        # a second-pass decision keeps its first-pass gates and adds these (``pool`` is None otherwise)
        recorded, second = (gates, None) if first_pass is None else (first_pass, gates)
        return Decision(
            scored, rank, recorded, value, budget_left, bucket_left, order, reason, second, pool, gain,
            covered, weight.share, weight.engine, weight.chunk_share, nearest, fill, weight.named,
            weight.rank, weight.proximity, weight.semantic,
        )  # fmt: skip


def select(
    scored: Sequence[ScoredCandidate],
    params: BubbleParams,
    switches: VariantSwitches,
    shares: Mapping[str, float],
    facets: Sequence[Facet] = (),
    *,
    proximity: Proximity | None = None,
) -> Selection:
    """Greedy selection over ``scored`` (given in score order, or engine order for ``engine_topk``);
    ``proximity`` holds the question's word pairs (``Scoring.proximity``; None: off)."""
    by_gain = params.selection == "coverage" and not switches.engine_order
    order: Order = _gain_order if by_gain else _score_order
    present = {s.bucket for s in scored}
    # The demand pass is a whole extra greedy run: only worth it when some bucket's share depends on it.
    mode = params.unlisted_mode
    needs_demand = mode == "demand" and not present.issubset(shares)
    mass = relevance_demand(scored, params, order, len(facets), proximity) if needs_demand else None
    resolved = resolve_shares(present, shares, mass, params.share_floor, mode=mode)
    caps = bucket_caps(resolved, params.token_budget)
    coverage = _Coverage.of(scored, len(facets), params, by_gain=by_gain, proximity=proximity)
    floor = coverage.gain_floor
    bubble = Bubbling(
        params=params,
        budget=Budget(total=params.token_budget, caps=caps),
        redundancy=Redundancy(params.overlap_mode, facet_terms(facets)),
        verdicts=Verdicts(gate_switches(switches, gain=floor is not None)),
        gain_floor=0.0 if floor is None else floor,
    )
    decisions = _decide(order(scored, coverage), bubble, coverage)
    pool: int | None = None
    if params.slack_policy == "global_pool" and switches.section_budgets:
        pool = bubble.budget.unspent()
        decisions = _second_pass(decisions, bubble, coverage, order=order, pool=pool)
    return Selection(decisions=decisions, bucket_caps=caps, bucket_shares=resolved, pool=pool)


def _decide(
    ordered: Iterator[tuple[ScoredCandidate, float, float | None]], bubble: Bubbling, coverage: _Coverage
) -> list[Decision]:
    """Decide each candidate as ``ordered`` yields it, admitting those that pass every gate."""
    decisions: list[Decision] = []
    decide, snapshot, admit, weight = bubble.decide, coverage.snapshot, coverage.admit, coverage.weight
    for rank, (candidate, gain, fill) in enumerate(ordered, start=1):
        decision = decide(candidate, rank, gain, snapshot(), weight(candidate), fill=fill)
        if decision.selection_order is not None:
            admit(candidate)
        decisions.append(decision)
    return decisions


def _second_pass(
    decisions: list[Decision], bubble: Bubbling, coverage: _Coverage, *, order: Order, pool: int
) -> list[Decision]:
    """global_pool slack: re-consider, in the selection order, the candidates only a bucket budget stopped.

    Each keeps its first-pass rank; the second pass's gates, the pool left and
    the gain at that time are added to its decision.
    """
    first_pass = {id(d.scored): d for d in decisions if d.final_reason == "section_budget_exceeded"}
    if not first_pass:
        return decisions
    pool_left = float(pool)
    redecided: dict[int, Decision] = {}
    for candidate, gain, fill in order([d.scored for d in first_pass.values()], coverage):
        first = first_pass[id(candidate)]
        decision = bubble.decide(
            candidate,
            first.rank,
            gain,
            coverage.snapshot(),
            coverage.weight(candidate),
            pool=pool_left,
            first_pass=first.gates,
            fill=fill,
        )
        if decision.selection_order is not None:
            coverage.admit(candidate)
            pool_left -= candidate.tokens
        redecided[id(candidate)] = decision
    return [redecided.get(id(d.scored), d) for d in decisions]
