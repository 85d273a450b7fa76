"""The five gates, in the order that decides the final reason.

Each gate returns a ``GateResult`` holding the measured value, the limit and
the rule, so a verdict can be re-derived from the trace record alone. A gate
switched off by a variant is still logged, with ``enabled=False`` and
``passed=True``.
"""

from __future__ import annotations

from collections.abc import Sequence

from esbubble.models import GATE_REASONS, FinalReason, GateName, GateResult

# The gate order of the "Context Bubble" paper (docs/algorithm.md, Gates): the first failing gate
# gives the final reason.
GATE_ORDER: tuple[GateName, ...] = (
    "relevance",
    "redundancy",
    "section_budget",
    "global_budget",
    "max_chunks",
)

# The trace ``stage`` that names each gate when it decides a rejection.
GATE_STAGES: dict[GateName, str] = {
    "relevance": "relevance_gate",
    "redundancy": "overlap_gate",
    "section_budget": "section_budget_gate",
    "global_budget": "budget_gate",
    "max_chunks": "max_chunks_gate",
}


def rule_holds(rule: str, value: float, limit: float) -> bool:
    """Evaluate one of the gate rules (``value > limit``, ``value < limit``, ``value <= limit``)."""
    if rule == "value > limit":
        return value > limit
    if rule == "value < limit":
        return value < limit
    if rule == "value <= limit":
        return value <= limit
    raise ValueError(f"unknown gate rule {rule!r}")


# The comparison each gate needs to hold to pass.
GATE_RULES: dict[GateName, str] = {
    "relevance": "value > limit",
    "redundancy": "value < limit",
    "section_budget": "value <= limit",
    "global_budget": "value <= limit",
    "max_chunks": "value < limit",
}


def gate_result(gate: GateName, value: float, limit: float, *, enabled: bool = True) -> GateResult:
    """One gate's verdict: ``passed`` when its rule holds (always, when the gate is switched off)."""
    rule = GATE_RULES[gate]
    passed = rule_holds(rule, value, limit) if enabled else True
    # Every value is typed by the signature: built without validation (see ``_Record.trusted``).
    return GateResult.trusted(
        {"gate": gate, "passed": passed, "value": value, "limit": limit, "rule": rule, "enabled": enabled}
    )


def overlap(words: frozenset[str], bubble_words: set[str] | frozenset[str]) -> float:
    """eq. 12: the share of the chunk's words already in the bubble (0 for a chunk with no words)."""
    if not words:
        return 0.0
    return len(words.intersection(bubble_words)) / len(words)


def relevance_gate(score: float, min_score: float) -> GateResult:
    """Low relevance: a candidate needs ``score > min_score``."""
    return gate_result("relevance", score, min_score)


def redundancy_gate(overlap_value: float, delta: float, *, enabled: bool = True) -> GateResult:
    """eq. 13/16: rejected when ``overlap(c, B) ≥ δ``."""
    return gate_result("redundancy", overlap_value, delta, enabled=enabled)


def section_budget_gate(tokens: int, bucket_remaining: float, *, enabled: bool = True) -> GateResult:
    """eq. 15: the chunk must fit in what its bucket (or, in a second pass, the pool) has left."""
    return gate_result("section_budget", float(tokens), bucket_remaining, enabled=enabled)


def global_budget_gate(tokens: int, budget_remaining: float) -> GateResult:
    """eq. 14: the chunk must fit in what the global budget ``T_B`` has left."""
    return gate_result("global_budget", float(tokens), budget_remaining)


def max_chunks_gate(selected_count: int, max_chunks: int) -> GateResult:
    """The bubble holds at most ``max_chunks`` chunks."""
    return gate_result("max_chunks", float(selected_count), float(max_chunks))


def first_failure(results: Sequence[GateResult]) -> GateResult | None:
    """The first failing gate in gate order, or None when every gate passed."""
    for result in results:
        if not result.passed:
            return result
    return None


def reason_of(results: Sequence[GateResult]) -> FinalReason:
    """The final reason the gate results give: the first failure's, else ``passed_all_gates``."""
    failed = first_failure(results)
    return "passed_all_gates" if failed is None else GATE_REASONS[failed.gate]
