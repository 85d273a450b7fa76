"""The CLI imports what a command uses, and the package's public names still resolve.

Speed itself is a benchmark (benchmarks/bench_cli.py); here we check the cause
of a slow start: heavy modules imported by ``esbubble --help``.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

import esbubble
from esbubble.core.tokens import get_encoding

HEAVY = (
    "elasticsearch",
    "elastic_transport",
    "pydantic",
    "rich",
    "tiktoken",
    "openpyxl",
    "pypdf",
    "numpy",
    "tokenizers",
)

_PROBE = """
import sys
from esbubble.app.cli import cli
try:
    cli.main(sys.argv[1:], prog_name="esbubble", standalone_mode=False)
except SystemExit:
    pass
heavy = {heavy!r}
print("HEAVY:" + ",".join(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def _heavy_modules_after(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(heavy=HEAVY), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    marked = [line for line in done.stdout.splitlines() if line.startswith("HEAVY:")]
    assert len(marked) == 1, done.stdout[-500:]
    return marked[0].removeprefix("HEAVY:")


@pytest.mark.parametrize("args", [("--help",), ("ingest", "--help"), ("engine", "--help")])
def test_help_imports_no_heavy_module(args: tuple[str, ...]) -> None:
    assert _heavy_modules_after(*args) == ""


def test_public_names_resolve_lazily() -> None:
    from esbubble.config import BubbleConfig, load_profile
    from esbubble.models import Chunk

    assert esbubble.Chunk is Chunk
    assert esbubble.BubbleConfig is BubbleConfig
    assert esbubble.load_profile is load_profile
    assert set(esbubble.__all__) <= set(dir(esbubble))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = esbubble.nothing_here  # type: ignore[attr-defined]


def test_the_encoding_is_built_once_even_when_threads_ask_together() -> None:
    seen: list[object] = []

    def ask() -> None:
        seen.append(get_encoding("o200k_base"))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 4
    assert all(encoding is seen[0] for encoding in seen)


def test_the_library_imports_tiktoken_only_when_a_token_is_counted() -> None:
    probe = (
        "import sys\n"
        "import esbubble.app.runner, esbubble.app.rebubble, esbubble.app.evaluate\n"
        "import esbubble.app.deliver, esbubble.ingest\n"
        "print('tiktoken' in sys.modules)\n"
        "from esbubble.core.tokens import count_tokens\n"
        "count_tokens('hello world')\n"
        "print('tiktoken' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["False", "True"]
