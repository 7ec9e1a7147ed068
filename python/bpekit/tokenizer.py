"""``Tokenizer``: encode and decode text with a byte-level BPE vocabulary.

A thin layer over the native encoder (``bpekit._core.Encoder``): it normalises
arguments and raises helpful errors; Rust does the work with the GIL released. What is
not the API object itself lives a layer below, in modules that know nothing of this
class: argument checks (``bpekit._tokenizer_args``), tiktoken's special-token and
surrogate rules (``bpekit._encode_rules``) and unstable-tail encodings
(``bpekit._unstable``), the file formats and the pickled state (``bpekit.formats``,
on the core encoder) and the visualizer (``bpekit.viz``).

Two kinds of vocabulary, one class:

* CS336 / GPT-2 style, ``Tokenizer(vocab, merges, special_tokens)``: merges apply
  by rank (creation order) inside each pre-token.
* tiktoken style, ``Tokenizer.from_ranks(ranks, special_tokens, pattern=...)`` or
  ``bpekit.get_encoding("o200k_base")``: ids identical to tiktoken's.

How the defaults differ from tiktoken
-------------------------------------
``encode``, ``encode_batch``, ``encode_to_numpy`` and ``encode_iterable`` take
tiktoken's ``allowed_special`` / ``disallowed_special`` with tiktoken's meanings,
but the default of ``allowed_special`` depends on how the tokenizer was made:

* a CS336 tokenizer (``Tokenizer(...)``, ``Tokenizer.from_files(...)``) recognises
  its own special tokens by default (``allowed_special="all"``), as CS336 requires:
  the special tokens you give it are the ones you want encoded as such;
* an OpenAI encoding (``get_encoding``, ``from_ranks``) behaves exactly like
  tiktoken: ``allowed_special=set()`` and ``disallowed_special="all"``, so special
  token text in the input raises ``ValueError`` unless you allow it.

>>> vocab = {i: bytes([i]) for i in range(256)} | {256: b" t", 257: b" th", 258: b" the"}
>>> tok = Tokenizer(vocab, [(b" ", b"t"), (b" t", b"h"), (b" th", b"e")], ["<|endoftext|>"])
>>> tok.encode("the the<|endoftext|>")
[116, 104, 101, 258, 259]
>>> tok.decode([258, 259])
' the<|endoftext|>'
>>> tok.encode("<|endoftext|>", allowed_special=set(), disallowed_special=())
[60, 124, 101, 110, 100, 111, 102, 116, 101, 120, 116, 124, 62]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bpekit import _core, _offsets
from bpekit._encode_rules import DEFAULT, AllowedSpecial, Policy, on_str, on_texts, policy, stream_ids
from bpekit._encode_rules import Default as _Default
from bpekit._text_rules import NO_OTHER_STRINGS, without_surrogates
from bpekit._threads import check_num_threads
from bpekit._tokenizer_args import (
    id_list,
    id_out_of_range,
    merge_pairs,
    rank_items,
    special_token_list,
    unknown_huge_id,
    vocab_items,
)
from bpekit._utf8 import check_decode_errors
from bpekit.formats.parts import Loaded

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from bpekit.formats.parts import HfExtras
    from bpekit.viz import Visualization

__all__ = ["Tokenizer"]


class Tokenizer:
    """A byte-level BPE tokenizer (CS336 interface plus tiktoken's extras).

    ``vocab`` maps ids to token bytes; ``merges`` lists byte pairs in creation order.
    Special tokens missing from ``vocab`` are appended at the next free ids, in the
    order given; overlapping special tokens match longest first whatever that order.
    ``pattern`` is the pre-tokenizer: ``"gpt2"`` (CS336's ``PAT``), ``"cl100k"``,
    ``"o200k"`` or any regex.
    """

    def __init__(
        self,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str = "gpt2",
        name: str | None = None,
    ) -> None:
        specials = special_token_list(special_tokens)
        tokens, pairs = vocab_items(vocab), merge_pairs(merges)
        try:
            core = _core.Encoder.from_merges(tokens, pairs, specials, pattern)
        except OverflowError:
            bad = id_out_of_range(tokens)
            if bad is None:
                raise
            raise bad from None
        self._setup(Loaded(core, name or "bpe", "all"))

    def _setup(self, parts: Loaded) -> None:
        self._core = parts.core
        self._hf: HfExtras | None = parts.hf
        self.name = parts.name
        self._special_tokens: dict[str, int] = dict(parts.core.special_tokens())
        self._default_allowed = parts.default_allowed
        # The policy of the default arguments, made once: made per call it was ~4 us of
        # an `encode` (OLMo 2's 22 special tokens put in sets and sorted), against ~1 us
        # for the core's work on a 10-byte text.
        self._default_policy = policy(self._special_tokens, self._default_allowed, DEFAULT, "all")
        # Built on first use; never pickled (``_REBUILT``).
        self._vocab: dict[int, bytes] | None = None
        self._merges: list[tuple[bytes, bytes]] | None = None
        self._fingerprint: str | None = None
        self._sorted_tokens: list[bytes] | None = None

    # ---- construction -------------------------------------------------------------

    @classmethod
    def _from_parts(cls, parts: Loaded) -> Tokenizer:
        """A tokenizer (of this class, ``__init__`` not run) of what a reader made."""
        self = cls.__new__(cls)
        self._setup(parts)
        return self

    @classmethod
    def from_hf(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """From a HuggingFace ``tokenizer.json`` (or a folder holding one) of a byte-level
        BPE model: ``encode`` gives the ids ``tokenizers.Tokenizer.encode(text,
        add_special_tokens=False)`` gives, and with ``add_special_tokens=True`` those of
        its post-processor too; ``decode`` its ``decode(ids, skip_special_tokens=False)``.

        The added tokens found in the raw text (special or not) are this tokenizer's
        ``special_tokens``: all are recognised by default, and ``encode_ordinary`` leaves
        out the special ones as ``tokenizers``' ``encode_special_tokens`` does.
        See ``bpekit.formats.hf_load`` for what is supported.
        """
        from bpekit.formats.hf_load import read_hf

        return cls._from_parts(read_hf(path))

    @classmethod
    def from_files(
        cls,
        vocab_path: str | os.PathLike[str],
        merges_path: str | os.PathLike[str],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str | None = None,
    ) -> Tokenizer:
        """From GPT-2 style ``vocab.json`` and ``merges.txt`` (with or without ``#version``).

        ``pattern`` defaults to the one in a ``bpekit.json`` beside ``vocab.json`` (which
        ``Tokenizer.save`` writes), else GPT-2's. Special tokens are the ones given.
        """
        from pathlib import Path

        from bpekit.formats.folder import load_config
        from bpekit.formats.gpt2 import load_vocab_merges

        if pattern is None:
            config = load_config(Path(vocab_path).parent)
            pattern = config.pattern if config is not None else "gpt2"
        vocab, merges = load_vocab_merges(vocab_path, merges_path)
        return cls._from_loaded_files(vocab, merges, special_tokens, pattern, None, merges_path)

    @classmethod
    def _from_loaded_files(
        cls,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Iterable[str] | None,
        pattern: str,
        name: str | None,
        merges_path: str | os.PathLike[str],
    ) -> Tokenizer:
        """``cls(...)`` of what was read from files: a bad merge's error names the file."""
        try:
            return cls(vocab, merges, special_tokens, pattern=pattern, name=name)
        except ValueError as e:
            if str(e).startswith("merge #"):
                raise ValueError(f"{os.fspath(merges_path)}: {e}") from None
            raise

    @classmethod
    def from_ranks(
        cls,
        mergeable_ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int] | None = None,
        *,
        pattern: str,
        name: str = "custom",
    ) -> Tokenizer:
        """A tiktoken-style encoding: ``mergeable_ranks`` maps token bytes to rank (= id).

        Defaults follow tiktoken: special tokens are disallowed in ``encode`` unless allowed.
        """
        ranks, specials = rank_items(mergeable_ranks, special_tokens)
        core = _core.Encoder.from_ranks(ranks, specials, pattern)
        return cls._from_parts(Loaded(core, name, frozenset()))

    def _policy(
        self, allowed_special: AllowedSpecial | _Default, disallowed_special: AllowedSpecial
    ) -> Policy:
        """tiktoken's special-token rules for this tokenizer (``bpekit._encode_rules``)."""
        if allowed_special is DEFAULT and type(disallowed_special) is str and disallowed_special == "all":
            return self._default_policy
        return policy(self._special_tokens, self._default_allowed, allowed_special, disallowed_special)

    # ---- encoding -------------------------------------------------------------------

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial | _Default = DEFAULT,
        disallowed_special: AllowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> list[int]:
        """The ids of ``text``.

        ``allowed_special``: special tokens encoded as such (``"all"`` or a set);
        ``disallowed_special``: special tokens whose text is an error (``"all"``: every
        special token not allowed). See the module docstring for the defaults.
        ``add_special_tokens``: the ids a ``tokenizer.json``'s post-processor adds
        around the text (a BOS, say), as ``tokenizers`` adds them; none for other
        tokenizers.
        """
        if allowed_special is DEFAULT and type(disallowed_special) is str and disallowed_special == "all":
            # `_policy`'s first case, inlined: a call was ~15% of encoding a short text.
            allowed, disallowed, others = self._default_policy
        else:
            allowed, disallowed, others = self._policy(allowed_special, disallowed_special)
        if others is not NO_OTHER_STRINGS:
            others.check(text)
        # `on_str`, inlined: a Python call is ~10% of encoding a short text.
        try:
            ids = self._core.encode(text, allowed, disallowed)
        except UnicodeEncodeError:
            ids = self._core.encode(without_surrogates(text), allowed, disallowed)
        if add_special_tokens and self._hf is not None:
            return self._hf.prefix + ids + self._hf.suffix
        return ids

    def encode_with_offsets(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial | _Default = DEFAULT,
        disallowed_special: AllowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """``encode``'s ids and, for each, its ``(start, end)`` in ``text`` (``str``
        indices): for a ``tokenizer.json``, the ``offsets`` of ``tokenizers``' ``encode``
        (its normalizers, added tokens and ``trim_offsets`` included; ``(0, 0)`` for the
        ids ``add_special_tokens`` adds). Otherwise the same rule: a token spans the
        characters its bytes touch, so tokens that share a character's bytes both span
        it, and a special token spans its text.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"hi"}, [(b"h", b"i")])
        >>> tok.encode_with_offsets("hi é")
        ([256, 32, 195, 169], [(0, 2), (2, 3), (3, 4), (3, 4)])
        """
        allowed, disallowed, others = self._policy(allowed_special, disallowed_special)
        others.check(text)
        ids, offsets = _offsets.on_str(
            self._core.encode_with_offsets, text, allowed, disallowed, self._trim(add_special_tokens)
        )
        if add_special_tokens and self._hf is not None:
            return _offsets.around(ids, offsets, self._hf.prefix, self._hf.suffix)
        return ids, offsets

    def encode_with_offsets_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial | _Default = DEFAULT,
        disallowed_special: AllowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
        """``encode_with_offsets`` as a ``uint32`` array of ids and an ``(n, 2)`` ``uint64``
        array of offsets: no Python object is made per token."""
        allowed, disallowed, others = self._policy(allowed_special, disallowed_special)
        others.check(text)
        trim = self._trim(add_special_tokens)
        ids, offsets = _offsets.on_str(
            self._core.encode_with_offsets_to_numpy, text, allowed, disallowed, trim
        )
        if add_special_tokens and self._hf is not None:
            return _offsets.around_arrays(ids, offsets, self._hf.prefix, self._hf.suffix)
        return ids, offsets

    def encode_batch_with_offsets(
        self,
        texts: Sequence[str],
        num_threads: int | None = None,
        *,
        allowed_special: AllowedSpecial | _Default = DEFAULT,
        disallowed_special: AllowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> list[tuple[list[int], list[tuple[int, int]]]]:
        """``encode_with_offsets`` of each text, in order, in parallel (``num_threads``:
        default all cores)."""
        num_threads = check_num_threads(num_threads)
        allowed, disallowed, others = self._policy(allowed_special, disallowed_special)
        batch = list(texts)
        if others:
            for text in batch:
                others.check(text)
        trim = self._trim(add_special_tokens)
        out = _offsets.on_texts(
            self._core.encode_batch_with_offsets, batch, allowed, disallowed, num_threads, trim
        )
        if add_special_tokens and self._hf is not None:
            prefix, suffix = self._hf.prefix, self._hf.suffix
            out = [_offsets.around(ids, offsets, prefix, suffix) for ids, offsets in out]
        return out

    def _trim(self, add_special_tokens: bool) -> tuple[bool, int] | None:
        """The core's ``trim`` argument: the post-processor's ``trim_offsets``."""
        if self._hf is None:
            return None
        return _offsets.trim_arg(self._hf.trim, self._hf.prefix, add_special_tokens)

    def encode_with_unstable(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial | _Default = DEFAULT,
        disallowed_special: AllowedSpecial = "all",
    ) -> tuple[list[int], list[list[int]]]:
        """tiktoken's ``encode_with_unstable``: the ids of ``text`` that more text could
        not change, and every way the rest could be encoded once text follows (lists of
        ids, in no order). Special tokens as in ``encode``."""
        from bpekit._unstable import encode_with_unstable, sorted_token_bytes

        names, disallowed, others = self._policy(allowed_special, disallowed_special)
        others.check(text)
        if disallowed:
            on_str(self._core.encode, text, [], disallowed)  # raises on a disallowed token
        allowed = frozenset(self._special_tokens if names is None else names) & self._special_tokens.keys()
        if self._sorted_tokens is None:
            self._sorted_tokens = sorted_token_bytes(self._core)
        return encode_with_unstable(self._core, without_surrogates(text), allowed, self._sorted_tokens)

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """The ids of one piece, not pre-tokenized (tiktoken's private method)."""
        data = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        return self._core.encode_single_piece(data, True)

    def _encode_bytes(self, data: bytes) -> list[int]:
        """The ids of bytes that may end inside a character (tiktoken's private method,
        used to encode a text's bytes as they come)."""
        from bpekit._unstable import encode_bytes

        return encode_bytes(self._core, bytes(data))

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text`` with special tokens encoded as ordinary text."""
        # `on_str`, inlined: a Python call is ~10% of encoding a short text.
        try:
            return self._core.encode(text, [], [])
        except UnicodeEncodeError:
            return self._core.encode(without_surrogates(text), [], [])

    def encode_batch(
        self,
        texts: Sequence[str],
        num_threads: int | None = None,
        *,
        allowed_special: AllowedSpecial | _Default = DEFAULT,
        disallowed_special: AllowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> list[list[int]]:
        """``encode`` of each text, in parallel (``num_threads``: default all cores)."""
        num_threads = check_num_threads(num_threads)
        allowed, disallowed, others = self._policy(allowed_special, disallowed_special)
        batch = list(texts)
        if others:
            for text in batch:
                others.check(text)
        out = on_texts(self._core.encode_batch, batch, allowed, disallowed, num_threads)
        if add_special_tokens and self._hf is not None:
            prefix, suffix = self._hf.prefix, self._hf.suffix
            out = [prefix + ids + suffix for ids in out]
        return out

    def encode_ordinary_batch(self, texts: Sequence[str], num_threads: int | None = None) -> list[list[int]]:
        """``encode_ordinary`` of each text, in parallel (``num_threads``: default all cores)."""
        num_threads = check_num_threads(num_threads)
        return on_texts(self._core.encode_batch, list(texts), [], [], num_threads)

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial | _Default = DEFAULT,
        disallowed_special: AllowedSpecial = "all",
    ) -> npt.NDArray[np.uint32]:
        """``encode`` as a numpy ``uint32`` array."""
        allowed, disallowed, others = self._policy(allowed_special, disallowed_special)
        others.check(text)
        return on_str(self._core.encode_to_numpy, text, allowed, disallowed)

    def encode_batch_to_numpy(
        self,
        texts: Sequence[str],
        num_threads: int | None = None,
        *,
        eos: str | int | None = None,
        allowed_special: AllowedSpecial | _Default = DEFAULT,
        disallowed_special: AllowedSpecial = "all",
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
        """``encode_batch`` as one flat ``uint32`` array of all the texts' ids (each text's
        followed by ``eos``, a token's text or id, when given) and the ``uint64`` offset
        where each text's ids start, ending with the total: text ``i`` is
        ``ids[offsets[i]:offsets[i + 1]]``. No Python int is made per token, so it runs at
        ``encode_to_numpy``'s speed and scales with threads (for ``datasets.map(batched=True)``
        and data loaders).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"])
        >>> ids, offsets = tok.encode_batch_to_numpy(["hi", "", "yo"], eos="<|eot|>")
        >>> ids.tolist(), offsets.tolist()
        ([104, 105, 256, 256, 121, 111, 256], [0, 3, 4, 7])
        """
        num_threads = check_num_threads(num_threads)
        allowed, disallowed, others = self._policy(allowed_special, disallowed_special)
        batch = list(texts)
        if others:
            for text in batch:
                others.check(text)
        eos_id = self._token_id(eos, "eos") if eos is not None else None
        return on_texts(self._core.encode_batch_to_numpy, batch, allowed, disallowed, num_threads, eos_id)

    def _token_id(self, token: str | int, role: str) -> int:
        """The id of ``token``: an id in the vocabulary, a special token's text, or the text
        of an ordinary token."""
        if isinstance(token, int) and not isinstance(token, bool):
            if not 0 <= token < self.n_vocab:
                raise ValueError(f"{role} id {token} is not in the vocabulary of {self.n_vocab} ids")
            return token
        if not isinstance(token, str):
            raise TypeError(f"{role} must be a token's text or id, not {token!r}")
        if token in self.special_tokens:
            return self.special_tokens[token]
        try:
            return self.encode_single_token(token)
        except KeyError:
            raise ValueError(f"{role} {token!r} is not a single token of {self.name!r}") from None

    def encode_iterable(
        self,
        iterable: Iterable[str],
        *,
        allowed_special: AllowedSpecial | _Default = DEFAULT,
        disallowed_special: AllowedSpecial = "all",
    ) -> Iterator[int]:
        """Yields exactly the ids ``encode("".join(iterable))`` would give, lazily.

        Works on a file object (its lines) or any iterable of strings, however the
        text is split. Memory stays bounded: text is buffered only until a point that
        no later text can change (a special token, or, for the gpt2, cl100k and o200k
        patterns, a lone newline between two non-whitespace characters), so it is at
        most the longest stretch between such points; with a custom pattern only
        special tokens are such points. No thread pool is used.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> list(tok.encode_iterable(["a", "b\\n", "c"])) == tok.encode("ab\\nc")
        True
        """
        allowed, disallowed, others = self._policy(allowed_special, disallowed_special)
        yield from stream_ids(self._core.stream(allowed, disallowed), iterable, others)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of one token: an ordinary token's bytes (or text), else a special
        token's text (or its UTF-8 bytes), looked up in that order as tiktoken does."""
        token = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        found = self._core.token_id(token)
        if found is not None:
            return found
        try:
            return self._special_tokens[token.decode("utf-8")]
        except (UnicodeDecodeError, KeyError):
            raise KeyError(f"{text_or_bytes!r} is not a single token") from None

    # ---- decoding -------------------------------------------------------------------

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ``ids``, joined. An unknown id raises ``KeyError`` naming it."""
        listed = id_list(ids)
        try:
            return self._core.decode_bytes(listed)
        except OverflowError:
            raise unknown_huge_id(listed) from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text of ``ids``; invalid UTF-8 is replaced exactly as ``bytes.decode(errors="replace")``.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> tok.decode([104, 105, 0xFF])
        'hi\\ufffd'
        """
        return self.decode_bytes(ids).decode("utf-8", errors=check_decode_errors(errors))

    def decode_batch(
        self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8
    ) -> list[str]:
        """``decode`` of each id list (``num_threads`` is accepted, as tiktoken takes it:
        decoding is a copy of each token's bytes, faster than threads would start)."""
        errors = check_decode_errors(errors)
        return [self.decode_bytes(ids).decode("utf-8", errors=errors) for ids in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> list[bytes]:
        """``decode_bytes`` of each id list."""
        return [self.decode_bytes(ids) for ids in batch]

    def decode_single_token_bytes(self, token: int) -> bytes:
        try:
            return self._core.token_bytes(token)
        except OverflowError:
            raise unknown_huge_id([token]) from None

    def decode_tokens_bytes(self, ids: Iterable[int]) -> list[bytes]:
        return [self.decode_single_token_bytes(i) for i in id_list(ids)]

    def decode_with_offsets(self, ids: Iterable[int]) -> tuple[str, list[int]]:
        """The text of ``ids`` and where each token starts in it, in characters, as
        tiktoken gives them: a token that starts inside a character (with a UTF-8
        continuation byte) starts at that character. Invalid UTF-8 raises
        ``UnicodeDecodeError``, as in tiktoken.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> tok.decode_with_offsets(list("hé".encode()))
        ('hé', [0, 1, 1])
        """
        pieces = self.decode_tokens_bytes(ids)
        offsets = []
        chars = 0  # characters started so far: bytes that are not continuation bytes
        for piece in pieces:
            inside = bool(piece) and 0x80 <= piece[0] < 0xC0
            offsets.append(max(0, chars - inside))
            chars += sum(not 0x80 <= b < 0xC0 for b in piece)
        return b"".join(pieces).decode("utf-8"), offsets

    def visualize(self, text: str) -> Visualization:
        """The tokens of ``text``, each on its own colour: renders in Jupyter
        (``_repr_html_``), and ``.save("page.html")`` writes a self-contained page (see
        ``bpekit.viz``)."""
        from bpekit.viz import visualize

        return visualize(self, text)

    # ---- what the tokenizer holds ---------------------------------------------------

    @property
    def n_vocab(self) -> int:
        """Highest id + 1 (as tiktoken)."""
        return self._core.n_vocab

    @property
    def max_token_value(self) -> int:
        return self._core.n_vocab - 1

    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>``; ``KeyError`` if this tokenizer has none."""
        return self._special_tokens["<|endoftext|>"]

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special_tokens)

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        """Whether id ``token`` is a special token's."""
        if not isinstance(token, int):
            raise TypeError(f"a token id is an int, not {type(token).__name__}")
        return token in self._special_tokens.values()

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every token but the special tokens, sorted (as tiktoken's)."""
        from bpekit._unstable import sorted_token_bytes

        return sorted_token_bytes(self._core)

    @property
    def pattern(self) -> str:
        """The pre-tokenizer's regex text."""
        return self._core.pattern

    @property
    def vocab(self) -> dict[int, bytes]:
        """``{id: bytes}`` of every token, special tokens included."""
        if self._vocab is None:
            self._vocab = self._core.vocab()
        return dict(self._vocab)

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges in rank order; for tiktoken ranks, recovered from them (as minbpe does)."""
        if self._merges is None:
            self._merges = self._core.merges()
        return list(self._merges)

    def save(self, directory: str | os.PathLike[str], format: str = "gpt2") -> None:
        """Writes this tokenizer into ``directory``.

        ``format="gpt2"`` (the default): ``vocab.json`` and ``merges.txt`` (GPT-2 format)
        and ``bpekit.json`` with the pattern and special tokens, which GPT-2's files
        cannot hold: ``Tokenizer.from_files`` and ``bpekit.load_tokenizer`` of the folder
        (and ``bpekit encode -t`` it) give this tokenizer's ids back, whatever its pattern.
        ``"hf"``: ``tokenizer.json``, ``tokenizer_config.json`` and
        ``special_tokens_map.json``, for ``transformers.AutoTokenizer.from_pretrained``.
        ``"tiktoken"``: ``<name>.tiktoken`` and ``<name>.json`` for ``tiktoken.Encoding``.
        See ``bpekit.formats.convert`` for what each format can hold.
        """
        from bpekit.formats.convert import save_as

        save_as(self, directory, format)

    # ---- pickling and copying -------------------------------------------------------

    # Fields that `_setup` rebuilds from the native encoder; the rest of `__dict__` (a
    # subclass's or a user's attributes) travels as it is.
    _REBUILT = frozenset(
        {
            "_core",
            "name",
            "_special_tokens",
            "_default_allowed",
            "_default_policy",
            "_hf",
            "_vocab",
            "_merges",
            "_fingerprint",
            "_sorted_tokens",
        }
    )

    def __reduce__(
        self,
    ) -> tuple[Callable[..., Tokenizer], tuple[type[Tokenizer], dict[str, Any]], dict[str, Any]]:
        """Pickles what rebuilds this tokenizer, not the native encoder (see
        ``bpekit.formats.pickled``), and any other attributes (a subclass's). So a
        tokenizer goes to ``multiprocessing`` workers and ``datasets.map(num_proc=...)``
        whether or not the other process has its files.

        >>> import pickle
        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
        >>> pickle.loads(pickle.dumps(tok)).encode("hi<|endoftext|>")
        [104, 105, 256]
        """
        from bpekit.formats.pickled import tokenizer_state

        extra = {k: v for k, v in self.__dict__.items() if k not in self._REBUILT}
        parts = Loaded(self._core, self.name, self._default_allowed, self._hf)
        return _tokenizer_from_state, (type(self), tokenizer_state(parts)), extra

    def __copy__(self) -> Tokenizer:
        """A new object sharing the native encoder, which never changes once built."""
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> Tokenizer:
        """As ``__copy__``, with the other attributes deep-copied (rebuilding the encoder,
        0.2 s for o200k, would give an equal one)."""
        import copy

        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            new.__dict__[key] = value if key == "_core" else copy.deepcopy(value, memo)
        return new

    def __repr__(self) -> str:
        return f"<Tokenizer {self.name!r}: {self.n_vocab} ids, {len(self._special_tokens)} special tokens>"


def _tokenizer_from_state(cls: type[Tokenizer], state: dict[str, Any]) -> Tokenizer:
    """Unpickles what ``Tokenizer.__reduce__`` saved (pickles name this function)."""
    from bpekit.formats.pickled import loaded_from_state

    return cls._from_parts(loaded_from_state(state))
