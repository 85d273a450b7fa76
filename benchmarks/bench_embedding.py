"""The sentence-embedding model's costs: loading it, encoding chunks at ingest, a question per run.

Only where the ``semantic`` extra and the model's weights are installed (``make setup`` installs
them); elsewhere nothing is reported. The chunks are the sample job's, in file order.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bench_stats import median

from esbubble.embedding import DEFAULT_MODEL, embedding_text, load_embedder
from esbubble.errors import ConfigError
from esbubble.models import Chunk

QUESTIONS = ("scope of work", "What does the podium demolition cost per square metre?")


def encode_stats(chunks: Sequence[Chunk], *, texts: int) -> dict[str, float]:
    """Seconds to load the default model, chunks encoded a second, and a question's milliseconds."""
    started = time.perf_counter()
    try:
        embedder = load_embedder(DEFAULT_MODEL)
    except ConfigError:  # the extra or the weights are not installed
        return {}
    loaded = time.perf_counter() - started
    batch = [embedding_text(c.context, c.text) for c in chunks[:texts]]
    started = time.perf_counter()
    embedder.vectors(batch)
    encoding = time.perf_counter() - started
    question_ms = []
    for question in QUESTIONS:
        started = time.perf_counter()
        embedder.question(question)
        question_ms.append((time.perf_counter() - started) * 1000)
    return {
        "embedding_load_s": round(loaded, 3),
        "embedding_chunks_per_s": round(len(batch) / encoding, 1),
        "embedding_question_ms": round(median(question_ms), 1),
    }


def main() -> None:
    import json
    import sys
    from pathlib import Path

    from bench_core import sample_chunks

    from esbubble.config import load_profile

    sample = Path(__file__).resolve().parent.parent / "data" / "sample"
    chunks = sample_chunks(sample, load_profile(sample / "profile.toml"))
    stats = encode_stats(chunks, texts=200)
    if not stats:
        sys.exit("the semantic extra or the model's weights are not installed (make setup installs them)")
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
