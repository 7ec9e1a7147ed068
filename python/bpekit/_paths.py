"""Paths given to bpekit, checked the same way by the API and the command line.

An empty path is an error: ``Path("")`` is ``Path(".")``, so ``train_bpe("")`` would
read the whole current folder, recursively, and ``--out ""`` write into it. Paths as
bytes are taken, as ``open`` takes them.

>>> fspath(b"corpus.txt", "an input")
'corpus.txt'
>>> fspath("", "an input")
Traceback (most recent call last):
...
ValueError: empty path given as an input; name a file or folder ('.' is the current folder)
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]


def fspath(path: PathArg, what: str) -> str:
    """``path`` as a ``str`` (bytes decoded as ``os.fsdecode`` decodes them). ``what``
    names it in errors: ``"an input"``, ``"the output folder"``."""
    if not isinstance(path, str | bytes | os.PathLike):
        raise TypeError(
            f"{what} must be a path (str, bytes or os.PathLike), not {type(path).__name__}: {path!r}"
        )
    text = os.fsdecode(path)
    if not text:
        raise ValueError(f"empty path given as {what}; name a file or folder ('.' is the current folder)")
    return text


def path_arg(text: str) -> Path:
    """An argparse ``type`` for a path argument: ``type=Path`` turns ``""`` into ``.``,
    the current folder, before any check can see it.

    >>> str(path_arg("out"))
    'out'
    """
    if not text:
        import argparse  # lazily: `import bpekit` needs this module, not argparse

        raise argparse.ArgumentTypeError("empty path; name a file or folder ('.' is the current folder)")
    return Path(text)


def read_regular(path: Path) -> bytes:
    """The bytes of the regular file at ``path``, not through a link: for a record of
    bpekit's own in a folder others may write to, where a FIFO (which would block the
    read for ever), a device or a link planted under its name is an ``OSError``, as a
    missing file is."""
    import stat

    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        return f.read()


def crc32_of(path: Path) -> int:
    """The CRC-32 of the file at ``path`` (``zlib.crc32``), read 4 MiB at a time."""
    import zlib

    crc = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            crc = zlib.crc32(block, crc)
    return crc


def sha256_of(path: Path) -> str:
    """The hex sha256 of the file at ``path``, read 4 MiB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()
