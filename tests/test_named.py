"""Rows the question names (``core.named``): which cell value a question names, and what that weighs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import text_candidate
from hypothesis import given
from hypothesis import strategies as st

from esbubble.app.cli_render import explain
from esbubble.config import BubbleConfig
from esbubble.core.bubble import build_bubble
from esbubble.core.named import NamedRows, cell_terms, cell_values, link_labels
from esbubble.core.relevance import TermStats
from esbubble.models import Candidate

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_row_is_named_by_a_question_that_says_one_of_its_cell_values() -> None:
    resets = NamedRows("What is the difference between a Power-on Reset and a Processor Reset?")
    assert resets.value("Term: Processor Reset; Definition: The processor resets via its reset pin.") == (
        "Processor Reset"
    )
    # the analysed words: "Resets" is "reset", and stop words are dropped on both sides
    assert resets.value("Term: Power-on Resets") == "Power-on Resets"
    assert resets.value("Term: Resets of a Processor") == "Resets of a Processor"
    # the question's words, not in the question's order
    assert resets.value("Term: Processor Power; Definition: …") is None
    england = NamedRows("How many high growth enterprises were there in England in 2024?")
    assert england.value("geo_name: ENGLAND; geo_code: E92000001; year: 2024") == "ENGLAND"
    # the word alone is not the name: these rows are about other places
    assert england.value("geo_name: Greater West of England; geo_code: GWE; year: 2024") is None
    assert england.value("geo_name: England excluding London; year: 2024") is None
    # a value without a letter names nothing, though the question says 2024
    assert england.value("year: 2024; count: 12720") is None


def test_a_cell_without_a_header_is_read_whole_and_a_value_from_its_first_mark_on() -> None:
    assert NamedRows("Which code does Oslo have?").value("Oslo; Code 2021: NO081") == "Oslo"
    assert NamedRows("What is the ratio b?").value("Code: 7; Note: ratio: b") == "ratio: b"


def test_a_row_is_named_through_the_label_its_context_gives_one_of_its_codes() -> None:
    context = "nuts > Metropolitan | NUTS_ID, METRO | NO081 = Oslo; NO082 = Viken"
    assert link_labels(context) == ["Oslo", "Viken"]
    rows = NamedRows("Is Viken part of a metropolitan region?")
    assert rows.value("NUTS_ID: NO082; METRO: N", context) == "Viken"
    # a cell the question names comes first
    assert NamedRows("Viken or N?").value("NUTS_ID: NO082; METRO: N", context) == "N"
    # column headers are no links, though one says " = ", and neither is a note whose left is no code
    headers = "nuts > Changes | Code, Label, Explanation (new = old)"
    assert link_labels(headers) == [] and link_labels("nuts > x | Total = Oslo") == []
    assert NamedRows("what is old?").value("Code: NO082; Label: Viken", headers) is None


def test_a_rows_values_are_its_cells_then_its_linked_labels() -> None:
    context = "nuts > Metropolitan | NUTS_ID, METRO | NO081 = Oslo"
    assert cell_values("NUTS_ID: NO081; METRO: Y; 2024", context) == ["NO081", "Y", "2024", "Oslo"]
    assert cell_terms("NUTS_ID: NO081; METRO: Y; 2024", context) == [["no081"], ["y"], [], ["oslo"]]


_WORDS = st.sampled_from(["oslo", "Viken", "the", "of", "new", "code", "Resets", "reset", "2024", "N"])


@given(
    st.lists(_WORDS, min_size=1, max_size=6),
    st.lists(st.lists(_WORDS, min_size=1, max_size=3), min_size=1, max_size=4),
    st.lists(st.lists(_WORDS, min_size=1, max_size=2), max_size=2),
)
def test_names_read_from_stored_cells_are_the_names_read_from_the_text(
    question: list[str], cells: list[list[str]], labels: list[list[str]]
) -> None:
    """What a bubble reads from the terms ingest stored is what it would read from the row's text."""
    text = "; ".join(f"h{k}: {' '.join(words)}" for k, words in enumerate(cells))
    links = "; ".join(f"NO{k}1 = {' '.join(words)}" for k, words in enumerate(labels))
    context = f"t > s | h0{' | ' + links if links else ''}"
    query = " ".join(question)
    stored = NamedRows(query).value(text, context, cell_terms(text, context))
    assert stored == NamedRows(query).value(text, context)


def test_a_question_of_stop_words_names_nothing() -> None:
    assert NamedRows("what is it?").value("Term: it") is None


@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "the", "of"]), min_size=1, max_size=6))
def test_every_run_of_the_question_is_a_name_and_nothing_longer_is(words: list[str]) -> None:
    """A value made of consecutive words of the question is named; one with a word the question lacks
    is not."""
    question = " ".join(words)
    rows = NamedRows(question)
    for start in range(len(words)):
        for end in range(start + 1, len(words) + 1):
            value = " ".join(words[start:end])
            if value.replace("the", "").replace("of", "").strip():  # a run of stop words alone is no name
                assert rows.value(f"Name: {value}") == value
    assert rows.value(f"Name: {question} epsilon") is None


def _row(chunk_id: str, text: str, tokens: int) -> Candidate:
    candidate = text_candidate(chunk_id, "analysis_data", text, tokens)
    return candidate.model_copy(update={"chunk": candidate.chunk.model_copy(update={"row_number": 2})})


def test_the_row_the_question_names_outbids_rows_that_only_share_its_words() -> None:
    """Coverage order: three rows match *england*, *2024* and *count* alike, and there is room for one.
    Without ``named_row`` the shortest wins on gain per token; with it, the row about England."""
    rows = [
        _row("a_gwe", "geo_name: Greater West of England; year: 2024; count: 595", 20),
        _row("b_excl", "geo_name: England excluding London; year: 2024; count: 9180", 22),
        _row("c_england", "geo_name: ENGLAND; year: 2024; count: 12720", 24),
    ]
    query = "What was the count in England in 2024?"
    stats = TermStats(doc_count=1000, df={"count": 100, "england": 100, "2024": 100})
    config = BubbleConfig().with_overrides(token_budget=25)

    def bubble(config: BubbleConfig) -> dict[str, dict[str, object]]:
        built = build_bubble(query, rows, config, run_id="r", now=NOW, stats=stats)
        return {r["chunk_id"]: dict(r) for r in built.trace}

    off, on = bubble(config.with_overrides(named_row=0.0)), bubble(config)
    assert [c for c, r in off.items() if r["final_decision"] == "selected"] == ["a_gwe"]
    assert [c for c, r in on.items() if r["final_decision"] == "selected"] == ["c_england"]
    weight = 1.0 + config.bubble.named_row
    assert on["c_england"]["named"] == "ENGLAND" and on["c_england"]["named_weight"] == weight
    assert on["a_gwe"]["named"] is None and on["a_gwe"]["named_weight"] == 1.0
    # the weight scales the gain and nothing else (a facet covered earns its whole weight again here,
    # so each gain is the one on the empty bubble whenever the row is decided)
    flat = config.with_overrides(covered_weight=1.0)
    gains = [bubble(c)["c_england"]["gain"] for c in (flat.with_overrides(named_row=0.0), flat)]
    assert gains[1] == pytest.approx(gains[0] * weight)
    assert {r["named"] for r in off.values()} == {None}


def test_the_paper_order_and_the_engine_order_read_no_names() -> None:
    """``selection = "score"`` keeps the paper's score order; ``engine_topk`` the engine's: no named
    weight is applied, and only the coverage order looks for names."""
    rows = [_row("c_england", "geo_name: ENGLAND; year: 2024", 10)]
    stats = TermStats(doc_count=10, df={"england": 1, "2024": 1})
    query = "England 2024"
    paper = build_bubble(
        query, rows, BubbleConfig().with_overrides(selection="score"), run_id="r", now=NOW, stats=stats
    )
    engine = build_bubble(
        query, rows, BubbleConfig(), run_id="r", now=NOW, stats=stats, variant="engine_topk"
    )
    assert [(r["named"], r["named_weight"]) for r in paper.trace] == [(None, 1.0)]
    assert [r["named_weight"] for r in engine.trace] == [1.0]


def test_the_explanation_says_which_value_the_question_names() -> None:
    rows = [
        _row("c_england", "geo_name: ENGLAND; year: 2024", 10),
        _row("a_gwe", "geo_name: GWE; year: 2024", 10),
    ]
    stats = TermStats(doc_count=10, df={"england": 1, "2024": 2})
    bubble = build_bubble("England 2024", rows, BubbleConfig(), run_id="r", now=NOW, stats=stats)
    ranks = {r["chunk_id"]: r["rank"] for r in bubble.trace}
    records = {r["chunk_id"]: r for r in bubble.trace}
    assert "  named      the question names this row's 'ENGLAND': weight 1.50" in explain(
        records["c_england"], ranks
    )
    assert not [line for line in explain(records["a_gwe"], ranks) if line.startswith("  named")]


def test_stored_cells_that_do_not_match_the_rows_text_name_nothing() -> None:
    """A chunk document edited by hand (more stored cells than its text has) is no crash."""
    assert NamedRows("Is Oslo metropolitan?").value("Code: NO081", "", [["no081"], ["oslo"]]) is None
    assert NamedRows("Is Oslo metropolitan?").value("Name: Oslo", "", [["oslo"]]) == "Oslo"
