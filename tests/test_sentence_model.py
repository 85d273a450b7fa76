"""The numpy sentence encoder: the vectors sentence-transformers gives, whatever the batch."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from esbubble.embedding import DEFAULT_MODEL, load_embedder, model_path, verify_files
from esbubble.errors import ConfigError
from esbubble.sentence_model import load_sentence_model, read_safetensors

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"


@pytest.fixture(scope="module")
def folder() -> Path:
    return model_path(DEFAULT_MODEL)


def test_the_vectors_are_those_sentence_transformers_gives_for_the_same_weights() -> None:
    # the reference: sentence-transformers on the packaged model (its "made_by"), including a
    # text of accents, CJK and a ligature and one longer than the model's 256 tokens
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    mine = np.array(load_embedder(DEFAULT_MODEL).unit_vectors(reference["texts"]))
    theirs = np.array(reference["vectors"])
    assert mine.shape == theirs.shape == (6, 384)
    assert np.abs(mine - theirs).max() < 1e-5


def test_a_texts_vector_does_not_depend_on_the_texts_encoded_with_it(folder: Path) -> None:
    model = load_sentence_model(folder)
    short, long = "watchdog interval", "The watchdog is a one-shot timer that fires once. " * 8
    together = model.encode([long, short, long])
    assert together[1] == model.encode([short])[0]  # bit for bit
    assert together[0] == together[2] == model.encode([long])[0]
    assert load_sentence_model(folder, workers=3).encode([long, short, long]) == together  # threads


def test_a_packaged_model_whose_files_differ_is_refused(folder: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(folder, copy)
    digests = (("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),)
    verify_files(copy, digests, origin="o")
    (copy / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tokenizer.json is not o's tokenizer.json \(SHA-256 44136fa3"):
        verify_files(copy, digests, origin="o")
    (copy / "tokenizer.json").unlink()
    with pytest.raises(ConfigError, match=r"\(SHA-256 unreadable \(No such file or directory\)\)"):
        verify_files(copy, digests, origin="o")


def test_safetensors_are_read_by_their_header_and_a_damaged_file_is_a_config_error(tmp_path: Path) -> None:
    values = np.arange(6, dtype="<f4")
    header = json.dumps(
        {"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}
    ).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + values.tobytes())
    assert read_safetensors(path)["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    path.write_bytes(struct.pack("<Q", len(header)) + header + values.tobytes()[:20])
    with pytest.raises(ConfigError, match=r"cannot read the model weights .*model.safetensors: "):
        read_safetensors(path)
    path.write_bytes(b"\x01")
    with pytest.raises(ConfigError, match="cannot read the model weights"):
        read_safetensors(path)


def test_a_folder_of_another_kind_of_model_is_a_config_error_naming_it(folder: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(folder, copy)
    pooling = copy / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text(encoding="utf-8"))
    pooling.write_text(json.dumps(settings | {"pooling_mode_cls_token": True}), encoding="utf-8")
    with pytest.raises(ConfigError, match="holds a pooling other than the mean of the tokens; esbubble runs"):
        load_sentence_model(copy)
    config = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    (copy / "config.json").write_text(json.dumps(config | {"model_type": "xlm-roberta"}), encoding="utf-8")
    with pytest.raises(ConfigError, match="holds a 'xlm-roberta' model with 'gelu'"):
        load_sentence_model(copy)
