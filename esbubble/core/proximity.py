"""Term proximity: which of the question's successive word pairs a chunk holds close together.

The facet gain reads a question word by word: a chunk holding *backup* in one
sentence and *strategy* in another matches both facets as fully as the line
"the backup strategy should define recovery time objectives". Words of a
question that stand next to each other usually name one thing together, and
evidence says them near each other too — what the sequential dependence model
("A Markov Random Field Model for Term Dependencies", Metzler and Croft) adds
to word matching. Here a pair is two successive analysed words of the question
(its stop words already gone, so "recovery targets" of "pin down about recovery
targets" is one), and a chunk holds it when both words stand within ``window``
analysed words of each other, in either order, in its text. In the gain order a
chunk's facet weights count ``1 + proximity · near / pairs`` (``core.select``):
how many of the question's pairs it holds, over how many there are.

Bm25 relevance only: its facets are the index's analysed terms, which the
chunk's text is analysed into here. The paper's ``tf`` counts raw tokens.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from esbubble.core.analysis import analyze

Pair = tuple[str, str]


def query_pairs(terms: Sequence[str]) -> tuple[Pair, ...]:
    """Each two successive analysed query terms, once, in the question's order (a term next to
    itself makes no pair)."""
    return tuple(dict.fromkeys((a, b) for a, b in itertools.pairwise(terms) if a != b))


def pair_name(pair: Pair) -> str:
    """How a trace record names a pair: its two terms, space-separated."""
    return f"{pair[0]} {pair[1]}"


def _near(first: Sequence[int], second: Sequence[int], window: int) -> bool:
    """Whether some position of ``first`` is within ``window`` of one of ``second`` (both ascending)."""
    i = j = 0
    while i < len(first) and j < len(second):
        a, b = first[i], second[j]
        if abs(a - b) <= window:
            return True
        if a < b:
            i += 1
        else:
            j += 1
    return False


@dataclass(frozen=True, slots=True)
class Proximity:
    """The question's pairs and the window they must fall within, prepared once per run."""

    pairs: tuple[Pair, ...]
    window: int

    def near(self, text: str, stems: Mapping[str, int]) -> tuple[str, ...]:
        """The pairs (``pair_name``) whose two terms ``text`` holds within ``window`` analysed words of
        each other. ``stems`` are the chunk's analysed term counts: a pair one of whose terms they lack
        cannot be near, so a chunk that holds no whole pair is not analysed."""
        possible = [pair for pair in self.pairs if pair[0] in stems and pair[1] in stems]
        if not possible:
            return ()
        wanted = {term for pair in possible for term in pair}
        positions: dict[str, list[int]] = {term: [] for term in wanted}
        for index, term in enumerate(analyze(text)):
            if term in wanted:
                positions[term].append(index)
        return tuple(
            pair_name(pair) for pair in possible if _near(positions[pair[0]], positions[pair[1]], self.window)
        )

    def weight(self, near: int, strength: float) -> float:
        """``1 + strength · near / pairs``: what a chunk holding ``near`` of the pairs weighs its facets by
        (1 when the question has no pair)."""
        return 1.0 + strength * near / len(self.pairs) if self.pairs else 1.0
