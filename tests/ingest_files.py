"""Builders of small real documents for the ingest tests (openpyxl, python-docx, fpdf2)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import docx
import openpyxl
from fpdf import FPDF

from esbubble.ingest import IngestOptions

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
# The builders' paragraphs are one-liners that test structure; joining fragments has its own tests.
OPTIONS = IngestOptions(min_chunk_tokens=0)


def make_workbook(path: Path, *, long_text: str = "") -> Path:
    """Two visible sheets and a hidden one, with a title merge, a vertical merge and typed cells."""
    workbook = openpyxl.Workbook()
    scope = workbook.active
    scope.title = "Scope"
    scope["A1"] = "Scope of Works: Test Job"
    scope.merge_cells("A1:D1")
    scope.append([])
    scope.append(["Item", "Area", "Description", "Qty"])  # row 3: header
    scope.append(["1.1", "Basement", "Sheet membrane to retaining walls", 120])  # row 4
    scope.append(["1.2", None, "Protection board to retaining walls", 120])  # row 5, Area merged from row 4
    scope.merge_cells("B4:B5")
    scope.append([])  # row 6 empty
    scope.append(["1.3", "Podium", long_text or "Polyurethane membrane", 80])  # row 7
    pricing = workbook.create_sheet("Pricing")
    pricing.append(["Line", "Description", "Rate", "Amount", "Due"])  # row 1
    pricing.append(["P1", "Membrane", 68.5, "=C2*2", dt.datetime(2025, 3, 14)])  # row 2
    pricing["C2"].number_format = '"$"#,##0.00'
    pricing.append(["P2", "Joint strip", 0.125, None, dt.datetime(2025, 4, 1, 13, 30)])  # row 3
    pricing["C3"].number_format = "0.0%"
    hidden = workbook.create_sheet("Internal")
    hidden.append(["Code", "Cost"])
    hidden.append(["X1", "secret cost"])
    hidden.sheet_state = "hidden"
    workbook.save(path)
    return path


def make_pdf(path: Path) -> Path:
    """Two pages: a heading and two paragraphs, then a second heading and one paragraph."""
    pdf = FPDF()
    for heading, paragraphs in [
        (
            "1. General",
            ["First paragraph about the general scope of the job.", "Second paragraph on access."],
        ),
        ("2. Warranty", ["The warranty period is ten years from practical completion."]),
    ]:
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 16)
        pdf.multi_cell(0, 9, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        for text in paragraphs:
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(5)
    pdf.output(str(path))
    return path


def make_docx(path: Path) -> Path:
    document = docx.Document()
    document.add_paragraph("Intro before any heading.")
    document.add_heading("Scope", level=1)
    document.add_paragraph("Waterproof the basement.")
    document.add_heading("Podium", level=2)
    document.add_paragraph("Waterproof the podium slab.")
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(
        table.rows, [("Item", "Rate"), ("Membrane", "$68.50"), ("Joint", "$138.00")], strict=True
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Terms", level=1)
    document.add_paragraph("Payment within 30 days.")
    document.save(str(path))
    return path
