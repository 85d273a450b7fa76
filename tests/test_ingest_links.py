"""Codes shared across a workbook's tables (``esbubble.ingest.links``), on rows built here."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from esbubble.core.named import is_code
from esbubble.ingest.drafts import Cell
from esbubble.ingest.links import TableRow, code_labels, links


def _rows(table: str, header: tuple[str, ...], *values: tuple[str, ...]) -> list[TableRow]:
    return [
        TableRow(table, tuple(Cell(h, v) for h, v in zip(header, row, strict=True) if v)) for row in values
    ]


NAMES = _rows(
    "sheet=Names",
    ("Code", "Name"),
    ("AT111", "Mittelburgenland"),
    ("AT112", "Nordburgenland"),
    ("AT113", "Südburgenland"),
    ("AT121", "Mostviertel-Eisenwurzen"),
    ("AT122", "Niederösterreich-Süd"),
)


def test_codes_hold_letters_and_digits() -> None:
    assert [is_code(v) for v in ["BE100", "E92000001", "TECC014", "NO001MC", "DE91B"]] == [True] * 5
    # a number, a date, a word, a two-letter code that means one thing in one list and another in the next
    assert [is_code(v) for v in ["4", "2019", "2021-01-01", "ENGLAND", "SL", "x1", "AT 111"]] == [False] * 7


def test_a_key_column_labels_its_codes_with_the_rows_first_words() -> None:
    labels = code_labels(NAMES)
    assert labels["AT111"] == ("sheet=Names", "Mittelburgenland")
    assert len(labels) == 5


def test_a_column_with_repeated_values_or_too_few_rows_is_no_key() -> None:
    repeated = _rows("sheet=T", ("Code", "Name"), *[("AT111", f"Name {n}") for n in range(6)])
    assert code_labels(repeated) == {}
    assert code_labels(NAMES[:4]) == {}  # four rows: as well a header and three records


def test_a_row_of_another_table_is_linked_once_per_code_and_at_most_three_times() -> None:
    labels = code_labels(NAMES)
    [row] = _rows("sheet=Data", ("A", "B", "C", "D", "E"), ("AT111", "AT111", "AT112", "AT113", "AT121"))
    assert links(row, labels) == [
        "AT111 = Mittelburgenland",
        "AT112 = Nordburgenland",
        "AT113 = Südburgenland",
    ]
    # the table that names a code, and a row that already says the name, get nothing
    assert links(NAMES[0], labels) == []
    [named] = _rows("sheet=Data", ("Id", "Region"), ("AT111", "Mittelburgenland (AT)"))
    assert links(named, labels) == []


@given(
    st.lists(
        st.tuples(st.from_regex(r"[A-Z]{2}[0-9]{1,3}", fullmatch=True), st.text(min_size=1)), max_size=12
    )
)
def test_links_only_name_codes_the_row_holds(pairs: list[tuple[str, str]]) -> None:
    rows = [TableRow("sheet=Names", (Cell("Code", code), Cell("Name", name))) for code, name in pairs]
    labels = code_labels(rows)
    probe = TableRow("sheet=Other", tuple(Cell("Ref", code) for code, _ in pairs))
    for note in links(probe, labels):
        code, _, label = note.partition(" = ")
        assert code in {c for c, _ in pairs} and labels[code][1] == label


def test_a_label_is_one_line_and_short() -> None:
    rows = [
        TableRow("sheet=Names", (Cell("Code", f"AT11{n}"), Cell("Name", f"Burgen\n  land {n} " + "x" * 90)))
        for n in range(5)
    ]
    label = code_labels(rows)["AT110"][1]
    assert label.startswith("Burgen land 0 x") and "\n" not in label
    assert len(label) == 80 and label.endswith("…")
