"""Query facets and a chunk's relevance to them: the paper's tf, or idf-weighted and saturated.

A **facet** is one thing the query asks about: an analysed query term, or a
``[repair.facets]`` group when the query names any of the group's terms (the
group counts once). ``relevance = "bm25"`` weighs each facet a chunk matches
by the engine's own idf of the term, with BM25's saturation of repeated
occurrences; a match in the chunk's ``context`` (title, heading path, sheet,
column headers) counts ``context_weight`` of one in its text:

    w_f(c) = max over t ∈ f of  idf(t) · x (k1 + 1) / (x + k1)
    x      = tf(t, text) + context_weight · tf(t, context)
    idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))

with N and df from the chunk index (``TermStats``). Length is left to the
paper's length penalty, so it is not counted twice. ``relevance = "tf"`` is the
paper's eq. 5 on its own tokens, with every facet weighing its raw count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from esbubble.core.analysis import analyze, standard_tokens
from esbubble.models import TermMatchDict
from esbubble.text import query_terms


@dataclass(frozen=True, slots=True)
class TermStats:
    """The chunk index's size and, per analysed term, how many chunks hold it (text or context)."""

    doc_count: int
    df: Mapping[str, int]

    def idf(self, term: str) -> float:
        """Lucene's BM25 idf; always positive, so every matched facet adds something."""
        n = max(self.doc_count, 0)
        df = min(max(self.df.get(term, 0), 0), n)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def unindexed(self, term: str) -> bool:
        """The index counted ``term`` and no chunk holds it: the engine drops it (a stop word of its
        analyzer that ours keeps), so a chunk the Python analysis finds it in must not earn its idf,
        the highest of all, for it."""
        return self.df.get(term, 1) <= 0

    def to_json(self) -> dict[str, object]:
        terms = sorted(self.df)  # the keys alone sort faster than the items
        return {
            "doc_count": self.doc_count,
            "df": dict(zip(terms, map(self.df.__getitem__, terms), strict=True)),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> TermStats:
        df = data.get("df")
        count = data.get("doc_count")
        if not isinstance(df, Mapping) or not isinstance(count, int):
            raise ValueError("term stats need 'doc_count' and 'df'")
        return cls(doc_count=count, df={str(k): int(v) for k, v in df.items()})


@dataclass(frozen=True, slots=True)
class Facet:
    """One thing the query asks about, with the terms that cover it (analysed for bm25, raw for tf)."""

    name: str
    terms: tuple[str, ...]


def facet_terms(facets: Iterable[Facet]) -> Iterator[str]:
    """Every term of every facet, in facet order: the words the query asks about."""
    return (term for facet in facets for term in facet.terms)


def _grouped(terms: Sequence[str], groups: Mapping[str, tuple[str, ...]]) -> list[Facet]:
    """Query terms as facets; the terms a group holds become that group, once, in first-seen order."""
    owner = {term: name for name, members in sorted(groups.items()) for term in members}
    facets: dict[str, list[str]] = {}
    for term in terms:
        name = owner.get(term, term)
        if name in groups:
            facets.setdefault(name, list(groups[name]))
        else:
            facets.setdefault(name, [term])
    return [Facet(name=name, terms=tuple(dict.fromkeys(members))) for name, members in facets.items()]


def analysed_query_terms(query: str, stop_words: Iterable[str]) -> list[str]:
    """The query's distinct analysed terms; a word in the profile's stop words ("how", "what") is dropped
    before analysis, on top of the analyzer's own stop words."""
    stops = frozenset(stop_words)
    terms: list[str] = []
    for word in standard_tokens(query):
        if word.lower() not in stops:
            terms += analyze(word)
    return list(dict.fromkeys(terms))


def query_facets(
    query: str, stop_words: Iterable[str], groups: Mapping[str, Sequence[str]], *, analysed: bool
) -> tuple[Facet, ...]:
    """The query's facets: analysed terms grouped by ``groups`` (bm25), or the paper's ``T(q)`` (tf),
    one facet per term, so eq. 5 stays exactly the paper's."""
    if not analysed:
        return tuple(Facet(name=term, terms=(term,)) for term in query_terms(query, stop_words))
    prepared = {
        name: tuple(t for member in members for t in analyze(member)) for name, members in groups.items()
    }
    return tuple(_grouped(analysed_query_terms(query, stop_words), prepared))


def stats_from_candidates(
    stems: Sequence[tuple[Mapping[str, int], Mapping[str, int]]], terms: Iterable[str]
) -> TermStats:
    """Document frequencies within the candidate set: the fallback when the engine's are not at hand.

    ``stems`` holds, per candidate, its analysed term counts in text and context; only ``terms`` (the
    query's facet terms, the only ones an idf is asked of) are counted, as the engine's statistics
    count only them. A term no candidate holds is left out, so its idf is the highest, not dropped.
    """
    df: dict[str, int] = {}
    for term in dict.fromkeys(terms):
        count = sum(1 for text, context in stems if term in text or term in context)
        if count:
            df[term] = count
    return TermStats(doc_count=len(stems), df=df)


def saturate(x: float, k1: float) -> float:
    """BM25's term-frequency saturation: 0 at 0, 1 at 1, towards k1 + 1 for many occurrences."""
    return x * (k1 + 1.0) / (x + k1) if x > 0 else 0.0


# Per facet, its name and the (term, idf) of each of its terms the index holds: idf once per run.
IdfTable = tuple[tuple[str, tuple[tuple[str, float], ...]], ...]


def idf_table(facets: Sequence[Facet], stats: TermStats) -> IdfTable:
    """Each facet's terms with their idf, leaving out the terms the index dropped (``unindexed``)."""
    return tuple(
        (facet.name, tuple((term, stats.idf(term)) for term in facet.terms if not stats.unindexed(term)))
        for facet in facets
    )


def bm25_weights(
    facets: Sequence[Facet],
    stats: TermStats,
    text: Mapping[str, int],
    context: Mapping[str, int],
    *,
    context_weight: float,
    k1: float,
) -> tuple[tuple[float, ...], tuple[TermMatchDict, ...]]:
    """Each facet's weight in one chunk (the best of its terms), and the matched terms behind them
    (only terms the chunk matches, each as the trace record lists it)."""
    return table_weights(idf_table(facets, stats), text, context, context_weight=context_weight, k1=k1)


def table_weights(
    table: IdfTable,
    text: Mapping[str, int],
    context: Mapping[str, int],
    *,
    context_weight: float,
    k1: float,
) -> tuple[tuple[float, ...], tuple[TermMatchDict, ...]]:
    """``bm25_weights`` with the run's ``idf_table`` computed once, not once per chunk."""
    per_facet: list[float] = []
    matched: list[TermMatchDict] = []
    for name, terms in table:
        best = 0.0
        for term, idf in terms:
            tf = text.get(term, 0)
            ctx = context.get(term, 0)
            if not tf and not ctx:
                continue
            weight = idf * saturate(tf + context_weight * ctx, k1)
            matched.append(
                {"facet": name, "term": term, "idf": idf, "tf": tf, "context_tf": ctx, "weight": weight}
            )
            best = max(best, weight)
        per_facet.append(best)
    return tuple(per_facet), tuple(matched)


def tf_weights(facets: Sequence[Facet], counts: Mapping[str, int]) -> tuple[float, ...]:
    """The paper's eq. 5 split by facet: each facet weighs the raw count of its terms."""
    return tuple(float(sum(counts.get(term, 0) for term in facet.terms)) for facet in facets)
