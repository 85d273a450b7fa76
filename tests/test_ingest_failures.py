"""A bad file is that file's one-line failure; the other files of the folder are still ingested.

Every bad file is a real one made here: a workbook and a document with broken
XML, a "billion laughs" entity bomb inside a part, a symlink loop, a folder
linking to itself, a header-only CSV, an unreadable file and folder.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import docx
import openpyxl
import pytest
from click.testing import CliRunner, Result

from esbubble.app.cli import cli
from esbubble.errors import IngestError
from esbubble.ingest import IngestOptions, read_document
from esbubble.ingest.package import check_package
from esbubble.store.connection import Store

OPTIONS = IngestOptions()
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
        for i in range(1, 10)
    )
    + b"]>"
)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def workbook(path: Path) -> Path:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Prices"
    sheet.append(["Item", "Price"])
    sheet.append(["Scaffold tower", "120"])
    book.save(path)
    return path


def document(path: Path) -> Path:
    doc = docx.Document()
    doc.add_heading("Scope", 1)
    doc.add_paragraph("Scaffold hire for two weeks.")
    doc.save(path)
    return path


def with_part(source: Path, target: Path, part: str, data: bytes) -> Path:
    """A copy of the package ``source`` with ``part`` replaced by ``data``."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as new:
        for item in old.infolist():
            new.writestr(item, data if item.filename == part else old.read(item.filename))
    return target


def bomb_document(good: Path, target: Path) -> Path:
    body = (
        f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>'
    )
    return with_part(good, target, "word/document.xml", BILLION_LAUGHS + body.encode())


def bomb_workbook(good: Path, target: Path) -> Path:
    sheet = b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    sheet += b'<row r="1"><c r="A1" t="inlineStr"><is><t>&lol9;</t></is></c></row></sheetData></worksheet>'
    return with_part(good, target, "xl/worksheets/sheet1.xml", BILLION_LAUGHS + sheet)


def test_a_package_declaring_a_dtd_is_refused_before_parsing(tmp_path: Path) -> None:
    good = document(tmp_path / "good.docx")
    check_package(good, "document")  # a real Word file passes
    with pytest.raises(IngestError, match=r"word/document\.xml declares a DTD"):
        check_package(bomb_document(good, tmp_path / "bomb.docx"), "document")
    utf16 = with_part(
        good, tmp_path / "u16.docx", "word/styles.xml", '<!DOCTYPE x [<!ENTITY a "b">]><x/>'.encode("utf-16")
    )
    with pytest.raises(IngestError, match=r"word/styles\.xml declares a DTD"):
        check_package(utf16, "document")


def test_a_marker_split_across_read_blocks_is_found(tmp_path: Path) -> None:
    from esbubble.ingest import package

    padding = b" " * (package._READ_BLOCK - 4)  # "<!DOCTYPE" straddles the first block boundary
    target = with_part(
        workbook(tmp_path / "good.xlsx"),
        tmp_path / "split.xlsx",
        "xl/styles.xml",
        padding + b"<!DOCTYPE x><x/>",
    )
    with pytest.raises(IngestError, match="declares a DTD"):
        check_package(target, "workbook")


def test_a_package_that_inflates_past_the_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from esbubble.ingest import package

    good = workbook(tmp_path / "good.xlsx")
    monkeypatch.setattr(package, "MAX_PACKAGE_BYTES", 1000)
    with pytest.raises(IngestError, match="inflates to"):
        read_document(good, OPTIONS, doc_id="good.xlsx")


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (
            lambda d: with_part(
                workbook(d / "g.xlsx"),
                d / "bad.xlsx",
                "xl/worksheets/sheet1.xml",
                b"<worksheet><sheetData><row>",
            ),
            "cannot parse the file (ParseError",
        ),
        (
            lambda d: with_part(
                document(d / "g.docx"),
                d / "bad.docx",
                "word/document.xml",
                b"<w:document xmlns:w='x'><w:body>",
            ),
            "cannot parse the file (XMLSyntaxError",
        ),
        (
            lambda d: with_part(document(d / "g.docx"), d / "bad.docx", "word/document.xml", b"<a><b/></a>"),
            "cannot parse the file (AttributeError",
        ),
        (lambda d: bomb_document(document(d / "g.docx"), d / "bad.docx"), "declares a DTD"),
        (lambda d: bomb_workbook(workbook(d / "g.xlsx"), d / "bad.xlsx"), "declares a DTD"),
    ],
    ids=[
        "broken-xml-xlsx",
        "broken-xml-docx",
        "wrong-schema-docx",
        "billion-laughs-docx",
        "billion-laughs-xlsx",
    ],
)
def test_reader_errors_are_one_line_ingest_errors(tmp_path: Path, make: object, needle: str) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(IngestError) as caught:
        read_document(path, OPTIONS, doc_id=path.name)
    line = caught.value.one_line()
    assert needle in line and str(path) in line and "\n" not in line


def test_a_header_only_csv_has_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("Item,Price\n\n", encoding="utf-8")
    with pytest.raises(IngestError, match=r"CSV has no rows: only a header row \(Item, Price\)"):
        read_document(path, OPTIONS, doc_id="empty.csv")


def _folder(tmp_path: Path) -> Path:
    """Bad files sorted before and after good ones, so a crash on one would leave the later ones unread."""
    folder = tmp_path / "job"
    folder.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    workbook(folder / "a_prices.xlsx")
    with_part(
        workbook(scratch / "w.xlsx"),
        folder / "b_broken.xlsx",
        "xl/worksheets/sheet1.xml",
        b"<worksheet><sheetData>",
    )
    with_part(
        document(scratch / "d.docx"), folder / "c_broken.docx", "word/document.xml", b"<w:document><w:body>"
    )
    bomb_document(document(scratch / "e.docx"), folder / "d_laughs.docx")
    bomb_workbook(workbook(scratch / "f.xlsx"), folder / "e_laughs.xlsx")
    os.symlink("f_loop_b.md", folder / "f_loop_a.md")
    os.symlink("f_loop_a.md", folder / "f_loop_b.md")
    (folder / "g_header.csv").write_text("Item,Price\n", encoding="utf-8")
    (folder / "h_self").mkdir()
    os.symlink("..", folder / "h_self" / "parent")
    (folder / "h_self" / "notes.md").write_text("# Notes\n\nScaffold towers are checked weekly.\n")
    document(folder / "z_scope.docx")
    (folder / "zz_last.md").write_text("# Last\n\nThe last file is read too.\n", encoding="utf-8")
    return folder


@pytest.mark.integration
def test_a_folder_of_bad_files_fails_each_one_and_ingests_the_rest(store: Store, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    assert store.settings.url is not None
    result = run("--url", store.settings.url, "--prefix", store.names.prefix, "ingest", str(folder), "--json")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    payload = json.loads(result.stdout)
    reasons = {Path(f["file"]).name: f["reason"] for f in payload["failures"]}
    assert set(reasons) == {
        "b_broken.xlsx", "c_broken.docx", "d_laughs.docx", "e_laughs.xlsx",
        "f_loop_a.md", "f_loop_b.md", "g_header.csv", "parent",
    }  # fmt: skip
    assert "declares a DTD" in reasons["d_laughs.docx"] and "declares a DTD" in reasons["e_laughs.xlsx"]
    assert "symlink loop" in reasons["f_loop_a.md"] or "symbolic links" in reasons["f_loop_a.md"]
    assert "symlinked folder" in reasons["parent"]
    assert "no rows" in reasons["g_header.csv"]
    stored = store.client.search(
        index=store.names.chunks, size=100, aggs={"docs": {"terms": {"field": "doc_id"}}}
    ).body["aggregations"]["docs"]["buckets"]
    assert {b["key"] for b in stored} == {"a_prices.xlsx", "h_self/notes.md", "z_scope.docx", "zz_last.md"}
    again = run("--url", store.settings.url, "--prefix", store.names.prefix, "ingest", str(folder))
    assert again.exit_code == 1
    errors = [line for line in again.stderr.splitlines() if line.startswith("esbubble: error: ")]
    assert len(errors) == len(reasons)  # one line per bad file, nothing else
    assert again.stdout.startswith("4 documents")


def _without_read_permission(command: list[str]) -> list[str]:
    """``command`` run unable to bypass file permissions (as root: without the DAC capabilities)."""
    if os.geteuid() != 0:
        return command
    capsh = shutil.which("capsh")
    if capsh is None:
        pytest.skip("running as root without capsh: file permissions cannot be enforced")
    return [capsh, "--drop=cap_dac_override,cap_dac_read_search", "--", "-c", shlex.join(command)]


@pytest.mark.integration
def test_unreadable_file_and_folder_are_reported_not_usage_errors(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    (folder / "locked").mkdir(parents=True)
    (folder / "locked" / "inside.md").write_text("# In\n\nHidden behind permissions.\n")
    (folder / "open.md").write_text("# Open\n\nScaffold towers are checked weekly.\n")
    secret = folder / "secret.md"
    secret.write_text("# Secret\n\nNot readable.\n")
    secret.chmod(0)
    (folder / "locked").chmod(0)
    assert store.settings.url is not None
    esbubble = str(Path(sys.executable).parent / "esbubble")
    base = [esbubble, "--url", store.settings.url, "--prefix", store.names.prefix]
    try:
        whole = subprocess.run(
            _without_read_permission([*base, "ingest", str(folder)]),
            capture_output=True,
            check=False,
            text=True,
            timeout=120,
        )
        alone = subprocess.run(
            _without_read_permission([*base, "ingest", str(secret)]),
            capture_output=True,
            check=False,
            text=True,
            timeout=120,
        )
    finally:
        (folder / "locked").chmod(0o755)
    assert whole.returncode == 1, whole.stderr
    assert f"esbubble: error: {folder / 'locked'}: cannot read folder: Permission denied" in whole.stderr
    assert f"esbubble: error: {secret}: cannot read file: permission denied" in whole.stderr
    assert "1 documents" in whole.stdout
    assert alone.returncode == 1, alone.stderr
    assert f"{secret}: cannot read file: permission denied" in alone.stderr and "Usage:" not in alone.stderr


@pytest.mark.integration
def test_cli_header_only_csv_exits_1_with_no_rows(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("Item;Price\n", encoding="utf-8")
    assert store.settings.url is not None
    result = run("--url", store.settings.url, "--prefix", store.names.prefix, "ingest", str(path))
    assert result.exit_code == 1
    assert "prices.csv: CSV has no rows" in result.stderr
