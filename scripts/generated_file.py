"""Write a generated file, or with ``--check`` say whether it is up to date (shared by the generators)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def write_or_check(
    out: Path,
    render: Callable[[], str],
    *,
    summary: Callable[[str], str],
    argv: Sequence[str] | None,
    doc: str,
) -> int:
    """``main`` of a generator: write ``render()`` to ``out``, or exit 1 under ``--check`` when it differs."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the file differs from what would be written"
    )
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            print(f"{out} is out of date: run python scripts/{Path(sys.argv[0]).name}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({summary(text)})")
    return 0
