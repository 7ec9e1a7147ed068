"""``bpekit convert SRC DST --to hf|tiktoken|gpt2``: a tokenizer saved in another format.

SRC is anything ``bpekit.load_tokenizer`` reads (an encoding name, a ``tokenizer.json`` or
a folder holding one, a ``vocab.json`` + ``merges.txt`` folder); DST is the folder the
files go into (see ``bpekit.formats.convert`` for what each format holds, and what it
cannot)."""

from __future__ import annotations

import argparse

from bpekit.encodings import load_tokenizer
from bpekit.formats.convert import FORMATS, save_as


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser("convert", help="save a tokenizer in another format (hf, tiktoken, gpt2)")
    p.add_argument(
        "source",
        help="encoding name, tokenizer.json (or a folder holding one), "
        "or folder with vocab.json + merges.txt",
    )
    p.add_argument("destination", help="folder to write the converted tokenizer into")
    p.add_argument(
        "--to",
        required=True,
        choices=FORMATS,
        help="hf: tokenizer.json + transformers configs; tiktoken: .tiktoken + its Encoding "
        "arguments; gpt2: vocab.json + merges.txt + bpekit.json",
    )
    return p


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.source)
    for path in save_as(tok, args.destination, args.to):
        print(path)
    return 0
