"""``bpekit.torch`` (minbpe's BPE on tensors) against bpekit's native paths, same input,
one run, on CPU tensors (and CUDA where torch sees a GPU).

    PYTHONPATH=python python benchmarks/torch_compare.py [--mb 1]

(Run it with a Python that has torch; the project's own environment does not install it.)
A ``RegexTokenizer`` is trained with ``bpekit.minbpe`` on the first ``--mb`` MB of
``en-small`` to 1,024 tokens; then the same text is encoded: natively
(``encode_ordinary``: scanner + merge engine) and with ``bpekit.torch.encode_pieces`` on
the pieces the scanner gives (every piece merged in parallel, one step per merge
round). ``BasicTokenizer`` training (one sequence, 100 KB to 512 tokens): numpy
(``bpekit.minbpe``) against torch. Ids and merges are compared; median of ``--rounds``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import RESULTS, command, corpus_prefix, time_fields, tool_version, write_result


@dataclass
class Timed:
    times: list[float]  # seconds of each call
    out: Any  # the last call's result

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def _time(fn: Callable[[], Any], rounds: int) -> Timed:
    """``rounds`` calls of ``fn``."""
    times, out = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return Timed(times, out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()

    import torch

    from bpekit import _core, minbpe
    from bpekit import torch as bt

    text = corpus_prefix("en-small", args.mb)
    size = len(text.encode("utf-8"))
    tok = minbpe.RegexTokenizer()
    tok.train(text, 1024)
    pieces = [p.encode("utf-8") for p in _core.pretokenize(text, "llama3")]
    devices = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
    rows = []

    def row(tool: str, case: str, timed: Timed, nbytes: int, base: Timed, note: str) -> dict[str, Any]:
        torch_version = "" if tool.startswith("bpekit native") else f", torch {torch.__version__}"
        return {
            "tool": tool,
            "case": case,
            "version": tool_version("bpekit") + torch_version,
            **time_fields(timed.times),
            "throughput": nbytes / timed.median / 1e6,
            "ratio": timed.median / base.median,
            "note": note,
        }

    case = f"encode {size / 1e6:g} MB, 1,024 tokens"
    native = _time(lambda: tok.encode_ordinary(text), args.rounds)
    rows.append(row("bpekit native", case, native, size, native, "1 thread"))
    for device in devices:

        def encode(d: str = device) -> Any:
            return bt.encode_pieces(pieces, tok.merges, device=d)

        timed = _time(encode, args.rounds)
        same = [i for ids in timed.out for i in ids] == native.out
        note = f"ids {'same' if same else 'DIFFERENT'}"
        rows.append(row(f"bpekit.torch ({device})", case, timed, size, native, note))
    sample = text[:100_000]
    nbytes = len(sample.encode("utf-8"))
    case = "train BasicTokenizer 0.1 MB -> 512"

    def numpy_train() -> Any:
        t = minbpe.BasicTokenizer()
        t.train(sample, 512)
        return t.merges

    base = _time(numpy_train, args.rounds)
    rows.append(row("bpekit native (numpy)", case, base, nbytes, base, ""))
    for device in devices:

        def torch_train(d: str = device) -> Any:
            t = bt.BasicTokenizer(d)
            t.train(sample, 512)
            return t.merges

        timed = _time(torch_train, args.rounds)
        note = f"merges {'same' if timed.out == base.out else 'DIFFERENT'}"
        rows.append(row(f"bpekit.torch ({device})", case, timed, nbytes, base, note))
    for r in rows:
        print(f"{r['case']:40} {r['tool']:24} {r['seconds']:.3f} s  {r['ratio']:.2f}x  {r['note']}")
    write_result(
        args.results,
        "torch-encode",
        title="minbpe's BPE on torch tensors",
        description=(
            "`bpekit.torch` against bpekit's native paths on the same input. Encode: a `bpekit.minbpe` "
            f"RegexTokenizer trained to 1,024 tokens on the first {args.mb:g} MB of `en-small`, that text "
            "encoded natively (`encode_ordinary`) and by `encode_pieces` on the scanner's pieces (all pieces "
            "merged in parallel, a step per merge round). Train: `BasicTokenizer` (one sequence) with numpy "
            "and with torch. `vs bpekit` is time over the native path's: above 1 is slower. Only CPU tensors "
            "ran here (no GPU on this machine, and none was lent to this session)."
        ),
        command=command("torch_compare.py", [f"--mb={args.mb:g}"]),
        corpus={"name": "en-small", "bytes": size},
        unit="MB/s",
        rows=rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
