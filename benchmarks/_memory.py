"""Memory figures shared by the benchmark scripts: a process's ``/proc`` status, the peak
of anonymous memory sampled during a call, a call's own peak RSS, and how those grow
with the input.

A call's own peak RSS is the process's peak (``VmHWM``) after the call less its RSS
before, the peak reset through ``/proc/self/clear_refs`` just before the call; pages of
mapped files count in it. The anonymous memory (heap, no file pages) is sampled every
2 ms, since the kernel keeps no peak of it.
"""

from __future__ import annotations

import gc
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from _common import slope

T = TypeVar("T")
Row = dict[str, Any]


STATUS_KEYS = ("VmHWM", "VmRSS", "RssAnon")


def status_kib(pid: int | str = "self", keys: Sequence[str] = STATUS_KEYS) -> dict[str, int]:
    """The ``keys`` of ``/proc/PID/status`` that it has, in KiB; empty when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
    except OSError:
        return {}
    return {k: int(m.group(1)) for k in keys if (m := re.search(rf"^{k}:\s+(\d+) kB", status, re.M))}


def status_mib() -> dict[str, float]:
    """This process's peak RSS, RSS and anonymous RSS (``status_kib``), in MiB."""
    return {k: v / 1024 for k, v in status_kib().items()}


class AnonSampler(threading.Thread):
    """The largest anonymous RSS (heap, not the pages of mapped files) seen every
    ``period`` seconds while it runs. bpekit's calls release the GIL, so it samples
    during the call."""

    def __init__(self, period: float = 0.002) -> None:
        super().__init__(daemon=True)
        self.period, self.peak, self.done = period, 0.0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, status_mib()["RssAnon"])
            self.done.wait(self.period)

    def stop(self) -> float:
        self.done.set()
        self.join()
        return max(self.peak, status_mib()["RssAnon"])


def measure_call(call: Callable[[], T]) -> tuple[T, dict[str, Any]]:
    """``call()`` in this (fresh) process, and its memory: the process's peak RSS, the RSS
    before the call, the call's own peak RSS above that (the peak reset through
    /proc/self/clear_refs just before it; None where that cannot be done) and its peak
    anonymous RSS above the anonymous RSS before it (sampled every 2 ms)."""
    gc.collect()
    setup = status_mib()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        reset = True
    except OSError:
        reset = False
    sampler = AnonSampler()
    sampler.start()
    t = time.perf_counter()
    out = call()
    seconds = time.perf_counter() - t
    anon = sampler.stop()
    after = status_mib()
    return out, {
        "seconds": seconds,
        "rss_before_mib": setup["VmRSS"],
        "peak_rss_mib": max(setup["VmHWM"], after["VmHWM"]),
        "call_peak_mib": after["VmHWM"] - setup["VmRSS"] if reset else None,
        "call_anon_mib": anon - setup["RssAnon"],
    }


def memory_series(
    label: str, copies: Sequence[int], run: Callable[[int], dict[str, Any] | None]
) -> dict[int, dict[str, Any]] | None:
    """``run(n)`` (``measure_call``'s figures in a fresh process, the input ``n`` times
    over) for each ``n`` of ``copies``, each printed as it comes; None when one failed."""
    found = {}
    for n in copies:
        r = run(n)
        if r is None:
            return None
        found[n] = r
        call = "-" if r["call_peak_mib"] is None else f"{r['call_peak_mib']:.0f}"
        print(
            f"  memory {label} {n}x: before {r['rss_before_mib']:.0f} MiB, peak {r['peak_rss_mib']:.0f} "
            f"MiB, call {call} MiB, anonymous {r['call_anon_mib']:.0f} MiB ({r['seconds']:.1f} s)",
            flush=True,
        )
    return found


def growth(series: dict[int, dict[str, Any]], copies: Sequence[int], by_size: bool = False) -> Row:
    """The call's peak RSS (``call``) and anonymous memory (``anon``) at each size as text
    (``call_text``: "10 / 11 / 12 MiB") and how much each grows per 1x more input
    (``call_slope``: a least-squares slope, MiB); ``by_size``: the figures by size too
    (``call``: ``{"1": 10.0, ...}``). A figure missing at one size is left out."""
    row: Row = {}
    for name, field in (("call", "call_peak_mib"), ("anon", "call_anon_mib")):
        values = [series[n][field] for n in copies]
        if any(v is None for v in values):
            continue
        if by_size:
            row[name] = dict(zip(map(str, copies), values, strict=True))
        row[f"{name}_text"] = " / ".join(f"{v:,.0f}" for v in values) + " MiB"
        row[f"{name}_slope"] = slope(copies, values)
    return row


def growth_columns(copies: Sequence[int]) -> list[tuple[str, str, str]]:
    """The columns of ``growth``'s figures, for ``_common.columns``."""
    sizes = " / ".join(f"{n}x" for n in copies)
    return [
        ("call_text", f"call, {sizes}", "text"),
        ("call_slope", "per 1x more", "signed_mib"),
        ("anon_text", f"anonymous, {sizes}", "text"),
        ("anon_slope", "per 1x more", "signed_mib"),
    ]
