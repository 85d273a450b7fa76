"""The delivery table of docs/evaluation.md: what windows, parents, repair and the assembler add.

Usage: python scripts/eval_delivery.py  (from the repository root; uses its own temporary home and
the embedded engine; about two minutes on 2 vCPUs). Prints one Markdown row per stage combination.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from esbubble.app.deliver import evaluate_delivery, evaluate_options
from esbubble.config import load_profile
from esbubble.ingest import IngestOptions, ingest_paths
from esbubble.queryset import load_queries
from esbubble.store.connection import open_store
from esbubble.store.settings import load_settings
from esbubble.store.templates import init_indices

SAMPLE = Path("data/sample")
RUNS: dict[str, dict[str, bool]] = {
    "bubble only": {},
    "window": {"window": True},
    "parent": {"parent": True},
    "repair": {"repair": True},
    "repair + window": {"repair": True, "window": True},
    "repair + window + assemble": {"repair": True, "window": True, "assemble": True},
}


def _num(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def main() -> None:
    base = load_profile(SAMPLE / "profile.toml")
    cases = load_queries(SAMPLE / "queries.jsonl").cases
    documents = [SAMPLE / name for name in ("quote_job.xlsx", "specification.pdf", "site_memo.md")]
    options = IngestOptions(encoding=base.bubble.encoding, buckets=base.buckets, root=SAMPLE)
    print("| stages | bubble tokens | delivered tokens | prompt tokens | gold recall (bubble) "
          "| gold recall (delivered) | swaps | neighbours added |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as home, open_store(load_settings(home=home)) as store:
        init_indices(store)
        ingest_paths(store, documents, options)
        for max_chunks in (10, 4):
            for name, flags in RUNS.items():
                config = evaluate_options(base.with_overrides(max_chunks=max_chunks), **flags)
                ev = evaluate_delivery(store, cases, config, now=datetime(2026, 1, 1, tzinfo=UTC))
                cells = [
                    f"{name} (max_chunks={max_chunks})",
                    _num(ev.mean_bubble_tokens, 0),
                    _num(ev.mean_delivered_tokens, 0),
                    _num(ev.mean_prompt_tokens, 0),
                    _num(ev.mean_bubble_recall, 3),
                    _num(ev.mean_delivered_recall, 3),
                    str(ev.swaps),
                    str(ev.neighbours_added),
                ]
                print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
