"""A self-contained HTML report with inline SVG plots of a batch of runs.

The page carries no JavaScript, no external CSS and no network references, so
it opens the same way from a CI artefact, an e-mail or an air-gapped laptop.
Plots are drawn from plain typed inputs (``ReportData``); computing those
inputs from a batch lives in ``esbubble.evaluate`` and ``esbubble.rebubble``.

Figures follow the paper: tokens vs section coverage per variant (Figure 2),
δ sensitivity (Figure 3), the candidate pruning funnel per stage (Figure 4)
and the token allocation across sections (Figure 5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from html import escape
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from esbubble.errors import InputError
from esbubble.models import TraceRecord

_WIDTH = 560
_HEIGHT = 320
_MARGIN_LEFT = 64
_MARGIN_RIGHT = 24
_MARGIN_TOP = 24
_MARGIN_BOTTOM = 48
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VariantPoint(_Model):
    """Figure 2: one variant's mean tokens used and mean unique sections."""

    variant: str
    tokens_used: float = Field(ge=0)
    unique_sections: float = Field(ge=0)


class DeltaPoint(_Model):
    """Figure 3: what the full bubble does at one redundancy threshold δ (means per query)."""

    delta: float
    passed_redundancy: float = Field(ge=0, description="candidates that passed the redundancy gate")
    tokens_used: float = Field(ge=0)
    unique_sections: float = Field(ge=0)


class FunnelStage(_Model):
    """Figure 4: candidates still alive after one stage (mean per run)."""

    stage: str
    remaining: float = Field(ge=0)


class SectionTokens(_Model):
    """Figure 5: tokens a section received in the bubble (mean per run)."""

    section: str
    tokens: float = Field(ge=0)


class Table(_Model):
    """A plain table printed under the plots (already formatted cells)."""

    title: str
    columns: list[str]
    rows: list[list[str]]


class ReportData(_Model):
    """Everything the report shows; no I/O needed to render it."""

    title: str
    batch_id: str
    generated_at: datetime
    runs: int = Field(ge=0)
    variants: list[VariantPoint] = Field(default_factory=list)
    delta_sweep: list[DeltaPoint] = Field(default_factory=list)
    funnel: list[FunnelStage] = Field(default_factory=list)
    allocation: list[SectionTokens] = Field(default_factory=list)
    tables: list[Table] = Field(default_factory=list)


# Gates in pipeline order with the rejection reason each one gives.
_FUNNEL_GATES: tuple[tuple[str, str], ...] = (
    ("relevance", "low_relevance"),
    ("redundancy", "too_redundant"),
    ("section budget", "section_budget_exceeded"),
    ("global budget", "budget_exceeded"),
    ("max chunks", "max_chunks"),
)


def pruning_funnel(records: Sequence[TraceRecord]) -> list[FunnelStage]:
    """Mean candidates per run left after each gate, from trace records alone.

    Each candidate has exactly one final reason, given by the first gate it
    failed, so the count alive after a gate is the count before it minus the
    candidates that gate rejected. Repair/expansion reasons are not gates and
    leave the funnel unchanged.
    """
    runs = {record.run_id for record in records}
    if not runs:
        return []
    per_run = len(runs)
    alive = len(records)
    stages = [FunnelStage(stage="candidates", remaining=alive / per_run)]
    for stage, reason in _FUNNEL_GATES:
        alive -= sum(1 for r in records if r.final_reason == reason)
        stages.append(FunnelStage(stage=stage, remaining=alive / per_run))
    selected = sum(1 for r in records if r.final_decision == "selected")
    stages.append(FunnelStage(stage="selected", remaining=selected / per_run))
    return stages


def section_allocation(records: Sequence[TraceRecord]) -> list[SectionTokens]:
    """Mean tokens per run each section received, largest first (ties by name)."""
    runs = {record.run_id for record in records}
    if not runs:
        return []
    totals: dict[str, int] = {}
    for record in records:
        if record.final_decision == "selected":
            totals[record.section] = totals.get(record.section, 0) + record.token_count
    shares = [SectionTokens(section=s, tokens=t / len(runs)) for s, t in totals.items()]
    return sorted(shares, key=lambda share: (-share.tokens, share.section))


def render_report(data: ReportData) -> str:
    """The report as one HTML document (UTF-8, no external references)."""
    figures = [
        _figure(
            "Figure 2 — tokens used vs section coverage per variant",
            _scatter(data.variants),
            "Each point is a variant: mean tokens used (x) and mean unique sections (y) per query.",
        ),
        _figure(
            "Figure 3 — sensitivity to the redundancy threshold δ",
            _delta_lines(data.delta_sweep),
            "Full bubble at each δ: candidates passing the redundancy gate, unique sections and "
            "tokens used (means per query, each series scaled to its own maximum).",
        ),
        _figure(
            "Figure 4 — candidate pruning per stage",
            _bars([(s.stage, s.remaining) for s in data.funnel], value_format="{:.1f}"),
            "Mean candidates per run still alive after each gate.",
        ),
        _figure(
            "Figure 5 — token allocation across sections",
            _bars([(s.section, s.tokens) for s in data.allocation], value_format="{:.0f}"),
            "Mean tokens per run that each section received in the bubble.",
        ),
    ]
    tables = "\n".join(_table(table) for table in data.tables)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(data.title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }}
.grid {{ display: flex; flex-wrap: wrap; gap: 1.5rem; }}
figure {{ margin: 0; border: 1px solid #ddd; border-radius: 6px; padding: 0.75rem; }}
figcaption {{ font-size: 0.85rem; color: #555; max-width: {_WIDTH}px; }}
h2 {{ font-size: 1.05rem; margin: 0 0 0.5rem 0; }}
table {{ border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }}
th, td {{ border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; }}
td.num {{ text-align: right; }}
.meta {{ color: #555; }}
</style>
</head>
<body>
<h1>{escape(data.title)}</h1>
<p class="meta">batch <code>{escape(data.batch_id)}</code> · {data.runs} runs ·
generated {escape(data.generated_at.isoformat())}</p>
<div class="grid">
{"".join(figures)}
</div>
{tables}
</body>
</html>
"""


def write_report(data: ReportData, path: str | Path) -> Path:
    """Render and write the report; an unwritable path is a user error."""
    target = Path(path)
    try:
        target.write_text(render_report(data), encoding="utf-8")
    except OSError as error:
        raise InputError(
            f"cannot write report to {target}: {error.strerror}", hint="pass --out with a writable path"
        ) from None
    return target


def _figure(title: str, svg: str, caption: str) -> str:
    return f"<figure><h2>{escape(title)}</h2>{svg}<figcaption>{escape(caption)}</figcaption></figure>\n"


def _table(table: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f'<td class="{_cell_class(c)}">{escape(c)}</td>' for c in row) + "</tr>"
        for row in table.rows
    )
    return (
        f"<h2>{escape(table.title)}</h2>\n<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _cell_class(cell: str) -> str:
    """Numbers (and percentages, and the '–' of a missing value) right-aligned, text left-aligned."""
    try:
        float(cell.rstrip("%"))
    except ValueError:
        return "num" if cell == "–" else "text"
    return "num"


def _svg(body: str, *, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" '
        f'width="{_WIDTH}" height="{_HEIGHT}" viewBox="0 0 {_WIDTH} {_HEIGHT}">{body}</svg>'
    )


def _empty(label: str) -> str:
    return _svg(
        f'<text x="{_WIDTH / 2}" y="{_HEIGHT / 2}" text-anchor="middle" fill="#888">no data</text>',
        label=label,
    )


def _nice_max(value: float) -> float:
    """A round axis maximum ≥ value (1, 2, 2.5, 5 × 10^k)."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        candidate = step * 10.0**exponent
        if candidate >= value:
            return candidate
    return 10.0 ** (exponent + 1)


def _fmt(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 1e-9 else f"{value:.2f}".rstrip("0").rstrip(".")


def _axes(x_label: str, y_label: str, x_ticks: Sequence[tuple[float, str]], y_max: float) -> str:
    """Frame, y grid with 5 ticks, given x ticks (pixel x, text) and axis labels."""
    left, right = _MARGIN_LEFT, _WIDTH - _MARGIN_RIGHT
    top, bottom = _MARGIN_TOP, _HEIGHT - _MARGIN_BOTTOM
    parts = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/>']
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#333"/>')
    for i in range(6):
        value = y_max * i / 5
        y = bottom - (bottom - top) * i / 5
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{_fmt(value)}</text>'
        )
    for x, text in x_ticks:
        parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#333"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" font-size="11">{escape(text)}</text>'
        )
    parts.append(
        f'<text x="{(left + right) / 2}" y="{_HEIGHT - 8}" text-anchor="middle" font-size="12">'
        f"{escape(x_label)}</text>"
    )
    parts.append(
        f'<text x="14" y="{(top + bottom) / 2}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 14 {(top + bottom) / 2})">{escape(y_label)}</text>'
    )
    return "".join(parts)


def _scatter(points: Sequence[VariantPoint]) -> str:
    label = "tokens used vs unique sections per variant"
    if not points:
        return _empty(label)
    left, right = _MARGIN_LEFT, _WIDTH - _MARGIN_RIGHT
    top, bottom = _MARGIN_TOP, _HEIGHT - _MARGIN_BOTTOM
    x_max = _nice_max(max(p.tokens_used for p in points))
    y_max = _nice_max(max(p.unique_sections for p in points))
    x_ticks = [(left + (right - left) * i / 5, _fmt(x_max * i / 5)) for i in range(6)]
    parts = [_axes("tokens used", "unique sections", x_ticks, y_max)]
    placed: list[tuple[float, float]] = []
    for i, point in enumerate(points):
        x = left + (right - left) * point.tokens_used / x_max
        y = bottom - (bottom - top) * point.unique_sections / y_max
        colour = _PALETTE[i % len(_PALETTE)]
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{colour}"><title>')
        parts.append(
            f"{escape(point.variant)}: {point.tokens_used:.1f} tokens, "
            f"{point.unique_sections:.2f} sections</title></circle>"
        )
        anchor = "end" if x > (left + right) / 2 else "start"
        dx = -9 if anchor == "end" else 9
        label_y = y - 8
        # Variants often land on the same spot (e.g. structure and full); stack their labels.
        while any(abs(px - x) < 70 and abs(py - label_y) < 14 for px, py in placed):
            label_y += 15
        placed.append((x, label_y))
        parts.append(
            f'<text x="{x + dx:.1f}" y="{label_y:.1f}" text-anchor="{anchor}" font-size="12" '
            f'fill="{colour}">{escape(point.variant)}</text>'
        )
    return _svg("".join(parts), label=label)


def _delta_lines(points: Sequence[DeltaPoint]) -> str:
    label = "sensitivity to the redundancy threshold"
    if not points:
        return _empty(label)
    ordered = sorted(points, key=lambda p: p.delta)
    left, right = _MARGIN_LEFT, _WIDTH - _MARGIN_RIGHT - 135
    top, bottom = _MARGIN_TOP, _HEIGHT - _MARGIN_BOTTOM
    lo, hi = ordered[0].delta, ordered[-1].delta
    span = hi - lo or 1.0

    def x_of(delta: float) -> float:
        return left + (right - left) * ((delta - lo) / span if hi > lo else 0.5)

    x_ticks = [(x_of(p.delta), f"{p.delta:g}") for p in ordered]
    parts = [_axes("δ (redundancy threshold)", "share of series maximum", x_ticks, 1.0)]
    series = (
        ("pass redundancy gate", [p.passed_redundancy for p in ordered]),
        ("unique sections", [p.unique_sections for p in ordered]),
        ("tokens used", [p.tokens_used for p in ordered]),
    )
    for i, (name, values) in enumerate(series):
        top_value = max(values) or 1.0
        colour = _PALETTE[i]
        coords = [
            (x_of(p.delta), bottom - (bottom - top) * v / top_value)
            for p, v in zip(ordered, values, strict=True)
        ]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for (x, y), value in zip(coords, values, strict=True):
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}">'
                f"<title>{escape(name)}: {value:.2f}</title></circle>"
            )
        legend_y = top + 14 + i * 18
        parts.append(
            f'<rect x="{right + 12}" y="{legend_y - 9}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{right + 26}" y="{legend_y}" font-size="11">{escape(name)}</text>'
        )
    return _svg("".join(parts), label=label)


def _bars(items: Sequence[tuple[str, float]], *, value_format: str) -> str:
    """Horizontal bars, one per item, labelled with name and value."""
    label = "bar chart"
    if not items:
        return _empty(label)
    label_width = 150
    left, right = label_width, _WIDTH - _MARGIN_RIGHT - 40
    top = _MARGIN_TOP
    row = min(28.0, (_HEIGHT - top - 12) / len(items))
    x_max = max(value for _, value in items) or 1.0
    parts = []
    for i, (name, value) in enumerate(items):
        y = top + i * row
        width = (right - left) * value / x_max
        colour = _PALETTE[i % len(_PALETTE)]
        short = name if len(name) <= 22 else name[:21] + "…"
        parts.append(
            f'<text x="{left - 6}" y="{y + row * 0.6:.1f}" text-anchor="end" font-size="11">'
            f"{escape(short)}</text>"
        )
        parts.append(
            f'<rect x="{left}" y="{y + row * 0.15:.1f}" width="{width:.1f}" height="{row * 0.7:.1f}" '
            f'fill="{colour}"><title>{escape(name)}: {value_format.format(value)}</title></rect>'
        )
        parts.append(
            f'<text x="{left + width + 4:.1f}" y="{y + row * 0.6:.1f}" font-size="11">'
            f"{value_format.format(value)}</text>"
        )
    return _svg("".join(parts), label=label)
