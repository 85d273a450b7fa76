"""The HTML report: funnel and allocation from trace records, and a page with no external references."""

from __future__ import annotations

import math
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbubble.app.report import (
    DeltaPoint,
    FunnelStage,
    ReportData,
    SectionTokens,
    Table,
    VariantPoint,
    place_labels,
    pruning_funnel,
    render_report,
    section_allocation,
    spread_points,
    write_report,
)
from esbubble.errors import InputError
from esbubble.models import StepDetails, TraceDict, trace_dict

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
REASONS = ["passed_all_gates", "low_relevance", "too_redundant", "section_budget_exceeded", "budget_exceeded",
           "max_chunks"]  # fmt: skip


def record(run_id: str, rank: int, reason: str, *, section: str = "Scope", tokens: int = 10) -> TraceDict:
    selected = reason == "passed_all_gates"
    return trace_dict(
        {
            "trace_id": f"{run_id}-{rank}", "run_id": run_id, "@timestamp": NOW, "query": "q",
            "query_hash": "h", "variant": "full", "rank": rank, "chunk_id": f"c{rank}", "doc_id": "d",
            "section": section, "sheet_name": None, "bucket": section, "row_number": None, "page": None,
            "token_count": tokens, "tf": 1.0, "boost": 0.0, "len_penalty": 0.5, "score_raw": 1.0,
            "score_final": 0.5, "es_score": 1.0, "es_rank": rank, "overlap": 0.0, "threshold": 0.55,
            "budget_remaining": 100.0, "bucket_remaining": 100.0, "stage": "select",
            "step_decision": "pass" if selected else "fail",
            "final_decision": "selected" if selected else "rejected", "final_reason": reason,
            "step_details": StepDetails(),
        }
    )  # fmt: skip


def test_funnel_subtracts_each_gate_rejections_in_order_per_run() -> None:
    records = [
        record("r1", 1, "passed_all_gates"),
        record("r1", 2, "too_redundant"),
        record("r1", 3, "too_redundant"),
        record("r1", 4, "budget_exceeded"),
        record("r2", 1, "passed_all_gates"),
        record("r2", 2, "low_relevance"),
    ]
    funnel = {stage.stage: stage.remaining for stage in pruning_funnel(records)}
    assert funnel == {
        "candidates": 3.0,
        "relevance": 2.5,
        "gain": 2.5,
        "redundancy": 1.5,
        "section budget": 1.5,
        "global budget": 1.0,
        "max chunks": 1.0,
        "selected": 1.0,
    }


@given(st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3"]), st.sampled_from(REASONS)), max_size=40))
def test_funnel_never_grows_and_ends_at_the_selected_count(rows: list[tuple[str, str]]) -> None:
    records = [record(run, i + 1, reason) for i, (run, reason) in enumerate(rows)]
    funnel = pruning_funnel(records)
    if not records:
        assert funnel == []
        return
    remaining = [stage.remaining for stage in funnel]
    assert remaining == sorted(remaining, reverse=True)
    runs = len({run for run, _ in rows})
    selected = sum(1 for _, reason in rows if reason == "passed_all_gates") / runs
    assert remaining[-2] == pytest.approx(selected)
    assert remaining[-1] == pytest.approx(selected)


def test_allocation_is_mean_selected_tokens_per_section_largest_first() -> None:
    records = [
        record("r1", 1, "passed_all_gates", section="Scope", tokens=100),
        record("r1", 2, "passed_all_gates", section="Products", tokens=20),
        record("r1", 3, "too_redundant", section="Products", tokens=500),
        record("r2", 1, "passed_all_gates", section="Scope", tokens=50),
    ]
    assert section_allocation(records) == [
        SectionTokens(section="Scope", tokens=75.0),
        SectionTokens(section="Products", tokens=10.0),
    ]


def sample_data(title: str = "Batch <b>report</b>") -> ReportData:
    return ReportData(
        title=title,
        batch_id="batch-1",
        generated_at=NOW,
        runs=4,
        variants=[
            VariantPoint(variant="flat_topk", tokens_used=780, unique_sections=1),
            VariantPoint(variant="full", tokens_used=214, unique_sections=3),
        ],
        delta_sweep=[
            DeltaPoint(delta=d, passed_redundancy=10 * d, tokens_used=200 + d, unique_sections=3)
            for d in (0.3, 0.4, 0.5)
        ],
        funnel=[FunnelStage(stage="candidates", remaining=120), FunnelStage(stage="selected", remaining=3)],
        allocation=[SectionTokens(section="Scope of Works & <Co>", tokens=150)],
        tables=[Table(title="Table 1", columns=["variant", "tokens"], rows=[["full", "214"]])],
    )


def test_report_has_four_inline_svg_figures_and_no_external_references() -> None:
    html = render_report(sample_data())
    assert html.count("<svg ") == 4
    assert "<script" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "@import" not in html
    for figure in ("Figure 2", "Figure 3", "Figure 4", "Figure 5"):
        assert figure in html


def test_report_escapes_user_text() -> None:
    html = render_report(sample_data())
    assert "Batch &lt;b&gt;report&lt;/b&gt;" in html
    assert "Scope of Works &amp; &lt;Co&gt;" in html
    assert "<b>report</b>" not in html


def test_report_without_data_says_so_in_each_plot() -> None:
    html = render_report(ReportData(title="empty", batch_id="b", generated_at=NOW, runs=0))
    assert html.count("no data") == 4


def test_write_report_to_missing_directory_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot write report to .*missing"):
        write_report(sample_data(), tmp_path / "missing" / "report.html")
    written = write_report(sample_data(), tmp_path / "report.html")
    assert written.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# Five variants where two pairs coincide exactly and one sits close by (what real batches give).
CROWDED = [
    VariantPoint(variant="engine_topk", tokens_used=783.3, unique_sections=2.72),
    VariantPoint(variant="flat_topk", tokens_used=783.3, unique_sections=2.72),
    VariantPoint(variant="structure", tokens_used=739.2, unique_sections=4.6),
    VariantPoint(variant="diversity", tokens_used=745.0, unique_sections=4.55),
    VariantPoint(variant="full", tokens_used=739.2, unique_sections=4.6),
]


def test_spread_points_keeps_distinct_points_and_fans_out_coinciding_ones() -> None:
    apart = [(100.0, 100.0), (200.0, 50.0)]
    assert spread_points(apart) == apart
    same = spread_points([(100.0, 100.0)] * 4)
    assert len(set(same)) == 4
    assert all(math.dist(a, b) >= 14 - 1e-6 for i, a in enumerate(same) for b in same[i + 1 :])
    assert all(math.dist(p, (100.0, 100.0)) < 12 for p in same)  # moved no further than needed


@given(st.lists(st.tuples(st.floats(0, 300), st.floats(0, 200)), min_size=1, max_size=6))
def test_spread_points_never_leaves_two_markers_touching(positions: list[tuple[float, float]]) -> None:
    shown = spread_points(positions)
    assert all(math.dist(a, b) >= 14 - 1e-6 for i, a in enumerate(shown) for b in shown[i + 1 :])


@given(st.lists(st.tuples(st.floats(0, 300), st.floats(0, 200)), min_size=1, max_size=6))
def test_placed_labels_never_cover_each_other_or_a_marker(positions: list[tuple[float, float]]) -> None:
    points = spread_points(positions)
    texts = [f"variant{i}" for i in range(len(points))]
    labels = place_labels(points, texts, area=(-200, -200, 600, 500))
    boxes = [(x, y - 10, x + 7.2 * len(t), y + 2) for (x, y, _), t in zip(labels, texts, strict=True)]
    for i, box in enumerate(boxes):
        for other in boxes[i + 1 :]:
            assert not (box[0] < other[2] and other[0] < box[2] and box[1] < other[3] and other[1] < box[3])
        for px, py in points:
            assert not (box[0] < px + 7 and px - 7 < box[2] and box[1] < py + 7 and py - 7 < box[3])


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.mark.browser
def test_report_renders_four_visible_plots_without_console_errors(tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    page_path = write_report(sample_data(), tmp_path / "report.html")
    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = context.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.on("requestfailed", lambda request: problems.append(f"request failed: {request.url}"))
            requests: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            page.goto(page_path.as_uri(), wait_until="load")
            sizes = page.eval_on_selector_all(
                "svg",
                "els => els.map(e => [e.getBoundingClientRect().width, e.getBoundingClientRect().height])",
            )
            marks = page.eval_on_selector_all("svg circle, svg rect, svg polyline", "els => els.length")
            title = page.title()
        finally:
            context.close()
    assert problems == []
    assert requests == [page_path.as_uri()]
    assert len(sizes) == 4
    assert all(width > 100 and height > 100 for width, height in sizes)
    assert marks > 10
    assert title == "Batch <b>report</b>"


def _rects_overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def _gap(a: dict[str, float], b: dict[str, float]) -> float:
    dx = max(b["x"] - (a["x"] + a["width"]), a["x"] - (b["x"] + b["width"]), 0.0)
    dy = max(b["y"] - (a["y"] + a["height"]), a["y"] - (b["y"] + b["height"]), 0.0)
    return float((dx**2 + dy**2) ** 0.5)


@pytest.mark.browser
def test_figure_2_shows_every_point_and_label_next_to_its_point(tmp_path: Path) -> None:
    """Rendered by Chromium: no marker covers another, no label covers a marker or a label, every label is
    inside the plot and nearer its own marker than any other."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    data = sample_data().model_copy(update={"variants": CROWDED})
    page_path = write_report(data, tmp_path / "report.html")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = context.new_page()
            page.goto(page_path.as_uri(), wait_until="load")
            groups = page.eval_on_selector_all(
                "svg g.variant",
                """els => els.map(g => {
                    const box = e => { const r = e.getBoundingClientRect();
                                       return {x: r.x, y: r.y, width: r.width, height: r.height}; };
                    return {variant: g.dataset.variant, point: box(g.querySelector('circle')),
                            label: box(g.querySelector('text')), text: g.querySelector('text').textContent,
                            svg: box(g.ownerSVGElement)};
                })""",
            )
        finally:
            context.close()
    assert [g["variant"] for g in groups] == [p.variant for p in CROWDED]
    assert all(g["text"] == g["variant"] and g["label"]["width"] > 0 for g in groups)
    for i, group in enumerate(groups):
        svg = group["svg"]
        for part in (group["point"], group["label"]):
            assert svg["x"] <= part["x"] and part["x"] + part["width"] <= svg["x"] + svg["width"]
            assert svg["y"] <= part["y"] and part["y"] + part["height"] <= svg["y"] + svg["height"]
        for other in groups[i + 1 :]:
            assert not _rects_overlap(group["point"], other["point"]), (group["variant"], other["variant"])
            assert not _rects_overlap(group["label"], other["label"]), (group["variant"], other["variant"])
        for other in groups:
            assert not _rects_overlap(group["label"], other["point"]), (group["variant"], other["variant"])
        own = _gap(group["label"], group["point"])
        assert own <= 20, group["variant"]
        assert all(own < _gap(group["label"], o["point"]) for o in groups if o is not group), group["variant"]
