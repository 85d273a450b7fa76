"""Library warnings (pypdf logging, openpyxl ``warnings.warn``) land in the ingest report, never on stderr."""

from __future__ import annotations

import io
import logging
import re
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ingest_files import OPTIONS, make_pdf
from openpyxl import Workbook

from esbubble.ingest import read_file
from esbubble.ingest.reader_warnings import MAX_DISTINCT, captured_reader_warnings, summarise


def damaged_pdf(path: Path) -> Path:
    """A good PDF whose ``startxref`` points 7 bytes off: pypdf logs it, repairs it and reads the text."""
    data = make_pdf(path).read_bytes()
    at = data.rfind(b"startxref")
    match = re.match(rb"startxref\s+(\d+)", data[at:])
    assert match
    path.write_bytes(data[:at] + b"startxref\n" + str(int(match.group(1)) + 7).encode() + b"\n%%EOF\n")
    return path


def workbook_with_unsupported_extension(path: Path) -> Path:
    """A one-sheet workbook whose sheet carries a data-validation extension openpyxl warns about."""
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Quote"
    sheet.append(["Item", "Qty"])
    sheet.append(["membrane", 3])
    buffer = io.BytesIO()
    book.save(buffer)
    extension = b'<extLst><ext uri="{CCE6A557-97BC-4b89-ADB6-D9C93CAAB3DF}"/></extLst></worksheet>'
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source, zipfile.ZipFile(path, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"</worksheet>", extension)
            target.writestr(item, data)
    return path


def test_repeated_messages_are_counted_once_and_the_list_is_bounded() -> None:
    assert summarise(["a", "b", "a", "a"]) == ["a (×3)", "b"]
    many = summarise([f"m{i}" for i in range(MAX_DISTINCT + 5)])
    assert len(many) == MAX_DISTINCT + 1 and many[-1] == "… and 5 other messages"


def test_pypdf_log_messages_go_to_the_file_not_to_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    read = read_file(damaged_pdf(tmp_path / "spec.pdf"), OPTIONS, doc_id="spec.pdf")
    assert any("warranty period" in chunk.text for chunk in read.chunks)
    assert any(w.startswith("pypdf: incorrect startxref pointer") for w in read.warnings), read.warnings
    assert capfd.readouterr().err == ""


def test_openpyxl_warnings_go_to_the_file_not_to_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    read = read_file(
        workbook_with_unsupported_extension(tmp_path / "quote.xlsx"), OPTIONS, doc_id="quote.xlsx"
    )
    assert any("membrane" in chunk.text for chunk in read.chunks)
    assert read.warnings == ("openpyxl: Data Validation extension is not supported and will be removed",)
    assert capfd.readouterr().err == ""


def test_a_clean_file_has_no_warnings(tmp_path: Path) -> None:
    assert read_file(make_pdf(tmp_path / "clean.pdf"), OPTIONS, doc_id="clean.pdf").warnings == ()


def test_logging_and_warning_filters_are_restored_after_capture() -> None:
    logger = logging.getLogger("pypdf")
    handlers, propagate, filters = list(logger.handlers), logger.propagate, list(warnings.filters)
    with pytest.raises(RuntimeError), captured_reader_warnings():
        logger.warning("during")
        raise RuntimeError("reader crashed")
    assert (logger.handlers, logger.propagate, warnings.filters) == (handlers, propagate, filters)


@given(st.lists(st.sampled_from(["a", "b", "c: x", "d (×2)"]), max_size=30))
def test_summarise_keeps_every_message_once_with_its_count(messages: list[str]) -> None:
    shown = summarise(messages)
    assert len(shown) == len(set(messages))
    for message, line in zip(dict.fromkeys(messages), shown, strict=True):
        count = messages.count(message)
        assert line == (f"{message} (×{count})" if count > 1 else message)
