"""``bpekit train INPUT... --vocab-size N --special-token TOK --out DIR``, and the flags of
every command that reads a corpus, made from the option classes of ``bpekit.options``
(``cli._input.add_option_flags``): a new option there is a new flag here."""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path
from typing import Any

from bpekit._paths import fspath
from bpekit.cli._input import add_option_flags, option_values
from bpekit.options import DistributedOptions, ReadOptions, RunOptions, flag_of
from bpekit.training import MAX_VOCAB_SIZE, check_vocab_size, count_inputs, train_from_counts

# The flags of how inputs are read (ReadOptions' fields but errors=, which comes with
# the run's flags), and of how a --ray run is spread (DistributedOptions' but address=,
# which is --ray's value).
FORMAT_FLAGS = ("format", "text_field", "special_in_text", "bad_records")
SPREAD_FLAGS = ("work_dir", "workers", "unit_bytes")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
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
    p.add_argument(
        "--name",
        default=None,
        help="the tokenizer's name, saved in bpekit.json: what load_tokenizer names it, and the "
        "visualizer's header and a dataset's manifest show (default: bpe)",
    )
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
    add_option_flags(p, DistributedOptions, SPREAD_FLAGS, prefix="with --ray: ")


def distributed_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """``bpekit.distributed``'s keyword arguments for ``--ray`` (``address``,
    ``work_dir``, ``workers``, ``unit_bytes`` and each task's ``num_threads``), checked;
    None without it."""
    if not hasattr(args, "ray"):  # a command that never runs on Ray
        return None
    spread = option_values(args, DistributedOptions, SPREAD_FLAGS)
    if args.ray is None:
        if spread["work_dir"] is not None:
            raise ValueError("--work-dir keeps the units of a --ray run; give --ray too")
        for name in SPREAD_FLAGS:
            if spread[name] != getattr(DistributedOptions, name):
                raise ValueError(f"{flag_of(name)} is for a --ray run; give --ray too")
        return None
    address = args.ray or None
    workers = spread["workers"]
    if workers is not None and workers < 1:
        raise ValueError(f"--workers must be a positive number of CPUs, not {workers}")
    if workers is not None and address is not None:
        raise ValueError(
            "--workers is the CPUs of a Ray started here for the run; a cluster joined with --ray "
            "ADDRESS runs on its own"
        )
    DistributedOptions(address=address, **spread)  # checked before any work
    return {"address": address, "num_threads": args.threads or 1, **spread}


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
    add_option_flags(p, RunOptions, ["chunk_size"])


INPUTS_HELP = (
    "files, directories or quoted glob patterns ('data/*.jsonl.zst', 'shards/**/*.parquet'); "
    ".gz and .zst read transparently"
)


def add_format_options(p: argparse.ArgumentParser) -> None:
    """Options of every command that reads a corpus: how its files and records are read."""
    add_option_flags(p, ReadOptions, FORMAT_FLAGS)


def format_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``add_format_options``'s flags."""
    return option_values(args, ReadOptions, FORMAT_FLAGS)


def read_options(args: argparse.Namespace) -> ReadOptions:
    """How the inputs are read, from the flags of ``add_run_options``."""
    return ReadOptions(errors=args.errors, **format_options(args))


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
    notes = {
        "num_threads": "; loading uses them too, and encode writes its output on one more thread, "
        "which takes 3-20% of a core"
    }
    add_option_flags(p, RunOptions, ["num_threads"], notes)
    add_option_flags(p, ReadOptions, ["errors"])
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
    name = getattr(args, "name", None)
    if name is not None and not name.strip():
        raise ValueError("--name must not be empty: give the tokenizer a name, or leave --name out")
    read = read_options(args)
    progress = not args.quiet
    t0 = time.perf_counter()
    distributed = distributed_options(args)
    if distributed is None:
        run = RunOptions(num_threads=args.threads, chunk_size=args.chunk_size, progress=progress)
        counts = count_inputs(inputs, special_tokens, pattern=args.pattern, read=read, run=run)
    else:
        if args.chunk_size:
            raise ValueError(
                "--chunk-size is for a run on this machine; a --ray run is cut into --unit-bytes"
            )
        from bpekit.distributed import count_units

        run = RunOptions(num_threads=distributed.pop("num_threads"), progress=progress)
        spread = DistributedOptions(**distributed)
        counts = count_units(inputs, special_tokens, pattern=args.pattern, read=read, run=run, spread=spread)
    stats: dict[str, Any] = counts.stats or {}
    # The bytes of text read: a compressed file's decompressed, a record's text alone;
    # the progress bar counts the files' bytes, said beside it where they differ.
    text_bytes = stats["bytes"]
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

    save_folder(out, vocab, merges, special_tokens, resolve(args.pattern), name=name)
    t3 = time.perf_counter()

    count_s, merge_s = t1 - t0, t2 - t1
    print(
        f"trained {len(vocab):,} tokens ({len(merges):,} merges) on {stats['files']} file(s), "
        f"{_megabytes(text_bytes, _file_bytes(inputs, read))}"
    )
    print(f"  {documents_line(stats)}")
    if distributed is not None:
        kept = f", {stats['kept']:,} kept from an earlier run" if stats["kept"] else ""
        print(f"  counted in {stats['units']:,} units on Ray{kept}")
    rate = text_bytes / 1e6 / max(count_s, 1e-9)
    print(f"  counting   {count_s:8.3f} s   {rate:,.1f} MB/s of text")
    print(f"  merging    {merge_s:8.3f} s   {len(merges) / max(merge_s, 1e-9):,.0f} merges/s")
    print(f"  writing    {t3 - t2:8.3f} s")
    print(f"  peak memory {peak_rss_mib():,.0f} MiB{' (this process)' * (distributed is not None)}")
    print(f"  unique pre-tokens {len(counts):,}   pre-token occurrences {counts.total:,}")
    longest = sorted(vocab.values(), key=lambda b: (-len(b), b))[:5]
    print("  longest tokens: " + ", ".join(_show(b) for b in longest))
    named = f" (named {name!r})" if name is not None else ""
    print(f"  wrote {out / 'vocab.json'}, {out / 'merges.txt'} and {out / 'bpekit.json'}{named}")
    return 0


def _file_bytes(inputs: list[str], read: ReadOptions) -> int | None:
    """The bytes of the input files on disk, which the progress bar counts; None where
    they cannot be had (a file gone since, a pipe)."""
    from bpekit.sources import resolve_files

    try:
        return sum(
            p.stat().st_size if isinstance(p, Path) else p.size
            for p, _ in resolve_files(inputs, format=read.format)
            if not isinstance(p, Path) or p.is_file()
        )
    except (OSError, ValueError, TypeError):
        return None


def _megabytes(text_bytes: int, file_bytes: int | None) -> str:
    """The text read, in MB, and the files' bytes (the progress bar's) where they
    differ in what is shown: compressed files, or records with their JSON around them.

    >>> _megabytes(12_345_678, 12_345_000), _megabytes(12_345_678, 4_100_000)
    ('12.3 MB of text', '12.3 MB of text (4.1 MB of files)')
    """
    text = f"{text_bytes / 1e6:,.1f} MB"
    files = "" if file_bytes is None else f"{file_bytes / 1e6:,.1f} MB"
    return f"{text} of text" + (f" ({files} of files)" if files and files != text else "")


def run(args: argparse.Namespace) -> int:
    # Checked here, not by argparse's type=: its errors print the usage too.
    out = Path(fspath(args.out, "--out"))
    return train_and_summarize(args.inputs, args.vocab_size, args.special_tokens or [], out, args)
