"""Reading a command's text input (a file, a ``.gz`` file, or stdin) in blocks, so that
memory stays bounded whatever its size: reading whole inputs would take 1.3 GB for 50 MB
of ids, and ``/dev/zero`` or a gzip bomb would end in a ``MemoryError`` traceback.

>>> list(utf8_blocks([b"h\\xc3", b"\\xa9"], lambda offset: ValueError(offset)))
['h', 'é']
"""

from __future__ import annotations

import codecs
import itertools
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

# Bytes read at a time: large enough that per-block overhead is lost in the work,
# small enough that a block and what is made of it stay a few MB.
BLOCK_BYTES = 1 << 20


def input_name(path: Path | None) -> str:
    """How messages name the input: its path, or ``stdin`` (no path, or ``-``)."""
    return "stdin" if path is None or str(path) == "-" else str(path)


def byte_blocks(path: Path | None) -> Iterator[bytes]:
    """The bytes of ``path`` (stdin for ``None`` or ``-``), a block at a time; a ``.gz``
    file's decompressed. A corrupt ``.gz`` is a ``ValueError`` naming the file, at the
    block where it shows."""
    name = input_name(path)
    if name == "stdin":
        yield from _blocks(sys.stdin.buffer, name)
        return
    assert path is not None
    with open(path, "rb") as f:
        if path.suffix != ".gz":
            yield from _blocks(f, name)
            return
        import gzip

        with gzip.GzipFile(fileobj=f, mode="rb") as gz:
            yield from _blocks(gz, name)


def _blocks(f: BinaryIO, name: str) -> Iterator[bytes]:
    import zlib
    from gzip import BadGzipFile

    while True:
        try:
            block = f.read(BLOCK_BYTES)
        # Not gzip at all, cut short, or damaged: gzip's messages do not name the
        # file, and the last two are not errors that main() reports in one line.
        except (BadGzipFile, EOFError, zlib.error) as e:
            raise ValueError(f"{name}: not a valid .gz file ({e})") from None
        if not block:
            return
        yield block


def utf8_blocks(
    blocks: Iterable[bytes], error: Callable[[int], Exception], errors: str = "strict"
) -> Iterator[str]:
    """The text of ``blocks`` decoded as one UTF-8 stream (a character split between
    two blocks is joined again). Under ``errors="strict"``, invalid UTF-8 raises
    ``error(offset)``, the offset counted from the start of the whole stream."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors=errors)
    offset = 0  # bytes in the blocks before this one
    for block in itertools.chain(blocks, [b""]):  # b"": the end, where a cut character fails
        held = len(decoder.getstate()[0])  # the start of a character from the last block
        try:
            text = decoder.decode(block, final=not block)
        except UnicodeDecodeError as e:
            raise error(offset - held + e.start) from None
        offset += len(block)
        if text:
            yield text


def text_blocks(
    path: Path | None, error: Callable[[int], Exception], errors: str = "strict"
) -> Iterator[str]:
    """The text of ``path`` (stdin for ``None`` or ``-``) in blocks: see ``byte_blocks``
    and ``utf8_blocks``. A stdin that is a text stream with no bytes under it (a
    test's ``StringIO``) is read as text."""
    if input_name(path) == "stdin" and getattr(sys.stdin, "buffer", None) is None:
        while text := sys.stdin.read(BLOCK_BYTES):
            yield text
        return
    yield from utf8_blocks(byte_blocks(path), error, errors)
