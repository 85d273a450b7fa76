"""The run manifest: resolved config and hash, slack policy, totals, redaction."""

from __future__ import annotations

from datetime import UTC, datetime

from factories import paper_config

import esbubble
from esbubble.core.bubble import build_bubble
from esbubble.core.manifest import build_manifest
from esbubble.models import Candidate, Chunk, EngineInfo

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = paper_config({"bubble": {"token_budget": 50, "length_norm": 10.0, "slack_policy": "strict"}})


def _candidate(chunk_id: str, text: str) -> Candidate:
    chunk = Chunk(
        chunk_id=chunk_id,
        doc_id="d",
        source_type="text",
        section="S",
        bucket="S",
        position=0,
        token_count=10,
        content_hash=chunk_id,
        text=text,
        compare_text=text,
    )
    return Candidate(chunk=chunk)


CANDIDATES = [_candidate("a", "slab membrane"), _candidate("b", "slab membrane"), _candidate("c", "pump")]


def test_manifest_records_config_policy_totals_and_context() -> None:
    bubble = build_bubble("slab", CANDIDATES, CONFIG, run_id="run-1", now=NOW, batch_id="b1")
    body = {"query": {"match_all": {}}}
    manifest = build_manifest(
        bubble,
        CONFIG,
        index="esbubble-chunks",
        engine=EngineInfo(name="osmem", version="3.8.0"),
        request_body=body,
        index_doc_count=3,
        timings_ms={"retrieve": 1.5, "bubble": 0.2},
        now=NOW,
    )
    assert (manifest.run_id, manifest.batch_id, manifest.query, manifest.variant) == (
        "run-1",
        "b1",
        "slab",
        "full",
    )
    assert manifest.config == CONFIG.model_dump(mode="json")
    assert manifest.config_hash == CONFIG.config_hash
    assert manifest.slack_policy == "strict"
    assert manifest.esbubble_version == esbubble.__version__
    assert manifest.request_body == body
    assert manifest.totals.selected == 1
    assert manifest.totals.candidates == 3
    assert manifest.totals.tokens_used == 10
    assert manifest.totals.budget == 50
    assert manifest.totals.rejected["too_redundant"] == 1
    assert manifest.totals.rejected["low_relevance"] == 1
    assert manifest.timings_ms == {"retrieve": 1.5, "bubble": 0.2}
    assert manifest.query_hash == bubble.trace[0]["query_hash"]


def test_manifest_config_is_the_one_that_ran_and_redaction_holds() -> None:
    bubble = build_bubble(
        "slab", CANDIDATES, CONFIG, run_id="r", now=NOW, variant="flat_topk", redact_query=True
    )
    manifest = build_manifest(
        bubble,
        CONFIG,
        index="i",
        engine=None,
        request_body=None,
        index_doc_count=None,
        timings_ms={},
        now=NOW,
    )
    assert manifest.query is None
    assert manifest.config["bubble"]["variant"] == "flat_topk"
    assert manifest.config_hash != CONFIG.config_hash
    assert manifest.variant == "flat_topk"
