"""Templates: installed from the shipped JSON, idempotent, and covering every record field."""

from __future__ import annotations

import pytest
from _store_data import make_chunk

from esbubble.errors import BulkError
from esbubble.models import Chunk, ChunkTerms, RunManifest, TraceRecord
from esbubble.store.chunks import get_chunks, index_chunks
from esbubble.store.connection import Store
from esbubble.store.templates import INDEX_TEMPLATES, ensure_chunk_fields, init_indices, load_template
from esbubble.text import TERMS_VERSION, term_counts


def _model_fields(model: type[Chunk] | type[TraceRecord] | type[RunManifest]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


@pytest.mark.parametrize(
    ("component", "model"),
    [("chunks-mappings", Chunk), ("traces-mappings", TraceRecord), ("runs-mappings", RunManifest)],
)
def test_every_model_field_is_mapped(component: str, model: type[Chunk]) -> None:
    mappings = load_template(f"component-{component}", "esbubble")["template"]["mappings"]
    assert mappings["dynamic"] == "strict"
    assert set(mappings["properties"]) == _model_fields(model)


def test_free_form_fields_are_stored_not_indexed() -> None:
    traces = load_template("component-traces-mappings", "p")["template"]["mappings"]["properties"]
    runs = load_template("component-runs-mappings", "p")["template"]["mappings"]["properties"]
    assert traces["step_details"] == {"type": "object", "enabled": False}
    assert runs["config"]["enabled"] is False
    assert runs["request_body"]["enabled"] is False
    assert traces["@timestamp"]["type"] == "date"
    for facet in ("run_id", "variant", "section", "bucket", "final_decision", "final_reason", "stage"):
        assert traces[facet]["type"] == "keyword", facet
    for number in ("tf", "boost", "len_penalty", "score_raw", "score_final", "overlap", "es_score"):
        assert traces[number]["type"] == "double", number


def test_prefix_is_filled_in() -> None:
    body = load_template("traces", "acme")
    assert body["index_patterns"] == ["acme-traces-*"]
    assert body["composed_of"] == ["acme-settings", "acme-traces-mappings"]
    assert body["template"]["aliases"] == {"acme-traces": {}}
    assert len(body["_meta"]["esbubble_hash"]) == 64


@pytest.mark.integration
def test_init_twice_changes_nothing(bare_store: Store) -> None:
    first = init_indices(bare_store)
    assert {step.status for step in first.steps} == {"created"}
    assert len(first.steps) == 8
    second = init_indices(bare_store)
    assert not second.changed
    assert [s.name for s in second.steps] == [s.name for s in first.steps]
    names = bare_store.names
    aliases = bare_store.client.indices.get_alias(name=names.chunks).body
    assert list(aliases) == [names.chunks_index]
    mapping = bare_store.client.indices.get_mapping(index=names.chunks_index).body
    assert mapping[names.chunks_index]["mappings"]["properties"]["text"]["analyzer"] == "english"


@pytest.mark.integration
def test_monthly_trace_index_joins_the_alias(store: Store) -> None:
    store.client.index(index=f"{store.names.prefix}-traces-2026.01", id="x", document={"run_id": "r"})
    store.client.indices.refresh(index=store.names.traces)
    assert store.client.count(index=store.names.traces).body["count"] == 1


@pytest.mark.integration
def test_an_older_chunk_index_gains_the_new_fields_and_keeps_stored_terms(bare_store: Store) -> None:
    init_indices(bare_store)
    names, client = bare_store.names, bare_store.client
    # An index as an esbubble without stored terms, context and line ranges created it:
    # none of those fields in its strict mapping.
    for short in INDEX_TEMPLATES:
        client.indices.delete_index_template(name=f"{names.prefix}-{short}")
    client.indices.delete(index=names.chunks_index)
    older = load_template("component-chunks-mappings", names.prefix)["template"]["mappings"]
    for newer_field in ("terms", "context", "line_start", "line_end"):
        del older["properties"][newer_field]
    client.indices.create(index=names.chunks_index, mappings=older, aliases={names.chunks: {}})
    chunk = make_chunk("memo", 0, "Sump pump to the sump pit.")
    with_terms = chunk.model_copy(
        update={
            "terms": ChunkTerms(version=TERMS_VERSION, counts=term_counts(chunk.text), compare=["pit"]),
            "context": "memo > Drainage",
            "line_start": 3,
            "line_end": 4,
        }
    )
    with pytest.raises(BulkError):
        index_chunks(bare_store, [with_terms])  # strict mapping refuses the unknown field

    assert ensure_chunk_fields(bare_store) is True  # what `esbubble ingest` runs first
    assert ensure_chunk_fields(bare_store) is False
    index_chunks(bare_store, [with_terms])
    assert get_chunks(bare_store, [chunk.chunk_id])[0] == with_terms
    mapped = client.indices.get_mapping(index=names.chunks_index).body[names.chunks_index]["mappings"]
    assert mapped["properties"]["context"] == {"type": "text", "analyzer": "english"}
    steps = {step.kind: step.status for step in init_indices(bare_store).steps}
    assert steps["index"] == "unchanged"
    assert steps["index_template"] in ("created", "updated")
