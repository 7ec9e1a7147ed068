"""Writing files so that an interrupted run never leaves a half-written output."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path


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
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            written.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, _mode_for(path))
        for tmp, path in written:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in written:
            Path(tmp).unlink(missing_ok=True)
        raise


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
