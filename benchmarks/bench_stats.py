"""Small helpers shared by the benchmark scripts: timing, percentiles, the machine."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in 0..1); the benchmarks report p50 and p95."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    rank = max(1, round(share * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def timed_ms(action: Callable[[], object]) -> float:
    """Wall-clock milliseconds of one call."""
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000.0


def cpu_model() -> str:
    """The CPU model from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> dict[str, object]:
    """Cores, CPU model, Python and the load average when the numbers were taken."""
    return {
        "cores": os.cpu_count() or 0,
        "cpu_model": cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1024 * 1024 if platform.system() == "Darwin" else 1024
    return round(peak / scale, 1)
