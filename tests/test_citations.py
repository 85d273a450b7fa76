"""Citation anchors and answer validation."""

from __future__ import annotations

from delivery_helpers import make_chunk

from esbubble.config import parse_config
from esbubble.delivery.assemble import assemble
from esbubble.delivery.citations import anchor, cited_numbers, sentences, validate_citations
from esbubble.delivery.expand import Passage


def prompt_with_sources(n: int):  # type: ignore[no-untyped-def]
    passages = [
        Passage(
            doc_id=f"d{r}",
            chunks=[make_chunk(f"d{r}", 0, text=f"fact {r}")],
            anchor_ids=[f"d{r}#0"],
            rank=r,
            score=1.0,
        )
        for r in range(1, n + 1)
    ]
    config = parse_config({"assemble": {"enabled": True}})
    return assemble("q?", passages, config.assemble, config.bubble.encoding)


def test_anchor_and_parsing_round_trip() -> None:
    assert anchor(3) == "[Source 3]"
    assert cited_numbers("a [Source 3] b [source 1, 2] c [Source 3]") == [3, 1, 2, 3]
    assert cited_numbers("no citations, [Source x], [3]") == []


def test_a_citation_after_the_full_stop_belongs_to_its_sentence() -> None:
    assert sentences("Beams cost 120. [Source 1] Delivery takes two weeks [Source 2].\nDone!") == [
        "Beams cost 120. [Source 1]",
        "Delivery takes two weeks [Source 2].",
        "Done!",
    ]


def test_validate_reports_unknown_uncited_and_unsupported() -> None:
    assembled = prompt_with_sources(3)
    answer = "Beams cost 120 EUR [Source 1]. Paint is ISO 12944 [Source 7]. Delivery is quick."
    report = validate_citations(answer, assembled)
    assert report.cited == [1, 7]
    assert report.unknown == [7]
    assert report.uncited_sources == [2, 3]
    assert report.unsupported_sentences == ["Delivery is quick."]
    assert not report.ok


def test_a_fully_cited_answer_is_ok() -> None:
    assembled = prompt_with_sources(2)
    report = validate_citations("Beams cost 120 [Source 1]. Paint is grey [Source 1, 2].", assembled)
    assert (report.unknown, report.uncited_sources, report.unsupported_sentences) == ([], [], [])
    assert report.ok
