"""A BERT sentence encoder in numpy: the forward pass of a sentence-transformers model folder.

The models esbubble runs (``all-MiniLM-L6-v2`` and any folder of the same shape) are a BERT
encoder whose token vectors are averaged over the text: WordPiece tokens (``tokenizer.json``,
through the ``tokenizers`` package) → token, position and segment embeddings → N layers of
self-attention and a feed-forward block, each closed by a residual sum and a layer norm → the
mean of the token vectors (``1_Pooling``). That is all sentence-transformers does for them, so
esbubble runs it with numpy and the weights read straight from ``model.safetensors``, without
torch (about 750 MB installed, and most of a model's 13 s loading time).

Each text is encoded alone, so its vector never depends on the texts beside it in a batch (no
padding enters a product); a chunk or a question gets the same vector in every run. Each product
runs on one BLAS thread (``threadpoolctl``), texts side by side on ``workers`` threads: OpenBLAS's
own threads on matrices this small gain little alone and, on a machine busy with other work,
spin against it (a question took 430 ms instead of 34 on 2 vCPUs beside a test run).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController
from tokenizers import Tokenizer

from esbubble.errors import ConfigError

Matrix = npt.NDArray[np.float32]

# Abramowitz & Stegun 7.1.26: erf within 1.5e-7 of the exact value, below float32's resolution
# at the values it feeds (BERT's "gelu" is the erf form, and numpy has no erf).
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}  # others are refused


@dataclass(frozen=True, slots=True)
class Layer:
    """One encoder layer's weights, each matrix transposed to multiply token rows from the right."""

    query_key_value: tuple[Matrix, Matrix]  # the three projections side by side: one product
    attention_out: tuple[Matrix, Matrix]
    attention_norm: tuple[Matrix, Matrix]
    intermediate: tuple[Matrix, Matrix]
    output: tuple[Matrix, Matrix]
    output_norm: tuple[Matrix, Matrix]


@dataclass(frozen=True, slots=True)
class SentenceModel:
    """A loaded BERT mean-pooling sentence model: its tokenizer, weights and shape."""

    tokenizer: Any  # tokenizers.Tokenizer (the package ships no type information)
    words: Matrix
    positions: Matrix
    segment: Matrix
    embedding_norm: tuple[Matrix, Matrix]
    layers: tuple[Layer, ...]
    heads: int
    eps: float
    blas: ThreadpoolController  # keeps each product on one BLAS thread (see ``encode``)
    workers: int

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        """Each text's mean-pooled token vector (not unit length), one text at a time, the texts
        spread over ``workers`` threads, each product on one BLAS thread."""
        encoded = self.tokenizer.encode_batch(list(texts))
        with self.blas.limit(limits=1, user_api="blas"):
            if self.workers == 1 or len(encoded) == 1:
                return [self._encode_one(e.ids).tolist() for e in encoded]
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                return [v.tolist() for v in pool.map(self._encode_one, [e.ids for e in encoded])]

    def _encode_one(self, ids: Sequence[int]) -> Matrix:
        rows = self.words[list(ids)] + self.positions[: len(ids)] + self.segment
        rows = _layer_norm(rows, self.embedding_norm, self.eps)
        for layer in self.layers:
            rows = self._layer(rows, layer)
        mean: Matrix = rows.mean(axis=0, dtype=np.float32)
        return mean

    def _layer(self, rows: Matrix, layer: Layer) -> Matrix:
        count, width = rows.shape
        size = width // self.heads

        projected = _dense(rows, layer.query_key_value).reshape(count, 3, self.heads, size)
        query, key, value = projected.transpose(1, 2, 0, 3)  # each (heads, count, size)
        scores = query @ key.transpose(0, 2, 1) / np.float32(np.sqrt(size))
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        attended = (scores @ value).transpose(1, 0, 2).reshape(count, width)
        rows = _layer_norm(rows + _dense(attended, layer.attention_out), layer.attention_norm, self.eps)
        inner = _gelu(_dense(rows, layer.intermediate))
        return _layer_norm(rows + _dense(inner, layer.output), layer.output_norm, self.eps)


def load_sentence_model(folder: Path, *, workers: int = 1) -> SentenceModel:
    """The model in ``folder`` (a sentence-transformers folder of a BERT encoder and mean pooling);
    a ``ConfigError`` naming what is missing or of another kind."""
    config = _json(folder / "config.json")
    pooling = _json(folder / "1_Pooling" / "config.json")
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise _unsupported(folder, f"a {config.get('model_type')!r} model with {config.get('hidden_act')!r}")
    if not pooling.get("pooling_mode_mean_tokens") or any(
        pooling.get(f"pooling_mode_{mode}") for mode in ("cls_token", "max_tokens", "mean_sqrt_len_tokens")
    ):
        raise _unsupported(folder, "a pooling other than the mean of the tokens")
    bert_config = folder / "sentence_bert_config.json"
    max_tokens = int(_json(bert_config).get("max_seq_length", 512)) if bert_config.is_file() else 512
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=min(max_tokens, int(config["max_position_embeddings"])))
    weights = read_safetensors(folder / "model.safetensors")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

    def get(name: str) -> Matrix:
        found = weights.get(prefix + name)
        if found is None:
            raise _unsupported(folder, f"weights without {prefix + name!r}")
        return found.astype(np.float32, copy=False)  # float32 weights are read in place

    def pair(name: str, *, transpose: bool = True) -> tuple[Matrix, Matrix]:
        weight = get(f"{name}.weight")
        return (np.ascontiguousarray(weight.T) if transpose else weight, get(f"{name}.bias"))

    def layer(n: int) -> Layer:
        at = f"encoder.layer.{n}"
        projections = [pair(f"{at}.attention.self.{name}") for name in ("query", "key", "value")]
        return Layer(
            query_key_value=(
                np.concatenate([w for w, _ in projections], axis=1),
                np.concatenate([b for _, b in projections]),
            ),
            attention_out=pair(f"{at}.attention.output.dense"),
            attention_norm=pair(f"{at}.attention.output.LayerNorm", transpose=False),
            intermediate=pair(f"{at}.intermediate.dense"),
            output=pair(f"{at}.output.dense"),
            output_norm=pair(f"{at}.output.LayerNorm", transpose=False),
        )

    return SentenceModel(
        tokenizer=tokenizer,
        words=get("embeddings.word_embeddings.weight"),
        positions=get("embeddings.position_embeddings.weight"),
        segment=get("embeddings.token_type_embeddings.weight")[0],
        embedding_norm=pair("embeddings.LayerNorm", transpose=False),
        layers=tuple(layer(n) for n in range(int(config["num_hidden_layers"]))),
        heads=int(config["num_attention_heads"]),
        eps=float(config.get("layer_norm_eps", 1e-12)),
        blas=ThreadpoolController(),
        workers=workers,
    )


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """The tensors of a ``.safetensors`` file: an 8-byte little-endian header length, a JSON header
    naming each tensor's dtype, shape and byte range, then the bytes."""
    try:
        data = path.read_bytes()
        (length,) = struct.unpack("<Q", data[:8])
        header: Mapping[str, Any] = json.loads(data[8 : 8 + length])
        body = memoryview(data)[8 + length :]
        tensors: dict[str, npt.NDArray[Any]] = {}
        for name, spec in header.items():
            if name == "__metadata__":
                continue
            dtype = _DTYPES.get(spec["dtype"])
            if dtype is None:
                raise ValueError(f"tensor {name!r} is {spec['dtype']}, which esbubble does not read")
            start, end = spec["data_offsets"]
            tensors[name] = np.frombuffer(body[start:end], dtype=np.dtype(dtype).newbyteorder("<")).reshape(
                spec["shape"]
            )
    except (OSError, ValueError, KeyError, TypeError, struct.error) as error:
        raise ConfigError(
            f"cannot read the model weights {path}: {error}",
            hint="point embedding_model at a sentence-transformers folder holding model.safetensors",
        ) from None
    return tensors


def _dense(rows: Matrix, weights: tuple[Matrix, Matrix]) -> Matrix:
    product: Matrix = rows @ weights[0] + weights[1]
    return product


def _layer_norm(rows: Matrix, weights: tuple[Matrix, Matrix], eps: float) -> Matrix:
    centred = rows - rows.mean(axis=-1, keepdims=True)
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    normed: Matrix = centred / np.sqrt(variance + np.float32(eps)) * weights[0] + weights[1]
    return normed


def _gelu(x: Matrix) -> Matrix:
    z = np.abs(x) / np.float32(np.sqrt(2.0))
    t = 1.0 / (1.0 + _ERF_P * z)
    a1, a2, a3, a4, a5 = _ERF_A
    erf = 1.0 - ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t * np.exp(-z * z)
    gelu: Matrix = (0.5 * x * (1.0 + np.sign(x) * erf)).astype(np.float32)
    return gelu


def _json(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"cannot read {path}: {error}",
            hint="point embedding_model at a sentence-transformers model folder",
        ) from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path} is not a JSON object", hint="point embedding_model at a model folder")
    return loaded


def _unsupported(folder: Path, what: str) -> ConfigError:
    return ConfigError(
        f"embedding model folder {folder} holds {what}; esbubble runs BERT encoders with mean pooling",
        hint="use 'all-MiniLM-L6-v2' or another BERT sentence-transformers model with mean pooling",
    )
