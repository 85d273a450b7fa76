"""Each variant switches exactly the stages docs/algorithm.md (Variants) says it does; token-matched mode."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import paper_config, text_candidate

from esbubble.core.bubble import build_bubble
from esbubble.core.variants import VARIANTS, token_matched_config
from esbubble.models import Bubble, Candidate, Variant

NOW = datetime(2026, 1, 1, tzinfo=UTC)

CONFIG = paper_config(
    {
        "bubble": {
            "token_budget": 200,
            "length_norm": 20.0,
            "slack_policy": "strict",
            "overlap_threshold": 0.5,
        },
        "priors": {"sections": {"Priority": 5.0}},
        "buckets": {"shares": {"Capped": 0.05}},
    }
)


def _candidate(chunk_id: str, section: str, text: str, tokens: int = 20) -> Candidate:
    return text_candidate(chunk_id, section, text, tokens)


CANDIDATES = [
    _candidate("prior", "Priority", "general conditions apply"),  # tf 0: only a prior can select it
    _candidate("dup1", "Main", "slab membrane joint seal"),
    _candidate("dup2", "Main", "slab membrane joint"),  # every word already in dup1
    _candidate("capped", "Capped", "slab drainage"),  # 20 tokens > ρ·T_B = 10
]


def _outcome(bubble: Bubble) -> dict[str, str]:
    return {r["chunk_id"]: r["final_reason"] for r in bubble.trace}


# What the variants' switches (docs/algorithm.md, Variants) imply for this candidate set.
EXPECTED: dict[Variant, dict[str, str]] = {
    "flat_topk": {
        "prior": "low_relevance",
        "dup1": "passed_all_gates",
        "dup2": "passed_all_gates",
        "capped": "passed_all_gates",
    },
    "structure": {
        "prior": "passed_all_gates",
        "dup1": "passed_all_gates",
        "dup2": "passed_all_gates",
        "capped": "section_budget_exceeded",
    },
    "diversity": {
        "prior": "low_relevance",
        "dup1": "passed_all_gates",
        "dup2": "too_redundant",
        "capped": "passed_all_gates",
    },
    "full": {
        "prior": "passed_all_gates",
        "dup1": "passed_all_gates",
        "dup2": "too_redundant",
        "capped": "section_budget_exceeded",
    },
}


@pytest.mark.parametrize("variant", list(EXPECTED))
def test_variant_switches_exactly_its_stages(variant: Variant) -> None:
    bubble = build_bubble("slab membrane drainage", CANDIDATES, CONFIG, run_id="v", now=NOW, variant=variant)
    switches = VARIANTS[variant]
    assert bubble.variant == variant
    assert _outcome(bubble) == EXPECTED[variant]
    for record in bubble.trace:
        gates = {g["gate"]: g for g in record["step_details"]["gates"]}
        assert gates["redundancy"]["enabled"] is switches.redundancy
        assert gates["section_budget"]["enabled"] is switches.section_budgets
        # Always on, in every paper variant: relevance, global budget, max_chunks, length penalty.
        assert (
            gates["relevance"]["enabled"]
            and gates["global_budget"]["enabled"]
            and gates["max_chunks"]["enabled"]
        )
        assert record["len_penalty"] == 0.5
        assert record["variant"] == variant
    prior_record = next(r for r in bubble.trace if r["chunk_id"] == "prior")
    assert prior_record["boost"] == (5.0 if switches.priors else 0.0)


def test_variant_none_means_the_profiles_variant() -> None:
    config = CONFIG.with_overrides(variant="diversity")
    bubble = build_bubble("slab", CANDIDATES, config, run_id="v", now=NOW)
    assert bubble.variant == "diversity"


def test_token_matched_config_sets_the_budget_to_what_full_used() -> None:
    full = build_bubble("slab membrane drainage", CANDIDATES, CONFIG, run_id="v", now=NOW, variant="full")
    matched = token_matched_config(CONFIG, full.tokens_used)
    assert matched.bubble.token_budget == full.tokens_used == 40
    assert matched.model_dump(exclude={"bubble"}) == CONFIG.model_dump(exclude={"bubble"})
    flat = build_bubble(
        "slab membrane drainage", CANDIDATES, matched, run_id="v", now=NOW, variant="flat_topk"
    )
    assert flat.tokens_used <= full.tokens_used
    assert flat.budget == 40


def test_token_matched_budget_is_at_least_one_token() -> None:
    assert token_matched_config(CONFIG, 0).bubble.token_budget == 1


def test_engine_topk_takes_the_engine_order_and_skips_what_does_not_fit() -> None:
    """The peer baseline: es_rank order, only the global budget decides; a chunk too big is skipped."""
    ranked = [
        Candidate(chunk=text_candidate("first", "A", "unrelated words", 120).chunk, es_rank=1),
        Candidate(chunk=text_candidate("too_big", "B", "slab", 100).chunk, es_rank=2),
        Candidate(chunk=text_candidate("third", "A", "unrelated words", 60).chunk, es_rank=3),
        Candidate(chunk=text_candidate("fourth", "C", "slab slab slab", 30).chunk, es_rank=4),
    ]
    bubble = build_bubble("slab", ranked, CONFIG, run_id="r", now=NOW, variant="engine_topk")
    assert [s.chunk.chunk_id for s in bubble.selected] == ["first", "third"]
    by_id = {r["chunk_id"]: r for r in bubble.trace}
    assert [by_id[c]["rank"] for c in ("first", "too_big", "third", "fourth")] == [1, 2, 3, 4]
    assert by_id["too_big"]["final_reason"] == "budget_exceeded"
    assert by_id["fourth"]["final_reason"] == "budget_exceeded"  # 200 - 180 = 20 < 30
    gates = {g["gate"]: g["enabled"] for g in by_id["first"]["step_details"]["gates"]}
    assert gates == {
        "relevance": False,
        "gain": False,
        "redundancy": False,
        "section_budget": False,
        "global_budget": True,
        "max_chunks": False,
    }
