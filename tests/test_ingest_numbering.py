"""Word's automatic heading numbers, counted as Word counts them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docx
import pytest
from docx.oxml import parse_xml
from docx.oxml.ns import qn

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
        styles = _styles(paragraph)
        number = numbers.number(paragraph, styles)
        if heading_level(styles) not in (None, 0) and text.strip():
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


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _level(ilvl: int, fmt: str, text: str, *, style: str = "", legal: bool = False) -> str:
    named = f'<w:pStyle w:val="{style}"/>' if style else ""
    return (
        f'<w:lvl w:ilvl="{ilvl}"><w:start w:val="1"/>{"<w:isLgl/>" if legal else ""}'
        f'<w:numFmt w:val="{fmt}"/>{named}<w:lvlText w:val="{text}"/></w:lvl>'
    )


def _numbered_document(path: Path) -> Path:
    """Headings numbered I, I.1 by their styles' list; clauses numbered (1) by a list style, one use
    of it restarting at 5; a level under ``isLgl`` shows the levels above in decimal."""
    document = docx.Document()
    numbering = document.part.numbering_part.element
    definitions = [
        f'<w:abstractNum {W} w:abstractNumId="90">'
        + _level(0, "upperRoman", "%1", style="Heading1")
        + _level(1, "decimal", "%1.%2", style="Heading2")
        + _level(2, "decimal", "%1.%2.%3", legal=True)
        + "</w:abstractNum>",
        f'<w:abstractNum {W} w:abstractNumId="91"><w:styleLink w:val="Clauses"/>'
        + _level(0, "decimal", "(%1)")
        + "</w:abstractNum>",
        f'<w:abstractNum {W} w:abstractNumId="92"><w:numStyleLink w:val="Clauses"/></w:abstractNum>',
    ]
    nums = [
        f'<w:num {W} w:numId="90"><w:abstractNumId w:val="90"/></w:num>',
        f'<w:num {W} w:numId="92"><w:abstractNumId w:val="92"/></w:num>',
        f'<w:num {W} w:numId="93"><w:abstractNumId w:val="92"/>'
        '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="5"/></w:lvlOverride></w:num>',
    ]
    first_num = numbering.find(qn("w:num"))
    for xml in definitions:
        first_num.addprevious(parse_xml(xml))
    for xml in nums:
        numbering.append(parse_xml(xml))
    for name in ("Heading 1", "Heading 2"):
        document.styles[name].element.get_or_add_pPr().get_or_add_numPr().get_or_add_numId().val = 90

    def numbered(paragraph: Any, num_id: int, ilvl: int = 0) -> None:
        numbering_properties = paragraph._p.get_or_add_pPr().get_or_add_numPr()
        numbering_properties.get_or_add_numId().val = num_id
        numbering_properties.get_or_add_ilvl().val = ilvl

    document.add_heading("Scope", level=1)
    document.add_heading("Works", level=2)
    document.add_paragraph("The works cover the basement.")
    document.add_heading("Access", level=2)
    document.add_paragraph("Access is from the lane.")
    document.add_heading("Terms", level=1)
    document.add_heading("Payment", level=2)
    numbered(document.add_heading("Late fees", level=3), 90, 2)
    document.add_paragraph("Invoices are due in 30 days.")
    for clause in ("The builder insures the works.", "The owner gives access."):
        numbered(document.add_paragraph(clause), 92)
    numbered(document.add_heading("Notice", level=3), 92)
    document.add_paragraph("Notice is given in writing.")
    numbered(document.add_heading("Disputes", level=3), 93)
    document.add_paragraph("Disputes go to mediation.")
    unnumbered = document.add_heading("Signatures", level=1)
    numbered(unnumbered, 0)
    document.add_paragraph("Signed by both parties.")
    document.save(str(path))
    return path


def test_numbers_follow_levels_styles_list_styles_and_restarts(tmp_path: Path) -> None:
    chunks = read_document(
        _numbered_document(tmp_path / "c.docx"), IngestOptions(min_chunk_tokens=0), doc_id="c"
    )
    assert [(c.section, c.text) for c in chunks] == [
        ("I Scope > I.1 Works", "The works cover the basement."),
        ("I Scope > I.2 Access", "Access is from the lane."),
        ("II Terms > II.1 Payment > 2.1.1 Late fees", "Invoices are due in 30 days."),
        ("II Terms > II.1 Payment > 2.1.1 Late fees", "The builder insures the works."),
        ("II Terms > II.1 Payment > 2.1.1 Late fees", "The owner gives access."),
        ("II Terms > II.1 Payment > (3) Notice", "Notice is given in writing."),
        ("II Terms > II.1 Payment > (5) Disputes", "Disputes go to mediation."),
        ("Signatures", "Signed by both parties."),
    ]
