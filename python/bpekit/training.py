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

import errno
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from bpekit import _core
from bpekit._core import WordCounts
from bpekit._paths import PathArg, fspath
from bpekit._progress import ProgressBar
from bpekit._threads import check_num_threads
from bpekit._utf8 import check_errors

__all__ = ["WordCounts", "count_pretokens", "resolve_inputs", "train_bpe", "train_from_counts"]

Inputs = PathArg | Iterable[PathArg]


def resolve_inputs(inputs: Inputs) -> list[Path]:
    """The files named by ``inputs``: a path (``str``, ``bytes`` or ``os.PathLike``), a
    list of paths, or directories (their files, recursively, sorted by path, hidden
    ones skipped).

    Raises ``FileNotFoundError`` naming the first path that does not exist, and an
    ``OSError`` naming one that cannot be read at all (a symbolic link loop, a path
    through a file); an empty path is a ``ValueError``, not the current folder.
    """
    items = [inputs] if isinstance(inputs, str | bytes | os.PathLike) else _listed(inputs)
    files: list[Path] = []
    for item in items:
        path = Path(fspath(item, "an input"))
        if _is_dir(path):
            files.extend(_files_under(path))
        else:
            files.append(path)
    if not files:
        raise ValueError("no input files given")
    return files


def _listed(inputs: Iterable[PathArg]) -> list[PathArg]:
    try:
        return list(inputs)
    except TypeError:
        raise TypeError(
            f"inputs must be a path (str, bytes or os.PathLike) or a list of paths, "
            f"not {type(inputs).__name__}: {inputs!r}"
        ) from None


def _is_dir(path: Path) -> bool:
    """Whether ``path`` is a directory; an error naming it when it is not there to read.
    (``Path.exists`` says False for a symbolic link loop, which read as "no such file".)"""
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except OSError as e:
        raise _unreadable(path, e) from None


def _files_under(folder: Path) -> list[Path]:
    """The files under ``folder``, recursively, sorted by path, hidden ones skipped. A
    broken symbolic link among them is an error naming it, not a file left out."""
    found = []
    for p in folder.rglob("*"):
        if any(part.startswith(".") for part in p.relative_to(folder).parts):
            continue
        if p.is_file():
            found.append(p)
        elif p.is_symlink():
            try:
                p.stat()  # a link to a folder is not followed (as `grep -r` does)
            except OSError as e:
                raise _unreadable(p, e) from None
    if not found:
        raise ValueError(f"{folder}: directory holds no files to read")
    return sorted(found)


# How errors of stat() are worded, as the core words its own ("PATH: no such file or
# directory"); Python's "[Errno 40] Too many levels of symbolic links" is less clear.
_STAT_ERRORS = {
    errno.ENOENT: "no such file or directory",
    errno.ELOOP: "symbolic link loop (too many levels of symbolic links)",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
}


def _unreadable(path: Path, e: OSError) -> OSError:
    """``e``, raised by ``path.stat()``, as an error of its own class naming ``path``."""
    if path.is_symlink() and e.errno == errno.ENOENT:
        what = f"a symbolic link to {os.readlink(path)}, which does not exist"
    else:
        what = _STAT_ERRORS.get(e.errno or 0, (e.strerror or str(e)).lower())
    error = type(e)(f"{path}: {what}")
    error.errno = e.errno  # for callers that look at it; str() stays the message
    return error


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
    errors = check_errors(errors)
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
    or beyond what the encoder can hold, and special tokens that no vocabulary can
    hold (``check_trainable_special_tokens``), before any work starts."""
    check_trainable_special_tokens(specials)
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


def check_trainable_special_tokens(specials: Sequence[str]) -> None:
    """Refuses a special token of one byte (``"\\n"``, ``"e"``): bytes 0..255 are tokens
    0..255 already, and a vocabulary cannot give the same bytes two ids (vocab.json
    maps each token to one id), so saving failed, after all the training.

    Counting may still split the corpus at such a text: pass it to ``count_pretokens``
    and not to ``train_from_counts``.

    >>> check_trainable_special_tokens(["<|endoftext|>", "\\n"])
    Traceback (most recent call last):
    ...
    ValueError: special token '\\n' is one byte, which is token 10 already: ...
    """
    for token in specials:
        data = token.encode("utf-8") if isinstance(token, str) else b""
        if len(data) == 1:
            raise ValueError(
                f"special token {token!r} is one byte, which is token {data[0]} already: a vocabulary "
                "cannot hold the same bytes twice, so special tokens to train with must be 2 bytes or "
                "more (count_pretokens may still split the corpus at it)"
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
    merges are made when no pair is left to merge. A special token must be 2 bytes or
    more: one byte is a byte token already (see ``check_trainable_special_tokens``).
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
    Arguments are checked before the corpus is read: a special token of one byte
    (``"\\n"``), which is a byte token already, is a ``ValueError``; to split the
    corpus at one, call ``count_pretokens`` with it and ``train_from_counts`` without.
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
