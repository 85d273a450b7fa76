"""The floor under the post-processing target (issue 13: ``build_bubble`` at K=200 in 2 ms).

    python benchmarks/bench_floor.py [--k 200] [--rounds 8]

What the parts no implementation can skip cost on this machine, next to ``build_bubble`` itself, on
the benchmark's own candidates (``bench_core``: the sample job's chunks, its profile and 25 queries),
p50 per query in ms, the collector on as in ``run.py``:

- ``records``: the K trace records rebuilt as bare dictionary literals with the keys and values
  ``build_bubble`` recorded (no logic at all: what a record's shape costs), each with its derived id;
- ``score``: one pass reading, for every candidate, its count of each query facet in text and
  context, plus one multiplication: less than any relevance formula can do;
- ``words``: every candidate's stored compare words as a set less the stop words, in one C call:
  what the redundancy gate's ``words(c)`` needs at the least;
- ``select``: one heap push and one pop per candidate and one five-field tuple per decision: less
  than any ordered greedy pass with five gate verdicts can do.

The sum is a lower bound for any pure-Python post-processing that keeps one full trace record per
candidate; the table compares it with the target.
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bench_core

from esbubble.config import load_profile
from esbubble.core.bubble import build_bubble
from esbubble.core.score import query_facets_of
from esbubble.core.trace import trace_id
from esbubble.models import Candidate
from esbubble.queryset import load_queries

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
TARGET_MS = 2.0


def literal_builder(keys: Sequence[str], nested: Sequence[str]) -> Callable[..., dict[str, Any]]:
    """A function returning a dictionary literal with ``keys`` (and ``step_details`` with ``nested``):
    the cheapest way Python builds a record whose values come from many places."""
    inner = ", ".join(f"{key!r}: d[{index}]" for index, key in enumerate(nested))
    outer = ", ".join(
        f"{key!r}: {{{inner}}}" if key == "step_details" else f"{key!r}: v[{index}]"
        for index, key in enumerate(keys)
    )
    namespace: dict[str, Any] = {}
    exec(f"def build(v, d):\n    return {{{outer}}}\n", namespace)
    builder: Callable[..., dict[str, Any]] = namespace["build"]
    return builder


def p50(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


def measure(k: int, rounds: int) -> dict[str, float]:
    config = load_profile(SAMPLE / "profile.toml").with_overrides(candidate_k=k)
    queries = [case.query for case in load_queries(SAMPLE / "queries.jsonl").cases[:25]]
    candidates: list[Candidate] = bench_core.synthetic_candidates(bench_core.sample_chunks(SAMPLE, config), k)
    now = datetime.now(UTC)
    bubbles = {query: build_bubble(query, candidates, config, run_id="floor", now=now) for query in queries}
    traces: dict[str, list[dict[str, Any]]] = {
        query: [dict(record) for record in bubble.trace] for query, bubble in bubbles.items()
    }
    keys, nested = list(traces[queries[0]][0]), list(traces[queries[0]][0]["step_details"])
    build = literal_builder(keys, nested)
    rows = {
        query: [
            ([record[key] for key in keys], [details[key] for key in nested], record["chunk_id"])
            for record in records
            for details in (record["step_details"],)
        ]
        for query, records in traces.items()
    }
    facets = {query: [t for f in query_facets_of(query, config) for t in f.terms] for query in queries}
    stems = [(c.chunk.terms.stems, c.chunk.terms.context_stems) for c in candidates if c.chunk.terms]
    words = [c.chunk.terms.words for c in candidates if c.chunk.terms]
    stops = frozenset(config.bubble.stop_words)
    parts = ("records", "score", "words", "select")
    samples: dict[str, list[float]] = {name: [] for name in ("build_bubble", *parts)}
    for _ in range(rounds):
        for query in queries:
            started = time.perf_counter()
            build_bubble(query, candidates, config, run_id="floor", now=now)
            samples["build_bubble"].append((time.perf_counter() - started) * 1000)

            started = time.perf_counter()
            for values, details, chunk_id in rows[query]:
                values[0] = trace_id("floor", chunk_id)
                build(values, details)
            samples["records"].append((time.perf_counter() - started) * 1000)

            started = time.perf_counter()
            terms = facets[query]
            scores = [0.5 * sum(text.get(t, 0) + context.get(t, 0) for t in terms) for text, context in stems]
            samples["score"].append((time.perf_counter() - started) * 1000)

            started = time.perf_counter()
            [frozenset(compare).difference(stops) for compare in words]
            samples["words"].append((time.perf_counter() - started) * 1000)

            started = time.perf_counter()
            heap: list[tuple[float, int]] = []
            for index, score in enumerate(scores):
                heapq.heappush(heap, (-score, index))
            decisions = []
            while heap:
                negative, index = heapq.heappop(heap)
                decisions.append((index, -negative > 0, True, True, index < k))
            samples["select"].append((time.perf_counter() - started) * 1000)
    result = {f"{name}_ms_p50": p50(values) for name, values in samples.items()}
    result["floor_ms"] = round(sum(result[f"{part}_ms_p50"] for part in parts), 3)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    result = measure(args.k, args.rounds)
    for key, value in result.items():
        print(f"{key:24} {value:8.3f}")
    share = result["records_ms_p50"] / TARGET_MS
    floor = result["floor_ms"]
    print(f"the bare records alone: {share:.0%} of the {TARGET_MS} ms target; the floor: {floor} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
