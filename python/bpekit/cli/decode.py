"""``bpekit decode [IDS] --tokenizer DIR_OR_ENCODING``: ids (.npy, or whitespace-separated
on stdin or in a text file, .gz read transparently) -> text on stdout."""

from __future__ import annotations

import argparse
import codecs
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bpekit.cli import read_input
from bpekit.datasets import load_tokens
from bpekit.encodings import load_tokenizer

if TYPE_CHECKING:
    from bpekit.tokenizer import Tokenizer


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("decode", help="decode token ids to text")
    p.add_argument(
        "ids",
        nargs="?",
        type=Path,
        default=None,
        help=".npy file, or a text file (.gz too) of whitespace-separated ids (default, or '-': stdin)",
    )
    p.add_argument("--tokenizer", "-t", required=True, help="encoding name or vocab.json + merges.txt folder")
    p.add_argument("--special-token", action="append", default=None, dest="special_tokens")
    return p


# Ids decoded per block: the output starts at once and memory stays bounded for a
# dataset of any size (all 34M ids of a 116 MB corpus at once took 1.7 GB and 5.5 s
# before the first byte came out).
BLOCK = 1 << 20


# A block of ids, and where its i-th id is in the input: "t.npy, index 7".
Block = tuple[list[int], Callable[[int], str]]


def _id_blocks(path: Path | None) -> Iterator[Block]:
    """The ids of a ``.npy`` (a block at a time, memory-mapped) or of whitespace-separated
    text in a file (``.gz`` decompressed) or on stdin."""
    if path is not None and path.suffix == ".npy":
        data = load_tokens(path)
        for start in range(0, len(data), BLOCK):
            yield data[start : start + BLOCK].tolist(), lambda i, start=start: f"{path}, index {start + i}"
        return
    name, text = _read_ids_text(path)
    ids = []
    for i, word in enumerate(text.split()):
        try:
            ids.append(int(word))
        except ValueError:
            where = _line(name, text, i)
            raise ValueError(f"{where}: index {i} of the input is {word!r}, not a token id") from None
    yield ids, lambda i: f"{_line(name, text, i)} (index {i})"


def _read_ids_text(path: Path | None) -> tuple[str, str]:
    """The name to give in messages and the text of a file of ids, or of stdin."""
    if path is None or str(path) == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:  # a text stream with no bytes under it (a test's StringIO)
            return "stdin", sys.stdin.read()
        name, data = "stdin", stdin.read()
    else:
        name, data = str(path), read_input(path)
    try:
        return name, data.decode("utf-8")
    except UnicodeDecodeError as e:
        of = " of the decompressed data" if name.endswith(".gz") else ""
        raise ValueError(
            f"{name}: invalid UTF-8 at byte offset {e.start}{of}; expected token ids separated by whitespace"
        ) from None


def _line(name: str, text: str, item: int) -> str:
    """``"NAME, line N"``: the line of item ``item`` of ``text.split()``. Found again
    for a message only, so that reading the ids keeps no line numbers."""
    seen = 0
    for n, line in enumerate(text.split("\n"), 1):
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
