"""Batch re-bubbling: comparing runs query by query, and running a batch under one batch id."""

from __future__ import annotations

from esbubble.rebubble import RunSummary, compare_runs


def summary(run_id: str, query_hash: str, selected: list[str], *, tokens: int, sections: list[str],
            variant: str = "full") -> RunSummary:  # fmt: skip
    return RunSummary(
        run_id=run_id, batch_id=None, query=f"query {query_hash}", query_hash=query_hash, variant=variant,
        config_hash="cfg", tokens_used=tokens, sections=sections, selected=selected,
    )  # fmt: skip


def test_compare_lists_entered_and_left_chunks_with_token_and_section_deltas() -> None:
    old = [summary("a1", "h1", ["c1", "c2", "c3"], tokens=300, sections=["Scope", "Products"])]
    new = [summary("b1", "h1", ["c1", "c4", "c2"], tokens=250, sections=["Scope", "Below Grade"])]
    comparison = compare_runs("a", old, new)
    (change,) = comparison.changes
    assert change.entered == ["c4"]
    assert change.left == ["c3"]
    assert (change.tokens_before, change.tokens_after, change.token_delta) == (300, 250, -50)
    assert change.sections_entered == ["Below Grade"]
    assert change.sections_left == ["Products"]
    assert change.changed and comparison.changed == 1


def test_identical_runs_show_no_change() -> None:
    old = [summary("a1", "h1", ["c1"], tokens=10, sections=["S"])]
    new = [summary("b1", "h1", ["c1"], tokens=10, sections=["S"])]
    comparison = compare_runs("a", old, new)
    assert comparison.changed == 0
    assert comparison.changes[0].entered == comparison.changes[0].left == []


def test_runs_pair_by_query_preferring_the_same_variant_and_report_unmatched() -> None:
    old = [
        summary("a1", "h1", ["x"], tokens=5, sections=["S"], variant="flat_topk"),
        summary("a2", "h1", ["y"], tokens=5, sections=["S"], variant="full"),
        summary("a3", "h3", ["z"], tokens=5, sections=["S"]),
    ]
    new = [
        summary("b1", "h1", ["y"], tokens=5, sections=["S"]),
        summary("b2", "h2", ["q"], tokens=1, sections=[]),
    ]
    comparison = compare_runs("a", old, new)
    assert [(c.old_run_id, c.new_run_id) for c in comparison.changes] == [("a2", "b1")]
    assert comparison.only_in_new == ["b2"]
    assert comparison.only_in_baseline == ["a1", "a3"]
