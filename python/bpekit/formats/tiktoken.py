"""tiktoken's ``.tiktoken`` rank files: one ``base64(token) rank`` per line.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.tiktoken"
>>> save_tiktoken_bpe({b"a": 0, b"b": 1, b"ab": 2}, path)
>>> path.read_text()
'YQ== 0\\nYg== 1\\nYWI= 2\\n'
>>> load_tiktoken_bpe(path)
{b'a': 0, b'b': 1, b'ab': 2}
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from bpekit import _core
from bpekit._atomic import atomic_write
from bpekit._paths import fspath
from bpekit.formats.parts import Loaded

__all__ = ["load_tiktoken_bpe", "parse_tiktoken_bpe", "read_rank_file", "save_tiktoken_bpe"]


def parse_tiktoken_bpe(data: bytes, where: str = "<bytes>") -> dict[bytes, int]:
    """Parses the contents of a ``.tiktoken`` file; errors name the line.

    A token or a rank given twice, or a rank outside ``0..2**32-1``, is an error (tiktoken
    keeps the last of two ranks, which leaves a hole in the ids).
    """
    ranks: dict[bytes, int] = {}
    lines_of_ranks: dict[int, int] = {}
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            token_b64, rank_text = line.split()
            token, rank = base64.b64decode(token_b64, validate=True), int(rank_text)
        except (ValueError, binascii.Error) as e:
            raise ValueError(
                f"{where}:{lineno}: expected 'base64-token rank', got {line[:80]!r} ({e})"
            ) from None
        if not 0 <= rank < 1 << 32:
            raise ValueError(f"{where}:{lineno}: rank {rank} is outside 0..2**32-1")
        if token in ranks:
            raise ValueError(f"{where}:{lineno}: token {token!r} was given rank {ranks[token]} before")
        if rank in lines_of_ranks:
            raise ValueError(f"{where}:{lineno}: rank {rank} was given on line {lines_of_ranks[rank]} too")
        ranks[token] = rank
        lines_of_ranks[rank] = lineno
    return ranks


def read_rank_file(
    data: bytes,
    where: str,
    special_tokens: Mapping[str, int],
    *,
    file_format: Literal["tiktoken", "gpt2"],
    pattern: str,
    name: str,
) -> Loaded:
    """A tiktoken-style encoding of a rank file's bytes, parsed by the core: a
    ``.tiktoken`` file (as ``parse_tiktoken_bpe`` reads it, ~10x faster) or GPT-2's
    ``vocab.bpe`` (as ``bpekit.encodings._gpt2_ranks`` reads it, ~20x faster).
    ``where`` names the file in errors."""
    specials = [(str(t), int(i)) for t, i in special_tokens.items()]
    core = _core.Encoder.from_rank_file(data, where, file_format, specials, pattern)
    return Loaded(core, name, frozenset())


def load_tiktoken_bpe(path: str | os.PathLike[str]) -> dict[bytes, int]:
    """Reads a ``.tiktoken`` file into ``{token bytes: rank}``."""
    p = Path(path)
    return parse_tiktoken_bpe(p.read_bytes(), str(p))


def tiktoken_bytes(ranks: Mapping[bytes, int]) -> bytes:
    """``{token bytes: rank}`` as the text of a ``.tiktoken`` file, sorted by rank."""
    lines = [
        base64.b64encode(token) + b" " + str(rank).encode()
        for token, rank in sorted(ranks.items(), key=lambda kv: kv[1])
    ]
    return b"\n".join(lines) + b"\n" if lines else b""


def save_tiktoken_bpe(ranks: Mapping[bytes, int], path: str | os.PathLike[str]) -> None:
    """Writes ``{token bytes: rank}`` as a ``.tiktoken`` file, sorted by rank (atomically)."""
    out = Path(fspath(path, "the .tiktoken path"))
    atomic_write(out, tiktoken_bytes(ranks))
