"""The embedded engine's watchdog: ``python -m esbubble.store.watchdog HOME PID``.

Started detached next to the engine by ``start_daemon``. Every few seconds it
stops the engine once no command has used it for ``engine_idle_minutes``
(``[engine] idle_minutes``), and compacts the journal once it passes
``compact_journal_mb`` — both only while no command holds the engine — and
exits when the engine's process is gone. Killing it only loses the idle
stop; ``esbubble engine stop`` still works. An engine whose record disappeared
(its home deleted) is stopped, since no command can reach it any more.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from esbubble.store.engine import compact_if_large, daemon_status, is_engine_process, stop_if_idle
from esbubble.store.settings import load_settings

CHECK_EVERY_S = 5.0


def watch(home: Path, pid: int, *, check_every_s: float = CHECK_EVERY_S) -> None:
    """Run until the engine ``pid`` is no longer the recorded, answering daemon."""
    settings = load_settings(home=home)
    idle_s = settings.engine_idle_minutes * 60.0
    max_bytes = int(settings.compact_journal_mb * 1e6)
    while True:
        time.sleep(min(check_every_s, idle_s))
        status = daemon_status(settings)
        if not status.running or status.pid != pid:
            # Its record is gone (the home was deleted) or names another engine: nothing can reach
            # this one any more, so it must not run on forever.
            if is_engine_process(pid):  # not a process that took over a dead engine's pid
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            return
        if stop_if_idle(settings, idle_s):
            print(f"stopped the idle engine (pid {pid})", flush=True)
            return
        if compact_if_large(settings, max_bytes):
            print("compacted the journal", flush=True)


if __name__ == "__main__":
    watch(Path(sys.argv[1]), int(sys.argv[2]))
