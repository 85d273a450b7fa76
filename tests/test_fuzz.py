"""Fuzzing the library's front doors with hypothesis.

Whatever configs, profiles and queries come in, only ``EsbubbleError``
subclasses may escape, and every bubble that is built keeps its invariants:
within budget and max_chunks, one trace record per candidate, the trace and
the selection agree, and the same input gives the same bubble.
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esbubble.app.runner import run_bubble
from esbubble.config import BubbleConfig, load_profile, parse_config
from esbubble.core.bubble import build_bubble
from esbubble.core.tokens import count_tokens
from esbubble.core.variants import VARIANTS
from esbubble.errors import EsbubbleError
from esbubble.models import Candidate, Chunk
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store
from esbubble.store.query import build_retrieval_query
from esbubble.text import MAX_QUERY_CHARS

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
SECTIONS = ["Pricing", "Scope of Works", "Exclusions", "Site Conditions", "Terms"]
WORDS = [
    "scaffold",
    "roof",
    "price",
    "labour",
    "week",
    "steel",
    "the",
    "of",
    "gutter",
    "edge",
    "EUR",
    "脚手架",
    "крыша",
]
QUERIES = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join),
    st.text(
        alphabet=st.characters(categories=["Cc", "Cf", "Zs", "P"]), max_size=50
    ),  # control / punctuation only
    st.just("the of and a to in is"),
    st.just("x" * MAX_QUERY_CHARS),  # the longest query accepted
)
# lone surrogates, as from argv, and a query over the length limit
ANY_QUERIES = QUERIES | st.sampled_from(["\ud800", "scaffold \udcff price", "x" * 100_000])


def _chunk(number: int, text: str, section: str) -> Chunk:
    return Chunk(
        chunk_id=f"c{number:03d}",
        doc_id="fuzz.xlsx",
        source_type="xlsx",
        section=section,
        sheet_name=section,
        bucket=section,
        row_number=number + 2,
        position=number,
        token_count=max(1, count_tokens(text, "o200k_base")),
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        text=text,
        compare_text=text,
    )


@st.composite
def candidate_lists(draw: st.DrawFn) -> list[Candidate]:
    size = draw(st.integers(min_value=0, max_value=25))
    candidates = []
    for number in range(size):
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=40)))
        section = draw(st.sampled_from(SECTIONS))
        score = draw(st.floats(min_value=0.0, max_value=50.0, allow_nan=False))
        candidates.append(Candidate(chunk=_chunk(number, text, section), es_score=score, es_rank=number + 1))
    return candidates


ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=6), st.floats(allow_nan=True), max_size=3),
)
BUBBLE_KEYS = [
    "token_budget", "overlap_threshold", "candidate_k", "max_chunks", "length_norm", "min_score",
    "slack_policy", "variant", "encoding", "bogus",
]  # fmt: skip


@st.composite
def raw_profiles(draw: st.DrawFn) -> dict[str, object]:
    """Profiles as parsed TOML would give them: mostly plausible, often wrong in one place."""
    bubble: dict[str, object] = {
        "token_budget": draw(st.integers(min_value=-5, max_value=3000)),
        "overlap_threshold": draw(st.floats(min_value=-0.5, max_value=1.5) | st.just(math.nan)),
        "candidate_k": draw(st.integers(min_value=-1, max_value=300)),
        "max_chunks": draw(st.integers(min_value=-1, max_value=40)),
        "slack_policy": draw(st.sampled_from(["strict", "global_pool", "loose"])),
        "variant": draw(st.sampled_from(["flat_topk", "structure", "diversity", "full", "best"])),
    }
    for key in draw(st.lists(st.sampled_from(BUBBLE_KEYS), max_size=2)):
        bubble[key] = draw(ANY_VALUE)
    shares = draw(
        st.dictionaries(st.sampled_from(SECTIONS), st.floats(min_value=-0.2, max_value=1.2), max_size=5)
    )
    profile: dict[str, object] = {"bubble": bubble, "buckets": {"shares": shares}}
    if draw(st.booleans()):
        profile["priors"] = {"sections": {draw(st.sampled_from(SECTIONS)): draw(ANY_VALUE)}}
    if draw(st.integers(0, 9)) == 0:
        profile[draw(st.sampled_from(["unknown", "bubbles", "expand"]))] = draw(ANY_VALUE)
    return profile


def _check_invariants(bubble_config: BubbleConfig, candidates: list[Candidate], query: str) -> None:
    bubble = build_bubble(query, candidates, bubble_config, run_id="fuzz", now=NOW)
    params = bubble_config.bubble
    selected_ids = [s.chunk.chunk_id for s in bubble.selected]
    assert bubble.tokens_used <= params.token_budget
    assert len(bubble.selected) <= params.max_chunks
    assert len(set(selected_ids)) == len(selected_ids)
    assert sorted(r["chunk_id"] for r in bubble.trace) == sorted(c.chunk.chunk_id for c in candidates)
    chosen = {r["chunk_id"] for r in bubble.trace if r["final_decision"] == "selected"}
    assert chosen == set(selected_ids)
    assert [s.selection_order for s in bubble.selected] == list(
        range(1, len(selected_ids) + 1)
    ) or not selected_ids
    for record in bubble.trace:
        assert (record["final_reason"] == "passed_all_gates") == (record["final_decision"] == "selected")
        assert all(
            math.isfinite(v)
            for v in (record["score_final"], record["tf"], record["boost"], record["len_penalty"])
        )
    if params.slack_policy == "strict" and VARIANTS[params.variant].section_budgets:
        for bucket, cap in bubble.bucket_caps.items():
            assert sum(s.chunk.token_count for s in bubble.selected if s.chunk.bucket == bucket) <= cap
    again = build_bubble(query, list(reversed(candidates)), bubble_config, run_id="fuzz", now=NOW)
    assert [s.chunk.chunk_id for s in again.selected] == selected_ids


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile=raw_profiles(), candidates=candidate_lists(), query=ANY_QUERIES)
def test_only_esbubble_errors_escape_and_bubble_invariants_hold(
    profile: dict[str, object], candidates: list[Candidate], query: str
) -> None:
    try:
        config = parse_config(profile, source="fuzz")
    except EsbubbleError as error:
        assert "\n" not in error.one_line()
        return
    try:
        body = build_retrieval_query(query, config)
    except EsbubbleError:
        body = None
    if body is not None:
        assert body["size"] == config.bubble.candidate_k
    try:
        _check_invariants(config, candidates, query)
    except EsbubbleError as error:
        assert "\n" not in error.one_line()


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_profile_file_loads_or_fails_with_a_config_error(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "profile.toml"
        path.write_bytes(data)
        try:
            config = load_profile(path)
        except EsbubbleError as error:
            assert "\n" not in error.one_line()
            assert error.exit_code == 1
        else:
            assert isinstance(config, BubbleConfig)


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(min_value=-10, max_value=10**7),
    delta=st.floats(allow_nan=True, allow_infinity=True),
    variant=st.text(max_size=10) | st.sampled_from(["full", "flat_topk"]),
)
def test_flag_overrides_fail_only_with_config_errors(budget: int, delta: float, variant: str) -> None:
    try:
        config = BubbleConfig().with_overrides(token_budget=budget, overlap_threshold=delta, variant=variant)
    except EsbubbleError as error:
        assert error.exit_code == 1 and "\n" not in error.one_line()
    else:
        assert 0 < config.bubble.overlap_threshold <= 1 and config.bubble.token_budget > 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    budget=st.integers(min_value=1, max_value=1500),
    delta=st.floats(min_value=0.01, max_value=1.0),
    max_chunks=st.integers(min_value=1, max_value=20),
    policy=st.sampled_from(["strict", "global_pool"]),
    variant=st.sampled_from(["flat_topk", "structure", "diversity", "full"]),
    shares=st.dictionaries(st.sampled_from(SECTIONS), st.floats(min_value=0.05, max_value=0.3), max_size=3),
    candidates=candidate_lists(),
    query=QUERIES,
)
def test_bubble_invariants_hold_for_every_valid_config(
    *,
    budget: int,
    delta: float,
    max_chunks: int,
    policy: str,
    variant: str,
    shares: dict[str, float],
    candidates: list[Candidate],
    query: str,
) -> None:
    config = parse_config(
        {
            "bubble": {
                "token_budget": budget,
                "overlap_threshold": delta,
                "max_chunks": max_chunks,
                "slack_policy": policy,
                "variant": variant,
            },
            "buckets": {"shares": shares},
        }
    )
    _check_invariants(config, candidates, query)


@pytest.mark.integration
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(query=ANY_QUERIES | st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=300))
def test_run_bubble_on_the_engine_raises_only_esbubble_errors(fuzz_store: Store, query: str) -> None:
    """Whatever the query, a run ends in a traced bubble or one ``EsbubbleError`` line (real engine)."""
    try:
        result = run_bubble(fuzz_store, query, BubbleConfig())
    except EsbubbleError as error:
        assert "\n" not in error.one_line()
        return
    bubble = result.bubble
    assert bubble.tokens_used <= bubble.budget
    assert len(bubble.trace) == result.manifest.totals.candidates
    assert result.write_result.written == len(bubble.trace) + 1


@pytest.fixture
def fuzz_store(store: Store) -> Store:
    chunks = [
        _chunk(n, " ".join(WORDS[n % len(WORDS) :] + WORDS[: n % 5]), SECTIONS[n % 5]) for n in range(30)
    ]
    index_chunks(store, chunks)
    return store
