"""Chunk statistics per format: how documents are cut, to check a reader change on real files.

Usage: ``python scripts/chunk_stats.py FILE_OR_DIR ... [--json]``. Reads every
file (directories recursively) with ``read_document`` and default
``IngestOptions``; prints, per source type, the number of files and chunks,
token-length percentiles and how many chunks are under 10 tokens. Files a
reader refuses are listed with their one-line error.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from esbubble.errors import IngestError
from esbubble.ingest import IngestOptions, read_document


def _files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    return found


def _percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    options = IngestOptions()
    tokens: dict[str, list[int]] = defaultdict(list)
    files: dict[str, int] = defaultdict(int)
    refused: list[str] = []
    for file in _files(args.paths):
        try:
            chunks = read_document(file, options, doc_id=file.name)
        except IngestError as error:
            refused.append(error.message)
            continue
        if chunks:
            files[chunks[0].source_type] += 1
        for chunk in chunks:
            tokens[chunk.source_type].append(chunk.token_count)
    rows = {
        kind: {
            "files": files[kind],
            "chunks": len(values),
            "min": min(values),
            "p10": _percentile(values, 0.10),
            "median": int(statistics.median(values)),
            "p90": _percentile(values, 0.90),
            "max": max(values),
            "under_10": sum(1 for v in values if v < 10),
        }
        for kind, values in sorted(tokens.items())
    }
    if args.json:
        print(json.dumps({"formats": rows, "refused": refused}, indent=2))
        return
    columns = ["files", "chunks", "min", "p10", "median", "p90", "max", "under_10"]
    print(f"| format | {' | '.join(columns)} |")
    print(f"|---|{'---|' * len(columns)}")
    for kind, row in rows.items():
        print(f"| {kind} | {' | '.join(str(row[c]) for c in columns)} |")
    for line in refused:
        print(f"refused: {line}")


if __name__ == "__main__":
    main()
