"""The .docx reader: heading paths as sections, paragraphs and table rows as chunks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docx
import pytest
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import parse_xml
from ingest_files import OPTIONS, make_docx

from esbubble.core.tokens import count_tokens
from esbubble.errors import IngestError
from esbubble.ingest import read_document
from esbubble.ingest.ids import chunk_id, parent_id


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


_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_V = 'xmlns:v="urn:schemas-microsoft-com:vml"'


def _runs(paragraph: Any, xml: str) -> None:
    """Append raw inline XML (runs in wrappers) to a python-docx paragraph."""
    wrapper = parse_xml(f"<w:p {_W} {_V}>{xml}</w:p>")
    for child in list(wrapper):
        paragraph._p.append(child)


def test_text_in_smart_tags_insertions_and_fields_is_read_and_generated_lists_are_not(tmp_path: Path) -> None:
    """What Word shows is read; a table of contents, deleted text and text boxes are not."""
    document = docx.Document()
    for name in ("toc 1", "TOC Heading", "table of figures"):
        if name not in document.styles:
            document.styles.add_style(name, WD_STYLE_TYPE.PARAGRAPH)
    document.add_paragraph("Contents", style="TOC Heading")
    document.add_paragraph("1\tGlossary\t1", style="toc 1")
    document.add_paragraph("Table 1 Terms\t2", style="table of figures")
    document.add_heading("Glossary", level=1)
    caption = document.add_paragraph("Table ")
    _runs(
        caption,
        '<w:fldSimple w:instr="SEQ Table"><w:r><w:t>1</w:t></w:r></w:fldSimple><w:r><w:t> Terms</w:t></w:r>',
    )
    table = document.add_table(rows=2, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Term", "Definition"
    _runs(
        table.rows[1].cells[0].paragraphs[0],
        '<w:smartTag w:uri="urn:schemas-microsoft-com:office:smarttags" w:element="place">'
        '<w:r><w:t>Event</w:t></w:r><w:r><w:t xml:space="preserve"> </w:t></w:r>'
        '<w:smartTag w:uri="urn:schemas-microsoft-com:office:smarttags" w:element="PlaceType">'
        "<w:r><w:t>Port</w:t></w:r></w:smartTag></w:smartTag>",
    )
    table.rows[1].cells[1].text = "A display device."
    edited = document.add_paragraph("Logs are ")
    _runs(
        edited,
        '<w:ins w:id="1" w:author="a"><w:r><w:t>kept</w:t></w:r></w:ins>'
        '<w:del w:id="2" w:author="a"><w:r><w:noBreakHyphen/><w:delText>dropped</w:delText></w:r></w:del>'
        "<w:r><w:t> on board.</w:t></w:r>"
        "<w:r><w:pict><v:shape><v:textbox><w:txbxContent><w:p><w:r><w:t>Figure label</w:t></w:r></w:p>"
        "</w:txbxContent></v:textbox></v:shape></w:pict></w:r>",
    )
    path = tmp_path / "spec.docx"
    document.save(str(path))
    chunks = read_document(path, OPTIONS, doc_id="spec.docx")
    assert [(c.section, c.text) for c in chunks] == [
        ("Glossary", "Table 1 Terms"),
        ("Glossary", "Term: Event Port; Definition: A display device."),
        ("Glossary", "Logs are kept on board."),
    ]


def test_house_heading_styles_are_headings(tmp_path: Path) -> None:
    """A style based on a ``Heading n`` style, or with an outline level of its own, is a heading (as
    in Word's navigation pane); an outline level set on one paragraph by hand is not (a cover page's
    ``Version 5.1``), nor is a paragraph of a heading style given the body level."""
    document = docx.Document()
    appendix = document.styles.add_style("AppendixHeading1", WD_STYLE_TYPE.PARAGRAPH)
    appendix.base_style = document.styles["Heading 1"]
    clause = document.styles.add_style("Clause", WD_STYLE_TYPE.PARAGRAPH)
    clause.base_style = document.styles["Normal"]
    clause.element.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {_W} w:val="1"/>'))
    plain = document.styles.add_style("Plain clause", WD_STYLE_TYPE.PARAGRAPH)
    plain.base_style = clause
    plain.element.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {_W} w:val="9"/>'))
    cover = document.add_paragraph("Version 5.1")
    cover._p.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {_W} w:val="0"/>'))
    document.add_paragraph("Examples", style="AppendixHeading1")
    document.add_paragraph("Minimal log file", style="Clause")
    document.add_paragraph("A log file with one run and no results.")
    document.add_paragraph("Body text in a clause style set to the body level.", style="Plain clause")
    document.save(str(tmp_path / "h.docx"))
    options = OPTIONS.model_copy(update={"min_chunk_tokens": 0})
    chunks = read_document(tmp_path / "h.docx", options, doc_id="h.docx")
    assert [(c.section, c.text) for c in chunks] == [
        ("h.docx", "Version 5.1"),
        ("Examples > Minimal log file", "A log file with one run and no results."),
        ("Examples > Minimal log file", "Body text in a clause style set to the body level."),
    ]


def _table(document: Any, rows: list[tuple[str, ...]]) -> None:
    table = document.add_table(rows=len(rows), cols=len(rows[0]))
    for row, values in zip(table.rows, rows, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value


def test_a_key_value_table_is_one_record(tmp_path: Path) -> None:
    """Specifications describe each field in a small table whose first column labels the values
    beside it (``Description: | …``, ``Type: | String``). Its first row is no header: the table is one
    record, a single chunk ``Label: value; …`` (a lone label is its own text) whose context names the
    labels. A table with a header row is read by rows as before."""
    document = docx.Document()
    document.add_heading("mzTab-version", level=2)
    _table(
        document,
        [
            ("Description:", "The version of the mzTab file."),
            ("Type:", "String"),
            ("Mandatory", ""),
            ("Example:", "MTD mzTab-version 1.0.0"),
        ],
    )
    _table(document, [("Field:", "Type:"), ("mzTab-mode", "Enum"), ("mzTab-type", "Enum")])
    document.save(str(tmp_path / "spec.docx"))
    chunks = read_document(tmp_path / "spec.docx", OPTIONS, doc_id="spec.docx")
    record, *rows = chunks
    assert record.text == (
        "Description: The version of the mzTab file.; Type: String; Mandatory; "
        "Example: MTD mzTab-version 1.0.0"
    )
    assert record.row_number == 1 and record.section == "mzTab-version"
    assert record.context.endswith("mzTab-version | Description, Type, Example")
    # A header row whose cells end in colons is still a header when the rows below are not labels.
    assert [c.row_number for c in rows] == [2, 3]
    assert all(c.text.startswith("Field:") and c.text.endswith(": Enum") for c in rows)


def test_a_table_of_one_row_is_its_text(tmp_path: Path) -> None:
    """A one-row table (a note box) has no rows for its first row to head: it is a row of its own,
    not a header of nothing whose text is lost."""
    document = docx.Document()
    _table(document, [("Warning", "Never weld near the membrane primer: it is flammable.")])
    document.save(str(tmp_path / "note.docx"))
    chunks = read_document(tmp_path / "note.docx", OPTIONS, doc_id="note.docx")
    assert [(c.row_number, c.text) for c in chunks] == [
        (1, "Warning; Never weld near the membrane primer: it is flammable.")
    ]


def test_a_header_row_repeated_inside_a_table_is_not_a_row(tmp_path: Path) -> None:
    document = docx.Document()
    _table(
        document,
        [
            ("Sent", "Received"),
            ("Negotiate", "NegotiationResponse"),
            ("Sent", "Received"),
            ("Establish", "EstablishmentAck"),
        ],
    )
    document.save(str(tmp_path / "flow.docx"))
    chunks = read_document(tmp_path / "flow.docx", OPTIONS, doc_id="flow.docx")
    assert [(c.row_number, c.text) for c in chunks] == [
        (2, "Sent: Negotiate; Received: NegotiationResponse"),
        (4, "Sent: Establish; Received: EstablishmentAck"),
    ]


def test_a_short_line_set_all_in_bold_heads_the_front_matter_after_it(tmp_path: Path) -> None:
    """Front matter sets its headings in bold Normal text (HiSLIP's ``Warranty``, FMI's ``License of
    this document``): before the first heading in a heading style, such a line alone over text heads
    it; bold lines one after another (a title page), a bold sentence, a bold label ending in a colon,
    a line partly bold, a long bold line, and any bold line after the first styled heading (an API
    guide's ``Description`` label) stay text."""
    document = docx.Document()
    document.add_paragraph().add_run("core Flight Executive").bold = True
    document.add_paragraph().add_run("Requirements Specification").bold = True
    document.add_paragraph("Version 5.1")
    document.add_paragraph().add_run("Warranty").bold = True
    document.add_paragraph("The authors make no warranty of any kind with regard to this material.")
    document.add_paragraph().add_run("Note:").bold = True
    document.add_paragraph().add_run("Every lap is sealed before the inspection.").bold = True
    mixed = document.add_paragraph()
    mixed.add_run("Lap").bold = True
    mixed.add_run(" joints")
    long = " ".join(["word"] * 11)
    document.add_paragraph().add_run(long).bold = True
    document.add_heading("Scope", level=2)  # the body's first heading ends the front matter's
    document.add_paragraph().add_run("Description").bold = True
    document.add_paragraph("Waterproof the podium slab.")
    document.save(str(tmp_path / "front.docx"))
    chunks = read_document(tmp_path / "front.docx", OPTIONS, doc_id="front.docx")
    assert [(c.section, c.text) for c in chunks] == [
        ("front.docx", "core Flight Executive"),
        ("front.docx", "Requirements Specification"),
        ("front.docx", "Version 5.1"),
        ("Warranty", "The authors make no warranty of any kind with regard to this material."),
        ("Warranty", "Note:"),
        ("Warranty", "Every lap is sealed before the inspection."),
        ("Warranty", "Lap joints"),
        ("Warranty", long),
        ("Scope", "Description"),
        ("Scope", "Waterproof the podium slab."),
    ]


def test_a_group_header_over_column_names_heads_each_column(tmp_path: Path) -> None:
    """A header cell spanning columns (``Behavior``) over a second header row of their names reads as
    ``Group Name`` per column; a name merged down both rows keeps its own; a data cell is paired with
    the header of its own grid column; the two header rows repeated after a page break are no rows.
    Without this the second header row was a row and the group's values went unnamed."""
    document = docx.Document()
    table = document.add_table(rows=5, cols=4)
    table.cell(0, 0).merge(table.cell(1, 0)).text = "Control code"
    table.cell(0, 1).merge(table.cell(0, 3)).text = "Behavior"
    for column, name in enumerate(("Remote", "Lockout", "Local"), start=1):
        table.cell(1, column).text = name
    for column, value in enumerate(("1 - Enable remote", "T", "nc", "F")):
        table.cell(2, column).text = value
    table.cell(3, 0).text = "Control code"
    for column, name in enumerate(("Remote", "Lockout", "Local"), start=1):
        table.cell(3, column).text = name
    table.cell(4, 0).text = "2 - Go to local"
    table.cell(4, 1).merge(table.cell(4, 2)).text = "nc"
    table.cell(4, 3).text = "T"
    document.save(str(tmp_path / "modes.docx"))
    chunks = read_document(tmp_path / "modes.docx", OPTIONS, doc_id="modes.docx")
    assert [(c.row_number, c.text) for c in chunks] == [
        (3, "Control code: 1 - Enable remote; Behavior Remote: T; Behavior Lockout: nc; Behavior Local: F"),
        (5, "Control code: 2 - Go to local; Behavior Remote: nc; Behavior Local: T"),
    ]
    assert chunks[0].context.endswith("| Control code, Behavior Remote, Behavior Lockout, Behavior Local")


def test_a_superscript_exponent_is_written_with_a_caret(tmp_path: Path) -> None:
    """``2`` followed by a superscript ``8`` is 2 to the 8th, not twenty-eight; a superscript letter
    right after a word is a footnote mark and stands apart from it (ADDA's table columns read
    ``# of vectorsb``, ``symYb``), as the PDF reader sets it; a number after a word or an ordinal's
    ``th`` is left as it was."""
    document = docx.Document()
    paragraph = document.add_paragraph("Range 0..2")
    paragraph.add_run("8").font.superscript = True
    paragraph.add_run("-1; see note")
    paragraph.add_run("3").font.superscript = True
    paragraph.add_run(", the 0")
    paragraph.add_run("th").font.superscript = True
    paragraph.add_run(" element; not 2")
    paragraph.add_run("8")  # not superscript: twenty-eight
    paragraph.add_run("; # of vectors")
    paragraph.add_run("b").font.superscript = True
    paragraph.add_run(" and symY")
    paragraph.add_run("b").font.superscript = True
    paragraph.add_run(" of x")
    document.save(str(tmp_path / "range.docx"))
    chunks = read_document(tmp_path / "range.docx", OPTIONS, doc_id="range.docx")
    assert [c.text for c in chunks] == [
        "Range 0..2^8-1; see note3, the 0th element; not 28; # of vectors b and symY b of x"
    ]


_M = 'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"'


def _math(xml: str) -> str:
    return f"<m:oMath {_M} {_W}>{xml}</m:oMath>"


def test_an_equation_reads_as_linear_text(tmp_path: Path) -> None:
    """Office Math is a tree of math objects, not runs: ADDA's manual lost every equation (``the
    number of dipoles in a computational box () …``, a numbered equation read as ``(4)`` alone).
    Each object reads as one would type it: ``^`` a superscript, ``_`` a subscript, ``/`` a
    fraction, a delimiter with its characters, ``√`` a radical, an n-ary sign before its limits."""
    document = docx.Document()
    paragraph = document.add_paragraph("Dipoles in the box (")
    run = "<m:r><m:t>{}</m:t></m:r>"
    _runs(paragraph, _math(run.format("N")))
    paragraph.add_run(") scale as ")
    _runs(
        paragraph,
        _math(
            f"<m:sSup><m:e>{run.format('N')}</m:e><m:sup>{run.format('3')}</m:sup></m:sSup>"
            f"<m:sSub><m:e>{run.format('n')}</m:e><m:sub>{run.format('x')}</m:sub></m:sSub>"
            f"{run.format('=')}<m:f><m:num>{run.format('λ')}</m:num><m:den><m:d>"
            f'<m:dPr><m:begChr m:val="|"/><m:endChr m:val="|"/></m:dPr><m:e>{run.format("m")}</m:e>'
            f"</m:d></m:den></m:f>{run.format('+')}<m:rad><m:radPr/><m:deg/><m:e>{run.format('x')}</m:e></m:rad>"
            f'<m:nary><m:naryPr><m:chr m:val="∑"/></m:naryPr><m:sub>{run.format("i")}</m:sub><m:sup/>'
            f"<m:e><m:d><m:e>{run.format('a')}</m:e><m:e>{run.format('b')}</m:e></m:d></m:e></m:nary>"
        ),
    )
    paragraph.add_run(".")
    document.save(str(tmp_path / "math.docx"))
    chunks = read_document(tmp_path / "math.docx", OPTIONS, doc_id="math.docx")
    assert [c.text for c in chunks] == ["Dipoles in the box (N) scale as N^3n_x=λ/|m|+√x∑_i(a|b)."]


def test_an_equation_that_is_a_number_after_a_digit_is_read_as_written(tmp_path: Path) -> None:
    """An equation has no run properties to say it is set as a superscript: one holding a number
    right after a digit (``of size 2`` then the equation ``3``) is its own text, not a power, and
    the file still reads (asked for its run properties, the reader failed on the whole file)."""
    document = docx.Document()
    paragraph = document.add_paragraph("A grid of size 2")
    _runs(paragraph, _math("<m:r><m:t>3</m:t></m:r>"))
    paragraph.add_run(" dipoles wide.")
    document.save(str(tmp_path / "grid.docx"))
    chunks = read_document(tmp_path / "grid.docx", OPTIONS, doc_id="grid.docx")
    assert [c.text for c in chunks] == ["A grid of size 23 dipoles wide."]


def test_a_code_listing_is_one_block(tmp_path: Path) -> None:
    """A listing's lines, each a paragraph of a code style or set in a monospaced font, are one block
    (as a Markdown fence is), not a chunk per line; text around it stays apart."""
    document = docx.Document()
    document.styles.add_style("code", WD_STYLE_TYPE.PARAGRAPH).base_style = document.styles["Normal"]
    document.add_paragraph("Set the port's default PCP:")
    for line in ("sai_attribute_t attr;", "attr.id = SAI_DOT1BR_PORT_ATTR_PCP;", "attr.value.u8 = pcp;"):
        document.add_paragraph(line, style="code")
    document.add_paragraph("The device inserts it into untagged frames.")
    for line in ("$ esbubble ingest docs", "$ esbubble eval queries.jsonl"):
        document.add_paragraph().add_run(line).font.name = "Consolas"
    document.save(str(tmp_path / "code.docx"))
    chunks = read_document(tmp_path / "code.docx", OPTIONS, doc_id="code.docx")
    assert [c.text for c in chunks] == [
        "Set the port's default PCP:",
        "sai_attribute_t attr; attr.id = SAI_DOT1BR_PORT_ATTR_PCP; attr.value.u8 = pcp;",
        "The device inserts it into untagged frames.",
        "$ esbubble ingest docs $ esbubble eval queries.jsonl",
    ]


def test_a_field_table_without_a_header_row_reads_each_field(tmp_path: Path) -> None:
    """A field table that starts with its first field (``agreementPeriod | A time period. The time
    period during which …``) has no header row: a first row holding a sentence (more than five words
    ending with a full stop) is a row, so no field's values are read under another field's name.
    Short labels over it stay a header."""
    document = docx.Document()
    _table(
        document,
        [
            ("agreementPeriod", "A time period. The time period during which the Agreement is in effect."),
            ("completionDate", "A date time. Date at which the agreement is completed."),
        ],
    )
    _table(document, [("Mandatory Attributes", "Rule"), ("engagedPartyRole", "At least one.")])
    document.save(str(tmp_path / "fields.docx"))
    chunks = read_document(tmp_path / "fields.docx", OPTIONS, doc_id="fields.docx")
    assert [(c.row_number, c.text) for c in chunks] == [
        (1, "agreementPeriod; A time period. The time period during which the Agreement is in effect."),
        (2, "completionDate; A date time. Date at which the agreement is completed."),
        (2, "Mandatory Attributes: engagedPartyRole; Rule: At least one."),
    ]


def test_an_error_table_that_starts_with_its_first_code_has_no_header_row(tmp_path: Path) -> None:
    """An API guide's error table lists its codes with no header row (``400 | Bad Request``, ``404 |
    Not Found``): a first row whose first cell is a number alone is a row, so code 400 is not lost
    as a column name and the others read as themselves, not ``400: 404; Bad Request: Not Found``.
    A header over years (``Region | 2019``) stays a header."""
    document = docx.Document()
    _table(document, [("400", "Bad Request"), ("404", "Not Found")])
    _table(document, [("Region", "2019"), ("North", "12")])
    document.save(str(tmp_path / "errors.docx"))
    chunks = read_document(tmp_path / "errors.docx", OPTIONS, doc_id="errors.docx")
    assert [(c.row_number, c.text) for c in chunks] == [
        (1, "400; Bad Request"),
        (2, "404; Not Found"),
        (2, "Region: North; 2019: 12"),
    ]


def _symbol(paragraph: Any, font: str, char: str) -> None:
    """A Word symbol (Insert > Symbol) in its own run of ``paragraph``."""
    run = paragraph.add_run()
    run._r.append(parse_xml(f'<w:sym {_W} w:font="{font}" w:char="{char}"/>'))


def test_symbols_read_as_the_signs_they_show(tmp_path: Path) -> None:
    """Word writes Insert > Symbol as ``w:sym`` (a font and a code), which python-docx's text leaves
    out: PEST++'s ``Φ ≤ …`` lost its signs, mzTab's tables of ticks their ticks."""
    document = docx.Document()
    paragraph = document.add_paragraph("The objective function ")
    _symbol(paragraph, "Symbol", "F046")
    paragraph.add_run(" must stay ")
    _symbol(paragraph, "Symbol", "F0A3")
    paragraph.add_run(" 2.5 and the field is mandatory ")
    _symbol(paragraph, "Wingdings", "F0FC")
    _symbol(paragraph, "Wingdings", "F021")  # a pencil: a picture, not text
    document.save(str(tmp_path / "signs.docx"))
    (chunk,) = read_document(tmp_path / "signs.docx", OPTIONS, doc_id="signs.docx")
    assert chunk.text == "The objective function Φ must stay ≤ 2.5 and the field is mandatory ✓"


def test_a_symbol_fonts_code_typed_in_a_run_of_that_font_reads_as_its_sign(tmp_path: Path) -> None:
    """HiSLIP's lock table types Wingdings' arrow as text (U+F0E0 in a run set in Wingdings), not as
    a ``w:sym``: it read as a private-use character. A private-use code in a run of a text font
    renders as nothing a reader can use, and reads as nothing."""
    document = docx.Document()
    paragraph = document.add_paragraph("holder of shared lock ")
    paragraph.add_run("\uf0e0").font.name = "Wingdings"
    paragraph.add_run(" succeeds\uf0e0")
    document.save(str(tmp_path / "locks.docx"))
    (chunk,) = read_document(tmp_path / "locks.docx", OPTIONS, doc_id="locks.docx")
    assert chunk.text == "holder of shared lock → succeeds"


def test_a_tables_first_row_spanning_it_with_a_few_words_titles_its_rows(tmp_path: Path) -> None:
    """WMO's CDMS requirements set each requirement in a table under a row of one merged cell,
    ``Requirement 1``: read as a row, each title was a chunk of two words cut from its identifier
    and statement (103 of them). It is a step of the rows' context, as a caption is; the rows keep
    their numbers."""
    document = docx.Document()
    document.add_heading("Observation Storage", 1)
    table = document.add_table(rows=3, cols=2)
    table.cell(0, 0).merge(table.cell(0, 1)).text = "Requirement 2"
    for row, values in (
        (1, ("Identifier", "/req/core/observation-storage")),
        (2, ("Statement", "The system SHALL store observations.")),
    ):
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    document.save(str(tmp_path / "titled.docx"))
    chunks = read_document(tmp_path / "titled.docx", OPTIONS, doc_id="titled.docx")
    assert [(c.context, c.row_number, c.text) for c in chunks] == [
        ("titled > Observation Storage > Requirement 2", 2, "Identifier; /req/core/observation-storage"),
        (
            "titled > Observation Storage > Requirement 2",
            3,
            "Statement; The system SHALL store observations.",
        ),
    ]


def test_a_paragraph_in_a_heading_style_without_a_letter_heads_nothing(tmp_path: Path) -> None:
    """WMO's CDMS requirements set a cover's ``1`` in Heading 1: it named the cover table's section."""
    document = docx.Document()
    document.add_heading("1", 1)
    document.add_paragraph("World Meteorological Organization, version 0.5.0, a draft.")
    document.add_heading("Scope", 1)
    document.add_paragraph("This document defines the requirements of a climate data system.")
    document.save(str(tmp_path / "cover.docx"))
    chunks = read_document(tmp_path / "cover.docx", OPTIONS, doc_id="cover.docx")
    assert [(c.section, c.text) for c in chunks] == [
        ("cover.docx", "1"),
        ("cover.docx", "World Meteorological Organization, version 0.5.0, a draft."),
        ("Scope", "This document defines the requirements of a climate data system."),
    ]


def test_a_caption_right_above_a_table_names_its_rows(tmp_path: Path) -> None:
    """HiSLIP's tables are captioned above (``Table 14 HiSLIP Defined Fatal Error Codes``, in Word's
    ``Caption`` style): each caption was a chunk of a few words, or glued to the end of the paragraph
    before it, and named no row. It is a step of its table's rows' context; a caption over no table
    (a figure's) is text."""
    document = docx.Document()
    document.add_heading("Fatal Error Detection", 1)
    document.add_paragraph("The server closes the connection after a fatal error.")
    document.add_paragraph("Table 14 HiSLIP Defined Fatal Error Codes", style="Caption")
    _table(
        document, [("Code", "Meaning"), ("0", "Unidentified error"), ("1", "Poorly formed message header")]
    )
    document.add_paragraph("Figure 3 The lock states", style="Caption")
    document.add_paragraph("A client holding the exclusive lock may release it at any time.")
    document.save(str(tmp_path / "caption.docx"))
    chunks = read_document(tmp_path / "caption.docx", OPTIONS, doc_id="caption.docx")
    assert [(c.context, c.text) for c in chunks] == [
        ("caption > Fatal Error Detection", "The server closes the connection after a fatal error."),
        (
            "caption > Fatal Error Detection > Table 14 HiSLIP Defined Fatal Error Codes | Code, Meaning",
            "Code: 0; Meaning: Unidentified error",
        ),
        (
            "caption > Fatal Error Detection > Table 14 HiSLIP Defined Fatal Error Codes | Code, Meaning",
            "Code: 1; Meaning: Poorly formed message header",
        ),
        ("caption > Fatal Error Detection", "Figure 3 The lock states"),
        (
            "caption > Fatal Error Detection",
            "A client holding the exclusive lock may release it at any time.",
        ),
    ]


def test_a_caption_in_a_house_style_named_for_captions_names_its_table(tmp_path: Path) -> None:
    """ADDA's manual captions its tables in a style ``Table caption my``: read as text, ``Table 3.
    Iterative solvers.`` was glued to the end of the paragraph before the table."""
    document = docx.Document()
    document.styles.add_style("Table caption my", WD_STYLE_TYPE.PARAGRAPH)
    document.add_paragraph("The choice of initial field is shown in the log of every run of the program.")
    document.add_paragraph("Table 3. Iterative solvers.", style="Table caption my")
    _table(document, [("<type>", "Name"), ("bcgs2", "Bi-CGStab(2)")])
    document.save(str(tmp_path / "solvers.docx"))
    chunks = read_document(tmp_path / "solvers.docx", OPTIONS, doc_id="solvers.docx")
    assert [(c.context, c.text) for c in chunks] == [
        ("solvers", "The choice of initial field is shown in the log of every run of the program."),
        ("solvers > Table 3. Iterative solvers. | <type>, Name", "<type>: bcgs2; Name: Bi-CGStab(2)"),
    ]


def test_a_table_in_a_cell_is_a_table_of_its_own_or_a_value_of_a_record(tmp_path: Path) -> None:
    """An XML schema's element table holds the table of the element's attributes in a cell (3MF's
    core specification): its rows are rows of their own, which the cell's text left out. In a
    key-value table, a record read as one chunk, a table in a cell is one of its values (mzTab's
    ``Mandatory`` field holds a table of ticks per file type)."""
    document = docx.Document()
    document.add_heading("Element <model>", 1)
    outer = document.add_table(rows=2, cols=2)
    outer.cell(0, 0).text, outer.cell(1, 0).text = "diagram", "attributes"
    inner = outer.cell(1, 1).add_table(rows=3, cols=3)
    for row, values in zip(inner.rows, [("Name", "Type", "Default"), ("unit", "ST_Unit", "millimeter"),
                                        ("xml:lang", "xs:language", "")], strict=True):  # fmt: skip
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("mzTab-version", 1)
    record = document.add_table(rows=3, cols=2)
    record.cell(0, 0).text, record.cell(0, 1).text = "Description:", "The version of the mzTab file."
    record.cell(1, 0).text = "Mandatory"
    ticks = record.cell(1, 1).add_table(rows=2, cols=3)
    ticks.cell(0, 1).text, ticks.cell(0, 2).text, ticks.cell(1, 0).text = (
        "Summary",
        "Complete",
        "Quantification",
    )
    for column in (1, 2):
        _symbol(ticks.cell(1, column).paragraphs[0], "Wingdings", "F0FC")
    record.cell(2, 0).text, record.cell(2, 1).text = "Type:", "String"
    document.save(str(tmp_path / "schema.docx"))
    chunks = read_document(tmp_path / "schema.docx", OPTIONS, doc_id="schema.docx")
    assert [(c.section, c.text) for c in chunks] == [
        ("Element <model>", "diagram"),
        ("Element <model>", "attributes"),
        ("Element <model>", "Name: unit; Type: ST_Unit; Default: millimeter"),
        ("Element <model>", "Name: xml:lang; Type: xs:language"),
        (
            "mzTab-version",
            "Description: The version of the mzTab file.; "
            "Mandatory: Quantification; Summary: ✓; Complete: ✓; Type: String",
        ),
    ]


def test_a_table_of_one_column_is_one_text(tmp_path: Path) -> None:
    """A one-column table is a box around text (``Request`` over its ``GET …`` line, ``Response`` over
    its body), not a table of values: it reads as one text, so no row is a one-word chunk."""
    document = docx.Document()
    _table(
        document,
        [("Request",), ("GET /agreement/9706 Accept: application/json",), ("Response",), ("200 {}",)],
    )
    _table(document, [("",)])
    document.save(str(tmp_path / "box.docx"))
    chunks = read_document(tmp_path / "box.docx", OPTIONS, doc_id="box.docx")
    assert [(c.row_number, c.text) for c in chunks] == [
        (1, "Request GET /agreement/9706 Accept: application/json Response 200 {}")
    ]


def _in_control(*elements: Any, gallery: str = "") -> Any:
    """Wrap ``elements`` (body paragraphs or tables, rows, cells, or a cell's paragraphs: siblings, in
    order) in a content control (``w:sdt``) standing where they stood; ``gallery`` makes it a
    building block from that Word gallery."""
    part = f'<w:docPartObj><w:docPartGallery w:val="{gallery}"/></w:docPartObj>' if gallery else "<w:tag/>"
    control = parse_xml(f"<w:sdt {_W}><w:sdtPr>{part}</w:sdtPr><w:sdtContent/></w:sdt>")
    elements[0].addprevious(control)
    for element in elements:
        control[-1].append(element)  # lxml moves the element into the control
    return control


def test_paragraphs_in_content_controls_are_read_in_place(tmp_path: Path) -> None:
    """A content control around paragraphs (Google Docs exports wrap every paragraph in one: DataCite's
    Metadata Kernel 4.3 read as its DOI alone) is read as its paragraphs where it stands, a heading
    in one heading what follows, controls nested in controls and run-level ones included. A table of
    contents from Word's gallery is still not read, whatever its paragraphs' style."""
    document = docx.Document()
    contents = document.add_paragraph("Contents Scope 1 Terms 2")
    document.add_paragraph("Intro before any heading.")
    scope = document.add_heading("Scope", level=1)
    basement = document.add_paragraph("Waterproof the ")
    _runs(basement, "<w:sdt><w:sdtContent><w:r><w:t>basement.</w:t></w:r></w:sdtContent></w:sdt>")
    podium = document.add_heading("Podium", level=2)
    slab = document.add_paragraph("Waterproof the podium slab.")
    terms = document.add_heading("Terms", level=1)
    document.add_paragraph("Payment within 30 days.")
    _in_control(contents._p, gallery="Table of Contents")
    _in_control(scope._p, basement._p)
    _in_control(podium._p, _in_control(slab._p))
    _in_control(terms._p)
    document.save(str(tmp_path / "memo.docx"))
    chunks = read_document(tmp_path / "memo.docx", OPTIONS, doc_id="memo.docx")
    assert [(c.section, c.text) for c in chunks] == [
        ("memo.docx", "Intro before any heading."),
        ("Scope", "Waterproof the basement."),
        ("Scope > Podium", "Waterproof the podium slab."),
        ("Terms", "Payment within 30 days."),
    ]


def test_table_rows_and_cells_in_content_controls_are_read(tmp_path: Path) -> None:
    """Rows, cells and a cell's paragraphs in content controls are the table's own: the header cell's
    text in a control heads the rows, a row in a control is a row (numbered in the table), a cell in
    one is a value, and a cell merged with the one above across a row in a control reads its text."""
    document = docx.Document()
    document.add_heading("Rates", level=1)
    _table(document, [("Item", "Rate"), ("Membrane", "$68.50"), ("Joint", "$138.00"), ("", "$140.00")])
    table = document.tables[0]
    table.cell(2, 0).merge(table.cell(3, 0))
    header, membrane, joint, merged = (row._tr for row in table.rows)  # python-docx skips rows in controls
    _in_control(header.tc_lst[0].p_lst[0])
    _in_control(membrane)
    _in_control(joint.tc_lst[1])
    _in_control(merged)
    document.save(str(tmp_path / "rates.docx"))
    chunks = read_document(tmp_path / "rates.docx", OPTIONS, doc_id="rates.docx")
    assert [(c.section, c.row_number, c.text) for c in chunks] == [
        ("Rates", 2, "Item: Membrane; Rate: $68.50"),
        ("Rates", 3, "Item: Joint; Rate: $138.00"),
        ("Rates", 4, "Item: Joint; Rate: $140.00"),
    ]
