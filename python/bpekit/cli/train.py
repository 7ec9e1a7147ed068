"""``bpekit train INPUT... --vocab-size N --special-token TOK --out DIR``."""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from bpekit._paths import fspath
from bpekit.training import (
    MAX_VOCAB_SIZE,
    check_vocab_size,
    count_pretokens,
    resolve_inputs,
    train_from_counts,
)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("train", help="train a BPE vocabulary on text files")
    p.add_argument("inputs", nargs="+", help="files or directories (.gz read transparently)")
    p.add_argument("--vocab-size", type=vocab_size_arg, required=True)
    p.add_argument(
        "--special-token",
        action="append",
        default=None,
        dest="special_tokens",
        help="a special token (repeatable); the first one separates documents",
    )
    p.add_argument("--out", type=str, required=True, help="folder for vocab.json and merges.txt")
    add_common_options(p)
    return p


def vocab_size_arg(text: str) -> int:
    """``--vocab-size``, refused by argparse before any work when out of range (the
    minimum that counts the special tokens is checked before counting)."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 256 <= n <= MAX_VOCAB_SIZE:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 256 to {MAX_VOCAB_SIZE:,}, got {text!r}"
        )
    return n


def add_common_options(p: argparse.ArgumentParser) -> None:
    """Options of the commands that read a corpus to train."""
    p.add_argument("--pattern", default="gpt2", help="gpt2 | cl100k | o200k | a regex (default gpt2)")
    add_run_options(p)


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options of every command that reads text files: threads, UTF-8 errors, quiet."""
    # argparse formats help texts with %: a literal percent sign is written %%.
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads for the work, loading included (default: all cores); encode writes "
        "its output on one more thread, which takes 3-20%% of a core",
    )
    p.add_argument(
        "--errors",
        default="strict",
        choices=["strict", "replace", "ignore"],
        help="what to do with invalid UTF-8 (default strict)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _show(b: bytes) -> str:
    return repr(b.decode("utf-8", errors="replace"))


def check_out_folder(out: Path) -> None:
    """Refuses an ``--out`` that can never become a folder before any training is done
    (rather than failing at the end, after counting and merging)."""
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: is a file; --out names the folder for vocab.json and merges.txt")
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(f"{existing}: is a file, so the folder {out} cannot be made")


def train_and_summarize(
    inputs: list[str], vocab_size: int, special_tokens: list[str], out: Path, args: argparse.Namespace
) -> int:
    check_vocab_size(vocab_size, special_tokens)
    check_out_folder(out)
    files = resolve_inputs(inputs)
    total_bytes = sum(f.stat().st_size for f in files)
    progress = not args.quiet
    t0 = time.perf_counter()
    counts = count_pretokens(
        files,
        special_tokens,
        pattern=args.pattern,
        num_threads=args.threads,
        errors=args.errors,
        progress=progress,
    )
    t1 = time.perf_counter()
    vocab, merges = train_from_counts(counts, vocab_size, special_tokens, progress=progress)
    t2 = time.perf_counter()
    # Imported here: every command builds this module's parser, and the writer's
    # imports (json, tempfile) cost each `bpekit encode` start ~7 ms for nothing.
    from bpekit.formats.folder import save_folder
    from bpekit.patterns import resolve

    save_folder(out, vocab, merges, special_tokens, resolve(args.pattern))
    t3 = time.perf_counter()

    count_s, merge_s = t1 - t0, t2 - t1
    print(
        f"trained {len(vocab):,} tokens ({len(merges):,} merges) on {len(files)} file(s), "
        f"{total_bytes / 1e6:,.1f} MB"
    )
    print(f"  counting   {count_s:8.3f} s   {total_bytes / 1e6 / max(count_s, 1e-9):,.1f} MB/s")
    print(f"  merging    {merge_s:8.3f} s   {len(merges) / max(merge_s, 1e-9):,.0f} merges/s")
    print(f"  writing    {t3 - t2:8.3f} s")
    print(f"  peak memory {peak_rss_mib():,.0f} MiB")
    print(f"  unique pre-tokens {len(counts):,}   pre-token occurrences {counts.total:,}")
    longest = sorted(vocab.values(), key=lambda b: (-len(b), b))[:5]
    print("  longest tokens: " + ", ".join(_show(b) for b in longest))
    print(f"  wrote {out / 'vocab.json'}, {out / 'merges.txt'} and {out / 'bpekit.json'}")
    return 0


def run(args: argparse.Namespace) -> int:
    # Checked here, not by argparse's type=: its errors print the usage too.
    out = Path(fspath(args.out, "--out"))
    return train_and_summarize(args.inputs, args.vocab_size, args.special_tokens or [], out, args)
