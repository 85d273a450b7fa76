"""The one place where the Elasticsearch client's exceptions become esbubble errors.

Every store function sends its requests inside ``engine_errors(to_error)``:
a request the engine refused (``ApiError``) or never answered
(``TransportError``) reaches ``to_error`` as a plain ``Failure`` (status,
reason, the client's own wording), and ``to_error`` returns the one-line
esbubble error to raise (see ``esbubble.errors``), naming what failed and how
to fix it. Where a failure is an expected outcome rather than an error (an
index another command created first, a record already on the cluster),
``tolerating(accept)`` records it and lets the caller go on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError

from esbubble.errors import EsbubbleError

CLIENT_ERRORS: tuple[type[Exception], ...] = (ApiError, TransportError)


@dataclass(frozen=True, slots=True)
class Failure:
    """One request that failed: refused by the engine (``status`` set) or not answered (``status`` None)."""

    status: int | None
    reason: str  # the engine's error type (e.g. index_not_found_exception), or why there was no answer
    detail: str  # the client's whole wording: status, type and root cause
    body: object = None  # the engine's error body, when it answered
    timed_out: bool = False  # no answer within the request timeout, after the retries

    @property
    def answered(self) -> bool:
        return self.status is not None

    @property
    def index_missing(self) -> bool:
        """Whether the engine said the index does not exist."""
        return "index_not_found" in str(self.body if self.body else self.reason)


def failure_of(error: Exception) -> Failure:
    """The ``Failure`` an exception of the client describes."""
    if isinstance(error, ApiError):
        return Failure(
            status=error.meta.status, reason=str(error.message), detail=str(error), body=error.body
        )
    return Failure(
        status=None, reason=str(error), detail=str(error), timed_out=isinstance(error, ConnectionTimeout)
    )


@contextlib.contextmanager
def engine_errors(to_error: Callable[[Failure], EsbubbleError | None]) -> Iterator[None]:
    """Raise ``to_error(failure)`` for a request of the block that fails; a None leaves the client's
    exception to an outer handler (``open_store`` turns any left into an ``EngineError``)."""
    try:
        yield
    except CLIENT_ERRORS as error:
        mapped = to_error(failure_of(error))
        if mapped is None:
            raise
        raise mapped from None


@dataclass(slots=True)
class Tolerated:
    """What ``tolerating`` caught: the failure it accepted, or None when the block succeeded."""

    failure: Failure | None = None


def always(_: Failure) -> bool:
    """Every failure is accepted (best-effort requests)."""
    return True


@contextlib.contextmanager
def tolerating(accept: Callable[[Failure], bool]) -> Iterator[Tolerated]:
    """Leave the block at a failure ``accept`` takes (kept in the yielded ``Tolerated``); others propagate."""
    outcome = Tolerated()
    try:
        yield outcome
    except CLIENT_ERRORS as error:
        failure = failure_of(error)
        if not accept(failure):
            raise
        outcome.failure = failure
