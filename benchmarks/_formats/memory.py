"""Memory: each input counted in a fresh process for the corpus and for it 2, 4 and 8
times over, and how the call's peak memory grows with the input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _common import columns, run_worker, table
from _formats import SCRIPT
from _formats.inputs import BY_KEY, INPUTS, count, make_inputs
from _memory import growth, growth_columns, measure_call, memory_series

MEMORY_THREADS = 2
# The memory runs: the corpus this many times over.
COPIES = (1, 2, 4, 8)
# Memory is independent of input size when the call's peak grows by less than this
# share of the input added (per 1x more: the corpus's text): buffers and allocators
# vary by tens of MiB from run to run at any size, where memory that holds the input
# grows by the input's size.
FLAT_SHARE = 0.05


def memory_worker(bench: Path, key: str, copies: int, threads: int) -> dict[str, Any]:
    """Counts ``key`` ``copies`` times over in this fresh process: ``measure_call``'s
    figures, and the distinct pre-tokens counted."""
    import bpekit  # noqa: F401  (imported before the RSS before the call is read)

    if key.endswith("parquet"):
        import pyarrow.parquet  # noqa: F401  (its libraries are no part of what reading holds)
    inputs = make_inputs(bench, BY_KEY[key], copies)
    (_, counts), figures = measure_call(lambda: count(inputs, threads))
    return {**figures, "unique": len(counts)}


def memory_table(bench: Path, corpus_mib: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The table and the figures the targets are judged on."""
    rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {"corpus_mib": corpus_mib}
    for inp in INPUTS:

        def run(copies: int, key: str = inp.key) -> dict[str, Any] | None:
            return run_worker(SCRIPT, ["mem", str(bench), key, str(copies), str(MEMORY_THREADS)])

        m = memory_series(f"{inp.key:15s}", COPIES, run)
        if m is None:
            continue
        row = {"input": inp.label, "before": m[1]["rss_before_mib"], "peak": m[1]["peak_rss_mib"]}
        row |= growth(m, COPIES, by_size=True)
        for name in ("call", "anon"):
            if f"{name}_slope" in row:
                figures[f"{name}_slope:{inp.key}"] = row[f"{name}_slope"]
        notes = []
        if inp.kind == "list":
            notes.append(
                f"the list is in before; at {COPIES[-1]}x it is {m[COPIES[-1]]['rss_before_mib']:,.0f} MiB"
            )
        rows.append({**row, "note": "; ".join(notes)})
    sizes = " / ".join(f"{c}x" for c in COPIES)
    text = (
        f"Each input counted on {MEMORY_THREADS} threads in a fresh process, for the corpus (1x) and "
        f"for it {', '.join(map(str, COPIES[1:]))} times over (each file named so many times; "
        "the list and the generator read the documents so many times). Before: the RSS when the "
        "call starts (the interpreter, bpekit, pyarrow for Parquet, the list), 1x; peak: the "
        "process's peak RSS, 1x; call: the call's own peak RSS above its start (the peak reset "
        "through /proc/self/clear_refs before the call), pages of mapped files included; "
        "anonymous: the same for anonymous memory alone (heap, no file pages), sampled every 2 ms; "
        f"per 1x more: the least-squares slope over {sizes}, in MiB per 1x "
        f"({corpus_mib:.0f} MiB of text) more input. "
        "A repeated corpus adds no new pre-tokens, so the counts are the same size at every size: "
        "what grows is what reading holds."
    )
    cols = columns(
        ("input", "input", "text"),
        ("before", "before", "mib"),
        ("peak", "peak", "mib"),
        *growth_columns(COPIES),
        ("note", "notes", "text"),
    )
    return table("Memory", text, cols, rows), figures
