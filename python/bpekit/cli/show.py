"""``bpekit show TEXT -t TOKENIZER``: the tokens of a text in the terminal, each on its own
background colour, with their ids; plain text (tokens separated by ``|``, ids on a line)
when stdout is no terminal or ``--color never``."""

from __future__ import annotations

import argparse
import os
import sys

from bpekit._paths import path_arg
from bpekit.cli.viz import read_text
from bpekit.encodings import load_tokenizer
from bpekit.viz.data import tokenize_text
from bpekit.viz.terminal import render_color, render_plain

# A terminal gets at most this many tokens: more scroll past unread.
MAX_TOKENS = 20_000


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser("show", help="print a text's tokens in colour, with their ids")
    p.add_argument("text", nargs="?", default=None, help="text to tokenize (default: --file, or stdin)")
    p.add_argument(
        "--tokenizer",
        "-t",
        required=True,
        help="encoding name, tokenizer.json (or a folder holding one), or vocab.json + merges.txt folder",
    )
    p.add_argument(
        "--file", "-f", type=path_arg, default=None, help="UTF-8 text file to tokenize instead (.gz too)"
    )
    p.add_argument(
        "--ids",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="print the token ids (default: yes)",
    )
    p.add_argument(
        "--color",
        "--colour",
        choices=["auto", "always", "never"],
        default="auto",
        help="colour the tokens: auto (default) when stdout is a terminal and NO_COLOR is unset",
    )
    p.add_argument("--special-token", action="append", default=None, dest="special_tokens")
    return p


def use_colour(choice: str) -> bool:
    """``--color``: ``auto`` follows https://no-color.org and ``FORCE_COLOR``, then
    whether stdout is a terminal."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


def run(args: argparse.Namespace) -> int:
    if args.text is not None and args.file is not None:
        raise ValueError("give the text or --file, not both")
    tok = load_tokenizer(args.tokenizer, args.special_tokens)
    if args.text is not None:
        text = args.text
    elif args.file is not None:
        text, _ = read_text(args.file)
    elif sys.stdin is None or sys.stdin.isatty():
        raise ValueError("give the text to show, --file FILE, or text on stdin")
    else:
        text, _ = read_text(path_arg("-"))
    tt = tokenize_text(tok, text, max_tokens=MAX_TOKENS)
    specials = {i: t for t, i in tok.special_tokens.items()}
    render = render_color if use_colour(args.color) else render_plain
    sys.stdout.write(render(tt, specials, ids=args.ids))
    return 0
