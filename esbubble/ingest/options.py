"""``IngestOptions``: how documents are cut into chunks."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from esbubble.config import BucketsConfig, Encoding


class IngestOptions(BaseModel):
    """Reader settings shared by every format.

    ``buckets`` carries the profile's ``[buckets.map]`` so chunks are stored
    with the bucket the budget gates will charge them to. ``root`` anchors
    doc ids (the path relative to it); without it each path argument is its
    own root (a directory's files are named relative to the directory, a
    single file by its name).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    encoding: Encoding = "o200k_base"
    max_chunk_tokens: int = Field(
        default=320, ge=16, le=8192, description="longer rows/paragraphs become continuation chunks"
    )
    min_chunk_tokens: int = Field(
        default=12,
        ge=0,
        le=1024,
        description="shorter paragraphs join the next (or last) paragraph of their section; 0 keeps them",
    )
    include_hidden_sheets: bool = False
    buckets: BucketsConfig = Field(default_factory=BucketsConfig)
    root: Path | None = None
