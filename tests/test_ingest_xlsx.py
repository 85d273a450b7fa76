"""The .xlsx reader on a small workbook built here and on the sample quote job."""

from __future__ import annotations

import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import openpyxl
from hypothesis import given
from hypothesis import strategies as st
from ingest_files import OPTIONS, SAMPLE, make_workbook

from esbubble.core.named import NamedRows, cell_terms, link_labels
from esbubble.core.tokens import count_tokens
from esbubble.ingest import IngestOptions, read_document
from esbubble.ingest.ids import chunk_id
from esbubble.ingest.read import read_file
from esbubble.ingest.xlsx import _present_cells, has_uncached_formulas


def test_rows_become_header_value_chunks_with_locators(tmp_path: Path) -> None:
    chunks = read_document(make_workbook(tmp_path / "w.xlsx"), OPTIONS, doc_id="w.xlsx")
    scope = [c for c in chunks if c.section == "Scope"]
    assert [c.row_number for c in scope] == [1, 4, 5, 7]  # title, data rows; header and empty rows skipped
    assert scope[0].text == "Scope of Works: Test Job"
    assert (
        scope[1].text == "Item: 1.1; Area: Basement; Description: Sheet membrane to retaining walls; Qty: 120"
    )
    assert scope[1].compare_text == "1.1 Basement Sheet membrane to retaining walls 120"
    assert scope[1].chunk_id == chunk_id("w.xlsx", "sheet=Scope/row=4/part=0")
    assert {c.sheet_name for c in scope} == {"Scope"} and {c.bucket for c in scope} == {"Scope"}
    assert {c.parent_id for c in scope} == {scope[0].parent_id}
    assert [c.position for c in chunks] == list(range(len(chunks)))


def test_a_character_written_as_its_code_reads_as_the_character(tmp_path: Path) -> None:
    """A workbook writes a character XML cannot hold as its code (``_x000D_``, a carriage return, in
    UNECE's ``Level /_x000D_`` / ``Category`` header): it keyed 2,136 rows ``Level /_x000D_ Category``."""
    book = openpyxl.Workbook()
    book.active.append(["Common\nCode", "Level /_x000D_\nCategory"])
    book.active.append(["05", "3.9"])
    book.save(tmp_path / "codes.xlsx")
    (chunk,) = read_document(tmp_path / "codes.xlsx", OPTIONS, doc_id="codes.xlsx")
    assert chunk.text == "Common Code: 05; Level / Category: 3.9"


def test_vertical_merge_repeats_value_on_each_row(tmp_path: Path) -> None:
    chunks = read_document(make_workbook(tmp_path / "w.xlsx"), OPTIONS, doc_id="w")
    row5 = next(c for c in chunks if c.section == "Scope" and c.row_number == 5)
    assert "Area: Basement" in row5.text


def test_numbers_dates_and_formulas_render_for_people(tmp_path: Path) -> None:
    chunks = read_document(make_workbook(tmp_path / "w.xlsx"), OPTIONS, doc_id="w")
    pricing = {c.row_number: c.text for c in chunks if c.section == "Pricing"}
    assert pricing[2] == "Line: P1; Description: Membrane; Rate: $68.50; Amount: =C2*2; Due: 14 March 2025"
    assert pricing[3] == "Line: P2; Description: Joint strip; Rate: 12.5%; Due: 1 April 2025 13:30"


def test_hidden_sheets_skipped_unless_asked(tmp_path: Path) -> None:
    """A hidden sheet is left out, and the file's reader warnings say so and how to read it."""
    path = make_workbook(tmp_path / "w.xlsx")
    read = read_file(path, OPTIONS, doc_id="w")
    assert "Internal" not in {c.section for c in read.chunks}
    assert read.warnings == (
        "sheet 'Internal' is hidden and was not read "
        "(include_hidden_sheets = true in the profile's [ingest] reads it)",
    )
    with_hidden = read_file(path, IngestOptions(include_hidden_sheets=True), doc_id="w")
    assert [c.text for c in with_hidden.chunks if c.section == "Internal"] == ["Code: X1; Cost: secret cost"]
    assert with_hidden.warnings == ()


def test_long_row_splits_into_continuations_keeping_row_number(tmp_path: Path) -> None:
    sentence = "The membrane is laid to falls and turned up at every wall and upstand. "
    path = make_workbook(tmp_path / "w.xlsx", long_text=sentence * 30)
    options = IngestOptions(max_chunk_tokens=64)
    parts = [c for c in read_document(path, options, doc_id="w") if c.row_number == 7]
    assert len(parts) > 3
    assert all(c.token_count <= 64 for c in parts)
    assert parts[0].text.startswith("Item: 1.3; Area: Podium; Description: The membrane")
    assert [c.chunk_id for c in parts] == [
        chunk_id("w", f"sheet=Scope/row=7/part={i}") for i in range(len(parts))
    ]
    assert "Description:" not in parts[0].compare_text and "1.3 Podium The membrane" in parts[0].compare_text
    # a continuation says which row it continues: the row's first cell, then "…"; nothing is lost
    lead = "Item: 1.3; … "
    assert all(c.text.startswith(lead) for c in parts[1:])
    whole = " ".join([parts[0].text, *(c.text.removeprefix(lead) for c in parts[1:])])
    unsplit = read_document(path, IngestOptions(max_chunk_tokens=4000), doc_id="w")
    (row,) = [c for c in unsplit if c.row_number == 7]
    assert whole.split() == row.text.split()


def test_a_long_first_cell_is_not_repeated_on_continuations(tmp_path: Path) -> None:
    """A first cell too long to name its row (a paragraph of prose) is not copied to every part."""
    path = tmp_path / "notes.xlsx"
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Notes"
    sheet.append(["Note", "Source"])
    sheet.append(["The membrane is laid to falls and turned up at every wall and upstand. " * 8, "Spec 4"])
    book.save(path)
    parts = read_document(path, IngestOptions(max_chunk_tokens=64), doc_id="n")
    assert len(parts) > 2 and not any(c.text.startswith("Note: The membrane") for c in parts[1:])


def test_continuations_of_a_field_dictionary_name_the_table_and_the_field(tmp_path: Path) -> None:
    """A data dictionary lists each table's fields under the table's name (OMOP's ``FIELD LEVEL``
    sheet: ``CDM_TABLE | CDM_FIELD | …`` with 46 columns). The first cell names a table, not the row:
    a continuation part that said only ``CDM_TABLE: PERSON; …`` held a check's threshold for no field
    in particular. It starts with the cells that tell the rows apart."""
    path = tmp_path / "dictionary.xlsx"
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Fields"
    checks = [f"CHECK_{n}" for n in range(12)]
    sheet.append(["CDM_TABLE", "CDM_FIELD", *checks])
    for table, field in [("PERSON", "year_of_birth"), ("PERSON", "gender_concept_id"), ("VISIT", "visit_id")]:
        sheet.append([table, field, *(f"threshold {n} for the plausible value" for n in range(12))])
    book.save(path)
    chunks = read_document(path, IngestOptions(max_chunk_tokens=64), doc_id="d")
    birth = [c for c in chunks if c.row_number == 2]
    assert len(birth) >= 3
    assert all(c.text.startswith("CDM_TABLE: PERSON; CDM_FIELD: year_of_birth; … CHECK_") for c in birth[1:])


def test_two_reads_give_identical_chunks_and_tiktoken_counts(tmp_path: Path) -> None:
    path = make_workbook(tmp_path / "w.xlsx")
    first = read_document(path, OPTIONS, doc_id="w")
    assert first == read_document(path, OPTIONS, doc_id="w")
    assert all(c.token_count == count_tokens(c.text, "o200k_base") for c in first)
    cl100k = read_document(path, IngestOptions(encoding="cl100k_base"), doc_id="w")
    assert all(c.token_count == count_tokens(c.text, "cl100k_base") for c in cl100k)


def test_bucket_map_from_profile_applies(tmp_path: Path) -> None:
    options = IngestOptions.model_validate({"buckets": {"map": {"Pricing": "Commercial"}}})
    chunks = read_document(make_workbook(tmp_path / "w.xlsx"), options, doc_id="w")
    assert {c.bucket for c in chunks if c.section == "Pricing"} == {"Commercial"}
    assert {c.bucket for c in chunks if c.section == "Scope"} == {"Scope"}


def test_sample_workbook_shape() -> None:
    chunks = read_document(SAMPLE / "quote_job.xlsx", OPTIONS, doc_id="quote_job.xlsx")
    sections = {c.section for c in chunks}
    visible = ["Scope of Works", "Below Grade", "Products", "Pricing", "Terms & Conditions", "Exclusions"]
    assert sections == {*visible, "Site Conditions"}  # the hidden "Rates Lookup" sheet is skipped
    assert 900 <= len(chunks) <= 1100
    mean = sum(c.token_count for c in chunks) / len(chunks)
    assert 70 <= mean <= 200
    total = next(c for c in chunks if c.text.startswith("Description: Total contract price"))
    assert (
        total.text == "Description: Total contract price including GST; Amount: $2,700,128.60"
    )  # cached formula
    dated = next(c for c in chunks if c.section == "Site Conditions" and c.row_number == 4)
    assert "Date: 3 February 2025" in dated.text
    liability = [c for c in chunks if c.section == "Terms & Conditions" and "Heading: Liability" in c.text]
    continued = [
        c for c in chunks if c.row_number == liability[0].row_number and c.section == liability[0].section
    ]
    assert len(continued) >= 2 and all(c.token_count <= OPTIONS.max_chunk_tokens for c in continued)


def test_formula_pass_only_when_a_formula_lacks_its_cached_value(tmp_path: Path) -> None:
    # The sample was saved with cached results for all its formulas: one parse of the workbook suffices.
    assert not has_uncached_formulas(SAMPLE / "quote_job.xlsx")
    # openpyxl writes formulas without results, so their text must be read from a second parse.
    assert has_uncached_formulas(make_workbook(tmp_path / "w.xlsx"))


def test_a_formula_whose_cached_result_is_the_empty_string_is_an_empty_cell(tmp_path: Path) -> None:
    """Excel saves ``=IF(Q2<>"",0,"")`` that came out empty as a ``str`` cell with an empty value: the
    cell is empty, as Excel shows it, not its formula text (the OMOP data-quality workbook had it in
    839 of its 1,342 chunks). A formula saved without any result is still its formula text."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Check", "Threshold", "Notes"])
    sheet.append(["plausible value", '=IF(D2<>"",0,"")', "=C1"])
    book.save(tmp_path / "raw.xlsx")
    with zipfile.ZipFile(tmp_path / "raw.xlsx") as raw, zipfile.ZipFile(tmp_path / "w.xlsx", "w") as out:
        for item in raw.infolist():
            data = raw.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":  # as Excel saves the first formula
                data = data.replace(b'<c r="B2"><f>', b'<c r="B2" t="str"><f>').replace(
                    b"</f><v></v>", b"</f><v/>", 1
                )
            out.writestr(item, data)
    assert has_uncached_formulas(tmp_path / "w.xlsx")  # the second formula has no result
    chunks = read_document(tmp_path / "w.xlsx", IngestOptions(), doc_id="w.xlsx")
    assert [c.text for c in chunks] == ["Check: plausible value; Notes: =C1"]


def _sheet(path: Path, rows: list[list[object]], title: str = "Metadata") -> Path:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = title
    for row in rows:
        sheet.append(row)
    book.save(path)
    return path


def test_a_key_value_sheet_reads_label_value_per_row_not_its_first_row_as_headers(tmp_path: Path) -> None:
    rows: list[list[object]] = [
        ["Publisher", "Office for National Statistics (ONS)"],
        ["Dataset", "Business demography, UK: 2024"],
        ["Publication date", datetime(2025, 11, 20)],
        ["Notes:", "Counts are rounded to the nearest 5."],
        ["Tables"],
    ]
    chunks = read_document(_sheet(tmp_path / "m.xlsx", rows), OPTIONS, doc_id="m.xlsx")
    assert [c.text for c in chunks] == [
        "Publisher: Office for National Statistics (ONS)",
        "Dataset: Business demography, UK: 2024",
        "Publication date: 20 November 2025",
        "Notes: Counts are rounded to the nearest 5.",
        "Tables",
    ]
    assert chunks[2].compare_text == "20 November 2025"  # the label is structure, not content
    assert [c.row_number for c in chunks] == [1, 2, 3, 4, 5]


def test_a_notes_sheet_opening_with_a_label_and_its_value_has_no_header_row(tmp_path: Path) -> None:
    """EFRAG's VSME template opens its Introduction with ``Version:`` | ``1.3.0`` above notes too long
    for a key-value sheet: taken for the header, it keyed every note ``Version:`` and its value
    ``1.3.0:``. A label ending in a colon is no column name; a labelled row reads ``Label: value``."""
    note = "1. Fill in the disclosures on the four worksheets in the white cells framed by a border. " * 2
    rows: list[list[object]] = [
        ["Version:", "1.3.0"],
        ["Publication date:", "11 June 2026"],
        ["How to use it:"],
        [note.strip()],
        ["Basic Module", "Indicates that the disclosure is from the VSME Basic Module."],
    ]
    chunks = read_document(_sheet(tmp_path / "n.xlsx", rows), OPTIONS, doc_id="n.xlsx")
    assert [c.text for c in chunks] == [
        "Version: 1.3.0",
        "Publication date: 11 June 2026",
        "How to use it:",
        note.strip(),
        "Basic Module; Indicates that the disclosure is from the VSME Basic Module.",
    ]
    assert not any("Version:" in c.context for c in chunks)


def test_a_two_column_table_of_numbers_keeps_its_header_row(tmp_path: Path) -> None:
    rows: list[list[object]] = [["Area", "Emissions"], ["Cotswold", 196.4], ["Stroud", 150.2], ["Bath", 96.2]]
    chunks = read_document(_sheet(tmp_path / "t.xlsx", rows), OPTIONS, doc_id="t.xlsx")
    assert [c.text for c in chunks] == ["Area: Cotswold; Emissions: 196.4", "Area: Stroud; Emissions: 150.2",
                                        "Area: Bath; Emissions: 96.2"]  # fmt: skip


def test_a_legend_beside_the_data_is_a_table_of_its_own_not_values_of_the_rows_beside_it(
    tmp_path: Path,
) -> None:
    """The layout of Eurostat's typology sheets: codes in A:B, past an empty column a legend in D:E."""
    rows: list[list[object]] = [
        ["NUTS_ID", "COASTAL"],
        ["AL011", 0],
        ["AL012", 1, None, 0, "non-coastal"],
        ["AL013", 2, None, 1, "coastal (on coast)"],
        ["AL014", 1, None, 2, "coastal (>= 50% of population living within 50km of the coastline)"],
        ["AL015", 0],
        ["AL021", 1],
        ["AL022", 1],
    ]
    chunks = read_document(_sheet(tmp_path / "c.xlsx", rows), OPTIONS, doc_id="c.xlsx")
    data = [c for c in chunks if c.text.startswith("NUTS_ID")]
    assert [c.text for c in data][1:4] == ["NUTS_ID: AL012; COASTAL: 1", "NUTS_ID: AL013; COASTAL: 2",
                                           "NUTS_ID: AL014; COASTAL: 1"]  # fmt: skip
    legend = [c for c in chunks if c not in data]
    assert [(c.row_number, c.text) for c in legend] == [
        (3, "0; non-coastal"),
        (4, "1; coastal (on coast)"),
        (5, "2; coastal (>= 50% of population living within 50km of the coastline)"),
    ]
    assert legend[0].chunk_id == chunk_id("c.xlsx", "sheet=Metadata/cols=4-5/row=3/part=0")
    assert data[0].chunk_id == chunk_id(
        "c.xlsx", "sheet=Metadata/row=2/part=0"
    )  # the main table's ids as before
    assert all("NUTS_ID" not in c.context for c in legend)  # the data's column names are not the legend's


def test_columns_past_an_empty_column_on_as_many_rows_stay_part_of_the_row(tmp_path: Path) -> None:
    """A spacer column inside one table does not split its records."""
    rows: list[list[object]] = [
        ["Item", "Qty", None, "Rate", "Amount"],
        ["Membrane", 120, None, 45.0, 5400.0],
        ["Primer", 30, None, 12.0, 360.0],
    ]
    chunks = read_document(_sheet(tmp_path / "s.xlsx", rows), OPTIONS, doc_id="s.xlsx")
    assert [c.text for c in chunks] == ["Item: Membrane; Qty: 120; Rate: 45; Amount: 5400",
                                        "Item: Primer; Qty: 30; Rate: 12; Amount: 360"]  # fmt: skip


def _code_list(title: str = "CountryCode") -> list[list[object]]:
    """The layout of a genericode-style code list (the EU's ESPD workbooks): a block of metadata
    pairs, then the table under its own header; untranslated language columns repeat the English."""
    languages = ["bul", "spa", "ces", "dan", "deu"]
    return [
        ["ShortName", title],
        ["Version", "2.0.2"],
        ["AgencyLongName", "DG GROW (European Commission)"],
        ["Code", "Name", "Description", *languages],
        ["DK", "Denmark", "Denmark", *(["Denmark"] * len(languages))],
        ["SE", "Sweden", "Kingdom of Sweden", "Швеция", "Suecia", "Švédsko", "Sverige", "Schweden"],
    ]


def test_a_table_under_a_block_of_metadata_pairs_gets_its_own_header_row(tmp_path: Path) -> None:
    chunks = read_document(_sheet(tmp_path / "c.xlsx", _code_list()), OPTIONS, doc_id="c.xlsx")
    texts = {c.row_number: c.text for c in chunks}
    assert [texts[row] for row in (1, 2, 3)] == [
        "ShortName: CountryCode",
        "Version: 2.0.2",
        "AgencyLongName: DG GROW (European Commission)",
    ]  # the metadata block reads label by label, not as the table's header
    assert 4 not in texts  # the header row
    assert texts[6] == (
        "Code: SE; Name: Sweden; Description: Kingdom of Sweden; bul: Швеция; spa: Suecia; ces: Švédsko;"
        " dan: Sverige; deu: Schweden"
    )
    assert chunks[-1].context == "c > Metadata | Code, Name, Description, bul, spa, ces, dan, deu"
    assert chunks[0].context == "c > Metadata"


def test_a_value_repeated_across_a_run_of_columns_is_written_once(tmp_path: Path) -> None:
    chunks = read_document(_sheet(tmp_path / "c.xlsx", _code_list()), OPTIONS, doc_id="c.xlsx")
    denmark = next(c for c in chunks if c.row_number == 5)
    assert denmark.text == "Code: DK; Name … deu: Denmark"  # seven columns: the first and last header
    assert denmark.compare_text == "DK Denmark"


def test_a_group_header_over_the_column_names_is_not_taken_for_metadata(tmp_path: Path) -> None:
    """Two short cells above a wide header stay the group row of a two-row header when merged."""
    rows: list[list[object]] = [
        ["DRAFT", "Risk Metrics"],
        ["Title", "Name", "Alt", "System", "Notes"],
        ["Impact", "integrity-impact", "I", "CVSSv3", "x"],
    ]
    path = _sheet(tmp_path / "g.xlsx", rows)
    book = openpyxl.load_workbook(path)
    book.active.merge_cells("B1:E1")
    book.save(path)
    chunks = read_document(path, OPTIONS, doc_id="g.xlsx")
    assert [c.text for c in chunks] == [
        "DRAFT Title: Impact; Risk Metrics Name: integrity-impact; Risk Metrics Alt: I;"
        " Risk Metrics System: CVSSv3; Risk Metrics Notes: x"
    ]


def _stacked(path: Path) -> Path:
    """Two code lists stacked on one sheet, each under a title row and the same header row."""
    rows: list[list[object]] = [
        ["Status codes mapped to the standard"],
        [],
        ["Codelist: tenderStatus"],
        ["Code", "Title", "Source code"],
        ["active", "Active", "2BS - Sent"],
        ["cancelled", "Cancelled", "2BC - Canceled"],
        [],
        ["Codelist: awardCriteria"],
        ["Code", "Title", "Source code"],
        ["priceOnly", "Price only", "01"],
    ]
    return _sheet(path, rows)


def test_tables_stacked_under_a_repeated_header_row_each_read_under_it(tmp_path: Path) -> None:
    chunks = read_document(_stacked(tmp_path / "s.xlsx"), OPTIONS, doc_id="s.xlsx")
    assert [(c.row_number, c.text) for c in chunks] == [
        (1, "Status codes mapped to the standard"),
        (3, "Codelist: tenderStatus"),
        (5, "Code: active; Title: Active; Source code: 2BS - Sent"),
        (6, "Code: cancelled; Title: Cancelled; Source code: 2BC - Canceled"),
        (8, "Codelist: awardCriteria"),
        (10, "Code: priceOnly; Title: Price only; Source code: 01"),
    ]
    # Each table's rows name their table (the title row above its header) and the column names.
    assert chunks[2].context == "s > Metadata > Codelist: tenderStatus | Code, Title, Source code"
    assert chunks[5].context == "s > Metadata > Codelist: awardCriteria | Code, Title, Source code"
    assert chunks[1].context == "s > Metadata"


def test_a_data_row_that_recurs_is_not_taken_for_a_stacked_header(tmp_path: Path) -> None:
    """A row repeated word for word among the data (one code listed twice) is still data."""
    rows: list[list[object]] = [
        ["Code", "Name", "Group"],
        ["NA", "Not applicable", "Other"],
        ["OPEN", "Open procedure", "Main"],
        ["NA", "Not applicable", "Other"],
    ]
    chunks = read_document(_sheet(tmp_path / "d.xlsx", rows), OPTIONS, doc_id="d.xlsx")
    assert [c.text for c in chunks] == [
        "Code: NA; Name: Not applicable; Group: Other",
        "Code: OPEN; Name: Open procedure; Group: Main",
        "Code: NA; Name: Not applicable; Group: Other",
    ]


def _reference_workbook(path: Path) -> Path:
    """A code list naming regions, and two sheets that refer to them by code only."""
    book = openpyxl.Workbook()
    names = book.active
    assert names is not None
    names.title = "Regions"
    names.append(["Code", "Level", "Name"])
    regions = [
        ("NO08", "Oslo og Viken"),
        ("NO081", "Oslo"),
        ("NO082", "Viken"),
        ("NO09", "Agder og Sør-Østlandet"),
        ("NO091", "Vestfold og Telemark"),
        ("NO092", "Agder"),
        ("BE10", "Région de Bruxelles-Capitale"),
        ("BE100", "Bruxelles"),
        ("BE21", "Prov. Antwerpen"),
    ]
    for code, name in regions:
        names.append([code, len(code) - 2, name])
    names.append(["NOZ", 1, "Extra-Regio"])  # a code without digits: no code to link
    metro = book.create_sheet("Metropolitan")
    metro.append(["NUTS_ID", "METRO", "Region"])
    for code, flag in [("NO081", "Y"), ("NO082", "N"), ("BE100", "Y"), ("DE300", "Y"), ("NOZ", "N")]:
        metro.append([code, flag, f"{code[:2]}001MC" if flag == "Y" else None])
    notes = book.create_sheet("Changes")
    notes.append(["Code", "Label", "Change"])
    notes.append(["NO082", "Viken", "new; made from ex-NO012"])
    book.save(path)
    return path


def test_a_row_naming_a_code_another_sheet_labels_gets_the_label_in_its_context(tmp_path: Path) -> None:
    """Cross-sheet questions name the thing ("is Oslo metropolitan?"); the row that answers holds its
    code only. Its context (searched, weighted lower) names the code; its text stays the sheet's."""
    chunks = read_document(_reference_workbook(tmp_path / "r.xlsx"), OPTIONS, doc_id="r.xlsx")
    metro = {c.text: c.context for c in chunks if c.section == "Metropolitan"}
    headers = "r > Metropolitan | NUTS_ID, METRO, Region"
    assert metro["NUTS_ID: NO081; METRO: Y; Region: NO001MC"] == f"{headers} | NO081 = Oslo"
    assert metro["NUTS_ID: BE100; METRO: Y; Region: BE001MC"] == f"{headers} | BE100 = Bruxelles"
    assert metro["NUTS_ID: DE300; METRO: Y; Region: DE001MC"] == headers  # no sheet names it
    assert metro["NUTS_ID: NOZ; METRO: N"] == headers  # not a code
    # a row that already says the label, and the rows of the table that names the codes, are left alone
    changes = next(c for c in chunks if c.section == "Changes")
    assert changes.context == "r > Changes | Code, Label, Change"
    assert all(c.context == "r > Regions | Code, Level, Name" for c in chunks if c.section == "Regions")


def test_a_question_naming_a_label_names_the_rows_that_hold_its_code(tmp_path: Path) -> None:
    """What ingest writes into a row's context is what ``core.named`` reads back: the Metropolitan row
    of NO081 is named by a question that says Oslo, though its own cells hold only the code."""
    chunks = read_document(_reference_workbook(tmp_path / "r.xlsx"), OPTIONS, doc_id="r.xlsx")
    rows = NamedRows("Is Oslo part of a metropolitan region?")
    named = {c.text: rows.value(c.text, c.context) for c in chunks if c.section == "Metropolitan"}
    assert named["NUTS_ID: NO081; METRO: Y; Region: NO001MC"] == "Oslo"
    assert named["NUTS_ID: BE100; METRO: Y; Region: BE001MC"] is None
    assert [link_labels(c.context) for c in chunks if c.section == "Changes"] == [[]]
    # ingest stores each row's analysed cell values and linked labels, so a bubble reads them as they are
    assert all(c.terms is not None and c.terms.cells == cell_terms(c.text, c.context) for c in chunks)


def test_a_value_wrapped_into_the_row_below_goes_on_under_its_label(tmp_path: Path) -> None:
    """The layout of HL7 mCODE's ``IG information`` sheet: a title, label-value pairs, and a long
    description carried on in the value column of the next row. The sheet is key-value, not a table
    headed by its first pair, and the carried-on value reads under the label above it."""
    rows: list[list[object]] = [
        ["mCODE Data Dictionary"],
        ["IG name", "MinimalCommonOncologyDataElements"],
        ["# Profiles", 38],
        ["Data elements", "Group: The general area of mCODE."],
        [None, "Data Type: The kind of data that can be stored in an element."],
        ["Value sets", "Title: The name of the value set."],
    ]
    chunks = read_document(_sheet(tmp_path / "ig.xlsx", rows), OPTIONS, doc_id="ig.xlsx")
    assert [c.text for c in chunks] == [
        "mCODE Data Dictionary",
        "IG name: MinimalCommonOncologyDataElements",
        "# Profiles: 38",
        "Data elements: Group: The general area of mCODE.",
        "Data elements: Data Type: The kind of data that can be stored in an element.",
        "Value sets: Title: The name of the value set.",
    ]


def test_a_value_alone_on_the_first_row_is_no_key_value_sheet(tmp_path: Path) -> None:
    """A value with no label above it continues nothing: the sheet is not read as pairs."""
    rows: list[list[object]] = [[None, "Emissions"], ["Cotswold", "high"], ["Stroud", "low"], ["Bath", "low"]]
    chunks = read_document(_sheet(tmp_path / "t.xlsx", rows), OPTIONS, doc_id="t.xlsx")
    assert "Cotswold: high" not in [c.text for c in chunks]


def test_a_row_that_titles_the_rows_below_reads_as_itself_and_names_them(tmp_path: Path) -> None:
    """A row whose only cell is short text in the first column, over rows of two or more cells,
    titles a group of the table (a model's ``Nameplate Ratings``): it is not a value of the first
    column, and each row under it, up to the next, has it as a step of its context."""
    rows: list[list[object]] = [
        ["Offset", "Name", "Type", "Units"],
        [0, "ID", "uint16", None],
        ["Nameplate Ratings", None, None, None],
        [2, "WMaxRtg", "uint16", "W"],
        [3, "VAMaxRtg", "uint16", "VA"],
        ["Settings", None, None, None],
        [4, "WMax", "uint16", "W"],
    ]
    chunks = read_document(_sheet(tmp_path / "m.xlsx", rows), OPTIONS, doc_id="m.xlsx")
    assert [(c.text, c.context) for c in chunks] == [
        ("Offset: 0; Name: ID; Type: uint16", "m > Metadata | Offset, Name, Type, Units"),
        ("Nameplate Ratings", "m > Metadata | Offset, Name, Type, Units"),
        (
            "Offset: 2; Name: WMaxRtg; Type: uint16; Units: W",
            "m > Metadata > Nameplate Ratings | Offset, Name, Type, Units",
        ),
        (
            "Offset: 3; Name: VAMaxRtg; Type: uint16; Units: VA",
            "m > Metadata > Nameplate Ratings | Offset, Name, Type, Units",
        ),
        ("Settings", "m > Metadata | Offset, Name, Type, Units"),
        (
            "Offset: 4; Name: WMax; Type: uint16; Units: W",
            "m > Metadata > Settings | Offset, Name, Type, Units",
        ),
    ]


def test_a_sparse_table_has_no_group_titles(tmp_path: Path) -> None:
    """Where most rows have one cell (codes listed with few descriptions), a lone first cell is a
    value like the others, and a row that ends the table titles nothing."""
    rows: list[list[object]] = [
        ["Code", "Name", "Note"],
        ["A1", None, None],
        ["A2", "Second", None],
        ["A3", None, None],
        ["A4", None, None],
    ]
    chunks = read_document(_sheet(tmp_path / "c.xlsx", rows), OPTIONS, doc_id="c.xlsx")
    assert [c.text for c in chunks] == ["Code: A1", "Code: A2; Name: Second", "Code: A3", "Code: A4"]
    assert {c.context for c in chunks} == {"c > Metadata | Code, Name, Note"}


_DRAWING = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<xdr:wsDr xmlns:xdr="http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
 xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"
 xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">
<xdr:twoCellAnchor><xdr:from><xdr:col>1</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>8</xdr:row>
<xdr:rowOff>0</xdr:rowOff></xdr:from><xdr:sp><xdr:txBody><a:bodyPr/>
<a:p><a:r><a:t>Usage Instructions</a:t></a:r></a:p><a:p/>
<a:p><a:r><a:t>The overall score is a weighted average: </a:t></a:r>
<a:r><a:t>0.5*DM+0.3*CTI+0.2*T&amp;E.</a:t></a:r>
<a:br/><a:r><a:t>Defence weighs most.</a:t></a:r></a:p></xdr:txBody></xdr:sp></xdr:twoCellAnchor>
<xdr:twoCellAnchor><xdr:from><xdr:col>0</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>2</xdr:row>
<xdr:rowOff>0</xdr:rowOff></xdr:from><xdr:grpSp><xdr:sp><xdr:txBody>
<a:p><a:r><a:t>Overview Diagram</a:t></a:r>
</a:p></xdr:txBody></xdr:sp></xdr:grpSp></xdr:twoCellAnchor>
<xdr:twoCellAnchor><xdr:from><xdr:col>5</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>0</xdr:row>
<xdr:rowOff>0</xdr:rowOff></xdr:from><mc:AlternateContent>
<mc:Choice Requires="cx1"><xdr:graphicFrame/></mc:Choice>
<mc:Fallback><xdr:sp><xdr:txBody>
<a:p><a:r><a:t>This chart isn't available in your version of Excel.</a:t></a:r>
</a:p></xdr:txBody></xdr:sp></mc:Fallback></mc:AlternateContent></xdr:twoCellAnchor>
</xdr:wsDr>"""
_SHEET_RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1"
 Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/drawing"
 Target="../drawings/drawing1.xml"/></Relationships>"""


def test_a_sheets_text_boxes_are_read_after_its_rows(tmp_path: Path) -> None:
    """openpyxl does not read shapes: MITRE's INFORM tool explains its scoring in a text box. A box's
    paragraphs read as prose of its sheet (a short title joined to the next), a group's shapes too,
    down the sheet by anchor; the message Excel draws in place of a chart it cannot show does not."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Usage"
    sheet.append(["The Assessment Tool"])
    book.save(tmp_path / "raw.xlsx")
    with zipfile.ZipFile(tmp_path / "raw.xlsx") as raw, zipfile.ZipFile(tmp_path / "w.xlsx", "w") as out:
        for item in raw.infolist():
            out.writestr(item, raw.read(item.filename))
        out.writestr("xl/drawings/drawing1.xml", _DRAWING)
        out.writestr("xl/worksheets/_rels/sheet1.xml.rels", _SHEET_RELS)
    chunks = read_document(tmp_path / "w.xlsx", IngestOptions(), doc_id="w.xlsx")
    assert [c.text for c in chunks] == [
        "The Assessment Tool",
        "Overview Diagram",
        "Usage Instructions The overall score is a weighted average: 0.5*DM+0.3*CTI+0.2*T&E. Defence weighs"
        " most.",
    ]
    assert {(c.section, c.sheet_name) for c in chunks} == {("Usage", "Usage")}
    assert chunks[2].chunk_id == chunk_id("w.xlsx", "sheet=Usage/box=2/para=1+2/part=0")


def test_a_row_of_data_types_over_the_column_names_is_not_the_header(tmp_path: Path) -> None:
    """buildingSMART's bSDD upload template opens each sheet with rows labelled in a column of their
    own (``DataType | Text | Text | Boolean``, ``Example | fruit | …``) over the row of column names.
    The type row, whose values mostly repeat, keyed the example by types (``Text: fruit``) and made
    the names a data row; the names are the header, and the labelled rows are records under it."""
    rows: list[list[object]] = [
        [None, "DataType", "Text", "Text", "Text", "Text", "Text", "List of text"],
        [None, "Required?", "✅", "✅", None, None, None, None],
        [None, "Example", "fruit", "Fruit", "A ripened ovary", "Food", "Rosales", '["berry"]'],
        [],
        [None, None, "Code", "Name", "Definition", "Group", "Order", "Synonyms"],
        [None, None, "apple", "Apple", "A pome", "Food", "Rosales", '["pome"]'],
    ]
    chunks = read_document(_sheet(tmp_path / "template.xlsx", rows, "Class"), OPTIONS, doc_id="template.xlsx")
    assert {c.row_number: c.text for c in chunks} == {
        1: "DataType; Code … Order: Text; Synonyms: List of text",
        2: "Required?; Code: ✅; Name: ✅",
        3: "Example; Code: fruit; Name: Fruit; Definition: A ripened ovary; Group: Food; Order: Rosales;"
        ' Synonyms: ["berry"]',
        6: 'Code: apple; Name: Apple; Definition: A pome; Group: Food; Order: Rosales; Synonyms: ["pome"]',
    }


def test_lists_side_by_side_read_under_their_names_and_a_web_address_names_no_column(
    tmp_path: Path,
) -> None:
    """bSDD's ``(Enumerations)`` sheet sets one-column lists side by side beside a unit table with
    an API address over it: each list value read as a word alone (``Material``), and the units
    were keyed by the address. A one-column list reads under its name; an address is no name."""
    rows: list[list[object]] = [
        [None, None, None, "https://api.example.org/Unit/v1", None],
        [],
        ["ClassType", None, "Units", "Names", "Symbol"],
        ["Class", None, "cm", "centimeter", "cm"],
        ["Material", None, "m", "meter", "m"],
        *([None, None, f"u{n}", f"unit {n}", f"u{n}"] for n in range(6, 20)),
    ]
    path = _sheet(tmp_path / "enums.xlsx", rows, "(Enumerations)")
    chunks = read_document(path, OPTIONS, doc_id="enums.xlsx")
    texts = [c.text for c in chunks]
    assert "Units: cm; Names: centimeter; Symbol: cm" in texts
    assert texts[-2:] == ["ClassType: Class", "ClassType: Material"]


def test_a_note_merged_over_rows_and_columns_is_read_once(tmp_path: Path) -> None:
    """A README's paragraph merged over a block of cells was read once per row of the block (bSDD's
    note, four chunks); a category merged down one column still holds for every row it spans."""
    path = tmp_path / "readme.xlsx"
    note = "This is an Excel template for upload that has the structure of the classes and properties."
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "README"
    sheet["A1"] = note
    sheet.merge_cells("A1:D3")
    sheet["A5"], sheet["B5"] = "Instructions:", "Fill in the tabs"
    book.save(path)
    chunks = read_document(path, OPTIONS, doc_id="readme.xlsx")
    assert [c.text for c in chunks].count(note) == 1


_PLACES = st.tuples(st.integers(1, 40), st.integers(1, 12))
_VALUES = st.one_of(st.none(), st.text("ab1 ", max_size=3))


def _sheet_holding(cells: dict[tuple[int, int], str | None], merged: bool) -> Any:
    sheet = openpyxl.Workbook().active
    for (row, column), value in cells.items():
        sheet.cell(row=row, column=column, value=value)  # None: a cell held without a value (a styled one)
    if merged:
        sheet.merge_cells(start_row=1, start_column=1, end_row=2, end_column=2)
    return sheet


@given(st.dictionaries(_PLACES, _VALUES, max_size=30), st.booleans())
def test_only_the_cells_a_sheet_holds_are_read_in_row_order(
    cells: dict[tuple[int, int], str | None], merged: bool
) -> None:
    """Reading only the cells a sheet holds meets every value, in the same order, as reading every
    coordinate (which creates a cell at each empty one)."""
    everywhere = [cell for row in _sheet_holding(cells, merged).iter_rows() for cell in row]
    held = list(_present_cells(_sheet_holding(cells, merged)))
    assert _values(held) == _values(everywhere)
    assert len(held) == len(set(cells) | (_MERGED if merged else set())), "no cell is added"


_MERGED = {(1, 1), (1, 2), (2, 1), (2, 2)}  # the cells a merge of A1:B2 makes


def _values(cells: list[Any]) -> list[tuple[int, int, object]]:
    return [(cell.row, cell.column, cell.value) for cell in cells if cell.value is not None]
