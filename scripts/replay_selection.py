"""Replay selection offline: retrieve each query once, then rebuild bubbles under other settings.

Retrieval does not depend on the selection settings (nor on the budget), so a set's candidates and
term statistics can be saved once and every selection setting measured on them in seconds, with no
engine. ``docs/evaluation.md``'s thirty-ninth round was measured so.

Usage (from the repository root):

    # 1. the sets ingested as `make eval` does (scripts/eval_all.sh), then the engine restarted
    python scripts/replay_selection.py dump CASES realdocs realdocs2 ...   [--index-prefix esbubble-]
    # 2. gold recall of `full` and `engine_topk` at 400 and 800, with the defaults or one setting changed
    #    (then also against the defaults: questions gained or lost per half, how many went up and down)
    python scripts/replay_selection.py replay CASES [--set engine_rank=5.0 ...]

``dump`` reads each set's ``data/<set>/queries.jsonl`` and its index ``<prefix><set>`` on the cluster
the environment names (``ESBUBBLE_HOME``'s embedded engine by default) and writes ``CASES/<set>.jsonl``.
``replay`` prints, per budget, each variant's mean gold recall over the questions with gold, and the
questions it holds in the sets numbered up to 12 (A) and above (B), so a change can be checked on
both halves, then the budget's ceiling: the most gold any set of whole candidate chunks within the
budget holds (``GoldItems.budget_ceiling``), which no selection setting can pass. With ``--set`` it
replays the defaults too and prints, per budget and variant, the questions the change gains or loses
in each half and how many questions went up and down.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from esbubble.app.evaluate import EvalCase, retrieve_cases
from esbubble.config import BubbleConfig
from esbubble.core.metrics import GoldItems, bubble_metrics
from esbubble.models import Variant
from esbubble.queryset import load_queries
from esbubble.store.connection import Store, open_store
from esbubble.store.names import IndexNames
from esbubble.store.settings import load_settings

BUDGETS = (400, 800)
VARIANTS: tuple[Variant, ...] = ("full", "engine_topk")
_SET_NUMBER = re.compile(r"(\d+)$")


def set_cases(store: Store, queries: Path) -> list[EvalCase]:
    """A query set's cases on ``store``'s chunk index, as ``esbubble eval`` retrieves them."""
    return retrieve_cases(store, load_queries(queries).cases, BubbleConfig())


def dump(out: Path, sets: list[str], prefix: str) -> None:
    """Each set's cases as JSON lines, ``out/<set>.jsonl``."""
    out.mkdir(parents=True, exist_ok=True)
    settings = load_settings()
    with open_store(settings) as store:
        for name in sets:
            at = replace(store, names=IndexNames.for_prefix(settings.prefix).with_chunk_index(prefix + name))
            cases = set_cases(at, Path("data") / name / "queries.jsonl")
            with (out / f"{name}.jsonl").open("w", encoding="utf-8") as file:
                file.writelines(case.model_dump_json() + "\n" for case in cases)
            print(f"{name}: {len(cases)} queries")


def _setting(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    if value in ("true", "false"):
        return key, value == "true"
    try:
        return key, int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError:
        return key, value


def _half(set_name: str) -> str:
    found = _SET_NUMBER.search(set_name)
    return "A" if found is None or int(found.group(1)) <= 12 else "B"


@dataclass(frozen=True)
class Recall:
    """One variant's gold recall at one budget: each question with gold's (half, recall), in case order."""

    budget: int
    variant: Variant | Literal["ceiling"]
    per_question: tuple[tuple[str, float], ...]

    @property
    def held(self) -> dict[str, float]:
        """The recall summed over the questions of each half (questions' worth of gold)."""
        held = {"A": 0.0, "B": 0.0}
        for half, recall in self.per_question:
            held[half] += recall
        return held

    @property
    def questions(self) -> int:
        return len(self.per_question)

    @property
    def mean(self) -> float:
        return sum(self.held.values()) / self.questions if self.questions else 0.0

    def against(self, base: Recall) -> str:
        """What this replay gains or loses against ``base`` (the same cases): the recall summed per half
        (questions' worth), and how many questions went up and down."""
        gained = {"A": 0.0, "B": 0.0}
        up = down = 0
        for (half, mine), (_, theirs) in zip(self.per_question, base.per_question, strict=True):
            gained[half] += mine - theirs
            up += mine > theirs
            down += mine < theirs
        return f"A {gained['A']:+.1f}, B {gained['B']:+.1f} ({up} up, {down} down)"


def replay_cases(cases: list[tuple[str, EvalCase]], overrides: dict[str, object]) -> list[Recall]:
    """Gold recall of each variant at each budget on ``cases`` (set name, case), under ``overrides``,
    each budget's variants followed by its ceiling (which no setting changes)."""
    now = datetime.now(UTC)
    rows: list[Recall] = []
    for budget in BUDGETS:
        config = BubbleConfig().with_overrides(token_budget=budget, **overrides)
        for variant in VARIANTS:
            per_question: list[tuple[str, float]] = []
            for set_name, case in cases:
                bubble = case.bubble(config, variant, run_id="replay", now=now)
                recall = bubble_metrics(bubble, case.gold, case.evidence).gold_recall
                if recall is not None:
                    per_question.append((_half(set_name), recall))
            rows.append(Recall(budget, variant, tuple(per_question)))
        rows.append(Recall(budget, "ceiling", tuple(_ceilings(cases, budget))))
    return rows


def _ceilings(cases: list[tuple[str, EvalCase]], budget: int) -> list[tuple[str, float]]:
    """Each question with gold's (half, the budget's ceiling as a share of its gold items)."""
    shares: list[tuple[str, float]] = []
    for set_name, case in cases:
        items = GoldItems.of(case.gold, case.evidence)
        if len(items):
            shares.append((_half(set_name), items.budget_ceiling(case.candidates, budget) / len(items)))
    return shares


def replay(cases_dir: Path, settings: list[str]) -> None:
    """Print ``replay_cases`` for the cases saved in ``cases_dir``."""
    files = sorted(cases_dir.glob("*.jsonl"))
    cases = [(file.stem, EvalCase.model_validate_json(line)) for file in files for line in file.open()]
    rows = replay_cases(cases, dict(_setting(text) for text in settings))
    defaults = replay_cases(cases, {}) if settings else [None] * len(rows)
    for row, base in zip(rows, defaults, strict=True):
        halves = f"A {row.held['A']:.1f}, B {row.held['B']:.1f}"
        versus = ""
        if base is not None and row.variant != "ceiling":  # no setting moves the ceiling
            versus = f"; against the defaults {row.against(base)}"
        print(f"{row.budget} {row.variant}: {row.mean:.4f} over {row.questions} questions ({halves}){versus}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dumping = commands.add_parser("dump", help="retrieve every set's queries once and save the cases")
    dumping.add_argument("out", type=Path)
    dumping.add_argument("sets", nargs="+")
    dumping.add_argument("--index-prefix", default="esbubble-")
    replaying = commands.add_parser("replay", help="rebuild the bubbles from saved cases")
    replaying.add_argument("cases", type=Path)
    replaying.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out, args.sets, args.index_prefix)
    else:
        replay(args.cases, args.set)


if __name__ == "__main__":
    main()
