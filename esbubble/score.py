"""Scoring, DESIGN.md eq. 5–8: ``score = (tf + prior) · lp``.

Every quantity depends only on the candidate itself, the query, the profile
and θ (a statistic of the whole candidate set), so scores do not depend on
the order candidates arrive in.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from esbubble.config import BubbleConfig, PriorsConfig
from esbubble.models import Candidate
from esbubble.text import query_terms, tokenize


@dataclass(frozen=True, slots=True)
class ScoredCandidate:
    """A candidate with every signal the gates and the trace need.

    A slotted dataclass, not a pydantic model: it is an intermediate built
    once per candidate per run from already-validated records, and is never
    serialised, so validation would only cost time on the hot path.
    """

    candidate: Candidate
    bucket: str
    tf: float
    boost: float
    len_penalty: float
    score_raw: float
    score_final: float
    words: frozenset[str]

    @property
    def chunk_id(self) -> str:
        return self.candidate.chunk.chunk_id

    @property
    def tokens(self) -> int:
        return self.candidate.chunk.token_count


def term_frequency(terms: Iterable[str], tokens: Sequence[str]) -> int:
    """eq. 5: how often the distinct query terms occur in the chunk's tokens."""
    wanted = terms if isinstance(terms, frozenset) else frozenset(terms)
    return sum(1 for token in tokens if token in wanted)


def contains_phrase(tokens: Sequence[str], phrase: Sequence[str]) -> bool:
    """True when ``phrase`` occurs as a contiguous run of ``tokens`` (multi-word keywords)."""
    return bool(phrase) and f" {' '.join(phrase)} " in f" {' '.join(tokens)} "


def keyword_phrases(keywords: Mapping[str, float]) -> list[tuple[str, float]]:
    """Each keyword as its space-joined token sequence with its γ, prepared once per run.

    Tokens never contain spaces, so a padded substring test on space-joined
    tokens is exactly "the token sequence occurs".
    """
    phrases = []
    for keyword, gamma in keywords.items():
        tokens = tokenize(keyword)
        if tokens:
            phrases.append((f" {' '.join(tokens)} ", gamma))
    return phrases


def structural_prior(
    section: str,
    bucket: str,
    tokens: Sequence[str],
    priors: PriorsConfig,
    *,
    phrases: Sequence[tuple[str, float]] | None = None,
) -> float:
    """eq. 6: π(section) — else π(bucket), else 0 — plus γ_k for every keyword present."""
    prior = priors.sections.get(section, priors.sections.get(bucket, 0.0))
    padded = f" {' '.join(tokens)} "
    for phrase, gamma in keyword_phrases(priors.keywords) if phrases is None else phrases:
        if phrase in padded:
            prior += gamma
    return prior


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


def _words(compare_text: str, text: str, text_tokens: Sequence[str], stops: frozenset[str]) -> frozenset[str]:
    """words(x) of the compare text, reusing the display text's tokens when they are the same text."""
    tokens = text_tokens if compare_text == text else tokenize(compare_text)
    return frozenset(tokens).difference(stops)


def score_order_key(scored: ScoredCandidate) -> tuple[float, str]:
    """Descending score, ties by chunk_id: the one order every stage uses."""
    return (-scored.score_final, scored.chunk_id)


def score_candidates(
    query: str, candidates: Sequence[Candidate], config: BubbleConfig, *, use_priors: bool = True
) -> list[ScoredCandidate]:
    """Score every candidate and return them in selection order (descending score, ties by chunk_id).

    With ``use_priors=False`` (variants without structure) the boost is 0, so
    ``score_raw = tf + boost`` still holds in the trace.
    """
    params = config.bubble
    terms = frozenset(query_terms(query, params.stop_words))
    theta = resolve_theta(candidates, params.length_norm)
    phrases = keyword_phrases(config.priors.keywords)
    stops = frozenset(params.stop_words)
    scored: list[ScoredCandidate] = []
    for candidate in candidates:
        chunk = candidate.chunk
        tokens = tokenize(chunk.text)
        bucket = config.buckets.bucket_of(chunk.section, chunk.bucket)
        tf = float(term_frequency(terms, tokens))
        boost = (
            structural_prior(chunk.section, bucket, tokens, config.priors, phrases=phrases)
            if use_priors
            else 0.0
        )
        lp = length_penalty(chunk.token_count, theta)
        raw = tf + boost
        scored.append(
            ScoredCandidate(
                candidate=candidate,
                bucket=bucket,
                tf=tf,
                boost=boost,
                len_penalty=lp,
                score_raw=raw,
                score_final=raw * lp,
                words=_words(chunk.compare_text, chunk.text, tokens, stops),
            )
        )
    scored.sort(key=score_order_key)
    return scored
