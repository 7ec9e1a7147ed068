"""The memory of a local Ray's processes, which the driver's own peak RSS leaves out:
every ``period`` seconds, each Ray worker's peak RSS and the sum of the RSS of every
process below this one (raylet, GCS, workers), read from ``/proc``."""

from __future__ import annotations

import os
import threading
from typing import Any

from _memory import status_kib
from _scale import SAMPLE_S


def _descendants(root: int) -> list[int]:
    """The processes below ``root``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _cmdline(pid: int) -> str | None:
    """A process's command line; None when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


class RaySampler(threading.Thread):
    """Every ``period`` seconds while it runs: each Ray worker's ``VmHWM`` (the largest
    seen per process) and the sum of the RSS of every process below this one."""

    def __init__(self, period: float = SAMPLE_S) -> None:
        super().__init__(daemon=True)
        self.period, self.done = period, threading.Event()
        self.worker_hwm: dict[int, int] = {}
        self.total_peak = 0

    def sample(self) -> None:
        total = 0
        for pid in _descendants(os.getpid()):
            cmdline, kib = _cmdline(pid), status_kib(pid, ("VmRSS", "VmHWM"))
            if cmdline is None or not kib:
                continue
            total += kib.get("VmRSS", 0)
            # Workers retitle themselves ray::IDLE, ray::count_unit...; ray::DashboardAgent
            # and ray::RuntimeEnvAgent are Ray's own.
            worker = cmdline.startswith("ray::") and not cmdline.endswith("Agent")
            if worker or "default_worker.py" in cmdline:
                self.worker_hwm[pid] = max(self.worker_hwm.get(pid, 0), kib.get("VmHWM", 0))
        self.total_peak = max(self.total_peak, total)

    def run(self) -> None:
        while not self.done.is_set():
            self.sample()
            self.done.wait(self.period)

    def stop(self) -> dict[str, Any]:
        self.done.set()
        self.join()
        self.sample()
        hwm = sorted(self.worker_hwm.values())
        return {
            "workers": len(hwm),
            "worker_peak_rss_mib": hwm[-1] / 1024 if hwm else None,
            "ray_total_rss_mib": self.total_peak / 1024,
        }
