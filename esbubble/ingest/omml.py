"""Office Math (OMML, ``m:oMath``) as linear text: ``E^adj(r)``, ``λ/(10|m|)``, ``√(x)``.

Word stores an equation as a tree of math objects, not as runs of text, so a
reader that walks ``w:r`` runs drops it and leaves a gap (``depend on the
number of dipoles () …``). Here each object is written as one would type it:
a superscript after ``^``, a subscript after ``_``, a fraction's numerator and
denominator around ``/``, a delimiter with its characters (``(`` and ``)``
unless the equation sets others), a radical after ``√``, an n-ary operator
(``∑``, ``∫``) before its limits and its operand. Any other object (a function,
an accent, a matrix, a box) is its parts' text in order; property elements
(``m:…Pr``) hold no text.
"""

from __future__ import annotations

from typing import Any

from docx.oxml.ns import qn

_T = qn("m:t")
_VAL = qn("m:val")
_DEFAULT_NARY = "∫"


def math_text(element: Any) -> str:
    """The linear text of an OMML element (an ``m:oMath`` or any object in it)."""
    tag = element.tag
    if tag == qn("m:r"):
        return "".join(t.text or "" for t in element.iter(_T))
    if tag == qn("m:sSup"):
        return _part(element, "m:e") + "^" + _part(element, "m:sup")
    if tag == qn("m:sSub"):
        return _part(element, "m:e") + "_" + _part(element, "m:sub")
    if tag == qn("m:sSubSup"):
        return _part(element, "m:e") + "_" + _part(element, "m:sub") + "^" + _part(element, "m:sup")
    if tag == qn("m:sPre"):
        return "_" + _part(element, "m:sub") + "^" + _part(element, "m:sup") + _part(element, "m:e")
    if tag == qn("m:f"):
        return _part(element, "m:num") + "/" + _part(element, "m:den")
    if tag == qn("m:d"):
        begin, end = (
            _property(element, "m:dPr", "m:begChr", "("),
            _property(element, "m:dPr", "m:endChr", ")"),
        )
        separator = _property(element, "m:dPr", "m:sepChr", "|")
        return begin + separator.join(math_text(e) for e in element.findall(qn("m:e"))) + end
    if tag == qn("m:rad"):
        degree = _part(element, "m:deg")
        return ("^" + degree if degree else "") + "√" + _part(element, "m:e")
    if tag == qn("m:nary"):
        sign = _property(element, "m:naryPr", "m:chr", _DEFAULT_NARY)
        sub, sup = _part(element, "m:sub"), _part(element, "m:sup")
        return sign + ("_" + sub if sub else "") + ("^" + sup if sup else "") + _part(element, "m:e")
    return "".join(math_text(child) for child in element if not _is_property(child))


def _part(element: Any, name: str) -> str:
    found = element.find(qn(name))
    return math_text(found) if found is not None else ""


def _property(element: Any, properties: str, name: str, default: str) -> str:
    """A character an object's properties set (a delimiter's ``m:begChr``), else Word's default."""
    found = element.find(f"{qn(properties)}/{qn(name)}")
    return found.get(_VAL, default) if found is not None else default


def _is_property(element: Any) -> bool:
    tag = element.tag if isinstance(element.tag, str) else ""
    return tag.endswith("Pr")
