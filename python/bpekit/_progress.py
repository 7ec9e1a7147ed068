"""A small progress bar on stderr, fed by the native code's ``(done, total)`` callbacks."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


def _fmt_bytes(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def _fmt_eta(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


class ProgressBar:
    """Draws ``desc  done/total  pct  rate  ETA`` on one line, redrawn in place.

    >>> bar = ProgressBar("counting", unit="bytes", stream=None)
    >>> bar(50, 100); bar.close()
    """

    def __init__(self, desc: str, unit: str = "items", stream: TextIO | None = sys.stderr) -> None:
        self.desc = desc
        self.unit = unit
        self.stream = stream
        self.start = time.perf_counter()
        self.done = 0
        self.total = 0
        # Redrawing in place only makes sense on a terminal; logs get the final line only.
        self.live = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if self.live:
            self._draw()

    def _draw(self, final: bool = False) -> None:
        if self.stream is None:
            return
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        rate = self.done / elapsed
        pct = 100.0 * self.done / self.total if self.total else 100.0
        if self.unit == "bytes":
            amount = f"{_fmt_bytes(self.done)} / {_fmt_bytes(self.total)}"
            speed = f"{rate / 1e6:,.1f} MB/s"
        else:
            amount = f"{self.done:,} / {self.total:,} {self.unit}"
            speed = f"{rate:,.0f} {self.unit}/s"
        eta = "" if final or rate <= 0 else f"  ETA {_fmt_eta((self.total - self.done) / rate)}"
        tail = f"  {elapsed:.2f} s" if final else eta
        line = f"{self.desc:<10} {amount}  {pct:5.1f}%  {speed}{tail}"
        self.stream.write(("\r" + line.ljust(79)) if self.live else line)
        self.stream.flush()

    def close(self, completed: bool = True) -> None:
        """Draws the final state and ends the line; after a failure (``completed=False``)
        only ends a line already drawn, so no finished-looking line precedes the error."""
        if self.stream is None:
            return
        if completed:
            self._draw(final=True)
        elif not self.live:
            return
        self.stream.write("\n")
        self.stream.flush()


@contextmanager
def progress_bar(enabled: bool, desc: str, unit: str = "bytes") -> Iterator[ProgressBar | None]:
    """A ``ProgressBar`` for a native call while the block runs (``None`` when not
    ``enabled``), closed as completed only when the block ends without an error."""
    bar = ProgressBar(desc, unit=unit) if enabled else None
    completed = False
    try:
        yield bar
        completed = True
    finally:
        if bar is not None:
            bar.close(completed)
