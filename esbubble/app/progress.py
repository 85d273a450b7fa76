"""Progress bars for the long commands (``ingest``, ``rebubble``, ``eval``): rich, on stderr.

The library never draws anything: ``ingest_paths``, ``run_batch`` and
``evaluate`` take an optional callback, and the CLI passes ``ProgressBar``
methods as those callbacks. A bar is drawn only when stderr is a terminal and
``--json`` was not given (``wanted``), so pipes, logs and JSON consumers see
exactly what they saw before.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


def wanted(*, as_json: bool, stream: TextIO | None = None) -> bool:
    """Whether to draw a bar: stderr (or ``stream``) is a terminal and the output is not JSON."""
    target = sys.stderr if stream is None else stream
    return not as_json and target.isatty()


class ProgressBar:
    """One labelled bar of ``total`` steps; ``total`` may come with the first update.

    ``advance`` and ``update`` are thread-safe (``rebubble`` workers call them
    from several threads). Disabled, every method does nothing and rich is not
    even imported.
    """

    def __init__(
        self, label: str, total: int | None = None, *, enabled: bool, console: Console | None = None
    ) -> None:
        self.label = label
        self.enabled = enabled
        self._total = total
        self._console = console
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> ProgressBar:
        if self.enabled and self._total is not None:
            self._start(self._total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def _start(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = self._console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[item]}", style="dim"),
            console=console,
        )
        self._progress.start()
        self._task = self._progress.add_task(self.label, total=total, item="")

    def advance(self, count: int = 1, *, item: str = "") -> None:
        """``count`` more steps done (``item``: what was just finished, shown beside the bar)."""
        if not self.enabled:
            return
        with self._lock:
            if self._progress is None:
                self._start(self._total or 0)
            assert self._progress is not None and self._task is not None
            self._progress.update(self._task, advance=count, item=item)

    def update(self, done: int, total: int, *, item: str = "") -> None:
        """``done`` of ``total`` steps, for callbacks that report both (``ingest_paths``)."""
        if not self.enabled:
            return
        with self._lock:
            if self._progress is None:
                self._start(total)
            assert self._progress is not None and self._task is not None
            self._progress.update(self._task, completed=done, total=total, item=item)
