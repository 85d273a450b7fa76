#!/usr/bin/env python3
"""Batch re-bubbling for cron and CI: ``esbubble rebubble`` with the connection taken from the environment.

    ELASTICSEARCH_URL=https://… ELASTICSEARCH_API_KEY=… \\
        python scripts/rebubble.py queries.jsonl --profile profile.toml --compare <BATCH_ID> --json

Every argument is passed to ``esbubble rebubble`` (see ``--help``); the
connection comes from ELASTICSEARCH_URL / _API_KEY / _USERNAME / _PASSWORD /
_CA_CERTS, ESBUBBLE_PREFIX and ESBUBBLE_CONFIG (no URL: the embedded engine).
Exit codes are the CLI's: 0 ok, 1 user error, 2 usage, 3 cluster unreachable or queries
failed (the resume command is printed), 4 audit records neither written nor spooled.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from esbubble.app.cli import cli


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    cli.main(args=["rebubble", *args], prog_name="rebubble.py")


if __name__ == "__main__":
    main()
