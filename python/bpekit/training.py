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

import functools
import inspect
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ParamSpec

from bpekit import _core
from bpekit._core import WordCounts
from bpekit._paths import PathArg
from bpekit._progress import progress_bar
from bpekit.options import ReadOptions, RunOptions
from bpekit.sources import SkippedRecordsWarning, check_some_read, resolve, warn_skipped

__all__ = ["WordCounts", "count_pretokens", "count_with_stats", "train_bpe", "train_from_counts"]

# A path, a list of paths and sources, a dataset or an iterable of documents: see
# ``bpekit.sources``.
Inputs = PathArg | Iterable[Any]

_P = ParamSpec("_P")


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
    num_threads: int | None = RunOptions.num_threads,
    chunk_size: int = RunOptions.chunk_size,
    errors: str = ReadOptions.errors,
    progress: bool = RunOptions.progress,
    format: str | None = ReadOptions.format,
    text_field: str = ReadOptions.text_field,
    special_in_text: str | None = ReadOptions.special_in_text,
    bad_records: str = ReadOptions.bad_records,
) -> WordCounts:
    """Counts the pre-tokens of the inputs (split on every special token first).

    ``paths``: files, directories, glob patterns, Hugging Face datasets or an iterable
    of ``str`` documents (see ``bpekit.sources``). Files are read by their extension:
    text, JSON lines (``.jsonl``, ``.ndjson``, ``.json``: the string at ``text_field``, a
    dotted path such as ``"meta.body"`` reaching into nested objects) or Parquet (the
    column ``text_field``), each ``.gz`` or ``.zst`` compressed but Parquet;
    ``format="text" | "jsonl" | "parquet"`` reads every file so instead. Each record (a
    JSON line, a Parquet row, an item) is a document, which no pre-token crosses: the
    counts equal those of the documents joined by a special token.

    ``special_in_text``: what a special token's text inside a document is: ``"special"``
    (a split, the default for text files, whose separators are in their text), ``"text"``
    (ordinary text, the default for records: web pages hold ``<|endoftext|>``) or
    ``"error"``. ``bad_records="skip"`` skips records that are not JSON, lack the field,
    hold no string, a null or invalid UTF-8, and under ``special_in_text="error"`` those
    holding a special token (with a warning giving their number and the first), where
    ``"error"`` stops at the first, naming its file, line or row and byte offset.
    ``errors`` is how invalid UTF-8 is handled: ``"strict"`` (an error naming the file
    and byte offset; a bad record in records), ``"replace"`` or ``"ignore"``, as in
    ``bytes.decode``. ``num_threads`` defaults to all cores; ``chunk_size`` (bytes,
    0 = automatic) only changes how work is split, never the result (``bpekit.options``
    says each option once).

    The counts' ``stats`` say what was read: ``{"documents", "skipped",
    "skipped_examples", "bytes", "files"}`` (``bytes``: of text, a compressed file's
    decompressed, a record's text alone).

    >>> import tempfile, pathlib, json
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "docs.jsonl"
    >>> _ = path.write_text(json.dumps({"text": "low lower"}) + "\\n" + json.dumps({"text": "low"}))
    >>> counts = count_pretokens(path)
    >>> counts.most_common(2)
    [(b'low', 2), (b' lower', 1)]
    >>> counts.stats["documents"], counts.stats["bytes"]
    (2, 12)
    >>> count_pretokens(iter(["low lower", "low"])) == counts
    True
    """
    read = ReadOptions(
        format=format,
        text_field=text_field,
        special_in_text=special_in_text,
        bad_records=bad_records,
        errors=errors,
    )
    run = RunOptions(num_threads=num_threads, chunk_size=chunk_size, progress=progress)
    counts = count_inputs(paths, special_tokens, pattern=pattern, read=read, run=run)
    warn_skipped(counts.stats or {})
    return counts


def count_inputs(
    inputs: Inputs,
    special_tokens: Sequence[str] | None,
    *,
    pattern: str,
    read: ReadOptions,
    run: RunOptions,
) -> WordCounts:
    """``count_pretokens`` with its options as the objects of ``bpekit.options`` (what
    the command line builds from its flags), and no warning for skipped records: the
    caller reports the result's ``stats``."""
    specials = _check_special_tokens(special_tokens)
    inputs_read = resolve(inputs, read)
    with progress_bar(run.progress, "counting", "bytes") as bar:
        counts = _core.count_pretokens(
            inputs_read.sources, specials, read, run, pattern=pattern, progress=bar
        )
    stats = counts.stats
    assert stats is not None  # the core sets what a run read
    check_some_read(stats)  # before a vocabulary is trained from no text
    stats["files"] = inputs_read.files
    return counts


def returning_stats(
    count: Callable[_P, WordCounts],
) -> Callable[_P, tuple[WordCounts, dict[str, Any]]]:
    """``count``, returning ``(counts, counts.stats)`` and warning of no skipped record
    (the stats say them)."""

    @functools.wraps(count)
    def with_stats(*args: _P.args, **kwargs: _P.kwargs) -> tuple[WordCounts, dict[str, Any]]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkippedRecordsWarning)
            counts = count(*args, **kwargs)
        return counts, counts.stats or {}

    with_stats.__doc__ = (
        f"Deprecated: ``{count.__name__}(...)``, whose result carries ``.stats``; returns "
        "``(counts, counts.stats)`` and warns of no skipped record."
    )
    # wraps() makes inspect.signature follow __wrapped__, which returns the counts alone.
    signature = inspect.signature(count)
    with_stats.__signature__ = signature.replace(  # type: ignore[attr-defined]
        return_annotation="tuple[WordCounts, dict[str, Any]]"
    )
    return with_stats


# Deprecated: count_pretokens, whose counts carry their stats; kept so that code calling it runs.
count_with_stats = returning_stats(count_pretokens)


# The most tokens bpekit's encoder holds (ids are 21 bits in its pair table).
MAX_VOCAB_SIZE = (1 << 21) - 1


def check_vocab_size(vocab_size: int, specials: Sequence[str]) -> None:
    """Refuses a ``vocab_size`` that is not an int, below the byte and special tokens,
    or beyond what the encoder can hold, before any work starts.

    A special token of one byte (``"|"``) is trained as CS336 says: the corpus is split
    at it, and the vocabulary holds it under an id of its own beside byte token 124.
    Only ``vocab.json`` cannot hold two tokens of the same bytes; ``bpekit train``,
    which writes one, refuses such a token before counting
    (``bpekit.formats.gpt2.check_distinct_special_tokens``)."""
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
    progress: bool = RunOptions.progress,
    num_threads: int | None = RunOptions.num_threads,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Runs the merge loop on ``counts``.

    Returns ``(vocab, merges)``: ids 0..255 are the bytes by value, then the special
    tokens in the order given, then one token per merge in creation order. Fewer
    merges are made when no pair is left to merge. A special token of one byte (``"|"``)
    gets an id of its own beside its byte's token, as CS336 and ``bpekit.reference``
    give it (vocab.json cannot hold the two; ``Tokenizer`` encodes it to its own id).
    ``num_threads`` (default all cores) share the large merges, those of words by the
    million that open a large corpus's training; the result does not depend on it.
    """
    specials = _check_special_tokens(special_tokens)
    check_vocab_size(vocab_size, specials)
    run = RunOptions(num_threads=num_threads, progress=progress)
    with progress_bar(run.progress, "merging", "merges") as bar:
        vocab, merges = _core.train_from_counts(
            counts, vocab_size, specials, progress=bar, num_threads=run.num_threads
        )
    return vocab, merges


def train_bpe(
    input_path: Inputs,
    vocab_size: int,
    special_tokens: Sequence[str] | None = None,
    *,
    pattern: str = "gpt2",
    num_threads: int | None = RunOptions.num_threads,
    chunk_size: int = RunOptions.chunk_size,
    errors: str = ReadOptions.errors,
    progress: bool = RunOptions.progress,
    format: str | None = ReadOptions.format,
    text_field: str = ReadOptions.text_field,
    special_in_text: str | None = ReadOptions.special_in_text,
    bad_records: str = ReadOptions.bad_records,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Trains a byte-level BPE vocabulary on files, with CS336 semantics.

    ``input_path`` is a path, a list of paths, a directory, a glob pattern, a Hugging
    Face dataset or an iterable of ``str`` documents; ``.gz`` and ``.zst`` files are read
    transparently, JSON lines and Parquet by their field ``text_field``. See
    ``count_pretokens`` and ``train_from_counts`` for the options. Arguments are checked
    before the corpus is read.

    >>> vocab, merges = train_bpe(iter(["low lower", "lowest"]), 258)
    >>> merges
    [(b'o', b'w'), (b'l', b'ow')]
    """
    specials = _check_special_tokens(special_tokens)
    check_vocab_size(vocab_size, specials)
    read = ReadOptions(
        format=format,
        text_field=text_field,
        special_in_text=special_in_text,
        bad_records=bad_records,
        errors=errors,
    )
    run = RunOptions(num_threads=num_threads, chunk_size=chunk_size, progress=progress)
    counts = count_inputs(input_path, specials, pattern=pattern, read=read, run=run)
    warn_skipped(counts.stats or {})
    return train_from_counts(counts, vocab_size, specials, progress=run.progress, num_threads=run.num_threads)
