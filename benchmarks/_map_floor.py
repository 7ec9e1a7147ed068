"""The floor of ``datasets.map`` in ``transformers_compare.py``: a map function that
does no tokenizing, returning each document's outputs made beforehand.

The outputs are this module's global, filled before the map: a forked worker of the
map inherits them, where a closure's would be hashed and pickled, every id, each map.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

OUTPUTS: dict[str, dict[str, Any]] = {}


def fill(texts: list[str], encode: Callable[[dict[str, list[str]]], Any]) -> None:
    """Each text's outputs (one field each), made with ``encode`` on batches of 1,000."""
    OUTPUTS.clear()
    for i in range(0, len(texts), 1000):
        batch = texts[i : i + 1000]
        found = dict(encode({"text": batch}))
        for j, text in enumerate(batch):
            OUTPUTS[text] = {k: v[j] for k, v in found.items()}


def made(batch: dict[str, list[str]]) -> dict[str, list[Any]]:
    """The outputs of ``batch``'s texts, as the tokenizer gave them, by field."""
    rows = [OUTPUTS[text] for text in batch["text"]]
    return {k: [row[k] for row in rows] for k in rows[0]} if rows else {}
