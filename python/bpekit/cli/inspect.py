"""``bpekit inspect DIR_OR_ENCODING [--file F]``: vocabulary size, special tokens, longest
tokens, and compression (bytes per token) on a file; for a token dataset folder (one with
``manifest.json``), its manifest's summary."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from bpekit._paths import path_arg
from bpekit.cli._input import byte_blocks, input_name, utf8_blocks
from bpekit.cli.train import add_format_options, documents_line, format_options
from bpekit.encodings import load_tokenizer
from bpekit.sources import file_format

if TYPE_CHECKING:
    from bpekit.tokenizer import Tokenizer


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "inspect", help="describe a tokenizer (and its compression on a file), or a token dataset folder"
    )
    p.add_argument(
        "tokenizer",
        help="encoding name, tokenizer.json (or a folder holding one), folder with vocab.json + merges.txt, "
        "or token dataset folder "
        "(one with manifest.json)",
    )
    p.add_argument(
        "--file",
        type=path_arg,
        default=None,
        help="file to measure compression on: text (.gz and .zst too; '-': stdin), JSON lines or Parquet, "
        "read as bpekit encode reads it; no eos is counted",
    )
    p.add_argument("--special-token", action="append", default=None, dest="special_tokens")
    p.add_argument("--longest", type=_count, default=10, help="how many longest tokens to show")
    p.add_argument(
        "--errors",
        default="strict",
        choices=["strict", "replace", "ignore"],
        help="what to do with invalid UTF-8 in --file (default strict)",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="for a dataset folder: read every shard and index and check its sha256 against the manifest",
    )
    add_format_options(p)
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


# The most text the streaming encoder may hold while it waits for a place where the
# text can be cut (a special token, or for the named patterns a newline between two
# non-whitespace characters). Reading a whole file would hold 1.3 GB for 50 MB, and
# /dev/zero (no such place, ever) would grow until a MemoryError traceback.
MAX_UNCUT_BYTES = 64 << 20


class Measured(NamedTuple):
    """What encoding ``--file`` gave: its size in bytes, its tokens, the seconds taken,
    and for records the stats of ``bpekit encode`` (documents, bad records skipped)."""

    nbytes: int
    ntokens: int
    seconds: float
    stats: dict[str, Any] | None = None


def _streamed(path: Path, args: argparse.Namespace) -> bool:
    """Whether ``--file`` is measured by the streaming encoder here (stdin; a text file,
    plain or ``.gz``, with its special tokens read as such), rather than by ``bpekit
    encode``'s reader (records, ``.zst``, another ``--special-in-text``)."""
    if input_name(path) == "stdin":
        return True
    plain = file_format(path, args.format) == "text" and path.suffix != ".zst"
    return plain and args.special_in_text in (None, "special")


def _measure_records(tok: Tokenizer, path: Path, args: argparse.Namespace) -> Measured:
    """Encodes ``path`` as ``bpekit encode`` does, into a ``.npy`` in a temporary folder
    removed at once, with nothing added around documents: the text's own compression."""
    import tempfile

    from bpekit.dataset.options import Layout, Marks
    from bpekit.dataset.tokens import write_tokens
    from bpekit.options import ReadOptions, RunOptions

    read = ReadOptions(errors=args.errors, **format_options(args))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bpekit-inspect-") as folder:
        out = Path(folder) / "ids.npy"
        result = write_tokens(path, out, tok, Layout(), Marks(eos=None), read, RunOptions())
    return Measured(result.bytes, result.tokens, max(time.perf_counter() - t0, 1e-9), result.stats)


def _measure(tok: Tokenizer, path: Path, errors: str, special_in_text: str | None = None) -> Measured:
    """Encodes ``path`` as ``bpekit encode`` reads it (raw bytes, no newline translation;
    ``.gz`` decompressed; every special token recognised) a block at a time, in bounded
    memory. The count is exactly that of encoding the whole text at once: the stream
    emits ids only up to places that no later text can change."""
    name = input_name(path)
    of = " of the decompressed data" if name.endswith(".gz") else ""

    def utf8_error(offset: int) -> ValueError:
        return ValueError(
            f"{name}: invalid UTF-8 at byte offset {offset}{of}; pass --errors replace or --errors ignore"
        )

    nbytes = 0  # read so far (decompressed)

    def counted(blocks: Iterator[bytes]) -> Iterator[bytes]:
        nonlocal nbytes
        for block in blocks:
            nbytes += len(block)
            yield block

    t0 = time.perf_counter()
    # allowed None, disallowed none: every special token encoded as such, as encode does;
    # "text": none allowed, so all are ordinary text; "error": all disallowed.
    if special_in_text in (None, "special"):
        stream = tok._core.stream(None, [])
    else:
        stream = tok._core.stream([], list(tok.special_tokens) if special_in_text == "error" else [])
    ntokens = 0
    for text in utf8_blocks(counted(byte_blocks(path)), utf8_error, errors):
        ntokens += len(stream.feed(text))
        # The stream looks for a cut again only once its text has doubled since the
        # last search, so at least half of what it holds is known to have none.
        if stream.pending > 2 * MAX_UNCUT_BYTES:
            start = nbytes - stream.pending
            raise ValueError(
                f"{name}: over {MAX_UNCUT_BYTES >> 20} MiB of text from byte offset {start:,}{of} hold "
                "no place where encoding may be cut (a special token, or a newline between two "
                "non-whitespace characters); bpekit inspect measures files whose stretches without "
                f"one are {MAX_UNCUT_BYTES >> 20} MiB at most (bpekit encode takes any)"
            )
    ntokens += len(stream.finish())
    return Measured(nbytes, ntokens, max(time.perf_counter() - t0, 1e-9))


def _show(b: bytes) -> str:
    return repr(b.decode("utf-8", errors="replace"))


def run(args: argparse.Namespace) -> int:
    from bpekit.cli import _dataset

    if _dataset.is_dataset(args.tokenizer):
        if args.file is not None or args.special_tokens:
            raise ValueError(
                f"{args.tokenizer} is a token dataset folder; --file and --special-token describe a "
                "tokenizer (give its name or folder)"
            )
        return _dataset.run(Path(args.tokenizer), args.verify)
    if args.verify:
        raise ValueError(
            f"--verify checks a token dataset folder (one with manifest.json); {args.tokenizer} is not"
        )
    tok = load_tokenizer(args.tokenizer, args.special_tokens)
    # Measured before anything is printed, so that a --file that cannot be read is an
    # error alone, not one after the whole summary.
    if args.file is None:
        measured = None
    elif _streamed(args.file, args):
        measured = _measure(tok, args.file, args.errors, args.special_in_text)
    else:
        measured = _measure_records(tok, args.file, args)
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
        nbytes, ntokens, dt, stats = measured
        print(
            f"file        {args.file}: {nbytes:,} bytes -> {ntokens:,} tokens, "
            f"{nbytes / max(ntokens, 1):.3f} bytes/token ({nbytes / 1e6 / dt:,.1f} MB/s)"
        )
        if stats is not None:
            print(f"            {documents_line(stats)}; bytes and tokens of their text, no eos")
    return 0
