"""A tokenizer folder: ``vocab.json`` + ``merges.txt`` (GPT-2 format) and ``bpekit.json``.

The GPT-2 files hold tokens and merges but not the pre-tokenizer, and a vocabulary
made for cl100k's or o200k's pattern gives other ids under GPT-2's. ``bpekit.json``
keeps the pattern (and the special tokens, so none need guessing):

    {"pattern": "<regex>", "special_tokens": ["<|endoftext|>"], "name": "o200k_base"}

``"pattern"`` is the regex text, or one of the names of ``bpekit.patterns.NAMED``; a
bare word that is none of them is an error (a mistyped name, which as a regex would
match only itself).

A folder without it (the CS336 fixtures, HF's GPT-2 files) reads as GPT-2's pattern
with its special tokens inferred. The three files are written to temporary names
first and renamed only once all are written, so a failed save leaves the old files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from bpekit._atomic import atomic_write_all
from bpekit._paths import fspath
from bpekit.formats.gpt2 import parse_json, read_utf8, vocab_merges_bytes
from bpekit.patterns import NAMED, unknown_name

VOCAB = "vocab.json"
MERGES = "merges.txt"
CONFIG = "bpekit.json"


class FolderConfig(NamedTuple):
    """What ``bpekit.json`` holds: the pattern's regex text and the special tokens."""

    pattern: str
    special_tokens: list[str]
    name: str | None


def save_folder(
    directory: str | os.PathLike[str],
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str],
    pattern: str,
    name: str | None = None,
) -> None:
    """Writes ``vocab.json``, ``merges.txt`` and ``bpekit.json`` into ``directory`` (made
    if missing; an empty path is an error, not the current folder)."""
    d = Path(fspath(directory, "the folder to save into"))
    if d.exists() and not d.is_dir():
        raise NotADirectoryError(
            f"{d}: not a folder; the tokenizer is saved as vocab.json, merges.txt and bpekit.json in one"
        )
    vocab_data, merges_data = vocab_merges_bytes(vocab, merges)
    config = {"pattern": pattern, "special_tokens": list(special_tokens), "name": name}
    config_data = (json.dumps(config, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    atomic_write_all([(d / VOCAB, vocab_data), (d / MERGES, merges_data), (d / CONFIG, config_data)])


def load_config(directory: str | os.PathLike[str]) -> FolderConfig | None:
    """``bpekit.json`` of ``directory``, or ``None`` when it has none."""
    path = Path(directory) / CONFIG
    try:
        text = read_utf8(path)
    except FileNotFoundError:
        return None
    data = parse_json(path, text, "key", 'one object of "pattern", "special_tokens" and "name"')
    pattern = data.get("pattern") if isinstance(data, dict) else None
    specials = data.get("special_tokens", []) if isinstance(data, dict) else None
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f'{path}: expected "pattern", the pre-tokenizer regex, as a non-empty string')
    if unknown_name(pattern):
        # Read as a regex it matched only itself: the folder encoded text to no tokens.
        raise ValueError(
            f'{path}: "pattern" is {pattern!r}, which is no pattern name; '
            f"give one of {', '.join(NAMED)}, or the regex itself"
        )
    if not isinstance(specials, list) or not all(isinstance(t, str) for t in specials):
        raise ValueError(f'{path}: expected "special_tokens" to be a list of strings')
    if name is not None and not isinstance(name, str):
        raise ValueError(f'{path}: expected "name" to be a string')
    return FolderConfig(pattern, specials, name)
