"""Each chunk's ``context``: document title, heading path or sheet, column headers — per reader."""

from __future__ import annotations

from pathlib import Path

import docx
import openpyxl
import pytest
from fpdf import FPDF
from ingest_files import OPTIONS, make_docx, make_workbook

from esbubble.ingest import read_document
from esbubble.ingest.drafts import chunk_context
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store
from esbubble.store.templates import load_template


def test_chunk_context_joins_title_path_and_headers() -> None:
    assert chunk_context("Spec", ["Warranty", "Exclusions"]) == "Spec > Warranty > Exclusions"
    assert chunk_context("Site Memo", ["Site Memo", "Access"]) == "Site Memo > Access"  # H1 = title once
    assert chunk_context("rates", ["rates"], ["Item", "", "Rate", "Item"]) == "rates | Item, Rate"
    assert chunk_context("notes") == "notes"


def test_markdown_title_is_its_first_h1_and_tables_add_headers(tmp_path: Path) -> None:
    memo = tmp_path / "memo.md"
    memo.write_text(
        "Preamble line before the title.\n\n# Site Memo\n\n## Access\n\nGate opens at seven.\n\n"
        "| Action | Owner |\n| --- | --- |\n| Confirm dewatering | Builder |\n",
        encoding="utf-8",
    )
    chunks = read_document(memo, OPTIONS, doc_id="memo.md")
    assert [c.context for c in chunks] == [
        "Site Memo",
        "Site Memo > Access",
        "Site Memo > Access | Action, Owner",
    ]
    untitled = tmp_path / "untitled.md"
    untitled.write_text("## Only a level two\n\nBody text.\n", encoding="utf-8")
    assert read_document(untitled, OPTIONS, doc_id="u")[0].context == "untitled > Only a level two"


def test_text_file_title_is_its_stem(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("TERMS\n\n1. Scope\n\nThis applies to the podium.\n", encoding="utf-8")
    [chunk] = read_document(notes, OPTIONS, doc_id="notes.txt")
    assert chunk.context == "notes > TERMS > 1. Scope"


def test_docx_title_is_its_core_title_else_the_stem(tmp_path: Path) -> None:
    path = make_docx(tmp_path / "memo.docx")
    chunks = read_document(path, OPTIONS, doc_id="memo.docx")
    assert [c.context for c in chunks] == [
        "memo",
        "memo > Scope",
        "memo > Scope > Podium",
        "memo > Scope > Podium | Item, Rate",
        "memo > Scope > Podium | Item, Rate",
        "memo > Terms",
    ]
    document = docx.Document(str(path))
    document.core_properties.title = "Basement Works Memo"
    document.save(str(path))
    # a title the document never shows is left over from another (its template, an earlier memo)
    assert read_document(path, OPTIONS, doc_id="memo.docx")[1].context == "memo > Scope"
    document.sections[0].header.paragraphs[0].text = "Basement Works Memo"  # shown on every page
    document.save(str(path))
    assert read_document(path, OPTIONS, doc_id="memo.docx")[1].context == "Basement Works Memo > Scope"


def test_pdf_title_is_its_metadata_title_else_the_stem(tmp_path: Path) -> None:
    def build(path: Path, title: str | None) -> Path:
        pdf = FPDF()
        if title:
            pdf.set_title(title)
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 16)
        pdf.multi_cell(0, 9, "3. Warranty", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, "The warranty period is ten years from practical completion.")
        pdf.output(str(path))
        return path

    [titled] = read_document(build(tmp_path / "a.pdf", "Waterproofing Specification"), OPTIONS, doc_id="a")
    assert titled.context == "Waterproofing Specification > 3. Warranty"
    [untitled] = read_document(build(tmp_path / "b.pdf", None), OPTIONS, doc_id="b")
    assert untitled.context == "b > 3. Warranty"


def test_sheet_rows_carry_workbook_sheet_and_column_headers(tmp_path: Path) -> None:
    path = make_workbook(tmp_path / "w.xlsx")
    chunks = read_document(path, OPTIONS, doc_id="w.xlsx")
    by_row = {(c.sheet_name, c.row_number): c.context for c in chunks}
    assert by_row[("Scope", 1)] == "w > Scope"  # the title row above the header has no columns
    assert by_row[("Scope", 4)] == "w > Scope | Item, Area, Description, Qty"
    assert by_row[("Pricing", 2)] == "w > Pricing | Line, Description, Rate, Amount, Due"
    book = openpyxl.load_workbook(path)
    book.properties.title = "Test Job Quote"
    book.save(path)
    assert read_document(path, OPTIONS, doc_id="w.xlsx")[0].context == "Test Job Quote > Scope"


def test_csv_rows_carry_the_stem_and_column_headers(tmp_path: Path) -> None:
    (tmp_path / "rates.csv").write_text("Item,Rate\nMembrane,68.50\n", encoding="utf-8")
    [chunk] = read_document(tmp_path / "rates.csv", OPTIONS, doc_id="rates.csv")
    assert chunk.context == "rates | Item, Rate"


def test_context_is_hashed_but_not_part_of_the_id(tmp_path: Path) -> None:
    path = make_docx(tmp_path / "memo.docx")
    before = read_document(path, OPTIONS, doc_id="memo.docx")
    document = docx.Document(str(path))
    document.core_properties.title = "Renamed"
    document.sections[0].header.paragraphs[0].text = "Renamed"
    document.save(str(path))
    after = read_document(path, OPTIONS, doc_id="memo.docx")
    assert [c.chunk_id for c in after] == [c.chunk_id for c in before]
    assert all(a.content_hash != b.content_hash for a, b in zip(after, before, strict=True))
    assert [c.text for c in after] == [c.text for c in before]


def test_context_is_mapped_like_text() -> None:
    properties = load_template("component-chunks-mappings", "esbubble")["template"]["mappings"]["properties"]
    assert properties["context"] == properties["text"] == {"type": "text", "analyzer": "english"}


@pytest.mark.integration
def test_context_is_searchable_on_the_engine(store: Store, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("15. Disclaimer of Warranty.\n\nThe program is provided as is.\n", encoding="utf-8")
    chunks = read_document(notes, OPTIONS, doc_id="notes.txt")
    index_chunks(store, chunks)
    store.client.indices.refresh(index=store.names.chunks)
    hits = store.client.search(
        index=store.names.chunks, query={"match": {"context": "warranties disclaimed"}}
    ).body["hits"]["hits"]
    assert [hit["_id"] for hit in hits] == [chunks[0].chunk_id]  # stemmed like text: warranties → warranti
    assert hits[0]["_source"]["context"] == "notes > 15. Disclaimer of Warranty."


def test_a_real_documents_left_over_core_title_is_not_its_title() -> None:
    """NASA's cFE requirements carry the core title "Swift Flight Software Requirements", which the
    document never shows; FIX's FIXP standard shows its own."""
    data = Path(__file__).resolve().parents[1] / "data"

    def titles(path: str) -> set[str]:
        chunks = read_document(data / path, OPTIONS, doc_id=path)
        return {c.context.split(" | ")[0].split(" > ")[0] for c in chunks}

    assert titles("realdocs/docs/cfe-requirements-spec.docx") == {"cfe-requirements-spec"}
    fixp = "FIX Performance Session Layer (FIXP)"
    assert titles("realdocs8/docs/FIXP-1.0-technical-standard.docx") == {fixp}
