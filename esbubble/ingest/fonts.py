"""What a font's name says about its text: Adobe's Symbol font, or a monospaced (code) font.

Shared by the PDF reader (a run's ``/BaseFont``, ``ABCDEF+SymbolMT``, ``ZGJYKY+BeraSansMono-Bold``)
and the Word reader (a run's or style's font, ``Symbol``, ``Courier New``).
"""

from __future__ import annotations

import re

_MONOSPACE = re.compile(r"courier|consolas|menlo|monaco|mono|lucida console|inconsolata", re.IGNORECASE)


def is_symbol_font(name: str) -> bool:
    """Whether a font is Adobe's Symbol: ``Symbol`` in Word, ``SymbolMT`` or a subset of it
    (``ABCDEF+Symbol``, a PDF's ``/BaseFont``) in a PDF."""
    return name.lstrip("/").rsplit("+", 1)[-1].strip().lower() in {"symbol", "symbolmt"}


def is_monospace(name: str) -> bool:
    """Whether a font sets every character the same width, as code is set (Courier, Consolas, Menlo,
    DejaVu Sans Mono, BeraSansMono…)."""
    return _MONOSPACE.search(name) is not None
