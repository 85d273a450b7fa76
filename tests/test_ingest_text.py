"""The plain-text reader: numbered and capital headings, line ranges, files without an extension."""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_files import OPTIONS

from esbubble.errors import IngestError
from esbubble.ingest import IngestOptions, read_document
from esbubble.ingest.ids import chunk_id
from esbubble.ingest.incremental import collect

LICENSE = """                    EXAMPLE PUBLIC LICENSE
                       Version 1, 1 May 2025

                            Preamble

  This licence is for the podium works and for nothing else at all.

                       TERMS AND CONDITIONS

  0. Definitions.

  "The Work" means the waterproofing described in the schedule.

  1. Grant of Licence. Subject to these terms, the owner grants a licence
to use the drawings.

1.2 Scope
---------

The licence covers the basement
and the podium slab.

  15. Disclaimer of Warranty.

  THERE IS NO WARRANTY FOR THE WORK, TO THE EXTENT PERMITTED BY
APPLICABLE LAW. EXCEPT WHEN OTHERWISE STATED IN WRITING THE HOLDERS
PROVIDE THE WORK "AS IS".

Steps to follow:
1. Clean the slab.
2. Prime the slab.
"""


def test_numbered_capital_and_centred_headings_give_the_section(tmp_path: Path) -> None:
    (tmp_path / "licence.txt").write_text(LICENSE, encoding="utf-8")
    chunks = read_document(tmp_path / "licence.txt", OPTIONS, doc_id="licence.txt")
    terms = "TERMS AND CONDITIONS"
    assert [(c.section, c.text[:23]) for c in chunks] == [
        ("EXAMPLE PUBLIC LICENSE", "Version 1, 1 May 2025"),
        ("Preamble", "This licence is for the"),
        (f"{terms} > 0. Definitions.", '"The Work" means the wa'),
        (f"{terms} > 1. Grant of Licence.", "Subject to these terms,"),
        (f"{terms} > 1. Grant of Licence. > 1.2 Scope", "The licence covers the "),
        (f"{terms} > 15. Disclaimer of Warranty.", "THERE IS NO WARRANTY FO"),
        (f"{terms} > 15. Disclaimer of Warranty.", "Steps to follow: 1. Cle"),
    ]
    assert chunks[0].context == "licence > EXAMPLE PUBLIC LICENSE"
    assert chunks[5].chunk_id == chunk_id(
        "licence.txt", f"section={terms} > 15. Disclaimer of Warranty./para=1/part=0"
    )


def test_paragraphs_keep_their_line_ranges(tmp_path: Path) -> None:
    (tmp_path / "licence.txt").write_text(LICENSE, encoding="utf-8")
    chunks = read_document(tmp_path / "licence.txt", OPTIONS, doc_id="licence.txt")
    lines = LICENSE.splitlines()
    ranges = [(c.line_start, c.line_end) for c in chunks]
    assert ranges == [(2, 2), (6, 6), (12, 12), (14, 15), (20, 21), (25, 27), (29, 31)]
    # The grant's heading shares line 14 with its first words; the range covers the text read.
    for chunk, (start, end) in zip(chunks, ranges, strict=True):
        assert chunk.text.split()[-1] in " ".join(lines[start - 1 : end])


def test_fragments_join_by_default_and_the_line_range_spans_them(tmp_path: Path) -> None:
    (tmp_path / "scope.txt").write_text(
        "1. Scope\n\nIn short:\n\nThe licence covers the basement and the podium slab of the building"
        " at 41 Bank Street.\n\nSee also.\n\n2. Term\n\nOne year.\n",
        encoding="utf-8",
    )
    chunks = read_document(tmp_path / "scope.txt", IngestOptions(), doc_id="scope.txt")
    assert [(c.section, c.line_start, c.line_end) for c in chunks] == [
        ("1. Scope", 3, 7),
        ("2. Term", 11, 11),
    ]
    assert chunks[0].text.startswith("In short: The licence") and chunks[0].text.endswith("See also.")
    assert chunks[0].chunk_id == chunk_id("scope.txt", "section=1. Scope/para=1+2+3/part=0")
    assert chunks[1].text == "One year."  # alone in its section: nothing to join it to


def test_a_numbered_list_or_sentence_is_not_a_heading(tmp_path: Path) -> None:
    (tmp_path / "steps.txt").write_text(
        "1. Clean the slab.\n2. Prime the slab.\n\n"
        "13. The owner may publish revised and new\nversions of this licence from time to time.\n",
        encoding="utf-8",
    )
    chunks = read_document(tmp_path / "steps.txt", OPTIONS, doc_id="steps.txt")
    assert {c.section for c in chunks} == {"steps.txt"}


def test_a_text_file_without_an_extension_is_read_as_text(tmp_path: Path) -> None:
    for name in ("LICENSE", "Apache-2.0"):
        (tmp_path / name).write_text("1. Scope\n\nThis applies to the podium slab.\n", encoding="utf-8")
        [chunk] = read_document(tmp_path / name, OPTIONS, doc_id=name)
        assert (chunk.source_type, chunk.section, chunk.context) == ("text", "1. Scope", f"{name} > 1. Scope")


def test_a_binary_or_non_utf8_file_without_an_extension_is_unsupported(tmp_path: Path) -> None:
    (tmp_path / "blob").write_bytes(b"\x7fELF\x00\x01\x02")
    (tmp_path / "latin").write_bytes("café au lait".encode("latin-1"))
    for name in ("blob", "latin"):
        with pytest.raises(IngestError, match="unsupported file type '\\(none\\)'"):
            read_document(tmp_path / name, OPTIONS, doc_id=name)


def test_directories_pick_up_text_files_without_an_extension(tmp_path: Path) -> None:
    (tmp_path / "COPYING").write_text("Copying is allowed.\n", encoding="utf-8")
    (tmp_path / "binary").write_bytes(b"\x00\x01")
    (tmp_path / "notes.toml").write_text("a = 1\n", encoding="utf-8")
    targets, failures, skipped = collect([tmp_path], OPTIONS)
    assert [t.doc_id for t in targets] == ["COPYING"] and not failures
    assert sorted(Path(s).name for s in skipped) == ["binary", "notes.toml"]
