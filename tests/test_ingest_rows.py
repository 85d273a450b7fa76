"""How a table row's cells become its text (``drafts.collapse_repeats``), for every table reader."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from esbubble.ingest.drafts import Cell, collapse_repeats

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
