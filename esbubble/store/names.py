"""Index and alias names, all derived from one validated prefix."""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from esbubble.errors import ConfigError

_PREFIX = re.compile(r"[a-z0-9][a-z0-9_-]{0,47}")
# One concrete index or alias: Elasticsearch's naming rules, and no wildcard, comma or
# date-math that would let a single-index operation reach several indices.
_INDEX = re.compile(r"[a-z0-9][a-z0-9_.+-]{0,254}")
CHUNKS_VERSION = 1


def validate_prefix(prefix: str) -> str:
    """A prefix is lowercase letters, digits, ``-`` and ``_`` (no wildcards, commas or paths)."""
    if not _PREFIX.fullmatch(prefix):
        raise ConfigError(
            f"invalid index prefix {prefix!r}",
            hint="use 1-48 lowercase letters, digits, '-' or '_', starting with a letter or digit",
        )
    return prefix


def validate_index_name(name: str) -> str:
    """A user-given chunk index: one lowercase Elasticsearch name, never a pattern or a list."""
    if not _INDEX.fullmatch(name) or name in {".", ".."}:
        raise ConfigError(
            f"invalid index name {name!r}",
            hint="use one index or alias: lowercase letters, digits, '-', '_', '.', '+'; "
            "no wildcards, commas or paths",
        )
    return name


class IndexNames(BaseModel):
    """The names esbubble uses for one prefix: aliases to read, concrete indices to write."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefix: str
    chunks_override: str | None = None

    @classmethod
    def for_prefix(cls, prefix: str) -> IndexNames:
        return cls(prefix=validate_prefix(prefix))

    def with_chunk_index(self, index: str | None) -> IndexNames:
        """These names with chunks read from and written to ``index`` (``--index``) instead of the alias.

        The prefix's audit aliases and indices (``<prefix>-traces``, ``<prefix>-runs`` and the
        monthly indices behind them) are refused: chunks written there would widen the strict
        audit mapping and put chunks into the audit trail.
        """
        if index is None:
            return self
        name = validate_index_name(index)
        if self.is_audit_name(name):
            raise ConfigError(
                f"--index {name!r} is esbubble's audit trail (traces/runs of prefix {self.prefix!r}), "
                "not a chunk index",
                hint=f"drop --index to use {self.prefix}-chunks, or name another index",
            )
        return self.model_copy(update={"chunks_override": name})

    def is_audit_name(self, name: str) -> bool:
        """Is ``name`` one of this prefix's audit aliases or an index their templates would match."""
        return any(name == alias or name.startswith(f"{alias}-") for alias in (self.traces, self.runs))

    @property
    def chunks(self) -> str:
        """The alias (or ``--index``) every chunk read and write goes through."""
        return self.chunks_override or f"{self.prefix}-chunks"

    @property
    def chunks_index(self) -> str:
        """The concrete chunk index behind the alias."""
        return f"{self.prefix}-chunks-v{CHUNKS_VERSION}"

    @property
    def traces(self) -> str:
        return f"{self.prefix}-traces"

    @property
    def runs(self) -> str:
        return f"{self.prefix}-runs"

    @property
    def pattern(self) -> str:
        """Every index this prefix owns, for export and listing."""
        return f"{self.prefix}-*"

    def traces_index(self, timestamp: datetime) -> str:
        """The monthly trace index a record with this timestamp goes to."""
        return f"{self.prefix}-traces-{timestamp:%Y.%m}"

    def runs_index(self, timestamp: datetime) -> str:
        return f"{self.prefix}-runs-{timestamp:%Y.%m}"
