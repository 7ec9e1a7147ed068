"""``bpekit decode [IDS] --tokenizer DIR_OR_ENCODING``: ids (.npy, or whitespace-separated
on stdin or in a text file) -> text on stdout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bpekit.encodings import load_tokenizer


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("decode", help="decode token ids to text")
    p.add_argument(
        "ids",
        nargs="?",
        type=Path,
        default=None,
        help=".npy file, or a text file of whitespace-separated ids (default: stdin)",
    )
    p.add_argument("--tokenizer", "-t", required=True, help="encoding name or vocab.json + merges.txt folder")
    p.add_argument("--special-token", action="append", default=None, dest="special_tokens")
    return p


def _read_ids(path: Path | None) -> list[int]:
    if path is not None and path.suffix == ".npy":
        import numpy as np

        return np.load(path, mmap_mode="r").tolist()
    text = sys.stdin.read() if path is None else path.read_text(encoding="utf-8")
    ids = []
    for i, word in enumerate(text.split()):
        try:
            ids.append(int(word))
        except ValueError:
            raise ValueError(f"item {i} of the input is {word!r}, not a token id") from None
    return ids


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer, args.special_tokens)
    sys.stdout.write(tok.decode(_read_ids(args.ids)))
    sys.stdout.flush()
    return 0
