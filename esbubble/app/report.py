"""A self-contained HTML report with inline SVG plots of a batch of runs.

The page carries no JavaScript, no external CSS and no network references, so
it opens the same way from a CI artefact, an e-mail or an air-gapped laptop.
Plots are drawn from plain typed inputs (``ReportData``); computing those
inputs from a batch lives in ``esbubble.app.evaluate`` and ``esbubble.app.rebubble``.

Figures follow the paper: tokens vs section coverage per variant (Figure 2),
δ sensitivity (Figure 3), the candidate pruning funnel per stage (Figure 4)
and the token allocation across sections (Figure 5).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from datetime import datetime
from html import escape
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from esbubble.errors import InputError
from esbubble.models import TraceDict

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
    ("gain", "low_gain"),
    ("redundancy", "too_redundant"),
    ("section budget", "section_budget_exceeded"),
    ("global budget", "budget_exceeded"),
    ("max chunks", "max_chunks"),
)


def pruning_funnel(records: Sequence[TraceDict]) -> list[FunnelStage]:
    """Mean candidates per run left after each gate, from trace records alone.

    Each candidate has exactly one final reason, given by the first gate it
    failed, so the count alive after a gate is the count before it minus the
    candidates that gate rejected. Repair/expansion reasons are not gates and
    leave the funnel unchanged.
    """
    runs = {record["run_id"] for record in records}
    if not runs:
        return []
    per_run = len(runs)
    alive = len(records)
    stages = [FunnelStage(stage="candidates", remaining=alive / per_run)]
    for stage, reason in _FUNNEL_GATES:
        alive -= sum(1 for r in records if r["final_reason"] == reason)
        stages.append(FunnelStage(stage=stage, remaining=alive / per_run))
    selected = sum(1 for r in records if r["final_decision"] == "selected")
    stages.append(FunnelStage(stage="selected", remaining=selected / per_run))
    return stages


def section_allocation(records: Sequence[TraceDict]) -> list[SectionTokens]:
    """Mean tokens per run each section received, largest first (ties by name)."""
    runs = {record["run_id"] for record in records}
    if not runs:
        return []
    totals: dict[str, int] = {}
    for record in records:
        if record["final_decision"] == "selected":
            totals[record["section"]] = totals.get(record["section"], 0) + record["token_count"]
    shares = [SectionTokens(section=s, tokens=t / len(runs)) for s, t in totals.items()]
    return sorted(shares, key=lambda share: (-share.tokens, share.section))


def render_report(data: ReportData) -> str:
    """The report as one HTML document (UTF-8, no external references)."""
    figures = [
        _figure(
            "Figure 2 — tokens used vs section coverage per variant",
            _scatter(data.variants),
            "Each point is a variant: mean tokens used (x) and mean unique sections (y) per query. "
            "Points that would cover each other are fanned out around their common spot; hover a point for "
            "its exact values.",
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


_POINT_RADIUS = 6.0
_LABEL_FONT = 12
_LABEL_CHAR_WIDTH = 7.2  # generous mean advance of a 12px sans-serif character
_LABEL_GAP = 4.0

Box = tuple[float, float, float, float]  # x0, y0, x1, y1


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _point_box(x: float, y: float) -> Box:
    r = _POINT_RADIUS + 1
    return (x - r, y - r, x + r, y + r)


def _clusters(positions: Sequence[tuple[float, float]], reach: float) -> list[list[int]]:
    """Indices of positions chained by distances below ``reach`` (connected components, in order)."""
    groups: list[list[int]] = []
    for i, position in enumerate(positions):
        near = [g for g in groups if any(_distance(position, positions[j]) < reach for j in g)]
        merged = sorted([i, *(j for g in near for j in g)])
        groups = [g for g in groups if g not in near] + [merged]
    return sorted(groups)


def _ring(count: int, step: float) -> float:
    """Radius of a circle on which ``count`` evenly spaced markers are ``step`` apart."""
    return step / (2 * math.sin(math.pi / count))


def _centres(positions: Sequence[tuple[float, float]], reach: float) -> list[tuple[float, float]]:
    """Clusters of nearby markers fanned out evenly around their centroid, one marker width apart."""
    step = 2 * _POINT_RADIUS + 2
    shown = list(positions)
    for group in _clusters(positions, reach):
        if len(group) < 2:
            continue
        cx = statistics.fmean(positions[i][0] for i in group)
        cy = statistics.fmean(positions[i][1] for i in group)
        radius = _ring(len(group), step)
        for k, i in enumerate(group):
            angle = math.pi + 2 * math.pi * k / len(group)
            shown[i] = (cx + radius * math.cos(angle), cy + radius * math.sin(angle))
    return shown


def spread_points(positions: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Marker centres with no two markers overlapping: markers that would touch are fanned out evenly
    around their centroid (the smallest such move); markers already apart keep their exact position."""
    step = 2 * _POINT_RADIUS + 2
    reach = step
    while True:
        shown = _centres(positions, reach)
        clear = all(_distance(a, b) >= step - 1e-6 for i, a in enumerate(shown) for b in shown[i + 1 :])
        if clear:
            return shown
        reach += step  # fanned clusters touch a neighbour: fan the wider group together


def _distance(a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def _gap(a: Box, b: Box) -> float:
    """Shortest distance between two boxes (0 when they touch or overlap)."""
    dx = max(b[0] - a[2], a[0] - b[2], 0.0)
    dy = max(b[1] - a[3], a[1] - b[3], 0.0)
    return math.hypot(dx, dy)


_DIRECTIONS: tuple[tuple[int, int], ...] = (
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
    (0, -1),
    (1, -1),
)


def _label_box(x: float, y: float, width: float, d: float, direction: tuple[int, int]) -> Box:
    dx, dy = direction
    x0 = x + d if dx > 0 else x - d - width if dx < 0 else x - width / 2
    y0 = y - d - _LABEL_FONT if dy < 0 else y + d if dy > 0 else y - _LABEL_FONT / 2
    return (x0, y0, x0 + width, y0 + _LABEL_FONT)


def _outward_first(x: float, y: float, points: Sequence[tuple[float, float]]) -> list[tuple[int, int]]:
    """The eight label directions, starting with the one pointing away from the nearby markers."""
    near = [p for p in points if 0 < _distance(p, (x, y)) < 4 * _POINT_RADIUS]
    if not near:
        return list(_DIRECTIONS)
    away = math.atan2(y - statistics.fmean(p[1] for p in near), x - statistics.fmean(p[0] for p in near))

    def turn(direction: tuple[int, int]) -> float:
        diff = abs(math.atan2(direction[1], direction[0]) - away) % (2 * math.pi)
        return min(diff, 2 * math.pi - diff)

    return sorted(_DIRECTIONS, key=turn)


def place_labels(
    points: Sequence[tuple[float, float]], labels: Sequence[str], *, area: Box
) -> list[tuple[float, float, str]]:
    """Each label's ``(x, y, text-anchor)`` next to its point, pointing away from nearby markers first,
    then round the other directions, then a step further out: the first box that stays in ``area``,
    covers no marker and no label placed before it, and is nearer its own marker than any other (else
    the first free box, else the first box inside ``area``)."""
    markers = [_point_box(x, y) for x, y in points]
    taken: list[Box] = []
    placed: list[tuple[float, float, str]] = []
    for index, ((x, y), text) in enumerate(zip(points, labels, strict=True)):
        width = _LABEL_CHAR_WIDTH * len(text)
        others = [m for i, m in enumerate(markers) if i != index]
        best: Box | None = None
        free: Box | None = None
        inside: Box | None = None
        for ring in range(6):
            for direction in _outward_first(x, y, points):
                box = _label_box(x, y, width, _POINT_RADIUS + _LABEL_GAP + ring * 14, direction)
                if not (area[0] <= box[0] and box[2] <= area[2] and area[1] <= box[1] and box[3] <= area[3]):
                    continue
                inside = inside or box
                if any(_overlaps(box, other) for other in [*markers, *taken]):
                    continue
                free = free or box
                if all(_gap(box, markers[index]) + 2 < _gap(box, other) for other in others):
                    best = box
                    break
            if best is not None:
                break
        chosen = best or free or inside or _label_box(x, y, width, _POINT_RADIUS + _LABEL_GAP, (1, 0))
        taken.append(chosen)
        placed.append((chosen[0], chosen[3] - 2, "start"))
    return placed


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
    exact = [
        (
            left + (right - left) * p.tokens_used / x_max,
            bottom - (bottom - top) * p.unique_sections / y_max,
        )
        for p in points
    ]
    # Variants often land on the same spot (e.g. engine_topk and flat_topk): set them side by side.
    shown = spread_points(exact)
    texts = [p.variant for p in points]
    labels = place_labels(shown, texts, area=(left + 2, top - 12, right + _MARGIN_RIGHT - 2, bottom - 2))
    for i, (point, (x, y), (lx, ly, anchor)) in enumerate(zip(points, shown, labels, strict=True)):
        colour = _PALETTE[i % len(_PALETTE)]
        parts.append(f'<g class="variant" data-variant="{escape(point.variant)}">')
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{_POINT_RADIUS:g}" fill="{colour}"><title>')
        parts.append(
            f"{escape(point.variant)}: {point.tokens_used:.1f} tokens, "
            f"{point.unique_sections:.2f} sections</title></circle>"
        )
        parts.append(
            f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}" font-size="{_LABEL_FONT}" '
            f'fill="{colour}">{escape(point.variant)}</text></g>'
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
