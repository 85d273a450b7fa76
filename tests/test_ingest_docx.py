"""The .docx reader: heading paths as sections, paragraphs and table rows as chunks."""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_files import OPTIONS, make_docx

from esbubble.errors import IngestError
from esbubble.ingest import read_document
from esbubble.ingest.ids import chunk_id, parent_id
from esbubble.tokens import count_tokens


def test_sections_paragraphs_and_table_rows(tmp_path: Path) -> None:
    chunks = read_document(make_docx(tmp_path / "memo.docx"), OPTIONS, doc_id="memo.docx")
    assert [(c.section, c.row_number, c.text) for c in chunks] == [
        ("memo.docx", None, "Intro before any heading."),
        ("Scope", None, "Waterproof the basement."),
        ("Scope > Podium", None, "Waterproof the podium slab."),
        ("Scope > Podium", 2, "Item: Membrane; Rate: $68.50"),
        ("Scope > Podium", 3, "Item: Joint; Rate: $138.00"),
        ("Terms", None, "Payment within 30 days."),
    ]
    assert chunks[3].compare_text == "Membrane $68.50"
    assert chunks[3].chunk_id == chunk_id("memo.docx", "section=Scope > Podium/table=1/row=2/part=0")
    assert chunks[2].parent_id == chunks[3].parent_id == parent_id("memo.docx", "Scope > Podium")
    assert {c.bucket for c in chunks} == {"Text"} and {c.source_type for c in chunks} == {"docx"}
    assert all(c.token_count == count_tokens(c.text) for c in chunks)
    assert chunks == read_document(tmp_path / "memo.docx", OPTIONS, doc_id="memo.docx")


def test_corrupt_docx_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.docx").write_bytes(b"PK\x03\x04 truncated zip")
    with pytest.raises(IngestError, match=r"bad\.docx: not a readable \.docx"):
        read_document(tmp_path / "bad.docx", OPTIONS, doc_id="bad")


def test_encrypted_office_file_is_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "locked.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512)
    with pytest.raises(IngestError, match=r"encrypted or in the legacy \.doc format"):
        read_document(tmp_path / "locked.docx", OPTIONS, doc_id="locked")
