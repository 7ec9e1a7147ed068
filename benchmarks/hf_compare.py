"""Encoding with HF ``tokenizer.json`` tokenizers: bpekit (``Tokenizer.from_hf``) against
``tokenizers`` itself, the same tokenizer file and the same documents, in one run.

    python benchmarks/hf_compare.py [--mb 4] [--rounds 3]

The tokenizers: OLMo 2's (``allenai_dolma2.json``: the Llama 3 Split regex, 22 added
tokens), GPT-NeoX-20B's (NFC, GPT-2's ByteLevel regex, runs of spaces as added tokens)
and GPT-2's, built with ``tokenizers`` from the shared GPT-2 files. The texts: the
first ``--mb`` MB of the ``en-small`` and ``ml`` corpora (``benchmarks/corpora.py``),
cut into documents at blank lines. ``1 thread``: each document encoded in turn
(``encode``; ``tokenizers``' ``encode(doc, add_special_tokens=False)``); ``batch, 2
threads``: one ``encode_batch`` of all documents (``tokenizers`` on its own thread pool,
all cores). Every configuration runs once per round, interleaved, ``--rounds`` rounds;
the figure is the median, and the ids of every document are compared once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from _common import (
    RESULTS,
    add_ratios,
    command,
    corpus_prefix,
    data_dir,
    gpt2_tokenizer_json,
    time_fields,
    tool_version,
    write_result,
)


def _documents(name: str, mb: float) -> list[str]:
    """The first ``mb`` MB of corpus ``name`` in documents of ~2 KB, cut at blank lines."""
    docs, cur = [], []
    for para in corpus_prefix(name, mb).split("\n\n"):
        cur.append(para)
        if sum(map(len, cur)) > 2000:
            docs.append("\n\n".join(cur) + "\n\n")
            cur = []
    if cur:
        docs.append("\n\n".join(cur))
    return docs


def _each(encode: Callable[[str], object], docs: list[str]) -> list[object]:
    """Each document encoded in turn."""
    return [encode(d) for d in docs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=4.0, help="MB of each corpus")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()

    import tokenizers  # type: ignore[import-untyped]

    import bpekit

    data = data_dir(None)
    tmp = Path(tempfile.mkdtemp())
    files = {
        "OLMo 2": data / "hf" / "allenai_dolma2.json",
        "GPT-NeoX-20B": data / "hf" / "allenai_eleuther-ai-gpt-neox-20b-pii-special.json",
        "GPT-2": gpt2_tokenizer_json(tmp / "gpt2.json", data),
    }
    corpora = {name: _documents(name, args.mb) for name in ("en-small", "ml")}
    rows = []
    for tok_name, path in files.items():
        ours = bpekit.Tokenizer.from_hf(path)
        theirs = tokenizers.Tokenizer.from_file(str(path))
        for corpus, docs in corpora.items():
            size = sum(len(d.encode("utf-8")) for d in docs)
            ids_ours = ours.encode_batch(docs, 2)
            ids_theirs = [e.ids for e in theirs.encode_batch(docs, add_special_tokens=False)]
            same = "same" if ids_ours == ids_theirs else "DIFFERENT"
            theirs_one = partial(theirs.encode, add_special_tokens=False)
            runs: dict[tuple[str, str], Callable[[], object]] = {
                ("bpekit", "1 thread"): partial(_each, ours.encode, docs),
                ("tokenizers", "1 thread"): partial(_each, theirs_one, docs),
                ("bpekit", "batch, 2 threads"): partial(ours.encode_batch, docs, 2),
                ("tokenizers", "batch, 2 threads"): partial(
                    theirs.encode_batch, docs, add_special_tokens=False
                ),
            }
            times: dict[tuple[str, str], list[float]] = {k: [] for k in runs}
            for _ in range(args.rounds):
                for key, fn in runs.items():
                    t0 = time.perf_counter()
                    fn()
                    times[key].append(time.perf_counter() - t0)
            case_rows = []
            for (tool, mode), ts in times.items():
                med = statistics.median(ts)
                case_rows.append(
                    {
                        "tool": tool,
                        "case": f"{tok_name}, {corpus}, {mode}",
                        "version": tool_version(tool),
                        **time_fields(ts),
                        "throughput": size / med / 1e6,
                        "ids": same,
                        "note": f"ids {same}, {len(docs):,} documents",
                    }
                )
            rows += add_ratios(case_rows)
            print(
                f"{tok_name:14} {corpus:9} "
                + "  ".join(
                    f"{r['tool']} {r['case'].split(', ')[-1]}: {r['throughput']:.1f} MB/s" for r in case_rows
                ),
                flush=True,
            )
            if same != "same":
                print(f"  ! {tok_name} on {corpus}: ids differ", file=sys.stderr)
    write_result(
        args.results,
        "hf-encode",
        title="Encoding with HF tokenizer.json tokenizers",
        description=(
            "bpekit's `Tokenizer.from_hf` against HF `tokenizers` on the same `tokenizer.json` "
            f"and the same documents: the first {args.mb:g} MB of `en-small` and `ml`, cut into "
            "documents of ~2 KB at blank lines. `1 thread`: each document encoded in turn; "
            "`batch, 2 threads`: one `encode_batch` of all of them. Configurations interleaved, "
            f"{args.rounds} rounds, median. OLMo 2: the Llama 3 regex on bpekit's cl100k scanner, "
            "22 added tokens; GPT-NeoX-20B: NFC, GPT-2's regex, runs of spaces as added tokens; "
            "GPT-2: built with `tokenizers` from GPT-2's files. `vs bpekit` is time over bpekit's."
        ),
        command=command("hf_compare.py", [f"--mb={args.mb:g}", f"--rounds={args.rounds}"]),
        corpus={"name": "en-small + ml", "bytes": int(args.mb * 2e6)},
        unit="MB/s",
        rows=rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
