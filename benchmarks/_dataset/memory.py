"""Memory: ``encode_file`` and ``encode_dataset`` each in a fresh process on the corpus
named 1, 2 and 4 times, and how their peak memory grows with the input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _common import MiB, columns, remove, run_worker, table
from _dataset import SCRIPT, TOKENIZER
from _dataset.corpora import Corpus
from _dataset.throughput import BY_KEY, prepare_output, run_writer
from _memory import growth, growth_columns, measure_call, memory_series

MEMORY_THREADS = 2
COPIES = (1, 2, 4)
# Memory is independent of input size when the call's peak grows by less than this
# share of the input added (as in formats_compare.py).
FLAT_SHARE = 0.05


def memory_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One writer on the corpus ``copies`` times over, in this fresh process: its tokens
    and ``measure_call``'s figures."""
    import bpekit

    tok = bpekit.get_encoding(TOKENIZER)
    inputs = [spec["path"]] * spec["copies"]
    out = Path(spec["out"])
    writer = BY_KEY[spec["writer"]]
    prepare_output(writer, out)
    tokens, figures = measure_call(
        lambda: run_writer(writer, inputs, out, tok, spec["threads"], spec["shard_tokens"])
    )
    return {**figures, "tokens": tokens}


def memory_table(
    corpora: list[Corpus], shard_tokens: int, out_root: Path, env: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The table, the figures the targets are judged on, and the problems found (none:
    a run that fails is left out of the table)."""
    rows, figures = [], {}
    out = out_root / "memory"
    for c in corpora:
        corpus_mib = c.text_bytes / MiB
        figures[f"corpus_mib:{c.name}"] = corpus_mib
        for key in ("file", "npy"):

            def run(copies: int, c: Corpus = c, key: str = key) -> dict[str, Any] | None:
                spec = {"path": str(c.path), "copies": copies, "writer": key, "out": str(out)}
                spec.update(threads=MEMORY_THREADS, shard_tokens=shard_tokens)
                found = run_worker(SCRIPT, ["mem", json.dumps(spec)], env, label=f"mem {spec}")
                remove(out)
                return found

            m = memory_series(f"{c.name} {key:4s}", COPIES, run)
            if m is None:
                continue
            row: dict[str, Any] = {
                "corpus": c.name,
                "writer": BY_KEY[key].label,
                "before": m[1]["rss_before_mib"],
                "peak": m[1]["peak_rss_mib"],
                "peak_max": m[COPIES[-1]]["peak_rss_mib"],
                **growth(m, COPIES),
            }
            for name in ("call", "anon"):
                if f"{name}_slope" in row:
                    figures[f"{name}_slope:{c.name}:{key}"] = row[f"{name}_slope"]
            rows.append(row)
    sizes = " / ".join(f"{n}x" for n in COPIES)
    text = (
        f"Each writer on {MEMORY_THREADS} threads in a fresh process, on the corpus named "
        f"{', '.join(map(str, COPIES))} times (a list of one path repeated). Before: the RSS when the "
        "call starts (the interpreter, bpekit, the tokenizer); peak: the process's peak RSS at 1x and "
        f"{COPIES[-1]}x; call: the call's own peak RSS above its start (the peak reset through "
        "/proc/self/clear_refs), pages of mapped files included; anonymous: the same for anonymous "
        "memory alone (heap), sampled every 2 ms; per 1x more: the least-squares slope over "
        f"{sizes}, in MiB per corpus more."
    )
    cols = columns(
        ("corpus", "corpus", "text"),
        ("writer", "writer", "text"),
        ("before", "before", "mib"),
        ("peak", "peak, 1x", "mib"),
        ("peak_max", f"peak, {COPIES[-1]}x", "mib"),
        *growth_columns(COPIES),
    )
    return table("Memory at 1, 2 and 4 times the input", text, cols, rows), figures, []
