"""Ingestion: documents → structure-keeping chunks → the chunk index.

Readers (``read_document``) are pure of Elasticsearch; ``ingest_paths``
re-ingests incrementally through the store.
"""

from esbubble.ingest.options import IngestOptions
from esbubble.ingest.read import READERS, read_document

__all__ = ["READERS", "IngestOptions", "read_document"]
