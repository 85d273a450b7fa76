"""The delivery table of docs/evaluation.md: what windows, parents, repair and the assembler add.

Usage: python scripts/eval_delivery.py [--set sample|realdocs]  (from the repository root; uses its own
temporary home and the embedded engine). Prints one Markdown row per stage combination.

``sample`` (the default, about two minutes on 2 vCPUs): the sample job with its profile.
``realdocs`` (under a minute): the real documents with the default profile at 400 tokens.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from esbubble.app.deliver import evaluate_delivery, evaluate_options
from esbubble.config import BubbleConfig, load_profile
from esbubble.ingest import IngestOptions, ingest_paths
from esbubble.queryset import QueryCase, load_queries
from esbubble.store.connection import Store, open_store
from esbubble.store.engine import stop_daemon
from esbubble.store.settings import load_settings
from esbubble.store.templates import init_indices

SAMPLE = Path("data/sample")
REALDOCS = Path("data/realdocs")


@dataclass(frozen=True)
class EvalSet:
    """One in-repo evaluation set: its profile, queries, documents and their root."""

    config: BubbleConfig
    queries: Path
    documents: list[Path]
    root: Path


def eval_set(name: str) -> EvalSet:
    if name == "realdocs":
        docs = REALDOCS / "docs"
        return EvalSet(
            BubbleConfig().with_overrides(token_budget=400),
            REALDOCS / "queries.jsonl",
            sorted(p for p in docs.iterdir() if p.is_file()),
            docs,
        )
    documents = [SAMPLE / name for name in ("quote_job.xlsx", "specification.pdf", "site_memo.md")]
    return EvalSet(load_profile(SAMPLE / "profile.toml"), SAMPLE / "queries.jsonl", documents, SAMPLE)


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--set", choices=("sample", "realdocs"), default="sample", dest="name")
    chosen = eval_set(parser.parse_args().name)
    base = chosen.config
    cases = load_queries(chosen.queries).cases
    documents = chosen.documents
    options = IngestOptions.of(base, root=chosen.root)
    print("| stages | bubble tokens | delivered tokens | prompt tokens | gold recall (bubble) "
          "| gold recall (delivered) | swaps | neighbours added |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as home:
        settings = load_settings(home=home)
        with open_store(settings) as store:
            init_indices(store)
            ingest_paths(store, documents, options)
        # Measured after a restart, as eval_all.sh does (docs/operations.md, "Engine statistics").
        stop_daemon(settings)
        with open_store(settings) as store:
            _rows(store, cases, base)
        stop_daemon(settings)


def _rows(store: Store, cases: Sequence[QueryCase], base: BubbleConfig) -> None:
    """One table row per stage combination and ``max_chunks``."""
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
