"""scripts/replay_selection.py: saved cases replay to the same gold recall as ``esbubble eval``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from repo_scripts import load_script

from esbubble.app.evaluate import EvalCase, evaluate
from esbubble.config import BubbleConfig
from esbubble.ingest import IngestOptions, ingest_paths
from esbubble.queryset import load_queries
from esbubble.store.connection import Store

replay_selection = load_script("replay_selection")

POLICY = """# Trademark policy

## Merchandise

Stickers and t-shirts with the logo may be handed out when the merchandise is provided free of charge.

## Sales

Selling branded stickers and merchandise without explicit approval is not permitted.

## Verbs

Don't use the trademark as a verb, as in a slogan.

## Papers

The word may be used in academic papers and theses without the TM symbol.
"""

QUERIES = [
    {
        "id": "merch",
        "query": "Can we hand out logo stickers at our meetup, and may we sell them?",
        "category": "multi_facet",
        "evidence": ["provided free of charge", "without explicit approval is not permitted"],
    },
    {
        "id": "thesis",
        "query": "Does a thesis need the TM symbol?",
        "category": "narrow_fact",
        "evidence": ["without the TM symbol"],
    },
]


def _policy_set(store: Store, tmp_path: Path) -> Path:
    """The policy ingested into ``store``, and its query set's path."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "policy.md").write_text(POLICY, encoding="utf-8")
    assert ingest_paths(store, [docs], IngestOptions()).ok
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps(q) + "\n" for q in QUERIES), encoding="utf-8")
    return queries


def test_replayed_cases_give_the_recall_eval_gives(store: Store, tmp_path: Path) -> None:
    queries = _policy_set(store, tmp_path)

    cases = replay_selection.set_cases(store, queries)
    saved = [("realdocs", EvalCase.model_validate_json(case.model_dump_json())) for case in cases]
    rows = replay_selection.replay_cases(saved, {})

    assert [(row.budget, row.variant) for row in rows] == [
        (400, "full"), (400, "engine_topk"), (400, "ceiling"),
        (800, "full"), (800, "engine_topk"), (800, "ceiling"),
    ]  # fmt: skip
    for budget in (400, 800):
        *variants, ceiling = [row for row in rows if row.budget == budget]
        for row in variants:  # no selection holds more than the most whole chunks within the budget hold
            assert all(
                mine <= best
                for (_, mine), (_, best) in zip(row.per_question, ceiling.per_question, strict=True)
            )
        assert ceiling.mean == 1.0  # every phrase sits in a short paragraph; both fit in 400 tokens
    loaded = load_queries(queries).cases
    now = datetime.now(UTC)
    for budget in (400, 800):
        tables = evaluate(store, loaded, BubbleConfig().with_overrides(token_budget=budget), now=now)
        expected = {row.variant: row.gold_recall for row in tables.table1}
        for row in rows:
            if row.budget == budget and row.variant != "ceiling":
                assert row.questions == 2 and row.held["B"] == 0.0
                assert row.mean == expected[row.variant]
    assert rows[0].mean > 0  # the policy holds the evidence: the bubble finds some of it


def test_a_changed_setting_is_applied_to_every_bubble(store: Store, tmp_path: Path) -> None:
    queries = _policy_set(store, tmp_path)
    saved = [("realdocs13", case) for case in replay_selection.set_cases(store, queries)]

    starved = replay_selection.replay_cases(saved, {"max_chunks": 1})
    usual = replay_selection.replay_cases(saved, {})

    assert all(row.held["A"] == 0.0 for row in starved + usual)  # set 13 counts in the second half
    for one, default in zip(starved, usual, strict=True):
        assert [half for half, _ in one.per_question] == ["B"] * one.questions
        assert sum(recall for _, recall in one.per_question) == one.held["B"]
        if one.variant == "full":  # one chunk cannot hold both of "merch"'s phrases, in two sections
            assert one.mean < default.mean
            lost = one.held["B"] - default.held["B"]
            assert one.against(default) == f"A +0.0, B {lost:+.1f} (0 up, 1 down)"  # "merch" alone
        assert default.against(default) == "A +0.0, B +0.0 (0 up, 0 down)"
