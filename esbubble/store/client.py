"""The Elasticsearch client esbubble uses, and the node class that makes it talk to any engine.

The 9.x client sends ``application/vnd.elasticsearch+json; compatible-with=9``
as content type and accept header. Real Elasticsearch 8.18+/9.x accepts it,
but OpenSearch-API engines such as the embedded osmem-server answer 406. The
node class here rewrites those headers to plain ``application/json`` /
``application/x-ndjson``; the request and response bodies are unchanged, so
it is safe against real Elasticsearch too.
"""

from __future__ import annotations

from typing import Any

from elastic_transport import HttpHeaders, Urllib3HttpNode
from elastic_transport._node import NodeApiResponse
from elastic_transport.client_utils import DEFAULT, DefaultType
from elasticsearch import Elasticsearch

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


def make_client(url: str, **options: Any) -> Elasticsearch:
    """An ``Elasticsearch`` client on ``url`` that sends plain JSON media types."""
    return Elasticsearch(url, node_class=PlainJsonNode, **options)
