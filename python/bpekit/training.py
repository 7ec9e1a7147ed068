"""Training a byte-level BPE vocabulary, in two public phases.

``count_pretokens`` reads the corpus once and returns ``WordCounts``;
``train_from_counts`` runs the merge loop; ``train_bpe`` does both. Counting once and
training many vocabulary sizes, or counting shards apart and adding the counts, gives
the same result as one ``train_bpe`` call.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
>>> _ = path.write_text("low low lower<|endoftext|>newest")
>>> vocab, merges = train_bpe(path, 260, ["<|endoftext|>"])
>>> merges[:2]
[(b'o', b'w'), (b'l', b'ow')]
>>> vocab[256]
b'<|endoftext|>'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from bpekit import _core
from bpekit._core import WordCounts
from bpekit._progress import ProgressBar
from bpekit._threads import check_num_threads

__all__ = ["WordCounts", "count_pretokens", "resolve_inputs", "train_bpe", "train_from_counts"]

PathLike = str | os.PathLike[str]
Inputs = PathLike | Iterable[PathLike]


def resolve_inputs(inputs: Inputs) -> list[Path]:
    """The files named by ``inputs``: a path, a list of paths, or directories (their
    files, recursively, sorted by path, hidden ones skipped).

    Raises ``FileNotFoundError`` naming the first path that does not exist.
    """
    items = [inputs] if isinstance(inputs, str | os.PathLike) else list(inputs)
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            if not found:
                raise ValueError(f"{path}: directory holds no files to read")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or directory")
    if not files:
        raise ValueError("no input files given")
    return files


def _bar(enabled: bool, desc: str, unit: str) -> ProgressBar | None:
    return ProgressBar(desc, unit=unit) if enabled else None


def _check_special_tokens(special_tokens: Sequence[str] | None) -> list[str]:
    if special_tokens is None:
        return []
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a list of strings, not a single string")
    tokens = list(special_tokens)
    for t in tokens:
        if not isinstance(t, str):
            raise TypeError(f"special tokens must be str, got {type(t).__name__}: {t!r}")
    return tokens


def count_pretokens(
    paths: Inputs,
    special_tokens: Sequence[str] | None = None,
    *,
    pattern: str = "gpt2",
    num_threads: int | None = None,
    chunk_size: int = 0,
    errors: str = "strict",
    progress: bool = False,
) -> WordCounts:
    """Counts the pre-tokens of the input files (split on every special token first).

    ``errors`` is how invalid UTF-8 is handled: ``"strict"`` (an error naming the file
    and byte offset), ``"replace"`` or ``"ignore"``, as in ``bytes.decode``.
    ``num_threads`` defaults to all cores; ``chunk_size`` (bytes, 0 = automatic) only
    changes how work is split, never the result.
    """
    files = resolve_inputs(paths)
    num_threads = check_num_threads(num_threads)
    if chunk_size < 0:
        raise ValueError(f"chunk_size must be 0 (automatic) or a positive number of bytes, got {chunk_size}")
    bar = _bar(progress, "counting", "bytes")
    completed = False
    try:
        counts = _core.count_pretokens(
            [str(f) for f in files],
            _check_special_tokens(special_tokens),
            pattern=pattern,
            num_threads=num_threads,
            chunk_size=chunk_size,
            errors=errors,
            progress=bar,
        )
        completed = True
        return counts
    finally:
        if bar is not None:
            bar.close(completed)


# The most tokens bpekit's encoder holds (ids are 21 bits in its pair table).
MAX_VOCAB_SIZE = (1 << 21) - 1


def check_vocab_size(vocab_size: int, specials: Sequence[str]) -> None:
    """Refuses a ``vocab_size`` that is not an int, below the byte and special tokens,
    or beyond what the encoder can hold, before any work starts."""
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < 256 + len(specials):
        raise ValueError(
            f"vocab_size {vocab_size} is too small: it must be at least 256 byte tokens "
            f"+ {len(specials)} special tokens = {256 + len(specials)}"
        )
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size {vocab_size} is too large: bpekit's encoder holds at most {MAX_VOCAB_SIZE:,} tokens"
        )


def train_from_counts(
    counts: WordCounts,
    vocab_size: int,
    special_tokens: Sequence[str] | None = None,
    *,
    progress: bool = False,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Runs the merge loop on ``counts``.

    Returns ``(vocab, merges)``: ids 0..255 are the bytes by value, then the special
    tokens in the order given, then one token per merge in creation order. Fewer
    merges are made when no pair is left to merge.
    """
    specials = _check_special_tokens(special_tokens)
    check_vocab_size(vocab_size, specials)
    bar = _bar(progress, "merging", "merges")
    completed = False
    try:
        vocab, merges = _core.train_from_counts(counts, vocab_size, specials, progress=bar)
        completed = True
    finally:
        if bar is not None:
            bar.close(completed)
    return vocab, merges


def train_bpe(
    input_path: Inputs,
    vocab_size: int,
    special_tokens: Sequence[str] | None = None,
    *,
    pattern: str = "gpt2",
    num_threads: int | None = None,
    chunk_size: int = 0,
    errors: str = "strict",
    progress: bool = False,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Trains a byte-level BPE vocabulary on files, with CS336 semantics.

    ``input_path`` is a path, a list of paths or a directory; ``.gz`` files are read
    transparently. See ``count_pretokens`` and ``train_from_counts`` for the options.
    """
    specials = _check_special_tokens(special_tokens)
    check_vocab_size(vocab_size, specials)
    counts = count_pretokens(
        input_path,
        specials,
        pattern=pattern,
        num_threads=num_threads,
        chunk_size=chunk_size,
        errors=errors,
        progress=progress,
    )
    return train_from_counts(counts, vocab_size, specials, progress=progress)
