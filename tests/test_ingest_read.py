"""``read_document`` dispatch and the bad-input cases common to every format."""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_files import OPTIONS

from esbubble.core.analysis import distinct_words
from esbubble.errors import IngestError
from esbubble.ingest import drafts, read_document
from esbubble.text import TERMS_VERSION, distinct_terms, term_counts


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("slides.pptx", b"anything", "unsupported file type '.pptx'"),
        ("README", b"\x00\x01binary", "unsupported file type '(none)'"),
        ("empty.xlsx", b"", "file is empty"),
        ("empty.pdf", b"", "file is empty"),
        ("corrupt.xlsx", b"PK\x03\x04garbage", "not a readable .xlsx workbook"),
        (
            "locked.xlsx",
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600,
            "encrypted or in the legacy .xls",
        ),
    ],
)
def test_bad_files_raise_one_line_naming_the_file(
    tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(IngestError) as caught:
        read_document(path, OPTIONS, doc_id=name)
    line = caught.value.one_line()
    assert line.startswith(f"{path}: ") and reason in line and "\n" not in line
    assert caught.value.exit_code == 1


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"gone\.md: file not found"):
        read_document(tmp_path / "gone.md", OPTIONS, doc_id="gone")


def test_every_chunk_carries_its_terms_and_their_version_is_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = tmp_path / "memo.md"
    memo.write_text(
        "# Site\n\nSump pump to the sump pit.\n\n# Rates\n\n| Item | Rate |\n|---|---|\n| Pump | 42 |\n"
    )
    chunks = read_document(memo, OPTIONS, doc_id="memo.md")
    assert chunks
    for chunk in chunks:
        assert chunk.terms is not None
        assert chunk.terms.version == TERMS_VERSION
        assert chunk.terms.counts == term_counts(chunk.text)
        assert chunk.terms.compare == distinct_terms(chunk.compare_text)
        assert chunk.terms.words == distinct_words(chunk.compare_text)
    # A tokenizer change (a new TERMS_VERSION) makes every chunk "updated" on re-ingest.
    monkeypatch.setattr(drafts, "TERMS_VERSION", TERMS_VERSION + 1)
    again = read_document(memo, OPTIONS, doc_id="memo.md")
    assert [c.chunk_id for c in again] == [c.chunk_id for c in chunks]
    assert all(new.content_hash != old.content_hash for new, old in zip(again, chunks, strict=True))
