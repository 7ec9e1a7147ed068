"""``bpekit viz -t TOKENIZER [--text FILE | --string S] -o page.html``: one self-contained
HTML page (no network needed, opens from disk) with the text's tokens, each on its own
colour, and an explorer of the tokenizer's vocabulary and merges (see ``bpekit.viz``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bpekit._paths import path_arg
from bpekit.cli._input import byte_blocks, input_name
from bpekit.encodings import load_tokenizer
from bpekit.viz import visualize

# The most text read from --text: the page shows at most 1 MB of it, and the counts of
# tokens and bytes come from encoding what was read; a larger file's rest is left out
# (and the page and stderr say so) rather than read whole into memory.
MAX_READ_BYTES = 64 << 20


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser("viz", help="write an HTML page showing a text's tokens and the vocabulary's merges")
    p.add_argument(
        "--tokenizer",
        "-t",
        required=True,
        help="encoding name, tokenizer.json (or a folder holding one), or vocab.json + merges.txt folder",
    )
    text = p.add_mutually_exclusive_group()
    text.add_argument(
        "--text",
        type=path_arg,
        default=None,
        metavar="FILE",
        help="UTF-8 text file to tokenize (.gz too; '-': stdin)",
    )
    text.add_argument("--string", "-s", default=None, metavar="S", help="text to tokenize, given here")
    p.add_argument("--out", "-o", required=True, type=path_arg, help="HTML file to write")
    p.add_argument("--special-token", action="append", default=None, dest="special_tokens")
    p.add_argument("--title", default=None, help="name shown in the page's header (default: the tokenizer's)")
    return p


def read_text(path: Path) -> tuple[str, bool]:
    """The text of ``path`` (stdin for ``-``; ``.gz`` decompressed), at most
    ``MAX_READ_BYTES`` of it, and whether the rest was left out."""
    name = input_name(path)
    data = bytearray()
    cut = False
    for block in byte_blocks(None if name == "stdin" else path):
        data += block
        if len(data) > MAX_READ_BYTES:
            del data[MAX_READ_BYTES:]
            cut = True
            break
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        if not cut or e.start < len(data) - 3:
            raise ValueError(f"{name}: invalid UTF-8 at byte offset {e.start}") from None
        text = bytes(data[: e.start]).decode("utf-8")  # a character cut by the limit
    return text, cut


def _title(spec: str, name: str) -> str:
    """The header's name: the encoding's, or for files the path given (a folder of
    ``vocab.json`` is named only ``bpe`` and a ``tokenizer.json`` only ``hf``)."""
    return name if spec == name else f"{name} · {Path(spec).name or spec}"


def _size(n: int) -> str:
    """The page's size as the closing message gives it.

    >>> _size(41_500), _size(1_637_095)
    ('42 kB', '1.6 MB')
    """
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{max(1, round(n / 1e3))} kB"


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer, args.special_tokens)
    text, cut = ("", False)
    if args.string is not None:
        text = args.string
    elif args.text is not None:
        text, cut = read_text(args.text)
    if cut:
        print(
            f"bpekit viz: warning: {input_name(args.text)} is over {MAX_READ_BYTES >> 20} MB; "
            "the page counts only its first part",
            file=sys.stderr,
        )
    vis = visualize(tok, text, title=args.title or _title(args.tokenizer, tok.name))
    path = vis.save(args.out)
    tt = vis.text_tokens
    shown = f"{len(tt.ids):,} of {tt.total_tokens:,}" if tt.capped else f"{tt.total_tokens:,}"
    print(f"{path} ({_size(len(vis.html.encode('utf-8')))}): {shown} tokens", file=sys.stderr)
    return 0
