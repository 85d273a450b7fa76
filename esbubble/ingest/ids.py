"""Derived identities: doc ids, chunk ids, parent ids and content hashes.

Ids are hashes of what a chunk *is* (its document and structural locator),
never counters, so re-reading an unchanged file yields the same ids and an
edited file keeps the ids of the parts that did not move.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path, PurePath

from esbubble.errors import IngestError

_SEP = "\x1f"
MAX_DOC_ID_BYTES = 512


def _short_hash(*parts: str) -> str:
    return hashlib.sha256(_SEP.join(parts).encode("utf-8")).hexdigest()[:20]


def chunk_id(doc_id: str, locator: str) -> str:
    """A chunk's id: doc id + structural locator (e.g. ``sheet=Pricing/row=12/part=0``)."""
    return _short_hash("chunk", doc_id, locator)


def parent_id(doc_id: str, section: str) -> str:
    """The id of a chunk's section, shared by all chunks of that section of that document."""
    return _short_hash("section", doc_id, section)


def content_hash(fields: dict[str, object]) -> str:
    """SHA-256 over the text and the metadata that changes what a reader or a gate sees."""
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def doc_id_for(path: Path, root: Path) -> str:
    """Stable doc id: the POSIX path of ``path`` relative to ``root`` (the name if outside it)."""
    resolved, base = path.resolve(), root.resolve()
    try:
        relative: PurePath = resolved.relative_to(base)
    except ValueError:
        relative = PurePath(resolved.name)
    return relative.as_posix() if str(relative) != "." else resolved.name


def _doc_id_problem(doc_id: str) -> str | None:
    if not doc_id.strip():
        return "it is empty"
    if len(doc_id.encode("utf-8")) > MAX_DOC_ID_BYTES:
        return f"it is longer than {MAX_DOC_ID_BYTES} bytes"
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in doc_id):
        return "it contains control characters"
    if "*" in doc_id or "?" in doc_id:
        return "it contains a wildcard"
    if doc_id.startswith("/") or any(part in (".", "..") for part in doc_id.split("/")):
        return "it is an absolute path or has '.'/'..' segments"
    return None


def validate_doc_id(doc_id: str) -> str:
    """A doc id from user input: no wildcards, path tricks or control characters; at most 512 bytes.

    Doc ids only ever reach the cluster inside exact ``term`` filters and
    hashed chunk ids, but a wildcard or ``..`` in one is always a mistake.
    """
    problem = _doc_id_problem(doc_id)
    if problem is not None:
        raise IngestError(
            f"invalid doc id {doc_id[:80]!r}: {problem}",
            hint="use a relative, path-like id such as 'quotes/job-12.xlsx'",
        )
    return doc_id
