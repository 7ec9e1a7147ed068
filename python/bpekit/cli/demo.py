"""``bpekit demo``: train a 10,000-token vocabulary on a corpus every machine has.

The corpus is, in order of preference: ``--input``; ``$BPEKIT_DEMO_INPUT`` (a file or
folder; ``make demo`` sets it to the project's shared corpora when they sit beside the
checkout); the source of Python's own standard library, which every machine has. It
ends with commands to try on what it made, with the paths it wrote.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sysconfig
from pathlib import Path

from bpekit._paths import fspath
from bpekit.cli.train import add_common_options, train_and_summarize, vocab_size_arg


def default_inputs() -> tuple[list[str], str]:
    env = os.environ.get("BPEKIT_DEMO_INPUT")
    if env:
        return [env], f"$BPEKIT_DEMO_INPUT ({env})"
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(str(p) for p in stdlib.glob("*.py"))
    return files, f"Python's standard library source ({stdlib}, {len(files)} files)"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser("demo", help="train a 10,000-token vocabulary on a default corpus")
    p.add_argument("--input", nargs="+", default=None, help="files or folders instead of the default corpus")
    p.add_argument("--vocab-size", type=vocab_size_arg, default=10_000)
    p.add_argument(
        "--out",
        default=None,
        help="output folder (default: a new private folder TMPDIR/bpekit-demo-XXXXXXXX)",
    )
    add_common_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    if args.input:
        inputs, what = args.input, " ".join(args.input)
    else:
        inputs, what = default_inputs()
    # tempfile is imported here, not when the parser is built for every command.
    import tempfile

    # A new folder of this user's, made with mkdtemp (0700, a name nobody can plant a
    # link at ahead of time): a fixed name in the shared temporary folder wrote through
    # whatever link another user had put there.
    if args.out is not None:
        out = Path(fspath(args.out, "--out"))
    else:
        out = Path(tempfile.mkdtemp(prefix="bpekit-demo-"))
    args.out = out  # what an interrupt reports on (cli.output_paths)
    print(f"bpekit demo: training a {args.vocab_size:,}-token vocabulary on {what}")
    status = train_and_summarize(inputs, args.vocab_size, ["<|endoftext|>"], out, args)
    print(next_steps(out, _sample(inputs)))
    return status


def _sample(inputs: list[str]) -> str | None:
    """One file of the corpus to encode, the first in reading order; None where the
    inputs name none (a pipe)."""
    from bpekit.sources import resolve_files

    try:
        return next((str(p) for p, _ in resolve_files(inputs) if isinstance(p, Path) and p.is_file()), None)
    except (OSError, ValueError, TypeError):
        return None


def next_steps(out: Path, sample: str | None) -> str:
    """What to try on the tokenizer the demo wrote into ``out``, as commands to paste.

    >>> print(next_steps(Path("/tmp/d"), "/data/a b.txt"))
    try it:
      bpekit show -t /tmp/d 'Hello world! Tokens are merged bytes.'
      bpekit viz -t /tmp/d --string 'Hello world! Tokens are merged bytes.' -o /tmp/d/viz.html
      bpekit encode '/data/a b.txt' -t /tmp/d -o /tmp/d/tokens.npy
    """
    tok = shlex.quote(str(out))
    text = shlex.quote("Hello world! Tokens are merged bytes.")
    lines = [
        f"bpekit show -t {tok} {text}",
        f"bpekit viz -t {tok} --string {text} -o {shlex.quote(str(out / 'viz.html'))}",
    ]
    if sample is not None:
        lines.append(
            f"bpekit encode {shlex.quote(sample)} -t {tok} -o {shlex.quote(str(out / 'tokens.npy'))}"
        )
    return "try it:\n" + "\n".join(f"  {line}" for line in lines)
