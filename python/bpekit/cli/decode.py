"""``bpekit decode [IDS] --tokenizer DIR_OR_ENCODING``: ids (.npy, or whitespace-separated
on stdin or in a text file, .gz read transparently) -> text on stdout."""

from __future__ import annotations

import argparse
import codecs
import functools
import itertools
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bpekit._paths import path_arg
from bpekit.cli._input import input_name, text_blocks
from bpekit.dataset.tokens import load_tokens
from bpekit.encodings import load_tokenizer

if TYPE_CHECKING:
    from bpekit.tokenizer import Tokenizer


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser("decode", help="decode token ids to text")
    p.add_argument(
        "ids",
        nargs="?",
        type=path_arg,
        default=None,
        help=".npy file, or a text file (.gz too) of whitespace-separated ids (default, or '-': stdin)",
    )
    p.add_argument(
        "--tokenizer",
        "-t",
        required=True,
        help="encoding name, tokenizer.json (or a folder holding one), or vocab.json + merges.txt folder",
    )
    p.add_argument("--special-token", action="append", default=None, dest="special_tokens")
    return p


# Ids decoded per block: the output starts at once and memory stays bounded for a
# dataset of any size (all 34M ids of a 116 MB corpus at once take 1.7 GB and 5.5 s
# before the first byte comes out).
BLOCK = 1 << 20


# A block of ids, and where its i-th id is in the input: "t.npy, index 7".
Block = tuple[list[int], Callable[[int], str]]


def _id_blocks(path: Path | None) -> Iterator[Block]:
    """The ids of a ``.npy`` (a block at a time, memory-mapped) or of whitespace-separated
    text in a file (``.gz`` decompressed) or on stdin (a block of text at a time)."""
    if path is not None and path.suffix == ".npy":
        data = load_tokens(path)
        for start in range(0, len(data), BLOCK):
            yield data[start : start + BLOCK].tolist(), functools.partial(_index_of, path, start)
        return
    yield from _text_id_blocks(path)


# The longest word read as an id: ids have at most 10 digits (2**32 - 1); this leaves
# room for leading zeros and bounds what is held of a word that never ends (/dev/zero).
MAX_ID_CHARS = 100

# What makes a word no id: a character other than whitespace and ASCII digits (int()
# also takes "4_6_4", "+464" and full-width digits), or too many characters.
_NOT_ID = re.compile(rf"[^\s0-9]|\S{{{MAX_ID_CHARS + 1}}}")


def _text_id_blocks(path: Path | None) -> Iterator[Block]:
    """The ids of whitespace-separated text, a block of text at a time. A word cut by a
    block's end is held for the next block; the line and index of each block's first
    word are carried along for messages."""
    name = input_name(path)
    of = " of the decompressed data" if name.endswith(".gz") else ""

    def utf8_error(offset: int) -> ValueError:
        return ValueError(
            f"{name}: invalid UTF-8 at byte offset {offset}{of}; expected token ids separated by whitespace"
        )

    held, line, index = "", 1, 0  # a word cut by the last block; where `text` starts
    for chunk in itertools.chain(text_blocks(path, utf8_error), [""]):
        text = held + chunk
        cut = _last_word_start(text) if chunk else len(text)  # "": the end, nothing follows
        text, held = text[:cut], text[cut:]
        ids = _parse_ids(name, text, line, index)
        yield ids, functools.partial(_text_index_of, name, text, line, index)
        line += text.count("\n")
        index += len(ids)


def _last_word_start(text: str) -> int:
    """Where the word that ends ``text`` starts (``len(text)`` when it ends in
    whitespace): that word may go on in the next block. A word already longer than
    ``MAX_ID_CHARS`` is not held (``_parse_ids`` reports it), so a word that never ends
    is held no longer than that.

    >>> _last_word_start("12 34"), _last_word_start("12 34 "), _last_word_start("1" * 101)
    (3, 6, 101)
    """
    i = len(text)
    stop = max(0, i - MAX_ID_CHARS)
    while i > stop and not text[i - 1].isspace():
        i -= 1
    if i == stop and i > 0 and not text[i - 1].isspace():
        return len(text)
    return i


def _parse_ids(name: str, text: str, line: int, index: int) -> list[int]:
    """The ids of the whitespace-separated words of ``text``, which starts on line
    ``line`` at word ``index`` of the input; a word that is no id is an error naming
    its place."""
    bad = _NOT_ID.search(text)
    if bad is None:
        return list(map(int, text.split()))
    start = bad.start()
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:].split(maxsplit=1)[0]
    shown = repr(word) if len(word) <= MAX_ID_CHARS else f"{word[:20]!r}... (over {MAX_ID_CHARS} characters)"
    line += text.count("\n", 0, start)
    index += len(text[:start].split())
    raise ValueError(f"{name}, line {line}: index {index} of the input is {shown}, not a token id")


def _index_of(path: Path, start: int, i: int) -> str:
    """Where id ``i`` of a block of a ``.npy`` that starts at ``start`` is, for errors."""
    return f"{path}, index {start + i}"


def _text_index_of(name: str, text: str, first_line: int, first_index: int, i: int) -> str:
    """Where id ``i`` of a block of text ids is (line, and index in the whole input)."""
    return f"{_line(name, text, i, first_line)} (index {first_index + i})"


def _line(name: str, text: str, item: int, first_line: int) -> str:
    """``"NAME, line N"``: the line of item ``item`` of ``text.split()``, where ``text``
    starts on line ``first_line``. Found again for a message only, so that reading the
    ids keeps no line numbers."""
    seen = 0
    for n, line in enumerate(text.split("\n"), first_line):
        seen += len(line.split())
        if seen > item:
            return f"{name}, line {n}"
    return name


def _first_unknown(tok: Tokenizer, ids: list[int]) -> int | None:
    """The index of the first id of ``ids`` that is not in ``tok``'s vocabulary: the
    core's error names the id, not where it is."""
    unknown = set()
    for t in set(ids):
        try:
            tok.decode_single_token_bytes(t)
        except KeyError:
            unknown.add(t)
    return next((i for i, t in enumerate(ids) if t in unknown), None)


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer, args.special_tokens)
    # Incremental decoding gives what decoding all the bytes at once gives, with a
    # character split between two blocks joined again.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for ids, where in _id_blocks(args.ids):
        try:
            data = tok.decode_bytes(ids)
        except KeyError:
            i = _first_unknown(tok, ids)
            if i is None:
                raise
            raise ValueError(f"{where(i)}: token id {ids[i]} is not in the vocabulary") from None
        sys.stdout.write(decoder.decode(data))
    sys.stdout.write(decoder.decode(b"", final=True))
    sys.stdout.flush()
    return 0
