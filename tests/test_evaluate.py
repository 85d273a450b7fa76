"""The paper's tables over a query set, computed from candidates (no engine needed)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esbubble.app.evaluate import DELTA_SWEEP, EvalCase, evaluate_cases, evaluation_tables
from esbubble.config import BubbleConfig, parse_config
from esbubble.core.metrics import GoldItems
from esbubble.errors import ConfigError, InputError
from esbubble.models import Candidate, Chunk

NOW = datetime(2026, 1, 2, tzinfo=UTC)
CONFIG = parse_config(
    {
        # proximity off: every "Scope of Works" row says "scope of work", so the phrase would weigh the
        # first of them double and push the rows matching one word under the gain floor; these tests are
        # about the tables, and proximity is measured on real documents (docs/evaluation.md)
        "bubble": {
            "token_budget": 60,
            "overlap_threshold": 0.55,
            "max_chunks": 10,
            "slack_policy": "strict",
            "proximity": 0.0,
        },
        "priors": {"sections": {"Scope of Works": 2.0, "Products": 1.0}},
        "buckets": {"shares": {"Scope of Works": 0.5, "Below Grade": 0.3, "Products": 0.2}},
    }
)


def chunk(chunk_id: str, section: str, text: str, tokens: int) -> Chunk:
    return Chunk(
        chunk_id=chunk_id, doc_id="job", source_type="xlsx", section=section, sheet_name=section,
        bucket=section, row_number=int(chunk_id[1:]), position=int(chunk_id[1:]), token_count=tokens,
        content_hash=chunk_id, text=text, compare_text=text,
    )  # fmt: skip


CHUNKS = [
    chunk("c1", "Scope of Works", "scope of work supply install membrane basement", 12),
    chunk("c2", "Scope of Works", "scope of work supply install membrane basement slab", 12),
    chunk("c3", "Scope of Works", "scope of work supply install membrane basement walls", 12),
    chunk("c4", "Scope of Works", "scope work supply install membrane basement pits", 12),
    chunk("c5", "Below Grade", "below grade waterproofing work to retaining walls", 10),
    chunk("c6", "Products", "products bitumen sheet primer work", 6),
]


def candidates(chunks: list[Chunk]) -> list[Candidate]:
    return [Candidate(chunk=c, es_score=10.0 - i, es_rank=i + 1) for i, c in enumerate(chunks)]


CASES = [
    EvalCase(id="q1", query="scope of work", category="scope", gold=["c5"], candidates=candidates(CHUNKS)),
    EvalCase(id="q2", query="membrane work", category="materials", gold=["c6", "c1"],
             candidates=candidates(CHUNKS[::-1])),
    EvalCase(id="q3", query="basement", category=None, candidates=candidates(CHUNKS[:4])),
]  # fmt: skip


def test_table1_has_every_variant_within_budget_and_flat_topk_stays_in_one_section() -> None:
    evaluation = evaluate_cases(CASES, CONFIG, now=NOW)
    rows = {row.variant: row for row in evaluation.table1}
    assert list(rows) == ["engine_topk", "flat_topk", "structure", "diversity", "full"]
    assert all(row.tokens_used <= 60 and row.token_budget == 60 for row in rows.values())
    assert rows["full"].unique_sections > rows["flat_topk"].unique_sections
    assert rows["full"].avg_overlap < rows["flat_topk"].avg_overlap
    assert evaluation.queries == 3 and len(evaluation.per_query) == 15


def test_token_matched_budget_is_what_full_used_per_query() -> None:
    evaluation = evaluate_cases(CASES, CONFIG, now=NOW)
    full_tokens = [row.tokens_used for row in evaluation.per_query if row.variant == "full"]
    expected_budget = sum(max(1, t) for t in full_tokens) / len(full_tokens)
    for row in evaluation.table1b:
        assert row.token_budget == pytest.approx(expected_budget)
        assert row.tokens_used <= row.token_budget


def test_table2_sums_to_tokens_used_and_table7_shares_sum_to_one() -> None:
    evaluation = evaluate_cases(CASES, CONFIG, now=NOW)
    for row in evaluation.table1:
        assert sum(evaluation.table2[row.variant].values()) == pytest.approx(row.tokens_used)
        shares = evaluation.table7[row.variant]
        assert sum(shares.values()) == pytest.approx(1.0) or sum(shares.values()) == 0.0


def test_gold_recall_is_per_category_and_only_over_queries_with_gold() -> None:
    evaluation = evaluate_cases(CASES, CONFIG, now=NOW)
    for variant, per_category in evaluation.recall_by_category.items():
        assert set(per_category) == {"scope", "materials"}
        rows = {r.id: r for r in evaluation.per_query if r.variant == variant}
        assert per_category["scope"] == rows["q1"].gold_recall
        assert per_category["materials"] == rows["q2"].gold_recall
        assert rows["q3"].gold_recall is None


def test_engine_topk_is_the_first_row_of_every_table_and_takes_the_engine_order() -> None:
    # The engine ranks c1..c6 in order; at 30 tokens its order cut at the budget is c1, c2 (24 tokens)
    # and then c6 (6 tokens) fits, c3-c5 do not.
    case = EvalCase(
        id="e",
        query="scope work",
        category="scope",
        evidence=["retaining walls", "membrane basement"],
        candidates=candidates(CHUNKS),
    )
    evaluation = evaluate_cases([case], CONFIG.with_overrides(token_budget=30), now=NOW)
    tables = evaluation_tables(evaluation)
    for table in (tables[0], tables[1], tables[3], tables[4]):
        assert table.rows[0][0] == "engine_topk", table.title
    baseline = evaluation.table1[0]
    assert (baseline.variant, baseline.tokens_used, baseline.selected) == ("engine_topk", 30, 3)
    assert baseline.gold_recall == 0.5  # "membrane basement" is in c1; "retaining walls" (c5) did not fit
    assert evaluation.recall_by_category["engine_topk"] == {"scope": 0.5}
    assert evaluation.table1b[0].variant == "engine_topk"


def test_delta_sweep_covers_the_papers_range_and_is_deterministic() -> None:
    first = evaluate_cases(CASES, CONFIG, now=NOW)
    assert [row.delta for row in first.delta_sweep] == list(DELTA_SWEEP)
    assert first == evaluate_cases(CASES, CONFIG, now=NOW)
    # At the loosest δ the redundancy gate lets at least as many through as at the strictest.
    assert first.delta_sweep[-1].passed_redundancy >= first.delta_sweep[0].passed_redundancy


def test_empty_query_set_is_a_user_error() -> None:
    with pytest.raises(InputError, match="the query set is empty"):
        evaluate_cases([], CONFIG, now=NOW)


def test_tables_name_every_variant_and_section() -> None:
    tables = evaluation_tables(evaluate_cases(CASES, CONFIG, now=NOW))
    titles = [t.title for t in tables]
    assert titles[0].startswith("Table 1 ") and titles[1].startswith("Table 1b")
    table2 = tables[2]
    assert table2.columns == ["section", "engine_topk", "flat_topk", "structure", "diversity", "full"]
    assert "Below Grade" in [row[0] for row in table2.rows]
    assert all(len(row) == len(table.columns) for table in tables for row in table.rows)


@settings(max_examples=25, deadline=None)
@given(budget=st.integers(min_value=1, max_value=200), delta=st.floats(min_value=0.05, max_value=1.0))
def test_no_variant_ever_exceeds_its_budget(budget: int, delta: float) -> None:
    config: BubbleConfig = CONFIG.with_overrides(token_budget=budget, overlap_threshold=delta)
    evaluation = evaluate_cases(CASES, config, now=NOW)
    assert all(row.tokens_used <= budget for row in evaluation.table1)
    assert all(row.tokens_used <= row.token_budget for row in evaluation.table1b)


def test_progress_callback_counts_each_query_once_and_changes_nothing() -> None:
    steps: list[int] = []
    with_progress = evaluate_cases(CASES, CONFIG, now=NOW, on_done=steps.append)
    assert steps == [1] * len(CASES)
    assert with_progress == evaluate_cases(CASES, CONFIG, now=NOW)


def test_the_candidates_recall_is_every_variants_ceiling_and_counts_only_queries_with_gold() -> None:
    # q2's gold c1 is among its candidates; a case whose gold no candidate holds counts 0.
    missing = EvalCase(
        id="q4", query="scope", category="scope", gold=["nowhere"], candidates=candidates(CHUNKS)
    )
    evaluation = evaluate_cases([*CASES, missing], CONFIG, now=NOW)
    assert evaluation.candidates == pytest.approx((6 + 6 + 4 + 6) / 4)
    assert evaluation.candidate_recall_by_category == {"scope": 0.5, "materials": 1.0}  # q1 1.0, q4 0.0
    assert evaluation.candidate_recall == pytest.approx((1.0 + 1.0 + 0.0) / 3)  # q3 has no gold
    for row in evaluation.table1:
        assert row.gold_recall is not None and row.gold_recall <= evaluation.candidate_recall
    for per_category in evaluation.recall_by_category.values():
        assert all(r <= evaluation.candidate_recall_by_category[c] for c, r in per_category.items())
    table = next(t for t in evaluation_tables(evaluation) if t.title.startswith("Retrieval"))
    assert table.columns == ["candidates per query", "gold recall", "materials", "scope"]
    assert table.rows == [["5.5", "0.67", "1.00", "0.50"]]


def test_a_budget_sweep_gives_each_variant_what_an_evaluation_at_that_budget_gives() -> None:
    swept = evaluate_cases(CASES, CONFIG, now=NOW, sweep=(100, 20, 60, 20))
    assert [(row.token_budget, row.variant) for row in swept.budget_sweep] == [
        (b, v) for b in (20, 60, 100) for v in ("engine_topk", "flat_topk", "structure", "diversity", "full")
    ]
    for budget in (20, 60, 100):
        alone = evaluate_cases(CASES, CONFIG.with_overrides(token_budget=budget), now=NOW)
        rows = [row for row in swept.budget_sweep if row.token_budget == budget]
        assert rows == alone.table1
        assert all(r.tokens_used <= budget for r in rows)
    # The sweep adds a table and changes no other: the same evaluation without it, and an empty sweep.
    plain = evaluate_cases(CASES, CONFIG, now=NOW)
    assert plain.budget_sweep == [] and swept.model_copy(update={"budget_sweep": []}) == plain
    table = next(t for t in evaluation_tables(swept) if t.title.startswith("Budget sweep"))
    assert table.columns == ["variant", "20", "60", "100"]
    full = next(r for r in swept.budget_sweep if r.token_budget == 60 and r.variant == "full")
    assert table.rows[-1][2] == f"{full.gold_recall:.2f} ({full.tokens_used:.0f})"
    assert not any(t.title.startswith("Budget sweep") for t in evaluation_tables(plain))


def test_a_budget_the_profile_refuses_fails_the_sweep_with_the_profiles_message() -> None:
    with pytest.raises(ConfigError, match=r"'bubble\.token_budget': 0"):
        evaluate_cases(CASES, CONFIG, now=NOW, sweep=(60, 0))


def test_gold_by_engine_rank_pools_the_items_each_variant_holds_by_their_best_candidates_rank() -> None:
    # q1: c5 ranked 5th; q2 (order reversed): c6 1st, c1 6th; q4: a gold id no candidate holds, left out.
    missing = EvalCase(
        id="q4", query="scope", category="scope", gold=["nowhere"], candidates=candidates(CHUNKS)
    )
    evaluation = evaluate_cases([*CASES, missing], CONFIG, now=NOW)
    assert evaluation.gold_by_rank == {"1–3": 1, "4–10": 2}
    assert evaluation.recall_by_rank["engine_topk"]["1–3"] == 1.0  # c6 is the engine's first, 6 tokens
    sizes = {"q1": 1, "q2": 2, "q4": 1}
    for variant, per_band in evaluation.recall_by_rank.items():
        # the items a variant holds, pooled over the bands, are the ones its per-query recall counts
        held = sum(share * evaluation.gold_by_rank[band] for band, share in per_band.items())
        rows = [r for r in evaluation.per_query if r.variant == variant and r.id in sizes]
        assert held == pytest.approx(sum((r.gold_recall or 0.0) * sizes[r.id] for r in rows))
    table = next(t for t in evaluation_tables(evaluation) if t.title.startswith("Gold by engine rank"))
    assert table.columns == ["variant", "1–3 (1)", "4–10 (2)"]
    assert table.rows[0] == ["engine_topk", "1.00", f"{evaluation.recall_by_rank['engine_topk']['4–10']:.2f}"]


def test_full_against_the_baseline_counts_queries_and_items_and_names_why_full_left_each_loss_out() -> None:
    # At 30 tokens the engine's order takes c1, c2 (24 tokens) and c6; full takes the rows its gain prefers.
    case = EvalCase(
        id="h",
        query="scope work",
        category="scope",
        evidence=["retaining walls", "membrane basement slab", "bitumen sheet", "nowhere at all"],
        candidates=candidates(CHUNKS),
    )
    evaluation = evaluate_cases([case], CONFIG.with_overrides(token_budget=30), now=NOW)
    versus = evaluation.head_to_head
    assert versus is not None
    full = case.bubble(CONFIG.with_overrides(token_budget=30), "full", run_id="r", now=NOW)
    baseline = case.bubble(CONFIG.with_overrides(token_budget=30), "engine_topk", run_id="r", now=NOW)
    items = GoldItems.of(evidence=case.evidence)
    by_full = items.held_by(s.chunk for s in full.selected)
    by_baseline = items.held_by(s.chunk for s in baseline.selected)
    pairs = list(zip(by_full, by_baseline, strict=True))
    assert versus.items == {
        "full": pairs.count((True, False)), "both": pairs.count((True, True)),
        "engine_topk": pairs.count((False, True)),
    }  # fmt: skip
    assert versus.items["engine_topk"] >= 1  # the case is built so that full loses one the baseline has
    ahead = sum(by_full) - sum(by_baseline)
    assert versus.queries == {"full": int(ahead > 0), "same": int(ahead == 0), "engine_topk": int(ahead < 0)}
    records = {r["chunk_id"]: r for r in full.trace}
    assert len(versus.losses) == versus.items["engine_topk"]
    for loss in versus.losses:
        index = items.labels.index(loss.item)
        assert by_baseline[index] and not by_full[index]
        assert loss.chunk_id in {s.chunk.chunk_id for s in baseline.selected}
        assert items.held_by([next(c for c in CHUNKS if c.chunk_id == loss.chunk_id)])[index]
        assert (loss.reason, loss.es_rank) == (
            records[loss.chunk_id]["final_reason"],
            records[loss.chunk_id]["es_rank"],
        )
        assert loss.reason != "passed_all_gates"
    counts, listed = (
        t for t in evaluation_tables(evaluation) if t.title.startswith(("full against", "Gold only"))
    )
    assert counts.rows[1][1:] == [str(versus.items[k]) for k in ("full", "both", "engine_topk")]
    assert [row[0] for row in listed.rows] == ["h"] * len(versus.losses)
    # no query with gold, no comparison
    assert evaluate_cases(CASES[2:], CONFIG, now=NOW).head_to_head is None
