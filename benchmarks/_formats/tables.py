"""The tables of ``formats_compare.py`` from its timings: throughput by input, the
per-document cost of an iterable, and the input-format targets."""

from __future__ import annotations

import statistics
from typing import Any

from _common import Targets, columns, median_ratio, table, time_fields
from _formats import THREADS
from _formats.files import DOC_SIZE, OVERHEAD_SIZES
from _formats.inputs import ALONE, BY_KEY, INPUTS, Job
from _formats.memory import FLAT_SHARE

Times = dict[Job, list[float]]


def throughput_table(
    times: Times, differ: set[str], stamp: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The main table and the figures the targets are judged on."""
    mb = stamp["documents"]["5 KB"]["bytes"] / 1e6
    rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {}
    for key, (_, label) in ALONE.items():
        t = times[("alone", key, 1)]
        rows.append(
            {
                "input": label,
                "file": BY_KEY[key].file,
                "file_mb": stamp["files"][BY_KEY[key].file] / 1e6,
                "threads": 1,
                **time_fields(t),
                "throughput": mb / statistics.median(t),
                "note": "no counting",
            }
        )
    for threads in THREADS:
        text = times[("count", "text", threads)]
        for inp in INPUTS:
            t = times[("count", inp.key, threads)]
            over = None
            if inp.key in ALONE:
                plain, source = times[("count", ALONE[inp.key][0], threads)], times[("alone", inp.key, 1)]
                over = statistics.median(a / (b + c) - 1 for a, b, c in zip(t, plain, source, strict=True))
                figures[f"over:{inp.key}:{threads}"] = over
            vs_text = median_ratio(text, t)
            figures[f"vs_text:{inp.key}:{threads}"] = vs_text
            notes = []
            if inp.key in differ:
                notes.append("counts differ from plain text's!")
            if inp.key == "list":
                notes.append("list made before each call, untimed")
            rows.append(
                {
                    "input": inp.label,
                    "file": None if inp.kind == "list" else inp.file,
                    "file_mb": stamp["files"].get(inp.file, 0) / 1e6 if inp.kind == "file" else None,
                    "threads": threads,
                    **time_fields(t),
                    "throughput": mb / statistics.median(t),
                    "vs_text": vs_text,
                    "over": over,
                    "note": "; ".join(notes),
                }
            )
    # Scaling: 2 threads over 1 for each input, beside text's.
    for inp in INPUTS:
        figures[f"scaling:{inp.key}"] = median_ratio(
            times[("count", inp.key, 1)], times[("count", inp.key, 2)]
        )
    intro = (
        "`count_pretokens` of the same documents in each form. MB/s: document text per second; "
        "vs text: throughput over plain text's in the same round (median of the rounds' ratios); "
        "over source alone + counting: the input's time over the sum of its source alone (the "
        "zstd decompression; pyarrow reading the column; the Python generator drained) and the "
        "counting of the plain file "
        "(JSONL for `.jsonl.zst`), in the same round, less one: its cost beyond the two parts."
    )
    cols = columns(
        ("input", "input", "text"),
        ("file", "file", "code"),
        ("file_mb", "file MB", "num"),
        ("threads", "threads", "int"),
        ("seconds", "time", "time"),
        ("throughput", "MB/s", "num"),
        ("vs_text", "vs text", "pct"),
        ("over", "over source alone + counting", "signed_pct"),
        ("note", "notes", "text"),
    )
    return table("Throughput by input", intro, cols, rows), figures


def overhead_table(
    times: Times, differ: set[str], stamp: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {}
    for threads in THREADS:
        for label, (target, _) in OVERHEAD_SIZES.items():
            info = stamp["documents"][label]
            mb = info["bytes"] / 1e6
            if target == DOC_SIZE:
                text, lst = times[("count", "text", threads)], times[("count", "list", threads)]
            else:
                text, lst = times[("count-text", label, threads)], times[("count-list", label, threads)]
            us = statistics.median((b - a) / info["count"] * 1e6 for a, b in zip(text, lst, strict=True))
            figures[f"us_per_doc:{label}:{threads}"] = us
            rows.append(
                {
                    "size": label,
                    "documents": info["count"],
                    "mean_bytes": info["bytes"] / info["count"],
                    "threads": threads,
                    "text_mbps": mb / statistics.median(text),
                    "list_mbps": mb / statistics.median(lst),
                    "vs_text": median_ratio(text, lst),
                    "us_per_doc": us,
                    "runs": len(lst),
                    "note": "counts differ from plain text's!" if differ & {label, f"list:{label}"} else "",
                }
            )
    intro = (
        "The same text cut into documents of about 500 B, 5 KB and 50 KB, counted from a list of "
        "`str` (new objects for every call) and from a plain-text file of the same documents joined by "
        "`<|endoftext|>`, in the same rounds. µs per document: (list time - text time) / documents, "
        "median over the rounds."
    )
    cols = columns(
        ("size", "documents of", "text"),
        ("documents", "documents", "int"),
        ("mean_bytes", "mean bytes", "int"),
        ("threads", "threads", "int"),
        ("text_mbps", "text MB/s", "num"),
        ("list_mbps", "list MB/s", "num"),
        ("vs_text", "list vs text", "pct"),
        ("us_per_doc", "µs per document beyond text", "num"),
        ("note", "notes", "text"),
    )
    return table("Per-document cost of an iterable", intro, cols, rows), figures


def targets_table(figures: dict[str, Any]) -> dict[str, Any]:
    """Each input-format target against this run's figures (missing figures: "-")."""
    t = Targets()
    add = t.add

    def share(target: str, key: str, least: float) -> None:
        v = figures.get(key)
        add(target, None if v is None else f"{v:.0%}", v is not None and v >= least)

    share("JSONL >= 70% of plain text, 1 thread", "vs_text:jsonl:1", 0.70)
    s, st = figures.get("scaling:jsonl"), figures.get("scaling:text")
    if s and st:
        add(
            "JSONL scales with threads as text does",
            f"2 threads / 1: JSONL {s:.2f}x, text {st:.2f}x",
            s >= 0.9 * st,
        )
    for key in ("txt.zst", "jsonl.zst"):
        x = figures.get(f"over:{key}:1")
        measured = None if x is None else f"{x:+.0%}"
        add(
            f"`{BY_KEY[key].file}` <= decompression + counting + 10%, 1 thread",
            measured,
            x is not None and x <= 0.10,
        )
    for key in ("parquet", "snappy.parquet"):
        share(f"{BY_KEY[key].label} >= 60% of plain text, 1 thread", f"vs_text:{key}:1", 0.60)
    share("list of ~5 KB `str` >= 70% of plain text, 1 thread", "vs_text:list:1", 0.70)
    share("generator of ~5 KB `str` >= 70% of plain text, 1 thread", "vs_text:generator:1", 0.70)
    limit = FLAT_SHARE * figures.get("corpus_mib", 0)
    for name, prefix in (("RSS", "call_slope"), ("anonymous memory", "anon_slope")):
        slopes = {
            k: figures[f"{prefix}:{k}"]
            for k, inp in BY_KEY.items()
            if inp.kind != "list" and figures.get(f"{prefix}:{k}") is not None
        }
        if slopes:
            over = [k for k in slopes if slopes[k] > limit]
            parts = [f"{BY_KEY[k].label}: {slopes[k]:+.0f} MiB" for k in over]
            flat = [v for k, v in slopes.items() if k not in over]
            if flat:
                parts.append(f"{'the others' if over else 'all'} at most {max(flat):+.0f} MiB")
            add(
                f"memory independent of input size: the call's peak {name} grows by less than "
                f"{FLAT_SHARE:.0%} of the input added ({limit:.1f} MiB per 1x more; every input "
                "but the list)",
                "; ".join(parts),
                not over,
            )
    return t.table("Targets: input formats", "Each target against this run's figures above.")
