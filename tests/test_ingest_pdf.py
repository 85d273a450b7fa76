"""The PDF reader: pages, paragraphs, headings as sections, and refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF
from fpdf.fonts import CORE_FONTS_CHARWIDTHS
from ingest_files import OPTIONS, SAMPLE, make_pdf
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject

from esbubble.core.tokens import count_tokens
from esbubble.errors import IngestError
from esbubble.ingest import IngestOptions, read_document
from esbubble.ingest.ids import chunk_id
from esbubble.ingest.pdf import (
    _Line,
    drop_furniture,
    heading_path,
    headings_named,
    join_lines,
    line_text,
    run_width,
    shown_text,
    title_tokens,
)
from esbubble.models import Chunk


def test_pages_paragraphs_and_heading_sections(tmp_path: Path) -> None:
    chunks = read_document(make_pdf(tmp_path / "s.pdf"), OPTIONS, doc_id="s.pdf")
    assert [(c.page, c.section, c.text) for c in chunks] == [
        (1, "1. General", "First paragraph about the general scope of the job."),
        (1, "1. General", "Second paragraph on access."),
        (2, "2. Warranty", "The warranty period is ten years from practical completion."),
    ]
    assert [c.chunk_id for c in chunks] == [
        chunk_id("s.pdf", "page=1/para=0/part=0"),
        chunk_id("s.pdf", "page=1/para=1/part=0"),
        chunk_id("s.pdf", "page=2/para=0/part=0"),
    ]
    assert {c.bucket for c in chunks} == {"PDF"} and {c.source_type for c in chunks} == {"pdf"}
    assert all(c.token_count == count_tokens(c.text) for c in chunks)
    assert chunks == read_document(tmp_path / "s.pdf", OPTIONS, doc_id="s.pdf")


def test_bucket_pdf_can_be_mapped(tmp_path: Path) -> None:
    options = IngestOptions.model_validate({"buckets": {"map": {"PDF": "Documents"}}})
    chunks = read_document(make_pdf(tmp_path / "s.pdf"), options, doc_id="s.pdf")
    assert {c.bucket for c in chunks} == {"Documents"}


def test_long_paragraph_is_segmented_within_its_page(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(
        0, 6, "Every lap is sealed and rolled flat before inspection. " * 40, new_x="LMARGIN", new_y="NEXT"
    )
    pdf.output(str(tmp_path / "long.pdf"))
    chunks = read_document(tmp_path / "long.pdf", IngestOptions(max_chunk_tokens=50), doc_id="long")
    assert len(chunks) > 3 and all(c.token_count <= 50 and c.page == 1 for c in chunks)
    assert all(c.text.endswith("inspection.") for c in chunks)  # cut at sentence boundaries
    assert chunks[0].section == "long.pdf"  # no heading: the file name


def test_encrypted_pdf_is_refused(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 12)
    pdf.cell(0, 10, "secret")
    pdf.set_encryption(owner_password="owner", user_password="user")
    pdf.output(str(tmp_path / "locked.pdf"))
    with pytest.raises(IngestError, match=r"locked\.pdf: PDF is encrypted \(remove the password"):
        read_document(tmp_path / "locked.pdf", OPTIONS, doc_id="locked")


def test_pdf_without_text_is_refused(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.rect(10, 10, 50, 50)
    pdf.output(str(tmp_path / "scan.pdf"))
    with pytest.raises(IngestError, match="no extractable text"):
        read_document(tmp_path / "scan.pdf", OPTIONS, doc_id="scan")


def test_corrupt_pdf_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf\n")
    with pytest.raises(IngestError, match=r"bad\.pdf: not a readable PDF"):
        read_document(tmp_path / "bad.pdf", OPTIONS, doc_id="bad")


def test_sample_specification() -> None:
    chunks = read_document(SAMPLE / "specification.pdf", OPTIONS, doc_id="specification.pdf")
    assert {c.page for c in chunks} == {1, 2, 3}
    sections = list(dict.fromkeys(c.section for c in chunks))
    assert sections[0] == "1. General" and sections[-1] == "6. Warranty" and len(sections) == 6
    warranty = [c for c in chunks if c.section == "6. Warranty"]
    assert len(warranty) == 1 and "10 year warranty" in warranty[0].text


class _Paged(FPDF):
    """A report with a running header, a page-number footer and a dot-leader table of contents."""

    def header(self) -> None:
        self.set_font("Helvetica", "", 9)
        self.cell(
            0,
            6,
            "Harbourside Residences - Waterproofing Specification - Rev 3",
            new_x="LMARGIN",
            new_y="NEXT",
        )
        self.ln(4)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 9)
        self.cell(0, 6, f"Page {self.page_no()} of 4", align="C")


def _paged_pdf(path: Path) -> Path:
    pdf = _Paged()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 9, "Contents", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    for entry, page in [("1. General", 2), ("2. Materials", 3), ("3. Warranty", 4)]:
        pdf.multi_cell(0, 6, f"{entry} {'.' * 60} {page}", new_x="LMARGIN", new_y="NEXT")
    for heading, text in [
        ("1. General", "This specification covers the waterproofing of the basement and the podium."),
        ("2. Materials", "Sheet membranes shall be stored on pallets under cover until they are laid."),
        ("3. Warranty", "The warranty period is ten years from the date of practical completion."),
    ]:
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 16)
        pdf.multi_cell(0, 9, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def test_page_numbers_running_heads_and_contents_lines_are_dropped(tmp_path: Path) -> None:
    chunks = read_document(_paged_pdf(tmp_path / "spec.pdf"), OPTIONS, doc_id="spec.pdf")
    assert [(c.page, c.section, c.text) for c in chunks] == [
        (2, "1. General", "This specification covers the waterproofing of the basement and the podium."),
        (3, "2. Materials", "Sheet membranes shall be stored on pallets under cover until they are laid."),
        (4, "3. Warranty", "The warranty period is ten years from the date of practical completion."),
    ]
    assert chunks[0].chunk_id == chunk_id("spec.pdf", "page=2/para=0/part=0")


def test_short_pdf_paragraphs_join_within_their_page(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    for text in ["Note:", "Every lap is sealed and rolled flat before the inspection is booked.", "See 4.2."]:
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(5)
    pdf.output(str(tmp_path / "n.pdf"))
    [chunk] = read_document(tmp_path / "n.pdf", IngestOptions(), doc_id="n.pdf")
    assert chunk.text == "Note: Every lap is sealed and rolled flat before the inspection is booked. See 4.2."
    assert chunk.chunk_id == chunk_id("n.pdf", "page=1/para=0+1+2/part=0")


def test_a_run_set_a_little_above_the_line_is_on_it(tmp_path: Path) -> None:
    """LaTeX raises the ``+`` of "match+action" 2 points and sets it smaller: read as a line of its
    own, it cut the sentence into two chunks at every line it opened, the second starting ``+
    action``. Set right of where the line's last run starts, less than half its size up, it is on
    the line; a line a full line below is not."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    lines = [
        ("Each packet is processed by a sequence of match", "action tables, each of which"),
        ("matches on header fields, a parser first extracting them. The", "action part then"),
    ]
    y = 40.0
    for before, after in lines:
        pdf.set_font("Helvetica", "", 11)
        pdf.text(20, y, before)
        x = 20 + pdf.get_string_width(before)
        pdf.set_font("Helvetica", "", 9)
        pdf.text(x, y - 0.7, "+")
        x += pdf.get_string_width("+")
        pdf.set_font("Helvetica", "", 11)
        pdf.text(x, y, after)
        y += 5.0
    pdf.output(str(tmp_path / "p4.pdf"))
    [chunk] = read_document(_with_widths(tmp_path / "p4.pdf"), IngestOptions(), doc_id="p4.pdf")
    assert chunk.text == (
        "Each packet is processed by a sequence of match+action tables, each of which "
        "matches on header fields, a parser first extracting them. The+action part then"
    )


def test_words_hyphenated_at_a_line_end_are_whole_again(tmp_path: Path) -> None:
    """Typeset lines break words at the margin; the chunk holds the word, not two halves the engine
    would index as terms no question uses. A compound the document writes with its hyphen keeps it."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    lines = [
        "Variables are exported to child processes via the envi-",
        "ronment, and a run-time file is kept for each run-",
        "time service; pre- and post-processing use the RLE-",
        "coded form, which is hard-",
        "to-find. The next line starts a Sentence-",
        "Case word.",
    ]
    pdf.multi_cell(0, 6, "\n".join(lines), new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "h.pdf"))
    [chunk] = read_document(tmp_path / "h.pdf", IngestOptions(), doc_id="h.pdf")
    assert chunk.text == (
        "Variables are exported to child processes via the environment, and a run-time file is kept"
        " for each run-time service; pre- and post-processing use the RLE-coded form, which is"
        " hard-to-find. The next line starts a Sentence- Case word."
    )


@pytest.mark.parametrize(
    ("lines", "words", "joined"),
    [
        (["the envi-", "ronment"], set(), "the environment"),
        (["a run-", "time file"], {"run-time"}, "a run-time file"),
        (["a run-", "time file"], {"run-time", "runtime"}, "a runtime file"),  # the document closes it
        (["pre-", "and post-"], set(), "pre- and post-"),
        (["hard-", "to-find"], set(), "hard-to-find"),
        (["E-", "mail"], set(), "E-mail"),
        (["YYMMDDhhmm-", "hh"], set(), "YYMMDDhhmm-hh"),
        (["IMPLEMEN-", "TATION"], set(), "IMPLEMEN- TATION"),  # upper case, never written whole: as it is
        (["the WISH-", "BONE bus"], {"wishbone"}, "the WISHBONE bus"),  # the document writes it whole
        (["4-WSM-", "VALID"], {"valid"}, "4-WSM- VALID"),  # a figure's labels
        (["range 1 -", "9"], set(), "range 1 - 9"),
        (["the header_-", "instance is"], set(), "the header_instance is"),  # broken after an underscore
        (["a_-", "- b"], set(), "a_- - b"),
        (["one", "two"], set(), "one two"),
    ],
)
def test_join_lines_reads_a_line_end_hyphen_against_the_documents_words(
    lines: list[str], words: set[str], joined: str
) -> None:
    assert join_lines(lines, frozenset(words)) == joined


def test_headings_form_a_path_and_a_bold_first_word_is_no_heading(tmp_path: Path) -> None:
    """A numbered heading sits at its number's depth, an unnumbered one (a table's header row) below
    the last numbered heading; each chunk's context carries the whole path. A table row that opens
    with a bold word is text, not a heading that would swallow it."""
    pdf = FPDF()
    pdf.add_page()

    def line(text: str, style: str = "", size: int = 11) -> None:
        pdf.set_font("Helvetica", style, size)
        pdf.cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")

    line("5. The /var Hierarchy", "B", 16)
    line("Variable data files live here.")
    pdf.ln(6)
    line("5.10. /var/log : Log files", "B", 13)
    line("This directory contains miscellaneous log files.")
    pdf.ln(6)
    line("5.10.2. Specific Options", "B", 11)
    line("The following files must be in /var/log.")
    pdf.ln(6)
    line("File Description", "B", 11)
    pdf.set_font("Helvetica", "B", 11)
    pdf.write(8, "lastlog")
    pdf.set_font("Helvetica", "", 11)
    pdf.write(8, " record of last login of each user and of every later session")
    pdf.ln(14)
    line("5.11. /var/mail : User mailbox files", "B", 13)
    line("Mailbox files are stored in a standard format.")
    pdf.output(str(tmp_path / "fhs.pdf"))
    chunks = read_document(tmp_path / "fhs.pdf", IngestOptions(min_chunk_tokens=0), doc_id="fhs.pdf")
    assert [(c.section, c.context, c.text) for c in chunks] == [
        ("5. The /var Hierarchy", "fhs > 5. The /var Hierarchy", "Variable data files live here."),
        (
            "5.10. /var/log : Log files",
            "fhs > 5. The /var Hierarchy > 5.10. /var/log : Log files",
            "This directory contains miscellaneous log files.",
        ),
        (
            "5.10.2. Specific Options",
            "fhs > 5. The /var Hierarchy > 5.10. /var/log : Log files > 5.10.2. Specific Options",
            "The following files must be in /var/log.",
        ),
        (
            "File Description",
            "fhs > 5. The /var Hierarchy > 5.10. /var/log : Log files > 5.10.2. Specific Options"
            " > File Description",
            "lastlog record of last login of each user and of every later session",
        ),
        (
            "5.11. /var/mail : User mailbox files",
            "fhs > 5. The /var Hierarchy > 5.11. /var/mail : User mailbox files",
            "Mailbox files are stored in a standard format.",
        ),
    ]


def test_a_header_rows_cells_wrapped_over_two_lines_are_read_into_it(tmp_path: Path) -> None:
    """A header row whose cells wrap (``Tar-``/``get``, ``Meas.``/``Cond.``) is drawn as its one-line
    cells, then each wrapped cell's lines half a line above and below it. Read apart, ``Max`` and
    ``Comment`` were headings, and the rows below sat in a section ``Comment``."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.text(10, 20, "2.10 Schottky diode")
    pdf.set_font("Helvetica", "", 11)
    pdf.text(10, 32, "The diode uses the buried layer as its cathode, as the process describes.")
    pdf.set_font("Helvetica", "B", 11)
    for x, label in ((10, "Parameter"), (45, "Name"), (75, "Unit"), (120, "Max"), (165, "Comment")):
        pdf.text(x, 46, label)
    for x, upper, lower in ((95, "Tar-", "get"), (140, "Meas.", "Cond.")):
        pdf.text(x, 43, upper)
        pdf.text(x, 49, lower)
    for y, values in ((58, ("Diode Voltage", "VFNBL1", "V", "0.39", "0.44", "A.i")),
                      (66, ("Reverse Current", "IRNBL1", "uA", "-0.1", "0", "A.j"))):  # fmt: skip
        for index, (x, value) in enumerate(zip((10, 45, 75, 95, 120, 140), values, strict=True)):
            pdf.set_font("Helvetica", "B" if index == 0 else "", 11)
            pdf.text(x, y, value)
    pdf.output(str(tmp_path / "diode.pdf"))
    chunks = read_document(
        _with_widths(tmp_path / "diode.pdf"), IngestOptions(min_chunk_tokens=0), doc_id="d"
    )
    rows = [(c.section, c.context) for c in chunks if "Voltage" in c.text or "Current" in c.text]
    header = "diode > 2.10 Schottky diode > Parameter Name Unit Max Comment Tar- get Meas. Cond."  # as drawn
    assert rows and all(row == ("2.10 Schottky diode", header) for row in rows)


def test_a_table_row_whose_first_cell_is_bold_is_a_row_not_a_header(tmp_path: Path) -> None:
    """A process specification's parameter tables set each row's name in bold and its values in
    regular type, in cells apart, as a header row is set. A line in cells is a header row only when
    it is bold in every cell; read as one, each row named the rows below it and was in no chunk."""
    pdf = FPDF()
    pdf.add_page()

    def row(texts: list[str], bold: int) -> None:
        for index, (width, text) in enumerate(zip((55, 30, 15, 20, 20, 20), texts, strict=False)):
            pdf.set_font("Helvetica", "B" if index < bold else "", 11)
            pdf.cell(width, 8, text)
        pdf.ln(8)

    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 10, "2.9 Rhigh")
    pdf.ln(10)
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, "The resistor uses unsalicided gate polysilicon. " * 3)
    row(["Parameter", "Name", "Unit", "Min", "Target", "Max"], bold=6)
    row(["Sheet Resistance", "RSRHIGH", "Ohm", "1160", "1360", "1560"], bold=2)
    row(["Line Width Delta", "DWRHIGH", "nm", "-80", "-40", "0"], bold=2)
    pdf.output(str(tmp_path / "spec.pdf"))
    chunks = read_document(_with_widths(tmp_path / "spec.pdf"), IngestOptions(min_chunk_tokens=0), doc_id="s")
    rows = [(c.section, c.context, c.text) for c in chunks if "RH" in c.text]
    header = "spec > 2.9 Rhigh > Parameter Name Unit Min Target Max"
    assert rows == [
        ("2.9 Rhigh", header, "Sheet Resistance RSRHIGH Ohm 1160 1360 1560"),
        ("2.9 Rhigh", header, "Line Width Delta DWRHIGH nm -80 -40 0"),
    ]


@pytest.mark.parametrize(
    ("headings", "path"),
    [
        ([("1 Introduction", 14.0), ("1.1 Scope", 12.0)], ["1 Introduction", "1.1 Scope"]),
        ([("1 Introduction", 14.0), ("1.1 Scope", 12.0), ("2 Usage", 14.0)], ["2 Usage"]),
        ([("3.2 Lists", 12.0), ("Rationale", 11.0), ("Notes", 11.0)], ["3.2 Lists", "Notes"]),
        ([("3.2 Lists", 12.0), ("Rationale", 11.0), ("3.3 Loops", 12.0)], ["3.3 Loops"]),
        ([("3.2 Lists", 12.0), ("Index", 16.0)], ["Index"]),  # set larger: not below the section
        ([("Overview", 14.0), ("Details", 12.0)], ["Details"]),  # no numbers: the last heading
    ],
)
def test_heading_path(headings: list[tuple[str, float]], path: list[str]) -> None:
    trail: list[Any] = []
    for text, size in headings:
        trail = heading_path(trail, text, size)
    assert [step.text for step in trail] == path


def test_a_contents_page_goes_whole_and_roman_page_numbers_mark_running_heads(tmp_path: Path) -> None:
    """A contents page leaves no chunk (an entry that wraps has no dot leader on its first line), and
    a running head numbered in roman numerals (``ii PREFACE``, ``PREFACE iii``) is furniture."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.cell(0, 6, "Contents", new_x="LMARGIN", new_y="NEXT")
    pdf.cell(
        0,
        6,
        "1 Reading the specification of the waterproofing membrane and its",
        new_x="LMARGIN",
        new_y="NEXT",
    )
    for entry, page in [("laps", 1), ("2 Materials", 3), ("3 Warranty", 4), ("4 Inspection", 5)]:
        pdf.cell(0, 6, f"{entry} {'.' * 50} {page}", new_x="LMARGIN", new_y="NEXT")
    bodies = [
        "The preface explains who wrote this specification and why.",
        "Every membrane lap is sealed and rolled before inspection.",
        "The inspector signs each sheet of the record when it is done.",
    ]
    for head, body in zip(["ii PREFACE", "PREFACE iii", "iv PREFACE"], bodies, strict=True):
        pdf.add_page()
        pdf.set_font("Helvetica", "", 9)
        pdf.cell(0, 6, head, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(10)
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "c.pdf"))
    chunks = read_document(tmp_path / "c.pdf", IngestOptions(min_chunk_tokens=0), doc_id="c.pdf")
    assert [(c.page, c.text) for c in chunks] == list(zip([2, 3, 4], bodies, strict=True))


def test_a_running_head_that_names_the_section_goes_by_its_page_number(tmp_path: Path) -> None:
    """A running head that names the current section changes from section to section, so it does not
    repeat as a whole; its page number follows the pages. A chapter heading at the top of the page
    its number happens to match is set as a heading, and stays; so does a line of text that ends in
    another number."""
    pages = [
        ("1 Scope", "This specification covers the waterproofing of the basement and the podium."),
        ("2 Scope", "The smallest lap width, in millimetres, is 100"),
        ("Materials 3", "Sheet membranes shall be stored on pallets under cover until they are laid."),
        ("4 Materials", "Primer is applied to a dry substrate at the rate the maker states."),
    ]
    pdf = FPDF()
    for number, (head, body) in enumerate(pages, start=1):
        pdf.add_page()
        if number == 1:
            pdf.set_font("Helvetica", "B", 16)  # the chapter heading, on page 1
        else:
            pdf.set_font("Helvetica", "", 9)  # the running head: page number and section
        pdf.cell(0, 8, head, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(6)
        if number == 3:
            pdf.set_font("Helvetica", "B", 16)
            pdf.cell(0, 8, "2 Materials", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "r.pdf"))
    chunks = read_document(tmp_path / "r.pdf", IngestOptions(min_chunk_tokens=0), doc_id="r.pdf")
    assert [(c.page, c.section, c.text) for c in chunks] == [
        (number, "1 Scope" if number < 3 else "2 Materials", body)
        for number, (_, body) in enumerate(pages, start=1)
    ]


def test_a_bold_footer_closing_a_page_with_its_number_goes(tmp_path: Path) -> None:
    """Sphinx's PDFs close every page with a footer in the body's size and bold, naming the section
    and the page (``3.4. /memory node 22``): set as a heading would be, it named the next page's
    text until a heading came. No heading is a page's last line, so one there ending in the page's
    own number is the footer."""
    bodies = [
        "The memory node describes the physical memory layout and is required in every devicetree.",
        "The chosen node passes parameters chosen or specified by the firmware at run time.",
        "The aliases node defines one or more alias properties for the nodes of the tree.",
    ]
    headings = ["Memory", "Chosen", "Aliases"]
    pdf = FPDF()
    pdf.set_auto_page_break(False)
    for number, (heading, body) in enumerate(zip(headings, bodies, strict=True), start=1):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 16)
        pdf.cell(0, 8, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
        pdf.set_y(-20)
        pdf.set_font("Helvetica", "B", 11)
        pdf.cell(0, 6, f"3.{number}. /{heading.lower()} node {number + 20}", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "f.pdf"))
    chunks = read_document(tmp_path / "f.pdf", IngestOptions(min_chunk_tokens=0), doc_id="f.pdf")
    assert [(c.page, c.section, c.text) for c in chunks] == [
        (number, heading, body)
        for number, (heading, body) in enumerate(zip(headings, bodies, strict=True), start=1)
    ]


def _with_widths(path: Path) -> Path:
    """The PDF with its Helvetica given its glyph widths (``/Widths``), as most PDFs give them; fpdf
    leaves them out for the standard fonts, whose widths a reader is expected to know."""
    reader = PdfReader(path)
    writer = PdfWriter(clone_from=reader)
    widths = CORE_FONTS_CHARWIDTHS["helvetica"]
    for page in writer.pages:
        for reference in page["/Resources"]["/Font"].values():
            font = reference.get_object()
            font[NameObject("/FirstChar")] = NumberObject(32)
            font[NameObject("/LastChar")] = NumberObject(255)
            font[NameObject("/Widths")] = ArrayObject(
                NumberObject(widths[chr(code)]) for code in range(32, 256)
            )
    writer.write(path)
    return path


def test_a_lines_runs_are_joined_as_they_are_set(tmp_path: Path) -> None:
    """Runs set one after the other make one word (a PDF splits words for kerning, and punctuation
    follows a word); runs set apart, as in two columns, are two words. Without the font's widths,
    runs are joined with a space."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    for run in ["Requ", "irements of ", "/var/log", ", kept ", "per host."]:
        pdf.write(8, run)
    pdf.ln(14)
    pdf.cell(40, 8, "KDE")
    pdf.cell(0, 8, "The desktop project.", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "runs.pdf"))
    options = IngestOptions(min_chunk_tokens=0)
    unknown = read_document(tmp_path / "runs.pdf", options, doc_id="runs.pdf")
    assert [c.text for c in unknown] == [
        "Requ irements of /var/log , kept per host.",
        "KDE The desktop project.",
    ]
    chunks = read_document(_with_widths(tmp_path / "runs.pdf"), options, doc_id="runs.pdf")
    assert [c.text for c in chunks] == [
        "Requirements of /var/log, kept per host.",
        "KDE The desktop project.",
    ]


def _drawn(path: Path, content: str, form: str = "") -> Path:
    """A one-page PDF drawn by hand: Helvetica with its widths as ``/F1``; as ``/F2`` a font without
    widths that sets its code ``f`` as the ``fi`` ligature; ``form`` drawn as a form XObject ``/X1``."""
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    widths = CORE_FONTS_CHARWIDTHS["helvetica"]

    def font(**entries: Any) -> Any:
        base = {
            "/Type": NameObject("/Font"),
            "/Subtype": NameObject("/Type1"),
            "/BaseFont": NameObject("/Helvetica"),
        }
        return writer._add_object(
            DictionaryObject({NameObject(k): v for k, v in {**base, **entries}.items()})
        )

    def stream(text: str, **entries: Any) -> Any:
        drawn = DecodedStreamObject()
        drawn.set_data(text.encode("latin-1"))
        drawn.update({NameObject(k): v for k, v in entries.items()})
        return writer._add_object(drawn)

    fonts = DictionaryObject({
        NameObject("/F1"): font(**{
            "/FirstChar": NumberObject(32),
            "/Widths": ArrayObject(NumberObject(widths[chr(code)]) for code in range(32, 256)),
        }),
        NameObject("/F2"): font(**{"/Encoding": DictionaryObject({
            NameObject("/Differences"): ArrayObject([NumberObject(ord("f")), NameObject("/fi")]),
        })}),
    })  # fmt: skip
    resources = DictionaryObject({NameObject("/Font"): fonts})
    if form:
        box = ArrayObject(NumberObject(edge) for edge in (0, 0, 612, 792))
        kind = {"/Type": NameObject("/XObject"), "/Subtype": NameObject("/Form")}
        drawing = stream(form, **kind, **{"/BBox": box, "/Resources": resources})
        resources[NameObject("/XObject")] = DictionaryObject({NameObject("/X1"): drawing})
    page[NameObject("/Resources")] = resources
    page[NameObject("/Contents")] = stream(content)
    writer.write(path)
    return path


def test_the_letters_after_a_ligature_set_alone_in_a_font_without_widths_go_on_with_its_word(
    tmp_path: Path,
) -> None:
    """The GEDCOM specification (cairo) sets its ``fi`` ligatures in a font of their own that gives no
    glyph widths: read as word breaks, 42 chunks read ``Specifi cation``, ``fi le``."""
    content = "BT /F1 11 Tf 72 700 Td (The Speci) Tj /F2 11 Tf (f) Tj /F1 11 Tf (cation of the ) Tj "
    content += "/F2 11 Tf (f) Tj /F1 11 Tf (le format.) Tj ET"
    chunks = read_document(_drawn(tmp_path / "l.pdf", content), OPTIONS, doc_id="l.pdf")
    assert [c.text for c in chunks] == ["The Specification of the file format."]


def _run(size: float, x: float, y: float, text: str) -> str:
    """A run of ``_drawn``'s Helvetica (``/F1``) at ``size``, set at (x, y)."""
    return f"BT /F1 {size} Tf {x} {y} Td ({text}) Tj ET "


def test_a_raised_smaller_number_after_a_digit_is_a_power_on_its_line(tmp_path: Path) -> None:
    """LaTeX raises a 7-point exponent 3.6 points over a 10-point line, more than half its own size:
    the ZipCPU specification's "between 0 and 2^31 clocks" was cut into two chunks at ``2`` and the
    next began ``31 clocks``. Measured against the line's size the run is on the line, and a number
    so set after a digit is a power; a table's footnote letter right after a word stands apart from
    it (``SLICE_HEADERa`` named nothing)."""
    content = "".join([
        _run(10, 72, 700, "If the next interrupt is between 0 and 2"),
        _run(7, 242.2, 703.6, "31"),
        _run(10, 250, 700, " clocks in the past, it fires at once."),
        _run(10, 72, 688, "Writes are ignored by the counter"),
        _run(7, 220, 691.6, "a"),
        _run(10, 224, 688, " and the timer alike."),
    ])  # fmt: skip
    chunks = read_document(_drawn(tmp_path / "e.pdf", content), OPTIONS, doc_id="e.pdf")
    assert [c.text for c in chunks] == [
        "If the next interrupt is between 0 and 2^31 clocks in the past, it fires at once. "
        "Writes are ignored by the counter a and the timer alike."
    ]


def _rule(left: float, right: float, y: float) -> str:
    """A horizontal rule stroked from ``left`` to ``right`` at height ``y``, as LaTeX draws ``\\_``."""
    return f"0.4 w {left} {y} m {right} {y} l S "


def test_an_underscore_drawn_as_a_rule_joins_its_identifier(tmp_path: Path) -> None:
    """LaTeX draws ``\\_`` as a short rule at the baseline, kerned 0.06 of the font size from the
    letter before it: the ZipCPU specification's ``OPT_MULTIPLY`` read ``OPT MULTIPLY``. A rule from
    the end of one run to the start of the next is an underscore inside the identifier, measured
    from where the text shown before it ends, spaces stretched by a TJ displacement included; a rule
    a space after the run before opens a name (``_ram``); an underline under a letter (the GEDCOM
    specification's ``D`` of ``Data``) and a rule at a dash's height join nothing."""
    content = "".join([
        _run(10, 72, 700, "The option OPT"),  # ends at 142.59 (Helvetica's widths)
        _rule(143.19, 146.19, 700.2),
        _run(10, 146.19, 700, "MULTIPLY"),
        _run(10, 195.09, 700, " turns on the multiplier."),
        "BT /F1 10 Tf 72 680 Td [(The option) -1000 (OPT)] TJ ET ",  # ends at 149.81, not 142.59
        _rule(150.41, 153.41, 680.2),
        _run(10, 153.41, 680, "MPY"),
        _run(10, 175, 680, " sets the width."),
        _run(10, 72, 660, "Copy it to"),  # ends at 114.24; a space, then the rule
        _rule(118.14, 121.14, 660.2),
        _run(10, 121.14, 660, "ram"),
        _run(10, 138.36, 660, " at boot; a - b"),
        _rule(210, 213, 662.6),  # a dash's height
        _run(10, 213, 660, "c."),
        _rule(133.14, 140.36, 638.8),  # underlines the D, drawn before it
        _run(10, 72, 640, "Genealogical "),
        _run(10, 133.14, 640, "D"),
        _run(10, 140.36, 640, "ata Communication."),
    ])  # fmt: skip
    chunks = read_document(_drawn(tmp_path / "u.pdf", content), OPTIONS, doc_id="u.pdf")
    assert [c.text for c in chunks] == [
        "The option OPT_MULTIPLY turns on the multiplier. The option OPT_MPY sets the width. "
        "Copy it to _ram at boot; a - b c. Genealogical Data Communication."
    ]


def test_a_caption_set_under_its_table_closes_it_and_one_over_its_table_opens_it(tmp_path: Path) -> None:
    """LaTeX sets a float's caption under it: the ZipCPU specification's ``Table 3.9: CIS OpCodes``,
    a fragment, joined the paragraph after it, ``Table 3.9: CIS OpCodes zero, this will be cleared
    …``, and the table's rows lost the words that name them. A caption set clearly closer to the
    lines above it than to the line after it closes them; one set over its table still opens it."""
    rows = ["5 SW Store 32-bit word", "6 LDI Load immediate", "7 MOV Move"]
    content = "".join([
        *(_run(10, 90, 700 - 12 * n, row) for n, row in enumerate(rows)),
        _run(10, 150, 654, "Table 3.9: CIS OpCodes"),
        _run(10, 72, 612, "zero, this will be cleared by any return to user mode."),
        _run(10, 150, 560, "Table 3.10: Derived Instructions"),
        _run(10, 90, 548, "BRA Jump to the label always"),
    ])  # fmt: skip
    chunks = read_document(_drawn(tmp_path / "c.pdf", content), OPTIONS, doc_id="c.pdf")
    assert [c.text for c in chunks] == [
        "5 SW Store 32-bit word 6 LDI Load immediate 7 MOV Move Table 3.9: CIS OpCodes",
        "zero, this will be cleared by any return to user mode.",
        "Table 3.10: Derived Instructions BRA Jump to the label always",
    ]


def test_a_heading_number_drawn_after_its_title_in_a_form_of_a_flipped_page_opens_it(tmp_path: Path) -> None:
    """WeasyPrint (cairo) turns the page's y axis down and draws each heading's number and each list
    bullet after the text, in a form; pypdf gives the form's text the form's transform without the
    page's, upside down: the GEDCOM specification's numbers (``1.3.``) fell 600 points and were
    sections of their own, and its bullets a chunk of bullets (``• •``)."""
    flipped = "1 0 0 -1 0 792 cm "
    lines = [(22, 100, 100, "Lines"), (11, 72, 130, "A line is a string of text."),
             (11, 90, 150, "A level comes first."), (11, 90, 165, "A tag comes next.")]  # fmt: skip
    content = flipped + " ".join(
        f"BT /F1 {size} Tf 1 0 0 -1 {x} {y} Tm ({text}) Tj ET" for size, x, y, text in lines
    )
    marks = [(22, 72, 100, "1.3. "), (11, 80, 150, "\\267 "), (11, 80, 165, "\\267 ")]
    form = " ".join(f"BT /F1 {size} Tf 1 0 0 -1 {x} {y} Tm ({text}) Tj ET" for size, x, y, text in marks)
    path = _drawn(tmp_path / "f.pdf", content + " /X1 Do", form)
    chunks = read_document(path, IngestOptions(min_chunk_tokens=0), doc_id="f.pdf")
    assert [c.section for c in chunks] == ["1.3. Lines"]
    assert (
        chunks[0].text == "A line is a string of text. \u2022 A level comes first. \u2022 A tag comes next."
    )


def test_run_width_reads_a_simple_fonts_widths() -> None:
    font = {"/FirstChar": 65, "/Widths": [600, 700]}  # A, B
    assert run_width("AB", font) == 1300.0
    assert run_width("AZ", font) == 600.0 + 500.0  # a code outside the table: the default advance
    assert run_width("AB", {"/Subtype": "/Type0"}) is None and run_width("AB", None) is None
    assert run_width("AB", {"/FirstChar": 65, "/Widths": ["wide", 700]}) is None  # damaged: no widths


def test_a_running_head_that_names_the_section_and_its_chapter_goes(tmp_path: Path) -> None:
    """LaTeX books head each page with the section and its chapter (``1.2. MATERIALS CHAPTER 1.
    WATERPROOFING``) and number it at the foot: the head carries no number and changes with the
    section. A line that names two of the document's headings at a page's edge, on at least three
    pages, is furniture; on fewer pages it is text."""
    bodies = [
        "Every membrane lap is sealed and rolled before the inspection of the slab.",
        "The primer is applied to a dry substrate at the rate the maker states.",
        "Sheets are stored on pallets under cover until they are laid on the podium.",
        "The inspector signs each sheet of the record when the work is done.",
    ]
    heads = ["1.1. SCOPE CHAPTER 1. WATERPROOFING", "1.2. MATERIALS CHAPTER 1. WATERPROOFING"]

    def build(path: Path, pages_with_head: int) -> list[Chunk]:
        pdf = FPDF()
        for number, body in enumerate(bodies, start=1):
            pdf.add_page()
            if number <= pages_with_head:
                pdf.set_font("Helvetica", "", 9)
                pdf.cell(0, 6, heads[0] if number < 3 else heads[1], new_x="LMARGIN", new_y="NEXT")
                pdf.ln(6)
            pdf.set_font("Helvetica", "B", 16)
            if number == 1:
                pdf.cell(0, 9, "Waterproofing", new_x="LMARGIN", new_y="NEXT")
                pdf.cell(0, 9, "1.1 Scope", new_x="LMARGIN", new_y="NEXT")
            if number == 3:
                pdf.cell(0, 9, "1.2 Materials", new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(6)
            pdf.cell(0, 6, str(number), new_x="LMARGIN", new_y="NEXT")
        pdf.output(str(path))
        return read_document(path, IngestOptions(min_chunk_tokens=0), doc_id=path.name)

    chunks = build(tmp_path / "heads.pdf", pages_with_head=4)
    assert [(c.page, c.text) for c in chunks] == list(enumerate(bodies, start=1))
    assert chunks[-1].section == "1.2 Materials"
    # On two pages such a line is not taken for a running head.
    assert sum(heads[0] in c.text for c in build(tmp_path / "two.pdf", pages_with_head=2)) == 2


def test_a_running_head_that_names_the_chapter_alone_goes_where_heads_name_headings(tmp_path: Path) -> None:
    """On a chapter's pages before its first section, a LaTeX head names the chapter alone (``2
    JOINTS``), and it was glued to the page's first text (the P4 specification's ``5 DEPARSING
    Identifier Exception Event …``). In a document whose heads name section and chapter on at least
    three pages, a head naming one numbered heading goes too; elsewhere such a line is text."""
    bodies = [
        "Every joint is cleaned and primed before the sealant is applied to it.",
        "Joints wider than the maker allows are filled with a backing rod first.",
        "The sealant is tooled to a concave face within its working time.",
        "Tooled joints are left to cure for a day before they are loaded.",
        "The inspector records every joint that is sealed on the day sheet.",
    ]

    def build(path: Path, sectioned: int) -> list[Chunk]:
        pdf = FPDF()
        for number, body in enumerate(bodies, start=1):
            pdf.add_page()
            pdf.set_font("Helvetica", "", 9)
            head = "2 JOINTS" if number <= 2 else "2.1 SEALING 2 JOINTS"
            if number <= 2 or number - 2 <= sectioned:
                pdf.cell(0, 6, head, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(6)
            pdf.set_font("Helvetica", "B", 16)
            if number == 1:
                pdf.cell(0, 9, "2 Joints", new_x="LMARGIN", new_y="NEXT")
            if number == 3:
                pdf.cell(0, 9, "2.1 Sealing", new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
        pdf.output(str(path))
        return read_document(path, IngestOptions(min_chunk_tokens=0), doc_id=path.name)

    assert [c.text for c in build(tmp_path / "heads.pdf", sectioned=3)] == bodies
    # With two pages naming section and chapter, no line is taken for a running head.
    assert sum("2 JOINTS" in c.text for c in build(tmp_path / "two.pdf", sectioned=2)) == 4


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("1.2. SDCC SUITE LICENSES CHAPTER 1. INTRODUCTION", True),
        ("CHAPTER 1. INTRODUCTION 1.2. SDCC SUITE LICENSES", True),
        ("1.2. SDCC SUITE LICENSES", False),  # one heading: a cross-reference or the heading itself
        ("SDCC SUITE LICENSES AND INTRODUCTION", False),  # a word no heading has
        ("a//b =", False),  # a formula's one-letter "headings" name nothing
    ],
)
def test_names_headings(line: str, names: bool) -> None:
    titles = frozenset(
        title_tokens(heading) for heading in ["1.2 SDCC Suite Licenses", "Introduction", "a", "b"]
    )
    titles = frozenset(t for t in titles if sum(len(w) for w in t if not w.isdigit()) >= 3)
    assert (headings_named(title_tokens(line), titles, max(len(t) for t in titles)) >= 2) is names


def test_an_index_page_goes_whole_and_a_line_ending_in_numbers_stays(tmp_path: Path) -> None:
    """A back-of-book index (``Standard-compliance, 9, 26``) matches every question's words and
    answers none: a page that is at least half such entries is dropped, as a contents page is. A
    line of text that ends in numbers on another page is text."""
    body = "The lap widths of the membrane are 100, 150, 200"
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, "Sheets are stored on pallets under cover until they are laid.")
    pdf.ln(6)
    pdf.multi_cell(0, 6, body)
    pdf.add_page()
    pdf.cell(0, 6, "Index", new_x="LMARGIN", new_y="NEXT")
    for entry in ["Lap width, 1", "Membrane, 1, 3-4", "Pallets, 1", "Primer, 2, 5", "Substrate, 2"]:
        pdf.cell(0, 6, entry, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "i.pdf"))
    chunks = read_document(tmp_path / "i.pdf", IngestOptions(min_chunk_tokens=0), doc_id="i.pdf")
    assert [c.page for c in chunks] == [1, 1]
    assert chunks[-1].text == body


def test_a_page_of_m_line_under_a_two_line_header_goes(tmp_path: Path) -> None:
    """Word sets a header of three lines (title, subtitle, ``2019-02-22 Version 1.0 Page 3 of 25``): the
    third is past the two edge lines a running head is looked for in, and its date and total keep it
    from being a bare page number. A line saying ``Page N of M`` among a page's first or last three
    lines, N following the pages on at least three, is furniture; a sentence that says "page 2 of
    the form" is text."""
    bodies = [
        "Every membrane lap is sealed and rolled before the inspection of the slab.",
        "Fill in page 2 of 9 of the inspection form before the membrane is covered.",
        "Sheets are stored on pallets under cover until they are laid on the podium.",
        "The inspector signs each sheet of the record when the work is done.",
    ]
    pdf = FPDF()
    for number, body in enumerate(bodies, start=1):
        pdf.add_page()
        pdf.set_font("Helvetica", "", 9)
        for line in ["Encryption", "Open API Specification", f"2019-02-22 Version 1.0 Page {number} of 4"]:
            pdf.cell(0, 5, line, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(8)
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
        pdf.multi_cell(0, 6, "The podium is inspected twice.", new_x="LMARGIN", new_y="NEXT")
        pdf.multi_cell(0, 6, "The basement is inspected once.", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "p.pdf"))
    chunks = read_document(tmp_path / "p.pdf", IngestOptions(min_chunk_tokens=0), doc_id="p.pdf")
    assert all("Version 1.0" not in c.text for c in chunks)
    assert next(c.text for c in chunks if c.page == 2).startswith(bodies[1])


@pytest.mark.parametrize(
    ("line", "leader"),
    [
        ("2 Introduction" + "\u2026" * 40 + " .. 6", True),  # Word's ellipsis leader
        ("3 Scope" + " \u00b7" * 20 + " 7", True),
        ("4 Materials .......... 9", True),
        ("The lap is 100 mm wide…", False),
    ],
)
def test_contents_leaders(line: str, leader: bool) -> None:
    lines = [_Line(y=float(i), size=10.0, text=line) for i in range(4)]
    kept = drop_furniture([[_Line(y=0.0, size=10.0, text="Contents")], lines])
    assert (kept[1] == []) is leader


def test_list_items_and_lines_that_run_on_are_no_headings_and_a_heading_with_nothing_under_it_stays(
    tmp_path: Path,
) -> None:
    """A bold bullet, a bold lead-in ending in a colon and a bold line whose last word breaks at the
    margin are text. A heading followed straight by its sibling has no text under it: it is a chunk
    of its own, not lost."""
    pdf = FPDF()
    pdf.core_fonts_encoding = "windows-1252"  # the bullet
    pdf.add_page()

    def line(text: str, style: str = "", size: int = 11) -> None:
        pdf.set_font("Helvetica", style, size)
        pdf.cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")

    line("12.4. Reserved", "B", 13)
    pdf.ln(6)
    line("12.5. The SHA256 hash function", "B", 13)
    line("\u2022 HASHLEN = 32", "B")
    pdf.ln(6)
    line("A handshake pattern consists of:", "B")
    line("a pre-message pattern and a sequence of message patterns.")
    pdf.ln(6)
    line("1. Sender authentication vulnerable to key-compromise imperson-", "B")
    line("ation (KCI). A recipient cannot tell a forged message from a genuine one once its")
    line("static private key is known to an attacker, so the pattern gives no such guarantee.")
    pdf.output(str(tmp_path / "n.pdf"))
    chunks = read_document(tmp_path / "n.pdf", IngestOptions(min_chunk_tokens=0), doc_id="n.pdf")
    assert [(c.section, c.text) for c in chunks] == [
        ("12.4. Reserved", "12.4. Reserved"),
        ("12.5. The SHA256 hash function", "\u2022 HASHLEN = 32"),
        (
            "12.5. The SHA256 hash function",
            "A handshake pattern consists of: a pre-message pattern and a sequence of message patterns.",
        ),
        (
            "12.5. The SHA256 hash function",
            "1. Sender authentication vulnerable to key-compromise impersonation (KCI). A recipient cannot"
            " tell a forged message from a genuine one once its static private key is known to an attacker,"
            " so the pattern gives no such guarantee.",
        ),
    ]


def test_table_rows_at_page_edges_stay_where_the_pages_carry_bare_numbers(tmp_path: Path) -> None:
    """Table rows ending in a number sit last on three pages, and by chance that number minus the
    page's index is the same on all three. The bare page numbers below them vote too, so the rows
    are not taken for numbered running heads."""
    rows = {2: "NK 2 1", 3: "KK 5 2", 4: "KX 7 3"}
    notes = [
        "The first pattern is read left to right.",
        "Each token names a key or a computation.",
        "A responder may reject a pattern it does not know.",
        "Padding is not part of any pattern.",
        "Payloads may be empty.",
    ]
    pdf = FPDF()
    pdf.set_auto_page_break(False)
    for index, note in enumerate(notes):
        pdf.add_page()
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, note, new_x="LMARGIN", new_y="NEXT")
        if index in rows:
            pdf.ln(8)
            pdf.cell(0, 6, rows[index], new_x="LMARGIN", new_y="NEXT")
        pdf.set_y(-20)
        pdf.cell(0, 6, str(index + 1), align="C")
    pdf.output(str(tmp_path / "t.pdf"))
    chunks = read_document(tmp_path / "t.pdf", IngestOptions(min_chunk_tokens=0), doc_id="t.pdf")
    assert [c.text for c in chunks] == [
        notes[0],
        notes[1],
        notes[2],
        "NK 2 1",
        notes[3],
        "KK 5 2",
        notes[4],
        "KX 7 3",
    ]
    assert not [c for c in chunks if c.text.isdigit()]  # the page numbers themselves go


@pytest.mark.parametrize(
    ("text", "font", "shown"),
    [
        ("W", "/HAAAAA+SymbolMT", "Ω"),  # a run in the Symbol font: the sheet resistance's unit
        ("e", "/SymbolMT", "ε"),
        ("\xb1", "/SymbolMT", "±"),
        ("\uf0b7", "/JRUAGL+Symbol", "•"),  # a private-use copy of the code: a bullet
        ("DLb", "/FLIJAM+Symbol", "ΔΛβ"),
        ("W", "/ArialMT", "W"),  # any other font reads as its text map says
        ("W", "/OpenSymbol", "W"),
    ],
)
def test_the_symbol_fonts_letters_read_as_the_signs_it_sets(text: str, font: str, shown: str) -> None:
    """Word's PDFs map SymbolMT's codes to the Latin letters at them (Ω read as ``W``, ε as ``e``) or
    to private-use copies (a bullet as U+F0B7), as IHP's process specification does."""
    assert shown_text(text, font) == shown


def test_typeset_ligatures_read_as_their_letters() -> None:
    assert (
        line_text(["Diﬃe-Hellman ", "speciﬁes a ", "buﬀer ﬁeld"]) == "Diffie-Hellman specifies a buffer field"
    )


def test_a_glyph_read_as_a_control_code_is_a_bullet_opening_a_line_and_nothing_elsewhere() -> None:
    """LaTeX-made PDFs (OCPI 2.1.1, Theora) set their bullets in a Type 3 font whose glyph ``/a136``
    has no text: pypdf gives its code, U+0088. TeX's large braces read as U+001A."""
    assert (
        line_text(["\x88 Real-time information about location."]) == "• Real-time information about location."
    )
    assert line_text(["\x88", " Decode frame header."]) == "• Decode frame header."
    assert line_text(["|a| = \x1a −a, a < 0"]) == "|a| = −a, a < 0"
    assert line_text(["\x1a \x06 a b \x07 , a < 0"]) == "a b , a < 0"  # a C0 code is no bullet
    assert line_text(["trademarks ( \x97 ) of"]) == "trademarks ( ) of"


def test_zero_width_characters_are_left_out() -> None:
    """Google Docs prints a zero-width space either side of a code-formatted word; it is invisible,
    so the line reads without it (and without the spaces it leaves doubled)."""
    assert line_text(
        ["using a \u200b", "cms", "\u200b attribute", "\u2060 in the top-level\ufeff element"]
    ) == ("using a cms attribute in the top-level element")


def test_bold_words_in_a_paragraph_are_no_heading_and_a_wrapped_heading_is_one(tmp_path: Path) -> None:
    """A body-size bold line right under a body line that ends no sentence, or right over one that goes
    on in lower case, is part of the paragraph. A heading wrapped over two lines is one heading; a
    numbered heading right under another is a heading of its own."""
    pdf = FPDF()
    pdf.add_page()

    def line(text: str, style: str = "", size: int = 11, height: float = 5) -> None:
        pdf.set_font("Helvetica", style, size)
        pdf.cell(0, height, text, new_x="LMARGIN", new_y="NEXT")

    line("2.1. Terminology", "B", 13, 7)
    line("A protocol begins with two parties exchanging handshake messages,")
    line("after which both parties hold a shared key.")
    line("Each party can use this shared key to send encrypted")
    line("transport messages.", "B")
    line("The framework supports handshakes of many kinds.")
    pdf.ln(6)
    line("1. Encryption to an ephemeral recipient. This payload has", "B")
    line("forward secrecy, since encryption involves an ephemeral key.")
    pdf.ln(6)
    line("12. DH functions, cipher functions, and hash", "B", 13, 7)
    line("functions", "B", 13, 7)
    line("12.1. The 25519 DH functions", "B", 13, 7)
    line("DHLEN = 32.")
    pdf.output(str(tmp_path / "b.pdf"))
    chunks = read_document(tmp_path / "b.pdf", IngestOptions(min_chunk_tokens=0), doc_id="b.pdf")
    assert [(c.section, c.text) for c in chunks] == [
        (
            "2.1. Terminology",
            "A protocol begins with two parties exchanging handshake messages, after which both parties"
            " hold a shared key. Each party can use this shared key to send encrypted transport messages."
            " The framework supports handshakes of many kinds.",
        ),
        (
            "2.1. Terminology",
            "1. Encryption to an ephemeral recipient. This payload has forward secrecy, since encryption"
            " involves an ephemeral key.",
        ),
        ("12.1. The 25519 DH functions", "DHLEN = 32."),
    ]
    assert chunks[-1].context == (
        "b > 12. DH functions, cipher functions, and hash functions > 12.1. The 25519 DH functions"
    )


def test_a_figures_labels_drawn_with_text_are_one_block(tmp_path: Path) -> None:
    """Labels a figure draws as text come in the order they were drawn, smaller than the body and
    jumping up and down the page: they are one block, not a chunk per label. A table set small goes
    down the page and keeps its rows."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    for text in ("Operands are placed as the figure below shows, the most significant first.",
                 "A similar situation applies to the WORD and BYTE cases."):  # fmt: skip
        pdf.cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 8)
    for x, y, label in ((20, 90, "BYTE(0)"), (20, 80, "BYTE(1)"), (20, 70, "BYTE(2)"), (60, 95, "WORD(0)"),
                        (60, 75, "WORD(1)"), (100, 92, "DWORD(0)"), (100, 60, "OFFSET")):  # fmt: skip
        pdf.set_xy(x, y)
        pdf.cell(20, 4, label)
    pdf.set_xy(10, 110)
    pdf.set_font("Helvetica", "", 11)
    pdf.cell(0, 6, "Figure 3-8. Operand locations.", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 8)
    pdf.set_xy(10, 130)
    for row in ("Signal Width Meaning", "ACK_I 1 acknowledge", "ERR_I 1 error", "RTY_I 1 retry"):
        pdf.cell(0, 8, row, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "f.pdf"))
    chunks = read_document(tmp_path / "f.pdf", IngestOptions(min_chunk_tokens=0), doc_id="f.pdf")
    assert [c.text for c in chunks] == [
        "Operands are placed as the figure below shows, the most significant first. A similar situation"
        " applies to the WORD and BYTE cases.",
        "BYTE(0) BYTE(1) BYTE(2) WORD(0) WORD(1) DWORD(0) OFFSET",
        "Figure 3-8. Operand locations.",
        "Signal Width Meaning",
        "ACK_I 1 acknowledge",
        "ERR_I 1 error",
        "RTY_I 1 retry",
    ]


def test_a_figures_labels_set_as_headings_are_one_block_of_the_section_above(tmp_path: Path) -> None:
    """A block diagram's labels set larger or bolder than the body read as headings, so each named a
    section (the VeeR manual's ``DCCM``, ``Fetch 1``, ``EX2``: 51 sections of one label). Drawn out
    of reading order, they jump up the page: they are one block of the section above the figure.
    The figure's caption and a numbered heading after it stay headings."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 8, "1.2 Core Complex", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    pdf.cell(0, 6, "The figure below shows the core complex and its blocks.", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 13)
    for x, y, label in ((20, 60, "Core Complex"), (20, 80, "DEC LSU"), (70, 50, "IFU EXU"), (70, 70, "DCCM"),
                        (110, 45, "ICCM"), (110, 65, "I-Cache"), (150, 55, "PIC")):  # fmt: skip
        pdf.set_xy(x, y)
        pdf.cell(30, 6, label)
    pdf.set_xy(10, 95)
    pdf.set_font("Helvetica", "B", 10)
    pdf.cell(0, 6, "Figure 1-1 Core Complex", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    pdf.cell(0, 6, "Each block is described below.", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 8, "1.3 Functional Blocks", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    pdf.cell(0, 6, "The core fetches, decodes and executes instructions.", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "f.pdf"))
    chunks = read_document(tmp_path / "f.pdf", IngestOptions(min_chunk_tokens=0), doc_id="f.pdf")
    assert [(c.section, c.text) for c in chunks] == [
        ("1.2 Core Complex", "The figure below shows the core complex and its blocks."),
        ("1.2 Core Complex", "Core Complex DEC LSU IFU EXU DCCM ICCM I-Cache PIC"),
        ("Figure 1-1 Core Complex", "Each block is described below."),
        ("1.3 Functional Blocks", "The core fetches, decodes and executes instructions."),
    ]


def test_a_pages_small_print_does_not_set_its_line_spacing(tmp_path: Path) -> None:
    """The usual line spacing, which parts paragraphs and joins a heading's lines, is the body's: a
    diagram's small labels set 6 points apart on the page made it 6, so a chapter heading wrapped
    over two lines became two headings (``Chapter 3. Information structures and`` / ``attributes``)
    and body lines 13 points apart became a paragraph each."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 22)
    for text in ("Chapter 3. Information structures and", "attributes"):
        pdf.cell(0, 11, text, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 5)
    for n in range(14):
        pdf.cell(0, 2.2, f"+P{n} : int", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(8)
    pdf.set_font("Helvetica", "", 10)
    body = (
        "The nameplate holds the properties a manufacturer must show on the product itself,",
        "in the order the directive lists them, and the ones it may add for its own use.",
        "Each property names its data type and how often it may occur in the nameplate,",
        "so that a reader of the submodel knows which values it can rely on being there.",
    )
    for text in body:
        pdf.cell(0, 4.6, text, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "f.pdf"))
    chunks = read_document(tmp_path / "f.pdf", IngestOptions(min_chunk_tokens=0), doc_id="f.pdf")
    assert {c.section for c in chunks} == {"Chapter 3. Information structures and attributes"}
    assert chunks[-1].text == (
        "The nameplate holds the properties a manufacturer must show on the product itself, in the order"
        " the directive lists them, and the ones it may add for its own use. Each property names its data"
        " type and how often it may occur in the nameplate, so that a reader of the submodel knows which"
        " values it can rely on being there."
    )


def test_a_bullet_item_whose_line_sets_a_term_large_is_no_heading(tmp_path: Path) -> None:
    """A specification sets its element names large and bold inside sentences: an item's second line
    (``harmonized drop-in`` **Address Information.**, or **AssetSpecificProperties.** alone) read as
    a heading that cut the item. A line partly in the body's style, or one that ends the sentence
    the line above leaves open, goes on in it. The bullets, set a little above their items' first
    lines, no longer set the page's line spacing either."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.text(20, 20, "2.2 Overview")

    def item(y: float, first: str) -> None:
        pdf.set_font("Helvetica", "", 10)
        pdf.text(20, y - 1, "-")
        pdf.text(25, y, first)

    item(30, "The submodel instance comprises a set of elementary data elements of a nameplate.")
    item(40, "Address information of the manufacturer or of a service provider is provided by a")
    pdf.text(25, 45, "harmonized drop-in")
    pdf.set_font("Helvetica", "B", 12)
    pdf.text(25 + pdf.get_string_width("harmonized drop-in ") * 10 / 12, 45, "Address Information.")
    item(55, "As physical nameplates hold asset specific information, these can be added to")
    pdf.set_font("Helvetica", "B", 12)
    pdf.text(25, 60, "AssetSpecificProperties.")
    pdf.set_font("Helvetica", "", 10)
    closing = (
        "The tables of the next chapter describe each element with its type, its",
        "cardinality and an example value, in the order the model lists them.",
    )
    for n, text in enumerate(closing):
        pdf.text(20, 70 + 5 * n, text)
    pdf.output(str(tmp_path / "f.pdf"))
    chunks = read_document(tmp_path / "f.pdf", IngestOptions(min_chunk_tokens=0), doc_id="f.pdf")
    assert {c.section for c in chunks} == {"2.2 Overview"}
    text = " ".join(c.text for c in chunks)
    assert "is provided by a harmonized drop-in Address Information." in text
    assert "can be added to AssetSpecificProperties." in text


def test_a_tables_header_row_names_its_rows_context_not_their_section(tmp_path: Path) -> None:
    """A bold line set in cells apart (a table's header row) is no section of its own: the rows
    below keep the section of the heading over the table, with the header row a step of their
    context. A heading whose number is set apart from its title is still a heading."""
    pdf = FPDF()
    pdf.add_page()

    def cells(texts: list[str], style: str = "", widths: tuple[int, ...] = (30, 20, 90, 30)) -> None:
        pdf.set_font("Helvetica", style, 11)
        for width, text in zip(widths, texts, strict=False):
            pdf.cell(width, 8, text)
        pdf.ln(8)

    cells(["2.7.1", "Region Access Control Register (mrac)"], "B", (30, 150))
    cells(["The register controls the access properties of each region."], widths=(180,))
    cells(
        ["Each region is 256 MB; two bits set whether it is cacheable and has side effects."], widths=(180,)
    )
    pdf.ln(4)
    cells(["Field", "Bits", "Description", "Access"], "B")
    cells(["Y0", "0", "Cacheable control for region 0", "R/W"])
    pdf.ln(4)
    cells(["2.7.2", "Memory Error Register (mdseac)"], "B", (30, 150))
    cells(["Field", "Bits", "Description", "Access"], "B")
    cells(["Addr", "31:0", "Address of the first error", "R"])
    pdf.output(str(tmp_path / "prm.pdf"))
    options = IngestOptions(min_chunk_tokens=0)
    # without the fonts' widths no gap is known: the header row is taken for a heading, as before
    unknown = read_document(tmp_path / "prm.pdf", options, doc_id="prm.pdf")
    chunks = read_document(_with_widths(tmp_path / "prm.pdf"), options, doc_id="prm.pdf")
    register, error = "2.7.1 Region Access Control Register (mrac)", "2.7.2 Memory Error Register (mdseac)"
    assert [(c.section, c.context, c.text) for c in chunks] == [
        (register, f"prm > {register}", "The register controls the access properties of each region."),
        (
            register,
            f"prm > {register}",
            "Each region is 256 MB; two bits set whether it is cacheable and has side effects.",
        ),
        (
            register,
            f"prm > {register} > Field Bits Description Access",
            "Y0 0 Cacheable control for region 0 R/W",
        ),
        (error, f"prm > {error} > Field Bits Description Access", "Addr 31:0 Address of the first error R"),
    ]
    assert [c.section for c in unknown] == [
        register,
        register,
        "Field Bits Description Access",
        "Field Bits Description Access",
    ]


@pytest.mark.parametrize(
    ("headings", "path"),
    [
        ([("Overview", 14.0, False), ("Name Description", 11.0, True)], ["Overview", "Name Description"]),
        ([("Name Description", 11.0, True)], ["Name Description"]),
        (
            [("2 Memory", 14.0, False), ("Field Bits", 11.0, True), ("Name Value", 11.0, True)],
            ["2 Memory", "Name Value"],
        ),
        (
            [("2 Memory", 14.0, False), ("Field Bits", 11.0, True), ("2.1 Regions", 12.0, False)],
            ["2 Memory", "2.1 Regions"],
        ),
    ],
)
def test_a_tables_header_row_sits_below_the_last_heading(
    headings: list[tuple[str, float, bool]], path: list[str]
) -> None:
    trail: list[Any] = []
    for text, size, cells in headings:
        trail = heading_path(trail, text, size, cells=cells)
    assert [step.text for step in trail] == path


def test_a_bold_label_with_its_value_and_a_line_of_code_are_no_headings(tmp_path: Path) -> None:
    """OCPI sets ``Module dependency:`` in bold and its value in regular type, ``Module Identifier:``
    then ``credentials`` in a bold monospaced font, and each example's request line, ``PATCH To URL:
    …``, in a bold monospaced font: each was a section, and the module's sections below it were
    not. A numbered heading set in a monospaced font is still a heading."""
    pdf = FPDF()
    pdf.add_page()

    def line(*runs: tuple[str, str, int, str]) -> None:
        for family, style, size, text in runs:
            pdf.set_font(family, style, size)
            pdf.cell(text=text)
        pdf.ln(8)

    body = "The Location objects live in the back-end system of the charge point operator."
    line(("Helvetica", "B", 14, "8 Locations module"))
    line(("Helvetica", "", 11, body))
    line(("Helvetica", "B", 11, "Module dependency: "), ("Helvetica", "", 11, "Tariffs module"))
    line(("Helvetica", "B", 11, "Module Identifier: "), ("Courier", "B", 11, "locations"))
    line(("Helvetica", "", 11, body))
    line(("Courier", "B", 11, "PATCH To URL: https://example.com/ocpi/locations/1012"))
    line(("Courier", "", 11, '{ "status": "CHARGING" }'))
    line(("Helvetica", "", 11, body))
    line(("Helvetica", "B", 14, "8.1. "), ("Courier", "B", 14, "AllowOfflineTxForUnknownId"))
    line(("Helvetica", "", 11, body))
    pdf.output(str(tmp_path / "m.pdf"))
    chunks = read_document(tmp_path / "m.pdf", IngestOptions(min_chunk_tokens=0), doc_id="m.pdf")
    assert [c.section for c in chunks] == ["8 Locations module"] * (len(chunks) - 1) + [
        "8.1. AllowOfflineTxForUnknownId"
    ]
    assert any("Module Identifier: locations" in c.text for c in chunks)
    assert any("PATCH To URL:" in c.text for c in chunks)


def test_a_table_drawn_cell_by_cell_reads_row_by_row_and_a_page_column_stays_apart(tmp_path: Path) -> None:
    """A table drawn cell by cell (cairo's, as WeasyPrint prints HTML tables) sets a cell's wrapped
    lines before the next cell, which goes back up to the row's first line: each row is one block,
    its cells in order, also where a row follows the one above as closely as a paragraph's lines
    do (``BLES``). A page's second column, going back up further than a row's cells do, stays a
    block of its own."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.text(10, 20, "3.3.1.1. Individual Events")
    pdf.set_font("Helvetica", "", 11)
    rows = (
        (("BARM Bar Mitzvah", "g7:BARM"), ("The ceremonial event held when a Jewish boy", "reaches age 13.")),
        (("BIRT birth", "g7:BIRT"), ("Entering into life, as a birth", "record tells.")),
        (("BLES blessing", "g7:BLES"), ("Bestowing divine care.",)),
    )
    for top, cells in zip((35, 51, 63), rows, strict=True):
        for x, lines in zip((10, 70), cells, strict=True):
            for index, text in enumerate(lines):
                pdf.text(x, top + 6 * index, text)
    pdf.add_page()
    left = [f"The left column goes on in its line number {n} here." for n in range(14)]
    for index, text in enumerate(left):
        pdf.text(10, 20 + 6 * index, text)
    pdf.text(110, 20, "The right column opens at the top of the page.")
    pdf.output(str(tmp_path / "gedcom.pdf"))
    chunks = read_document(tmp_path / "gedcom.pdf", IngestOptions(min_chunk_tokens=0), doc_id="g")
    texts = [c.text for c in chunks]
    assert texts[:3] == [
        "BARM Bar Mitzvah g7:BARM The ceremonial event held when a Jewish boy reaches age 13.",
        "BIRT birth g7:BIRT Entering into life, as a birth record tells.",
        "BLES blessing g7:BLES Bestowing divine care.",
    ]
    assert "The right column opens at the top of the page." in texts
    assert all(text.startswith("The left column") for text in texts[3:-1])
