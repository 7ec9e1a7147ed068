"""``bpekit inspect DIR_OR_ENCODING [--file F]``: vocabulary size, special tokens, longest
tokens, and compression (bytes per token) on a file."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bpekit.cli import read_input
from bpekit.encodings import load_tokenizer


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("inspect", help="describe a tokenizer (and its compression on a file)")
    p.add_argument("tokenizer", help="encoding name or folder with vocab.json + merges.txt")
    p.add_argument("--file", type=Path, default=None, help="text file to measure compression on")
    p.add_argument("--special-token", action="append", default=None, dest="special_tokens")
    p.add_argument("--longest", type=_count, default=10, help="how many longest tokens to show")
    p.add_argument(
        "--errors",
        default="strict",
        choices=["strict", "replace", "ignore"],
        help="what to do with invalid UTF-8 in --file (default strict)",
    )
    return p


def _count(text: str) -> int:
    # argparse would name this function in its message ("invalid _count value").
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, got {text!r}")
    return n


def _read_text(path: Path, errors: str) -> tuple[str, int]:
    """The text of ``path`` as ``bpekit encode`` reads it (raw bytes, no newline
    translation; ``.gz`` decompressed) and its size in bytes."""
    data = read_input(path)
    try:
        return data.decode("utf-8", errors=errors), len(data)
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path}: invalid UTF-8 at byte offset {e.start}; pass --errors replace or --errors ignore"
        ) from None


def _show(b: bytes) -> str:
    return repr(b.decode("utf-8", errors="replace"))


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer, args.special_tokens)
    # Read before anything is printed, so that a --file that cannot be read is an error
    # alone, not one after the whole summary. Read as `bpekit encode` reads it:
    # read_text() would turn CRLF into LF, and the bytes/token figure would be another file's.
    measured = None if args.file is None else _read_text(args.file, args.errors)
    vocab = tok.vocab
    specials = tok.special_tokens
    print(f"tokenizer   {tok.name} ({'tiktoken ranks' if tok._core.is_ranks else 'vocab + merges'})")
    print(f"vocab size  {len(vocab):,} tokens (ids 0..{tok.max_token_value:,})")
    print(f"special     {len(specials)}: " + ", ".join(f"{t!r}={i}" for t, i in specials.items()))
    special_ids = set(specials.values())
    ordinary = [b for i, b in vocab.items() if i not in special_ids]
    longest = sorted(ordinary, key=lambda b: (-len(b), b))[: args.longest]
    print("longest     " + ", ".join(f"{_show(b)} ({len(b)})" for b in longest))
    if measured is not None:
        text, nbytes = measured
        t0 = time.perf_counter()
        ids = tok.encode(text, allowed_special="all")
        dt = max(time.perf_counter() - t0, 1e-9)
        print(
            f"file        {args.file}: {nbytes:,} bytes -> {len(ids):,} tokens, "
            f"{nbytes / max(len(ids), 1):.3f} bytes/token ({nbytes / 1e6 / dt:,.1f} MB/s)"
        )
    return 0
