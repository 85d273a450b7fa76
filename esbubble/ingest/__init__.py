"""Ingestion: documents → structure-keeping chunks → the chunk index.

Readers (``read_document``) are pure of Elasticsearch; ``ingest_paths``
re-ingests incrementally through the store.
"""

from esbubble.ingest.incremental import (
    DocumentResult,
    IngestFailure,
    IngestProgress,
    IngestSummary,
    ingest_paths,
    replace_document,
)
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.read import READERS, FileRead, read_document, read_file

__all__ = [
    "READERS",
    "DocumentResult",
    "FileRead",
    "IngestFailure",
    "IngestOptions",
    "IngestProgress",
    "IngestSummary",
    "ingest_paths",
    "read_document",
    "read_file",
    "replace_document",
]
