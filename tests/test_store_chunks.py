"""Chunk writes and reads against a real engine."""

from __future__ import annotations

import pytest
from _store_data import QUOTE_JOB, make_chunk

from esbubble.errors import BulkError, NotFoundError
from esbubble.store.chunks import (
    NeighbourRequest,
    count_chunks,
    delete_chunks,
    doc_chunk_hashes,
    get_chunks,
    index_chunks,
    neighbours,
)
from esbubble.store.connection import Store

pytestmark = pytest.mark.integration


def test_index_is_idempotent_by_chunk_id(store: Store) -> None:
    first = index_chunks(store, QUOTE_JOB)
    assert (first.created, first.updated) == (len(QUOTE_JOB), 0)
    second = index_chunks(store, QUOTE_JOB)
    assert (second.created, second.updated) == (0, len(QUOTE_JOB))
    assert count_chunks(store) == len(QUOTE_JOB)


def test_round_trip_hashes_get_and_delete(store: Store) -> None:
    index_chunks(store, [*QUOTE_JOB, make_chunk("other", 0, "unrelated memo")])
    hashes = doc_chunk_hashes(store, "job")
    assert hashes == {c.chunk_id: c.content_hash for c in QUOTE_JOB}
    wanted = ["job:0003", "missing", "job:0000"]
    assert get_chunks(store, wanted) == [QUOTE_JOB[3], QUOTE_JOB[0]]
    assert delete_chunks(store, ["job:0000", "job:0001", "missing"]) == 2
    assert count_chunks(store) == len(QUOTE_JOB) - 1
    assert "job:0000" not in doc_chunk_hashes(store, "job")


def test_hashes_page_past_one_page(store: Store) -> None:
    many = [make_chunk("big", i, f"row {i}") for i in range(1203)]
    index_chunks(store, many)
    assert len(doc_chunk_hashes(store, "big")) == 1203


def test_neighbours_in_one_request_deduplicated_in_document_order(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    found = neighbours(
        store,
        [
            NeighbourRequest(doc_id="job", lo=1, hi=3),
            NeighbourRequest(doc_id="job", lo=2, hi=4, section="Roofing"),
        ],
    )
    assert [c.chunk_id for c in found] == ["job:0001", "job:0002", "job:0003", "job:0004"]


def test_every_failed_item_is_reported(store: Store) -> None:
    # A strict mapping refuses a chunk whose row number is not a number; none may vanish silently.
    good = make_chunk("job", 0, "fine")
    bad_docs = [
        {"_op_type": "index", "_index": store.names.chunks, "_id": f"bad{i}", "_source": {"nope": i}}
        for i in range(3)
    ]
    from esbubble.store.chunks import bulk_write, chunk_source

    actions = [{"_index": store.names.chunks, "_id": good.chunk_id, "_source": chunk_source(good)}, *bad_docs]
    with pytest.raises(BulkError) as raised:
        bulk_write(store, actions, what="chunks")
    assert sorted(str(e["_id"]) for e in raised.value.errors) == ["bad0", "bad1", "bad2"]
    assert "3 of 4 chunks failed" in raised.value.message


def test_counting_a_missing_chunk_index_says_to_run_init(bare_store: Store) -> None:
    with pytest.raises(NotFoundError) as error:  # the user's to fix: exit 1, not 3
        count_chunks(bare_store)
    line = error.value.one_line()
    assert f"the chunk index {bare_store.names.chunks} does not exist" in line and "esbubble init" in line
