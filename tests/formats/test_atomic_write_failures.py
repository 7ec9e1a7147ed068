"""Saving when something goes wrong part way: a full disk is an error naming the file
being saved and leaves no partial file, and a signal never splits a set of renames (a
new vocab.json beside an old merges.txt)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

BYTE_VOCAB = {i: bytes([i]) for i in range(256)}


def test_a_set_of_renames_is_not_split_by_a_signal(tmp_path: Path) -> None:
    # vocab.json, merges.txt and bpekit.json are renamed one after another; Ctrl-C
    # between two renames would leave a new vocab beside old merges, so it waits.
    import signal

    from bpekit._atomic import _signals_deferred

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        done = []
        with pytest.raises(KeyboardInterrupt):
            with _signals_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                done.append(1)
        assert done == [1]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_full_disk_names_the_file_being_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import bpekit._atomic as atomic

    class Full:
        def __init__(self, fd: int, mode: str) -> None:
            os.close(fd)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fdopen", Full)  # type: ignore[attr-defined]
    target = tmp_path / "tok" / "vocab.json"
    with pytest.raises(OSError, match="No space left on device") as info:
        atomic.atomic_write_all([(target, b"{}")])
    assert info.value.filename == str(target) and info.value.errno == errno.ENOSPC
    assert list((tmp_path / "tok").iterdir()) == []


def test_disk_full_while_saving_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ENOSPC, simulated: the bare "[Errno 28] No space left on device" names no path,
    # so the error carries the file's.
    import errno

    import bpekit._atomic

    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fd: int, mode: str) -> None:
            self.file = real_fdopen(fd, mode)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(bpekit._atomic.os, "fdopen", Full)  # type: ignore[attr-defined]
    folder = tmp_path / "tok"
    with pytest.raises(OSError) as caught:
        bpekit.Tokenizer(BYTE_VOCAB, []).save(folder)
    monkeypatch.undo()
    assert caught.value.errno == errno.ENOSPC
    assert list(folder.iterdir()) == []  # nothing half-written
    assert caught.value.filename == str(folder / "vocab.json"), caught.value
    assert str(folder / "vocab.json") in str(caught.value)
