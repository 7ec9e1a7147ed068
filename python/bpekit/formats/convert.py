"""Save a tokenizer in another format: what ``Tokenizer.save(directory, format=...)`` and
``bpekit convert`` write.

- ``"gpt2"``: ``vocab.json`` + ``merges.txt`` + ``bpekit.json`` (``formats.folder``);
- ``"hf"``: ``tokenizer.json`` + ``tokenizer_config.json`` + ``special_tokens_map.json``
  for ``transformers`` (``formats.hf``);
- ``"tiktoken"``: ``<name>.tiktoken`` (the ranks) + ``<name>.json``, the other arguments
  of ``tiktoken.Encoding``::

      args = json.load(open("o200k.json"))
      enc = tiktoken.Encoding(**args, mergeable_ranks=load_tiktoken_bpe("o200k.tiktoken"))

A format that cannot hold what a tokenizer does is an error saying what, never a file
that encodes differently: a ``tokenizer.json``'s normalizer, added-token flags, prefix
space, chain of pre-tokenizers or ``ignore_merges`` fit only ``"hf"``, and merges fit
``"tiktoken"`` only where ranks recover exactly them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from bpekit import _core
from bpekit._atomic import atomic_write_all
from bpekit._paths import fspath
from bpekit.formats.folder import save_folder
from bpekit.formats.hf import save_hf_folder
from bpekit.formats.hf_chars import is_char_model
from bpekit.formats.parts import HfExtras, HoldsEncoder
from bpekit.formats.tiktoken import tiktoken_bytes

__all__ = ["FORMATS", "save_as"]

Format = Literal["gpt2", "hf", "tiktoken"]
FORMATS: tuple[str, ...] = ("gpt2", "hf", "tiktoken")


def save_as(tokenizer: HoldsEncoder, directory: str | os.PathLike[str], format: str) -> list[Path]:
    """Writes ``tokenizer`` into ``directory`` in ``format``; returns the files written."""
    d = Path(fspath(directory, "the folder to save into"))
    if format == "hf":
        save_hf_folder(tokenizer, d)
        return [d / "tokenizer.json", d / "tokenizer_config.json", d / "special_tokens_map.json"]
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; the formats are {', '.join(FORMATS)}")
    core = tokenizer._core
    _check_plain(core, tokenizer._hf, format)
    if format == "gpt2":
        specials = [t for t, _ in core.special_tokens()]
        save_folder(d, core.vocab(), core.merges(), specials, core.pattern, tokenizer.name)
        return [d / "vocab.json", d / "merges.txt", d / "bpekit.json"]
    return _save_tiktoken(core, tokenizer.name, d)


def _check_plain(core: _core.Encoder, hf: HfExtras | None, format: str) -> None:
    """Refuses a ``tokenizer.json`` tokenizer that ``format`` cannot hold."""
    if hf is None:
        return
    data = hf.data
    flags = ("lstrip", "rstrip", "single_word")
    why = None
    if core.pattern.startswith("metaspace: ") or is_char_model(data):
        why = "SentencePiece-style BPE (its tokens are characters)"
    elif data.get("normalizer") is not None:
        why = f"normalizer ({data['normalizer'].get('type')})"
    elif any(t.get(k) for t in data.get("added_tokens", []) for k in flags):
        why = "added tokens with lstrip, rstrip or single_word"
    elif core.pattern.startswith("pipeline: "):
        why = "chain of pre-tokenizers"
    elif _prefix_space(data):
        why = "ByteLevel add_prefix_space"
    elif data["model"].get("ignore_merges") and format == "gpt2":
        why = "ignore_merges (a piece that is a token is that token)"
    elif hf.prefix or hf.suffix:
        why = "post-processor's added tokens"
    if why is not None:
        raise ValueError(f"the {format} format cannot hold this tokenizer's {why}; save it with format='hf'")


def _prefix_space(data: dict[str, Any]) -> bool:
    def walk(node: object) -> bool:
        if not isinstance(node, dict):
            return False
        if node.get("type") == "Sequence":
            return any(walk(n) for n in node.get("pretokenizers", []))
        return node.get("type") == "ByteLevel" and bool(node.get("add_prefix_space", True))

    return walk(data.get("pre_tokenizer"))


def _save_tiktoken(core: _core.Encoder, name: str, d: Path) -> list[Path]:
    """``<name>.tiktoken`` and ``<name>.json``; refused where tiktoken's rule (merge the
    adjacent parts whose joined bytes rank lowest, ranks being ids) would not give this
    tokenizer's merges."""
    specials = dict(core.special_tokens())
    special_ids = set(specials.values())
    ranks = {b: i for i, b in core.vocab().items() if i not in special_ids}
    if not core.is_ranks:
        as_ranks = _core.Encoder.from_ranks(list(ranks.items()), [], "gpt2")
        if as_ranks.merges() != core.merges():
            raise ValueError(
                "the tiktoken format cannot hold this tokenizer: its ids are not ranks that "
                "give its merges back (tiktoken merges by the rank of the joined bytes)"
            )
    name = name or "custom"
    args = {
        "name": name,
        "pat_str": core.pattern,
        "special_tokens": specials,
    }
    files = [d / f"{name}.tiktoken", d / f"{name}.json"]
    d.mkdir(parents=True, exist_ok=True)
    atomic_write_all(
        [
            (files[0], tiktoken_bytes(ranks)),
            (files[1], json.dumps(args, indent=2, ensure_ascii=False).encode("utf-8")),
        ]
    )
    return files
