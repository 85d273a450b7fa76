"""No fragments: short paragraphs join a neighbour of the same section; locators keep both numbers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbubble.core.tokens import count_tokens
from esbubble.ingest import IngestOptions, ingest_paths, read_document
from esbubble.ingest.drafts import Draft, Paragraph
from esbubble.ingest.fragments import Block, join_fragments
from esbubble.ingest.ids import chunk_id
from esbubble.store.connection import Store

DEFAULTS = IngestOptions()
LONG = "The membrane is lapped by one hundred millimetres at every joint and rolled flat before inspection."
GUIDE = f"""# Guide

## Install

The following code:

```
pip install esbubble
```

{LONG}

Refs:

## Notes

Short.

| Item | Rate |
| --- | --- |
| Membrane | 68.50 |

{LONG}
"""


def _paragraph(number: int, text: str, section: str = "S", scope: str = "section=S") -> Paragraph:
    return Paragraph(scope=scope, numbers=(number,), text=text, section=section, context=section)


def test_fragments_join_the_next_paragraph_and_a_trailing_one_the_previous(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(GUIDE, encoding="utf-8")
    chunks = read_document(tmp_path / "guide.md", DEFAULTS, doc_id="guide.md")
    assert [(c.section, c.text) for c in chunks] == [
        ("Guide > Install", "The following code: ``` pip install esbubble ```"),
        ("Guide > Install", f"{LONG} Refs:"),
        ("Guide > Notes", "Short."),  # the table is not prose: nothing of its section to join before it
        ("Guide > Notes", "Item: Membrane; Rate: 68.50"),
        ("Guide > Notes", LONG),
    ]
    assert [c.chunk_id for c in chunks[:2]] == [
        chunk_id("guide.md", "section=Guide > Install/para=1+2/part=0"),
        chunk_id("guide.md", "section=Guide > Install/para=3+4/part=0"),
    ]
    assert (chunks[0].line_start, chunks[0].line_end) == (5, 9)
    assert (chunks[1].line_start, chunks[1].line_end) == (11, 13)


def test_zero_keeps_every_paragraph(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(GUIDE, encoding="utf-8")
    chunks = read_document(tmp_path / "guide.md", IngestOptions(min_chunk_tokens=0), doc_id="guide.md")
    assert [c.text for c in chunks][:4] == [
        "The following code:",
        "``` pip install esbubble ```",
        LONG,
        "Refs:",
    ]


def test_fragments_never_cross_sections_or_pages() -> None:
    blocks: list[Block] = [
        _paragraph(1, "Alone.", section="A", scope="section=A"),
        _paragraph(1, LONG, section="B", scope="section=B"),
        _paragraph(1, "Tail.", section="C", scope="page=1"),
        _paragraph(1, "Head.", section="C", scope="page=2"),
    ]
    assert join_fragments(blocks, 12, "o200k_base") == blocks


def test_a_lead_in_joins_the_next_paragraph_whatever_its_length() -> None:
    lead = "There are two important requirements for the way the database is stored and read:"
    assert count_tokens(lead) >= 12
    [joined] = join_fragments([_paragraph(1, lead), _paragraph(2, LONG)], 12, "o200k_base")
    assert isinstance(joined, Paragraph)
    assert joined.numbers == (1, 2) and joined.locator == "section=S/para=1+2"


def test_a_short_label_and_value_line_closes_the_paragraph_before_it() -> None:
    """ADDA's option list sets each option's default on a line of its own after its description:
    joined forward, ``Default: sphere`` went with the next option (``Default: sphere -size <arg>
    Sets the size …``). A short ``Label: value`` line joins the paragraph before it; a lead-in ending
    with a colon still joins the next."""
    describe = "Sets shape of the particle, either predefined or read from file, with its parameters."
    blocks: list[Block] = [
        _paragraph(1, "-shape <type> [<args>]"),
        _paragraph(2, describe),
        _paragraph(3, "Default: sphere"),
        _paragraph(4, "-size <arg>"),
        _paragraph(5, LONG),
        _paragraph(6, "Note: the size is read as:"),
        _paragraph(7, LONG),
    ]
    joined = join_fragments(blocks, 12, "o200k_base")
    assert [b.text for b in joined if isinstance(b, Paragraph)] == [
        f"-shape <type> [<args>]\n{describe}\nDefault: sphere",
        f"-size <arg>\n{LONG}",
        f"Note: the size is read as:\n{LONG}",
    ]


def test_rows_between_paragraphs_stop_a_join() -> None:
    row = (
        Draft(
            locator="section=S/table=1/row=1/part=0",
            section="S",
            default_bucket="T",
            text="a",
            compare_text="a",
        ),
    )
    blocks: list[Block] = [_paragraph(1, "Lead."), row, _paragraph(2, LONG)]
    assert join_fragments(blocks, 12, "o200k_base") == blocks


_TEXTS = st.sampled_from(
    [
        "Ok.",
        "Refs:",
        "Short line here.",
        "Default: none",
        LONG,
        "A second, longer sentence that states a fact.",
    ]
)


@given(st.lists(st.tuples(st.sampled_from(["A", "B"]), _TEXTS), min_size=1, max_size=12))
def test_joining_keeps_all_text_in_order_and_leaves_no_joinable_fragment(
    items: list[tuple[str, str]],
) -> None:
    counters: dict[str, int] = {}
    blocks: list[Block] = []
    for section, text in items:
        counters[section] = counters.get(section, 0) + 1
        blocks.append(_paragraph(counters[section], text, section=section, scope=f"section={section}"))
    joined = join_fragments(blocks, 12, "o200k_base")
    paragraphs = [b for b in joined if isinstance(b, Paragraph)]
    # Every word survives, in document order, exactly once.
    assert " ".join(p.text for p in paragraphs).split() == " ".join(text for _, text in items).split()
    # Locators stay unique, and each original paragraph number appears once.
    assert len({p.locator for p in paragraphs}) == len(paragraphs)
    for section in ("A", "B"):
        numbers = [n for p in paragraphs if p.section == section for n in p.numbers]
        assert numbers == list(range(1, counters.get(section, 0) + 1))
    # A fragment survives only when no paragraph of its section is next to it.
    for index, paragraph in enumerate(paragraphs):
        if count_tokens(paragraph.text) < 12:
            neighbours = paragraphs[max(0, index - 1) : index] + paragraphs[index + 1 : index + 2]
            assert all(n.section != paragraph.section for n in neighbours)


def test_ids_are_derived_and_stable_across_reads(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(GUIDE, encoding="utf-8")
    first = read_document(tmp_path / "guide.md", DEFAULTS, doc_id="guide.md")
    assert first == read_document(tmp_path / "guide.md", DEFAULTS, doc_id="guide.md")
    # An edit in one section leaves the ids and hashes of the other section alone.
    (tmp_path / "guide.md").write_text(GUIDE.replace("Short.", "Short, edited."), encoding="utf-8")
    edited = read_document(tmp_path / "guide.md", DEFAULTS, doc_id="guide.md")
    assert [(c.chunk_id, c.content_hash) for c in edited[:2]] == [
        (c.chunk_id, c.content_hash) for c in first[:2]
    ]


@pytest.mark.integration
def test_re_ingest_with_joined_fragments_is_idempotent(store: Store, tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(GUIDE, encoding="utf-8")
    (tmp_path / "LICENSE").write_text("1. Scope\n\nThis applies to the podium slab only.\n", encoding="utf-8")
    now = datetime(2025, 3, 1, tzinfo=UTC)
    first = ingest_paths(store, [tmp_path], DEFAULTS, now=now)
    assert first.ok and sorted(d.doc_id for d in first.documents) == ["LICENSE", "guide.md"]
    again = ingest_paths(store, [tmp_path], DEFAULTS, now=now)
    assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, first.added)
