"""What the document libraries warn about while reading a file, kept for the ingest report.

pypdf logs through ``logging`` ("incorrect startxref pointer", "Ignoring wrong
pointing object …") and openpyxl calls ``warnings.warn`` ("Data Validation
extension is not supported …"). Left alone, both end up on stderr as raw
lines with Python source positions, between esbubble's own output and
unrelated to the file they concern. ``captured_reader_warnings`` collects them
while one file is read, so the ingest report can list them under that file,
with the ``ReaderNote`` warnings of esbubble's own readers (a hidden sheet
left out), which read without a library's name.

``warnings.catch_warnings`` swaps process-wide state: ingest reads one file at a
time, on one thread, which is what makes this safe.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import PurePath

LIBRARIES: tuple[str, ...] = ("pypdf", "openpyxl", "docx")
MAX_DISTINCT = 20  # a damaged PDF can log the same complaint for every object


class ReaderNote(UserWarning):
    """What one of esbubble's own readers left out of a file on purpose (a hidden sheet), warned
    while reading it so the ingest report lists it under the file with the libraries' warnings."""


class _Collect(logging.Handler):
    def __init__(self, messages: list[str]) -> None:
        super().__init__(level=logging.DEBUG)
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.messages.append(f"{record.name.split('.')[0]}: {record.getMessage()}")


def _library_of(filename: str) -> str:
    parts = PurePath(filename).parts
    return next((name for name in LIBRARIES if name in parts), "python")


def _message(warning: warnings.WarningMessage) -> str:
    """A warning as the report lists it: a reader note as it is, a library's after the library's name."""
    if issubclass(warning.category, ReaderNote):
        return str(warning.message)
    return f"{_library_of(warning.filename)}: {warning.message}"


def summarise(messages: list[str]) -> list[str]:
    """Distinct messages in order of first appearance, repeats counted, at most ``MAX_DISTINCT``."""
    counts = Counter(messages)
    distinct = [f"{m} (×{counts[m]})" if counts[m] > 1 else m for m in dict.fromkeys(messages)]
    if len(distinct) > MAX_DISTINCT:
        distinct = [*distinct[:MAX_DISTINCT], f"… and {len(distinct) - MAX_DISTINCT} other messages"]
    return distinct


@contextlib.contextmanager
def captured_reader_warnings() -> Iterator[list[str]]:
    """Collect the libraries' warnings and log messages (WARNING and up) instead of printing them.

    The yielded list is filled when the block ends, summarised (see ``summarise``).
    """
    messages: list[str] = []
    result: list[str] = []
    handler = _Collect(messages)
    loggers = [logging.getLogger(name) for name in LIBRARIES]
    saved = [logger.propagate for logger in loggers]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for logger in loggers:
            logger.addHandler(handler)
            logger.propagate = False
        try:
            yield result
        finally:
            for logger, propagate in zip(loggers, saved, strict=True):
                logger.removeHandler(handler)
                logger.propagate = propagate
            messages.extend(map(_message, caught))
            result.extend(summarise(messages))
