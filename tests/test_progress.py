"""Progress bars: drawn on a terminal only, never with --json, thread-safe counts."""

from __future__ import annotations

import io
import threading

from rich.console import Console

from esbubble.app.progress import ProgressBar, wanted


class _Stream(io.StringIO):
    def __init__(self, *, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=120, color_system=None), out


def test_a_bar_is_wanted_only_on_a_terminal_without_json() -> None:
    assert wanted(as_json=False, stream=_Stream(tty=True))
    assert not wanted(as_json=True, stream=_Stream(tty=True))
    assert not wanted(as_json=False, stream=_Stream(tty=False))


def test_update_shows_label_count_and_item() -> None:
    console, out = _terminal()
    with ProgressBar("ingesting", enabled=True, console=console) as bar:
        for done, name in enumerate(["a.md", "b.xlsx", "c.pdf"], start=1):
            bar.update(done, 3, item=name)
    shown = out.getvalue()
    assert "ingesting" in shown and "3/3" in shown and "c.pdf" in shown


def test_advance_from_many_threads_counts_every_step() -> None:
    console, out = _terminal()
    with ProgressBar("re-bubbling", 100, enabled=True, console=console) as bar:

        def work() -> None:
            for _ in range(25):
                bar.advance(1)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert "100/100" in out.getvalue()


def test_a_disabled_bar_draws_nothing() -> None:
    console, out = _terminal()
    with ProgressBar("evaluating", 5, enabled=False, console=console) as bar:
        bar.advance(1)
        bar.update(5, 5, item="x")
    assert out.getvalue() == ""
