"""The small readers of a ``tokenizer.json`` document that ``hf_load`` and ``hf_chars``
share: typed fields at a JSON path, and the error that names that path.

>>> _str("x", "model.type")
'x'
>>> _str(1, "model.type")
Traceback (most recent call last):
...
bpekit.formats._hf_json._Bad: model.type: expected a string, found 1
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterator
from typing import Any


class _Bad(ValueError):
    """An unsupported or invalid part of the document, at a JSON path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(path, f"expected a JSON object, found {_show(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad(path, f"expected a JSON array, found {_show(value)}")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _Bad(path, f"expected a string, found {_show(value)}")
    return value


def _bool(obj: dict[str, Any], key: str, path: str, default: bool) -> bool:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        raise _Bad(f"{path}.{key}", f"expected true or false, found {_show(value)}")
    return value


def _type(obj: dict[str, Any], path: str) -> str:
    return _str(obj.get("type"), f"{path}.type")


def _deeper_than(data: Any, limit: int, skip: frozenset[int] = frozenset()) -> bool:
    """Whether arrays and objects nest more than ``limit`` levels deep in ``data``,
    found without recursion; the contents of containers whose ``id`` is in ``skip``
    are not looked at."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in skip:
            continue
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list):
                if depth >= limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _show(value: Any) -> str:
    """``value`` as JSON for a message, cut to 60 characters; a deep one unwritten."""
    if isinstance(value, dict | list) and _deeper_than(value, 8):
        return "an array or object nested more than 8 levels deep"
    return json.dumps(value)[:60]


def _unsupported(kind: str, path: str, what: str, supported: str) -> _Bad:
    return _Bad(path, f"{what} {kind!r} is not supported (bpekit reads {supported})")


def _pattern(obj: dict[str, Any], path: str) -> tuple[str, bool]:
    """A ``{"String": s}`` or ``{"Regex": r}`` pattern: ``(text, is_literal)``."""
    pattern = _object(obj.get("pattern"), f"{path}.pattern")
    if len(pattern) == 1 and "String" in pattern:
        return _str(pattern["String"], f"{path}.pattern.String"), True
    if len(pattern) == 1 and "Regex" in pattern:
        return _str(pattern["Regex"], f"{path}.pattern.Regex"), False
    raise _Bad(f"{path}.pattern", 'expected {"String": ...} or {"Regex": ...}')


def _merge_lines(model: dict[str, Any], path: str, known: Container[str]) -> Iterator[tuple[str, str]]:
    """Each line of ``model.merges`` (``"a b"`` or ``["a", "b"]``) as ``(a, b)``, in
    file order; each part and their join must be in ``known``."""
    for k, m in enumerate(_list(model.get("merges", []), f"{path}.merges")):
        at = f"{path}.merges[{k}]"
        if isinstance(m, str):
            parts = m.split(" ")
            if len(parts) != 2:
                raise _Bad(at, f"{m!r} is not two tokens separated by one space")
        elif isinstance(m, list) and len(m) == 2 and all(isinstance(p, str) for p in m):
            parts = m
        else:
            raise _Bad(at, f'expected "a b" or ["a", "b"], found {_show(m)}')
        left, right = parts
        for part in (left, right, left + right):
            if part not in known:
                raise _Bad(at, f"{part!r} is not in the vocab")
        yield left, right
