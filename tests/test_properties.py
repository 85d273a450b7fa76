"""Invariants of the bubble over random candidate sets and configs (hypothesis).

Each property is stated in plain words in its test name; the checks recompute
what they need from the inputs (shares, words, rules) rather than asking the
code under test.
"""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime

import pytest
from factories import gate_words
from hypothesis import given, settings
from hypothesis import strategies as st

from esbubble.config import BubbleConfig, parse_config
from esbubble.core.analysis import analyze
from esbubble.core.bubble import build_bubble
from esbubble.core.gates import GATE_REASONS
from esbubble.core.proximity import query_pairs
from esbubble.core.relevance import analysed_query_terms
from esbubble.models import Bubble, Candidate, Chunk, GateDict, TraceDict
from esbubble.text import word_set

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DOCUMENTS = ("doc-a", "doc-b", "doc-c")
VOCAB = ("slab", "membrane", "warranty", "drain", "pump", "tile", "roof", "steel", "joint", "seal", "paint")
SECTIONS = ("Scope", "Below Grade", "Terms", "Rates", "Notes")
QUERIES = ("membrane warranty", "slab drain pump", "roof", "steel joint seal paint", "")

STAGES = {
    "relevance": "relevance_gate",
    "gain": "gain_gate",
    "redundancy": "overlap_gate",
    "section_budget": "section_budget_gate",
    "global_budget": "budget_gate",
    "max_chunks": "max_chunks_gate",
}
RULES = {
    "value > limit": lambda v, lim: v > lim,
    "value >= limit": lambda v, lim: v >= lim,
    "value < limit": lambda v, lim: v < lim,
    "value <= limit": lambda v, lim: v <= lim,
}


@st.composite
def candidate_sets(draw: st.DrawFn) -> list[Candidate]:
    n = draw(st.integers(min_value=0, max_value=25))
    ids = draw(st.lists(st.integers(0, 999), min_size=n, max_size=n, unique=True))
    candidates = []
    for i in ids:
        words = draw(st.lists(st.sampled_from(VOCAB), min_size=0, max_size=8))
        # a table row writes its cells "header: value" (a value the query says names the row)
        row = draw(st.booleans())
        text = "; ".join(f"h{k}: {word}" for k, word in enumerate(words)) if row else " ".join(words)
        section = draw(st.sampled_from(SECTIONS))
        chunk = Chunk(
            chunk_id=f"c{i:03d}",
            doc_id=draw(st.sampled_from(DOCUMENTS)),
            source_type="text",
            section=section,
            bucket=section,
            position=i,
            token_count=draw(st.integers(min_value=0, max_value=120)),
            content_hash=f"h{i}",
            text=text,
            compare_text=" ".join(words),
            row_number=i + 1 if row else None,
        )
        candidates.append(Candidate(chunk=chunk, es_score=draw(st.floats(0, 20))))
    return candidates


@st.composite
def configs(draw: st.DrawFn) -> BubbleConfig:
    listed = draw(st.lists(st.sampled_from(SECTIONS), unique=True, max_size=3))
    weights = [draw(st.integers(0, 10)) for _ in listed]
    scale = draw(st.floats(0.0, 1.0))
    total = sum(weights) or 1
    shares = {bucket: scale * w / total for bucket, w in zip(listed, weights, strict=True)}
    data = {
        "bubble": {
            "token_budget": draw(st.integers(1, 600)),
            "overlap_threshold": draw(st.floats(0.01, 1.0)),
            "max_chunks": draw(st.integers(1, 12)),
            "min_score": draw(st.floats(-1.0, 1.0)),
            "length_norm": draw(st.one_of(st.just("median"), st.floats(0.5, 200.0))),
            "slack_policy": draw(st.sampled_from(["strict", "global_pool"])),
            "variant": draw(st.sampled_from(["flat_topk", "structure", "diversity", "full"])),
            "relevance": draw(st.sampled_from(["bm25", "tf"])),
            "selection": draw(st.sampled_from(["coverage", "score"])),
            "unlisted_shares": draw(st.sampled_from(["auto", "pool", "demand", "equal"])),
            "fill_with_priors": draw(st.booleans()),
            "covered_weight": draw(st.floats(0.0, 1.0)),
            "chunk_share": draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])),
            "named_row": draw(st.sampled_from([0.0, 0.5, 2.0])),
            "engine_rank": draw(st.sampled_from([0.0, 3.0, 10.0])),
            "proximity": draw(st.sampled_from([0.0, 1.0, 3.0])),
            "proximity_window": draw(st.integers(1, 6)),
            "spent_gain": draw(st.sampled_from([0.0, 0.02, 0.3, 1.0])),
            "min_gain": draw(st.sampled_from([0.0, 0.01, 0.3])),
        },
        "priors": {
            "sections": {s: draw(st.floats(-3.0, 6.0)) for s in draw(st.lists(st.sampled_from(SECTIONS)))},
            "keywords": {k: draw(st.floats(-1.0, 2.0)) for k in draw(st.lists(st.sampled_from(VOCAB)))},
        },
        "buckets": {"shares": shares, "map": {"Notes": "Terms"} if draw(st.booleans()) else {}},
    }
    return parse_config(data)


def _build(query: str, candidates: list[Candidate], config: BubbleConfig) -> Bubble:
    return build_bubble(query, candidates, config, run_id="prop", now=NOW)


def check_shares(bubble: Bubble, config: BubbleConfig) -> dict[str, float]:
    """ρ_b as docs/algorithm.md states it: listed shares kept; unlisted buckets each get the whole
    rest (one pool, bm25's default), split it equally (tf's), or each at least ``share_floor`` of it
    over their number and the rest by relevance demand (``unlisted_shares = "demand"``)."""
    listed = config.buckets.shares
    present = {record["bucket"] for record in bubble.trace}
    unlisted = sorted(b for b in present if b not in listed)
    rest = max(0.0, 1.0 - sum(listed.values()))
    shares = bubble.bucket_shares
    assert {b: shares[b] for b in listed} == pytest.approx(dict(listed))
    if unlisted:
        n = len(unlisted)
        mode = config.bubble.unlisted_mode
        if mode == "pool":
            assert all(shares[b] == pytest.approx(rest) for b in unlisted)
            return dict(shares)
        assert sum(shares[b] for b in unlisted) == pytest.approx(rest)
        if mode == "equal":
            assert all(shares[b] == pytest.approx(rest / n) for b in unlisted)
        else:
            assert all(shares[b] >= rest * config.bubble.share_floor / n - 1e-12 for b in unlisted)
    return dict(shares)


def facet_weights_of(record: TraceDict) -> dict[str, float]:
    """Each matched facet's weight: the best weight among its matched terms."""
    weights: dict[str, float] = {}
    for match in record["step_details"]["terms"]:
        weights[match["facet"]] = max(weights.get(match["facet"], 0.0), match["weight"])
    return {facet: weight for facet, weight in weights.items() if weight}


def weight_of(prior: float) -> float:
    """w(p) = (1 + 2p) / (1 + p) for a boost, its reciprocal for a penalty (docs: bm25 scoring)."""
    weight = (1.0 + 2.0 * abs(prior)) / (1.0 + abs(prior))
    return weight if prior >= 0 else 1.0 / weight


def rederive(record: TraceDict) -> tuple[str, str, str]:
    """Rebuild (final_decision, final_reason, stage) from the record's own fields alone."""
    deciding: list[GateDict] = record["step_details"]["second_pass"] or record["step_details"]["gates"]
    assert [g["gate"] for g in deciding] == list(STAGES)
    by_gate = {g["gate"]: g for g in deciding}
    # Each gate's numbers are the record's numbers.
    assert by_gate["relevance"]["value"] in (record["score_final"], record["relevance"])
    # the gain gate measures what ordered the candidate, its gain or a spent one's fill value, without
    # its proximity weight
    fill = record["fill_value"]
    ordered_by = record["gain"] if fill is None else fill
    assert by_gate["gain"]["value"] == pytest.approx(ordered_by / (record["proximity_weight"] or 1.0))
    assert by_gate["redundancy"]["value"] == record["overlap"]
    assert by_gate["redundancy"]["limit"] == record["threshold"]
    assert by_gate["section_budget"]["value"] == record["token_count"]
    assert by_gate["global_budget"]["value"] == record["token_count"]
    assert by_gate["global_budget"]["limit"] == record["budget_remaining"]
    if record["step_details"]["second_pass"]:
        assert by_gate["section_budget"]["limit"] == record["step_details"]["pool_remaining"]
    else:
        assert by_gate["section_budget"]["limit"] == record["bucket_remaining"]
    if record["step_details"]["terms"] or record["relevance"] == 0:  # bm25 (or nothing matched): w(prior)
        bm25 = (
            record["relevance"] * weight_of(record["boost"])
            if record["relevance"] > 0
            else max(record["boost"], 0.0)
        )
        assert record["score_raw"] in (pytest.approx(bm25), record["relevance"] + record["boost"])
    else:  # the paper's eq. 8
        assert record["score_raw"] == record["relevance"] + record["boost"]
    assert record["score_final"] == record["score_raw"] * record["len_penalty"]
    facet_weights = facet_weights_of(record)
    if record["step_details"]["terms"]:  # bm25: relevance is the sum of each facet's best term weight
        assert record["relevance"] == pytest.approx(sum(facet_weights.values()))
    assert sorted(record["facets"]) == sorted(facet_weights) or not record["step_details"]["terms"]
    assert set(record["facets_new"]) == set(record["facets"]) - set(record["step_details"]["covered"])
    for gate in deciding:
        expected = RULES[gate["rule"]](gate["value"], gate["limit"]) if gate["enabled"] else True
        assert gate["passed"] == expected
    failed = next((g for g in deciding if not g["passed"]), None)
    if failed is None:
        return "selected", "passed_all_gates", "selection"
    return "rejected", GATE_REASONS[failed["gate"]], STAGES[failed["gate"]]


common = settings(max_examples=150, deadline=None)


def facet_engine_of(records: list[TraceDict], enabled: bool) -> dict[str, float]:
    """Per facet, from the run's records alone: the best ``es_score`` among the records matching it over
    the best of all (1 for every facet when the switch is off or no score is positive)."""
    top = max((record["es_score"] for record in records), default=0.0)
    best: dict[str, float] = {}
    for record in records:
        for facet in facet_weights_of(record):
            best[facet] = max(best.get(facet, 0.0), record["es_score"])
    if not enabled or top <= 0:
        return dict.fromkeys(best, 1.0)
    return {facet: max(score, 0.0) / top for facet, score in best.items()}


def gain_of(
    record: TraceDict, config: BubbleConfig, engine: dict[str, float], coverage: dict[str, float]
) -> float:
    """A record's gain re-derived from its fields, the facets' engine weights and a coverage."""
    weights = facet_weights_of(record)
    share = config.bubble.covered_weight
    matched = sum(w * engine[f] * share ** coverage.get(f, 0.0) for f, w in weights.items())
    matched *= (record["document_share"] or 0.0) * (record["document_engine"] or 0.0)
    matched *= (record["chunk_share"] or 0.0) ** config.bubble.chunk_share
    matched *= record["named_weight"] or 0.0
    matched *= record["rank_weight"] or 0.0
    matched *= record["proximity_weight"] or 0.0
    # a chunk that matches nothing keeps its prior; one whose facets are all used up keeps nothing
    gain = matched * weight_of(record["boost"]) if weights else max(record["boost"], 0.0)
    return gain * record["len_penalty"]


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.booleans())
def test_coverage_gain_is_rederived_from_the_record_and_decides_the_order(
    candidates: list[Candidate], config: BubbleConfig, query: str, by_facet_engine: bool
) -> None:
    """Under coverage selection, a record's gain is (Σ weights of the facets it matches, each times
    its engine weight, one the bubble covered n at ``covered_weight ** n``) · its document's share
    and engine weight · its own share to the power ``chunk_share`` · its named-row weight · its
    rank weight ``1 + engine_rank / (es_rank + 1)`` · its proximity weight ``1 + proximity · near /
    pairs`` (of the question's successive analysed word pairs, those it holds close) · w(boost) · lp
    (w: (1 + 2p) / (1 + p) boosts, its reciprocal penalises; a chunk that matches nothing keeps
    max(boost, 0)).
    A candidate is spent when its gain is below ``spent_gain`` of the best gain on the empty bubble:
    its fill value is its gain on the empty bubble times its engine score over the best record's.
    First-pass decisions come in non-increasing gain, then the spent ones in non-increasing fill
    value. The gain gate is on when ``min_gain`` and the best gain are positive, its limit
    ``min_gain`` of the best gain, and its value what orders the candidate, each without its proximity
    weight. A facet's engine weight comes from the run's records
    (``facet_engine_of``)."""
    config = config.with_overrides(selection="coverage", relevance="bm25", facet_engine=by_facet_engine)
    bubble = _build(query, candidates, config)
    engine = facet_engine_of(bubble.trace, by_facet_engine)
    pairs = query_pairs(analysed_query_terms(query, config.bubble.stop_words))
    best = max((gain_of(r, config, engine, {}) for r in bubble.trace), default=0.0)
    # the gain gate reads gains without their proximity weight
    plain = max((gain_of(r, config, engine, {}) / r["proximity_weight"] for r in bubble.trace), default=0.0)
    spent_gain = config.bubble.spent_gain
    floor = spent_gain * best if spent_gain > 0 and best > 0 else -math.inf
    top = max((r["es_score"] for r in bubble.trace), default=0.0)
    first_pass: list[tuple[int, float]] = []
    for record in sorted(bubble.trace, key=lambda r: r["rank"]):
        coverage = record["step_details"]["coverage"]
        assert sorted(coverage) == sorted(record["step_details"]["covered"])
        assert all(amount > 0 for amount in coverage.values())
        assert record["gain"] == pytest.approx(gain_of(record, config, engine, coverage), abs=1e-9)
        # the rank weight is its engine rank's (a chunk that matches nothing has no facet part to weigh)
        rank_weight = 1 + config.bubble.engine_rank / (record["es_rank"] + 1) if record["facets"] else 1.0
        assert record["rank_weight"] == pytest.approx(rank_weight)
        # the proximity weight is the share of the question's pairs the record names as near
        assert set(record["near"]) <= {f"{a} {b}" for a, b in pairs}
        near = config.bubble.proximity * len(record["near"]) / len(pairs) if pairs else 0.0
        assert record["proximity_weight"] == pytest.approx(1 + near if record["facets"] else 1.0)
        fill = record["fill_value"]
        if fill is None:
            assert record["gain"] >= floor - 1e-9
        else:
            assert record["gain"] < floor + 1e-9
            ratio = max(record["es_score"], 0.0) / top if top > 0 else 1.0
            assert fill == pytest.approx(gain_of(record, config, engine, {}) * ratio, abs=1e-9)
        for gate in (*record["step_details"]["gates"], *record["step_details"]["second_pass"]):
            if gate["gate"] == "gain":
                assert gate["enabled"] == (config.bubble.min_gain > 0 and plain > 0)
                if gate["enabled"]:
                    assert gate["limit"] == pytest.approx(config.bubble.min_gain * plain, abs=1e-12)
                    if not record["step_details"]["second_pass"]:  # else the record's gain is the second's
                        ordered_by = record["gain"] if fill is None else fill
                        assert gate["value"] == pytest.approx(
                            ordered_by / record["proximity_weight"], abs=1e-12
                        )
        if not record["step_details"]["second_pass"]:
            first_pass.append((0, record["gain"]) if fill is None else (1, fill))
    assert all(a[0] < b[0] or a[1] >= b[1] - 1e-9 for a, b in itertools.pairwise(first_pass))
    assert [spent for spent, _ in first_pass] == sorted(spent for spent, _ in first_pass)


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.booleans())
def test_document_share_is_rederived_from_the_run_records(
    candidates: list[Candidate], config: BubbleConfig, query: str, by_document: bool
) -> None:
    """A record's document share is the facet weight its document's candidates match at best over
    the facet weight all candidates match at best (1 for a chunk matching nothing, under score order
    or with the switch off), read from the run's records alone."""
    config = config.with_overrides(selection="coverage", relevance="bm25", document_share=by_document)
    bubble = _build(query, candidates, config)
    best: dict[str, float] = {}
    per_document: dict[str, dict[str, float]] = {}
    for record in bubble.trace:
        for facet, weight in facet_weights_of(record).items():
            best[facet] = max(best.get(facet, 0.0), weight)
            document = per_document.setdefault(record["doc_id"], {})
            document[facet] = max(document.get(facet, 0.0), weight)
    for record in bubble.trace:
        share = record["document_share"]
        assert share is not None and 0.0 <= share <= 1.0
        if not by_document or not facet_weights_of(record):
            assert share == 1.0
        else:
            mine = sum(per_document[record["doc_id"]].values())
            assert share == pytest.approx(mine / sum(best.values()))


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.sampled_from([0.0, 0.5, 1.0]))
def test_chunk_share_is_rederived_from_the_run_records(
    candidates: list[Candidate], config: BubbleConfig, query: str, power: float
) -> None:
    """A record's own share of the query is the best weight any record has for each facet it matches,
    over the sum of every facet's best weight (1 for a chunk matching nothing, under score order or
    with the power 0), read from the run's records alone."""
    config = config.with_overrides(selection="coverage", relevance="bm25", chunk_share=power)
    bubble = _build(query, candidates, config)
    best: dict[str, float] = {}
    for record in bubble.trace:
        for facet, weight in facet_weights_of(record).items():
            best[facet] = max(best.get(facet, 0.0), weight)
    for record in bubble.trace:
        share = record["chunk_share"]
        assert share is not None and 0.0 < share <= 1.0
        mine = facet_weights_of(record)
        if power == 0 or not mine:
            assert share == 1.0
        else:
            assert share == pytest.approx(sum(best[facet] for facet in mine) / sum(best.values()))


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.booleans())
def test_document_engine_weight_is_rederived_from_the_run_records(
    candidates: list[Candidate], config: BubbleConfig, query: str, by_engine: bool
) -> None:
    """A record's engine weight is the best engine score among its document's candidates over the
    best among all (1 when no score is positive, for a chunk matching nothing, under score order or
    with the switch off), read from the run's records alone."""
    config = config.with_overrides(selection="coverage", relevance="bm25", document_engine=by_engine)
    bubble = _build(query, candidates, config)
    best: dict[str, float] = {}
    for record in bubble.trace:
        best[record["doc_id"]] = max(best.get(record["doc_id"], 0.0), record["es_score"])
    top = max(best.values(), default=0.0)
    for record in bubble.trace:
        engine = record["document_engine"]
        assert engine is not None and 0.0 <= engine <= 1.0
        if not by_engine or not facet_weights_of(record) or top <= 0:
            assert engine == 1.0
        else:
            assert engine == pytest.approx(best[record["doc_id"]] / top)


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES))
def test_one_document_makes_the_document_share_change_nothing(
    candidates: list[Candidate], config: BubbleConfig, query: str
) -> None:
    """When every candidate comes from one document, its share and its engine weight are 1 and the
    bubble is the same with the switches on or off."""
    single = [
        c.model_copy(update={"chunk": c.chunk.model_copy(update={"doc_id": "one"})}) for c in candidates
    ]
    on = _build(query, single, config.with_overrides(document_share=True, document_engine=True))
    off = _build(query, single, config.with_overrides(document_share=False, document_engine=False))
    assert [s.chunk.chunk_id for s in on.selected] == [s.chunk.chunk_id for s in off.selected]
    assert [r["gain"] for r in on.trace] == [r["gain"] for r in off.trace]


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES))
def test_bubble_never_exceeds_the_global_budget(
    candidates: list[Candidate], config: BubbleConfig, query: str
) -> None:
    bubble = _build(query, candidates, config)
    assert bubble.tokens_used <= config.bubble.token_budget
    assert len(bubble.selected) <= config.bubble.max_chunks


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES))
def test_under_strict_no_bucket_exceeds_its_share(
    candidates: list[Candidate], config: BubbleConfig, query: str
) -> None:
    config = config.with_overrides(slack_policy="strict", variant="full")
    bubble = _build(query, candidates, config)
    shares = check_shares(bubble, config)
    spent: dict[str, int] = {}
    for chosen in bubble.selected:
        bucket = config.buckets.bucket_of(chosen.chunk.section, chosen.chunk.bucket)
        spent[bucket] = spent.get(bucket, 0) + chosen.chunk.token_count
    for bucket, tokens in spent.items():
        assert tokens <= shares[bucket] * config.bubble.token_budget + 1e-6


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES))
def test_global_pool_only_spends_what_buckets_left(
    candidates: list[Candidate], config: BubbleConfig, query: str
) -> None:
    config = config.with_overrides(slack_policy="global_pool", variant="full")
    bubble = _build(query, candidates, config)
    second = [
        r for r in bubble.trace if r["step_details"]["second_pass"] and r["final_decision"] == "selected"
    ]
    assert bubble.pool is not None
    assert sum(r["token_count"] for r in second) <= bubble.pool
    first_pass_spent: dict[str, int] = {}
    for record in bubble.trace:
        if record["final_decision"] == "selected" and not record["step_details"]["second_pass"]:
            first_pass_spent[record["bucket"]] = (
                first_pass_spent.get(record["bucket"], 0) + record["token_count"]
            )
    for bucket, tokens in first_pass_spent.items():
        assert tokens <= bubble.bucket_caps[bucket]


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.sampled_from(["diversity", "full"]))
def test_each_selected_chunk_overlaps_those_before_it_less_than_delta(
    candidates: list[Candidate], config: BubbleConfig, query: str, variant: str
) -> None:
    """eq. 12 (``overlap = "bubble"``): against the union of B."""
    config = config.with_overrides(variant=variant, overlap="bubble")
    bubble = _build(query, candidates, config)
    before: set[str] = set()
    for chosen in bubble.selected:
        words = gate_words(chosen.chunk.compare_text, config)
        value = len(words & before) / len(words) if words else 0.0
        assert value < config.bubble.overlap_threshold
        assert value == chosen.overlap
        before |= words


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.sampled_from(["diversity", "full"]))
def test_each_selected_chunk_overlaps_every_chunk_before_it_less_than_delta(
    candidates: list[Candidate], config: BubbleConfig, query: str, variant: str
) -> None:
    """``overlap = "chunk"`` (bm25's default): no selected chunk shares δ or more of its words with any
    chunk selected before it, shared words the query asks about not counted."""
    config = config.with_overrides(variant=variant, overlap="chunk")
    bubble = _build(query, candidates, config)
    asked = set(word_set(query, config.bubble.stop_words))
    before: list[set[str]] = []
    for chosen in bubble.selected:
        words = set(gate_words(chosen.chunk.compare_text, config))
        own = {w for w in words if w in asked or set(analyze(w)) & set(analyze(query))}
        value = (
            max((len((words & other) - own) / len(words) for other in before), default=0.0) if words else 0.0
        )
        assert value < config.bubble.overlap_threshold
        assert value == pytest.approx(chosen.overlap)
        before.append(words)


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.sampled_from(["chunk", "bubble"]))
def test_the_chunk_an_overlap_was_measured_against_is_in_the_bubble_and_gives_that_overlap(
    candidates: list[Candidate], config: BubbleConfig, query: str, mode: str
) -> None:
    """``overlap_with`` names a chunk of the bubble (for a selected chunk, one admitted before it)
    whose words, less those the query asks about, give the recorded overlap; none under
    ``overlap = "bubble"``, and none when the overlap is 0."""
    config = config.with_overrides(variant="full", overlap=mode)
    bubble = _build(query, candidates, config)
    texts = {c.chunk.chunk_id: c.chunk.compare_text for c in candidates}
    chosen = {s.chunk.chunk_id: s.selection_order for s in bubble.selected}
    asked = set(word_set(query, config.bubble.stop_words))

    def shared(words: set[str], other: str) -> float:
        own = {w for w in words if w in asked or set(analyze(w)) & set(analyze(query))}
        return len((words & set(gate_words(texts[other], config))) - own) / len(words)

    for record in bubble.trace:
        nearest = record["overlap_with"]
        if mode == "bubble" or record["overlap"] == 0:
            assert nearest is None
            continue
        assert nearest in chosen and nearest != record["chunk_id"]
        order = record["selection_order"]
        assert order is None or chosen[nearest] < order
        words = set(gate_words(texts[record["chunk_id"]], config))
        assert shared(words, nearest) == pytest.approx(record["overlap"])


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES))
def test_every_candidate_has_exactly_one_final_decision(
    candidates: list[Candidate], config: BubbleConfig, query: str
) -> None:
    bubble = _build(query, candidates, config)
    assert sorted(r["chunk_id"] for r in bubble.trace) == sorted(c.chunk.chunk_id for c in candidates)
    selected_ids = {s.chunk.chunk_id for s in bubble.selected}
    for record in bubble.trace:
        assert (record["final_decision"] == "selected") == (record["chunk_id"] in selected_ids)
        assert (record["final_reason"] == "passed_all_gates") == (record["final_decision"] == "selected")
    orders = sorted(r["selection_order"] for r in bubble.trace if r["selection_order"] is not None)
    assert orders == list(range(1, len(selected_ids) + 1))
    assert [r["rank"] for r in bubble.trace] == list(range(1, len(candidates) + 1))


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.data())
def test_shuffling_the_input_order_changes_nothing(
    candidates: list[Candidate], config: BubbleConfig, query: str, data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(candidates))
    first = _build(query, candidates, config)
    second = _build(query, shuffled, config)
    assert first.model_dump() == second.model_dump()


@common
@given(candidate_sets(), configs(), st.sampled_from(QUERIES))
def test_every_decision_can_be_rederived_from_its_trace_record(
    candidates: list[Candidate], config: BubbleConfig, query: str
) -> None:
    bubble = _build(query, candidates, config)
    for record in bubble.trace:
        decision, reason, stage = rederive(record)
        assert (decision, reason, stage) == (
            record["final_decision"],
            record["final_reason"],
            record["stage"],
        )
        assert record["step_decision"] == ("pass" if decision == "selected" else "fail")
        relevance_gate = record["step_details"]["gates"][0]
        paper_gate = config.bubble.relevance == "tf" or config.bubble.fill_with_priors
        assert relevance_gate["value"] == (record["score_final"] if paper_gate else record["relevance"])
        assert relevance_gate["value"] > config.bubble.min_score or decision == "rejected"
