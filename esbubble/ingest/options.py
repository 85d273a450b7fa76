"""``IngestOptions``: how documents are cut into chunks."""

from __future__ import annotations

from pathlib import Path

from pydantic import ConfigDict, Field

from esbubble.config import BubbleConfig, BucketsConfig, Encoding, IngestParams


class IngestOptions(IngestParams):
    """Reader settings shared by every format: the profile's ``[ingest]`` table, its encoding and
    its bucket map.

    ``buckets`` carries the profile's ``[buckets.map]`` so chunks are stored
    with the bucket the budget gates will charge them to. ``root`` anchors
    doc ids (the path relative to it); without it each path argument is its
    own root (a directory's files are named relative to the directory, a
    single file by its name). Built in code, not read from a profile, so values are coerced as
    before the ``[ingest]`` table existed (``root="docs"`` is a path); the table's own bounds hold.
    """

    model_config = ConfigDict(strict=False)

    encoding: Encoding = "o200k_base"
    buckets: BucketsConfig = Field(default_factory=BucketsConfig)
    root: Path | None = None

    @classmethod
    def of(cls, config: BubbleConfig, *, root: Path | None = None) -> IngestOptions:
        """The options a profile asks for: its ``[ingest]`` table, encoding and bucket map."""
        return cls(**dict(config.ingest), encoding=config.bubble.encoding, buckets=config.buckets, root=root)
