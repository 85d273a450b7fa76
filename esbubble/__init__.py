"""esbubble: structure- and diversity-aware context bubbles on Elasticsearch."""

from esbubble.config import BubbleConfig, load_profile, parse_config
from esbubble.errors import EsbubbleError
from esbubble.models import Bubble, Candidate, Chunk, RunManifest, TraceRecord

__version__ = "0.1.0"

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
