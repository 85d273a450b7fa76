"""Window and parent expansion planning: pure, budgeted, traced."""

from __future__ import annotations

from delivery_helpers import make_bubble, make_chunk
from hypothesis import given, settings
from hypothesis import strategies as st

from esbubble.config import BubbleConfig, parse_config
from esbubble.core.budget import BudgetRules
from esbubble.delivery.expand import Expansion, plan_expansion
from esbubble.models import Bubble, Chunk, ExpansionEvent


def window_config(radius: int = 1, **expand: object) -> BubbleConfig:
    return parse_config({"expand": {"mode": "window", "radius": {"text": radius}, **expand}})


def expand(bubble: Bubble, neighbours: list[Chunk], config: BubbleConfig) -> Expansion:
    """Plan the expansion as delivery does, with the profile's ``[expand]`` and bucket rules."""
    return plan_expansion(bubble, neighbours, config.expand, BudgetRules.of(config))


def doc(doc_id: str, n: int, **kwargs: object) -> list[Chunk]:
    return [make_chunk(doc_id, p, **kwargs) for p in range(n)]  # type: ignore[arg-type]


def reasons(expansion_events: list[object]) -> list[str]:
    return [e.reason if e.chunk_id is None else f"{e.reason}: {e.chunk_id}" for e in expansion_events]  # type: ignore[attr-defined]


def test_off_mode_delivers_each_selected_chunk_as_its_passage() -> None:
    chunks = doc("a", 6)
    bubble = make_bubble([chunks[4], chunks[1]])
    result = expand(bubble, chunks, BubbleConfig())
    assert [p.chunk_ids for p in result.passages] == [["a#4"], ["a#1"]]
    assert result.events == []
    assert result.tokens_used == 20


def test_window_adds_nearest_neighbours_after_then_before() -> None:
    chunks = doc("a", 6)
    result = expand(make_bubble([chunks[2]]), chunks, window_config(radius=2))
    assert [p.chunk_ids for p in result.passages] == [["a#0", "a#1", "a#2", "a#3", "a#4"]]
    assert reasons(result.events) == ["fits: a#3", "fits: a#1", "fits: a#4", "fits: a#0"]
    assert result.tokens_used == 50


def test_window_stops_at_the_budget_nearest_first() -> None:
    chunks = doc("a", 6)
    result = expand(make_bubble([chunks[2]], budget=25), chunks, window_config(radius=2))
    assert result.passages[0].chunk_ids == ["a#2", "a#3"]
    assert reasons(result.events) == ["fits: a#3", "budget_exceeded: a#1", "budget_exceeded: a#4"]
    refused = result.events[1]
    assert (refused.added, refused.tokens) == (False, 10)
    assert result.tokens_used <= 25


def test_window_never_crosses_the_document_boundary() -> None:
    mine, other = doc("a", 2), doc("b", 5)
    result = expand(make_bubble([mine[1]]), [*mine, *other], window_config(radius=3))
    assert [p.chunk_ids for p in result.passages] == [["a#0", "a#1"]]
    assert all(cid.startswith("a#") for cid in result.chunk_ids)


def test_section_boundary_is_refused_by_default_and_crossed_when_allowed() -> None:
    chunks = [make_chunk("a", 0, section="Intro"), make_chunk("a", 1), make_chunk("a", 2)]
    kept = expand(make_bubble([chunks[1]]), chunks, window_config())
    assert kept.passages[0].chunk_ids == ["a#1", "a#2"]
    assert "section_boundary: a#0" in reasons(kept.events)
    crossed = expand(make_bubble([chunks[1]]), chunks, window_config(cross_sections=True))
    assert crossed.passages[0].chunk_ids == ["a#0", "a#1", "a#2"]
    assert crossed.passages[0].sections == ["Intro", "Body"]


def test_overlapping_windows_merge_and_no_text_appears_twice() -> None:
    chunks = doc("a", 7)
    result = expand(make_bubble([chunks[2], chunks[4]]), chunks, window_config(radius=1))
    assert [p.chunk_ids for p in result.passages] == [["a#1", "a#2", "a#3", "a#4", "a#5"]]
    assert result.passages[0].anchor_ids == ["a#2", "a#4"]
    assert "already_in_bubble: a#3" in reasons(result.events)
    assert len(result.chunk_ids) == len(set(result.chunk_ids))


def test_identical_text_elsewhere_is_not_added_again() -> None:
    chunks = [make_chunk("a", 0, text="same"), make_chunk("a", 1), make_chunk("b", 0, text="same")]
    result = expand(make_bubble([chunks[2], chunks[1]]), chunks, window_config())
    assert "duplicate_text: a#0" in reasons(result.events)
    assert sorted(result.chunk_ids) == ["a#1", "b#0"]


def test_rejected_candidate_pulled_in_becomes_expanded_into() -> None:
    chunks = doc("a", 3)
    bubble = make_bubble([chunks[1]], rejected=[chunks[2]])
    result = expand(bubble, chunks, window_config())
    records = {r["chunk_id"]: r for r in result.bubble.trace}
    assert records["a#2"]["final_reason"] == "expanded_into"
    assert records["a#2"]["final_decision"] == "selected"
    assert records["a#2"]["stage"] == "expand"
    assert reasons(
        [ExpansionEvent.model_validate(e) for e in records["a#1"]["step_details"]["expansion"]]
    ) == ["fits: a#2", "fits: a#0"]


def test_bucket_cap_refuses_a_neighbour_in_a_full_bucket() -> None:
    chunks = doc("a", 3)
    bubble = make_bubble([chunks[1]], budget=100).model_copy(update={"bucket_caps": {"Text": 20}})
    result = expand(bubble, chunks, window_config())
    assert reasons(result.events) == ["fits: a#2", "section_budget_exceeded: a#0"]


def test_parent_mode_adds_the_whole_parent_when_it_fits() -> None:
    family = [make_chunk("a", p, parent_id="a/s1") for p in range(4)]
    stranger = make_chunk("a", 4, parent_id="a/s2")
    config = parse_config({"expand": {"mode": "parent"}})
    result = expand(make_bubble([family[2]]), [*family, stranger], config)
    assert [p.chunk_ids for p in result.passages] == [["a#0", "a#1", "a#2", "a#3"]]
    assert all(e.mode == "parent" for e in result.events)


def test_parent_mode_refuses_a_parent_that_does_not_fit() -> None:
    family = [make_chunk("a", p, parent_id="a/s1") for p in range(4)]
    config = parse_config({"expand": {"mode": "parent"}})
    result = expand(make_bubble([family[2]], budget=30), family, config)
    assert [p.chunk_ids for p in result.passages] == [["a#2"]]
    assert reasons(result.events) == ["parent_budget_exceeded"]
    assert result.events[0].tokens == 30


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Chunk], list[Chunk], int, BubbleConfig]:
    docs = draw(st.integers(1, 3))
    corpus: list[Chunk] = []
    for d in range(docs):
        for p in range(draw(st.integers(1, 8))):
            corpus.append(
                make_chunk(
                    f"d{d}",
                    p,
                    section=draw(st.sampled_from(["A", "B"])),
                    tokens=draw(st.integers(0, 30)),
                    text=draw(st.sampled_from([None, "shared boilerplate"])),
                    parent_id=draw(st.sampled_from([None, f"d{d}/p"])),
                )
            )
    ids = draw(st.lists(st.sampled_from(range(len(corpus))), min_size=1, max_size=4, unique=True))
    selected = [corpus[i] for i in ids]
    budget = sum(c.token_count for c in selected) + draw(st.integers(0, 80))
    config = parse_config(
        {
            "expand": {
                "mode": draw(st.sampled_from(["window", "parent"])),
                "radius": {"text": draw(st.integers(0, 5))},
                "cross_sections": draw(st.booleans()),
            }
        }
    )
    return corpus, selected, budget, config


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_expansion_stays_in_budget_and_never_repeats_text(
    scenario: tuple[list[Chunk], list[Chunk], int, BubbleConfig],
) -> None:
    corpus, selected, budget, config = scenario
    result = expand(make_bubble(selected, budget=budget), corpus, config)
    delivered = [c for p in result.passages for c in p.chunks]
    # The budget is never exceeded after expansion.
    assert sum(c.token_count for c in delivered) == result.tokens_used <= budget
    # No chunk twice; no text twice beyond what the bubble itself already held.
    assert len({c.chunk_id for c in delivered}) == len(delivered)
    added = [c for c in delivered if c not in selected]
    assert len({c.content_hash for c in added} | {c.content_hash for c in selected}) == len(
        {c.content_hash for c in selected}
    ) + len(added)
    # Every selected chunk is still delivered; passages are contiguous runs of one document.
    assert {c.chunk_id for c in selected} <= {c.chunk_id for c in delivered}
    for passage in result.passages:
        positions = [c.position for c in passage.chunks]
        assert {c.doc_id for c in passage.chunks} == {passage.doc_id}
        assert positions == list(range(positions[0], positions[0] + len(positions)))
    # Without section crossing, a window never leaves its anchor's section.
    if config.expand.mode == "window" and not config.expand.cross_sections:
        for passage in result.passages:
            assert len(passage.sections) == 1


def test_a_chunk_repair_evicted_is_not_brought_back_as_a_neighbour() -> None:
    chunks = doc("a", 3)
    bubble = make_bubble([chunks[1]], rejected=[chunks[2]])
    trace = [{**r, "final_reason": "replaced"} if r["chunk_id"] == "a#2" else r for r in bubble.trace]
    result = expand(bubble.model_copy(update={"trace": trace}), chunks, window_config(radius=2))
    assert result.passages[0].chunk_ids == ["a#0", "a#1"]
    assert "replaced_by_repair: a#2" in reasons(result.events)
