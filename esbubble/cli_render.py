"""How the CLI shows results to people: rich tables and short summaries.

Kept apart from ``cli.py`` so commands stay a few lines each, and so the
``--json`` forms (built in the commands) and the human forms cannot drift into
one tangled function.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table as RichTable

from esbubble.report import Table


def console() -> Console:
    """A console on the current stdout (tests swap it), wide enough for tables when not a TTY."""
    width = None if sys.stdout.isatty() else max(shutil.get_terminal_size((140, 40)).columns, 140)
    return Console(file=sys.stdout, width=width, highlight=False, soft_wrap=False)


def emit_json(payload: Any) -> None:
    """One JSON document on stdout, UTF-8, keys in the order given (a stable contract)."""
    click.echo(json.dumps(payload, ensure_ascii=False, indent=2, default=str))


def print_table(table: Table) -> None:
    """A plain ``report.Table`` as a rich table, first column left-aligned, the rest right."""
    rich = RichTable(title=table.title, title_justify="left")
    for i, column in enumerate(table.columns):
        rich.add_column(column, justify="left" if i == 0 else "right", overflow="fold")
    for row in table.rows:
        rich.add_row(*row)
    console().print(rich)


def print_tables(tables: Sequence[Table]) -> None:
    for table in tables:
        print_table(table)


def preview(text: str, width: int = 60) -> str:
    """The first ``width`` characters of a chunk on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"
