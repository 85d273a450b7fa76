"""Query-set loading: JSONL and YAML, bad entries reported with their line, the rest loaded."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from ingest_files import SAMPLE

from esbubble.errors import InputError, NotFoundError
from esbubble.queryset import load_queries


def test_sample_query_set_has_the_papers_categories_and_examples() -> None:
    queries = load_queries(SAMPLE / "queries.jsonl")
    assert queries.problems == []
    assert Counter(c.category for c in queries.cases) == {
        "narrow_fact": 6,
        "multi_facet": 6,
        "cross_sheet": 6,
        "table_dependent": 7,
    }
    texts = {c.query for c in queries.cases}
    assert {"warranty period", "scope of work", "below grade scope and products"} <= texts
    assert "pricing line items for waterproofing" in texts
    assert all(c.gold for c in queries.cases)


def test_malformed_lines_are_reported_and_the_rest_load(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"id": "a", "query": "warranty period", "gold": ["x"]}\n'
        "{not json\n"
        "\n"
        '{"id": "b"}\n'
        '{"id": "c", "query": "scope", "colour": "red"}\n'
        '{"id": "a", "query": "again"}\n'
        '{"id": "d", "query": "pricing", "category": "table_dependent"}\n',
        encoding="utf-8",
    )
    queries = load_queries(path)
    assert [c.id for c in queries.cases] == ["a", "d"]
    assert queries.problems == [
        f"{path}:line 2: not valid JSON (Expecting property name enclosed in double quotes)",
        f"{path}:line 4: missing 'query'",
        f"{path}:line 5: unknown key 'colour' (allowed: id, query, category, gold, evidence)",
        f"{path}:line 6: duplicate id 'a'",
    ]


def test_yaml_query_set(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(
        "queries:\n  - id: a\n    query: warranty period\n    gold: [x, y]\n  - id: b\n", encoding="utf-8"
    )
    queries = load_queries(path)
    assert [(c.id, c.gold) for c in queries.cases] == [("a", ["x", "y"])]
    assert queries.problems == [f"{path}:entry 2: missing 'query'"]


def test_unusable_files(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="query set not found"):
        load_queries(tmp_path / "none.jsonl")
    (tmp_path / "bad.yaml").write_text("a: [unclosed\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid YAML"):
        load_queries(tmp_path / "bad.yaml")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="is empty"):
        load_queries(tmp_path / "empty.jsonl")


def test_evidence_phrases_load_and_a_blank_phrase_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"id": "a", "query": "warranty", "evidence": ["AS IS basis", "no warranty"]}\n'
        '{"id": "b", "query": "scope", "evidence": ["  "]}\n'
        '{"id": "c", "query": "rates"}\n',
        encoding="utf-8",
    )
    queries = load_queries(path)
    assert [(c.id, c.evidence, c.gold) for c in queries.cases] == [
        ("a", ["AS IS basis", "no warranty"], []),
        ("c", [], []),
    ]
    assert queries.problems == [
        f"{path}:line 2: invalid 'evidence': Value error, an evidence phrase is blank"
    ]
