"""The Elasticsearch client esbubble uses, and the node class that makes it talk to any engine.

The 9.x client sends ``application/vnd.elasticsearch+json; compatible-with=9``
as content type and accept header. Real Elasticsearch 8.18+/9.x accepts it,
but OpenSearch-API engines such as the embedded osmem-server answer 406. The
node class here rewrites those headers to plain ``application/json`` /
``application/x-ndjson``; the request and response bodies are unchanged, so
it is safe against real Elasticsearch too.
"""

from __future__ import annotations

import random
import time
from typing import Any

from elastic_transport import (
    HttpHeaders,
    SerializationError,
    Transport,
    TransportApiResponse,
    Urllib3HttpNode,
)
from elastic_transport._node import NodeApiResponse
from elastic_transport.client_utils import DEFAULT, DefaultType
from elasticsearch import Elasticsearch

# Retries: connection errors and timeouts are retried by elastic-transport itself with capped
# exponential backoff (retry_backoff_base/cap); 429 and 502-504 answers by ``BackoffTransport``.
MAX_RETRIES = 3
RETRY_BACKOFF_BASE_S = 0.25
RETRY_BACKOFF_CAP_S = 4.0
RETRY_ON_STATUS = frozenset({429, 502, 503, 504})

_PLAIN = {
    "application/vnd.elasticsearch+json": "application/json",
    "application/vnd.elasticsearch+x-ndjson": "application/x-ndjson",
}


def plain_mimetype(value: str) -> str:
    """``application/vnd.elasticsearch+json; compatible-with=9`` → ``application/json``."""
    base = value.split(";", 1)[0].strip()
    return _PLAIN.get(base, value)


class PlainJsonNode(Urllib3HttpNode):
    """A urllib3 node that sends plain JSON / NDJSON media types instead of versioned ones."""

    def perform_request(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        headers: HttpHeaders | None = None,
        request_timeout: DefaultType | float | None = DEFAULT,
    ) -> NodeApiResponse:
        if headers is not None:
            headers = headers.copy()
            for name in ("content-type", "accept"):
                if name in headers:
                    headers[name] = plain_mimetype(headers[name])
        return super().perform_request(
            method, target, body=body, headers=headers, request_timeout=request_timeout
        )


def backoff_delay(
    attempt: int, base: float = RETRY_BACKOFF_BASE_S, cap: float = RETRY_BACKOFF_CAP_S
) -> float:
    """Seconds before retry ``attempt`` (1-based): min(cap, base·2^(attempt-1)), half of it jittered."""
    ceiling: float = min(cap, base * 2.0 ** (attempt - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


class BackoffTransport(Transport):
    """Retries 429 and 502-504 answers up to ``MAX_RETRIES`` times with capped exponential backoff.

    elastic-transport retries those statuses at once, without waiting, which
    turns a busy cluster's 429 into a burst of identical requests.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["retry_on_status"] = ()  # statuses are retried here, with a wait
        super().__init__(*args, **kwargs)

    def perform_request(self, method: str, target: str, **kwargs: Any) -> TransportApiResponse:
        attempt = 0
        while True:
            response = super().perform_request(method, target, **kwargs)
            if response.meta.status not in RETRY_ON_STATUS or attempt >= MAX_RETRIES:
                return _json_or_error(method, response)
            attempt += 1
            time.sleep(backoff_delay(attempt))


def _json_or_error(method: str, response: TransportApiResponse) -> TransportApiResponse:
    """Every API esbubble calls answers JSON: a success that is not (a login page, a proxy's HTML)
    becomes a ``SerializationError`` here instead of a crash where the body is read."""
    body = response.body
    if method != "HEAD" and 200 <= response.meta.status < 300 and not isinstance(body, dict | list):
        kind = response.meta.headers.get("content-type", "no content type")
        raise SerializationError(f"expected a JSON answer, got {kind}: {str(body)[:80]!r}")
    return response


def make_client(
    url: str, *, transport_class: type[Transport] = BackoffTransport, **options: Any
) -> Elasticsearch:
    """An ``Elasticsearch`` client on ``url`` that sends plain JSON media types and backs off on 429.

    ``transport_class`` replaces ``BackoffTransport`` by a subclass (the embedded engine's journaling one).
    """
    return Elasticsearch(url, node_class=PlainJsonNode, transport_class=transport_class, **options)
