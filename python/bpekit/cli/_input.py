"""A command's inputs: the flags of how they are read, made from the option classes of
``bpekit.options`` (each option's flag, doc, default and choices are defined there once),
and reading a text input (a file, a ``.gz`` file, or stdin) in blocks, so that memory
stays bounded whatever its size: reading whole inputs would take 1.3 GB for 50 MB of
ids, and ``/dev/zero`` or a gzip bomb would end in a ``MemoryError`` traceback.

>>> list(utf8_blocks([b"h\\xc3", b"\\xa9"], lambda offset: ValueError(offset)))
['h', 'é']
"""

from __future__ import annotations

import argparse
import codecs
import dataclasses
import itertools
import re
import sys
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

# --- flags made from option classes ----------------------------------------------------


def dest_of(flag: str) -> str:
    """The name argparse stores a flag's value under (``--text-field``: ``text_field``)."""
    return flag.lstrip("-").replace("-", "_")


def add_option_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    options: type,
    names: Sequence[str],
    notes: Mapping[str, str] | None = None,
    prefix: str = "",
) -> None:
    """Adds the flags of the fields ``names`` of ``options`` (a dataclass of
    ``bpekit.options`` or ``bpekit.dataset.options``) to ``parser``: each field's flag,
    its doc as the help (after ``prefix``, with ``notes``' words for this command after
    it, and the default where the doc does not say it), its choices, and its type (an int; a
    number of bytes, ``64M`` too, where its value is ``BYTES``). A field whose default
    is None takes a value; booleans are the command's own (their flag turns one off).

    >>> p = argparse.ArgumentParser()
    >>> from bpekit.options import ReadOptions
    >>> add_option_flags(p, ReadOptions, ["errors", "text_field"])
    >>> p.parse_args(["--errors", "replace"])
    Namespace(errors='replace', text_field='text')
    """
    fields = {f.name: f for f in dataclasses.fields(options)}
    hints = typing.get_type_hints(options)
    for name in names:
        f = fields[name]
        flag, meta = f.metadata["flag"], f.metadata
        help_text = prefix + meta["doc"] + (notes or {}).get(name, "")
        if f.default is not None and "default" not in help_text:
            help_text += f" (default {f.default})"
        typed: dict[str, Any] = {}
        if _is_int(hints[name]):
            typed["type"] = byte_size if meta.get("metavar") == "BYTES" else int
        parser.add_argument(
            flag,
            dest=dest_of(flag),
            default=f.default,
            choices=meta.get("choices"),
            metavar=meta.get("metavar"),
            help=help_text.replace("%", "%%"),  # argparse formats help texts with %
            **typed,
        )


def option_values(args: argparse.Namespace, options: type, names: Sequence[str]) -> dict[str, Any]:
    """The keywords of ``options``' fields ``names`` from the flags that
    ``add_option_flags`` added."""
    flags = {f.name: f.metadata["flag"] for f in dataclasses.fields(options)}
    return {name: getattr(args, dest_of(flags[name])) for name in names}


def _is_int(hint: Any) -> bool:
    """Whether a field is typed ``int`` or ``int | None`` (else its flag takes a str)."""
    return int in (typing.get_args(hint) or (hint,))


_SIZE = re.compile(r"(\d+)([KMG]?)(?:i?B)?", re.IGNORECASE)


def byte_size(text: str) -> int:
    """A number of bytes as a flag gives it: a whole number, or with K, M or G
    (powers of 1,024).

    >>> byte_size("65536"), byte_size("64M"), byte_size("1GiB")
    (65536, 67108864, 1073741824)
    """
    m = _SIZE.fullmatch(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(
            f"expected a number of bytes such as 65536, 64K, 256M or 1G, got {text!r}"
        )
    return int(m.group(1)) << (10 * " KMG".index(m.group(2).upper() or " "))


# --- text input in blocks ---------------------------------------------------------------

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


class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def _blocks(f: _Readable, name: str) -> Iterator[bytes]:
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
