"""Word's automatic heading numbers, counted as Word counts them."""

from __future__ import annotations

from pathlib import Path

import docx
import pytest

from esbubble.ingest import IngestOptions, read_document
from esbubble.ingest.docx import _generated, _paragraph_text, _styles, heading_level
from esbubble.ingest.numbering import ListNumbers, format_number
from esbubble.ingest.segment import normalise_space

REAL = Path(__file__).resolve().parents[1] / "data"
# Word documents of the real-document sets whose headings Word numbers and whose generated table of
# contents prints those numbers.
WITH_CONTENTS = [
    REAL / "realdocs" / "docs" / "cfe-requirements-spec.docx",
    REAL / "realdocs10" / "docs" / "xroad-central-server-data-model-1.3.docx",
    REAL / "realdocs7" / "docs" / "mzTab-1.0.0-specification.docx",
]


@pytest.mark.parametrize(
    ("value", "fmt", "shown"),
    [
        (3, "decimal", "3"),
        (1, "upperLetter", "A"),
        (28, "lowerLetter", "bb"),
        (14, "upperRoman", "XIV"),
        (9, "lowerRoman", "ix"),
        (4, "decimalZero", "04"),
        (5, "ordinal", "5"),
    ],
)
def test_numbers_in_a_level_format(value: int, fmt: str, shown: str) -> None:
    assert format_number(value, fmt) == shown


@pytest.mark.parametrize("path", WITH_CONTENTS, ids=lambda p: p.name)
def test_heading_numbers_are_those_of_words_own_table_of_contents(path: Path) -> None:
    """Each heading's counted number is the number Word printed for it in the document's table of
    contents (a field Word filled when it last laid the document out)."""
    document = docx.Document(str(path))
    numbers = ListNumbers(document)
    contents: list[tuple[str, str]] = []
    headings: list[tuple[str | None, str]] = []
    for paragraph in document.paragraphs:
        text = _paragraph_text(paragraph)
        if _generated(paragraph):
            parts = [part.strip() for part in text.split("\t") if part.strip()]
            if len(parts) >= 3:  # number, title, page
                contents.append((normalise_space(" ".join(parts[1:-1])), parts[0]))
            continue
        number = numbers.number(paragraph, _styles(paragraph))
        if heading_level(paragraph) not in (None, 0) and text.strip():
            headings.append((number, normalise_space(text)))
    checked, start = 0, 0
    for title, printed in contents:
        found = next((i for i in range(start, len(headings)) if headings[i][1] == title), None)
        assert found is not None, title
        assert headings[found][0] == printed, title
        checked, start = checked + 1, found + 1
    assert checked >= 30


def test_numbered_headings_name_their_sections(tmp_path: Path) -> None:
    """The number leads the heading in the section path, so "section 1.5" is where the text says."""
    path = REAL / "realdocs10" / "docs" / "xroad-central-server-data-model-1.3.docx"
    sections = {c.section for c in read_document(path, IngestOptions(), doc_id="dm-cs")}
    assert "1 General > 1.5 High Availability Support" in sections
    assert "2 Description of Entities > 2.13 HISTORY > 2.13.1 Attributes" in sections


def test_a_document_without_numbering_reads_its_headings_as_written(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_heading("Scope", level=1)
    document.add_paragraph("The works cover the basement.")
    document.save(str(tmp_path / "plain.docx"))
    chunks = read_document(tmp_path / "plain.docx", IngestOptions(min_chunk_tokens=0), doc_id="plain")
    assert [(c.section, c.text) for c in chunks] == [("Scope", "The works cover the basement.")]
