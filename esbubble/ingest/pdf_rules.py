"""Underscores a PDF draws as short rules instead of setting a glyph.

LaTeX documents often draw ``\\_`` as a rule: a short line at the baseline, between the runs of
text either side. Read as text alone, the identifier falls apart at each one: the ZipCPU
specification's ``OPT_MULTIPLY`` read ``OPT MULTIPLY``, which neither a question quoting the name
nor the engine's tokenizer (it keeps ``opt_multiply`` one word) matches. ``PageRules`` follows a
page's operators (pypdf's ``visitor_operand_before``): the short horizontal rules painted, and
where the text shown before each one ends. ``underscore`` then says whether a rule joins two runs
of a line: drawn after the run before ends, up to where the next starts, at the baseline. An
underline starts under its word, a table's rule is longer than a character, and a dash or a
fraction bar sits higher, so none of them joins two runs so.

Where the text before the rule ends is what tells ``OPT_MULTIPLY`` from ``and _ram_image_start``
(a linker symbol that opens with an underscore): LaTeX kerns the rule 0.06 of the font size from the
letter before it, and a space is four times that. The end is measured from the font's glyph widths
and the text operator's own displacements, as the page sets it; where the font gives no widths, the
rule is taken to be inside the word.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

_MIN_WIDTH = 0.2  # an underscore drawn as a rule is 0.2 to 0.8 of the font size wide (LaTeX's: 0.3)
_MAX_WIDTH = 0.8
_MAX_THICKNESS = 1.5  # points: a rule thicker than this is a box or a bar
_MAX_LENGTH = 24.0  # points: a rule longer than this is no character (0.8 of a 30-point font)
_TOUCH = 0.3  # of the font size: how close the rule's ends are to the runs it joins
_BELOW = 0.25  # of the font size: how far below the baseline the rule may be drawn
_ABOVE = 0.15  # and above it (a dash or a minus sits at about 0.25)
_FAR = 0.6  # of the font size: a rule further from the run before is not between the two (a space: 0.33)
_SPACE = 0.15  # of the font size: a gap wider than this before the rule is a space (LaTeX's kern: 0.06)
_DEFAULT_WIDTH = 500.0  # a glyph's advance (thousandths of the font size) past the font's /Widths
_Point = tuple[float, float]


def _at(cm: Sequence[float], x: float, y: float) -> _Point:
    return (cm[0] * x + cm[2] * y + cm[4], cm[1] * x + cm[3] * y + cm[5])


def resolved(value: Any) -> Any:
    """A PDF object itself, where a dictionary holds a reference to it."""
    return value.get_object() if hasattr(value, "get_object") else value


def glyph_widths(font: Mapping[str, Any] | None) -> Callable[[int], float] | None:
    """A simple font's advance per character code, in thousandths of the font size, from its
    ``/Widths`` (None for a font without them, a composite font or none given; a width that is not a
    number raises ``TypeError`` or ``ValueError`` when asked for)."""
    if not font:
        return None
    widths, first = resolved(font.get("/Widths")), resolved(font.get("/FirstChar"))
    try:
        offset, known = int(first), len(widths)
    except (TypeError, ValueError):
        return None

    table: dict[int, float] = {}

    def width(code: int) -> float:
        found = table.get(code)
        if found is None:
            at = code - offset
            found = table[code] = float(resolved(widths[at])) if 0 <= at < known else _DEFAULT_WIDTH
        return found

    return width


def _codes(shown: Any) -> bytes | None:
    """A text operator's string as the character codes it shows."""
    original = getattr(shown, "original_bytes", None)
    if isinstance(original, bytes):
        return original
    if isinstance(shown, bytes):
        return shown
    try:
        return str(shown).encode("latin-1")
    except UnicodeEncodeError:
        return None


class PageRules:
    """What one page paints besides its text that tells an underscore drawn as a rule."""

    __slots__ = (
        "_char_space",
        "_font",
        "_fonts",
        "_path",
        "_rules",
        "_scale",
        "_size",
        "_text_end",
        "_widths",
        "_word_space",
    )

    def __init__(self, fonts: Mapping[str, Any] | None = None) -> None:
        self._fonts = fonts or {}  # the page's font resources, by name
        self._widths: dict[str, Callable[[int], float] | None] = {}  # each font's glyph widths, by name
        self._font: Callable[[int], float] | None = None  # the current font's widths
        self._size = 0.0
        self._char_space = 0.0  # Tc
        self._word_space = 0.0  # Tw
        self._scale = 1.0  # Tz
        self._text_end: float | None = None  # where the text shown last ends (x, page space)
        self._path: list[list[_Point]] = []  # the path being built: its subpaths' points, page space
        # each rule: (left, right, y, where the text shown before it ends, None when not known)
        self._rules: list[tuple[float, float, float, float | None]] = []

    def visit(
        self, operator: bytes, operands: Sequence[Any], cm: Sequence[float], tm: Sequence[float]
    ) -> None:
        """pypdf's ``visitor_operand_before``: follow the text state and the path operators."""
        if operator in {b"TJ", b"Tj"} and operands:
            self._text_end = self._end_of(operands[0], cm, tm, spaced=operator == b"TJ")
        elif operator in {b"'", b'"'}:
            self._text_end = None  # shown on the next line, from a place not yet known here
        elif operator == b"Tf" and len(operands) == 2:
            name = str(operands[0])
            if name not in self._widths:
                self._widths[name] = glyph_widths(resolved(self._fonts.get(name)))
            self._font = self._widths[name]
            self._size = float(operands[1])
        elif operator in {b"Tc", b"Tw", b"Tz"} and operands:
            self._text_state(operator, float(operands[0]))
        else:
            self._follow_path(operator, operands, cm)

    def _text_state(self, operator: bytes, value: float) -> None:
        if operator == b"Tc":
            self._char_space = value
        elif operator == b"Tw":
            self._word_space = value
        else:
            self._scale = value / 100.0

    def _end_of(self, shown: Any, cm: Sequence[float], tm: Sequence[float], *, spaced: bool) -> float | None:
        """Where a Tj's string or a TJ's array, set from ``tm``, ends on the page (x)."""
        widths = self._font
        if widths is None:
            return None
        try:
            advance = self._advance(widths, shown if spaced else [shown])
        except (TypeError, ValueError):
            return None
        if advance is None:
            return None
        return _at(cm, tm[4] + advance * tm[0], tm[5] + advance * tm[1])[0]

    def _advance(self, widths: Callable[[int], float], items: Sequence[Any]) -> float | None:
        """How far a text operator's items move the text position (text space, before the matrix)."""
        advance = 0.0
        for item in items:
            if isinstance(item, (int, float)):
                advance -= float(item) / 1000.0 * self._size * self._scale
                continue
            codes = _codes(item)
            if codes is None:
                return None
            for code in codes:
                glyph = widths(code) / 1000.0 * self._size + self._char_space
                advance += (glyph + (self._word_space if code == 0x20 else 0.0)) * self._scale
        return advance

    def _follow_path(self, operator: bytes, operands: Sequence[Any], cm: Sequence[float]) -> None:
        if operator == b"m" and len(operands) == 2:
            self._path.append([_at(cm, float(operands[0]), float(operands[1]))])
        elif operator == b"l" and len(operands) == 2 and self._path:
            self._path[-1].append(_at(cm, float(operands[0]), float(operands[1])))
        elif operator == b"re" and len(operands) == 4:
            x, y, w, h = (float(v) for v in operands)
            self._path.append([_at(cm, x, y), _at(cm, x + w, y), _at(cm, x + w, y + h), _at(cm, x, y + h)])
        elif operator in {b"S", b"s"}:
            self._keep(stroked=True)
        elif operator in {b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*"}:
            self._keep(stroked=False)
        elif operator == b"n":
            self._path = []

    def _keep(self, *, stroked: bool) -> None:
        """Keep each painted subpath that is one horizontal stroke or a thin filled rectangle short
        enough to be a character."""
        for points in self._path:
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            if (
                (len(points) == 2 if stroked else len(points) == 4)
                and max(ys) - min(ys) <= _MAX_THICKNESS
                and max(xs) - min(xs) <= _MAX_LENGTH
            ):
                self._rules.append((min(xs), max(xs), (min(ys) + max(ys)) / 2, self._text_end))
        self._path = []

    def underscore(self, end: float, x: float, y: float, size: float) -> str | None:
        """What a rule drawn between the run before, ending at ``end`` by its glyphs' widths, and the
        next one, starting at ``x``, both on the baseline ``y`` in a font of ``size`` points, reads as:
        ``_`` inside a word, `` _`` after a space, None where no rule joins the two runs.

        The rule ends where the next run starts and begins right after the run before ends (within
        a space), by the later of two measures: ``end``, and where the page's text shown before the
        rule ends. Either falls short of the run's true end at times (the spaces of a justified run
        stretch past its glyphs' widths; a rule painted before the run's text follows an earlier
        run): an underline under a letter the runs miss (``D`` ``ata``, where the GEDCOM
        specification underlines its name's initials) is further from the run before than a
        space. The text shown before the rule also tells a space before it, where it ends no sooner
        than ``end``.
        """
        for left, right, at, shown_end in self._rules:
            if (
                _MIN_WIDTH * size <= right - left <= _MAX_WIDTH * size
                and -_TOUCH * size
                <= left - (end if shown_end is None else max(end, shown_end))
                <= _FAR * size
                and abs(x - right) <= _TOUCH * size
                and y - _BELOW * size <= at <= y + _ABOVE * size
            ):
                # the text shown before the rule is the run before only if it ends no sooner
                spaced = (
                    shown_end is not None
                    and shown_end >= end - _TOUCH * size
                    and left - shown_end > _SPACE * size
                )
                return " _" if spaced else "_"
        return None
