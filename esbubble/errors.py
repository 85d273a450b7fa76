"""The exception tree. Every user-facing failure is an ``EsbubbleError``.

Each error knows its one-line message and its exit code; the CLI prints the
message on stderr and exits with the code. Only bugs produce tracebacks.

Exit codes: 1 user mistake (bad config, missing file, unknown run id),
2 usage error (bad flags), 3 the cluster is unreachable or refusing,
4 audit records could be neither written nor spooled (the result was printed).
"""

from __future__ import annotations


class EsbubbleError(Exception):
    """Base of all errors esbubble raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The message as printed by the CLI: what went wrong, then how to fix it."""
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConfigError(EsbubbleError):
    """A profile, flag value or setting is invalid."""


class UsageError(EsbubbleError):
    """The command line itself is wrong (unknown flag, missing argument)."""

    exit_code = 2


class InputError(EsbubbleError):
    """A query, query set or input file cannot be used as given."""


class NotFoundError(EsbubbleError):
    """A run id, batch id, index or file does not exist."""


class TokenizerError(EsbubbleError):
    """The offline tokenizer vocabulary is missing or does not match its hash."""


class IngestError(EsbubbleError):
    """One document could not be read or indexed."""


class EngineError(EsbubbleError):
    """The search engine is unreachable, refused a request or could not start."""

    exit_code = 3


class BulkError(EngineError):
    """Some bulk items failed; ``errors`` holds one entry per failed item."""

    def __init__(self, message: str, errors: list[dict[str, object]], *, hint: str | None = None) -> None:
        self.errors = errors
        super().__init__(message, hint=hint)


class AuditLostError(EsbubbleError):
    """Audit records reached neither the cluster nor the local spool; raised after the result is shown."""

    exit_code = 4
