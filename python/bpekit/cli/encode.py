"""``bpekit encode INPUT... --tokenizer DIR_OR_ENCODING --out tokens.npy`` (one array), or
``--out DIR`` (a dataset folder: shards, document indexes, a manifest)."""

from __future__ import annotations

import argparse
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from bpekit._paths import fspath
from bpekit._stores import is_url
from bpekit.cli.train import (
    INPUTS_HELP,
    add_distributed_options,
    add_run_options,
    distributed_options,
    documents_line,
    peak_rss_mib,
    read_options,
)
from bpekit.dataset.options import RECORDS_DEFAULT, Layout, Marks
from bpekit.dataset.spec import ID_BYTES, SHARD_FORMATS
from bpekit.dataset.tokens import write_tokens
from bpekit.encodings import load_tokenizer
from bpekit.options import DistributedOptions, ReadOptions, RunOptions


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "encode", help="encode text, JSON lines or Parquet files into a .npy of token ids or a dataset folder"
    )
    p.add_argument("inputs", nargs="+", help=INPUTS_HELP + "; read in order")
    p.add_argument(
        "--tokenizer",
        "-t",
        required=True,
        help="an encoding name (gpt2, o200k_base, ...), a tokenizer.json (or a folder holding one), "
        "or a folder with vocab.json + merges.txt",
    )
    p.add_argument(
        "--special-token",
        action="append",
        default=None,
        dest="special_tokens",
        help="special token of a vocab.json tokenizer (repeatable; default: inferred)",
    )
    p.add_argument(
        "--out",
        "-o",
        type=str,
        required=True,
        help="a .npy file to write all ids into, or a folder for a dataset: train/ (and val/) "
        "shards with document indexes and manifest.json (see the options below)",
    )
    ds = p.add_argument_group("dataset folders (--out not ending in .npy)")
    ds.add_argument("--shard-tokens", type=int, default=None, help="ids per shard at most (default: 2**28)")
    ds.add_argument(
        "--shard-format",
        choices=SHARD_FORMATS,
        default=None,
        help="npy (default); bin: raw little-endian ids (np.memmap); llmc: llm.c's .bin; "
        "megatron: .bin + Megatron-LM's .idx; datatrove: .ds + .ds.index + .ds.metadata",
    )
    ds.add_argument(
        "--val-fraction",
        type=float,
        default=None,
        help="share of the documents written to val/, chosen by a hash of each document's "
        "number and --seed (default: 0, no val/)",
    )
    ds.add_argument("--seed", type=int, default=None, help="seed of the val split (default: 0)")
    ds.add_argument(
        "--overwrite",
        action="store_const",
        const=True,
        default=None,
        help="start over, replacing a dataset already in the folder (by default a run that was "
        "cut short is gone on with, keeping its finished shards)",
    )
    ds.add_argument(
        "--no-checksums",
        dest="checksums",
        action="store_const",
        const=False,
        default=None,
        help="record no sha256 of the shards in the manifest (hashing costs ~10%% of an "
        "encoding core; a resumed run then checks sizes only)",
    )
    p.add_argument(
        "--dtype",
        choices=tuple(ID_BYTES),
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
    eos = p.add_mutually_exclusive_group()
    eos.add_argument(
        "--eos",
        metavar="TOKEN",
        default=None,
        help="write this token after each document: each record, and each text file as one document "
        "(default: the tokenizer's '<|endoftext|>' after each record when it has one, nothing for "
        "text files, whose separators are in their text); a token like '<|endoftext|>' that a "
        "vocab.json tokenizer lacks is added as a special token, with a warning giving its id",
    )
    eos.add_argument("--no-eos", action="store_true", help="write no token after records")
    p.add_argument(
        "--bos",
        metavar="TOKEN",
        default=None,
        help="write this token before each document: each record and each text file (default: none)",
    )
    add_run_options(p)
    add_distributed_options(p, "encode a dataset folder")
    return p


# The flags of a dataset folder, which a .npy takes none of: the layout's (but
# --dtype), and --overwrite (RunOptions.resume's), by their keywords (args' names).
_DATASET_FLAGS = {f.name: f.metadata["flag"] for f in fields(Layout) if f.name != "dtype"} | {
    "overwrite": next(f.metadata["flag"] for f in fields(RunOptions) if f.name == "resume")
}


def run(args: argparse.Namespace) -> int:
    # Checked here, not by argparse's type=: its errors print the usage too.
    out = fspath(args.out, "--out")
    # A store's URL stays a string: Path("s3://b/ds") would be "s3:/b/ds".
    args.out = out if is_url(out) else Path(out)
    tok = load_tokenizer(args.tokenizer, args.special_tokens)
    tok = _with_framing_tokens(args, tok)
    # Every flag's default is None: `--shard-tokens 0` is given (and refused).
    given = {k: v for k in _DATASET_FLAGS if (v := getattr(args, k)) is not None}
    if Path(args.out).suffix != ".npy":
        return _run_dataset(args, tok, given)
    if args.ray is not None:
        raise ValueError(f"--ray writes a dataset folder, and --out {args.out} ends in .npy")
    distributed_options(args)  # --work-dir without --ray is refused
    if given:
        flag = _DATASET_FLAGS[next(iter(given))]
        raise ValueError(f"{flag} is for a dataset folder, and --out {args.out} ends in .npy")
    marks, read, run = _options(args)
    layout = Layout(dtype=args.dtype)
    t0 = time.perf_counter()
    result = write_tokens(args.inputs, args.out, tok, layout, marks, read, run, cli=True)
    dt = max(time.perf_counter() - t0, 1e-9)
    # The bytes of text read, not the files' sizes: a .gz file counts decompressed.
    n, total = result.tokens, result.bytes
    print(
        f"encoded {result.files} file(s), {total / 1e6:,.1f} MB of text -> {n:,} tokens in {dt:.2f} s "
        f"({total / 1e6 / dt:,.1f} MB/s of text, {n / dt:,.0f} tokens/s, {total / max(n, 1):.2f} bytes/token)"
    )
    print(f"  {documents_line(result.stats)}")
    for note in result.framing.notes:
        print(f"  {note}")
    print(f"  peak memory {peak_rss_mib():,.0f} MiB; wrote {args.out}")
    return 0


def _with_framing_tokens(args: argparse.Namespace, tok: Any) -> Any:
    """``tok`` with the special-looking tokens of ``--eos``, ``--bos`` and
    ``--after-each-file`` that it lacks added as special tokens, where it is a
    vocab.json + merges.txt folder (whose special tokens can be given): the summary's
    advice for a tokenizer trained without ``<|endoftext|>`` is ``--eos TOKEN``.
    ``load_tokenizer`` warns of each id past the vocabulary. Other tokenizers are left
    as they are, and a token they lack stays an error naming their special tokens."""
    from bpekit.encodings import looks_special

    given = [t for t in (args.eos, args.bos, args.after_each_file) if isinstance(t, str)]
    missing = []
    for token in dict.fromkeys(given):
        if token in tok.special_tokens or not looks_special(token.encode("utf-8")):
            continue
        try:
            tok.encode_single_token(token)
        except KeyError:
            missing.append(token)
    if not missing:
        return tok
    specials = [*tok.special_tokens, *missing]
    try:
        grown = load_tokenizer(args.tokenizer, specials)
    except ValueError:  # an encoding or a tokenizer.json: its special tokens are its own
        return tok
    args.special_tokens = specials  # the dataset's manifest records this tokenizer
    return grown


def _options(args: argparse.Namespace, resume: bool = True) -> tuple[Marks, ReadOptions, RunOptions]:
    """The marks, reading and run options a .npy and a dataset folder share, from the
    command line."""
    eos = None if args.no_eos else RECORDS_DEFAULT if args.eos is None else args.eos
    marks = Marks(eos=eos, bos=args.bos, after_each_file=args.after_each_file)
    read = read_options(args)
    run = RunOptions(num_threads=args.threads, progress=not args.quiet, resume=resume)
    return marks, read, run


def _run_dataset(args: argparse.Namespace, tok: Any, given: dict[str, Any]) -> int:
    t0 = time.perf_counter()
    resume = not given.pop("overwrite", None)
    # The spec, where it gives this tokenizer, so that the manifest names its files.
    spec = args.tokenizer if args.special_tokens is None else tok
    distributed = distributed_options(args)
    layout = Layout(dtype=args.dtype, **given)
    marks, read, run = _options(args, resume)
    if distributed is None:
        from bpekit.dataset.writer import write_dataset

        result = write_dataset(args.inputs, args.out, spec, layout, marks, read, run, cli=True)
    else:
        from bpekit.distributed.dataset import write_dataset as write_distributed

        # --threads is each task's threads there, 1 by default.
        run = replace(run, num_threads=distributed.pop("num_threads"))
        spread = DistributedOptions(**distributed)
        result = write_distributed(args.inputs, args.out, spec, layout, marks, read, run, spread, cli=True)
    dt = max(time.perf_counter() - t0, 1e-9)
    m = result.manifest
    if result.done_before:
        print(f"{args.out}: holds this dataset already (the same inputs and options); nothing to do")
    else:
        if result.kept:
            print(f"went on with an unfinished run: kept its {result.kept:,} finished shard(s)")
        if distributed is not None:
            kept = result.stats["kept"]
            kept_note = f", {kept:,} kept from an earlier run" if kept else ""
            print(f"encoded in {result.stats['units']:,} units on Ray{kept_note}")
        total, n = m["totals"]["bytes"], m["totals"]["tokens"]
        print(
            f"encoded {result.files} file(s), {total / 1e6:,.1f} MB of text -> {n:,} tokens in {dt:.2f} s "
            f"({total / 1e6 / dt:,.1f} MB/s of text, {n / dt:,.0f} tokens/s)"
        )
        print(f"  {documents_line(result.stats)}")
        for note in result.framing.notes:
            print(f"  {note}")
    splits = m["splits"]
    for name, split in splits.items():
        print(
            f"  {name}: {len(split['shards']):,} {m['format']} shard(s) of {m['dtype']}, "
            f"{split['tokens']:,} tokens{_share(split, splits, 'tokens')}, "
            f"{split['documents']:,} documents{_share(split, splits, 'documents')}"
        )
    # A dataset there already was left as it was: nothing was written.
    wrote = "" if result.done_before else f"; wrote {args.out}/manifest.json"
    print(f"  peak memory {peak_rss_mib():,.0f} MiB{wrote}")
    return 0


def _share(split: dict[str, Any], splits: dict[str, Any], key: str) -> str:
    """A split's share of all the tokens or documents, where there is more than one
    split: documents go to val/ by their number, so its share of tokens follows the
    lengths of the documents it drew (a few books among short records make it small).

    >>> splits = {"train": {"tokens": 998}, "val": {"tokens": 2}}
    >>> _share(splits["val"], splits, "tokens")
    ' (0.20%)'
    """
    total = sum(s[key] for s in splits.values())
    return f" ({split[key] / total:.2%})" if len(splits) > 1 and total else ""
