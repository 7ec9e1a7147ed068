"""``bpekit encode INPUT... --tokenizer DIR_OR_ENCODING --out tokens.npy``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bpekit._paths import fspath
from bpekit.cli.train import add_run_options, peak_rss_mib
from bpekit.datasets import encode_file_counts
from bpekit.encodings import load_tokenizer
from bpekit.training import resolve_inputs


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("encode", help="encode text files into one .npy of token ids")
    p.add_argument("inputs", nargs="+", help="files or directories (.gz read transparently), in order")
    p.add_argument(
        "--tokenizer",
        "-t",
        required=True,
        help="an encoding name (gpt2, o200k_base, ...) or a folder with vocab.json + merges.txt",
    )
    p.add_argument(
        "--special-token",
        action="append",
        default=None,
        dest="special_tokens",
        help="special token of a vocab.json tokenizer (repeatable; default: inferred)",
    )
    p.add_argument("--out", "-o", type=str, required=True, help="output .npy file")
    p.add_argument(
        "--dtype",
        choices=["uint16", "uint32"],
        default=None,
        help="default: uint16 when the vocabulary fits, else uint32",
    )
    p.add_argument(
        "--after-each-file",
        metavar="TOKEN",
        default=None,
        help="write this token (say '<|endoftext|>') after each input file, to keep "
        "one-document-per-file inputs apart; the text is taken as it is, with no escapes "
        "(a newline is $'\\n' in bash); the token counts in the summary; "
        "default: nothing between files",
    )
    add_run_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    # Checked here, not by argparse's type=: its errors print the usage too.
    args.out = Path(fspath(args.out, "--out"))
    tok = load_tokenizer(args.tokenizer, args.special_tokens)
    files = resolve_inputs(args.inputs)
    t0 = time.perf_counter()
    # The bytes of text read, not the files' sizes: a .gz file counts decompressed.
    n, total = encode_file_counts(
        files,
        args.out,
        tok,
        dtype=args.dtype,
        num_threads=args.threads,
        progress=not args.quiet,
        errors=args.errors,
        after_each_file=args.after_each_file,
    )
    dt = max(time.perf_counter() - t0, 1e-9)
    print(
        f"encoded {len(files)} file(s), {total / 1e6:,.1f} MB -> {n:,} tokens in {dt:.2f} s "
        f"({total / 1e6 / dt:,.1f} MB/s, {n / dt:,.0f} tokens/s, {total / max(n, 1):.2f} bytes/token)"
    )
    print(f"  peak memory {peak_rss_mib():,.0f} MiB; wrote {args.out}")
    return 0
