"""Word's automatic numbering: the number Word shows before a numbered paragraph (``1.5``, ``A.2``).

Word does not store a heading's number in its text: a heading style (or the
paragraph) points into a multi-level list of ``numbering.xml``, and Word counts
the list's paragraphs as it lays the document out. ``ListNumbers`` does the same
count, paragraph by paragraph in document order, so a heading reads ``1.5 High
Availability Support`` as it is printed and as the text refers to it ("see
section 1.5").

Read from the list definitions (ECMA-376 Part 1, §17.9): a paragraph's list
(``numId``) and level (``ilvl``) come from its own ``numPr``, else from its
style's (up the based-on chain), the level else from the list level that names
the style (``w:pStyle``); a list's levels give their start value, number format
(decimal, letters, roman; ``isLgl`` makes a level decimal) and text
(``%1.%2``), or a list style's (``numStyleLink``). Lists of one abstract
definition count together unless a list restarts a level
(``startOverride``); a level restarts when a level above it counts on. A
bullet, a level without a number (format ``none``) or a paragraph whose
``numId`` is 0 has no number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from docx.oxml.ns import qn

_VAL = qn("w:val")
_LEVEL_TEXT = re.compile(r"%([1-9])")
_LEVELS = 9
_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
          (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))  # fmt: skip


@dataclass(frozen=True)
class _Level:
    start: int
    fmt: str
    text: str
    legal: bool  # ``isLgl``: the numbers of the levels above are shown decimal


@dataclass
class _List:
    levels: dict[int, _Level]
    counters: list[int | None] = field(default_factory=lambda: [None] * _LEVELS)


def _child_val(element: Any, tag: str) -> str | None:
    found = element.find(qn(tag)) if element is not None else None
    return found.get(_VAL) if found is not None else None


def _int(value: str | None, default: int) -> int:
    return int(value) if value is not None and value.lstrip("-").isdigit() else default


def _letters(value: int) -> str:
    """1 → a, 26 → z, 27 → aa (Word repeats the letter)."""
    letter = chr(ord("a") + (value - 1) % 26)
    return letter * ((value - 1) // 26 + 1)


def _roman(value: int) -> str:
    out = []
    for amount, numeral in _ROMAN:
        count, value = divmod(value, amount)
        out.append(numeral * count)
    return "".join(out)


def format_number(value: int, fmt: str) -> str:
    """``value`` in a list level's number format (decimal for any format not known here)."""
    if fmt in ("lowerLetter", "upperLetter") and value > 0:
        text = _letters(value)
        return text.upper() if fmt == "upperLetter" else text
    if fmt in ("lowerRoman", "upperRoman") and value > 0:
        text = _roman(value)
        return text.upper() if fmt == "upperRoman" else text
    if fmt == "decimalZero" and 0 <= value < 10:
        return f"0{value}"
    return str(value)


def _levels(abstract: Any) -> dict[int, _Level]:
    levels: dict[int, _Level] = {}
    for lvl in abstract.findall(qn("w:lvl")):
        ilvl = _int(lvl.get(qn("w:ilvl")), -1)
        if 0 <= ilvl < _LEVELS:
            levels[ilvl] = _Level(
                start=_int(_child_val(lvl, "w:start"), 0),
                fmt=_child_val(lvl, "w:numFmt") or "decimal",
                text=_child_val(lvl, "w:lvlText") or "",
                legal=lvl.find(qn("w:isLgl")) is not None,
            )
    return levels


def _style_levels(abstract: Any) -> dict[str, int]:
    """The paragraph styles the abstract list's levels name (``w:pStyle``), to their level."""
    found: dict[str, int] = {}
    for lvl in abstract.findall(qn("w:lvl")):
        style = _child_val(lvl, "w:pStyle")
        if style is not None:
            found.setdefault(style, _int(lvl.get(qn("w:ilvl")), 0))
    return found


class ListNumbers:
    """The numbers of a document's numbered paragraphs, counted in document order (``number``)."""

    def __init__(self, document: Any) -> None:
        try:
            root = document.part.numbering_part.element
        except (KeyError, NotImplementedError):
            root = None
        found = root.findall(qn("w:abstractNum")) if root is not None else []
        # A list that takes its levels from a list style (``numStyleLink``) counts as the list that
        # defines that style (``styleLink``).
        styled = {_child_val(a, "w:styleLink"): a for a in found if a.find(qn("w:styleLink")) is not None}
        abstracts: dict[str, Any] = {
            a.get(qn("w:abstractNumId")): styled.get(_child_val(a, "w:numStyleLink"), a) for a in found
        }
        self._lists: dict[str, _List] = {}  # by abstract id, or by num id for a num that restarts levels
        self._num: dict[str, str] = {}  # num id -> the key of the list it counts in
        self._style_levels: dict[str, dict[str, int]] = {}  # num id -> style id -> level
        for num in root.findall(qn("w:num")) if root is not None else ():
            num_id, listed = num.get(qn("w:numId")), _child_val(num, "w:abstractNumId")
            abstract = abstracts.get(listed) if listed is not None else None
            abstract_id = abstract.get(qn("w:abstractNumId")) if abstract is not None else None
            if num_id is None or abstract_id is None or abstract is None:
                continue
            overrides = {
                _int(o.get(qn("w:ilvl")), 0): _int(_child_val(o, "w:startOverride"), 1)
                for o in num.findall(qn("w:lvlOverride"))
                if o.find(qn("w:startOverride")) is not None
            }
            if overrides:  # a list of its own, its restarted levels counting on from their new start
                key = f"num:{num_id}"
                self._lists[key] = restarted = _List(_levels(abstract))
                for ilvl, start in overrides.items():
                    if 0 <= ilvl < _LEVELS:
                        restarted.counters[ilvl] = start - 1
            else:
                key = f"abstract:{abstract_id}"
                if key not in self._lists:
                    self._lists[key] = _List(_levels(abstract))
            self._num[num_id] = key
            self._style_levels[num_id] = _style_levels(abstract)

    def _list_of(self, paragraph: Any, styles: list[Any]) -> tuple[str, int] | None:
        """The paragraph's (num id, level), from its own numbering or its styles'."""
        own = paragraph._p.pPr.numPr if paragraph._p.pPr is not None else None
        num_id = _child_val(own, "w:numId") if own is not None else None
        ilvl = _child_val(own, "w:ilvl") if own is not None else None
        for style in styles:
            if num_id is not None and ilvl is not None:
                break
            properties = style.element.pPr
            inherited = properties.numPr if properties is not None else None
            if inherited is not None:
                num_id = num_id if num_id is not None else _child_val(inherited, "w:numId")
                ilvl = ilvl if ilvl is not None else _child_val(inherited, "w:ilvl")
        if num_id is None or num_id == "0" or num_id not in self._num:
            return None
        if ilvl is None:
            named = self._style_levels.get(num_id, {})
            ilvl_value = next((named[s.style_id] for s in styles if s.style_id in named), 0)
        else:
            ilvl_value = _int(ilvl, 0)
        return num_id, ilvl_value

    def number(self, paragraph: Any, styles: list[Any]) -> str | None:
        """Count the paragraph if it is numbered, and return the number Word shows before it (None when
        it has none). Call it for every paragraph, in document order: numbers depend on those before."""
        found = self._list_of(paragraph, styles)
        if found is None:
            return None
        num_id, ilvl = found
        numbered = self._lists[self._num[num_id]]
        level = numbered.levels.get(ilvl)
        if level is None:
            return None
        counters = numbered.counters
        current = counters[ilvl]
        counters[ilvl] = level.start if current is None else current + 1
        for deeper in range(ilvl + 1, _LEVELS):
            counters[deeper] = None
        if level.fmt in ("bullet", "none") or not level.text:
            return None
        shown = _LEVEL_TEXT.sub(lambda m: self._shown(numbered, int(m.group(1)) - 1, level), level.text)
        return shown.strip()

    @staticmethod
    def _shown(numbered: _List, index: int, level: _Level) -> str:
        """Level ``index``'s number as shown in a level's text: its count (its start when it has not
        counted yet), in its own format, decimal under ``isLgl``."""
        own = numbered.levels.get(index)
        start = own.start if own is not None else 1
        value = numbered.counters[index]
        fmt = "decimal" if level.legal or own is None else own.fmt
        return format_number(start if value is None else value, fmt)
