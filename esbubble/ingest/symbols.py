"""The signs of the symbol fonts, which set them at the codes of Latin letters and punctuation.

Adobe's Symbol font sets Greek letters and mathematical signs where a text font has Latin ones
(``W`` is Ω, ``e`` is ε, ``0xB1`` is ±); Wingdings sets check marks, boxes and bullets. A PDF whose
text map gives those codes (Word's ``SymbolMT``), or their private-use copies (U+F0xx), and a Word
symbol (``<w:sym w:font="Wingdings" w:char="F0FC"/>``, a ✓ in a table of which fields each file type
needs) read as the signs the page shows. A number set as a superscript right after a digit
reads as a power, ``2^31`` (``power``), in both readers.
"""

from __future__ import annotations

import re

from esbubble.ingest.fonts import is_symbol_font

_EXPONENT = re.compile(r"[-−]?\d+")
_PRIVATE_USE = 0xF000  # symbol fonts' codes as Word and many PDFs write them: U+F020 … U+F0FF

_SYMBOL = dict(
    zip(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\"$'*-@\\^~",
        "ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖαβχδεφγηιϕκλμνοπθρστυϖωξψζ∀∃∋∗−≅∴⊥∼",
        strict=True,
    )
) | {
    "\xa2": "′", "\xa3": "≤", "\xa5": "∞", "\xac": "←", "\xae": "→", "\xb0": "°", "\xb1": "±",
    "\xb2": "″", "\xb3": "≥", "\xb4": "×", "\xb6": "∂", "\xb7": "•", "\xb8": "÷", "\xb9": "≠",
    "\xbb": "≈", "\xc4": "⊗", "\xc5": "⊕", "\xc7": "∩", "\xc8": "∪", "\xce": "∈", "\xcf": "∉",
    "\xd1": "∇", "\xd5": "∏", "\xd6": "√", "\xe5": "∑", "\xf2": "∫",
}  # fmt: skip
# The marks of Wingdings a document uses as text (ticks and crosses in tables, bullets, arrows).
_WINGDINGS = {
    0x6C: "●", 0x6E: "■", 0x6F: "□", 0x9F: "•", 0xA7: "▪", 0xA8: "◻", 0xD8: "➢", 0xDF: "←", 0xE0: "→",
    0xE1: "↑", 0xE2: "↓", 0xE8: "➔",
    0xF0: "⇨", 0xFB: "✗", 0xFC: "✓", 0xFD: "☒", 0xFE: "☑",
}  # fmt: skip

# Text set in the Symbol font: each code (or its private-use copy) as its sign.
SYMBOL_SIGNS = str.maketrans(
    _SYMBOL | {chr(_PRIVATE_USE + code): _SYMBOL.get(chr(code), chr(code)) for code in range(0x20, 0x100)}
)


def symbol(font: str, code: int) -> str:
    """The sign a symbol font sets at ``code`` (Word's ``w:char``, often U+F0xx): Symbol's, a known
    Wingdings mark, any other font's character; nothing for a Wingdings picture or a private-use
    code of another font, which no text renders."""
    low = code - _PRIVATE_USE if _PRIVATE_USE <= code <= _PRIVATE_USE + 0xFF else code
    if is_symbol_font(font):
        return chr(low).translate(SYMBOL_SIGNS) if low < 0x100 else ""
    name = font.strip().lower()
    if name.startswith("wingdings"):
        return _WINGDINGS.get(low, "") if name == "wingdings" else ""
    return chr(code) if low == code else ""


def power(before: str, raised: str) -> str | None:
    """A superscript ``raised`` after the text ``before``, written as a power when it is a number
    right after a digit (``2`` ``31`` is 2 to the 31st, not 231: ``^31``); None otherwise (a
    footnote mark after a word, an ordinal's ``th``)."""
    return f"^{raised}" if before[-1:].isdigit() and _EXPONENT.fullmatch(raised) else None


def footnote_mark(before: str, raised: str) -> bool:
    """Whether a superscript ``raised`` right after the text ``before`` is a footnote mark that stands
    apart from its word: a letter raised right after a letter (a table's column ``# of vectors``
    ``b``, CRAM's ``SLICE_HEADER`` ``a``), which glued on read ``vectorsb``. An ordinal's ``th``
    after a digit and a number after a word are left as they are."""
    return before[-1:].isalpha() and raised[:1].isalpha()
