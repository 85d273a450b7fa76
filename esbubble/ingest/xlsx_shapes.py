"""The text of a workbook's text boxes and shapes, which openpyxl does not read.

A workbook's instructions are often a text box drawn over a sheet (MITRE's INFORM assessment tool
explains its scoring, ``0.5*DM+0.3*CTI+0.2*T&E``, in one on its ``Introduction`` sheet), not cells.
Each sheet's drawing part (``xl/drawings/drawingN.xml``, through the sheet's relationships) anchors
shapes to cells; a shape's text body holds DrawingML paragraphs (``a:p``) of runs (``a:t``), line
breaks (``a:br``) and fields. A shape Excel draws in place of another it cannot show (the
``mc:Fallback`` of an ``mc:AlternateContent``: "This chart isn't available in your version of
Excel") is not read: what Excel shows is the ``mc:Choice``.
"""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from esbubble.ingest.segment import normalise_space

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_RELATIONSHIP = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_PACKAGE_RELATIONSHIPS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_DRAWING = "{http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_DRAWING_TYPE = "/drawing"  # how a sheet's relationship to its drawing part ends its type


@dataclass(frozen=True)
class TextBox:
    """A shape's text: where it is anchored (1-based row and column; 0 for an absolute anchor) and its
    paragraphs, each whitespace-normalised, empty ones left out."""

    row: int
    column: int
    paragraphs: tuple[str, ...]


def _xml(archive: zipfile.ZipFile, part: str) -> ElementTree.Element | None:
    try:
        return ElementTree.fromstring(archive.read(part))
    except KeyError:  # the part is named but not in the package
        return None


def _targets(archive: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """The part's relationships: id → (type, the target's part name)."""
    folder, name = posixpath.split(part)
    rels = _xml(archive, posixpath.join(folder, "_rels", f"{name}.rels"))
    if rels is None:
        return {}
    targets: dict[str, tuple[str, str]] = {}
    for rel in rels.iter(f"{_PACKAGE_RELATIONSHIPS}Relationship"):
        target = rel.get("Target", "")
        resolved = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
        targets[rel.get("Id", "")] = (rel.get("Type", ""), posixpath.normpath(resolved))
    return targets


def _shown(element: ElementTree.Element, tags: tuple[str, ...]) -> Iterator[ElementTree.Element]:
    """The elements with one of ``tags`` under ``element``, in document order, none under an
    ``mc:Fallback`` nor under another of them (a group's shapes are found through the group)."""
    for child in element:
        if child.tag in tags:
            yield child
        elif child.tag != _FALLBACK:
            yield from _shown(child, tags)


def _paragraphs(shape: ElementTree.Element) -> tuple[str, ...]:
    body = shape.find(f"{_DRAWING}txBody")
    if body is None:
        return ()
    texts = []
    for paragraph in body.iter(f"{_A}p"):
        parts = [
            (node.text or "") if node.tag == f"{_A}t" else " "
            for node in paragraph.iter()
            if node.tag in (f"{_A}t", f"{_A}br")
        ]
        texts.append(normalise_space("".join(parts)))
    return tuple(text for text in texts if text)


def _anchor_cell(anchor: ElementTree.Element) -> tuple[int, int]:
    start = anchor.find(f"{_DRAWING}from")
    if start is None:
        return 0, 0
    row, column = start.findtext(f"{_DRAWING}row", "0"), start.findtext(f"{_DRAWING}col", "0")
    return int(row) + 1, int(column) + 1


_ANCHORS = (f"{_DRAWING}twoCellAnchor", f"{_DRAWING}oneCellAnchor", f"{_DRAWING}absoluteAnchor")


def _text_boxes(drawing: ElementTree.Element) -> list[TextBox]:
    boxes: list[TextBox] = []
    for anchor in _shown(drawing, _ANCHORS):
        row, column = _anchor_cell(anchor)
        for shape in _shown(anchor, (f"{_DRAWING}sp",)):
            paragraphs = _paragraphs(shape)
            if paragraphs:
                boxes.append(TextBox(row, column, paragraphs))
    return boxes


def text_boxes(path: Path) -> dict[str, list[TextBox]]:
    """Each sheet's text boxes (by sheet name), in the order of their anchors down and across."""
    with zipfile.ZipFile(path) as archive:
        workbook = _xml(archive, "xl/workbook.xml")
        if workbook is None:
            return {}
        sheets = _targets(archive, "xl/workbook.xml")
        found: dict[str, list[TextBox]] = {}
        for sheet in workbook.iter(f"{_MAIN}sheet"):
            _, part = sheets.get(sheet.get(_RELATIONSHIP, ""), ("", ""))
            if not part:
                continue
            boxes = [
                box
                for kind, target in _targets(archive, part).values()
                if kind.endswith(_DRAWING_TYPE)
                if (drawing := _xml(archive, target)) is not None
                for box in _text_boxes(drawing)
            ]
            if boxes:
                found[sheet.get("name", "")] = sorted(boxes, key=lambda box: (box.row, box.column))
        return found
