"""Query sets: JSONL or YAML files of queries with their gold evidence.

A bad entry does not sink the set: it is reported with its line number
(JSONL) or entry number (YAML) in ``QuerySet.problems`` and the other queries
still load. The caller decides what problems mean; every CLI command reports
each one, runs the other queries and exits 1 at the end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from esbubble.errors import InputError, NotFoundError
from esbubble.text import query_length_problem

CATEGORIES: tuple[str, ...] = ("narrow_fact", "multi_facet", "cross_sheet", "table_dependent")


class QueryCase(BaseModel):
    """One query and its gold (both may be empty).

    ``gold`` holds the chunk ids a complete answer needs (they pin one ingest);
    ``evidence`` holds short exact phrases a selected chunk must contain
    (compared case-insensitively, whitespace collapsed), so re-chunking the
    documents does not invalidate it. Gold recall counts both
    (``esbubble.core.metrics.gold_recall``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    category: str | None = Field(default=None, description=f"e.g. one of {', '.join(CATEGORIES)}")
    gold: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)

    @field_validator("evidence")
    @classmethod
    def _phrases(cls, value: list[str]) -> list[str]:
        if any(not phrase.strip() for phrase in value):
            raise ValueError("an evidence phrase is blank")
        return value

    @field_validator("query")
    @classmethod
    def _text(cls, value: str) -> str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("not valid text (a lone surrogate escape such as \\ud800)") from None
        if not value.strip():
            raise ValueError("the query is blank")
        too_long = query_length_problem(value)
        if too_long:
            raise ValueError(too_long)
        return value


class QuerySet(BaseModel):
    """The cases that loaded, and one line per entry that did not."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    cases: list[QueryCase]
    problems: list[str] = Field(default_factory=list)


def _why(error: ValidationError) -> str:
    first = error.errors()[0]
    key = ".".join(str(part) for part in first["loc"]) or "entry"
    if first["type"] == "extra_forbidden":
        return f"unknown key '{key}' (allowed: id, query, category, gold, evidence)"
    if first["type"] == "missing":
        return f"missing '{key}'"
    return f"invalid '{key}': {first['msg']}"


def _entries(path: Path, text: str) -> list[tuple[str, Any]]:
    """``(where, raw entry)`` pairs; JSON errors become entries that fail validation with a reason."""
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise InputError(f"{path}: not valid YAML ({error})".replace("\n", " ")) from None
        if isinstance(data, dict) and "queries" in data:
            data = data["queries"]
        if not isinstance(data, list):
            raise InputError(f"{path}: expected a list of queries (or a 'queries:' list)")
        return [(f"entry {n}", item) for n, item in enumerate(data, start=1)]
    entries: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entries.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as error:
            entries.append((f"line {number}", InputError(f"not valid JSON ({error.msg})")))
    return entries


def load_queries(path: str | Path) -> QuerySet:
    """Load a ``.jsonl`` (one JSON object a line) or ``.yaml`` query set."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise NotFoundError(
            f"query set not found: {file}", hint="give the path of a .jsonl or .yaml file"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read query set {file}: {error}") from None
    cases: list[QueryCase] = []
    problems: list[str] = []
    seen: set[str] = set()
    for where, raw in _entries(file, text):
        if isinstance(raw, InputError):
            problems.append(f"{file}:{where}: {raw.message}")
            continue
        try:
            case = QueryCase.model_validate(raw)
        except ValidationError as error:
            problems.append(f"{file}:{where}: {_why(error)}")
            continue
        if case.id in seen:
            problems.append(f"{file}:{where}: duplicate id {case.id!r}")
            continue
        seen.add(case.id)
        cases.append(case)
    if not cases and not problems:
        raise InputError(f"query set {file} is empty", hint="add one JSON object per line")
    return QuerySet(source=str(file), cases=cases, problems=problems)
