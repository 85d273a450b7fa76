"""The Markdown and plain-text reader."""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_files import OPTIONS, SAMPLE

from esbubble.core.tokens import count_tokens
from esbubble.errors import IngestError
from esbubble.ingest import IngestOptions, read_document
from esbubble.ingest.ids import chunk_id

MEMO = """Preamble line.

# Site Memo

Attended by the builder.

## Access

Access is restricted to
weekday mornings.

```
# not a heading
code block
```

Details
-------

| Action | Owner |
| --- | --- |
| Confirm dewatering | Builder |

## Access

A second Access section.
"""


def test_heading_path_paragraphs_and_tables(tmp_path: Path) -> None:
    (tmp_path / "memo.md").write_text(MEMO, encoding="utf-8")
    chunks = read_document(tmp_path / "memo.md", OPTIONS, doc_id="memo.md")
    assert [(c.section, c.text) for c in chunks] == [
        ("memo.md", "Preamble line."),
        ("Site Memo", "Attended by the builder."),
        ("Site Memo > Access", "Access is restricted to weekday mornings."),
        ("Site Memo > Access", "``` # not a heading code block ```"),
        ("Site Memo > Details", "Action: Confirm dewatering; Owner: Builder"),
        ("Site Memo > Access", "A second Access section."),
    ]
    assert chunks[4].row_number == 1 and chunks[4].compare_text == "Confirm dewatering Builder"
    # A repeated heading path continues its paragraph numbering, so locators stay unique.
    assert chunks[5].chunk_id == chunk_id("memo.md", "section=Site Memo > Access/para=3/part=0")
    assert {c.bucket for c in chunks} == {"Text"} and {c.source_type for c in chunks} == {"markdown"}


def test_long_paragraph_segments_fit_the_budget(tmp_path: Path) -> None:
    text = " ".join(
        f"Sentence number {i} describes one more detail of the podium membrane." for i in range(60)
    )
    (tmp_path / "long.md").write_text(f"# Notes\n\n{text}\n", encoding="utf-8")
    chunks = read_document(tmp_path / "long.md", IngestOptions(max_chunk_tokens=40), doc_id="long")
    assert len(chunks) > 5
    assert all(c.token_count <= 40 and c.token_count == count_tokens(c.text) for c in chunks)
    assert " ".join(c.text for c in chunks) == text
    assert [c.chunk_id for c in chunks] == [
        chunk_id("long", f"section=Notes/para=1/part={i}") for i in range(len(chunks))
    ]


def test_plain_text_has_paragraphs_and_file_section(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("# not a heading in txt\n\nSecond paragraph.\n", encoding="utf-8")
    chunks = read_document(tmp_path / "notes.txt", OPTIONS, doc_id="notes.txt")
    assert [(c.section, c.text, c.source_type) for c in chunks] == [
        ("notes.txt", "# not a heading in txt", "text"),
        ("notes.txt", "Second paragraph.", "text"),
    ]


def test_binary_or_blank_text_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bin.md").write_bytes(b"\xff\xfe\x00\x01binary")
    with pytest.raises(IngestError, match=r"bin\.md: file is not UTF-8 text"):
        read_document(tmp_path / "bin.md", OPTIONS, doc_id="bin")
    (tmp_path / "blank.txt").write_text("\n\n   \n", encoding="utf-8")
    with pytest.raises(IngestError, match=r"blank\.txt: file has no text"):
        read_document(tmp_path / "blank.txt", OPTIONS, doc_id="blank")


def test_sample_site_memo() -> None:
    chunks = read_document(SAMPLE / "site_memo.md", OPTIONS, doc_id="site_memo.md")
    sections = {c.section.split(" > ", 1)[-1] for c in chunks}
    assert {"Access and Logistics", "Existing Conditions > Basement", "Actions"} <= sections
    assert sum(1 for c in chunks if c.row_number is not None) == 3  # the action table


GFM_TABLES = """# Fixed Fields

Field Name | Type | Description
---|:---:|---
<a name="securitySchemeType"></a>type | `string` | Valid values are `"apiKey"`, `"http"`.
[`format`](#dataTypeFormat) | `string` | The extending format.

# Revisions

| **Ver.** | **Ballot** | **Effective\\*** |
|-|-|--|
| 1.6.6 | 192 | 2017-07-28 |

# Not a table

A ratio of 3 | 4 is written
-- | -- | --
"""


def test_gfm_tables_without_leading_pipes_or_with_one_hyphen_delimiters(tmp_path: Path) -> None:
    """GFM: leading pipes are optional and a delimiter cell is one or more hyphens; a header cell is a
    label (without emphasis or code marks and escapes); a cell's link reads as its text."""
    (tmp_path / "spec.md").write_text(GFM_TABLES, encoding="utf-8")
    chunks = read_document(tmp_path / "spec.md", OPTIONS, doc_id="spec")
    rows = [(c.section, c.row_number, c.text) for c in chunks if c.row_number is not None]
    assert rows == [
        (
            "Fixed Fields",
            1,
            'Field Name: type; Type: `string`; Description: Valid values are `"apiKey"`, `"http"`.',
        ),
        (
            "Fixed Fields",
            2,
            "Field Name: `format`; Type: `string`; Description: The extending format.",
        ),
        ("Revisions", 1, "Ver.: 1.6.6; Ballot: 192; Effective*: 2017-07-28"),
    ]
    # Without leading pipes, a delimiter row must have the header's number of cells (here 2 against 3).
    prose = [c for c in chunks if c.section == "Not a table"]
    assert len(prose) == 1 and prose[0].row_number is None and "3 | 4" in prose[0].text
    # only a table row stores its cells' analysed words (what a question may name)
    assert prose[0].terms is not None and prose[0].terms.cells is None
    assert all(c.terms is not None and c.terms.cells for c in chunks if c.row_number is not None)


ANCHORS = """# Info Object

<a name="infoObject"></a>The object provides metadata about the API.
<a id="line-of-its-own"></a>
Write `<a name="x"></a>` to mark a target; <a href="#info">a link</a> is its text.

```html
<a id="kept"></a>
```
"""


def test_empty_html_anchors_are_not_text(tmp_path: Path) -> None:
    """An empty anchor (``<a name="…"></a>``) renders as nothing, so it is not in a chunk's text;
    one quoted in a code span or a fenced block is text, and a link with content is its text, as a
    Markdown link is."""
    (tmp_path / "info.md").write_text(ANCHORS, encoding="utf-8")
    chunks = read_document(tmp_path / "info.md", OPTIONS, doc_id="info")
    texts = [c.text for c in chunks]
    joined = "\n".join(texts)
    assert "The object provides metadata about the API." in joined
    assert '<a name="infoObject">' not in joined
    assert 'Write `<a name="x"></a>` to mark a target; a link is its text.' in joined
    # a line of anchors only is not a paragraph break: the paragraph around it stays one, lines 3-5
    paragraph = next(c for c in chunks if "metadata about the API. Write `" in c.text)
    assert (paragraph.line_start, paragraph.line_end) == (3, 5)
    assert '<a id="kept"></a>' in joined


def test_a_table_of_its_header_row_alone_is_its_text(tmp_path: Path) -> None:
    """A pipe table with a header and no rows (a one-line note set as a table) keeps its text."""
    path = tmp_path / "note.md"
    path.write_text(
        "# Safety\n\n| Warning | Never weld near the membrane primer: it is flammable. |\n|---|---|\n",
        encoding="utf-8",
    )
    chunks = read_document(path, IngestOptions(min_chunk_tokens=0), doc_id="note.md")
    assert [(c.row_number, c.text) for c in chunks] == [
        (1, "Warning; Never weld near the membrane primer: it is flammable.")
    ]


def test_a_long_rows_continuation_names_it_by_the_cells_that_tell_rows_apart(tmp_path: Path) -> None:
    """Every table reader keys a row's continuation parts alike (``drafts.key_width``): a table of
    endpoints lists each resource's operations under the resource's name."""
    path = tmp_path / "api.md"
    notes = "The call returns the listed fields and pages them by fifty records at a time. " * 4
    path.write_text(
        "# Operations\n\n| Resource | Operation | Notes |\n|---|---|---|\n"
        f"| product | GET | {notes} |\n| product | POST | {notes} |\n",
        encoding="utf-8",
    )
    chunks = read_document(path, IngestOptions(max_chunk_tokens=48), doc_id="api.md")
    post = [c for c in chunks if c.row_number == 2]
    assert len(post) >= 2
    assert all(c.text.startswith("Resource: product; Operation: POST; … ") for c in post[1:])


def test_a_shortcut_reference_link_reads_as_its_text_when_its_label_is_defined(tmp_path: Path) -> None:
    """WHATWG's workstream policy links its defined terms by their labels alone (``the [Steering
    Group] decides``, defined at the end as ``[Steering Group]: https://…``): such a link renders as
    its text, also wrapped over two lines or written in other case. Brackets around a label the text
    does not define, or in code, are text. Phrasing and sectioning HTML tags render as nothing."""
    path = tmp_path / "policy.md"
    path.write_text(
        "# Policy\n\n"
        "Notify the [Steering Group] within 14 [days]; a location determined by the [Steering\n"
        "Group] holds the notices, see [note 3] and `[Steering Group]` in the\n"
        "<var>X</var> template.\n\n<footer>Last updated by the [steering group].</footer>\n\n"
        "[Steering Group]: https://whatwg.org/sg\n[Days]: #days\n",
        encoding="utf-8",
    )
    chunks = read_document(path, IngestOptions(min_chunk_tokens=0), doc_id="policy.md")
    assert [c.text for c in chunks] == [
        "Notify the Steering Group within 14 days; a location determined by the Steering Group holds the "
        "notices, see [note 3] and `[Steering Group]` in the X template.",
        "Last updated by the steering group.",
    ]


def test_a_line_break_tag_in_a_table_cell_is_a_space_and_code_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "cas.md"
    path.write_text(
        "# Roots\n\n| CA | Subject |\n|---|---|\n| Root | C=US,<br>O=ISRG,<BR/>CN=Root X1 |\n\n"
        "Write `<br>` for a break in a cell.\n",
        encoding="utf-8",
    )
    chunks = read_document(path, IngestOptions(min_chunk_tokens=0), doc_id="cas.md")
    assert [c.text for c in chunks] == [
        "CA: Root; Subject: C=US, O=ISRG, CN=Root X1",
        "Write `<br>` for a break in a cell.",
    ]


def test_an_html_pre_block_is_one_paragraph_up_to_its_end_tag(tmp_path: Path) -> None:
    """A ``<pre>`` block is preformatted like a fence: blank lines inside it do not split it, and it
    ends with the line holding ``</pre>`` (CommonMark's HTML block of type 1). It reads as HTML
    renders, without its tags."""
    (tmp_path / "policy.md").write_text(
        "# Policy\n\nCreate a policy with these settings:\n\n<pre>\n  Users > Include > <b>All users</b>\n\n"
        "  Conditions > User risk > <b>High</b>\n</pre>\n\nThen save it.\n",
        encoding="utf-8",
    )
    chunks = read_document(tmp_path / "policy.md", IngestOptions(min_chunk_tokens=0), doc_id="policy")
    assert [(c.text, c.line_start, c.line_end) for c in chunks] == [
        ("Create a policy with these settings:", 3, 3),
        ("Users > Include > All users Conditions > User risk > High", 5, 9),
        ("Then save it.", 11, 11),
    ]


LINKS = """---
title: "Site Access Policy"
version: 2.1

owner: Facilities
---
# 1. Scope

Gates open as set out in [Section 4](#section-4) and the
[county rules](https://example.org/rules "County rules"). ![Approved](https://example.org/badge.svg)
See the [permit office][office], the [`gate_open`][] flag and [![badge](b.svg)](https://example.org).
Write `[not a link](x)` in code. A [bracket] alone stays.

[office]: https://example.org/permits
[`gate_open`]: #gate-open

[^1]: Deprecated.
"""


def test_links_and_images_read_as_their_text_and_front_matter_is_one_paragraph(tmp_path: Path) -> None:
    """A link or image is its text, as it renders; a link reference definition is nothing, a
    footnote is text; a YAML front matter is one paragraph without its fences, blank lines and
    all, and its title is the document's title ahead of the first H1."""
    (tmp_path / "policy.md").write_text(LINKS, encoding="utf-8")
    chunks = read_document(tmp_path / "policy.md", IngestOptions(min_chunk_tokens=0), doc_id="policy")
    assert [(c.section, c.text, c.line_start, c.line_end) for c in chunks] == [
        ("policy.md", 'title: "Site Access Policy" version: 2.1 owner: Facilities', 2, 5),
        (
            "1. Scope",
            "Gates open as set out in Section 4 and the county rules. Approved See the permit office, the"
            " `gate_open` flag and badge. Write `[not a link](x)` in code. A [bracket] alone stays.",
            9,
            12,
        ),
        ("1. Scope", "[^1]: Deprecated.", 17, 17),
    ]
    assert {c.context.split(" > ")[0] for c in chunks} == {"Site Access Policy"}


def test_a_link_to_a_liquid_variable_reads_as_its_text(tmp_path: Path) -> None:
    """A Jekyll site fills in ``{{ site.email_support }}`` before rendering, so the link renders as
    its text, as any link does; a Liquid tag outside a link is left as written."""
    (tmp_path / "terms.md").write_text(
        "# Terms\n\nAsk [our Support team]({{ site.email_support }}) or [email us]({{ site.url }}/contact"
        ' "Contact").\nThe {{ site.name }} team answers.\n',
        encoding="utf-8",
    )
    chunks = read_document(tmp_path / "terms.md", IngestOptions(min_chunk_tokens=0), doc_id="terms")
    assert [c.text for c in chunks] == ["Ask our Support team or email us. The {{ site.name }} team answers."]


def test_a_front_matter_never_closed_is_text(tmp_path: Path) -> None:
    """A ``---`` opening the file with no closing line is a thematic break, not a front matter."""
    (tmp_path / "notes.md").write_text("---\ntitle: Draft\n\nThe gate opens at 7.\n", encoding="utf-8")
    chunks = read_document(tmp_path / "notes.md", IngestOptions(min_chunk_tokens=0), doc_id="notes")
    assert [c.text for c in chunks] == ["title: Draft", "The gate opens at 7."]
    assert chunks[0].context.startswith("notes")


FORMATTING = """# Gate **rules**

**Scope.** The _Licensor_ opens gates at 7&nbsp;am; see <https://example.org/gates> &amp; the
*site* rules. Keep `**as written**` and `&amp;` in code. A snake_case_name, __init__, 2*3*4,
files *.txt and *.md, \\*not emphasis\\*, a \\_ and **Effective\\***: 2012-05-29 read as shown.
An opening mark before a space is text: **Basic: **We ask. <b>Bold</b> and <span class="x">span</span>.

| **Field** | `Type` | Note |
|---|---|---|
| _gate_id_ | ID | **Required** \\| unique |

```
**literal** &amp; <b>kept</b>
```

<pre>
  Access &gt; <b>All users</b>
</pre>
"""


def test_inline_formatting_reads_as_it_renders_outside_code(tmp_path: Path) -> None:
    """Emphasis is its text, under CommonMark's flanking rules in short (a run does not open before a
    space, an underscore not inside a word); an escape is its character, an entity reference its
    character, an autolink its address, a phrasing tag nothing; an escaped pipe stays in its cell. Code
    spans and fenced blocks keep everything; an HTML ``<pre>`` block loses its tags and reads its
    entities, as HTML does."""
    (tmp_path / "gates.md").write_text(FORMATTING, encoding="utf-8")
    chunks = read_document(tmp_path / "gates.md", IngestOptions(min_chunk_tokens=0), doc_id="gates")
    assert [(c.section, c.text) for c in chunks] == [
        (
            "Gate rules",
            "Scope. The Licensor opens gates at 7 am; see https://example.org/gates & the site rules. Keep"
            " `**as written**` and `&amp;` in code. A snake_case_name, init, 234, files *.txt and *.md,"
            " *not emphasis*, a _ and Effective*: 2012-05-29 read as shown. An opening mark before a space"
            " is text: **Basic: **We ask. Bold and span.",
        ),
        ("Gate rules", "Field: gate_id; Type: ID; Note: Required | unique"),
        ("Gate rules", "``` **literal** &amp; <b>kept</b> ```"),
        ("Gate rules", "Access > All users"),
    ]


HTML_TABLE = """# Notice
Effective May 4, 2026
{: datetime="2026-05-04" }

## Lawful bases {#lawful-bases}

<table>
  <thead>
    <tr><th>What we use your data for</th><th>What data we process</th><th>Our lawful basis</th></tr>
  </thead>
  <tbody>
    <tr>
      <td><a id="how-we-use"></a>To provide the browser</td>
      <td>
        <ul>
          <li>Technical data</li>
          <li>Location</li>
        </ul>
      </td>
      <td>
        <p><strong>Contract</strong> to operate.</p>

        <p>Learn about <a href="https://example.org/storage">storage settings</a> &amp; more.</p>
      </td>
    </tr>
    <tr><td>To communicate with you</td><td>Contact data</td><td>Legitimate interest</td></tr>
  </tbody>
</table>

Questions? Write to us.
"""


def test_an_html_table_reads_as_a_table(tmp_path: Path) -> None:
    """An HTML ``<table>`` in Markdown gives one chunk per row under its ``<th>`` header, each cell as
    it renders (a list's items set off by commas, a link as its text, entities read); a blank line
    inside it does not end it. A kramdown attribute list, on its own line or after a heading, is
    nothing."""
    (tmp_path / "notice.md").write_text(HTML_TABLE, encoding="utf-8")
    chunks = read_document(tmp_path / "notice.md", IngestOptions(min_chunk_tokens=0), doc_id="notice")
    assert [(c.section, c.row_number, c.text) for c in chunks] == [
        ("Notice", None, "Effective May 4, 2026"),
        (
            "Notice > Lawful bases",
            1,
            "What we use your data for: To provide the browser; What data we process: Technical data, "
            "Location; Our lawful basis: Contract to operate. Learn about storage settings & more.",
        ),
        (
            "Notice > Lawful bases",
            2,
            "What we use your data for: To communicate with you; What data we process: Contact data; "
            "Our lawful basis: Legitimate interest",
        ),
        ("Notice > Lawful bases", None, "Questions? Write to us."),
    ]
    assert "What data we process" in chunks[1].context


def test_an_html_table_without_th_cells_has_no_header(tmp_path: Path) -> None:
    """A table whose first row is not all ``<th>`` has no header: each row is its values; a table
    nested in a cell is read into that cell."""
    (tmp_path / "t.md").write_text(
        "# T\n\n<table><tr><td>Alpha</td><td>one</td></tr>\n"
        "<tr><td>Beta</td><td><table><tr><td>two</td><td>three</td></tr></table></td></tr></table>\n",
        encoding="utf-8",
    )
    chunks = read_document(tmp_path / "t.md", IngestOptions(min_chunk_tokens=0), doc_id="t")
    assert [(c.row_number, c.text) for c in chunks] == [(1, "Alpha; one"), (2, "Beta; two three")]


def test_an_html_table_the_file_ends_inside_keeps_its_rows(tmp_path: Path) -> None:
    """A table with no ``</table>`` (a file cut short) is read to the end of the file, its last row too."""
    (tmp_path / "cut.md").write_text(
        "# Cut\n\n<table>\n<tr><th>Term</th><th>Meaning</th></tr>\n<tr><td>CA</td><td>contract attribute",
        encoding="utf-8",
    )
    chunks = read_document(tmp_path / "cut.md", IngestOptions(min_chunk_tokens=0), doc_id="cut")
    assert [(c.row_number, c.text) for c in chunks] == [(1, "Term: CA; Meaning: contract attribute")]


CLAUSES = """# Data Processing Agreement

1. <span class="header_2">Processing</span>

    1. <span class="header_3">Processing Details.</span>  Annex I describes the subject matter.

    2. **Subprocessors.**

        a. Provider will not hand over data to a Subprocessor unless Customer approves.

        b. Provider remains fully liable for its Subprocessors.

    3. <span class="header_3">Customer Processing.</span>  Customer will comply with Applicable Laws.

2. <span class="header_2">Restricted Transfers</span>

    1. The module applies as follows:

        i. The optional docking clause does not apply.

A closing paragraph under no clause.
"""


def test_list_items_that_title_the_items_under_them_are_headings(tmp_path: Path) -> None:
    """An agreement's clauses as a numbered list: an item of a short title alone (``1. Processing``,
    ``2. **Subprocessors.**``) with items indented under it heads them, with its number, up to the
    next block indented no deeper; a lead-in ending in a colon and an item with text of its own do not."""
    (tmp_path / "dpa.md").write_text(CLAUSES, encoding="utf-8")
    chunks = read_document(tmp_path / "dpa.md", IngestOptions(min_chunk_tokens=0), doc_id="dpa")
    title = "Data Processing Agreement"
    assert [(c.section, c.text) for c in chunks] == [
        (f"{title} > 1. Processing", "1. Processing Details. Annex I describes the subject matter."),
        (
            f"{title} > 1. Processing > 2. Subprocessors.",
            "a. Provider will not hand over data to a Subprocessor unless Customer approves.",
        ),
        (
            f"{title} > 1. Processing > 2. Subprocessors.",
            "b. Provider remains fully liable for its Subprocessors.",
        ),
        (f"{title} > 1. Processing", "3. Customer Processing. Customer will comply with Applicable Laws."),
        (f"{title} > 2. Restricted Transfers", "1. The module applies as follows:"),
        (f"{title} > 2. Restricted Transfers", "i. The optional docking clause does not apply."),
        (title, "A closing paragraph under no clause."),
    ]
    assert chunks[1].context == f"{title} > 1. Processing > 2. Subprocessors."


def test_a_document_whose_first_heading_is_a_list_title_keeps_its_file_title(tmp_path: Path) -> None:
    (tmp_path / "terms.md").write_text(
        "1. Definitions\n\n   a. Service means the hosted product.\n", encoding="utf-8"
    )
    (chunk,) = read_document(tmp_path / "terms.md", IngestOptions(min_chunk_tokens=0), doc_id="terms")
    assert (chunk.section, chunk.context) == ("1. Definitions", "terms > 1. Definitions")


def test_a_link_or_emphasis_over_a_paragraphs_lines_a_rule_and_a_quote_read_as_they_render(
    tmp_path: Path,
) -> None:
    """Hard-wrapped Markdown (a governance proposal) wraps emphasis and links over lines: they render
    as their text all the same. A thematic break (``----``) is a rule, not text of the next paragraph;
    a block quote reads as its text, a fenced block inside it as code, closed by its quoted fence."""
    (tmp_path / "gov.md").write_text(
        "# Governance\n\n----\n**This proposal is now formalised in the\nRules of the Foundation.**\n"
        "See [the rules\ndocument](https://example.org/rules) and *the\nannex*.\n\n* * *\n\n"
        "> 4. The objects of the Foundation are\n> to:\n>\n> 4.1.1  empower users.\n\n"
        "> ```\n> > not a quote\n> ```\n\nAfter the quote.\n",
        encoding="utf-8",
    )
    chunks = read_document(tmp_path / "gov.md", IngestOptions(min_chunk_tokens=0), doc_id="gov.md")
    assert [c.text for c in chunks] == [
        "This proposal is now formalised in the Rules of the Foundation."
        " See the rules document and the annex.",
        "4. The objects of the Foundation are to:",
        "4.1.1 empower users.",
        "``` > not a quote ```",
        "After the quote.",
    ]


def test_ordered_list_items_are_numbered_as_they_render(tmp_path: Path) -> None:
    """Lists written with ``1.`` for every item (the WHATWG's policy) count up from their first item's
    number; a nested list counts on its own and the outer list goes on after it; a paragraph after
    a blank line, or a heading, ends a list; a list written ``3.``, ``6.`` renders ``3.``, ``4.``."""
    text = (
        "# Policy\n\n"
        "1. Anyone can propose.\n"
        "1. A proposal must include:\n"
        "   1. A name.\n"
        "   1. A scope.\n"
        "1. The group responds.\n\n"
        "A paragraph ends the list.\n\n"
        "1. A new list.\n\n"
        "## Steps\n\n"
        "3. Open the portal.\n\n"
        "6. Review the output.\n"
    )
    (tmp_path / "policy.md").write_text(text, encoding="utf-8")
    chunks = read_document(tmp_path / "policy.md", IngestOptions(min_chunk_tokens=0), doc_id="policy")
    assert [c.text for c in chunks] == [
        "1. Anyone can propose. 2. A proposal must include: 1. A name. 2. A scope. 3. The group responds.",
        "A paragraph ends the list.",
        "1. A new list.",
        "3. Open the portal.",
        "4. Review the output.",
    ]


def test_a_toml_front_matter_titles_the_document_and_a_late_h1_does_not(tmp_path: Path) -> None:
    """Hugo writes its front matter in TOML between ``+++`` lines; its ``title = "…"`` is the title.
    Without one, an H1 after sections with text (``# 6.`` where the others are ``##``) is no title,
    while an H1 under a logo line is."""
    (tmp_path / "bylaws.md").write_text(
        '+++\ntitle = "Nordix Association Bylaws"\ndownload = "bylaws.pdf"\n+++\n\n'
        "## 1. Name\n\n1.1. The name is Nordix.\n",
        encoding="utf-8",
    )
    options = IngestOptions(min_chunk_tokens=0)
    chunks = read_document(tmp_path / "bylaws.md", options, doc_id="bylaws")
    assert [(c.context, c.text) for c in chunks] == [
        ("Nordix Association Bylaws", 'title = "Nordix Association Bylaws" download = "bylaws.pdf"'),
        ("Nordix Association Bylaws > 1. Name", "1.1. The name is Nordix."),
    ]
    slip = "## 1. Name\n\nThe name.\n\n# 6. Chairman\n\nThe chair.\n"
    (tmp_path / "slip.md").write_text(slip, encoding="utf-8")
    assert [c.context for c in read_document(tmp_path / "slip.md", options, doc_id="slip")] == [
        "slip > 1. Name",
        "slip > 6. Chairman",
    ]
    (tmp_path / "cc.md").write_text("## creative commons\n\n# Attribution 4.0\n\nText.\n", encoding="utf-8")
    assert [c.context for c in read_document(tmp_path / "cc.md", options, doc_id="cc")] == ["Attribution 4.0"]
