"""The CSV reader: one sheet named after the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_files import OPTIONS

from esbubble.errors import IngestError
from esbubble.ingest import read_document
from esbubble.ingest.ids import chunk_id


def test_records_with_header_and_sniffed_delimiter(tmp_path: Path) -> None:
    (tmp_path / "rates.csv").write_text(
        'Item;Rate;Notes\nMembrane;68.50;"laps sealed;\nrolled"\n\n;;\nJoint;138;\n', encoding="utf-8"
    )
    chunks = read_document(tmp_path / "rates.csv", OPTIONS, doc_id="rates.csv")
    assert [(c.row_number, c.text) for c in chunks] == [
        (2, "Item: Membrane; Rate: 68.50; Notes: laps sealed; rolled"),
        (5, "Item: Joint; Rate: 138"),
    ]
    assert {c.section for c in chunks} == {"rates"} and {c.sheet_name for c in chunks} == {"rates"}
    assert chunks[1].chunk_id == chunk_id("rates.csv", "sheet=rates/row=5/part=0")


def test_headerless_csv_keeps_every_record(tmp_path: Path) -> None:
    (tmp_path / "n.csv").write_text("1,2,3\n4,5,6\n", encoding="utf-8")
    chunks = read_document(tmp_path / "n.csv", OPTIONS, doc_id="n")
    assert [c.text for c in chunks] == ["1; 2; 3", "4; 5; 6"]


def test_binary_csv_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_bytes(b"\x00\x01\x02\x03" * 10)
    with pytest.raises(IngestError, match=r"x\.csv: CSV"):
        read_document(tmp_path / "x.csv", OPTIONS, doc_id="x")
