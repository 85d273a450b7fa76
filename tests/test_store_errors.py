"""Client failures become esbubble errors in one place; one ``search_after`` pager reads every hit."""

from __future__ import annotations

import socket

import pytest
from elastic_transport import TransportError
from elasticsearch import ApiError

from esbubble.errors import EngineError, NotFoundError
from esbubble.store import paging
from esbubble.store.client import make_client
from esbubble.store.connection import Store
from esbubble.store.errors import Failure, always, engine_errors, failure_of, tolerating
from esbubble.store.paging import search_pages

pytestmark = pytest.mark.integration


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _missing(store: Store) -> str:
    return f"{store.names.prefix}-nothing-here"


def test_a_refusal_reaches_the_mapping_with_its_status_and_reason(bare_store: Store) -> None:
    seen: list[Failure] = []

    def to_error(failure: Failure) -> NotFoundError:
        seen.append(failure)
        return NotFoundError(f"no index {_missing(bare_store)}", hint="create it first")

    with pytest.raises(NotFoundError) as raised, engine_errors(to_error):
        bare_store.client.count(index=_missing(bare_store))
    (failure,) = seen
    assert (failure.status, failure.answered, failure.index_missing) == (404, True, True)
    assert failure.reason == "index_not_found_exception"
    assert raised.value.one_line() == f"no index {_missing(bare_store)} (create it first)"
    assert raised.value.__suppress_context__  # one line, no chained client traceback


def test_no_answer_is_a_failure_without_status() -> None:
    client = make_client(f"http://127.0.0.1:{_closed_port()}", request_timeout=1, max_retries=0)
    with pytest.raises(EngineError) as raised, engine_errors(lambda f: EngineError(f"gone: {f.answered}")):
        client.info()
    assert raised.value.message == "gone: False"
    with pytest.raises(TransportError) as kept:
        client.info()
    failure = failure_of(kept.value)
    assert failure.status is None and failure.reason == failure.detail == str(kept.value)
    assert not failure.index_missing


def test_a_mapping_that_declines_leaves_the_client_error(bare_store: Store) -> None:
    with pytest.raises(ApiError), engine_errors(lambda failure: None):
        bare_store.client.count(index=_missing(bare_store))


def test_tolerating_keeps_accepted_failures_and_passes_the_others(bare_store: Store) -> None:
    with tolerating(lambda failure: failure.status == 404) as lookup:
        bare_store.client.count(index=_missing(bare_store))
    assert lookup.failure is not None and lookup.failure.status == 404
    with tolerating(always) as fine:
        bare_store.client.info()
    assert fine.failure is None
    with pytest.raises(ApiError), tolerating(lambda failure: failure.status == 409):
        bare_store.client.count(index=_missing(bare_store))


def test_the_pager_reads_every_hit_in_sort_order(bare_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    index = f"{bare_store.names.prefix}-paged"
    operations: list[dict[str, object]] = []
    for number in range(7):
        operations += [{"index": {"_index": index, "_id": f"d{number}"}}, {"key": f"d{number}", "n": number}]
    bare_store.client.indices.create(index=index, mappings={"properties": {"key": {"type": "keyword"}}})
    bare_store.client.bulk(operations=operations, refresh=True)
    monkeypatch.setattr(paging, "PAGE_SIZE", 3)  # 7 hits: two full pages and one short one
    try:
        hits = list(search_pages(bare_store, index, {"match_all": {}}, [{"key": "desc"}]))
        narrowed = list(
            search_pages(
                bare_store, index, {"range": {"n": {"gte": 5}}}, [{"key": "asc"}], source={"includes": ["n"]}
            )
        )
    finally:
        bare_store.client.indices.delete(index=index)
    assert [hit["_id"] for hit in hits] == [f"d{n}" for n in range(6, -1, -1)]
    assert [hit["_source"] for hit in narrowed] == [{"n": 5}, {"n": 6}]


def test_the_pager_reads_a_missing_index_as_empty_only_when_asked(bare_store: Store) -> None:
    missing = _missing(bare_store)
    assert list(search_pages(bare_store, missing, {"match_all": {}}, [{"key": "asc"}], missing_ok=True)) == []
    with pytest.raises(ApiError) as raised:
        list(search_pages(bare_store, missing, {"match_all": {}}, [{"key": "asc"}]))
    assert failure_of(raised.value).index_missing
