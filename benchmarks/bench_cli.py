"""CLI start-up: wall time of ``esbubble --help`` in a fresh process, like a user typing it.

    python benchmarks/bench_cli.py            # p50 / min / max over 10 runs, JSON on stdout
    python -X importtime -c "import esbubble.app.cli"  # where the import time goes

Each run is a new interpreter, so the number includes Python's own start-up
(``python_startup_s_p50``, timed the same way with ``python -c pass``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from bench_stats import median

HELP_ROUNDS = 10


def esbubble_command() -> list[str]:
    """The installed console script beside this interpreter, else the same entry point through ``-c``."""
    script = Path(sys.executable).with_name("esbubble")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from esbubble.app.cli import main; main()"]


def wall_times(command: list[str], rounds: int) -> list[float]:
    """Seconds per run of ``command`` (output discarded); one warm-up run first fills the OS cache."""
    subprocess.run(command, capture_output=True, check=True)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return times


def help_stats(rounds: int = HELP_ROUNDS) -> dict[str, float]:
    """``cli_help_s_p50/min/max`` for ``esbubble --help`` and ``python_startup_s_p50`` for comparison."""
    help_times = wall_times([*esbubble_command(), "--help"], rounds)
    bare = wall_times([sys.executable, "-c", "pass"], rounds)
    return {
        "cli_help_s_p50": round(median(help_times), 3),
        "cli_help_s_min": round(min(help_times), 3),
        "cli_help_s_max": round(max(help_times), 3),
        "python_startup_s_p50": round(median(bare), 3),
    }


if __name__ == "__main__":
    print(json.dumps(help_stats(), indent=2))
