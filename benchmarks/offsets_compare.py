"""Offsets: ``encode_with_offsets`` against plain ``encode`` in bpekit, and against
``tokenizers``' ``encode`` (which always computes offsets), on the same documents.

    python benchmarks/offsets_compare.py [--mb 2] [--rounds 5]

The tokenizers: OLMo 2's ``tokenizer.json`` (bpekit against ``tokenizers``) and
``o200k_base`` (bpekit alone: tiktoken has no encode offsets). The texts: the first
``--mb`` MB of ``en-small`` and ``ml``, cut into documents of ~2 KB at blank lines.
``1 thread``: each document in turn; ``batch, 2 threads``: one batch call of all. The
forms: ``encode`` (ids), ``encode_with_offsets`` (ids and a list of ``(start, end)``
tuples), ``encode_to_numpy`` and ``encode_with_offsets_to_numpy`` (arrays). Every configuration runs once a
round, interleaved; the figure is the median; the offsets are compared with
``tokenizers``' once.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from _common import (
    RESULTS,
    command,
    corpus_prefix,
    data_dir,
    encodings_env,
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
    return [encode(d) for d in docs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=2.0, help="MB of each corpus")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()

    import os

    import tokenizers  # type: ignore[import-untyped]

    import bpekit

    os.environ.update(encodings_env())
    data = data_dir(None)
    olmo = data / "hf" / "allenai_dolma2.json"
    toks: dict[str, tuple[bpekit.Tokenizer, object | None]] = {
        "OLMo 2": (bpekit.Tokenizer.from_hf(olmo), tokenizers.Tokenizer.from_file(str(olmo))),
        "o200k_base": (bpekit.get_encoding("o200k_base"), None),
    }
    corpora = {name: _documents(name, args.mb) for name in ("en-small", "ml")}
    rows = []
    for tok_name, (ours, theirs) in toks.items():
        kw = {"disallowed_special": ()}
        for corpus, docs in corpora.items():
            size = sum(len(d.encode("utf-8")) for d in docs)
            same = ""
            if theirs is not None:
                want = [(e.ids, e.offsets) for e in theirs.encode_batch(docs, add_special_tokens=False)]  # type: ignore[attr-defined]
                same = "same" if ours.encode_batch_with_offsets(docs, 2, **kw) == want else "DIFFERENT"
            runs: dict[tuple[str, str], Callable[[], object]] = {
                ("bpekit encode", "1 thread"): partial(_each, partial(ours.encode, **kw), docs),
                ("bpekit encode_with_offsets", "1 thread"): partial(
                    _each, partial(ours.encode_with_offsets, **kw), docs
                ),
                ("bpekit encode_to_numpy", "1 thread"): partial(
                    _each, partial(ours.encode_to_numpy, **kw), docs
                ),
                ("bpekit encode_with_offsets_to_numpy", "1 thread"): partial(
                    _each, partial(ours.encode_with_offsets_to_numpy, **kw), docs
                ),
                ("bpekit encode", "batch, 2 threads"): partial(ours.encode_batch, docs, 2, **kw),
                ("bpekit encode_with_offsets", "batch, 2 threads"): partial(
                    ours.encode_batch_with_offsets, docs, 2, **kw
                ),
            }
            if theirs is not None:
                one = partial(theirs.encode, add_special_tokens=False)  # type: ignore[attr-defined]
                runs[("tokenizers encode", "1 thread")] = partial(_each, one, docs)
                runs[("tokenizers encode", "batch, 2 threads")] = partial(
                    theirs.encode_batch,  # type: ignore[attr-defined]
                    docs,
                    add_special_tokens=False,
                )
            times: dict[tuple[str, str], list[float]] = {k: [] for k in runs}
            for _ in range(args.rounds):
                for key, fn in runs.items():
                    t0 = time.perf_counter()
                    fn()
                    times[key].append(time.perf_counter() - t0)
            for mode in ("1 thread", "batch, 2 threads"):
                for (tool, m), ts in times.items():
                    if m != mode:
                        continue
                    # The arrays are compared with plain arrays, the rest with lists.
                    plain = "bpekit encode_to_numpy" if "numpy" in tool else "bpekit encode"
                    base = statistics.median(times[(plain, mode)])
                    med = statistics.median(ts)
                    rows.append(
                        {
                            "tool": tool,
                            "case": f"{tok_name}, {corpus}, {mode}",
                            "version": tool_version(tool.split()[0]),
                            **time_fields(ts),
                            "throughput": size / med / 1e6,
                            "ratio": med / base,
                            "note": f"offsets {same} as tokenizers'" if same and "offsets" in tool else "",
                        }
                    )
                    rate = size / med / 1e6
                    print(f"{tok_name:10} {corpus:9} {mode:17} {tool:36} {rate:7.1f} MB/s  x{med / base:.2f}")
    write_result(
        args.results,
        "offsets",
        title="Encoding with offsets",
        description=(
            "`encode_with_offsets` (ids and a list of `(start, end)` character offsets) and plain "
            "`encode`, their numpy forms, and HF `tokenizers`' `encode` (which always computes "
            "offsets) on OLMo 2's `tokenizer.json`; `o200k_base` for bpekit alone. "
            f"The first {args.mb:g} MB of `en-small` and `ml` in documents of ~2 KB. "
            "`1 thread`: each document in turn; `batch, 2 threads`: one batch "
            f"call. Interleaved, {args.rounds} rounds, median. `vs bpekit` is time over bpekit's plain "
            "`encode` in the same case (for the numpy rows, `encode_to_numpy`'s)."
        ),
        command=command("offsets_compare.py", [f"--mb={args.mb:g}", f"--rounds={args.rounds}"]),
        corpus={"name": "en-small + ml", "bytes": int(args.mb * 2e6)},
        unit="MB/s",
        rows=rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
