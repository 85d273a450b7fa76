"""Scoring, the paper's eq. 5–8: ``score = (relevance + prior) · lp``.

``relevance`` is the paper's tf (``relevance = "tf"``) or the idf-weighted,
saturated weight of the query facets a chunk matches in its text and context
(``relevance = "bm25"``, see ``esbubble.core.relevance``). Every quantity depends
only on the candidate itself, the query, the profile, the term statistics and
θ (a statistic of the whole candidate set), so scores do not depend on the
order candidates arrive in.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from esbubble.config import BubbleConfig, BubbleParams, PriorsConfig
from esbubble.core.analysis import analyzed_counts, distinct_words
from esbubble.core.named import NamedRows
from esbubble.core.proximity import Proximity, query_pairs
from esbubble.core.relevance import (
    Facet,
    IdfTable,
    TermStats,
    analysed_query_terms,
    facet_terms,
    idf_table,
    query_facets,
    stats_from_candidates,
    table_weights,
    tf_weights,
)
from esbubble.models import Candidate, Chunk, ChunkTerms, TermMatchDict
from esbubble.text import TERMS_VERSION, distinct_terms, query_terms, term_counts, tokenize


class ScoredCandidate(NamedTuple):
    """A candidate with every signal the gates and the trace need.

    A named tuple, not a pydantic model: it is an immutable intermediate built
    once per candidate per run from already-validated records, and is never
    serialised, so validation would only cost time on the hot path.
    """

    candidate: Candidate
    bucket: str
    tf: float
    relevance: float
    boost: float
    len_penalty: float
    score_raw: float
    score_final: float
    words: frozenset[str]
    facet_weights: tuple[float, ...]
    matches: tuple[TermMatchDict, ...] = ()
    named: str | None = None  # a table row: its cell value the question names (``core.named``)
    near: tuple[str, ...] = ()  # the question's word pairs it holds close together (``core.proximity``)

    @property
    def chunk_id(self) -> str:
        return self.candidate.chunk.chunk_id

    @property
    def tokens(self) -> int:
        return self.candidate.chunk.token_count


def term_frequency(terms: Sequence[str], counts: Mapping[str, int]) -> int:
    """eq. 5: how often the distinct query ``terms`` occur in a chunk whose tokens ``counts`` counts."""
    return sum(map(counts.get, terms, itertools.repeat(0, len(terms))))


def contains_phrase(tokens: Sequence[str], phrase: Sequence[str]) -> bool:
    """True when ``phrase`` occurs as a contiguous run of ``tokens`` (multi-word keywords)."""
    return bool(phrase) and f" {' '.join(phrase)} " in f" {' '.join(tokens)} "


@dataclass(frozen=True, slots=True)
class Keyword:
    """One keyword of the priors as its token sequence, with its γ."""

    tokens: tuple[str, ...]
    gamma: float

    def present(self, counts: Mapping[str, int], text: str) -> bool:
        """The token sequence occurs in ``text`` (its tokens are looked up first, so text is rarely read)."""
        tokens = self.tokens
        if len(tokens) == 1:
            return tokens[0] in counts
        return all(token in counts for token in tokens) and contains_phrase(tokenize(text), tokens)


def prepare_keywords(keywords: Mapping[str, float]) -> list[Keyword]:
    """The profile's keywords as token sequences, once per run (keywords with no tokens never match)."""
    prepared = [Keyword(tuple(tokenize(keyword)), gamma) for keyword, gamma in keywords.items()]
    return [keyword for keyword in prepared if keyword.tokens]


def structural_prior(
    section: str,
    bucket: str,
    counts: Mapping[str, int],
    text: str,
    priors: PriorsConfig,
    *,
    keywords: Sequence[Keyword] | None = None,
) -> float:
    """eq. 6: π(section) — else π(bucket), else 0 — plus γ_k for every keyword present in ``text``."""
    prior = priors.sections.get(section, priors.sections.get(bucket, 0.0))
    for keyword in prepare_keywords(priors.keywords) if keywords is None else keywords:
        if keyword.present(counts, text):
            prior += keyword.gamma
    return prior


def prior_weight(prior: float) -> float:
    """The multiplicative weight standing in for a signed prior: ``(1 + 2p) / (1 + p)`` for a boost,
    its reciprocal for a penalty, so ``w(-p) = 1 / w(p)`` and every weight lies in (½, 2).

    A prior reorders chunks of comparable relevance; it never more than doubles or halves what a
    chunk matched, so a boosted section cannot crowd out a chunk that matches the question twice
    as well (with ``1 + p``, a +6 section weighed ×7 and filled bubbles with its weak matches).
    The retrieval request uses the same weight (Elasticsearch refuses negative scores), so a prior
    acts on relevance the same way in the engine's order and in ``bm25`` scoring.
    """
    magnitude = abs(prior)
    weight = (1.0 + 2.0 * magnitude) / (1.0 + magnitude)
    return weight if prior >= 0 else 1.0 / weight


def combine(relevance: float, prior: float, *, multiplicative: bool) -> float:
    """``score_raw``: the paper's ``relevance + prior`` (tf), or ``relevance · w(prior)`` (bm25).

    Under bm25 a prior scales what a chunk matched instead of standing in for
    it: idf-weighted relevance is on another scale than the profile's priors,
    and a boosted section should rank its relevant chunks higher, not fill the
    bubble with irrelevant ones. A chunk that matches nothing keeps a positive
    prior, which only ``fill_with_priors`` lets it use.
    """
    if not multiplicative:
        return relevance + prior
    if relevance > 0:
        return relevance * prior_weight(prior)
    return max(prior, 0.0)


def length_penalty(token_count: int, theta: float) -> float:
    """eq. 7: ``1 / (1 + t/θ)`` — long chunks must earn their tokens."""
    return 1.0 / (1.0 + token_count / theta)


def resolve_theta(candidates: Sequence[Candidate], length_norm: Literal["median"] | float) -> float:
    """θ: a fixed number, or the median token count of the candidate set (1 when that is 0)."""
    if length_norm != "median":
        return float(length_norm)
    if not candidates:
        return 1.0
    median = float(statistics.median(c.chunk.token_count for c in candidates))
    return median if median > 0 else 1.0


def stored_terms(chunk: Chunk) -> ChunkTerms | None:
    """The terms ingest stored with ``chunk``, when this version's (None: read them from its text)."""
    terms = chunk.terms
    return terms if terms is not None and terms.version == TERMS_VERSION else None


def chunk_terms(chunk: Chunk, *, standard: bool = False) -> tuple[Mapping[str, int], Sequence[str]]:
    """A chunk's token counts and distinct compare words: the paper's tokens, or with ``standard`` the
    standard tokenizer's words (``bm25``); stored at ingest, else computed from its text."""
    terms = stored_terms(chunk)
    if terms is not None:
        return terms.counts, terms.words if standard else terms.compare
    compare = distinct_words(chunk.compare_text) if standard else distinct_terms(chunk.compare_text)
    return term_counts(chunk.text), compare


def chunk_stems(chunk: Chunk) -> tuple[Mapping[str, int], Mapping[str, int]]:
    """A chunk's analysed term counts in text and context: stored at ingest, else analysed now."""
    terms = stored_terms(chunk)
    if terms is not None:
        return terms.stems, terms.context_stems
    return analyzed_counts(chunk.text), analyzed_counts(chunk.context)


def words_of(compare: Iterable[str], stops: frozenset[str]) -> frozenset[str]:
    """``words(x)``: distinct compare tokens less the stop words (the redundancy gate's)."""
    return frozenset(itertools.filterfalse(stops.__contains__, compare))


def score_order_key(scored: ScoredCandidate) -> tuple[float, str]:
    """Descending score, ties by chunk_id: the one order every stage uses."""
    return (-scored.score_final, scored.candidate.chunk.chunk_id)


def engine_order_key(scored: ScoredCandidate) -> tuple[int, str]:
    """The engine's own order (``es_rank``), ties by chunk_id: the ``engine_topk`` baseline's order."""
    return (scored.candidate.es_rank, scored.chunk_id)


@dataclass(frozen=True, slots=True)
class Scoring:
    """The scored candidates in score order, the query's facets, the term statistics used (bm25), θ and
    the question's word pairs (None: proximity off)."""

    scored: list[ScoredCandidate]
    facets: tuple[Facet, ...]
    stats: TermStats | None
    theta: float
    proximity: Proximity | None = None


def query_proximity(query: str, params: BubbleParams) -> Proximity | None:
    """The question's successive analysed word pairs under ``params`` (``core.proximity``), or None when
    proximity is off: ``proximity = 0``, or the paper's score order."""
    if not params.proximity or params.selection != "coverage":
        return None
    terms = analysed_query_terms(query, params.stop_words)
    return Proximity(query_pairs(terms), params.proximity_window)


def chunk_words(chunk: Chunk, stops: frozenset[str], *, standard: bool) -> frozenset[str]:
    """``words(x)``: the distinct compare words of a chunk less the stop words (the redundancy gate's;
    ``standard`` under bm25, see ``chunk_terms``)."""
    return words_of(chunk_terms(chunk, standard=standard)[1], stops)


def query_facets_of(query: str, config: BubbleConfig) -> tuple[Facet, ...]:
    """The query's facets under the profile: its relevance mode and ``[repair.facets]`` groups."""
    groups = {name: tuple(members) for name, members in config.repair.facets.items()}
    return query_facets(query, config.bubble.stop_words, groups, analysed=config.bubble.relevance == "bm25")


@dataclass(frozen=True, slots=True)
class Scorer:
    """Everything about the query and profile that scoring one candidate needs, prepared once per run."""

    config: BubbleConfig
    facets: tuple[Facet, ...]
    paper_terms: list[str]
    keywords: list[Keyword]
    stops: frozenset[str]
    standard_words: bool  # bm25: the redundancy gate's words are the standard tokenizer's
    stats: TermStats | None
    theta: float
    use_priors: bool
    idf: IdfTable  # bm25: the facets' terms with their idf, once per run
    named_rows: NamedRows | None  # the coverage order with ``named_row``: which rows the query names
    proximity: Proximity | None  # bm25 coverage order with ``proximity``: the question's word pairs

    @classmethod
    def prepare(
        cls,
        query: str,
        config: BubbleConfig,
        *,
        use_priors: bool,
        stats: TermStats | None,
        theta: float,
        facets: tuple[Facet, ...],
        pairs: bool = True,
    ) -> Scorer:
        """The scorer for ``query``, whose ``query_facets_of`` are ``facets``; ``pairs=False`` reads no word
        pairs (the engine's order and repair's swaps do not weigh them)."""
        params = config.bubble
        return cls(
            config=config,
            facets=facets,
            paper_terms=query_terms(query, params.stop_words),
            keywords=prepare_keywords(config.priors.keywords),
            stops=frozenset(params.stop_words),
            standard_words=params.standard_words,
            stats=stats,
            theta=theta,
            use_priors=use_priors,
            idf=idf_table(facets, stats) if stats is not None else (),
            named_rows=NamedRows(query) if params.named_row and params.selection == "coverage" else None,
            proximity=query_proximity(query, params) if pairs and stats is not None else None,
        )

    def score(self, candidate: Candidate) -> ScoredCandidate:
        """eq. 5–8 for one candidate."""
        return self.score_with(candidate, chunk_stems(candidate.chunk) if self.stats is not None else None)

    def score_with(
        self, candidate: Candidate, stems: tuple[Mapping[str, int], Mapping[str, int]] | None
    ) -> ScoredCandidate:
        """``score`` with the chunk's ``chunk_stems`` already read (bm25; None under tf)."""
        config = self.config
        params = config.bubble
        chunk = candidate.chunk
        counts, compare = chunk_terms(chunk, standard=self.standard_words)
        bucket = config.buckets.bucket_of(chunk.section, chunk.bucket)
        tf = float(term_frequency(self.paper_terms, counts))
        matches: tuple[TermMatchDict, ...] = ()
        if stems is not None:
            weights, matches = table_weights(
                self.idf, stems[0], stems[1], context_weight=params.context_weight, k1=params.k1
            )
            relevance = sum(weights, 0.0)
        else:
            weights = tf_weights(self.facets, counts)
            relevance = tf
        boost = (
            structural_prior(chunk.section, bucket, counts, chunk.text, config.priors, keywords=self.keywords)
            if self.use_priors
            else 0.0
        )
        lp = length_penalty(chunk.token_count, self.theta)
        raw = combine(relevance, boost, multiplicative=stems is not None)
        words = words_of(compare, self.stops)
        rows = self.named_rows
        named = None
        if rows is not None and chunk.row_number is not None:
            terms = stored_terms(chunk)
            named = rows.value(chunk.text, chunk.context, None if terms is None else terms.cells)
        proximity = self.proximity
        near = proximity.near(chunk.text, stems[0]) if proximity is not None and stems is not None else ()
        return ScoredCandidate(
            candidate, bucket, tf, relevance, boost, lp, raw, raw * lp, words, weights, matches, named, near
        )


def score_candidates(
    query: str,
    candidates: Sequence[Candidate],
    config: BubbleConfig,
    *,
    use_priors: bool = True,
    stats: TermStats | None = None,
    engine_order: bool = False,
) -> Scoring:
    """Score every candidate; ``scored`` is in score order (descending score, ties by chunk_id).

    ``engine_order`` (the ``engine_topk`` variant) reads no word pairs: that order never weighs them.

    With ``use_priors=False`` (variants without structure) the boost is 0, so
    ``score_raw = relevance + boost`` still holds in the trace. Under ``bm25``
    without ``stats`` (the pure core with no engine at hand) document
    frequencies come from the candidate set itself. A chunk's stored terms
    make every count a dictionary look-up, with no tokenising; the result
    equals tokenising its text (``tests/test_score_terms.py``).
    """
    facets = query_facets_of(query, config)
    stems = None
    if config.bubble.relevance == "bm25":
        stems = [chunk_stems(c.chunk) for c in candidates]
        if stats is None:
            stats = stats_from_candidates(stems, facet_terms(facets))
    else:
        stats = None
    theta = resolve_theta(candidates, config.bubble.length_norm)
    scorer = Scorer.prepare(
        query, config, use_priors=use_priors, stats=stats, theta=theta, facets=facets, pairs=not engine_order
    )
    scored = list(map(scorer.score_with, candidates, stems or itertools.repeat(None, len(candidates))))
    scored.sort(key=score_order_key)
    return Scoring(scored=scored, facets=scorer.facets, stats=stats, theta=theta, proximity=scorer.proximity)


def scorer_for(
    query: str,
    config: BubbleConfig,
    *,
    use_priors: bool,
    theta: float,
    stats: TermStats | None,
    first: Candidate | None = None,
) -> Scorer:
    """The scorer of a run whose θ and statistics are given (repair scores newcomers against the bubble
    they join); under bm25 without statistics, ``first``'s own terms stand in for them. It reads no word
    pairs: a swap is decided by its utility, not by the coverage order."""
    facets = query_facets_of(query, config)
    if config.bubble.relevance == "tf":
        stats = None
    elif stats is None:
        own = [chunk_stems(first.chunk)] if first is not None else []
        stats = stats_from_candidates(own, facet_terms(facets))
    return Scorer.prepare(
        query, config, use_priors=use_priors, stats=stats, theta=theta, facets=facets, pairs=False
    )
