"""Writing files so that an interrupted run never leaves a half-written output."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def atomic_write(path: Path, data: bytes) -> None:
    """Writes ``data`` to a temporary file beside ``path``, then renames it over ``path``."""
    atomic_write_all([(path, data)])


def atomic_write_all(files: Sequence[tuple[Path, bytes]]) -> None:
    """Writes each ``(path, data)`` to a temporary file beside its path, and renames them
    into place only once all are written: a failure while writing leaves the old files
    as they were (only a failing rename, after all are written, could leave some new).

    The files get the mode a plain ``open(path, "w")`` would give them (the existing
    file's, or 0o666 less the umask), not ``mkstemp``'s 0o600, so others who could read
    the old files can read the new ones. Missing folders are made.
    """
    for path, _ in files:
        _check_target(path)
    written: list[tuple[str, Path]] = []
    try:
        for path, data in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            # mkstemp: O_CREAT | O_EXCL under a random name, so no planted link is
            # followed; the mode is set through the handle, not by name again.
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            written.append((tmp, path))
            try:
                os.fchmod(fd, _mode_for(path))
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            except OSError as e:
                # "[Errno 28] No space left on device" names no file: name the output.
                raise OSError(e.errno, e.strerror or str(e), str(path)) from None
        with _signals_deferred():
            for tmp, path in written:
                os.replace(tmp, path)
    except BaseException:
        for tmp, _ in written:
            Path(tmp).unlink(missing_ok=True)
        raise


_DEFERRED = ("SIGINT", "SIGTERM", "SIGHUP")


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Holds Ctrl-C, SIGTERM and SIGHUP back until the block ends, so that a set of
    renames happens whole (an interrupt between two left a new vocab.json beside
    old merges). The signal's own handler runs right after. Only the main thread
    can change handlers; elsewhere signals reach the main thread anyway."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[tuple[int, Any]] = []
    saved: dict[int, Any] = {}
    for name in _DEFERRED:
        num = getattr(signal, name, None)
        if num is None:
            continue
        handler = signal.getsignal(num)
        if not callable(handler):
            continue  # SIG_IGN or SIG_DFL: nothing Python would run between renames
        saved[num] = handler
        signal.signal(num, lambda n, frame: caught.append((n, frame)))
    try:
        yield
    finally:
        for num, handler in saved.items():
            signal.signal(num, handler)
        for num, frame in caught[:1]:
            saved[num](num, frame)


def _check_target(path: Path) -> None:
    if not str(path) or path.name in ("", ".", ".."):
        raise ValueError(f"{str(path)!r} is not a file name to write to")
    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a folder; give the path of the file to write")


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    # /proc avoids os.umask's set-and-restore, which other threads could observe.
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
