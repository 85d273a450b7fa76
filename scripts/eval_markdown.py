"""Print the Markdown tables of docs/evaluation.md from `esbubble eval --json` output.

Usage: esbubble eval QUERYSET --json | python scripts/eval_markdown.py
(Table 1, Table 1b, gold recall per category, the retrieval ceiling, gold by engine rank, `full`
head to head with `engine_topk` and every gold item only `engine_topk` holds, and the budget sweep
when `--sweep` was given, formatted as `esbubble eval` prints them; a `|` in a cell is escaped.)
"""

from __future__ import annotations

import json
import sys

from esbubble.app.evaluate import Evaluation, evaluation_tables

WANTED = (
    "Table 1 ",
    "Table 1b",
    "full against engine_topk",
    "Gold only engine_topk holds",
    "Gold recall per category",
    "Retrieval",
    "Gold by engine rank",
    "Budget sweep",
)


def main() -> None:
    payload = json.load(sys.stdin)
    payload.pop("delivery", None)
    payload.pop("problems", None)  # bad query-set lines, reported by `esbubble eval` itself
    evaluation = Evaluation.model_validate(payload)
    for table in evaluation_tables(evaluation):
        if not table.title.startswith(WANTED):
            continue
        print(f"**{table.title}**\n")
        print("| " + " | ".join(table.columns) + " |")
        print("|" + "---|" * len(table.columns))
        for row in table.rows:
            print("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        print()


if __name__ == "__main__":
    main()
