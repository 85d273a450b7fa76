"""How a table row's cells become its text (``drafts.collapse_repeats``), for every table reader."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from esbubble.core.tokens import count_tokens
from esbubble.ingest import IngestOptions
from esbubble.ingest.drafts import Cell, collapse_repeats, key_width, row_drafts, row_parts

cells = st.lists(
    st.builds(Cell, header=st.sampled_from(["", "a", "b", "c", "d"]), value=st.sampled_from(["1", "2", "x"])),
    max_size=12,
)


def test_runs_of_three_or_more_equal_values_under_headers_read_once() -> None:
    row = [Cell("Qty", "1"), Cell("Unit", "1"), Cell("SAP", "n/a"), Cell("SAR", "n/a"), Cell("POA&M", "n/a")]
    assert collapse_repeats(row) == [Cell("Qty", "1"), Cell("Unit", "1"), Cell("SAP, SAR, POA&M", "n/a")]
    long = [Cell(h, "Denmark") for h in ("Name", "bul", "spa", "deu")]
    assert collapse_repeats(long) == [Cell("Name … deu", "Denmark")]


def test_cells_without_a_header_are_never_merged() -> None:
    row = [Cell("", "Yes"), Cell("", "Yes"), Cell("", "Yes")]
    assert collapse_repeats(row) == row


@given(cells)
def test_collapsing_keeps_every_value_in_order_and_only_drops_repeats(row: list[Cell]) -> None:
    collapsed = collapse_repeats(row)

    def runs(values: list[str]) -> list[str]:
        return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]

    assert runs([c.value for c in collapsed]) == runs([c.value for c in row])
    assert [c for c in collapsed if not c.header] == [c for c in row if not c.header]
    assert len(collapsed) <= len(row)
    if all(a.value != b.value for a, b in pairwise(row)):
        assert collapsed == row


def test_a_rows_key_is_its_fewest_leading_cells_that_tell_the_rows_apart() -> None:
    def table(*rows: tuple[str, ...]) -> list[list[Cell]]:
        return [[Cell(f"h{i}", value) for i, value in enumerate(row)] for row in rows]

    assert key_width(table(("a", "x", "1"), ("b", "x", "1"))) == 1  # a code list: its code
    assert key_width(table(("T", "f1", "1"), ("T", "f2", "1"), ("U", "f1", "1"))) == 2  # a table's fields
    assert key_width(table(("T", "g", "f1"), ("T", "g", "f2"))) == 3
    # no width tells more rows apart than one cell does: one cell
    assert key_width(table(("T", "x", "1"), ("T", "x", "1"))) == 1
    assert key_width([]) == 1


def test_a_continuation_leads_with_as_many_key_cells_as_are_short() -> None:
    row = [
        Cell("Table", "PERSON"),
        Cell("Field", "year_of_birth"),
        *(Cell(f"c{n}", "word " * 20) for n in range(6)),
    ]
    parts = row_parts(row, 64, "o200k_base", key=2)
    assert len(parts) > 2 and all(
        text.startswith("Table: PERSON; Field: year_of_birth; … c") for text, _ in parts[1:]
    )
    long_field = [row[0], Cell("Field", "a field named by a whole sentence of many words " * 2), *row[2:]]
    parts = row_parts(long_field, 64, "o200k_base", key=2)
    assert all(text.startswith("Table: PERSON; … ") for text, _ in parts[1:])


def test_a_header_written_as_a_label_names_its_value_once() -> None:
    """Microsoft's security benchmark writes some column headers with a colon (``Customer Security
    Stakeholders:``): the cell reads ``Customer Security Stakeholders: Security architecture``."""
    cells = [Cell("ID", "NS-1"), Cell("Customer Security Stakeholders: ", "Security architecture")]
    (draft,) = row_drafts(
        "sheet=NS/row=2", cells, IngestOptions(), section="NS", default_bucket="NS", sheet_name="NS",
        row_number=2, context="",
    )  # fmt: skip
    assert draft.text == "ID: NS-1; Customer Security Stakeholders: Security architecture"
    assert draft.compare_text == "NS-1 Security architecture"


words = st.text(alphabet="abcdefgh ", min_size=1, max_size=60).map(str.strip).filter(bool)


@given(
    st.lists(
        st.builds(Cell, header=st.sampled_from(["", "Table", "Field", "Note"]), value=words),
        min_size=2,
        max_size=8,
    ),
    st.integers(min_value=1, max_value=3),
    st.integers(min_value=24, max_value=64),
)
def test_a_rows_parts_fit_and_hold_the_row_once_besides_their_lead(
    cells: list[Cell], key: int, limit: int
) -> None:
    """However many key cells lead them, a row's parts fit the limit, and without their leads they
    are the row's text, every cell in order."""
    parts = [text for text, _ in row_parts(cells, limit, "o200k_base", key=key)]
    assert all(count_tokens(text) <= limit for text in parts)
    leads = {f"{'; '.join(c.display for c in cells[:width])}; … " for width in range(1, key + 1)}
    rest = [
        next((text.removeprefix(lead) for lead in leads if text.startswith(lead)), text) for text in parts[1:]
    ]
    # parts are cut between cells (the joiner goes) or, in a cell too long for one, between words
    read = " ".join([parts[0], *rest]).replace(";", " ").split()
    assert read == " ".join(c.display for c in cells).split()


@given(st.lists(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4), max_size=12))
def test_a_key_width_is_one_to_three_and_one_when_the_first_cells_differ(values: list[list[str]]) -> None:
    rows = [[Cell("", value) for value in row] for row in values]
    width = key_width(rows)
    assert 1 <= width <= 3
    if len({row[0] for row in values}) == len(values):
        assert width == 1
