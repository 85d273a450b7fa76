"""Templates: installed from the shipped JSON, idempotent, and covering every record field."""

from __future__ import annotations

import contextlib
import fnmatch
import itertools
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from _store_data import make_chunk
from elasticsearch import BadRequestError as EsBadRequestError
from elasticsearch import NotFoundError as EsNotFoundError
from hypothesis import given
from hypothesis import strategies as st
from reliability_proxy import forwarding_proxy

from esbubble.errors import BulkError, ConfigError, EngineError
from esbubble.models import Chunk, ChunkTerms, RunManifest, TraceRecord
from esbubble.store.chunks import DERIVED_FIELDS, chunk_source, get_chunks, index_chunks
from esbubble.store.connection import Store, connect
from esbubble.store.names import IndexNames
from esbubble.store.templates import (
    COMPONENTS,
    INDEX_TEMPLATES,
    ensure_chunk_fields,
    ensure_initialised,
    init_indices,
    load_template,
    outdated,
    patterns_overlap,
)
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
    derived = set(DERIVED_FIELDS) if model is Chunk else set()
    assert set(mappings["properties"]) == _model_fields(model) | derived


def test_a_chunks_document_holds_exactly_the_mapped_fields() -> None:
    mappings = load_template("component-chunks-mappings", "esbubble")["template"]["mappings"]
    chunk = make_chunk("d", 0, "high_growth_count: 45", section="Sheet1", row=2)
    source = chunk_source(chunk)
    assert set(source) == set(mappings["properties"])
    assert source["text_parts"] == "high growth count" and source["context_parts"] == ""


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


@pytest.mark.integration
def test_an_older_versions_audit_install_is_brought_up_to_date_before_a_command_writes(
    bare_store: Store,
) -> None:
    """After an upgrade the first command that needs the indices updates the templates and adds the
    new trace fields to the month's strict index, so no trace record of the new version is refused."""
    init_indices(bare_store)
    assert ensure_initialised(bare_store) is None  # current: one HEAD and two GETs, nothing written
    names, client = bare_store.names, bare_store.client
    # The traces mapping and month index as a version without ``document_share`` installed them.
    older = load_template("component-traces-mappings", names.prefix)
    del older["template"]["mappings"]["properties"]["document_share"]
    older_meta = {**older["_meta"], "esbubble_hash": "an older version"}
    client.cluster.put_component_template(
        name=f"{names.prefix}-traces-mappings", template=older["template"], meta=older_meta
    )
    month = names.traces_index(datetime(2026, 1, 5, tzinfo=UTC))
    client.indices.create(index=month)
    record = {"trace_id": "t", "run_id": "r", "document_share": 0.5}
    with pytest.raises(EsBadRequestError):  # strict: the field an older version did not map
        client.index(index=month, id="t", document=record)
    assert outdated(bare_store)

    result = ensure_initialised(bare_store)
    assert result is not None and not result.first_use
    statuses = {(step.kind, step.name): step.status for step in result.steps}
    assert statuses[("component_template", f"{names.prefix}-traces-mappings")] == "updated"
    assert statuses[("index", names.traces)] == "updated"
    client.index(index=month, id="t", document=record, refresh=True)
    assert client.get(index=month, id="t").body["_source"] == record
    assert not outdated(bare_store)
    assert ensure_initialised(bare_store) is None


@pytest.mark.integration
def test_a_user_who_may_not_upgrade_the_templates_is_told_and_goes_on(bare_store: Store) -> None:
    """An outdated install and a user the cluster does not let manage templates: no error (the
    command goes on, as before the check existed), a result that says why nothing was updated."""
    init_indices(bare_store)
    prefix = bare_store.names.prefix
    older = load_template("component-traces-mappings", prefix)
    bare_store.client.cluster.put_component_template(
        name=f"{prefix}-traces-mappings", template=older["template"], meta={"esbubble_hash": "older"}
    )
    assert bare_store.settings.url is not None
    with forwarding_proxy(bare_store.settings.url, fail_status=403) as (url, wire):
        wire.fail_matching = "PUT /_component_template/"
        proxied = connect(url, bare_store.settings.model_copy(update={"url": url}), shown_url=url)
        result = ensure_initialised(proxied)
        proxied.client.close()
    assert result is not None and result.refused is not None
    assert "status 403" in result.refused and "manage index templates" in result.refused
    assert outdated(bare_store)  # nothing was changed


# --- prefixes whose templates would overlap; no partial install ---------------------------------


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        ("esbubble-traces-chunks-*", "esbubble-traces-*", True),
        ("esbubble-traces-*", "esbubble-traces-chunks-*", True),
        ("esbubble-runs-*", "esbubble-traces-*", False),
        ("a-chunks-*", "a-chunks-v1", True),
        ("a*b", "*c", False),
        ("*", "anything", True),
    ],
)
def test_patterns_overlap(first: str, second: str, overlap: bool) -> None:
    assert patterns_overlap(first, second) is overlap


@given(st.from_regex(r"[ab*-]{0,8}", fullmatch=True), st.from_regex(r"[ab*-]{0,8}", fullmatch=True))
def test_patterns_overlap_agrees_with_matching_names(first: str, second: str) -> None:
    names = ["".join(p) for n in range(5) for p in itertools.product("ab-", repeat=n)]
    both = any(fnmatch.fnmatchcase(n, first) and fnmatch.fnmatchcase(n, second) for n in names)
    if both:
        assert patterns_overlap(first, second)
    assert patterns_overlap(first, second) == patterns_overlap(second, first)


def _other(store: Store, prefix: str) -> Store:
    settings = store.settings.model_copy(update={"prefix": prefix})
    return replace(store, names=IndexNames.for_prefix(prefix), settings=settings)


def _installed(store: Store, prefix: str) -> list[str]:
    templates = store.client.indices.get_index_template().body["index_templates"]
    components = store.client.cluster.get_component_template().body["component_templates"]
    own = {f"{prefix}-{short}" for short in (*INDEX_TEMPLATES, *COMPONENTS)}
    return [t["name"] for t in [*templates, *components] if t["name"] in own]


@pytest.mark.parametrize("order", ["existing-first", "overlapping-first"])
def test_a_prefix_whose_patterns_overlap_is_refused_before_anything_is_written(
    bare_store: Store, order: str
) -> None:
    outer = bare_store
    inner = _other(bare_store, f"{outer.names.prefix}-traces")
    installed, refused = (outer, inner) if order == "existing-first" else (inner, outer)
    try:
        init_indices(installed)
        before = _installed(bare_store, installed.names.prefix)
        with pytest.raises(ConfigError, match="would overlap") as error:
            init_indices(refused)
        assert "-traces-chunks-*" in error.value.one_line()
        assert before and _installed(bare_store, refused.names.prefix) == []
        assert not bare_store.client.indices.exists(index=refused.names.chunks_index)
    finally:
        _drop(bare_store, inner.names.prefix)


def _drop(store: Store, prefix: str) -> None:
    for short in INDEX_TEMPLATES:
        with contextlib.suppress(EsNotFoundError):
            store.client.indices.delete_index_template(name=f"{prefix}-{short}")
    for short in COMPONENTS:
        with contextlib.suppress(EsNotFoundError):
            store.client.cluster.delete_component_template(name=f"{prefix}-{short}")
    for name in store.client.indices.get(index=f"{prefix}-*").body:
        store.client.indices.delete(index=name)


def test_a_refused_step_rolls_back_what_init_created(bare_store: Store) -> None:
    assert bare_store.settings.url is not None
    prefix = bare_store.names.prefix
    with forwarding_proxy(bare_store.settings.url, fail_status=400) as (url, wire):
        wire.fail_matching = f"PUT /_index_template/{prefix}-runs"
        proxied = connect(url, bare_store.settings.model_copy(update={"url": url}), shown_url=url)
        with pytest.raises(EngineError, match="status 400") as error:
            init_indices(proxied)
        proxied.client.close()
    assert "permissions" not in error.value.one_line()
    assert any(f"PUT /_component_template/{prefix}-settings" in line for line in wire.requests)
    assert _installed(bare_store, prefix) == []
    assert not bare_store.client.indices.exists(index=bare_store.names.chunks_index)
