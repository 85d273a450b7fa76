"""esbubble: structure- and diversity-aware context bubbles on Elasticsearch.

The public names below are imported on first use (module ``__getattr__``), so
``import esbubble`` — and with it every ``esbubble`` command, even ``--help`` —
does not pay for pydantic models it does not touch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from esbubble.config import BubbleConfig, load_profile, parse_config
    from esbubble.errors import EsbubbleError
    from esbubble.models import Bubble, Candidate, Chunk, RunManifest, TraceRecord

__version__ = "0.1.0"

_LAZY = {
    "Bubble": "esbubble.models",
    "BubbleConfig": "esbubble.config",
    "Candidate": "esbubble.models",
    "Chunk": "esbubble.models",
    "EsbubbleError": "esbubble.errors",
    "RunManifest": "esbubble.models",
    "TraceRecord": "esbubble.models",
    "load_profile": "esbubble.config",
    "parse_config": "esbubble.config",
}

__all__ = [
    "Bubble",
    "BubbleConfig",
    "Candidate",
    "Chunk",
    "EsbubbleError",
    "RunManifest",
    "TraceRecord",
    "__version__",
    "load_profile",
    "parse_config",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'esbubble' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
