"""The plain-JSON node class, connection errors and engine info."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from elasticsearch import ApiError, Elasticsearch

from esbubble.errors import EngineError
from esbubble.store.client import make_client, plain_mimetype
from esbubble.store.connection import connect, engine_info
from esbubble.store.settings import load_settings


def test_versioned_media_types_become_plain() -> None:
    assert plain_mimetype("application/vnd.elasticsearch+json; compatible-with=9") == "application/json"
    assert (
        plain_mimetype("application/vnd.elasticsearch+x-ndjson; compatible-with=8") == "application/x-ndjson"
    )
    assert plain_mimetype("text/plain") == "text/plain"


@pytest.mark.integration
def test_stock_client_is_refused_and_ours_is_not(engine_url: str) -> None:
    stock = Elasticsearch(engine_url)
    with pytest.raises(ApiError) as refused:
        stock.index(index="plain-json", id="1", document={"a": 1})
    assert refused.value.meta.status == 406
    ours = make_client(engine_url)
    assert ours.info().body["version"]["number"]
    ours.bulk(operations=[{"index": {"_index": "plain-ndjson", "_id": "1"}}, {"a": 1}], refresh=True)
    assert ours.count(index="plain-ndjson").body["count"] == 1
    ours.indices.delete(index="plain-ndjson")


def test_unreachable_cluster_is_engine_error_without_credentials(isolated_home: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = load_settings(url=f"http://elastic:topsecret@127.0.0.1:{port}", request_timeout=2, env={})
    with pytest.raises(EngineError) as raised:
        connect(settings.url or "", settings, shown_url=settings.display_url)
    message = raised.value.one_line()
    assert message.startswith(f"cannot reach Elasticsearch at http://127.0.0.1:{port}: ")
    assert "topsecret" not in message
    assert raised.value.exit_code == 3


def test_engine_info_names_osmem_and_elasticsearch() -> None:
    osmem = {"version": {"number": "3.8.0", "distribution": "opensearch", "build_hash": "osmem"}}
    assert engine_info(osmem).model_dump() == {
        "name": "osmem-server",
        "version": "3.8.0",
        "distribution": "opensearch",
    }
    elastic = {"version": {"number": "9.5.0", "build_flavor": "default"}}
    assert engine_info(elastic).model_dump() == {
        "name": "elasticsearch",
        "version": "9.5.0",
        "distribution": "elasticsearch",
    }
