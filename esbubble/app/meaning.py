"""The question's meaning: each candidate's similarity to it, where the chunk index holds vectors.

Chunks carry vectors when they were ingested under ``[ingest] embedding_model``. A run whose
candidates all carry vectors of one model has the question encoded under that model, and each
candidate gets the cosine of the two (``Candidate.similarity``), which the coverage order weighs
by ``[bubble] semantic``. A run where some candidate has none is left without similarities, and
the weight is off for it (``core.select.semantic_weights``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from esbubble.config import BubbleParams
from esbubble.embedding import Embedder, cosine, load_embedder
from esbubble.errors import ConfigError, InputError
from esbubble.models import Candidate
from esbubble.store.retrieve import Retrieval


def vector_model(candidates: Sequence[Candidate]) -> str | None:
    """The model every candidate's vector was made under; None when one has none or two differ."""
    models = {c.chunk.embedding.model if c.chunk.embedding is not None else None for c in candidates}
    (model,) = models if len(models) == 1 else (None,)
    return model


def with_similarities(candidates: Sequence[Candidate], question: Sequence[float]) -> list[Candidate]:
    """``candidates``, each with its chunk vector's cosine with the ``question`` vector.

    A stored vector that does not read (damaged, or written under another model's name) is an
    ``InputError`` naming the chunk, its document and the fix."""
    return [
        c.model_copy(update={"similarity": _similarity(c, question)}) if c.chunk.embedding is not None else c
        for c in candidates
    ]


def _similarity(candidate: Candidate, question: Sequence[float]) -> float:
    chunk = candidate.chunk
    assert chunk.embedding is not None
    try:
        return cosine(question, chunk.embedding.vector)
    except ValueError as error:
        raise InputError(
            f"chunk {chunk.chunk_id} of {chunk.doc_id!r} has an unreadable {chunk.embedding.model!r}"
            f" vector: {error}",
            hint="ingest the document again with --rewrite and the profile that names the model,"
            " or set [bubble] semantic = 0",
        ) from None


class Meaning:
    """The embedding models this process has loaded, each once (loading one takes seconds), and
    what they say of the questions asked."""

    __slots__ = ("_loading", "_models")

    def __init__(self) -> None:
        self._models: dict[str, Embedder] = {}
        self._loading = threading.Lock()  # a batch's workers share one; each model loads once

    def attach(self, retrievals: Sequence[Retrieval], params: BubbleParams) -> list[Retrieval]:
        """Each retrieval with its candidates' similarities, where the profile weighs them
        (``semantic`` above 0 in the coverage order) and every candidate carries a vector of one
        model; the questions of one model are encoded together."""
        if not params.semantic or params.selection != "coverage":
            return list(retrievals)
        models = [vector_model(r.candidates) for r in retrievals]
        attached = list(retrievals)
        for model in sorted({m for m in models if m is not None}):
            mine = [i for i, m in enumerate(models) if m == model]
            questions = self._model(model).unit_vectors([retrievals[i].query for i in mine])
            for i, question in zip(mine, questions, strict=True):
                candidates = with_similarities(retrievals[i].candidates, question)
                attached[i] = retrievals[i].model_copy(update={"candidates": candidates})
        return attached

    def _model(self, name: str) -> Embedder:
        with self._loading:
            return self._load(name)

    def _load(self, name: str) -> Embedder:
        if name not in self._models:
            try:
                self._models[name] = load_embedder(name)
            except ConfigError as error:
                raise ConfigError(
                    f"the chunk index holds vectors of {name!r}: {error.message}",
                    hint=f"{error.hint}; or set [bubble] semantic = 0 to leave them unread",
                ) from None
        return self._models[name]
