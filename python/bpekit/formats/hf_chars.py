"""SentencePiece-style BPE in a ``tokenizer.json`` (Llama 2, Mistral, Gemma and the
files transformers' converter makes of a SentencePiece ``.model``): the parts that
differ from byte-level BPE, read for ``hf_load``.

- the ``BPE`` model works on characters: its vocab and merges are texts (``"▁the"``),
  a character without a token becomes the ``<0xNN>`` tokens of its UTF-8 bytes
  (``byte_fallback``), else ``unk_token`` (runs of them one token with ``fuse_unk``);
- the words: the ``Metaspace`` pre-tokenizer (spaces to ``▁``, a ``▁`` before a text by
  ``prepend_scheme``, ``split`` before each ``▁``), or none, where the normalizer puts
  the ``▁`` (``Replace(" ", "▁")``, ``Prepend("▁")``) and the whole text is the model's
  word; or ``Split``/``Digits`` steps;
- the decoders ``Replace``, ``ByteFallback``, ``Fuse``, ``Strip`` and ``Metaspace``, in a
  ``Sequence``.

>>> words, _ = char_words({"type": "Metaspace", "replacement": "▁", "split": False}, [], "pre_tokenizer")
>>> words
('▁', False, 'always')
>>> char_decoder({"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}, "decoder")
[('byte_fallback', '', '', 0, 0), ('fuse', '', '', 0, 0)]
"""

from __future__ import annotations

from typing import Any

from bpekit.formats._hf_json import (
    _Bad,
    _bool,
    _list,
    _merge_lines,
    _object,
    _pattern,
    _show,
    _str,
    _type,
    _unsupported,
)

__all__ = ["CharModel", "char_decoder", "char_model", "char_words", "is_char_model"]

#: The model's first fields, for ``Encoder.from_hf``'s ``chars``: byte_fallback, the
#: unknown token's id, fuse_unk.
CharModel = tuple[bool, int | None, bool]

_SCHEMES = ("always", "first", "never")
#: The core's id of no token (an unknown token the vocab lacks).
_NO_ID = (1 << 32) - 1
_DECODERS = "Replace, ByteFallback, Fuse, Strip, Metaspace and Sequence"


def is_char_model(data: dict[str, Any]) -> bool:
    """Whether a document's BPE is SentencePiece-style: it has no ``ByteLevel``
    pre-tokenizer (a byte-level BPE ends its pre-tokenizers with one)."""
    return not _mentions_byte_level(data.get("pre_tokenizer"))


def _mentions_byte_level(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return False
    if spec.get("type") == "ByteLevel":
        return True
    inner = spec.get("pretokenizers")
    return isinstance(inner, list) and any(_mentions_byte_level(x) for x in inner)


def char_model(
    model: dict[str, Any], path: str
) -> tuple[dict[str, int], list[tuple[bytes, bytes]], bool, CharModel]:
    """The vocab (text -> id), the merges as UTF-8, ``ignore_merges``, and the rest."""
    dropout = model.get("dropout")
    if dropout not in (None, 0, 0.0):
        raise _Bad(f"{path}.dropout", f"{dropout} is not supported (BPE dropout is random); set it to null")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key) not in (None, ""):
            raise _Bad(f"{path}.{key}", f"{model[key]!r} is not supported")
    vocab = _object(model.get("vocab"), f"{path}.vocab")
    texts: dict[int, str] = {}
    for text, i in vocab.items():
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 1 << 32:
            raise _Bad(f"{path}.vocab[{text!r}]", f"id {_show(i)} is not an integer in 0..2**32-1")
        if i in texts:
            raise _Bad(f"{path}.vocab[{text!r}]", f"id {i} is also the id of {texts[i]!r}")
        texts[i] = text
    # tokenizers ranks a pair by its last line (a later line overwrites an earlier one).
    by_last_line: dict[tuple[str, str], None] = {}
    for left, right in _merge_lines(model, path, vocab):
        by_last_line.pop((left, right), None)
        by_last_line[(left, right)] = None
    merges = [(a.encode("utf-8"), b.encode("utf-8")) for a, b in by_last_line]
    unk_token = model.get("unk_token")
    unk: int | None = None
    if unk_token is not None:
        unk_token = _str(unk_token, f"{path}.unk_token")
        # Missing, it is an error only where a character needs it, as in tokenizers.
        unk = vocab.get(unk_token, _NO_ID)
    rest = (_bool(model, "byte_fallback", path, False), unk, _bool(model, "fuse_unk", path, False))
    return vocab, merges, _bool(model, "ignore_merges", path, False), rest


def char_words(
    spec: Any, normalizers: list[tuple[str, str, bool, str]], path: str
) -> tuple[tuple[str | None, bool, str | None], list[dict[str, Any]]]:
    """``(replacement, split, prepend scheme)`` of the words, and the ``Split`` and
    ``Digits`` steps left for the pipeline. The scheme is ``None`` where no ``Metaspace``
    changes the text; the replacement is then the one character a normalizer puts for a
    space, if any, which cuts the text (for speed, where the merges allow)."""
    flat: list[tuple[dict[str, Any], str]] = []

    def walk(node: Any, at: str) -> None:
        node = _object(node, at)
        if _type(node, at) == "Sequence":
            for k, inner in enumerate(_list(node.get("pretokenizers"), f"{at}.pretokenizers")):
                walk(inner, f"{at}.pretokenizers[{k}]")
        else:
            flat.append((node, at))

    if spec is not None:
        walk(spec, path)
    meta = [(node, at) for node, at in flat if _type(node, at) == "Metaspace"]
    if meta:
        node, at = meta[0]
        if len(flat) > 1:
            raise _Bad(at, "Metaspace with other pre-tokenizers is not supported (bpekit reads it alone)")
        rep = _str(node.get("replacement"), f"{at}.replacement")
        if len(rep) != 1:
            raise _Bad(f"{at}.replacement", f"{rep!r} is not one character")
        scheme = _str(node.get("prepend_scheme", "always"), f"{at}.prepend_scheme")
        if scheme not in _SCHEMES:
            raise _Bad(f"{at}.prepend_scheme", f"{scheme!r} is not one of {', '.join(_SCHEMES)}")
        if node.get("add_prefix_space") is False and scheme != "never":
            mismatch = "false does not match the prepend_scheme (tokenizers refuses it)"
            raise _Bad(f"{at}.add_prefix_space", mismatch)
        return (rep, _bool(node, "split", at, True), scheme), []
    steps: list[dict[str, Any]] = []
    for node, at in flat:
        kind = _type(node, at)
        if kind == "Split" and _splits_nothing(node, at, normalizers):
            continue
        if kind not in ("Split", "Digits"):
            raise _unsupported(kind, f"{at}.type", "pre-tokenizer", "Metaspace, Split, Digits and Sequence")
        steps.append(node)
    return (_space_replacement(normalizers), False, None), steps


def _space_replacement(normalizers: list[tuple[str, str, bool, str]]) -> str | None:
    """The one character the normalizers put for a space (``Replace(" ", "▁")``)."""
    for kind, pattern, literal, content in normalizers:
        if kind == "Replace" and literal and pattern == " " and len(content) == 1:
            return content
    return None


def _splits_nothing(node: dict[str, Any], at: str, normalizers: list[tuple[str, str, bool, str]]) -> bool:
    """Whether a ``Split`` on a space finds none: a normalizer replaced every space
    and no later one can put one back (Gemma's files split on spaces after replacing
    them). Without a match a split that is not inverted keeps the whole text."""
    text, literal = _pattern(node, at)
    if not literal or text != " " or _bool(node, "invert", at, False):
        return False
    gone = False
    for kind, pattern, is_literal, content in normalizers:
        if kind == "Replace" and is_literal and pattern == " " and " " not in content:
            gone = True
        elif kind in ("NFKC", "NFKD") or " " in content:
            gone = False
    return gone


def char_decoder(spec: Any, path: str) -> list[tuple[str, str, str, int, int]]:
    """The decoder steps as ``Encoder.from_hf``'s ``chars`` takes them."""
    if spec is None:
        raise _Bad(path, f"null is not supported (bpekit reads {_DECODERS})")
    out: list[tuple[str, str, str, int, int]] = []

    def walk(node: Any, at: str) -> None:
        node = _object(node, at)
        kind = _type(node, at)
        if kind == "Sequence":
            for k, inner in enumerate(_list(node.get("decoders"), f"{at}.decoders")):
                walk(inner, f"{at}.decoders[{k}]")
        elif kind == "Replace":
            text, literal = _pattern(node, at)
            if not literal or not text:
                raise _Bad(f"{at}.pattern", "only a non-empty String pattern is supported")
            out.append(("replace", text, _str(node.get("content"), f"{at}.content"), 0, 0))
        elif kind == "ByteFallback":
            out.append(("byte_fallback", "", "", 0, 0))
        elif kind == "Fuse":
            out.append(("fuse", "", "", 0, 0))
        elif kind == "Strip":
            content = _str(node.get("content"), f"{at}.content")
            counts = [node.get(key, 0) for key in ("start", "stop")]
            counted = all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts)
            if len(content) != 1 or not counted:
                raise _Bad(at, "expected one character of content and counts start and stop")
            out.append(("strip", content, "", counts[0], counts[1]))
        elif kind == "Metaspace":
            rep = _str(node.get("replacement"), f"{at}.replacement")
            if len(rep) != 1:
                raise _Bad(f"{at}.replacement", f"{rep!r} is not one character")
            scheme = _str(node.get("prepend_scheme", "always"), f"{at}.prepend_scheme")
            if node.get("add_prefix_space") is False:
                scheme = "never"
            out.append(("metaspace", rep, "", int(scheme != "never"), 0))
        elif kind == "ByteLevel":
            raise _Bad(
                f"{at}.type",
                "'ByteLevel' without a ByteLevel pre-tokenizer is not supported (a byte-level BPE "
                f"has both; a SentencePiece-style one reads {_DECODERS})",
            )
        else:
            raise _unsupported(kind, f"{at}.type", "decoder", _DECODERS)

    walk(spec, path)
    return out
