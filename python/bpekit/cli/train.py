"""``bpekit train INPUT... --vocab-size N --special-token TOK --out DIR``."""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path
from typing import Any

from bpekit._paths import fspath
from bpekit.sources import BAD_RECORDS, FORMATS, SPECIAL_IN_TEXT
from bpekit.training import MAX_VOCAB_SIZE, check_vocab_size, count_with_stats, train_from_counts


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("train", help="train a BPE vocabulary on text, JSON lines or Parquet files")
    p.add_argument("inputs", nargs="+", help=INPUTS_HELP)
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
    add_distributed_options(p)
    return p


def add_distributed_options(p: argparse.ArgumentParser, verb: str = "count") -> None:
    """Options of the commands that can run on Ray (``bpekit.distributed``)."""
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help=f"{verb} on Ray, in units spread over its workers: alone, on a Ray started here for the run; "
        "'auto' or an address joins a running cluster (--threads is then each task's threads, default 1)",
    )
    p.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help="with --ray: keep each unit's result in DIR, a folder every worker can reach; a rerun "
        "after a failure keeps the units done",
    )


def distributed_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """``bpekit.distributed``'s keyword arguments for ``--ray``, or None without it."""
    if getattr(args, "ray", None) is None:
        if getattr(args, "work_dir", None) is not None:
            raise ValueError("--work-dir keeps the units of a --ray run; give --ray too")
        return None
    return {"address": args.ray or None, "work_dir": args.work_dir, "num_threads": args.threads or 1}


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


INPUTS_HELP = (
    "files, directories or quoted glob patterns ('data/*.jsonl.zst', 'shards/**/*.parquet'); "
    ".gz and .zst read transparently"
)


def add_format_options(p: argparse.ArgumentParser) -> None:
    """Options of every command that reads a corpus: how its files and records are read."""
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="read every input file as this format (default: by extension once .gz/.zst is taken off: "
        ".jsonl, .ndjson, .json are JSON lines, .parquet is Parquet, anything else text)",
    )
    p.add_argument(
        "--text-field",
        default="text",
        metavar="FIELD",
        help="the JSON field or Parquet column holding each record's text; a dotted path such as "
        "meta.body reaches into nested objects (default text)",
    )
    p.add_argument(
        "--special-in-text",
        choices=SPECIAL_IN_TEXT,
        default=None,
        help="a special token's text inside a document: 'special' reads it as the special token, "
        "'text' as ordinary text, 'error' stops (default: special in text files, text in records)",
    )
    p.add_argument(
        "--bad-records",
        choices=BAD_RECORDS,
        default="error",
        help="a record that is not JSON, lacks the field, holds no string, a null or invalid UTF-8: "
        "'error' stops naming it, 'skip' leaves it out and counts it in the summary (default error)",
    )


def format_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``add_format_options``'s flags."""
    return {
        "format": args.format,
        "text_field": args.text_field,
        "special_in_text": args.special_in_text,
        "bad_records": args.bad_records,
    }


def documents_line(stats: dict[str, Any]) -> str:
    """How many documents were read and bad records skipped, for a summary.

    >>> documents_line({"documents": 1000, "skipped": 2, "skipped_examples": ["a.jsonl: line 3: not JSON"]})
    '1,000 documents; skipped 2 bad records (the first: a.jsonl: line 3: not JSON)'
    """
    line = f"{stats['documents']:,} document{'s' * (stats['documents'] != 1)}"
    if stats["skipped"]:
        first = (stats["skipped_examples"] or ["?"])[0]
        line += (
            f"; skipped {stats['skipped']:,} bad record{'s' * (stats['skipped'] != 1)} (the first: {first})"
        )
    return line


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options of every command that reads a corpus with threads: the format options,
    threads, UTF-8 errors, quiet."""
    add_format_options(p)
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
    # --out is a vocab.json folder: a token it cannot hold is refused before counting.
    from bpekit.formats.gpt2 import check_distinct_special_tokens

    check_distinct_special_tokens(special_tokens, "--special-token")
    check_out_folder(out)
    progress = not args.quiet
    t0 = time.perf_counter()
    distributed = distributed_options(args)
    if distributed is None:
        counts, stats = count_with_stats(
            inputs,
            special_tokens,
            pattern=args.pattern,
            num_threads=args.threads,
            errors=args.errors,
            progress=progress,
            **format_options(args),
        )
    else:
        from bpekit import distributed as dist

        counts, stats = dist.count_with_stats(
            inputs,
            special_tokens,
            pattern=args.pattern,
            errors=args.errors,
            progress=progress,
            **distributed,
            **format_options(args),
        )
    # The bytes of text read: a compressed file's decompressed, a record's text.
    total_bytes = stats["bytes"]
    t1 = time.perf_counter()
    merge_threads = args.threads if distributed is None else None  # --ray: each task's threads
    vocab, merges = train_from_counts(
        counts, vocab_size, special_tokens, progress=progress, num_threads=merge_threads
    )
    t2 = time.perf_counter()
    # Imported here: every command builds this module's parser, and the writer's
    # imports (json, tempfile) cost each `bpekit encode` start ~7 ms for nothing.
    from bpekit.formats.folder import save_folder
    from bpekit.patterns import resolve

    save_folder(out, vocab, merges, special_tokens, resolve(args.pattern))
    t3 = time.perf_counter()

    count_s, merge_s = t1 - t0, t2 - t1
    print(
        f"trained {len(vocab):,} tokens ({len(merges):,} merges) on {stats['files']} file(s), "
        f"{total_bytes / 1e6:,.1f} MB"
    )
    print(f"  {documents_line(stats)}")
    if distributed is not None:
        kept = f", {stats['kept']:,} kept from an earlier run" if stats["kept"] else ""
        print(f"  counted in {stats['units']:,} units on Ray{kept}")
    print(f"  counting   {count_s:8.3f} s   {total_bytes / 1e6 / max(count_s, 1e-9):,.1f} MB/s")
    print(f"  merging    {merge_s:8.3f} s   {len(merges) / max(merge_s, 1e-9):,.0f} merges/s")
    print(f"  writing    {t3 - t2:8.3f} s")
    print(f"  peak memory {peak_rss_mib():,.0f} MiB{' (this process)' * (distributed is not None)}")
    print(f"  unique pre-tokens {len(counts):,}   pre-token occurrences {counts.total:,}")
    longest = sorted(vocab.values(), key=lambda b: (-len(b), b))[:5]
    print("  longest tokens: " + ", ".join(_show(b) for b in longest))
    print(f"  wrote {out / 'vocab.json'}, {out / 'merges.txt'} and {out / 'bpekit.json'}")
    return 0


def run(args: argparse.Namespace) -> int:
    # Checked here, not by argparse's type=: its errors print the usage too.
    out = Path(fspath(args.out, "--out"))
    return train_and_summarize(args.inputs, args.vocab_size, args.special_tokens or [], out, args)
