"""Shared fixtures. Every test runs with its own ESBUBBLE_HOME, never the user's."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import NotFoundError as EsNotFoundError

from esbubble.store.connection import Store, connect
from esbubble.store.settings import Settings
from esbubble.store.templates import COMPONENTS, INDEX_TEMPLATES, init_indices

ENGINE_ENV = "ESBUBBLE_TEST_ENGINE"
ES_IMAGE = "docker.elastic.co/elasticsearch/elasticsearch:9.5.0"
_CLUSTER_ENV = (
    "ELASTICSEARCH_URL",
    "ELASTICSEARCH_API_KEY",
    "ELASTICSEARCH_USERNAME",
    "ELASTICSEARCH_PASSWORD",
    "ELASTICSEARCH_CA_CERTS",
    "ELASTICSEARCH_SSL_ASSERT_FINGERPRINT",
    "ESBUBBLE_PREFIX",
    "ESBUBBLE_CONFIG",
)
_TEST_CLUSTER_URL = pytest.StashKey[str | None]()


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Keep tests out of the user's data directory and away from any configured cluster."""
    home = tmp_path_factory.mktemp("esbubble-home")
    monkeypatch.setenv("ESBUBBLE_HOME", str(home))
    for variable in _CLUSTER_ENV:
        monkeypatch.delenv(variable, raising=False)
    yield home
    if (home / "engine" / "daemon.json").exists():  # a command started the embedded engine: stop it
        from esbubble.store.engine import stop_daemon

        stop_daemon(Settings(home=home))


def pytest_configure(config: pytest.Config) -> None:
    # Read before any test's isolated_home hides the cluster settings.
    config.stash[_TEST_CLUSTER_URL] = os.environ.get("ELASTICSEARCH_URL")


@pytest.fixture(scope="session")
def engine_url(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One engine per test session, chosen by ESBUBBLE_TEST_ENGINE: embedded (default) | docker | url."""
    kind = os.environ.get(ENGINE_ENV, "embedded")
    if kind == "embedded":
        from esbubble.store.engine import launch_osmem, stop_process

        log = tmp_path_factory.mktemp("osmem") / "osmem.log"
        process, url = launch_osmem(None, log=log, detached=False)
        yield url
        stop_process(process)
    elif kind == "docker":
        yield from _docker_engine()
    elif kind == "url":
        url = pytestconfig.stash[_TEST_CLUSTER_URL]
        if not url:
            pytest.skip(f"{ENGINE_ENV}=url needs ELASTICSEARCH_URL")
        yield url
    else:
        raise pytest.UsageError(f"{ENGINE_ENV}={kind!r}: use embedded, docker or url")


def _docker_engine() -> Iterator[str]:
    import docker
    import requests

    try:
        docker.from_env().ping()
    except (docker.errors.DockerException, requests.RequestException, OSError) as error:
        pytest.skip(f"{ENGINE_ENV}=docker but no Docker engine is reachable: {error}")
    from testcontainers.elasticsearch import ElasticSearchContainer

    image = os.environ.get("ESBUBBLE_TEST_ES_IMAGE", ES_IMAGE)
    with ElasticSearchContainer(image, mem_limit="1g") as container:
        yield container.get_url()


def _drop_prefix(store: Store) -> None:
    client, prefix = store.client, store.names.prefix
    names = list(client.indices.get(index=f"{prefix}-*", expand_wildcards="all").body)
    for name in names:
        client.indices.delete(index=name)
    for short in INDEX_TEMPLATES:
        with contextlib.suppress(EsNotFoundError):
            client.indices.delete_index_template(name=f"{prefix}-{short}")
    for short in COMPONENTS:
        with contextlib.suppress(EsNotFoundError):
            client.cluster.delete_component_template(name=f"{prefix}-{short}")


@pytest.fixture
def bare_store(engine_url: str, isolated_home: Path) -> Iterator[Store]:
    """A Store on the session engine with a fresh, unique prefix and nothing installed yet."""
    settings = Settings(url=engine_url, prefix=f"t{uuid.uuid4().hex[:12]}", home=isolated_home)
    store = connect(engine_url, settings, shown_url=settings.display_url)
    try:
        yield store
    finally:
        _drop_prefix(store)
        store.client.close()


@pytest.fixture
def store(bare_store: Store) -> Store:
    """A Store on fresh, uniquely prefixed indices with the templates and chunk index installed."""
    init_indices(bare_store)
    return bare_store
