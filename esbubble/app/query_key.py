"""The key of the keyed query hash: 32 random bytes in ``<home>/query-hash.key`` (mode 0600).

Trace records and manifests carry ``query_hash`` so runs of the same query can
be paired (``rebubble --compare``) even when the query text is redacted. An
unkeyed SHA-256 would let anyone who reads the audit indices confirm a guessed
query; an HMAC-SHA256 under a key that stays in the user's home does not.
Runs are paired by hash only among runs made with the same home's key.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from esbubble.errors import ConfigError

KEY_FILE = "query-hash.key"


def _create(path: Path) -> None:
    """Write a new key beside ``path`` and link it in place: a reader never sees a half-written key,
    and of concurrent creators exactly one wins (``link`` fails when the name exists)."""
    staged = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(staged, path)
    finally:
        staged.unlink(missing_ok=True)


def query_key(home: Path) -> bytes:
    """The home's key, created (0600, in a 0700 home) on first use; safe against concurrent creators."""
    path = home / KEY_FILE
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            _create(path)
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"cannot read or create the query hash key {path}: {error}",
            hint="make ESBUBBLE_HOME writable, or point it at a folder you own",
        ) from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise ConfigError(
            f"the query hash key {path} is not a hex key of at least 16 bytes",
            hint="delete it to create a new one (runs hashed with the old key no longer pair by query)",
        )
    return key
