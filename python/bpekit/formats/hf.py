"""Export a tokenizer as a HuggingFace ``tokenizer.json`` that the ``tokenizers``
package loads and that encodes identically.

The pipeline written: pre-tokenizer ``Sequence[Split(pattern, isolated), ByteLevel(no
regex)]`` (the tokenizer's own regex, then GPT-2's byte-to-unicode mapping), a ``BPE``
model with the vocabulary and merges in rank order (``ignore_merges`` for tiktoken
encodings, which look a whole piece up first), the special tokens as added tokens
(matched longest first, as bpekit does; in the model's vocab under their own text), and
a ``ByteLevel`` decoder.

Ids are identical to bpekit's. One difference is HF's own: its decoder reads the text of
a special token as byte-level characters too, so ``decode`` garbles a special token that
holds characters of that alphabet (Latin-1 letters such as "é"); spaces, CJK, emoji and
ASCII come out as they are.

>>> import bpekit, json
>>> tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], ["<|e|>"])
>>> data = to_hf_json(tok)
>>> data["model"]["merges"][:1], data["added_tokens"][0]["content"]
([['a', 'b']], '<|e|>')
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from bpekit import _core
from bpekit._atomic import atomic_write, atomic_write_all
from bpekit._paths import fspath
from bpekit.formats.gpt2 import encode_token
from bpekit.formats.parts import HoldsEncoder

__all__ = ["hf_document", "hf_pattern", "save_hf", "save_hf_folder", "special_token_roles", "to_hf_json"]


def hf_pattern(pattern: str) -> str:
    r"""``pattern`` in the Oniguruma dialect HF uses. Onig reads ``{1,3}+`` not as a
    possessive interval but as ``({1,3})+``, so cl100k's ``\p{N}{1,3}+`` would take any
    run of digits; as the last item of its alternative, the plain greedy ``{1,3}``
    matches exactly what the possessive one does.

    >>> hf_pattern(r"\p{N}{1,3}+|a")
    '\\p{N}{1,3}|a'
    """
    return re.sub(r"(\{\d+(?:,\d*)?\})\+", r"\1", pattern)


def to_hf_json(tokenizer: HoldsEncoder) -> dict[str, Any]:
    """The ``tokenizer.json`` document of ``tokenizer``, as a dict."""
    return hf_document(tokenizer._core)


def hf_document(core: _core.Encoder) -> dict[str, Any]:
    """The ``tokenizer.json`` document of a core encoder, as a dict."""
    specials = dict(core.special_tokens())
    vocab: dict[str, int] = {}
    for i, b in sorted(core.vocab().items()):
        vocab.setdefault(encode_token(b), i)
    pairs = core.merges()
    merges = [[encode_token(a), encode_token(b)] for a, b in pairs]
    _name_special_tokens(vocab, specials, pairs)
    added = [
        {
            "id": i,
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for t, i in sorted(specials.items(), key=lambda kv: kv[1])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": hf_pattern(core.pattern)},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": bool(core.is_ranks),
            "vocab": vocab,
            "merges": merges,
        },
    }


def _name_special_tokens(
    vocab: dict[str, int], specials: dict[str, int], pairs: list[tuple[bytes, bytes]]
) -> None:
    """Puts each special token in the model's vocab under its own text.

    HF gives an added token the id the model's vocab has for its text, and a fresh id
    when there is none; the vocab holds tokens in byte-level form, where a space is
    "Ġ" and "é" two other characters. So a special token with a space or non-ASCII
    text would get a fresh id. A token that only the special token names (not
    a byte, not made or used by a merge) keeps just its text, so the vocab's size stays
    the tokenizer's.
    """
    made_or_used = {a + b for a, b in pairs} | {p for pair in pairs for p in pair}
    for text, i in sorted(specials.items(), key=lambda kv: kv[1]):
        raw = text.encode("utf-8")
        mapped = encode_token(raw)
        if mapped != text and vocab.get(mapped) == i and len(raw) > 1 and raw not in made_or_used:
            del vocab[mapped]
        if vocab.setdefault(text, i) != i:
            raise ValueError(
                f"special token {text!r} (id {i}) cannot be written to a tokenizer.json: "
                f"HF would read it as the ordinary token {vocab[text]}, whose byte-level "
                "text is the same"
            )


def _document(tokenizer: HoldsEncoder) -> dict[str, Any]:
    """The tokenizer.json of ``tokenizer``: the document it was read from, if it was."""
    hf = tokenizer._hf
    return hf.data if hf is not None else hf_document(tokenizer._core)


def save_hf(tokenizer: HoldsEncoder, path: str | os.PathLike[str]) -> None:
    """Writes ``tokenizer.json`` to ``path`` (atomically)."""
    out = Path(fspath(path, "the tokenizer.json path"))
    text = json.dumps(_document(tokenizer), ensure_ascii=False)
    atomic_write(out, text.encode("utf-8"))


# Special tokens by role, for transformers' bos/eos/pad: the names models use.
_ROLES = {
    "bos_token": ("<|begin_of_text|>", "<|startoftext|>", "<s>", "<|bos|>"),
    "eos_token": ("<|endoftext|>", "<|end_of_text|>", "</s>", "<|eos|>", "<|im_end|>"),
    "pad_token": ("<|padding|>", "<|pad|>", "<pad>", "[PAD]"),
    "unk_token": ("<unk>", "<|unk|>"),
}


def special_token_roles(tokenizer: HoldsEncoder) -> dict[str, str]:
    """transformers' ``bos_token``/``eos_token``/``pad_token``/``unk_token`` of
    ``tokenizer``, where its special tokens name them; a BOS its post-processor adds
    is the ``bos_token``.

    >>> import bpekit
    >>> special_token_roles(bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"]))
    {'eos_token': '<|endoftext|>'}
    """
    specials = dict(tokenizer._core.special_tokens())
    roles: dict[str, str] = {}
    hf = tokenizer._hf
    if hf is not None and hf.prefix:
        by_id = {i: t for t, i in specials.items()}
        if hf.prefix[0] in by_id:
            roles["bos_token"] = by_id[hf.prefix[0]]
    for role, names in _ROLES.items():
        if role not in roles:
            found = next((n for n in names if n in specials), None)
            if found is not None:
                roles[role] = found
    return roles


def save_hf_folder(tokenizer: HoldsEncoder, directory: str | os.PathLike[str]) -> None:
    """Writes ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``
    into ``directory``: ``transformers.AutoTokenizer.from_pretrained(directory)`` loads a
    ``PreTrainedTokenizerFast`` that gives this tokenizer's ids and decode (spaces before
    punctuation kept: ``clean_up_tokenization_spaces`` is off)."""
    d = Path(fspath(directory, "the folder to save into"))
    if d.exists() and not d.is_dir():
        raise NotADirectoryError(f"{d}: not a folder; a tokenizer for transformers is saved as files in one")
    d.mkdir(parents=True, exist_ok=True)
    document = _document(tokenizer)
    roles = special_token_roles(tokenizer)
    special_ids = {t["id"]: t for t in document.get("added_tokens", [])}
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1 << 60,
        "added_tokens_decoder": {
            str(i): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
            for i, t in sorted(special_ids.items())
        },
        **roles,
    }
    atomic_write_all(
        [
            (d / "tokenizer.json", json.dumps(document, ensure_ascii=False).encode("utf-8")),
            (d / "tokenizer_config.json", json.dumps(config, indent=2, ensure_ascii=False).encode("utf-8")),
            (d / "special_tokens_map.json", json.dumps(roles, indent=2, ensure_ascii=False).encode("utf-8")),
        ]
    )
