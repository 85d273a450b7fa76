"""The gate table and ``run_gates``: every decision of selection and repair goes through it.

Each row of ``GATES`` names a gate, the rule its value must meet against its
limit, the final reason it gives when it fails and the trace ``stage`` that
names it, in the order of the "Context Bubble" paper (docs/algorithm.md,
Gates): the first failing gate gives the final reason. ``run_gates`` takes
each gate's measured value and limit and returns the verdicts by name; a gate
switched off by a variant is still logged, with ``enabled=False`` and
``passed=True``. Adding a gate is a row here and a field of ``GateResults``.

The redundancy gate's measure is here too (``Redundancy``), so selection and
repair compare a chunk with the bubble by the same rule.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from esbubble.core.analysis import ENGLISH_STOP_WORDS, analyze, stem
from esbubble.models import FinalReason, GateDict, GateName


@dataclass(frozen=True, slots=True)
class Gate:
    """One row of the gate table."""

    name: GateName
    rule: str
    reason: FinalReason
    stage: str
    holds: Callable[[float, float], bool]


GATES: tuple[Gate, ...] = (
    Gate("relevance", "value > limit", "low_relevance", "relevance_gate", operator.gt),
    Gate("gain", "value >= limit", "low_gain", "gain_gate", operator.ge),
    Gate("redundancy", "value < limit", "too_redundant", "overlap_gate", operator.lt),
    Gate("section_budget", "value <= limit", "section_budget_exceeded", "section_budget_gate", operator.le),
    Gate("global_budget", "value <= limit", "budget_exceeded", "budget_gate", operator.le),
    Gate("max_chunks", "value < limit", "max_chunks", "max_chunks_gate", operator.lt),
)
GATE_BY_NAME: dict[GateName, Gate] = {gate.name: gate for gate in GATES}
GATE_ORDER: tuple[GateName, ...] = tuple(gate.name for gate in GATES)
GATE_STAGES: dict[GateName, str] = {gate.name: gate.stage for gate in GATES}
GATE_RULES: dict[GateName, str] = {gate.name: gate.rule for gate in GATES}
GATE_REASONS: dict[GateName, FinalReason] = {gate.name: gate.reason for gate in GATES}
_RULES: dict[str, Callable[[float, float], bool]] = {gate.rule: gate.holds for gate in GATES}


class GateResults(NamedTuple):
    """Every gate's verdict on one candidate, by name, in gate order.

    Each verdict is the plain dictionary the trace record lists (schema: ``models.GateResult``).
    """

    relevance: GateDict
    gain: GateDict
    redundancy: GateDict
    section_budget: GateDict
    global_budget: GateDict
    max_chunks: GateDict

    @property
    def reason(self) -> FinalReason:
        """The first failing gate's reason, else ``passed_all_gates``."""
        return reason_of(self)

    @property
    def passed(self) -> bool:
        return all(result["passed"] for result in self)


# A gate's measurement: (value, limit).
Check = tuple[float, float]


class Verdicts:
    """The gate results of one run, each distinct verdict built once and shared.

    Most verdicts repeat within a run (the same chunk size against the same
    remaining budget, the same chunk count). A verdict is a plain dictionary
    that every record holding it shares, so it is never changed once built.
    """

    def __init__(self, enabled: Mapping[GateName, bool]) -> None:
        self.enabled = {gate.name: enabled.get(gate.name, True) for gate in GATES}
        # Per gate, in gate order: its verdicts by measurement (value, limit).
        self.by_gate: tuple[dict[Check, GateDict], ...] = tuple({} for _ in GATES)

    def new(self, position: int, check: Check) -> GateDict:
        """Build and keep the verdict of a measurement not seen before in this run (gate by its position)."""
        gate = GATE_ORDER[position]
        found = self.by_gate[position][check] = gate_result(gate, *check, enabled=self.enabled[gate])
        return found


def run_gates(
    verdicts: Verdicts,
    *,
    relevance: Check,
    gain: Check,
    redundancy: Check,
    section_budget: Check,
    global_budget: Check,
    max_chunks: Check,
) -> GateResults:
    """Every gate of the table on one candidate's measurements, by name.

    A measurement seen before in the run gets the verdict built then (looked up by the measurement
    itself: this runs for every candidate, and again for each one a second pass re-decides).
    """
    by_relevance, by_gain, by_redundancy, by_section, by_global, by_count = verdicts.by_gate
    new = verdicts.new
    return GateResults(
        by_relevance.get(relevance) or new(0, relevance),
        by_gain.get(gain) or new(1, gain),
        by_redundancy.get(redundancy) or new(2, redundancy),
        by_section.get(section_budget) or new(3, section_budget),
        by_global.get(global_budget) or new(4, global_budget),
        by_count.get(max_chunks) or new(5, max_chunks),
    )


def rule_holds(rule: str, value: float, limit: float) -> bool:
    """Evaluate one of the gate rules (``value > limit``, ``value >= limit``, ``value < limit``,
    ``value <= limit``)."""
    holds = _RULES.get(rule)
    if holds is None:
        raise ValueError(f"unknown gate rule {rule!r}")
    return holds(value, limit)


def gate_result(gate: GateName, value: float, limit: float, *, enabled: bool = True) -> GateDict:
    """One gate's verdict: ``passed`` when its rule holds (always, when the gate is switched off)."""
    row = GATE_BY_NAME[gate]
    passed = row.holds(value, limit) if enabled else True
    return {
        "gate": gate, "passed": passed, "value": float(value), "limit": float(limit), "rule": row.rule,
        "enabled": enabled,
    }  # fmt: skip


def relevance_gate(score: float, min_score: float) -> GateDict:
    """Low relevance: a candidate needs ``score > min_score``."""
    return gate_result("relevance", score, min_score)


def gain_gate(value: float, floor: float, *, enabled: bool = True) -> GateDict:
    """Too little gain: what orders a candidate (its gain, or a spent one's fill value) must be at least
    ``floor`` (``min_gain`` of the best gain on the empty bubble), both without their proximity weight
    (``core.select.gate_value``)."""
    return gate_result("gain", value, floor, enabled=enabled)


def redundancy_gate(overlap_value: float, delta: float, *, enabled: bool = True) -> GateDict:
    """eq. 13/16: rejected when ``overlap(c, B) ≥ δ``."""
    return gate_result("redundancy", overlap_value, delta, enabled=enabled)


def section_budget_gate(tokens: int, bucket_remaining: float, *, enabled: bool = True) -> GateDict:
    """eq. 15: the chunk must fit in what its bucket (or, in a second pass, the pool) has left."""
    return gate_result("section_budget", float(tokens), bucket_remaining, enabled=enabled)


def global_budget_gate(tokens: int, budget_remaining: float) -> GateDict:
    """eq. 14: the chunk must fit in what the global budget ``T_B`` has left."""
    return gate_result("global_budget", float(tokens), budget_remaining)


def max_chunks_gate(selected_count: int, max_chunks: int) -> GateDict:
    """The bubble holds at most ``max_chunks`` chunks."""
    return gate_result("max_chunks", float(selected_count), float(max_chunks))


def first_failure(results: Sequence[GateDict]) -> GateDict | None:
    """The first failing gate in gate order, or None when every gate passed."""
    for result in results:
        if not result["passed"]:
            return result
    return None


def reason_of(results: Sequence[GateDict]) -> FinalReason:
    """The final reason the gate results give: the first failure's, else ``passed_all_gates``."""
    for result in results:
        if not result["passed"]:
            return GATE_REASONS[result["gate"]]
    return "passed_all_gates"


def overlap(words: frozenset[str], bubble_words: set[str] | frozenset[str]) -> float:
    """eq. 12: the share of the chunk's words already in the bubble (0 for a chunk with no words)."""
    if not words:
        return 0.0
    return len(words.intersection(bubble_words)) / len(words)


def query_word_test(terms: Iterable[str]) -> Callable[[str], bool]:
    """Is a chunk word one the query asks about (itself, or its analysed form, is one of ``terms``)?"""
    asked_terms = frozenset(terms)

    def asked(word: str) -> bool:
        if word in asked_terms:
            return True
        if word.isascii() and word.isalnum():  # one standard token: ``analyze`` is its stem
            lower = word.lower()
            return lower not in ENGLISH_STOP_WORDS and stem(lower) in asked_terms
        return any(t in asked_terms for t in analyze(word))

    return asked


class Redundancy:
    """What the redundancy gate measures a chunk's words against, as the bubble grows.

    ``bubble`` (the paper's eq. 12): the share of the chunk's words anywhere in
    the bubble. ``chunk``: the share of its words found in the one most similar
    chunk of the bubble, leaving out the words the query asks about (every
    relevant chunk holds those, so sharing them is not redundancy). Only the
    admitted chunks' words are tested against the query, once each.
    """

    def __init__(self, mode: Literal["bubble", "chunk"], query_terms: Iterable[str] = ()) -> None:
        self.mode = mode
        self._asked = query_word_test(query_terms) if mode == "chunk" else None
        self._union: set[str] = set()
        self._chosen: list[frozenset[str]] = []
        self._ids: list[str | None] = []  # ``chunk``: the chosen chunks' ids, as admitted
        # ``chunk``: per word set, how many chosen chunks it was compared with, the most words it
        # shared with one and which one (the first such), so a second look compares only the
        # newcomers (equal sets measure alike).
        self._compared: dict[frozenset[str], tuple[int, int, int]] = {}

    def measure(self, words: frozenset[str]) -> tuple[float, str | None]:
        """The overlap, and under ``chunk`` the id of the chosen chunk it was measured against (the
        first admitted of those sharing the most words; None when it shares none, and always under
        ``bubble``, whose measure is against the union)."""
        if not words:
            return 0.0, None
        if self._asked is None:
            return len(words.intersection(self._union)) / len(words), None
        chosen = self._chosen
        start, shared, nearest = self._compared.get(words, (0, 0, -1))
        if start < len(chosen):
            for index in range(start, len(chosen)):
                count = len(words.intersection(chosen[index]))
                if count > shared:
                    shared, nearest = count, index
            self._compared[words] = (len(chosen), shared, nearest)
        return shared / len(words), None if nearest < 0 else self._ids[nearest]

    def compared(self, words: frozenset[str]) -> frozenset[str]:
        """The words of an admitted chunk this rule compares with: under ``chunk``, less the query's."""
        asked = self._asked
        return words if asked is None else frozenset(w for w in words if not asked(w))

    def admit(self, words: frozenset[str], chunk_id: str | None = None) -> None:
        if self._asked is None:
            self._union.update(words)
        else:
            self._chosen.append(self.compared(words))
            self._ids.append(chunk_id)
