"""Pure-Python costs, no I/O: post-processing K candidates and offline token counting.

Candidate sets are synthetic but made of real chunks: the sample corpus read
by the ingest readers (no engine), in a fixed shuffled order, repeated with
distinct chunk ids when K is larger than the corpus. Engine scores descend
with the rank, as a real result list would.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench_stats import percentile

from esbubble.config import BubbleConfig
from esbubble.core.bubble import build_bubble
from esbubble.core.score import score_candidates
from esbubble.core.select import select
from esbubble.core.tokens import count_many, get_encoding
from esbubble.core.trace import RunContext, json_time, trace_records
from esbubble.core.variants import VARIANTS
from esbubble.ingest import IngestOptions, read_document
from esbubble.models import Candidate, Chunk

SAMPLE_FILES = ("quote_job.xlsx", "specification.pdf", "site_memo.md")


def sample_chunks(sample_dir: Path, config: BubbleConfig) -> list[Chunk]:
    """Every chunk of the sample corpus, read without an engine."""
    options = IngestOptions.of(config)
    chunks: list[Chunk] = []
    for name in SAMPLE_FILES:
        chunks += read_document(sample_dir / name, options, doc_id=name)
    return chunks


def synthetic_candidates(chunks: Sequence[Chunk], k: int, *, seed: int = 7) -> list[Candidate]:
    """K candidates from the sample chunks (fixed shuffle); repeats get distinct ids."""
    order = list(chunks)
    random.Random(seed).shuffle(order)
    candidates = []
    for index in range(k):
        chunk = order[index % len(order)]
        if index >= len(order):
            chunk = chunk.model_copy(update={"chunk_id": f"{chunk.chunk_id}~{index // len(order)}"})
        candidates.append(Candidate(chunk=chunk, es_score=1000.0 / (1 + index), es_rank=index + 1))
    return candidates


def postprocess_samples(
    queries: Sequence[str], candidates: Sequence[Candidate], config: BubbleConfig, *, rounds: int
) -> list[float]:
    """Milliseconds of ``build_bubble`` (score + gates + selection + trace records), per query and round."""
    now = datetime.now(UTC)
    build_bubble(queries[0], candidates, config, run_id="warm-up", now=now)
    samples: list[float] = []
    for round_number in range(rounds):
        for number, query in enumerate(queries):
            started = time.perf_counter()
            build_bubble(query, candidates, config, run_id=f"bench-{round_number}-{number}", now=now)
            samples.append((time.perf_counter() - started) * 1000.0)
    return samples


def postprocess_stats(
    queries: Sequence[str], chunks: Sequence[Chunk], config: BubbleConfig, ks: Sequence[int], *, rounds: int
) -> dict[str, float]:
    """``postprocess_ms_p50_k<K>`` and ``…_p95_k<K>`` for every K."""
    results: dict[str, float] = {}
    for k in ks:
        sized = config.with_overrides(candidate_k=k)
        samples = postprocess_samples(queries, synthetic_candidates(chunks, k), sized, rounds=rounds)
        results[f"postprocess_ms_p50_k{k}"] = round(percentile(samples, 0.5), 3)
        results[f"postprocess_ms_p95_k{k}"] = round(percentile(samples, 0.95), 3)
    return results


def cold_samples(
    queries: Sequence[str], candidates: Sequence[Candidate], config: BubbleConfig, *, rounds: int
) -> list[float]:
    """Milliseconds of ``build_bubble`` on chunk objects it has not seen, as after a search.

    The core keeps nothing between calls, so this differs from the keys above only by the fresh
    objects' memory: every query gets fresh copies (made outside the timing).
    """
    now = datetime.now(UTC)
    samples: list[float] = []
    for round_number in range(rounds):
        for number, query in enumerate(queries):
            fresh = [c.model_copy(update={"chunk": c.chunk.model_copy()}) for c in candidates]
            started = time.perf_counter()
            build_bubble(query, fresh, config, run_id=f"cold-{round_number}-{number}", now=now)
            samples.append((time.perf_counter() - started) * 1000.0)
    return samples


def cold_stats(
    queries: Sequence[str], chunks: Sequence[Chunk], config: BubbleConfig, k: int, *, rounds: int
) -> dict[str, float]:
    """``postprocess_cold_ms_p50_k<K>``: ``build_bubble`` on chunks not seen before."""
    sized = config.with_overrides(candidate_k=k)
    samples = cold_samples(queries, synthetic_candidates(chunks, k), sized, rounds=rounds)
    return {f"postprocess_cold_ms_p50_k{k}": round(percentile(samples, 0.5), 3)}


def stage_stats(
    queries: Sequence[str], chunks: Sequence[Chunk], config: BubbleConfig, k: int, *, rounds: int
) -> dict[str, float]:
    """Where ``build_bubble``'s time goes for K candidates: scoring, selection (both passes), trace."""
    candidates = synthetic_candidates(chunks, k)
    switches = VARIANTS[config.bubble.variant]
    run = RunContext(
        run_id="stages", timestamp=json_time(datetime.now(UTC)), query_digest="-",
        variant=config.bubble.variant, delta=config.bubble.delta,
    )  # fmt: skip
    samples: dict[str, list[float]] = {"score": [], "select": [], "trace": []}
    for _ in range(rounds):
        for query in queries:
            started = time.perf_counter()
            scoring = score_candidates(query, candidates, config, use_priors=switches.priors)
            scored_at = time.perf_counter()
            selection = select(scoring.scored, config.bubble, switches, config.buckets.shares, scoring.facets)
            selected_at = time.perf_counter()
            trace_records(selection.decisions, run, scoring.facets)
            done = time.perf_counter()
            samples["score"].append((scored_at - started) * 1000.0)
            samples["select"].append((selected_at - scored_at) * 1000.0)
            samples["trace"].append((done - selected_at) * 1000.0)
    return {f"postprocess_{stage}_ms_p50_k{k}": round(percentile(v, 0.5), 3) for stage, v in samples.items()}


def tokenize_rate(chunks: Sequence[Chunk], encoding: str, *, rounds: int) -> float:
    """Tokens per second of the offline tiktoken counter over the corpus texts (vocabulary loaded first)."""
    get_encoding(encoding)
    texts = [chunk.text for chunk in chunks]
    tokens = 0
    started = time.perf_counter()
    for _ in range(rounds):
        tokens += sum(count_many(texts, encoding))
    return tokens / (time.perf_counter() - started)
