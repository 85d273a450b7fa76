"""Token-length splitting: every piece fits and no text is lost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from esbubble.core.tokens import count_tokens
from esbubble.ingest.segment import normalise_space, pack, segment_text, split_sentences

words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30
)
sentences = st.lists(words, min_size=1, max_size=12).map(lambda ws: " ".join(ws) + ".")


def test_split_sentences_keeps_punctuation() -> None:
    assert split_sentences("One.  Two!\nThree? Four") == ["One.", "Two!", "Three?", "Four"]


def test_no_sentence_ends_at_an_abbreviation_or_before_a_lower_case_word() -> None:
    text = "NIST SP 800-53 Rev. 5 FedRAMP High. Use a salt, e.g. the nonce. See (Fig. 3) below. Done."
    assert split_sentences(text) == [
        "NIST SP 800-53 Rev. 5 FedRAMP High.",
        "Use a salt, e.g. the nonce.",
        "See (Fig. 3) below.",
        "Done.",
    ]


def test_over_long_word_is_cut_between_characters() -> None:
    pieces = segment_text("x" * 500 + " end.", 8)
    assert all(count_tokens(p) <= 8 for p in pieces)
    assert "".join(pieces).replace(" ", "") == "x" * 500 + "end."


@settings(max_examples=60, deadline=None)
@given(st.lists(sentences, min_size=1, max_size=20), st.integers(min_value=4, max_value=60))
def test_every_piece_fits_and_nothing_is_lost(parts: list[str], max_tokens: int) -> None:
    text = " ".join(parts)
    pieces = segment_text(text, max_tokens)
    assert all(0 < count_tokens(p) <= max_tokens for p in pieces)
    # Pieces are cut at spaces, or inside a word only when it alone is too long: no character is lost.
    assert "".join(pieces).replace(" ", "") == normalise_space(text).replace(" ", "")


@settings(max_examples=30, deadline=None)
@given(st.lists(sentences, min_size=1, max_size=10))
def test_text_that_fits_is_one_piece(parts: list[str]) -> None:
    text = normalise_space(" ".join(parts))
    assert segment_text(text, count_tokens(text) + 1) == ([text] if text else [])


def test_a_fragment_before_a_sentence_too_long_for_a_piece_leads_it() -> None:
    """A table's caption before its rows, which a PDF gives as one long "sentence": the caption goes
    with the rows' first piece, not alone (``Table 5.`` was a chunk of its own); a sentence of a
    quarter of the limit or more stays a piece of its own."""
    rows = " ".join(f"sbi_call_{n} 0.1 {n} 0x0{n} N/A" for n in range(40))
    pieces = segment_text(f"Table 5. Legacy Function List {rows}", 60)
    assert pieces[0].startswith("Table 5. Legacy Function List sbi_call_0")
    assert all(count_tokens(piece, "o200k_base") <= 60 for piece in pieces)
    intro = "The legacy calls are listed below, each with the extension that replaces it now."
    pieces = segment_text(f"{intro} Function Name SBI Version {rows}", 60)
    assert pieces[0] == intro


def test_the_end_of_a_sentence_cut_between_words_is_filled_on_with_the_sentences_after_it() -> None:
    """A sentence too long for a piece is cut between words; its last words lead the next piece,
    which the sentences after it fill: Microsoft's benchmark left ``… into the VPC within a network
    boundary.`` a chunk of 16 tokens."""
    links = " ".join(f"https://docs.example.com/vpc/page-{n}" for n in range(12))
    long = f"{links}; AWS Guidance: Create a VPC so that instances can be deployed into it within a boundary."
    after = "To further segment the network, create subnets. Use security groups as a stateful firewall."
    pieces = segment_text(f"{long} {after}", 60)
    assert pieces[-1].endswith(f"within a boundary. {after}")
    assert all(count_tokens(piece) <= 60 for piece in pieces)
    assert " ".join(pieces) == f"{long} {after}"


def test_a_list_item_that_fits_a_piece_is_not_cut() -> None:
    """A paragraph of items that run on (a PDF's parameter list) is cut between items where an item
    fits a piece: a parameter's default stays with its name. Greedy packing by sentence cut the
    ``diminish`` item after its first sentence, its default going into the next piece."""
    items = [
        "● fractal3d : Zero-centered 3D Fractal noise, created by summing several octaves of noise.",
        "○ amplitude (float): the center-to-peak amplitude of the noise. Default is 1.0.",
        "○ octaves (integer): the number of octaves of noise to be summed. Default is 3.",
        "○ diminish (float): the rate at which noise amplitude is diminished for each octave. "
        "Should be between 0.0 and 1.0; default is 0.5.",
        "○ position (vector3): the 3D position at which the noise is evaluated.",
    ]
    text = " ".join(items)
    half = items[3].split(" Should")[0]
    limit = count_tokens(" ".join([*items[:3], half]), "o200k_base")  # room for half of the fourth item
    pieces = segment_text(text, limit)
    assert pieces == [" ".join(items[:3]), " ".join(items[3:])]
    # packed by sentence alone, the first piece takes the diminish item's first sentence
    by_sentence = pack(split_sentences(text), limit, "o200k_base", lead=True)
    assert by_sentence[0].endswith("diminished for each octave.")


def test_a_numbered_clause_opening_a_line_that_fits_a_piece_is_not_cut() -> None:
    """A Markdown agreement's clauses, one numbered item a line: a piece ends where a clause does,
    so a clause's number is never left at a piece's end (``… for more details. 3.``) and its second
    sentence never opens the next piece (``Accounts registered by "bots" …``). A number inside a
    line starts no clause."""
    clauses = [
        "1. You are responsible for the security of your account. The Company cannot be liable for any"
        " loss from your failure to comply.",
        "2. You may not use the Services for any purpose outlined in our Use Restrictions policy.",
        "3. You are responsible for all content posted to your account, see section 4. It is yours.",
        "4. You must be a human. Accounts registered by bots or other automated methods are not permitted,"
        " and an account found to be one is closed without notice and everything posted to it removed.",
    ]
    text = "\n".join(clauses)
    limit = count_tokens(" ".join([*clauses[:3], "4. You must be a human."]), "o200k_base")
    assert segment_text(text, limit) == [" ".join(clauses[:3]), clauses[3]]
    # packed by sentence alone, the last clause is cut after its first sentence
    by_sentence = pack(split_sentences(text), limit, "o200k_base", lead=True)
    assert by_sentence[0].endswith("4. You must be a human.")


def test_a_bullet_item_opening_a_line_that_fits_a_piece_is_not_cut() -> None:
    """A tight Markdown list is one paragraph, an item a line (``* Host projects, …``, ``- having
    more contributions …``): a piece ends where an item does, where the Nordix bylaws' list of
    activities was cut at the token limit inside an item (``… availability of the`` / ``outputs
    produced …``). A line framed by asterisks is a line of a box, not an item (MPL 2.0's
    disclaimer, ``*  Covered Software is provided …  *``)."""
    lead = "The activities that the association may undertake include the following:"
    items = [
        "* Represent the positions of its members to international institutions in Europe;",
        "* Host projects, including managing the participation in such projects and providing"
        " worldwide royalty-free availability of the outputs produced by such projects;",
        "* Manage the intellectual property associated with its projects and the outputs of its members;",
    ]
    limit = count_tokens(" ".join([lead, items[0], "* Host projects, including managing"]), "o200k_base")
    pieces = segment_text("\n".join([lead, *items]), limit)
    assert pieces == [f"{lead} {items[0]}", items[1], items[2]]
    box = [
        "*  Covered Software is provided under this License on an as is basis, without warranty.  *",
        "*  The entire risk as to the quality and performance of the Covered Software is with You.  *",
        "*  Should any Covered Software prove defective in any respect, You assume the cost.  *",
    ]
    framed = segment_text("\n".join(box), 40)
    assert framed == pack(split_sentences("\n".join(box)), 40, "o200k_base", lead=True)


def test_a_short_item_is_filled_with_the_next_items_first_sentences() -> None:
    """An item under ``min_chunk_tokens`` before one it does not fit with is filled with that item's
    first sentences, not left a piece of a few tokens (PEST++'s ``* singular value decomposition``
    was a chunk of 6)."""
    short = "* singular value decomposition"
    long = (
        "* regularization ++ arguments. Users who construct a control data keyword section cannot list"
        " them again. The keywords are separated by one or more spaces. Tabs are accepted as well."
    )
    limit = count_tokens(long, "o200k_base") + 2
    pieces = pack([short, long], limit, "o200k_base", lead=True, min_tokens=12)
    assert pieces[0].startswith(f"{short} * regularization ++ arguments. Users who")
    assert len(pieces) == 2 and " ".join(pieces) == f"{short} {long}"
    assert all(count_tokens(piece, "o200k_base") <= limit for piece in pieces)


def test_a_last_piece_that_is_a_fragment_takes_the_units_before_it() -> None:
    """The last item of a long list, under ``min_chunk_tokens``, took a piece alone when the piece
    before was full (CISA's ``- T1078.004: Cloud Accounts``): it takes the units it follows from
    that piece."""
    units = [
        "- T1110: Brute Force, where an adversary guesses or cracks the password of an account.",
        "- T1110.001: Password Guessing, where an adversary guesses passwords of accounts.",
        "- T1110.002: Password Cracking, where an adversary recovers passwords from hashes.",
        "- T1078.004: Cloud Accounts",
    ]
    limit = count_tokens(" ".join(units[:3]), "o200k_base")
    pieces = pack(units, limit, "o200k_base", lead=True, min_tokens=12)
    assert pieces == [" ".join(units[:2]), " ".join(units[2:])]
    # a last sentence of 12 tokens or more states a fact on its own, and stays a piece
    assert pack(units, limit, "o200k_base", lead=True, min_tokens=6) == [" ".join(units[:3]), units[3]]


def test_an_item_too_long_for_a_piece_is_cut_between_its_sentences() -> None:
    long_item = "• " + " ".join(f"Sentence number {n} of the item says a little more." for n in range(20))
    pieces = segment_text(f"• A short item. {long_item} • The last item.", 40)
    assert all(count_tokens(piece, "o200k_base") <= 40 for piece in pieces)
    assert normalise_space(" ".join(pieces)) == normalise_space(
        f"• A short item. {long_item} • The last item."
    )
