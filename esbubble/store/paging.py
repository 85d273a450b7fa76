"""The one pager: every hit of a query, read with ``search_after`` (works on every engine)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from esbubble.store.connection import Store

PAGE_SIZE = 1000


def search_pages(
    store: Store,
    index: str,
    query: dict[str, Any],
    sort: list[dict[str, Any]],
    *,
    source: dict[str, Any] | None = None,
    missing_ok: bool = False,
) -> Iterator[dict[str, Any]]:
    """Every hit of ``query`` on ``index`` in ``sort`` order (which must end on a unique field).

    ``source`` narrows the returned ``_source``; ``missing_ok`` makes an index or
    alias that does not exist yield nothing. Client errors propagate: callers
    consume the pages inside ``esbubble.store.errors.engine_errors``.
    """
    missing = True if missing_ok else None  # None: the parameter is not sent
    after: list[Any] | None = None
    while True:
        response = store.client.search(
            index=index,
            query=query,
            sort=sort,
            size=PAGE_SIZE,
            source=source,
            search_after=after,
            track_total_hits=False,
            ignore_unavailable=missing,
            allow_no_indices=missing,
        )
        hits = response.body["hits"]["hits"]
        yield from hits
        if len(hits) < PAGE_SIZE:
            return
        after = hits[-1]["sort"]
