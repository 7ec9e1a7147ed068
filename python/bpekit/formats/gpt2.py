"""GPT-2 style ``vocab.json`` + ``merges.txt``, as the CS336 fixtures and HF use them.

Token bytes are written through GPT-2's byte-to-unicode table, so every byte string
(spaces, newlines, invalid UTF-8 pieces) has a printable form without spaces:

>>> encode_token(b" hello\\n")
'ĠhelloĊ'
>>> decode_token("ĠhelloĊ")
b' hello\\n'
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from bpekit._atomic import atomic_write_all
from bpekit._paths import fspath

VERSION_LINE = "#version: 0.2"


@cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table: printable Latin-1 bytes map to themselves, the rest to U+0100 onward."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@cache
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def encode_token(token: bytes) -> str:
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


@cache
def _byte_chars() -> dict[int, str]:
    """``str.translate`` table: each GPT-2 byte character to the Latin-1 character of its
    byte; every other character up to the table's last to U+FFFE, which no byte has."""
    chars = {ord(c): chr(b) for c, b in unicode_to_bytes().items()}
    return {cp: chars.get(cp, "\ufffe") for cp in range(max(chars) + 1)}


def decode_token(text: str, *, where: str = "") -> bytes:
    # translate + Latin-1 runs in C: a character-by-character generator made loading
    # GPT-2's vocab.bpe and encoder.json (150K tokens) take 0.2 s.
    try:
        return text.translate(_byte_chars()).encode("latin-1")
    except UnicodeEncodeError:
        bad = next(c for c in text if c not in unicode_to_bytes())
        raise ValueError(f"{where}token {text!r} holds {bad!r}, not a GPT-2 byte character") from None


def vocab_merges_bytes(
    vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]]
) -> tuple[bytes, bytes]:
    """The contents of ``vocab.json`` ({token: id}) and ``merges.txt`` (``#version`` line,
    then one merge a line)."""
    seen: dict[bytes, int] = {}
    for i, tok in vocab.items():
        if tok in seen:
            first, second = sorted((seen[tok], i))
            raise ValueError(
                f"ids {first} and {second} are the same bytes {tok!r}; vocab.json maps each "
                "token to one id and cannot hold both (a special token of one byte, trained "
                'beside its byte\'s token, makes such a pair): save it with format="tiktoken" '
                "or pickle it"
            )
        seen[tok] = i
    data = {encode_token(tok): i for i, tok in sorted(vocab.items())}
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    lines = [VERSION_LINE] + [f"{encode_token(a)} {encode_token(b)}" for a, b in merges]
    return text.encode("utf-8"), ("\n".join(lines) + "\n").encode("utf-8")


def check_distinct_special_tokens(special_tokens: Sequence[str], flag: str = "special token") -> None:
    """Refuses, before any training, a special token that a vocab.json of the trained
    vocabulary could not hold: one of one byte (``"|"``), which training gives an id of
    its own beside its byte's token (CS336's semantics), where vocab.json maps each
    token's bytes to a single id. ``flag`` names the token as the caller takes it.

    >>> check_distinct_special_tokens(["<|endoftext|>", "|"], "--special-token")
    Traceback (most recent call last):
    ...
    ValueError: --special-token '|' is one byte, the bytes of byte token 124: ...
    """
    for token in special_tokens:
        data = token.encode("utf-8")
        if len(data) == 1:
            raise ValueError(
                f"{flag} {token!r} is one byte, the bytes of byte token {data[0]}: training gives "
                "it an id of its own, and vocab.json maps each token to one id, so it cannot hold "
                "both; give a special token of 2 bytes or more (say '<|sep|>'), or train with "
                'bpekit.train_bpe in Python and save with Tokenizer.save(DIR, format="tiktoken"), '
                "which hold both"
            )


def save_vocab_merges(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    vocab_path: str | os.PathLike[str],
    merges_path: str | os.PathLike[str],
) -> None:
    """Writes ``vocab.json`` ({token: id}) and ``merges.txt`` (``#version`` line, then one merge a line).

    Both files are written to temporary names and renamed only once both are written,
    so a failed save leaves neither a half file nor a new vocab beside old merges.
    """
    vocab_file = Path(fspath(vocab_path, "the vocab.json path"))
    merges_file = Path(fspath(merges_path, "the merges.txt path"))
    vocab_data, merges_data = vocab_merges_bytes(vocab, merges)
    atomic_write_all([(vocab_file, vocab_data), (merges_file, merges_data)])


def read_utf8(path: Path) -> str:
    """The text of ``path``; invalid UTF-8 is a ``ValueError`` naming the file, line and
    byte offset (Python's names neither file nor line: "'utf-8' codec can't decode
    byte 0xff in position 4")."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ValueError(
            f"{path}:{line}: invalid UTF-8 (byte 0x{data[e.start]:02x} at byte offset {e.start}); "
            f"{path.name} is UTF-8 text"
        ) from None


def json_object(path: Path, what: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """A ``json.loads`` ``object_pairs_hook`` for which a key given twice is an error
    naming ``path``: json keeps the last value silently, so a vocab.json with a token
    twice lost one of its ids.

    >>> json.loads('{"a": 0, "a": 1}', object_pairs_hook=json_object(Path("v.json"), "token"))
    Traceback (most recent call last):
    ...
    ValueError: v.json: token 'a' is given twice (0, then 1)
    """

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise ValueError(f"{path}: {what} {key!r} is given twice ({seen[key]!r}, then {value!r})")
            seen[key] = value
        raise AssertionError("unreachable")

    return hook


def parse_json(path: Path, text: str, what: str, shape: str) -> Any:
    """``json.loads`` of the text of ``path``, a ``what`` file (keys given twice are an
    error: ``json_object``). Errors name the file: text that is not JSON, and JSON
    nested too deeply, where Python's parser raises ``RecursionError`` (a traceback from
    the command line) at ~1,000 levels; ``shape`` says what the file holds instead.

    >>> parse_json(Path("tok/vocab.json"), "[" * 5000 + "]" * 5000, "token", "one object of token -> id")
    Traceback (most recent call last):
    ...
    ValueError: tok/vocab.json: JSON nested too deeply to read; a vocab.json is one object of token -> id
    """
    try:
        return json.loads(text, object_pairs_hook=json_object(path, what))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON: {e}") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply to read; a {path.name} is {shape}") from None


def load_vocab(vocab_path: str | os.PathLike[str]) -> dict[int, bytes]:
    """Reads ``vocab.json`` into {id: bytes}; a token given twice is an error."""
    path = Path(vocab_path)
    data = parse_json(path, read_utf8(path), "token", "one object of token -> id")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of token -> id")
    vocab: dict[int, bytes] = {}
    for tok, i in data.items():
        if not isinstance(i, int) or isinstance(i, bool):
            raise ValueError(f"{path}: id of token {tok!r} is {i!r}, not an integer")
        if not 0 <= i < 1 << 32:
            raise ValueError(f"{path}: id of token {tok!r} is {i}, outside 0..2**32-1")
        if i in vocab:
            raise ValueError(f"{path}: id {i} is given to two tokens")
        vocab[i] = decode_token(tok, where=f"{path}: ")
    return vocab


def load_merges(merges_path: str | os.PathLike[str]) -> list[tuple[bytes, bytes]]:
    """Reads ``merges.txt``, with or without a ``#version`` line."""
    path = Path(merges_path)
    merges: list[tuple[bytes, bytes]] = []
    # Lines as a file opened in text mode gives them (\r\n and \r end lines too).
    with io.StringIO(read_utf8(path), newline=None) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line or (lineno == 1 and line.startswith("#version")):
                continue
            parts = line.split(" ")
            if len(parts) != 2:
                raise ValueError(f"{path}:{lineno}: expected two tokens separated by one space, got {line!r}")
            where = f"{path}:{lineno}: "
            merges.append((decode_token(parts[0], where=where), decode_token(parts[1], where=where)))
    return merges


def load_vocab_merges(
    vocab_path: str | os.PathLike[str], merges_path: str | os.PathLike[str]
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    return load_vocab(vocab_path), load_merges(merges_path)
