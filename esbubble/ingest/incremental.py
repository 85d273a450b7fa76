"""``ingest_paths``: read files and bring the chunk index in line with them, incrementally.

Per document: new chunks are compared with the stored ``content_hash`` of
each chunk id. Added and changed chunks are indexed, vanished ones deleted,
unchanged ones not touched (their ``ingested_at`` stays).

What "atomic" means here. Elasticsearch has no multi-document transactions;
a document's replacement is made all-or-nothing by sending it as one request:

* a file that cannot be read writes nothing (readers run before any write);
* the new and changed chunks and the deletions of vanished ones go in ONE
  ``_bulk`` request (``store.chunks.replace_chunks``). If the command is
  killed (SIGTERM, SIGKILL, Ctrl-C) before the request has fully arrived, the
  engine applies none of it; once it has arrived, the engine applies all of it.
  After any interruption a document is therefore its old version or its new
  one, never half of each. osmem applies a request under one lock, so even a
  concurrent search sees one version or the other. On Elasticsearch the items
  of a request are applied shard by shard, so a search *during* the request
  can see a mix, and a node crash mid-request or an item retried after a 429
  (a second request) can leave one; re-ingesting the file repairs it;
* before writing, the stored versions of every chunk that will be
  overwritten or deleted are fetched; if some items of the request are
  refused, the old versions are indexed again and the newly added chunks
  deleted, so when ``ingest_paths`` returns the index holds the previous
  version of that document, and the failure says so;
* if the undo itself fails (the cluster went away), the failure says the
  document may be mixed and must be ingested again, which repairs it;
* a document whose request would exceed ``MAX_ATOMIC_BYTES`` (90 MiB, below
  Elasticsearch's default 100 MB request limit) is refused, not split.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from esbubble.embedding import Embedder, embedding_text, load_embedder
from esbubble.errors import BulkError, ConfigError, EngineError, IngestError
from esbubble.ingest.ids import doc_id_for, validate_doc_id
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.read import is_supported, read_chunks
from esbubble.models import Chunk, ChunkEmbedding
from esbubble.store.chunks import (
    StoredChunk,
    delete_chunks,
    get_chunks,
    index_chunks,
    replace_chunks,
    stored_chunks,
)
from esbubble.store.connection import Store


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IngestFailure(_Record):
    """One file that was not ingested, and why (one line)."""

    file: str
    reason: str


class DocumentResult(_Record):
    """What re-ingesting one document changed in the index."""

    doc_id: str
    file: str
    chunks: int
    added: int
    updated: int
    deleted: int
    unchanged: int
    warnings: list[str] = Field(
        default_factory=list, description="what the reader library (pypdf, openpyxl) warned about this file"
    )


class IngestSummary(_Record):
    """The outcome of one ``ingest_paths`` call; ``failures`` non-empty means exit non-zero."""

    documents: list[DocumentResult] = Field(default_factory=list)
    failures: list[IngestFailure] = Field(default_factory=list)
    skipped: list[str] = Field(
        default_factory=list, description="files met while walking a directory that no reader handles"
    )

    @property
    def added(self) -> int:
        return sum(d.added for d in self.documents)

    @property
    def updated(self) -> int:
        return sum(d.updated for d in self.documents)

    @property
    def deleted(self) -> int:
        return sum(d.deleted for d in self.documents)

    @property
    def unchanged(self) -> int:
        return sum(d.unchanged for d in self.documents)

    @property
    def ok(self) -> bool:
        return not self.failures


class IngestProgress(_Record):
    """Reported after each file, for a progress bar."""

    done: int
    total: int
    file: str
    status: str = Field(description="'ok' or 'failed'")


ProgressCallback = Callable[[IngestProgress], None]


class ChunkWriter(Protocol):
    """The writes a re-ingest makes; the store's bulk functions by default.

    ``replace`` is the one request that swaps a document's version; ``index`` and
    ``delete`` put the previous version back when some of its items were refused.
    """

    def replace(self, store: Store, chunks: Sequence[Chunk], delete_ids: Sequence[str]) -> None: ...
    def index(self, store: Store, chunks: Sequence[Chunk]) -> None: ...
    def delete(self, store: Store, ids: Sequence[str]) -> None: ...


class StoreWriter:
    """Writes through ``esbubble.store.chunks`` (bulk, then refresh)."""

    def replace(self, store: Store, chunks: Sequence[Chunk], delete_ids: Sequence[str]) -> None:
        replace_chunks(store, chunks, delete_ids)

    def index(self, store: Store, chunks: Sequence[Chunk]) -> None:
        index_chunks(store, chunks)

    def delete(self, store: Store, ids: Sequence[str]) -> None:
        delete_chunks(store, ids)


@dataclass(frozen=True)
class ChangePlan:
    """How a document's new chunks relate to what is stored (pure)."""

    added: list[Chunk]
    changed: list[Chunk]
    unchanged: list[str]
    vanished: list[str]


def plan_changes(
    chunks: Sequence[Chunk], stored: Mapping[str, str], *, stale: Collection[str] = ()
) -> ChangePlan:
    """Compare new chunks with stored ``chunk_id -> content_hash``.

    ``stale`` chunk ids are rewritten even when their hash matches (their
    stored ``source_path`` is not the file's, e.g. chunks indexed before
    esbubble stored it).
    """
    new_ids = {c.chunk_id for c in chunks}

    def same(chunk: Chunk) -> bool:
        return stored.get(chunk.chunk_id) == chunk.content_hash and chunk.chunk_id not in stale

    return ChangePlan(
        added=[c for c in chunks if c.chunk_id not in stored],
        changed=[c for c in chunks if c.chunk_id in stored and not same(c)],
        unchanged=[c.chunk_id for c in chunks if c.chunk_id in stored and same(c)],
        vanished=sorted(set(stored) - new_ids),
    )


def embed_chunks(chunks: Sequence[Chunk], embedder: Embedder) -> list[Chunk]:
    """``chunks``, each with its vector (``embedding_text`` of its context and text) under ``embedder``."""
    vectors = embedder.vectors([embedding_text(c.context, c.text) for c in chunks])
    return [
        c.model_copy(update={"embedding": ChunkEmbedding(model=embedder.name, vector=v)})
        for c, v in zip(chunks, vectors, strict=True)
    ]


def source_path_of(file: str | Path) -> str:
    """What ``Chunk.source_path`` holds: the file's absolute, resolved path."""
    return str(Path(file).resolve())


def check_owner(doc_id: str, source: str, stored: Mapping[str, StoredChunk]) -> None:
    """Refuse to let ``source`` take over ``doc_id`` from another file (``replace=True`` skips this)."""
    owners = sorted({s.source_path for s in stored.values() if s.source_path and s.source_path != source})
    if owners:
        raise IngestError(
            f"doc id {doc_id!r} already belongs to {owners[0]}, not to {source}; nothing was replaced",
            hint="give this file its own id with --doc-id ID or --root DIR (e.g. the folders' common "
            "parent), or pass --replace to replace the stored document",
        )


def _undo(store: Store, writer: ChunkWriter, backup: list[Chunk], added: list[str]) -> str | None:
    """Put the previous version back; return why that failed, or None."""
    try:
        if added:
            writer.delete(store, added)
        if backup:
            writer.index(store, backup)
    except EngineError as error:
        return error.message
    return None


def replace_document(
    store: Store,
    doc_id: str,
    chunks: Sequence[Chunk],
    *,
    now: datetime,
    file: str | Path = "",
    writer: ChunkWriter | None = None,
    replace: bool = False,
    embedder: Embedder | None = None,
    rewrite: bool = False,
) -> DocumentResult:
    """Make the index hold exactly ``chunks`` for ``doc_id`` (see the module doc for the guarantee).

    With ``file``, the chunks are stored with its resolved path as
    ``source_path``, and a ``doc_id`` whose stored chunks came from another
    file is refused with ``IngestError`` (two files sharing a relative path,
    e.g. ``a/readme.md`` and ``b/readme.md``, would otherwise silently replace
    each other) unless ``replace``.

    With ``embedder``, every chunk written carries its vector under that model (``embed_chunks``);
    a stored chunk whose vector was made under another model, or none, is written again even when
    its text is unchanged, and so is one with a vector when no ``embedder`` is given: the index
    holds the vectors the profile asks for, never a mix.

    With ``rewrite``, every chunk is written again even when nothing about it changed (counted as
    updated): the repair for a stored chunk damaged outside esbubble, such as a vector that no
    longer reads under its model's name.

    A bulk item failure raises ``IngestError`` after the undo; losing the
    cluster raises ``EngineError`` (after trying the undo), since no other
    document could be ingested either.
    """
    active = writer or StoreWriter()
    stored = stored_chunks(store, doc_id)
    source = source_path_of(file) if file else None
    if source is not None and not replace:
        check_owner(doc_id, source, stored)
    model = embedder.name if embedder is not None else None
    stale = [
        chunk_id
        for chunk_id, s in stored.items()
        if rewrite or (source is not None and s.source_path != source) or s.embedding_model != model
    ]
    plan = plan_changes(chunks, {chunk_id: s.content_hash for chunk_id, s in stored.items()}, stale=stale)
    stamp: dict[str, object] = {"ingested_at": now}
    if source is not None:
        stamp["source_path"] = source
    writes = [c.model_copy(update=stamp) for c in (*plan.added, *plan.changed)]
    if embedder is not None:
        writes = embed_chunks(writes, embedder)
    backup = get_chunks(store, [c.chunk_id for c in plan.changed] + plan.vanished)
    added_ids = [c.chunk_id for c in plan.added]
    try:
        if writes or plan.vanished:
            active.replace(store, writes, plan.vanished)
    except EngineError as error:
        undo_failed = _undo(store, active, backup, added_ids)
        if undo_failed is not None:
            message = (
                f"indexing failed ({error.message}) and restoring the previous version also failed "
                f"({undo_failed}); the document may be half-updated"
            )
            if not isinstance(error, BulkError):
                raise EngineError(f"{doc_id}: {message}", hint="ingest this file again") from None
            raise IngestError(message, hint="ingest this file again") from None
        if not isinstance(error, BulkError):
            raise
        raise IngestError(f"indexing failed, previous version kept: {error.message}") from None
    return DocumentResult(
        doc_id=doc_id,
        file=str(file),
        chunks=len(chunks),
        added=len(plan.added),
        updated=len(plan.changed),
        deleted=len(plan.vanished),
        unchanged=len(plan.unchanged),
    )


@dataclass(frozen=True)
class _Target:
    file: Path
    doc_id: str


def _walk(directory: Path, failures: list[IngestFailure]) -> Iterable[Path]:
    """Files under ``directory`` in sorted order; unreadable and symlinked folders become failures.

    Symlinked folders are not followed (a link can loop back to its parent), but they are
    reported, like a folder that cannot be listed, so nothing is left out silently.
    """

    def unreadable(error: OSError) -> None:
        failures.append(
            IngestFailure(file=str(error.filename), reason=f"cannot read folder: {error.strerror or error}")
        )

    for root, dirs, files in os.walk(directory, onerror=unreadable):
        kept = []
        for name in sorted(d for d in dirs if not d.startswith(".")):
            if (Path(root) / name).is_symlink():
                failures.append(
                    IngestFailure(
                        file=str(Path(root) / name),
                        reason="symlinked folder, not followed (links can loop); ingest its target directly",
                    )
                )
            else:
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            yield Path(root) / name


def collect(
    paths: Sequence[str | Path], options: IngestOptions, *, doc_id: str | None = None
) -> tuple[list[_Target], list[IngestFailure], list[str]]:
    """Files to ingest with their doc ids, plus failures (missing, duplicate ids) and skipped files.

    ``doc_id`` names the document of a lone file (``paths`` is that one file) instead of its path.

    Directories are walked in sorted order; dot-files, Office lock files
    (``~$…``) and unsupported types met there are skipped (and listed);
    folders that cannot be read and symlinked folders are failures.
    A file named explicitly is always attempted, so a bad one is a failure.
    """
    if doc_id is not None:
        return _named(paths, doc_id)
    targets: list[_Target] = []
    failures: list[IngestFailure] = []
    skipped: list[str] = []
    owners: dict[str, Path] = {}
    for given in map(Path, paths):
        if given.is_dir():
            root = options.root or given
            files = []
            for file in _walk(given, failures):
                if file.name.startswith((".", "~$")) or not is_supported(file):
                    skipped.append(str(file))
                else:
                    files.append(file)
        else:
            root = options.root or given.parent
            files = [given]
        for file in files:
            try:
                doc_id = doc_id_for(file, root)
                resolved = file.resolve()
            except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop, before Python 3.13
                why = error.strerror if isinstance(error, OSError) and error.strerror else "symlink loop"
                failures.append(IngestFailure(file=str(file), reason=f"cannot resolve the path: {why}"))
                continue
            if doc_id in owners and owners[doc_id].resolve() != resolved:
                failures.append(
                    IngestFailure(
                        file=str(file),
                        reason=f"doc id {doc_id!r} is already used by {owners[doc_id]}; "
                        "give both a common --root (e.g. their shared parent folder) so their ids differ, "
                        "or ingest this one with --doc-id",
                    )
                )
                continue
            if doc_id not in owners:
                owners[doc_id] = file
                targets.append(_Target(file=file, doc_id=doc_id))
    return targets, failures, skipped


def _named(paths: Sequence[str | Path], doc_id: str) -> tuple[list[_Target], list[IngestFailure], list[str]]:
    """``collect`` for one file given its own doc id."""
    if len(paths) != 1 or Path(paths[0]).is_dir():
        raise ValueError("a doc id names exactly one file")
    file = Path(paths[0])
    try:
        return [_Target(file=file, doc_id=validate_doc_id(doc_id))], [], []
    except IngestError as error:
        return [], [IngestFailure(file=str(file), reason=error.one_line())], []


def ingest_paths(
    store: Store,
    paths: Sequence[str | Path],
    options: IngestOptions,
    *,
    progress: ProgressCallback | None = None,
    now: datetime | None = None,
    writer: ChunkWriter | None = None,
    replace: bool = False,
    doc_id: str | None = None,
    rewrite: bool = False,
) -> IngestSummary:
    """Ingest files and directories; one failing file never stops the others.

    A document's id is ``doc_id`` for a lone file when given, else the path relative to
    ``options.root`` (default: the directory given, or a lone file's own directory). A file whose
    doc id belongs to another file in the index fails unless ``replace``; ``rewrite`` writes every
    chunk again, changed or not (see ``replace_document``).
    """
    stamp = now or datetime.now(UTC)
    targets, failures, skipped = collect(paths, options, doc_id=doc_id)
    # loaded once for every document (seconds); before any is read, so a missing extra fails first
    embedder = _embedder(options.embedding_model) if options.embedding_model and targets else None
    results: list[DocumentResult] = []
    for done, target in enumerate(targets, start=1):
        status = "ok"
        try:
            read = read_chunks(target.file, options, doc_id=target.doc_id)
            result = replace_document(
                store,
                target.doc_id,
                read.chunks,
                now=stamp,
                file=str(target.file),
                writer=writer,
                replace=replace,
                embedder=embedder,
                rewrite=rewrite,
            )
            results.append(result.model_copy(update={"warnings": list(read.warnings)}))
        except IngestError as error:
            failures.append(IngestFailure(file=str(target.file), reason=error.one_line()))
            status = "failed"
        if progress is not None:
            progress(IngestProgress(done=done, total=len(targets), file=str(target.file), status=status))
    return IngestSummary(documents=results, failures=failures, skipped=skipped)


def _embedder(name: str) -> Embedder:
    try:
        return load_embedder(name)
    except ConfigError as error:
        raise ConfigError(error.message, hint=f"{error.hint}; or unset [ingest] embedding_model") from None
