"""Golden bubbles: the same candidates must give the same bubbles, traces, repairs and expansions.

    python scripts/golden_bubbles.py             # recompute and compare (exit 1 on a difference)
    python scripts/golden_bubbles.py --write     # the change is intentional: store the new digests
    python scripts/golden_bubbles.py --fixture   # re-retrieve the stored candidates (embedded engine)

The candidates live in ``tests/data/golden_candidates.json``: a handful of
queries of the sample job (``data/sample``, its profile) and of the
real-document set (``data/realdocs``, the default profile), each with its
top-60 candidates and the engine's term statistics, retrieved the way
``esbubble eval`` retrieves them. ``--fixture`` makes that file again (it
starts an embedded engine on a temporary home); nothing else needs an engine.

For every case, the pure core is run under several configurations (every
variant, both relevance modes, both slack policies, both overlap rules), then
repair (the candidates as its pool) and expansion (the candidates as
neighbours) on the ``full`` bubble. Each result is reduced to a SHA-256 of its
canonical JSON with the values that change from run to run (run id, trace id,
timestamp) left out; ``tests/data/golden_digests.json`` holds them and
``tests/test_golden.py`` compares.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from esbubble.config import BubbleConfig, load_profile
from esbubble.core.bubble import build_bubble
from esbubble.core.budget import BudgetRules
from esbubble.core.relevance import TermStats
from esbubble.delivery.expand import plan_expansion
from esbubble.delivery.repair import plan_repair
from esbubble.models import Bubble, Candidate, Variant

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "golden_candidates.json"
DIGESTS = REPO / "tests" / "data" / "golden_digests.json"
REGENERATE = "python scripts/golden_bubbles.py --write"
TOP = 60
QUERIES_PER_SET = 6
VARIANTS: tuple[Variant, ...] = ("engine_topk", "flat_topk", "structure", "diversity", "full")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
# Values that differ between two runs of the same bubble (they name the run, not the decision).
_RUN_KEYS = frozenset({"run_id", "trace_id", "@timestamp", "timestamp", "batch_id"})


@dataclass(frozen=True)
class QuerySet:
    name: str
    docs: Path
    queries: Path
    profile: Path | None


SETS = (
    QuerySet("sample", REPO / "data" / "sample", REPO / "data" / "sample" / "queries.jsonl",
             REPO / "data" / "sample" / "profile.toml"),
    QuerySet("realdocs", REPO / "data" / "realdocs" / "docs", REPO / "data" / "realdocs" / "queries.jsonl",
             None),
)  # fmt: skip


def _profile(path: str | None) -> BubbleConfig:
    return load_profile(REPO / path) if path else BubbleConfig()


@dataclass(frozen=True)
class Case:
    set_name: str
    query: str
    profile: str | None
    candidates: list[Candidate]
    term_stats: dict[str, Any] | None


def load_cases(path: Path = FIXTURE) -> list[Case]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        Case(
            set_name=case["set"],
            query=case["query"],
            profile=case["profile"],
            candidates=[Candidate.model_validate(c) for c in case["candidates"]],
            term_stats=case["term_stats"],
        )
        for case in data["cases"]
    ]


def _configs(base: BubbleConfig) -> Iterator[tuple[str, BubbleConfig]]:
    """The configurations every case runs under, by name."""
    for relevance in ("bm25", "tf"):
        config = base.with_overrides(relevance=relevance)
        yield relevance, config
        yield f"{relevance}-strict", config.with_overrides(slack_policy="strict")
        other = "bubble" if config.bubble.overlap_mode == "chunk" else "chunk"
        yield f"{relevance}-overlap_{other}", config.with_overrides(overlap=other)
        yield f"{relevance}-score_order", config.with_overrides(selection="score")


def _plain(value: Any) -> Any:
    """JSON values without the run-naming keys, recursively."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if k not in _RUN_KEYS}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def digest(value: Any) -> str:
    text = json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _bubble_json(bubble: Bubble) -> dict[str, Any]:
    return bubble.model_dump(mode="json", by_alias=True)


def compute(cases: Sequence[Case]) -> dict[str, str]:
    """Every digest, keyed ``set/query number/config/what``."""
    digests: dict[str, str] = {}
    numbers: dict[str, int] = {}
    for case in cases:
        number = numbers[case.set_name] = numbers.get(case.set_name, 0) + 1
        stats = TermStats.from_json(case.term_stats) if case.term_stats is not None else None
        for name, config in _configs(_profile(case.profile)):
            prefix = f"{case.set_name}/{number}/{name}"
            for variant in VARIANTS:
                bubble = build_bubble(
                    case.query, case.candidates, config, run_id=f"golden-{variant}", now=NOW,
                    variant=variant, stats=stats,
                )  # fmt: skip
                digests[f"{prefix}/{variant}"] = digest(_bubble_json(bubble))
                if variant != "full":
                    continue
                repaired = plan_repair(bubble, case.candidates, config)
                digests[f"{prefix}/repair"] = digest(
                    {"result": repaired.model_dump(mode="json", by_alias=True)}
                )
                # A small budget and no hysteresis margin, so swaps happen and the swap gates are exercised.
                tight = config.with_overrides(token_budget=300).with_section(
                    "repair", {"epsilon": 0.0, "loops": 4}
                )
                small = build_bubble(
                    case.query, case.candidates, tight, run_id="golden-small", now=NOW, stats=stats
                )
                digests[f"{prefix}/repair_small"] = digest(
                    {
                        "result": plan_repair(small, case.candidates, tight).model_dump(
                            mode="json", by_alias=True
                        )
                    }
                )
                neighbours = [c.chunk for c in case.candidates]
                for mode in ("window", "parent"):
                    settings = config.expand.model_copy(update={"mode": mode})
                    expanded = plan_expansion(repaired.bubble, neighbours, settings, BudgetRules.of(config))
                    digests[f"{prefix}/expand_{mode}"] = digest(
                        expanded.model_dump(mode="json", by_alias=True)
                    )
    return digests


def differences(expected: Mapping[str, str], actual: Mapping[str, str]) -> list[str]:
    """The keys whose digest changed, appeared or disappeared."""
    keys = sorted(set(expected) | set(actual))
    return [k for k in keys if expected.get(k) != actual.get(k)]


def failure_message(changed: Sequence[str]) -> str:
    shown = ", ".join(changed[:12]) + (" …" if len(changed) > 12 else "")
    return (
        f"{len(changed)} golden bubble digest(s) changed: {shown}\n"
        f"The same candidates no longer give the same bubbles/traces. If the change is intentional "
        f"(a new formula, a new trace field), regenerate with:\n    {REGENERATE}\n"
        f"and commit tests/data/golden_digests.json with the change that explains it."
    )


def make_fixture() -> None:
    """Retrieve the fixture's candidates through an embedded engine, as ``esbubble eval`` does."""
    from esbubble.ingest import IngestOptions, ingest_paths
    from esbubble.queryset import load_queries
    from esbubble.store.connection import open_store
    from esbubble.store.engine import stop_daemon
    from esbubble.store.retrieve import retrieve_many
    from esbubble.store.settings import Settings
    from esbubble.store.templates import init_indices

    cases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="esbubble-golden-") as temp:
        for query_set in SETS:
            profile = str(query_set.profile.relative_to(REPO)) if query_set.profile else None
            config = _profile(profile)
            settings = Settings(prefix=f"golden-{uuid.uuid4().hex[:8]}", home=Path(temp) / "home")
            try:
                with open_store(settings) as store:
                    init_indices(store)
                    options = IngestOptions.of(config)
                    ingest_paths(store, [query_set.docs], options)
                    loaded = load_queries(query_set.queries).cases[:QUERIES_PER_SET]
                    retrievals = retrieve_many(store, [c.query for c in loaded], config)
            finally:
                stop_daemon(settings)
            for case, retrieval in zip(loaded, retrievals, strict=True):
                stats = retrieval.term_stats.to_json() if retrieval.term_stats is not None else None
                cases.append(
                    {
                        "set": query_set.name,
                        "query": case.query,
                        "profile": profile,
                        "term_stats": stats,
                        "candidates": [
                            c.model_dump(mode="json", exclude={"chunk": {"ingested_at", "source_path"}})
                            for c in retrieval.candidates[:TOP]
                        ],
                    }
                )
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps({"cases": cases}, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {FIXTURE.relative_to(REPO)} ({len(cases)} cases)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="store the recomputed digests")
    parser.add_argument(
        "--fixture", action="store_true", help="re-retrieve the candidates (starts an engine)"
    )
    args = parser.parse_args(argv)
    if args.fixture:
        make_fixture()
    actual = compute(load_cases())
    if args.write or args.fixture:
        DIGESTS.write_text(json.dumps(actual, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {DIGESTS.relative_to(REPO)} ({len(actual)} digests)")
        return 0
    changed = differences(json.loads(DIGESTS.read_text(encoding="utf-8")), actual)
    if changed:
        print(failure_message(changed), file=sys.stderr)
        return 1
    print(f"{len(actual)} golden digests unchanged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
