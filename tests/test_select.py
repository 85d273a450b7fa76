"""Greedy selection: bucket shares and caps, the two slack policies, budget and max_chunks rejections."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import paper_config, text_candidate

from esbubble.config import BubbleConfig
from esbubble.core.bubble import build_bubble
from esbubble.core.relevance import TermStats
from esbubble.core.select import bucket_caps, resolve_shares, semantic_weights
from esbubble.core.trace import trace_id
from esbubble.models import Bubble, Candidate

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _candidate(chunk_id: str, section: str, text: str, tokens: int) -> Candidate:
    return text_candidate(chunk_id, section, text, tokens)


def _reasons(bubble: Bubble) -> dict[str, str]:
    return {r["chunk_id"]: r["final_reason"] for r in bubble.trace}


def test_unlisted_present_buckets_split_what_listed_shares_leave() -> None:
    assert resolve_shares(["A", "B", "C"], {"A": 0.6}) == {"A": 0.6, "B": 0.2, "C": 0.2}
    assert resolve_shares(["A", "B"], {}) == {"A": 0.5, "B": 0.5}
    assert resolve_shares(["A"], {"A": 0.3, "Z": 0.7}) == {"A": 0.3, "Z": 0.7}
    assert resolve_shares(["B"], {"A": 1.0}) == {"A": 1.0, "B": 0.0}


def test_unlisted_buckets_draw_on_one_pool_under_pool_mode() -> None:
    """Each unlisted bucket may spend all the listed shares leave; listed ones keep theirs."""
    assert resolve_shares(["A", "B", "C"], {"A": 0.6}, mode="pool") == {"A": 0.6, "B": 0.4, "C": 0.4}
    assert resolve_shares(["A", "B"], {}, mode="pool") == {"A": 1.0, "B": 1.0}
    assert resolve_shares(["B"], {"A": 1.0}, mode="pool") == {"A": 1.0, "B": 0.0}


def test_default_bm25_profile_rejects_no_chunk_for_a_bucket_cap() -> None:
    """With no listed shares (the default profile), section budgets never bind: only the global one."""
    candidates = [_candidate(f"a{i}", "A", "slab membrane alpha", 30) for i in range(4)] + [
        _candidate("b1", "B", "slab membrane beta", 10)
    ]
    config = BubbleConfig().with_overrides(token_budget=100, overlap_threshold=1.0)
    assert config.bubble.unlisted_mode == "pool"
    bubble = build_bubble("slab membrane", candidates, config, run_id="pool", now=NOW)
    reasons = _reasons(bubble)
    assert "section_budget_exceeded" not in reasons.values()
    assert bubble.tokens_used == 100
    assert bubble.bucket_shares == {"A": 1.0, "B": 1.0}
    # a cap of the whole budget caps nothing: the global budget refuses in the first pass, the section
    # gate reads T_B, and no slack is left for a second pass that could only refuse them again
    assert bubble.bucket_caps == {"A": 100, "B": 100} and bubble.pool == 0
    refused = [r for r in bubble.trace if r["final_reason"] == "budget_exceeded"]
    assert refused and all(not r["step_details"]["second_pass"] for r in bubble.trace)
    assert {
        g["limit"] for r in refused for g in r["step_details"]["gates"] if g["gate"] == "section_budget"
    } == {100.0}
    equal = config.with_overrides(unlisted_shares="equal")
    capped = build_bubble("slab membrane", candidates, equal, run_id="equal", now=NOW)
    assert "section_budget_exceeded" in _reasons(capped).values()


def test_caps_are_whole_tokens_rounded_down() -> None:
    assert bucket_caps({"A": 0.6, "B": 1 / 3}, 1000) == {"A": 600, "B": 333}
    assert bucket_caps({"A": 0.7}, 10) == {"A": 7}


# Section A: three 30-token chunks that score highest; B: one 10-token chunk.
# T_B = 100, ρ_A = 0.5 listed, ρ_B = 0.5 (the rest), so caps are 50 / 50.
POOL_CANDIDATES = [
    _candidate("a1", "A", "slab slab slab alpha", 30),
    _candidate("a2", "A", "slab slab slab beta", 30),
    _candidate("a3", "A", "slab slab slab gamma", 30),
    _candidate("b1", "B", "slab delta", 10),
]


def _pool_config(policy: str) -> BubbleConfig:
    return paper_config(
        {
            "bubble": {"token_budget": 100, "slack_policy": policy, "length_norm": 30.0},
            "buckets": {"shares": {"A": 0.5}},
        }
    )


def test_strict_leaves_unspent_bucket_share_unused() -> None:
    bubble = build_bubble("slab", POOL_CANDIDATES, _pool_config("strict"), run_id="r", now=NOW)
    assert [s.chunk.chunk_id for s in bubble.selected] == ["a1", "b1"]
    assert _reasons(bubble) == {
        "a1": "passed_all_gates",
        "a2": "section_budget_exceeded",
        "a3": "section_budget_exceeded",
        "b1": "passed_all_gates",
    }
    assert bubble.pool is None
    assert all(not r["step_details"]["second_pass"] for r in bubble.trace)


def test_global_pool_second_pass_spends_what_buckets_left() -> None:
    bubble = build_bubble("slab", POOL_CANDIDATES, _pool_config("global_pool"), run_id="r", now=NOW)
    assert bubble.bucket_caps == {"A": 50, "B": 50}
    assert bubble.pool == 20 + 40
    assert [s.chunk.chunk_id for s in bubble.selected] == ["a1", "b1", "a2", "a3"]
    assert bubble.tokens_used == 100
    records = {r["chunk_id"]: r for r in bubble.trace}
    assert records["a2"]["step_details"]["pool_remaining"] == 60
    assert records["a3"]["step_details"]["pool_remaining"] == 30
    # The pass-1 verdict stays on record next to the pass-2 one.
    first = {g["gate"]: g for g in records["a2"]["step_details"]["gates"]}
    second = {g["gate"]: g for g in records["a2"]["step_details"]["second_pass"]}
    assert (first["section_budget"]["passed"], first["section_budget"]["limit"]) == (False, 20)
    assert (second["section_budget"]["passed"], second["section_budget"]["limit"]) == (True, 60)
    assert records["a2"]["budget_remaining"] == 60  # after a1 and b1
    assert records["a2"]["selection_order"] == 3


def test_second_pass_still_applies_every_other_gate() -> None:
    # a9 repeats a2's words: it passes redundancy in pass 1 (overlap 1/2 with a1) but once
    # a2 enters through the pool, its overlap is 1.0 and the second pass rejects it.
    candidates = [*POOL_CANDIDATES[:2], _candidate("a9", "A", "slab slab slab beta", 30), POOL_CANDIDATES[3]]
    bubble = build_bubble("slab", candidates, _pool_config("global_pool"), run_id="r", now=NOW)
    record = next(r for r in bubble.trace if r["chunk_id"] == "a9")
    assert record["final_reason"] == "too_redundant"
    assert record["stage"] == "overlap_gate"
    assert [g["gate"] for g in record["step_details"]["gates"] if not g["passed"]] == ["section_budget"]
    assert record["step_details"]["second_pass"]
    assert record["overlap"] == 1.0


BIG_AND_SMALL = [_candidate("big", "S", "slab slab slab slab", 60), _candidate("small", "S", "slab", 10)]


def test_a_chunk_larger_than_the_budget_is_budget_exceeded_and_selection_continues() -> None:
    config = paper_config({"bubble": {"token_budget": 50, "length_norm": 10.0, "variant": "diversity"}})
    bubble = build_bubble("slab", BIG_AND_SMALL, config, run_id="r", now=NOW)
    assert _reasons(bubble) == {"big": "budget_exceeded", "small": "passed_all_gates"}
    big = bubble.trace[0]
    assert (big["stage"], big["budget_remaining"], big["step_decision"]) == ("budget_gate", 50, "fail")


def test_with_section_budgets_the_bucket_gate_fails_first() -> None:
    config = paper_config({"bubble": {"token_budget": 50, "length_norm": 10.0, "slack_policy": "strict"}})
    bubble = build_bubble("slab", BIG_AND_SMALL, config, run_id="r", now=NOW)
    big = bubble.trace[0]
    assert big["final_reason"] == "section_budget_exceeded"
    assert [g["gate"] for g in big["step_details"]["gates"] if not g["passed"]] == [
        "section_budget",
        "global_budget",
    ]


def test_max_chunks_stops_the_bubble_growing() -> None:
    config = paper_config({"bubble": {"max_chunks": 1}})
    candidates = [_candidate("x", "S", "slab one", 5), _candidate("y", "S", "slab two", 5)]
    bubble = build_bubble("slab", candidates, config, run_id="r", now=NOW)
    assert _reasons(bubble) == {"x": "passed_all_gates", "y": "max_chunks"}
    assert bubble.trace[1]["stage"] == "max_chunks_gate"


def test_trace_ids_are_derived_from_run_and_chunk() -> None:
    assert trace_id("run1", "c1") == trace_id("run1", "c1")
    assert trace_id("run1", "c1") != trace_id("run2", "c1")
    assert len(trace_id("run1", "c1")) == 32


def _in_document(candidate: Candidate, doc_id: str) -> Candidate:
    return candidate.model_copy(update={"chunk": candidate.chunk.model_copy(update={"doc_id": doc_id})})


def test_a_document_matching_little_of_the_query_does_not_win_on_a_short_chunk() -> None:
    """Coverage order weighs a chunk's facets by its document's share of the query: a ten-token figure
    caption from a manual that matches only "figures" no longer takes the budget the statistics row
    matching "Swindon" and "enterprises" needs, though it wins on gain per token alone."""
    row = _in_document(_candidate("row", "Table", "Swindon high growth enterprises: 25", 80), "stats")
    caption = _in_document(_candidate("caption", "Figures", "Figure 2-4 context", 10), "manual")
    query = "Swindon enterprise figures"
    # the chunk share and proximity off: they would also keep the caption out; this is about the document
    config = BubbleConfig().with_overrides(token_budget=85, chunk_share=0.0, proximity=0.0)
    off = build_bubble(
        query, [row, caption], config.with_overrides(document_share=False), run_id="o", now=NOW
    )
    assert _reasons(off) == {"caption": "passed_all_gates", "row": "budget_exceeded"}
    on = build_bubble(query, [row, caption], config, run_id="on", now=NOW)
    assert _reasons(on) == {"row": "passed_all_gates", "caption": "budget_exceeded"}
    shares = {r["chunk_id"]: r["document_share"] for r in on.trace}
    assert shares["row"] == pytest.approx(2 / 3)
    assert shares["caption"] == pytest.approx(1 / 3)
    assert {r["document_share"] for r in off.trace} == {1.0}


def _scored_by_engine(candidate: Candidate, doc_id: str, es_score: float) -> Candidate:
    return _in_document(candidate, doc_id).model_copy(update={"es_score": es_score})


def test_a_document_the_engine_ranks_far_down_does_not_win_on_a_short_chunk() -> None:
    """Coverage order also weighs a chunk's facets by the engine's score of its document's best
    candidate over the best candidate's of all: a short glossary entry matching "meaning" and
    "value" in a manual the engine scores at an eighth of the emissions row no longer takes the
    budget the row needs, though both documents match two of the query's three words."""
    row = _scored_by_engine(_candidate("row", "Table", "Cotswold LULUCF value -67.5", 60), "ghg", 12.0)
    entry = _scored_by_engine(
        _candidate("entry", "Glossary", "Term: value. Definition: the meaning held", 15), "manual", 1.5
    )
    query = "LULUCF meaning value"
    # the facet engine weight (which alone would also put the row first here) is off: this is the
    # document's weight on its own
    config = BubbleConfig().with_overrides(token_budget=65, facet_engine=False)
    off = build_bubble(query, [row, entry], config.with_overrides(document_engine=False), run_id="o", now=NOW)
    assert _reasons(off) == {"entry": "passed_all_gates", "row": "budget_exceeded"}
    on = build_bubble(query, [row, entry], config, run_id="on", now=NOW)
    assert _reasons(on) == {"row": "passed_all_gates", "entry": "budget_exceeded"}
    engine = {r["chunk_id"]: r["document_engine"] for r in on.trace}
    assert engine == {"row": 1.0, "entry": pytest.approx(1.5 / 12.0)}
    assert {r["document_engine"] for r in off.trace} == {1.0}


def test_a_question_word_only_chunks_the_engine_ranks_far_down_match_weighs_less() -> None:
    """Coverage order weighs each query facet by the engine's score of the best candidate matching
    it over the best candidate's: "happen", matched only by an aside the engine scores at a tenth of
    the answer, no longer wins the budget on a short chunk (one document, so the document weights
    are 1 and only the facet weight differs)."""
    text = "Calling connect on a connected socket throws an error."
    answer = _scored_by_engine(_candidate("answer", "Socket", text, 160), "d", 10.0)
    aside = _scored_by_engine(_candidate("aside", "Socket", "What will happen next", 8), "d", 1.0)
    query = "connect error happen"
    # room for one of the two; the chunk share and proximity off (they would also keep the aside out)
    config = BubbleConfig().with_overrides(token_budget=165, chunk_share=0.0, proximity=0.0)
    off = build_bubble(query, [answer, aside], config.with_overrides(facet_engine=False), run_id="o", now=NOW)
    on = build_bubble(query, [answer, aside], config, run_id="on", now=NOW)
    gain = {
        name: {r["chunk_id"]: r["gain"] for r in bubble.trace} for name, bubble in (("on", on), ("off", off))
    }
    assert [s.chunk.chunk_id for s in off.selected] == ["aside"]
    assert [s.chunk.chunk_id for s in on.selected] == ["answer"]
    assert gain["on"]["aside"] == pytest.approx(gain["off"]["aside"] / 10.0)
    assert gain["on"]["answer"] == pytest.approx(gain["off"]["answer"])


def test_a_chunk_matching_one_word_of_the_question_weighs_its_share_of_the_question() -> None:
    """Coverage order weighs a chunk's facets by its own share of the query, to the power
    ``chunk_share``: the clause matching *lock* and *format* is no longer outbid by a short line
    matching *format* alone on gain per token (one document, equal engine scores, the two words
    equally rare in the index, so only the chunk share differs)."""
    clause = _candidate("clause", "Lock", "Lock files must be in the HDB UUCP file format.", 100)
    line = _candidate("line", "Mail", "Mailbox files use the standard mailbox format", 8)
    query = "lock format"
    stats = TermStats(doc_count=1000, df={"lock": 50, "format": 50})
    config = BubbleConfig().with_overrides(token_budget=105)  # room for one of the two

    def bubble(config: BubbleConfig) -> Bubble:
        return build_bubble(query, [clause, line], config, run_id="r", now=NOW, stats=stats)

    off, on = bubble(config.with_overrides(chunk_share=0.0)), bubble(config)
    assert [s.chunk.chunk_id for s in off.selected] == ["line"]
    assert [s.chunk.chunk_id for s in on.selected] == ["clause"]
    records = {name: {r["chunk_id"]: r for r in b.trace} for name, b in (("on", on), ("off", off))}
    # the two words weigh alike, so the line matches half the query and the clause all of it
    share = records["on"]["line"]["chunk_share"]
    assert share == pytest.approx(0.5) and records["on"]["clause"]["chunk_share"] == 1.0
    assert {r["chunk_share"] for r in off.trace} == {1.0}
    # off, the line was decided first; on, after the clause covered *format* once
    power, covered = config.bubble.chunk_share, config.bubble.covered_weight
    assert records["on"]["line"]["gain"] == pytest.approx(
        records["off"]["line"]["gain"] * covered * share**power
    )


def test_the_engines_first_candidates_weigh_more_by_their_reciprocal_rank() -> None:
    """Coverage order weighs a chunk's facets by ``1 + engine_rank / (es_rank + 1)``: the clause the
    engine ranks 2nd is no longer outbid by a line naming the same words it ranks 20th, which is
    cheaper per token (one document, equal engine scores, so only the rank weight differs)."""
    text = "In no event shall any contributor accept liability for damages of any kind."
    clause = _candidate("clause", "Liability", text, 45).model_copy(update={"es_rank": 2})
    line = _candidate("line", "Index", "Contributor liability damages", 20).model_copy(update={"es_rank": 20})
    query = "contributor liability damages"
    config = BubbleConfig().with_overrides(token_budget=50)  # room for one of the two

    def bubble(config: BubbleConfig) -> Bubble:
        return build_bubble(query, [line, clause], config, run_id="r", now=NOW)

    off, on = bubble(config.with_overrides(engine_rank=0.0)), bubble(config)
    assert [s.chunk.chunk_id for s in off.selected] == ["line"]
    assert [s.chunk.chunk_id for s in on.selected] == ["clause"]
    records = {name: {r["chunk_id"]: r for r in b.trace} for name, b in (("on", on), ("off", off))}
    weight = config.bubble.engine_rank
    assert records["on"]["clause"]["rank_weight"] == pytest.approx(1 + weight / 3)
    assert records["on"]["line"]["rank_weight"] == pytest.approx(1 + weight / 21)
    assert {r["rank_weight"] for r in off.trace} == {1.0}
    # the weight is re-derivable from the record's es_rank, and scales the gain: twice the weight,
    # the clause (decided first, on the empty bubble either way) gains (1 + 2w/3) / (1 + w/3) as much
    for record in on.trace:
        assert record["rank_weight"] == pytest.approx(1 + weight / (record["es_rank"] + 1))
    twice = {r["chunk_id"]: r for r in bubble(config.with_overrides(engine_rank=2 * weight)).trace}
    assert twice["clause"]["gain"] == pytest.approx(
        records["on"]["clause"]["gain"] * (1 + 2 * weight / 3) / (1 + weight / 3)
    )


def test_the_rank_weight_is_off_in_the_papers_score_order() -> None:
    """Paper mode decides by descending score: the engine's rank weighs nothing and is recorded as 1."""
    first = _candidate("first", "A", "waterproofing membrane", 30).model_copy(update={"es_rank": 1})
    second = _candidate("second", "A", "waterproofing membrane", 30).model_copy(update={"es_rank": 2})
    bubble = build_bubble("waterproofing", [first, second], paper_config(), run_id="r", now=NOW)
    assert {r["rank_weight"] for r in bubble.trace} == {1.0}


def test_a_spent_candidate_is_ordered_by_its_gain_alone_and_the_engines_score() -> None:
    """Once every facet a candidate matches is covered, its gain is below ``spent_gain`` of the best:
    such candidates come after the others, by their gain on the empty bubble times their engine score
    over the best's, not by whichever was covered a little less (here all are used up, gain 0, and
    without the rule the tie went by chunk_id: the short aside the engine ranks far down took the
    room the clause the engine ranks second needed)."""
    first = _scored_by_engine(_candidate("c_first", "Exit", "Bash exit status and exit codes", 50), "d", 10.0)
    answer = _scored_by_engine(_candidate("b_answer", "Exit", "the exit status is 127", 60), "d", 8.0)
    aside = _scored_by_engine(_candidate("a_aside", "Misc", "status line", 10), "d", 1.0)
    query = "bash exit status"
    # covered_weight 0: a facet the bubble covers earns nothing more, so both are spent after c_first
    config = BubbleConfig().with_overrides(token_budget=115, covered_weight=0.0)
    candidates = [first, answer, aside]
    # without the rule (and without the gain gate, which turns away every gain of 0)
    unruled = config.with_overrides(spent_gain=0.0, min_gain=0.0)
    off = build_bubble(query, candidates, unruled, run_id="o", now=NOW)
    on = build_bubble(query, candidates, config, run_id="on", now=NOW)
    assert [s.chunk.chunk_id for s in off.selected] == ["c_first", "a_aside"]
    assert [s.chunk.chunk_id for s in on.selected] == ["c_first", "b_answer"]
    records = {r["chunk_id"]: r for r in on.trace}
    assert records["c_first"]["fill_value"] is None and records["c_first"]["rank"] == 1
    assert [records[c]["rank"] for c in ("b_answer", "a_aside")] == [2, 3]
    fills = {c: records[c]["fill_value"] for c in ("b_answer", "a_aside")}
    assert all(fill is not None and fill > 0 for fill in fills.values())
    assert records["b_answer"]["gain"] == 0.0 and records["a_aside"]["gain"] == 0.0
    assert fills["b_answer"] > fills["a_aside"]  # the property tests re-derive both from the records
    assert {r["fill_value"] for r in off.trace} == {None}


def test_the_gain_gate_turns_away_a_spent_candidate_worth_too_little() -> None:
    """A candidate whose facets the bubble covers and that the engine ranks far down (its fill value
    below ``min_gain`` of the best gain on the empty bubble) is rejected ``low_gain`` rather than
    padding the budget; one the engine rates still fills it; ``min_gain = 0`` admits both."""
    first = _scored_by_engine(_candidate("c_first", "Exit", "Bash exit status and exit codes", 50), "d", 10.0)
    answer = _scored_by_engine(_candidate("b_answer", "Exit", "the exit status is 127", 60), "d", 8.0)
    aside = _scored_by_engine(_candidate("a_aside", "Misc", "status line", 10), "d", 0.01)
    config = BubbleConfig().with_overrides(token_budget=400, covered_weight=0.0)
    candidates = [first, answer, aside]
    on = build_bubble("bash exit status", candidates, config, run_id="on", now=NOW)
    off = build_bubble(
        "bash exit status", candidates, config.with_overrides(min_gain=0.0), run_id="o", now=NOW
    )
    assert [s.chunk.chunk_id for s in on.selected] == ["c_first", "b_answer"]
    assert [s.chunk.chunk_id for s in off.selected] == ["c_first", "b_answer", "a_aside"]
    records = {r["chunk_id"]: r for r in on.trace}
    aside_record = records["a_aside"]
    assert aside_record["final_reason"] == "low_gain" and aside_record["stage"] == "gain_gate"
    gate = next(g for g in aside_record["step_details"]["gates"] if g["gate"] == "gain")
    # the gate measures the fill value (what ordered it) against min_gain of the rank-1 record's gain,
    # each without its proximity weight ("bash exit status" said together doubles c_first's)
    assert records["c_first"]["proximity_weight"] == 2.0 and aside_record["proximity_weight"] == 1.0
    assert gate["value"] == aside_record["fill_value"]
    assert gate["limit"] == pytest.approx(config.bubble.min_gain * records["c_first"]["gain"] / 2.0)
    assert gate["enabled"] and not gate["passed"]
    assert records["b_answer"]["fill_value"] >= gate["limit"]
    off_gates = {g["gate"]: g for r in off.trace for g in r["step_details"]["gates"]}
    assert not off_gates["gain"]["enabled"]


def test_semantic_weights_are_each_similarity_over_the_best_to_the_power() -> None:
    assert semantic_weights([0.8, 0.4, -0.2], 2.0) == pytest.approx([1.0, 0.25, 0.0])
    assert semantic_weights([0.8, 0.4], 1.0) == pytest.approx([1.0, 0.5])
    assert semantic_weights([0.8, 0.4], 0.0) is None  # off
    assert semantic_weights([0.8, None], 2.0) is None  # a chunk without a vector: off for the run
    assert semantic_weights([-0.1, 0.0], 2.0) is None  # nothing is similar at all
    assert semantic_weights([], 2.0) is None


def test_the_chunk_whose_meaning_answers_outbids_one_that_shares_more_words() -> None:
    """Coverage order weighs a chunk's facets by its similarity to the question over the best
    candidate's, to ``semantic``: the watchdog's "one-shot timer" sentence, which shares one word
    with the question, wins over a cheaper line repeating its words, once similarities are known;
    without them (chunks with no vector) the order is the facet gain's, as before."""
    answer = _candidate("answer", "Timers", "The watchdog is a one-shot timer with no interval mode.", 30)
    line = _candidate("line", "Index", "watchdog repeat interval repeat", 20)
    line = line.model_copy(update={"es_rank": 2})
    query = "Can the watchdog repeat at an interval?"
    config = BubbleConfig().with_overrides(token_budget=35)  # room for one of the two

    def bubble(similarities: tuple[float | None, float | None], config: BubbleConfig = config) -> Bubble:
        known = [
            c.model_copy(update={"similarity": s}) for c, s in zip((answer, line), similarities, strict=True)
        ]
        return build_bubble(query, known, config, run_id="r", now=NOW)

    blind, seeing = bubble((None, None)), bubble((0.7, 0.2))
    assert [s.chunk.chunk_id for s in blind.selected] == ["line"]
    assert [s.chunk.chunk_id for s in seeing.selected] == ["answer"]
    assert [s.chunk.chunk_id for s in bubble((0.7, 0.2), config.with_overrides(semantic=0.0)).selected] == [
        "line"
    ]
    records = {r["chunk_id"]: r for r in seeing.trace}
    assert (records["answer"]["similarity"], records["answer"]["semantic_weight"]) == (0.7, 1.0)
    power = config.bubble.semantic
    assert records["line"]["semantic_weight"] == pytest.approx((0.2 / 0.7) ** power)
    assert {(r["similarity"], r["semantic_weight"]) for r in blind.trace} == {(None, 1.0)}
    assert [s.chunk.chunk_id for s in bubble((0.7, None)).selected] == ["line"]  # one without: all off
