"""``open_store``: one connected ``Store`` per invocation, external cluster or embedded engine."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, cast

from elastic_transport import Transport
from elasticsearch import Elasticsearch

from esbubble.errors import EngineError
from esbubble.models import EngineInfo
from esbubble.store.client import MAX_RETRIES, RETRY_BACKOFF_BASE_S, RETRY_BACKOFF_CAP_S, make_client
from esbubble.store.engine import engine_dir, engine_session
from esbubble.store.errors import Failure, engine_errors
from esbubble.store.journal import Journal, JournalingTransport, journal_dir
from esbubble.store.names import IndexNames
from esbubble.store.settings import Settings


@dataclass(frozen=True)
class Store:
    """What every store function needs: a client, the index names, and what is on the other end."""

    client: Elasticsearch
    names: IndexNames
    engine: EngineInfo
    display_url: str
    settings: Settings

    def at_chunk_index(self, index: str) -> Store:
        """This store with chunks read from ``index``: a stored run's manifest names the chunk index
        it searched, which need not be this command's."""
        return replace(self, names=self.names.with_chunk_index(index))


def engine_info(info: dict[str, Any]) -> EngineInfo:
    """Name, version and API flavour from ``GET /``; osmem announces itself in ``build_hash``."""
    version = info.get("version", {})
    distribution = str(version.get("distribution") or "elasticsearch")
    name = "osmem-server" if version.get("build_hash") == "osmem" else distribution
    return EngineInfo(name=name, version=str(version.get("number", "unknown")), distribution=distribution)


def _scrub(text: str, settings: Settings) -> str:
    """Remove anything secret from an error text before it is shown."""
    secrets = [s.get_secret_value() for s in (settings.api_key, settings.password) if s is not None]
    if settings.url:
        secrets.append(settings.url)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _client_options(settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {
        "request_timeout": settings.request_timeout,
        "max_retries": MAX_RETRIES,
        "retry_on_timeout": True,
        "retry_backoff_base": RETRY_BACKOFF_BASE_S,
        "retry_backoff_cap": RETRY_BACKOFF_CAP_S,
    }
    if settings.api_key is not None:
        options["api_key"] = settings.api_key.get_secret_value()
    elif settings.username is not None and settings.password is not None:
        options["basic_auth"] = (settings.username, settings.password.get_secret_value())
    if settings.ca_certs is not None:
        options["ca_certs"] = str(settings.ca_certs)
    if not settings.verify_certs:
        options["verify_certs"] = False
        options["ssl_show_warn"] = False
    if settings.ssl_assert_fingerprint:
        options["ssl_assert_fingerprint"] = settings.ssl_assert_fingerprint
    return options


def _connect_failed(shown_url: str, settings: Settings) -> Callable[[Failure], EngineError]:
    """Why ``GET /`` failed: credentials refused, another refusal, or no answer at all."""

    def to_error(failure: Failure) -> EngineError:
        if failure.status == 401:
            return EngineError(
                f"Elasticsearch at {shown_url} refused the credentials",
                hint="check ELASTICSEARCH_API_KEY or ELASTICSEARCH_USERNAME/ELASTICSEARCH_PASSWORD",
            )
        reason = _scrub(failure.reason, settings)
        if failure.answered:
            return EngineError(
                f"Elasticsearch at {shown_url} answered status {failure.status}: {reason}",
                hint="check the user's privileges (GET / needs the monitor cluster privilege)"
                if failure.status == 403
                else "check that the URL points at Elasticsearch 8.18+ or 9.x",
            )
        return EngineError(
            f"cannot reach Elasticsearch at {shown_url}: {reason}",
            hint="is it running? set ELASTICSEARCH_URL or --url, or unset it to use the embedded engine",
        )

    return to_error


def connect(url: str, settings: Settings, *, shown_url: str, journal: Journal | None = None) -> Store:
    """A ``Store`` on ``url``, after checking that the engine answers; writes journaled if ``journal``."""
    options = _client_options(settings)
    if journal is not None:
        options["transport_class"] = cast(
            type[Transport], functools.partial(JournalingTransport, journal=journal)
        )
    client = make_client(url, **options)
    try:
        with engine_errors(_connect_failed(shown_url, settings)):
            info = client.info().body
    except EngineError:
        client.close()
        raise
    names = IndexNames.for_prefix(settings.prefix)
    return Store(
        client=client, names=names, engine=engine_info(info), display_url=shown_url, settings=settings
    )


@contextlib.contextmanager
def open_store(settings: Settings) -> Iterator[Store]:
    """Connect to the configured cluster, or to the embedded engine when no URL is set.

    Embedded: the background engine, started by the first command that needs
    it and reused by the next ones; every write is journaled under
    ``ESBUBBLE_HOME`` before it is sent (``esbubble.store.engine``).
    """
    with engine_errors(_stopped_answering(settings)), _store_session(settings) as store:
        yield store


def _stopped_answering(settings: Settings) -> Callable[[Failure], EngineError]:
    """A request the command did not expect to fail (an answer that is not JSON, a connection lost
    mid-command, an engine that died before its data was saved): one line, exit 3."""

    def to_error(failure: Failure) -> EngineError:
        reason = _scrub(failure.reason, settings)
        if settings.url is None:
            return EngineError(
                f"the embedded engine stopped answering: {reason}",
                hint="writes since its last snapshot may be lost; the next command starts it again",
            )
        return EngineError(
            f"the cluster at {settings.display_url} stopped answering as expected: {reason}",
            hint="check that it is running and reachable",
        )

    return to_error


@contextlib.contextmanager
def _store_session(settings: Settings) -> Iterator[Store]:
    with contextlib.ExitStack() as stack:
        if settings.url is not None:
            store = connect(settings.url, settings, shown_url=settings.display_url)
        else:
            url = stack.enter_context(engine_session(settings))
            journal = Journal(journal_dir(engine_dir(settings.home)))
            store = connect(url, settings, shown_url=f"embedded ({url})", journal=journal)
        stack.callback(store.client.close)
        yield store
