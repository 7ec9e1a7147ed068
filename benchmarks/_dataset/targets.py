"""The dataset targets (speed beside the single file, memory independent of input size,
resuming after a kill) against the figures of the other parts."""

from __future__ import annotations

from typing import Any

from _common import Targets, yes
from _dataset.corpora import Corpus
from _dataset.memory import FLAT_SHARE
from _dataset.resume import RESUME_SLACK
from _dataset.throughput import WITHIN


def targets_table(corpora: list[Corpus], figures: dict[str, Any]) -> dict[str, Any]:
    t = Targets()
    for c in corpora:
        got = {k: v for k, v in figures.items() if k.startswith(f"vs_file:{c.name}:")}
        for what, sums in (("hashing", True), ("without sha256", False)):
            mine = {k: v for k, v in got.items() if (k.split(":")[2] != "nosum") == sums}
            if not mine:
                continue
            worst = min(mine, key=mine.__getitem__)
            _, _, key, threads = worst.split(":")
            t.add(
                f"{c.name}: every dataset writer ({what}) within {WITHIN:.0%} of `encode_file`'s throughput",
                f"lowest {mine[worst]:.0%} ({key}, {threads} thread{'s' if threads != '1' else ''})",
                mine[worst] >= 1 - WITHIN,
            )
    for c in corpora:
        limit = FLAT_SHARE * figures.get(f"corpus_mib:{c.name}", 0)
        parts, flat = [], True
        for key in ("file", "npy"):
            for name in ("call", "anon"):
                v = figures.get(f"{name}_slope:{c.name}:{key}")
                if v is not None:
                    parts.append(f"{key} {'RSS' if name == 'call' else 'anonymous'} {v:+.0f} MiB")
                    flat = flat and v <= limit
        if parts:
            t.add(
                f"{c.name}: peak memory independent of input size (the call's peak grows by less than "
                f"{FLAT_SHARE:.0%} of the input per 1x more: {limit:.1f} MiB)",
                ", ".join(parts),
                flat,
            )
    for c in corpora:
        ratio, left = figures.get(f"resume_ratio:{c.name}"), figures.get(f"resume_left:{c.name}")
        if ratio is not None and left is not None:
            t.add(
                f"{c.name}: a rerun after a kill at half the shards takes about half a full run (at most "
                f"the work left + {RESUME_SLACK:.0%} of a full run)",
                f"{ratio:.2f}x of a full run with {left:.0%} of the tokens left",
                ratio <= left + RESUME_SLACK,
            )
            same = bool(figures.get(f"resume_identical:{c.name}"))
            t.add(f"{c.name}: the resumed dataset is byte-identical to a full run", yes(same), same)
        elif f"resume_failed:{c.name}" in figures:
            t.add(f"{c.name}: resume after a kill", f"failed: {figures[f'resume_failed:{c.name}']}", False)
    return t.table("Targets: token datasets", "Each target against this run's figures above.")
