"""Terms stored at ingest score exactly like the text they came from.

Ingest stores each chunk's token counts and distinct compare tokens
(``Chunk.terms``), so scoring looks terms up instead of tokenising. Chunks
indexed before that (``terms`` missing) or under another ``TERMS_VERSION``
are scored from their text; both ways must give the same numbers.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from esbubble.config import parse_config
from esbubble.core.analysis import analyzed_counts, distinct_words
from esbubble.core.score import chunk_terms, score_candidates
from esbubble.models import Candidate, Chunk, ChunkTerms
from esbubble.text import TERMS_VERSION, distinct_terms, term_counts, tokenize

WORDS = (
    "sump",
    "pump",
    "pit",
    "the",
    "of",
    "Tanking",
    "tanking",
    "Ü-bahn",
    "ﬁle",
    "42",
    "a_b",
    "slab",
    "pump,",
    "65.2",
    "1,234.5",
    "v2.0",
)


def _chunk(chunk_id: str, text: str, compare: str, terms: ChunkTerms | None) -> Chunk:
    return Chunk(
        chunk_id=chunk_id, doc_id="d", source_type="text", section="S", bucket="S", position=0,
        token_count=len(tokenize(text)), content_hash="h", text=text, compare_text=compare, terms=terms,
    )  # fmt: skip


def _stored(text: str, compare: str) -> ChunkTerms:
    return ChunkTerms(
        version=TERMS_VERSION,
        counts=term_counts(text),
        compare=distinct_terms(compare),
        words=distinct_words(compare),
        stems=analyzed_counts(text),
        context_stems={},
    )


texts = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(
    texts,
    texts,
    st.sampled_from(["sump pump tanking", "the pit of 42", "file bahn", ""]),
    st.booleans(),
    st.sampled_from(["bm25", "tf"]),
)
def test_stored_terms_give_the_same_scores_as_the_text(
    text: str, other: str, query: str, row: bool, relevance: str
) -> None:
    compare = other if row else text
    config = parse_config(
        {
            "bubble": {"relevance": relevance},
            "priors": {
                "sections": {"S": 1.0},
                "keywords": {"sump pump": 2.0, "pit": 0.5, "ü bahn": 1.5, "the": 0.25},
            },
        }
    )
    stored = score_candidates(
        query, [Candidate(chunk=_chunk("a", text, compare, _stored(text, compare)))], config
    ).scored
    computed = score_candidates(query, [Candidate(chunk=_chunk("a", text, compare, None))], config).scored
    assert stored[0][1:] == computed[0][1:]  # every field but the candidate itself


def test_terms_of_another_version_are_ignored() -> None:
    stale = ChunkTerms(version=TERMS_VERSION + 1, counts={"wrong": 9}, compare=["wrong"])
    counts, compare = chunk_terms(_chunk("a", "Sump pump, sump.", "pump pit", stale))
    assert counts == {"pump": 1, "sump": 2}
    assert compare == ["pit", "pump"]
    assert chunk_terms(_chunk("a", "x", "Rate 65.2, 1,234.5", stale), standard=True)[1] == [
        "1,234.5",
        "65.2",
        "rate",
    ]


def test_a_keyword_needs_its_words_in_sequence() -> None:
    config = parse_config({"priors": {"keywords": {"sump pump": 2.0}}})
    apart = _chunk("a", "pump the sump", "pump the sump", _stored("pump the sump", "pump the sump"))
    together = _chunk("b", "the sump pump", "the sump pump", _stored("the sump pump", "the sump pump"))
    scored = {
        s.chunk_id: s.boost
        for s in score_candidates("x", [Candidate(chunk=apart), Candidate(chunk=together)], config).scored
    }
    assert scored == {"a": 0.0, "b": 2.0}
