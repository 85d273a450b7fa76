"""Token-length splitting at sentence boundaries.

Long paragraphs and long table rows become several chunks of at most
``max_tokens`` tokens each (tiktoken counts). Cuts fall between sentences
(a full stop before a lower-case word or after an abbreviation such as
``Rev.`` or ``Fig.`` ends none);
a sentence longer than the limit is cut between words, and a "word" longer
than the limit (a URL, a hash) between characters, so every piece fits. What
comes before such a sentence goes with it when it is short (a table's caption
before its rows), and its last words lead the next piece, which the sentences
after it fill, so no piece is a fragment of a few tokens. A piece under
``min_tokens`` (a paragraph's, ``min_chunk_tokens``) is filled with the next
item's first sentences, or, last, takes the sentences before it. A list item
running on inside a paragraph (``○ diminish (float): …``) is not cut when it
fits in a piece, nor is a numbered or bulleted item opening a line of a
paragraph that keeps its lines (an agreement's clauses, a tight list, in
Markdown or plain text) or the paragraph a short fragment was joined to
(``fragments.join``: a new line).
"""

from __future__ import annotations

import re

from esbubble.core.tokens import count_tokens

# A sentence may end at . ! ? (optionally followed by a closing quote/bracket), then whitespace.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+")
# ... but not before a lower-case letter ("e.g. the", "etc. and"), nor after an abbreviation that
# a number or a name follows ("Rev. 5", "No. 12", "Fig. 3", "Dr. Smith").
_NO_END_BEFORE = re.compile(r"[a-z]")
_ABBREVIATIONS = frozenset((
    "al", "approx", "art", "ch", "cf", "dr", "e.g", "eq", "eqs", "fig", "figs", "i.e", "jr", "mr",
    "mrs", "ms", "no", "nos", "p", "para", "pp", "rev", "sec", "secs", "sr", "st", "vol", "vols", "vs",
))  # fmt: skip
_SPACE = re.compile(r"\s+")
# The bullets a list item opens with (``•``, ``●``, ``○``, ``▪``, ``■``…), as PDFs and plain text set them.
BULLETS = "\u2022\u2023\u25a0\u25aa\u25cb\u25cf\u25e6\u2219"
# Where a list item starts inside a paragraph whose items run on (``● fractal3d : … ○ amplitude (float):
# … ○ octaves (integer): …``): before a bullet and its space.
_ITEM_START = re.compile(rf" (?=[{BULLETS}] )")
# Where a numbered or bulleted item starts in a paragraph that keeps its lines (Markdown, plain text),
# or after a fragment joined to it (``fragments.join``, any format): a line opening with its number
# (``4. ``, ``4) ``), as an agreement numbers its clauses, or with a bullet (``- ``, ``* ``, ``+ ``), as
# a tight list sets its items; not a line framed by asterisks (``*  Covered Software is …  *``),
# which is a line of a box.
_LINE_ITEM = re.compile(r"\n(?=[ \t]*(?:\d{1,3}[.)]|[-*+])[ \t]+\S)(?![ \t]*\*.*\*[ \t]*$)", re.MULTILINE)
# A unit too long for one piece is cut between words anyway; what comes before it in the piece being
# filled goes with it when under this share of the limit (a table's caption, ``Table 5.``, before
# the table's rows read as one sentence), rather than stand alone as a piece of a few tokens.
_LEAD_SHARE = 4


def normalise_space(text: str) -> str:
    """Collapse runs of whitespace to one space and trim the ends."""
    return _SPACE.sub(" ", text).strip()


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (whitespace-normalised), in order."""
    flat = normalise_space(text)
    if not flat:
        return []
    sentences: list[str] = []
    start = 0
    for gap in _SENTENCE_END.finditer(flat):
        if _NO_END_BEFORE.match(flat, gap.end()) or _abbreviation_before(flat, gap.start()):
            continue
        sentences.append(flat[start : gap.start()])
        start = gap.end()
    sentences.append(flat[start:])
    return [sentence for sentence in sentences if sentence]


def _abbreviation_before(text: str, end: int) -> bool:
    """Whether the word ending at ``end`` (with its full stop) is an abbreviation, not a sentence end."""
    word = text[text.rfind(" ", 0, end) + 1 : end].lstrip("(\"'[")
    return word.endswith(".") and word[:-1].lower() in _ABBREVIATIONS


def _split_chars(word: str, max_tokens: int, encoding: str) -> list[str]:
    """Cut one over-long word into the longest prefixes that fit."""
    pieces: list[str] = []
    rest = word
    while rest:
        lo, hi = 1, len(rest)
        while lo < hi:  # longest prefix that fits
            mid = (lo + hi + 1) // 2
            if count_tokens(rest[:mid], encoding) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        pieces.append(rest[:lo])
        rest = rest[lo:]
    return pieces


def pack(
    units: list[str],
    max_tokens: int,
    encoding: str,
    *,
    joiner: str = " ",
    lead: bool = False,
    min_tokens: int = 0,
) -> list[str]:
    """Greedily join consecutive units with ``joiner`` into pieces of at most ``max_tokens``.

    A unit that alone exceeds the limit is split further (words, then characters). With ``lead``
    (sentences or list items, not words), a fragment (``_LEAD_SHARE``) before an over-long unit goes
    with it; a piece under ``min_tokens`` before a unit it does not fit with is filled with that
    unit's first sentences, and a last piece under ``min_tokens`` takes the units it follows from
    the piece before, where they fit.
    """
    pieces: list[str] = []
    current: list[str] = []  # the units of the piece being filled
    before: list[str] = []  # the units of the piece filled last, while it is whole units

    def fragment(units: list[str]) -> bool:
        return lead and bool(units) and count_tokens(joiner.join(units), encoding) * _LEAD_SHARE < max_tokens

    def short(units: list[str]) -> bool:
        return lead and bool(units) and count_tokens(joiner.join(units), encoding) < min_tokens

    for unit in units:
        if count_tokens(unit, encoding) > max_tokens:
            # a fragment (``Table 5.``) leads the unit it comes before
            leads = fragment(current)
            if current and not leads:
                pieces.append(joiner.join(current))
            # the unit's last piece, the end of a sentence cut between words, is filled on with the
            # units after it, not left a fragment (``into the VPC within a network boundary.``)
            *done, last = _split_long(joiner.join([*current, unit]) if leads else unit, max_tokens, encoding)
            pieces.extend(done)
            current, before = [last], []
            continue
        if count_tokens(joiner.join([*current, unit]), encoding) <= max_tokens:
            current.append(unit)
        elif short(current) and len(sentences := split_sentences(unit)) > 1:
            # a short piece (a list item of a few words) is filled with the next unit's first sentences
            *done, last = pack([joiner.join(current), *sentences], max_tokens, encoding, joiner=joiner)
            pieces.extend(done)
            current, before = [last], []
        else:
            pieces.append(joiner.join(current))
            current, before = [unit], current
    # a short last piece (``- T1078.004: Cloud Accounts``) takes units from the one before
    while short(current) and len(before) > 1 and pieces and pieces[-1] == joiner.join(before):
        moved = [before[-1], *current]
        if count_tokens(joiner.join(moved), encoding) > max_tokens or short(before[:-1]):
            break
        before, current = before[:-1], moved
        pieces[-1] = joiner.join(before)
    if current:
        pieces.append(joiner.join(current))
    return pieces


def _split_long(unit: str, max_tokens: int, encoding: str) -> list[str]:
    words = unit.split(" ")
    if len(words) > 1:
        return pack(words, max_tokens, encoding)
    return _split_chars(unit, max_tokens, encoding)


def segment_text(
    text: str, max_tokens: int, encoding: str = "o200k_base", *, min_tokens: int = 0
) -> list[str]:
    """Split ``text`` into pieces of at most ``max_tokens`` tokens, cutting between sentences, and of
    ``min_tokens`` or more where the sentences and items around a short one allow (``pack``).

    A list item that fits in a piece is not cut: one running on inside the paragraph
    (``_ITEM_START``), or a numbered one opening a line of it (``_LINE_ITEM``). The pieces are
    packed from such items whole and from the sentences of the rest, so a parameter's default stays
    with its name (``○ diminish (float): the rate … for each octave. … default is 0.5.``) and a
    numbered clause with its number (``4. You must be a human. Accounts registered by “bots” …``).
    """
    flat = normalise_space(text)
    if not flat:
        return []
    if count_tokens(flat, encoding) <= max_tokens:
        return [flat]
    items = [
        item for line in _LINE_ITEM.split(text) for item in _ITEM_START.split(normalise_space(line)) if item
    ]
    if len(items) == 1:  # no list items: the text is over the limit, counted above
        return pack(split_sentences(flat), max_tokens, encoding, lead=True, min_tokens=min_tokens)
    units: list[str] = []
    for item in items:
        units.extend([item] if count_tokens(item, encoding) <= max_tokens else split_sentences(item))
    return pack(units, max_tokens, encoding, lead=True, min_tokens=min_tokens)
