"""Small-to-big expansion: grow selected chunks into passages, inside the budget.

Planning is pure: it takes the bubble, the neighbour chunks the store fetched
and the profile, and returns passages plus one ``ExpansionEvent`` per
neighbour added or refused. Windows grow nearest first (after, then before)
and ring by ring over all anchors, so the best anchors do not eat the budget
of the others' nearest neighbours. Budgets only ever shrink: the global budget
``T_B`` and, where the variant uses them, the bucket caps ``ρ_b·T_B``. A chunk
repair evicted is never brought back as a neighbour (that would undo the swap).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from esbubble.config import ExpandConfig
from esbubble.core.budget import Budget, BudgetRules
from esbubble.models import Bubble, Chunk, ExpansionEvent, SelectedChunk, TraceDict

ExpandMode = Literal["window", "parent"]


class Passage(BaseModel):
    """Contiguous chunks of one document delivered as one block of text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    doc_id: str
    chunks: list[Chunk]
    anchor_ids: list[str]
    rank: int
    score: float

    @property
    def tokens(self) -> int:
        return sum(c.token_count for c in self.chunks)

    @property
    def text(self) -> str:
        return "\n".join(c.text for c in self.chunks)

    @property
    def chunk_ids(self) -> list[str]:
        return [c.chunk_id for c in self.chunks]

    @property
    def sections(self) -> list[str]:
        return list(dict.fromkeys(c.section for c in self.chunks))


class Expansion(BaseModel):
    """The result of expansion: passages, the updated bubble trace and every event."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: str
    passages: list[Passage]
    bubble: Bubble
    events: list[ExpansionEvent]
    tokens_used: int
    budget: int

    @property
    def chunk_ids(self) -> list[str]:
        return [cid for p in self.passages for cid in p.chunk_ids]


def _event(
    anchor: Chunk, mode: ExpandMode, chunk_id: str | None, *, added: bool, tokens: int, reason: str
) -> ExpansionEvent:
    return ExpansionEvent(
        anchor_chunk_id=anchor.chunk_id,
        mode=mode,
        added=added,
        tokens=tokens,
        reason=reason,
        chunk_id=chunk_id,
    )


@dataclass
class _Plan:
    settings: ExpandConfig
    rules: BudgetRules
    budget: Budget
    included: dict[str, Chunk]
    hashes: set[str]
    evicted: frozenset[str] = frozenset()
    events: list[ExpansionEvent] = field(default_factory=list)
    added_by: dict[str, str] = field(default_factory=dict)

    def try_add(self, anchor: Chunk, chunk: Chunk, mode: ExpandMode) -> bool:
        """Add one neighbour if it is new text and fits; record the outcome either way."""
        if chunk.chunk_id in self.included:
            self.events.append(
                _event(anchor, mode, chunk.chunk_id, added=False, tokens=0, reason="already_in_bubble")
            )
            return True
        if chunk.chunk_id in self.evicted:
            self.events.append(
                _event(anchor, mode, chunk.chunk_id, added=False, tokens=0, reason="replaced_by_repair")
            )
            return False
        if chunk.content_hash in self.hashes:
            self.events.append(
                _event(anchor, mode, chunk.chunk_id, added=False, tokens=0, reason="duplicate_text")
            )
            return True
        refusal = self.budget.refusal(self.rules.bucket_of(chunk), chunk.token_count)
        if refusal is not None:
            self.events.append(
                _event(anchor, mode, chunk.chunk_id, added=False, tokens=chunk.token_count, reason=refusal)
            )
            return False
        self.budget.spend(self.rules.bucket_of(chunk), chunk.token_count)
        self.included[chunk.chunk_id] = chunk
        self.hashes.add(chunk.content_hash)
        self.added_by[chunk.chunk_id] = anchor.chunk_id
        self.events.append(
            _event(anchor, mode, chunk.chunk_id, added=True, tokens=chunk.token_count, reason="fits")
        )
        return True


def _plan_window(anchors: Sequence[Chunk], by_position: dict[tuple[str, int], Chunk], plan: _Plan) -> None:
    radius = {a.chunk_id: plan.settings.radius.get(a.source_type, 0) for a in anchors}
    blocked: set[tuple[str, int]] = set()  # (anchor, direction) that hit a boundary or the budget
    for distance in range(1, max(radius.values(), default=0) + 1):
        for anchor in anchors:
            if distance > radius[anchor.chunk_id]:
                continue
            for direction in (1, -1):
                if (anchor.chunk_id, direction) in blocked:
                    continue
                neighbour = by_position.get((anchor.doc_id, anchor.position + direction * distance))
                if neighbour is None:
                    blocked.add((anchor.chunk_id, direction))
                    continue
                if neighbour.section != anchor.section and not plan.settings.cross_sections:
                    plan.events.append(
                        _event(
                            anchor,
                            "window",
                            neighbour.chunk_id,
                            added=False,
                            tokens=neighbour.token_count,
                            reason="section_boundary",
                        )
                    )
                    blocked.add((anchor.chunk_id, direction))
                    continue
                if not plan.try_add(anchor, neighbour, "window"):
                    blocked.add((anchor.chunk_id, direction))


def _plan_parent(anchors: Sequence[Chunk], neighbours: Sequence[Chunk], plan: _Plan) -> None:
    for anchor in anchors:
        if anchor.parent_id is None:
            plan.events.append(_event(anchor, "parent", None, added=False, tokens=0, reason="no_parent"))
            continue
        family = sorted(
            (c for c in neighbours if c.doc_id == anchor.doc_id and c.parent_id == anchor.parent_id),
            key=lambda c: (c.position, c.chunk_id),
        )
        missing = [
            c
            for c in family
            if c.chunk_id not in plan.included
            and c.chunk_id not in plan.evicted
            and c.content_hash not in plan.hashes
        ]
        trial = plan.budget.trial()
        refusal = None
        for chunk in missing:
            refusal = trial.refusal(plan.rules.bucket_of(chunk), chunk.token_count)
            if refusal is not None:
                break
            trial.spend(plan.rules.bucket_of(chunk), chunk.token_count)
        if refusal is not None:
            tokens = sum(c.token_count for c in missing)
            plan.events.append(
                _event(anchor, "parent", None, added=False, tokens=tokens, reason=f"parent_{refusal}")
            )
            continue
        for chunk in family:
            plan.try_add(anchor, chunk, "parent")


def merge_passages(
    chunks: Iterable[Chunk],
    selected: Sequence[SelectedChunk],
    *,
    cross_sections: bool,
    owners: Mapping[str, str] | None = None,
) -> list[Passage]:
    """Group chunks into runs of adjacent positions of one document (and section), ranked by best anchor.

    ``owners`` maps an added neighbour to the anchor that pulled it in, so a run
    that holds no anchor itself still ranks with the anchor it belongs to.
    """
    anchors = {s.chunk.chunk_id: s for s in selected}
    owner_of = dict(owners or {})
    ordered = sorted(
        {c.chunk_id: c for c in chunks}.values(), key=lambda c: (c.doc_id, c.position, c.chunk_id)
    )
    runs: list[list[Chunk]] = []
    for chunk in ordered:
        last = runs[-1][-1] if runs else None
        joins = (
            last is not None
            and last.doc_id == chunk.doc_id
            and chunk.position <= last.position + 1
            and (cross_sections or last.section == chunk.section)
        )
        if joins:
            runs[-1].append(chunk)
        else:
            runs.append([chunk])
    passages = []
    for run in runs:
        members = [anchors[c.chunk_id] for c in run if c.chunk_id in anchors]
        related = members + [
            anchors[owner_of[c.chunk_id]] for c in run if owner_of.get(c.chunk_id) in anchors
        ]
        passages.append(
            Passage(
                doc_id=run[0].doc_id,
                chunks=run,
                anchor_ids=[m.chunk.chunk_id for m in members],
                rank=min(m.rank for m in related),
                score=max(m.score for m in related),
            )
        )
    return sorted(passages, key=lambda p: (p.rank, p.doc_id, p.chunks[0].position))


def _updated_trace(bubble: Bubble, plan: _Plan) -> list[TraceDict]:
    """Anchors carry their events; candidates pulled in as neighbours become ``expanded_into``.

    A changed record is a copy: the bubble's own records stay as they were.
    """
    by_anchor: dict[str, list[ExpansionEvent]] = {}
    for event in plan.events:
        by_anchor.setdefault(event.anchor_chunk_id, []).append(event)
    records = []
    for original in bubble.trace:
        record = original
        chunk_id = record["chunk_id"]
        if chunk_id in by_anchor and record["final_decision"] == "selected":
            details = record["step_details"].copy()
            events = [event.model_dump(mode="json") for event in by_anchor[chunk_id]]
            details["expansion"] = [*details["expansion"], *events]
            record = record.copy()
            record["step_details"] = details
        elif chunk_id in plan.added_by and record["final_decision"] == "rejected":
            note = f"expanded_into passage of {plan.added_by[chunk_id]} (was {record['final_reason']})"
            details = record["step_details"].copy()
            details["notes"] = [*details["notes"], note]
            record = record.copy()
            record["final_decision"] = "selected"
            record["final_reason"] = "expanded_into"
            record["stage"] = "expand"
            record["step_details"] = details
        records.append(record)
    return records


def plan_expansion(
    bubble: Bubble, neighbours: Sequence[Chunk], settings: ExpandConfig, rules: BudgetRules
) -> Expansion:
    """Expand the bubble's chunks with ``neighbours`` per ``[expand]``, spending what is left of the
    bubble's budget under the profile's bucket ``rules``; pure and deterministic."""
    selected = sorted(bubble.selected, key=lambda s: s.selection_order)
    anchors = [s.chunk for s in selected]
    plan = _Plan(
        settings=settings,
        rules=rules,
        budget=Budget.after(bubble, anchors, rules),
        included={c.chunk_id: c for c in anchors},
        hashes={c.content_hash for c in anchors},
        evicted=frozenset(r["chunk_id"] for r in bubble.trace if r["final_reason"] == "replaced"),
    )
    pool = sorted(
        {c.chunk_id: c for c in neighbours if c.chunk_id not in plan.included}.values(),
        key=lambda c: (c.doc_id, c.position, c.chunk_id),
    )
    mode = settings.mode
    if mode == "window":
        by_position: dict[tuple[str, int], Chunk] = {}
        for chunk in [*anchors, *pool]:
            by_position.setdefault((chunk.doc_id, chunk.position), chunk)
        _plan_window(anchors, by_position, plan)
    elif mode == "parent":
        _plan_parent(anchors, [*anchors, *pool], plan)
    passages = merge_passages(
        plan.included.values(), selected, cross_sections=settings.cross_sections, owners=plan.added_by
    )
    return Expansion(
        mode=mode,
        passages=passages,
        bubble=bubble.model_copy(update={"trace": _updated_trace(bubble, plan)}),
        events=plan.events,
        tokens_used=plan.budget.spent,
        budget=bubble.budget,
    )
