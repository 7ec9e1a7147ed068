"""Read a HuggingFace ``tokenizer.json`` of a BPE model into a core encoder
that gives the ids ``tokenizers`` gives (``Tokenizer.from_hf`` wraps it).

What is read, with ``tokenizers``' semantics (the core runs it: ``src/encode/hf``):

- model ``BPE``: vocab and merges in byte-level form, merges as ``"a b"`` or
  ``["a", "b"]``, ``ignore_merges``; ``dropout`` null, ``byte_fallback`` false, no
  subword prefix or suffix;
- normalizers ``NFC``, ``NFD``, ``NFKC``, ``NFKD``, ``Lowercase``, ``Replace``,
  ``Prepend`` and ``Sequence`` of them;
- pre-tokenizers ``Split``, ``Digits``, ``ByteLevel`` (last) and ``Sequence`` of them;
- ``added_tokens`` with their flags;
- post-processors ``ByteLevel`` (its ``trim_offsets``, for offsets), ``TemplateProcessing``
  (for ``add_special_tokens``) and ``Sequence`` of them; decoder ``ByteLevel``.

A file without a ``ByteLevel`` pre-tokenizer is SentencePiece-style BPE (its tokens are
characters, with byte fallback), whose parts ``bpekit.formats.hf_chars`` reads. Anything
else (a Unigram or WordPiece model, say) is a ``ValueError`` naming the file and the
JSON path of what is not supported, never a tokenizer that encodes differently.

>>> import json, tempfile, os
>>> from bpekit.formats.hf import to_hf_json
>>> import bpekit
>>> tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], ["<|e|>"])
>>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
>>> _ = open(path, "w").write(json.dumps(to_hf_json(tok)))
>>> read_hf(path).core.encode("abc<|e|>")
[256, 99, 257]
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bpekit import _core
from bpekit.formats._hf_json import (
    _Bad,
    _bool,
    _deeper_than,
    _list,
    _merge_lines,
    _object,
    _pattern,
    _show,
    _str,
    _type,
    _unsupported,
)
from bpekit.formats.gpt2 import decode_token
from bpekit.formats.hf_chars import char_decoder, char_model, char_words, is_char_model
from bpekit.formats.onig import rust_regex
from bpekit.formats.parts import HfExtras, Loaded

__all__ = ["HfExtras", "find_tokenizer_json", "read_hf", "read_hf_data"]

_NORMAL_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
#: The deepest nesting of JSON arrays and objects read. ``tokenizers`` reads at most
#: 127 levels (serde_json's limit: 62 ``Sequence``s of normalizers in one another, not
#: 63); within it the walks below, and a pickle or save of the document, stay far from
#: Python's recursion limit.
_MAX_DEPTH = 128
_TOO_DEEP = (
    f"arrays and objects nested more than {_MAX_DEPTH} levels deep (tokenizers reads at most 127; "
    "a tokenizer.json nests a few)"
)
_BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


def find_tokenizer_json(spec: str | os.PathLike[str]) -> Path | None:
    """``spec`` if it is a ``.json`` file, or the ``tokenizer.json`` in folder ``spec``."""
    p = Path(spec)
    if p.is_dir():
        inner = p / "tokenizer.json"
        return inner if inner.is_file() else None
    if p.suffix == ".json" and p.is_file() and p.name != "vocab.json":
        return p
    return None


def read_hf(path: str | os.PathLike[str]) -> Loaded:
    """The tokenizer of ``path``: a ``tokenizer.json``, or a folder holding one."""
    found = find_tokenizer_json(path)
    if found is None:
        raise FileNotFoundError(f"{os.fspath(path)}: no tokenizer.json there")
    raw = found.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{found}: not UTF-8 at byte {e.start}; a tokenizer.json is UTF-8 JSON") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{found}: not a valid JSON document ({e})") from None
    except RecursionError:
        raise ValueError(f"{found}: $: {_TOO_DEEP}") from None
    try:
        # A model's folder names it (".../olmo-2/tokenizer.json"); a file of another
        # name names itself.
        name = found.parent.name if found.name == "tokenizer.json" else found.stem
        return read_hf_data(data, name=name or found.stem)
    except _Bad as e:
        raise ValueError(f"{found}: {e}") from None


def read_hf_data(data: Any, *, name: str = "hf") -> Loaded:
    """The tokenizer of a ``tokenizer.json`` document already parsed."""
    if not isinstance(data, dict):
        raise _Bad("$", f"the document is a JSON {type(data).__name__}, not an object")
    # The model's vocab and merges are left out (they are most of a file: checking
    # them took 25 ms of dolma2's 600 ms load): _bpe checks that each entry is flat.
    model = data.get("model")
    big = [model.get(k) for k in ("vocab", "merges")] if isinstance(model, dict) else []
    if _deeper_than(data, _MAX_DEPTH, skip=frozenset(id(x) for x in big)):
        raise _Bad("$", _TOO_DEEP)
    for key in ("truncation", "padding"):
        if data.get(key) is not None:
            raise _Bad(key, "not supported (encode would cut or pad the ids); set it to null")
    model = _object(data.get("model"), "model")
    kind = model.get("type", "BPE" if "merges" in model else None)
    if kind != "BPE":
        raise _Bad(
            "model.type",
            f"model {kind!r} is not supported: bpekit reads BPE models, byte-level or "
            "SentencePiece-style (byte_fallback), not Unigram or WordPiece",
        )
    if is_char_model(data):
        return _read_chars(data, model, name)
    steps, prefix_space = _pre_tokenizers(data.get("pre_tokenizer"), "pre_tokenizer")
    normalizers = _normalizers(data.get("normalizer"), "normalizer")
    _decoder(data.get("decoder"), "decoder")
    vocab, merges, ignore_merges, model_ids, decode_only = _bpe(model, "model")
    added, decode, special = _added_tokens(
        data.get("added_tokens", []), model_ids, normalizers, "added_tokens"
    )
    prefix, suffix, trim = _post_processor(data.get("post_processor"), "post_processor")
    added_ids = {i for _, i, *_ in added}
    last_id = max([*model_ids.values(), *added_ids], default=-1)
    try:
        core = _core.Encoder.from_hf(
            _with_all_bytes(vocab, last_id),
            merges,
            ignore_merges,
            steps,
            # An added token's id decodes as tokenizers decodes the added token.
            (normalizers, added, prefix_space, [d for d in decode_only if d[0] not in added_ids] + decode),
        )
    except ValueError as e:
        raise _Bad("$", str(e)) from None
    return Loaded(core, name, "all", HfExtras(data, prefix, suffix, special, trim))


def _read_chars(data: dict[str, Any], model: dict[str, Any], name: str) -> Loaded:
    """A SentencePiece-style BPE (``bpekit.formats.hf_chars``)."""
    normalizers = _normalizers(data.get("normalizer"), "normalizer")
    (rep, split, scheme), nodes = char_words(data.get("pre_tokenizer"), normalizers, "pre_tokenizer")
    steps = [_step(node, f"pre_tokenizer[{node.get('type')}]") for node in nodes]
    decoders = char_decoder(data.get("decoder"), "decoder")
    vocab, merges, ignore_merges, (byte_fallback, unk, fuse_unk) = char_model(model, "model")
    added, _, special = _added_tokens(data.get("added_tokens", []), vocab, normalizers, "added_tokens")
    # tokenizers decodes an added token's id as its content.
    decode = [(i, content.encode("utf-8", "surrogatepass")) for content, i, *_ in added]
    prefix, suffix, trim = _post_processor(data.get("post_processor"), "post_processor")
    items = []
    for text, i in vocab.items():
        try:
            items.append((i, text.encode("utf-8")))
        except UnicodeEncodeError:
            raise _Bad(f"model.vocab[{text!r}]", "holds a lone surrogate, which is not text") from None
    chars = (byte_fallback, unk, fuse_unk, rep, split, scheme, decoders)
    try:
        front = (normalizers, added, False, decode)
        core = _core.Encoder.from_hf(items, merges, ignore_merges, steps, front, chars)
    except ValueError as e:
        raise _Bad("$", str(e)) from None
    return Loaded(core, name, "all", HfExtras(data, prefix, suffix, special, trim))


# ---- the parts ----------------------------------------------------------------------


def _pre_tokenizers(spec: Any, path: str) -> tuple[list[tuple[str, str, bool, str, bool]], bool]:
    """The chain of pre-tokenizer steps, and ``ByteLevel``'s ``add_prefix_space``."""
    flat: list[tuple[dict[str, Any], str]] = []

    def walk(node: Any, at: str) -> None:
        node = _object(node, at)
        if _type(node, at) == "Sequence":
            for k, inner in enumerate(_list(node.get("pretokenizers"), f"{at}.pretokenizers")):
                walk(inner, f"{at}.pretokenizers[{k}]")
        else:
            flat.append((node, at))

    if spec is None:
        raise _Bad(path, "null: a byte-level BPE needs a ByteLevel pre-tokenizer")
    walk(spec, path)
    steps: list[tuple[str, str, bool, str, bool]] = []
    prefix_space = False
    for k, (node, at) in enumerate(flat):
        kind = _type(node, at)
        if kind == "ByteLevel":
            if k != len(flat) - 1:
                raise _Bad(at, "ByteLevel before another pre-tokenizer is not supported (it must come last)")
            prefix_space = _bool(node, "add_prefix_space", at, True)
            if prefix_space and k > 0:
                raise _Bad(
                    f"{at}.add_prefix_space",
                    "true after another pre-tokenizer is not supported (a space before every piece)",
                )
            steps.append(("bytelevel", "", _bool(node, "use_regex", at, True), "", False))
        elif kind in ("Split", "Digits"):
            steps.append(_step(node, at))
        else:
            raise _unsupported(kind, f"{at}.type", "pre-tokenizer", "ByteLevel, Split, Digits and Sequence")
    if not flat or _type(flat[-1][0], flat[-1][1]) != "ByteLevel":
        raise _Bad(path, "has no ByteLevel pre-tokenizer: only byte-level BPE tokenizers are supported")
    return steps, prefix_space


def _step(node: dict[str, Any], at: str) -> tuple[str, str, bool, str, bool]:
    """A ``Split`` or ``Digits`` pre-tokenizer as a step of the core's pipeline."""
    kind = _type(node, at)
    if kind == "Split":
        text, literal = _pattern(node, at)
        behavior = _str(node.get("behavior"), f"{at}.behavior")
        if behavior not in _BEHAVIORS:
            known = ", ".join(_BEHAVIORS)
            raise _Bad(f"{at}.behavior", f"unknown behavior {behavior!r} (one of {known})")
        if not literal and _onig_possessive_interval(text):
            raise _Bad(f"{at}.pattern.Regex", "an interval followed by '+' reads differently in Oniguruma")
        if not literal:
            text = _EQUIVALENT.get(text) or _rust_regex(text, f"{at}.pattern.Regex")
        return ("split", text, literal, behavior, _bool(node, "invert", at, False))
    else:
        return ("digits", "", _bool(node, "individual_digits", at, False), "", False)


def _equivalents() -> dict[str, str]:
    """Regexes as ``tokenizer.json`` files spell the named patterns -> the named text,
    which gets its scanner: bpekit's own exports (``hf_pattern``) and GPT-2's pattern as
    ``tokenizers``' ``ByteLevel`` writes it. ``tests/formats/test_hf_import.py`` checks each
    against ``tokenizers`` on real text."""
    from bpekit import patterns
    from bpekit.formats.hf import hf_pattern

    out = {hf_pattern(p): p for p in patterns.NAMED.values()}
    out[r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"] = patterns.GPT2
    return out


_EQUIVALENT = _equivalents()


def _rust_regex(text: str, at: str) -> str:
    """``text``, a regex for Oniguruma, as the core's engine must read it
    (``bpekit.formats.onig``)."""
    try:
        return rust_regex(text)
    except ValueError as e:
        raise _Bad(at, str(e)) from None


def _onig_possessive_interval(text: str) -> bool:
    """Whether ``text`` has ``{m,n}+``, which Oniguruma (``tokenizers``' engine) reads as
    ``({m,n})+`` and the core's engine as a possessive interval."""
    import re

    return re.search(r"(?<!\\)\{\d+(,\d*)?\}\+", text) is not None


def _normalizers(spec: Any, path: str) -> list[tuple[str, str, bool, str]]:
    out: list[tuple[str, str, bool, str]] = []

    def walk(node: Any, at: str) -> None:
        if node is None:
            return
        node = _object(node, at)
        kind = _type(node, at)
        if kind == "Sequence":
            for k, inner in enumerate(_list(node.get("normalizers"), f"{at}.normalizers")):
                walk(inner, f"{at}.normalizers[{k}]")
        elif kind in _NORMAL_FORMS or kind == "Lowercase":
            out.append((kind, "", False, ""))
        elif kind == "Replace":
            text, literal = _pattern(node, at)
            if not text:
                raise _Bad(f"{at}.pattern", "an empty pattern is not supported")
            if not literal:
                text = _rust_regex(text, f"{at}.pattern.Regex")
            step = (kind, text, literal, _str(node.get("content"), f"{at}.content"))
            if not literal:
                # The core checks the regex (it refuses one that can match the empty
                # string, which tokenizers replaces inconsistently): here, to name it.
                try:
                    _core.hf_normalize([step], "")
                except ValueError as e:
                    raise _Bad(f"{at}.pattern.Regex", str(e)) from None
            out.append(step)
        elif kind == "Prepend":
            out.append((kind, "", False, _str(node.get("prepend"), f"{at}.prepend")))
        else:
            known = "NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend and Sequence"
            raise _unsupported(kind, f"{at}.type", "normalizer", known)

    walk(spec, path)
    return out


def _decoder(spec: Any, path: str) -> None:
    if spec is None:
        raise _Bad(path, "null is not supported: a byte-level BPE needs the ByteLevel decoder")
    kind = _type(_object(spec, path), path)
    if kind != "ByteLevel":
        raise _unsupported(kind, f"{path}.type", "decoder", "ByteLevel")


def _byte_level(text: str) -> bytes | None:
    """The bytes of a byte-level token text, or ``None`` where a character is not one
    of the 256 (``decode_token`` runs in C: a generator over the characters took 0.8 s
    for an added token of 10 MB)."""
    try:
        return decode_token(text)
    except ValueError:
        return None


def _bpe(
    model: dict[str, Any], path: str
) -> tuple[dict[bytes, int], list[tuple[bytes, bytes]], bool, dict[str, int], list[tuple[int, bytes]]]:
    """The vocab (bytes -> id), the merges as bytes, ``ignore_merges``, the vocab as
    the file gives it (text -> id), and the entries that are not byte-level text as
    ``(id, UTF-8)``.

    ``tokenizers`` never gives such an entry's id for text: a word starts as byte-level
    characters, and merges and ``ignore_merges``' whole-word lookup only ever join
    byte-level texts. Its ``ByteLevel`` decoder gives the entry's UTF-8. So such an
    entry only decodes: in the core's vocab, ``ignore_merges`` would find a piece of
    the same bytes (``"中国"`` as one token), and a byte-level token of the same bytes
    would lose its id to it."""
    kind = model.get("type", "BPE" if "merges" in model else None)
    if kind != "BPE":
        raise _Bad(f"{path}.type", f"model {kind!r} is not supported: bpekit reads BPE models only")
    dropout = model.get("dropout")
    if dropout not in (None, 0, 0.0):
        raise _Bad(f"{path}.dropout", f"{dropout} is not supported (BPE dropout is random); set it to null")
    if model.get("byte_fallback", False):
        raise _Bad(f"{path}.byte_fallback", "true is not supported: a byte-level BPE has all 256 bytes")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key) not in (None, ""):
            raise _Bad(f"{path}.{key}", f"{model[key]!r} is not supported (byte-level BPE has none)")
    raw_vocab = _object(model.get("vocab"), f"{path}.vocab")
    vocab: dict[bytes, int] = {}
    by_text: dict[str, bytes] = {}
    ids: dict[int, str] = {}
    decode_only: list[tuple[int, bytes]] = []
    raw: set[str] = set()
    for text, i in raw_vocab.items():
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 1 << 32:
            raise _Bad(f"{path}.vocab[{text!r}]", f"id {_show(i)} is not an integer in 0..2**32-1")
        level = _byte_level(text)
        token = level
        if token is None:
            try:
                token = text.encode("utf-8")
            except UnicodeEncodeError:
                raise _Bad(f"{path}.vocab[{text!r}]", "holds a lone surrogate, which is not text") from None
        # An id may have two texts of the same bytes (bpekit's export names a special
        # token's id under its own text too), not two texts of different bytes.
        if i in ids and by_text[ids[i]] != token:
            raise _Bad(f"{path}.vocab[{text!r}]", f"id {i} is also the id of {ids[i]!r}")
        ids.setdefault(i, text)
        by_text[text] = token
        if level is None:
            raw.add(text)
            decode_only.append((i, token))
        else:
            vocab.setdefault(token, i)
    # An id that is also a byte-level text's decodes as that (the same bytes, checked
    # above); the core needs it once.
    decode_only = [(i, b) for i, b in decode_only if vocab.get(b) != i]
    # tokenizers ranks a pair by its last line (it builds its merge map line by line, a
    # later line overwriting an earlier one); the core ranks by order in the list.
    by_last_line: dict[tuple[bytes, bytes], None] = {}
    for left, right in _merge_lines(model, path, by_text):
        if raw and (left in raw or right in raw):
            continue  # never applies in tokenizers: no word holds such a symbol
        pair = (by_text[left], by_text[right])
        by_last_line.pop(pair, None)
        by_last_line[pair] = None
    merges = list(by_last_line)
    missing = [byte for byte in range(256) if bytes([byte]) not in vocab and byte not in _NEVER_IN_UTF8]
    if missing:
        # A byte whose only entry is its own character (" " for "Ġ"): tokenizers skips
        # that byte of any text.
        plain = [text for text in raw if len(by_text[text]) == 1 and by_text[text][0] in missing]
        raise _Bad(
            f"{path}.vocab",
            "has no token for byte(s) "
            + ", ".join(f"0x{byte:02x}" for byte in missing)
            + ": a byte-level BPE vocab holds all 256"
            + (f" ({', '.join(map(repr, plain[:3]))} is not byte-level text)" if plain else ""),
        )
    model_ids = {t: i for t, i in raw_vocab.items()}
    return vocab, merges, _bool(model, "ignore_merges", path, False), model_ids, decode_only


#: Bytes no UTF-8 text holds. GPT-NeoX's vocab lacks them; such a tokenizer gets them
#: at ids after all others (the core wants a token for every byte), where no text ever
#: encodes to them: see ``_with_all_bytes``.
_NEVER_IN_UTF8 = frozenset([0xC0, 0xC1, *range(0xF5, 0x100)])


def _with_all_bytes(vocab: dict[bytes, int], last_id: int) -> list[tuple[int, bytes]]:
    """The vocab as ``(id, bytes)``, with each byte it lacks (only bytes of
    ``_NEVER_IN_UTF8``, checked by ``_bpe``) at an id after ``last_id``."""
    items = [(i, b) for b, i in vocab.items()]
    for b in range(256):
        if bytes([b]) not in vocab:
            last_id += 1
            items.append((last_id, bytes([b])))
    return items


def _added_tokens(
    spec: Any, model_ids: dict[str, int], normalizers: list[tuple[str, str, bool, str]], path: str
) -> tuple[list[tuple[str, int, bool, bool, bool, bool, bool]], list[tuple[int, bytes]], dict[str, int]]:
    """The added tokens as the core takes them, the bytes each id decodes to, and the
    special ones by content.

    Ids are given as ``tokenizers`` gives them, not as the file says: the model's id of
    a token of the same text, else the next id from the model's vocab size on. Where
    the file says otherwise, ``tokenizers`` warns and uses its own id; so does this.
    """
    import warnings

    added: list[tuple[str, int, bool, bool, bool, bool, bool]] = []
    decode: list[tuple[int, bytes]] = []
    special: dict[str, int] = {}
    seen_ids: dict[int, int] = {}
    seen_content: dict[str, int] = {}
    next_id = len(model_ids)
    for k, tok in enumerate(_list(spec, path)):
        at = f"{path}[{k}]"
        tok = _object(tok, at)
        content = _str(tok.get("content"), f"{at}.content")
        given = tok.get("id")
        if not isinstance(given, int) or isinstance(given, bool) or not 0 <= given < 1 << 32:
            raise _Bad(f"{at}.id", f"{_show(given)} is not an integer in 0..2**32-1")
        if given in seen_ids:
            raise _Bad(f"{at}.id", f"id {given} is also the id of {path}[{seen_ids[given]}]")
        if content in seen_content:
            raise _Bad(f"{at}.content", f"{content!r} is also {path}[{seen_content[content]}]")
        if not content:
            raise _Bad(f"{at}.content", "an empty added token is not supported")
        seen_ids[given], seen_content[content] = k, k
        flags = [_bool(tok, key, at, False) for key in ("special", "single_word", "lstrip", "rstrip")]
        normalized = _bool(tok, "normalized", at, not flags[0])
        i = model_ids.get(content)
        if i is None:
            i, next_id = next_id, next_id + 1
        if i != given:
            warnings.warn(
                f"{at}: the token {content!r} has id {given} in the file; tokenizers gives it "
                f"{i}, and so does bpekit",
                stacklevel=4,
            )
        # tokenizers decodes a normalized token as its normalized text, and its
        # ByteLevel decoder reads a token's text as byte-level characters where all of
        # it is such characters, else as the text itself.
        text = _core.hf_normalize(normalizers, content) if normalized and normalizers else content
        decoded = _byte_level(text)
        added.append((content, i, flags[0], flags[1], flags[2], flags[3], normalized))
        try:
            decode.append((i, text.encode("utf-8") if decoded is None else decoded))
        except UnicodeEncodeError:
            raise _Bad(f"{at}.content", "holds a lone surrogate, which is not text") from None
        if flags[0]:
            special[content] = i
    return added, decode, special


def _post_processor(spec: Any, path: str) -> tuple[list[int], list[int], tuple[bool, bool] | None]:
    """The ids ``add_special_tokens`` puts before and after a text, and the ``ByteLevel``
    processor's ``trim_offsets``: ``(add_prefix_space, after_template)`` where it trims
    (``after_template``: a template before it has added its ids when it trims), else
    None."""
    prefix: list[int] = []
    suffix: list[int] = []
    trim: tuple[bool, bool] | None = None
    templates = 0

    def walk(node: Any, at: str) -> None:
        nonlocal trim, templates
        if node is None:
            return
        node = _object(node, at)
        kind = _type(node, at)
        if kind == "ByteLevel":
            # Offsets only. A second trimming processor would trim the same spaces
            # again; no file has one, so the first is the one read.
            if _bool(node, "trim_offsets", at, True) and trim is None:
                trim = (_bool(node, "add_prefix_space", at, True), templates > 0)
            return
        if kind == "Sequence":
            for k, inner in enumerate(_list(node.get("processors"), f"{at}.processors")):
                walk(inner, f"{at}.processors[{k}]")
            return
        if kind != "TemplateProcessing":
            known = "ByteLevel, TemplateProcessing and Sequence"
            raise _unsupported(kind, f"{at}.type", "post-processor", known)
        specials = _object(node.get("special_tokens", {}), f"{at}.special_tokens")
        seen_a = False
        for k, piece in enumerate(_list(node.get("single"), f"{at}.single")):
            pat = f"{at}.single[{k}]"
            piece = _object(piece, pat)
            if "Sequence" in piece:
                if _object(piece["Sequence"], f"{pat}.Sequence").get("id") != "A" or seen_a:
                    raise _Bad(f"{pat}.Sequence", "a single template holds sequence A once")
                seen_a = True
            elif "SpecialToken" in piece:
                ref = _object(piece["SpecialToken"], f"{pat}.SpecialToken")
                name = _str(ref.get("id"), f"{pat}.SpecialToken.id")
                if name not in specials:
                    raise _Bad(f"{pat}.SpecialToken.id", f"{name!r} is not in {at}.special_tokens")
                where = f"{at}.special_tokens[{name!r}]"
                ids = _list(_object(specials[name], where).get("ids"), f"{where}.ids")
                for j, i in enumerate(ids):
                    # As tokenizers reads them (u32): 1.0, true and -1 are refused.
                    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 1 << 32:
                        raise _Bad(f"{where}.ids[{j}]", f"{_show(i)} is not an integer in 0..2**32-1")
                (suffix if seen_a else prefix).extend(ids)
            else:
                raise _Bad(pat, "expected a Sequence or a SpecialToken")
        if not seen_a:
            raise _Bad(f"{at}.single", "has no sequence A")
        templates += 1

    walk(spec, path)
    return prefix, suffix, trim
