"""Fixed-budget repair: gaps, utility, swaps that never grow the bubble."""

from __future__ import annotations

import pytest
from delivery_helpers import NOW, make_chunk
from factories import gate_words
from hypothesis import given, settings
from hypothesis import strategies as st

from esbubble.config import BubbleConfig, parse_config
from esbubble.core.bubble import build_bubble
from esbubble.core.gates import Redundancy, overlap
from esbubble.core.relevance import facet_terms
from esbubble.core.score import query_facets_of
from esbubble.delivery.repair import (
    facets_of,
    measurer,
    micro_queries,
    micro_query_config,
    plan_repair,
    uncovered,
    utility,
)
from esbubble.models import Bubble, Candidate, Chunk


def repair_config(overlap: str = "auto", **repair: object) -> BubbleConfig:
    return parse_config(
        {
            "bubble": {
                "token_budget": 40,
                "max_chunks": 3,
                "length_norm": 10.0,
                "overlap_threshold": 0.9,
                "overlap": overlap,
            },
            "repair": {"enabled": True, **repair},
        }
    )


def candidates(chunks: list[Chunk]) -> list[Candidate]:
    return [Candidate(chunk=c, es_score=1.0, es_rank=i) for i, c in enumerate(chunks, start=1)]


QUERY = "steel beam price delivery"
STEEL = make_chunk("quote", 0, text="steel beam grade S355 price 120 per metre")
BEAM = make_chunk("quote", 1, text="steel beam price list 120 metre")
WELD = make_chunk("quote", 2, text="steel welding price surcharge 15 percent")
DELIVERY = make_chunk("memo", 0, text="delivery to site within two weeks", tokens=8)


def base_bubble(config: BubbleConfig) -> Bubble:
    return build_bubble(QUERY, candidates([STEEL, BEAM, WELD]), config, run_id="r1", now=NOW)


def test_facets_are_query_terms_then_profile_groups() -> None:
    config = repair_config(facets={"timing": ["lead time", "delivery"]})
    facets = facets_of(QUERY, config)
    assert [f.name for f in facets] == ["steel", "beam", "price", "delivery", "timing"]
    assert [f.name for f in uncovered(facets, [STEEL])] == ["delivery", "timing"]
    assert micro_queries(uncovered(facets, [STEEL])) == ["delivery", "lead time delivery"]


def test_gaps_compare_words_as_the_relevance_mode_does() -> None:
    """Under bm25 a gap is found with the index's analyzer, as selection matches facets: "boxes" covers
    "box" and a term the analyzer drops is no facet; the paper's tf compares raw tokens."""
    boxes = make_chunk("quote", 3, text="planter boxes with root barriers")
    config = repair_config(facets={"barrier": ["root barrier"]})
    facets = facets_of("planter box such", config)
    assert [f.name for f in facets] == ["planter", "box", "barrier"]  # "such": an analyzer stop word
    assert uncovered(facets, [boxes]) == []
    paper = config.with_overrides(relevance="tf", selection="score")
    raw = facets_of("planter box such", paper)
    assert [f.name for f in uncovered(raw, [boxes])] == ["box", "such", "barrier"]
    possessive = facets_of("Cotswold's planter", config)
    assert [f.name for f in possessive] == ["cotswold's", "planter", "barrier"]  # no facet "s"
    assert [f.name for f in facets_of("Cotswold's planter", paper)][:3] == ["cotswold", "s", "planter"]


def test_multi_word_facet_terms_match_as_phrases() -> None:
    config = repair_config(facets={"timing": ["lead time"]})
    facet = facets_of("x", config)[-1]
    assert facet.covered_by(["the", "lead", "time", "is"])
    assert not facet.covered_by(["time", "lead"])


def test_gap_closing_newcomer_replaces_the_lowest_utility_chunk() -> None:
    config = repair_config()
    bubble = base_bubble(config)
    assert len(bubble.selected) == 3
    result = plan_repair(bubble, candidates([DELIVERY, STEEL]), config)
    assert result.gaps_before == ["delivery"]
    assert result.gaps_after == []
    (event,) = result.events
    assert event.newcomer_chunk_id == DELIVERY.chunk_id
    assert event.victim_chunk_id == BEAM.chunk_id  # nearly a copy of the steel chunk: least utility
    assert event.newcomer_utility > event.victim_utility + event.margin
    repaired = result.bubble
    assert len(repaired.selected) == len(bubble.selected)
    assert repaired.tokens_used <= bubble.tokens_used
    records = {r["chunk_id"]: r for r in repaired.trace}
    assert (records[BEAM.chunk_id]["final_decision"], records[BEAM.chunk_id]["final_reason"]) == (
        "rejected",
        "replaced",
    )
    assert records[BEAM.chunk_id]["step_details"]["replacement"] == event.model_dump(mode="json")
    newcomer = records[DELIVERY.chunk_id]
    assert (newcomer["final_decision"], newcomer["stage"]) == ("selected", "repair")
    assert all(g["passed"] for g in newcomer["step_details"]["gates"])
    assert len(repaired.trace) == len(bubble.trace) + 1


def test_no_swap_when_the_newcomer_needs_more_tokens_than_the_victim_frees() -> None:
    config = repair_config()
    big = make_chunk("memo", 0, text="delivery to site within two weeks", tokens=11)
    result = plan_repair(base_bubble(config), candidates([big]), config)
    assert result.events == []
    assert result.bubble.selected == base_bubble(config).selected
    assert result.gaps_after == ["delivery"]


def test_hysteresis_margin_blocks_a_marginal_swap() -> None:
    config = repair_config(epsilon=5.0)
    result = plan_repair(base_bubble(config), candidates([DELIVERY]), config)
    assert result.events == []


ECHO = make_chunk(
    "memo", 1, text="steel beam grade S355 price 120 per metre welding surcharge delivery", tokens=9
)


def test_redundancy_gate_blocks_a_newcomer_that_repeats_the_bubble() -> None:
    config = repair_config(overlap="bubble")  # eq. 12: its words are all somewhere in the bubble
    result = plan_repair(base_bubble(config), candidates([ECHO]), config)
    assert result.events == []


def test_repair_measures_redundancy_by_the_rule_selection_uses() -> None:
    """Under overlap = "chunk" (the bm25 default) the newcomer is compared with the most similar chunk
    of the bubble, query words left out, as selection compares its candidates: a chunk that only
    repeats words spread over several chunks is not redundant, in repair as in selection."""
    config = repair_config()
    assert config.bubble.overlap_mode == "chunk"
    result = plan_repair(base_bubble(config), candidates([ECHO]), config)
    (event,) = result.events
    assert event.newcomer_chunk_id == ECHO.chunk_id
    record = next(r for r in result.bubble.trace if r["chunk_id"] == ECHO.chunk_id)
    # Its closest chunk, STEEL, shares grade, s355, 120, per and metre of its 11 words (steel, beam
    # and price are query words, so they do not count).
    assert record["overlap"] == pytest.approx(5 / 11)
    assert record["step_details"]["gates"][2]["gate"] == "redundancy"
    assert record["step_details"]["gates"][2]["value"] == record["overlap"]
    selection = build_bubble(QUERY, candidates([STEEL, WELD, ECHO]), config, run_id="s", now=NOW)
    chosen = [s.chunk.chunk_id for s in selection.selected]
    assert ECHO.chunk_id in chosen


def test_utility_measures_words_as_the_redundancy_gate_does() -> None:
    """Novelty and redundancy read a chunk's words as the redundancy gate does: under the chunk overlap,
    less the words the query asks about, which every relevant chunk holds. Counting them made the
    evidence row of a table look like a copy of its neighbours, and an off-topic definition (all new
    words) worth more: a real-document question lost its answer to such a swap."""
    query = "cotswold lulucf"
    row = make_chunk("sheet", 0, text="cotswold lulucf minus 67")
    rest = [
        make_chunk("sheet", 1, text="cotswold agriculture 196"),
        make_chunk("sheet", 2, text="dean lulucf minus 97"),
    ]
    config = repair_config()
    assert config.bubble.overlap_mode == "chunk"
    asked = facet_terms(query_facets_of(query, config))
    chunk_rule = utility(row, rest, facets_of(query, config), config, measure=measurer(config, asked))
    # its own words are minus and 67; the third row holds minus
    assert (chunk_rule.novelty, chunk_rule.redundancy) == (0.5, 0.5)
    paper = repair_config(overlap="bubble")
    bubble_rule = utility(row, rest, facets_of(query, paper), paper, measure=measurer(paper, asked))
    # eq. 12's words, query words included: cotswold, lulucf and minus are in the rest; 67 is not
    assert (bubble_rule.novelty, bubble_rule.redundancy) == (0.25, 0.5)


def test_nothing_to_repair_when_every_facet_is_covered() -> None:
    config = repair_config()
    bubble = build_bubble("steel price", candidates([STEEL, BEAM]), config, run_id="r", now=NOW)
    result = plan_repair(bubble, candidates([DELIVERY]), config)
    assert (result.loops, result.events, result.bubble) == (0, [], bubble)


VOCAB = ["steel", "beam", "price", "delivery", "site", "grade", "bolt", "paint", "crane", "week"]


@st.composite
def repair_scenarios(draw: st.DrawFn) -> tuple[str, list[Chunk], list[Chunk], BubbleConfig]:
    def chunk(doc: str, position: int) -> Chunk:
        words = draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6))
        return make_chunk(
            doc,
            position,
            text=" ".join(words),
            tokens=draw(st.sampled_from([4, 5, 6, 12])),
            section=draw(st.sampled_from(["A", "B"])),
            bucket=draw(st.sampled_from(["Text", "PDF"])),
        )

    initial = [chunk("d", i) for i in range(draw(st.integers(1, 6)))]
    extra = [chunk("e", i) for i in range(draw(st.integers(0, 12)))]
    query = " ".join(draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6)))
    config = parse_config(
        {
            "bubble": {
                "token_budget": draw(st.integers(5, 60)),
                "max_chunks": draw(st.integers(1, 6)),
                "overlap_threshold": draw(st.sampled_from([0.3, 0.55, 1.0])),
                "slack_policy": draw(st.sampled_from(["strict", "global_pool"])),
                "variant": draw(st.sampled_from(["flat_topk", "structure", "diversity", "full"])),
            },
            "repair": {
                "enabled": True,
                "loops": draw(st.integers(1, 4)),
                "dwell": draw(st.integers(0, 2)),
                "epsilon": draw(st.sampled_from([0.0, 0.05, 0.5])),
                "facets": draw(st.sampled_from([{}, {"logistics": ["crane", "delivery week"]}])),
            },
        }
    )
    return query, initial, extra, config


@settings(max_examples=150, deadline=None)
@given(repair_scenarios())
def test_repair_never_grows_and_every_gate_holds_after_each_swap(
    scenario: tuple[str, list[Chunk], list[Chunk], BubbleConfig],
) -> None:
    query, initial, extra, config = scenario
    bubble = build_bubble(query, candidates(initial), config, run_id="r", now=NOW)
    result = plan_repair(bubble, candidates(extra + initial), config)
    repaired = result.bubble
    # The number of chunks and the token total never grow.
    assert len(repaired.selected) == len(bubble.selected)
    assert repaired.tokens_used <= bubble.tokens_used <= bubble.budget
    assert len({s.chunk.chunk_id for s in repaired.selected}) == len(repaired.selected)
    assert result.loops <= config.repair.loops
    assert len(result.events) <= result.loops
    # Every swap's gates passed, and the newcomer beat the victim by more than ε.
    records = {r["chunk_id"]: r for r in repaired.trace}
    for event in result.events:
        assert event.newcomer_utility > event.victim_utility + config.repair.epsilon
        assert records[event.victim_chunk_id]["final_reason"] == "replaced"
        gates = records[event.newcomer_chunk_id]["step_details"]["gates"]
        assert gates and all(g["passed"] for g in gates)
    # Dwell: a chunk inserted in loop t is not evicted in loops t+1 … t+dwell.
    inserted = {e.newcomer_chunk_id: e.loop for e in result.events}
    for event in result.events:
        if event.victim_chunk_id in inserted:
            assert event.loop - inserted[event.victim_chunk_id] > config.repair.dwell
    # After a single swap, the redundancy gate still holds for the newcomer against the rest, by the
    # rule selection uses (the profile's overlap mode). (With several, a later newcomer may share words
    # with an earlier one: overlap is asymmetric, as eq. 12 is, and each newcomer's gates at its own
    # swap are checked above.)
    if config.bubble.variant in ("diversity", "full") and len(result.events) == 1:
        asked = [term for facet in query_facets_of(query, config) for term in facet.terms]
        for s in repaired.selected:
            if s.chunk.chunk_id in inserted:
                redundancy = Redundancy(config.bubble.overlap_mode, asked)
                for other in repaired.selected:
                    if other is not s:
                        redundancy.admit(gate_words(other.chunk.compare_text, config))
                value, _ = redundancy.measure(gate_words(s.chunk.compare_text, config))
                assert value < config.bubble.overlap_threshold
                if config.bubble.overlap_mode == "bubble":  # eq. 12 against the union of the rest
                    rest = set().union(
                        *(gate_words(o.chunk.compare_text, config) for o in repaired.selected if o is not s)
                    )
                    assert value == overlap(gate_words(s.chunk.compare_text, config), rest)
    # One trace record per chunk, every selected chunk marked selected.
    assert len(records) == len(repaired.trace)
    assert all(records[s.chunk.chunk_id]["final_decision"] == "selected" for s in repaired.selected)


def test_micro_queries_run_without_priors_and_with_micro_k() -> None:
    config = parse_config(
        {"priors": {"sections": {"Scope": 6.0}, "keywords": {"price": 1.0}}, "repair": {"micro_k": 7}}
    )
    micro = micro_query_config(config)
    assert (micro.priors.sections, micro.priors.keywords, micro.bubble.candidate_k) == ({}, {}, 7)
    assert micro.bubble.model_dump(exclude={"candidate_k"}) == config.bubble.model_dump(
        exclude={"candidate_k"}
    )


@pytest.mark.parametrize(
    ("dwell", "expected"),
    [
        # Without dwell, loop 2's victim is gamma (just inserted, least useful), which nothing beats: stop.
        (0, [("d#0", "e#0", 1)]),
        # With dwell, gamma is protected; the victim is beta, which "beta delta" beats.
        (1, [("d#0", "e#0", 1), ("d#2", "e#2", 2)]),
    ],
)
def test_dwell_protects_a_just_inserted_chunk_in_the_next_loop(
    dwell: int, expected: list[tuple[str, str, int]]
) -> None:
    config = parse_config(
        {
            # the paper's tf scores make the utilities this case is built on
            "bubble": {
                "token_budget": 100,
                "max_chunks": 3,
                "variant": "structure",
                "relevance": "tf",
                "selection": "score",
            },
            "repair": {"loops": 3, "dwell": dwell},
        }
    )
    initial = [
        make_chunk("d", 0, text="alpha"),
        make_chunk("d", 1, text="alpha one"),
        make_chunk("d", 2, text="beta"),
    ]
    extra = [
        make_chunk("e", 0, text="gamma"),
        make_chunk("e", 1, text="alpha two"),
        make_chunk("e", 2, text="beta delta"),
    ]
    bubble = build_bubble("alpha beta gamma delta zeta", candidates(initial), config, run_id="r", now=NOW)
    assert len(bubble.selected) == 3
    result = plan_repair(bubble, candidates(extra), config)
    assert [(e.victim_chunk_id, e.newcomer_chunk_id, e.loop) for e in result.events] == expected
