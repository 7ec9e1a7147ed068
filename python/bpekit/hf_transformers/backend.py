"""``Backend``: what transformers' fast tokenizer holds as its ``tokenizers.Tokenizer``
(``self._tokenizer``, ``backend_tokenizer``), with its encoding and decoding on bpekit.

It wraps the real ``tokenizers.Tokenizer`` and hands it every call but ``encode``,
``encode_batch``, ``decode`` and ``decode_batch``: the vocabulary, added tokens,
truncation and padding settings, components, saving and pickling are ``tokenizers``'
own, so transformers sees the tokenizer it built. The encoding calls run on bpekit
when it can give what ``tokenizers`` gives, and on ``tokenizers`` otherwise, with one
warning per reason naming the file's JSON path or the argument:

- a ``tokenizer.json`` that bpekit refuses (``Tokenizer.from_hf``'s one-line error);
- pairs of sequences (``text_pair``) and pre-tokenized input (``is_split_into_words``);
- ``truncation`` with ``only_second``, a ``stride`` not below the room left, or a
  ``max_length`` below what the template adds (``tokenizers`` raises or wraps there);
- offsets the core refuses (a file whose merges use byte or unknown tokens, so that a
  token stands for text of no one length: no real file has one);

bpekit's tokenizer is made from ``tokenizers``' state when first needed, and again
when that state changes (``plan.state_key``, checked at each call).
"""

from __future__ import annotations

import copy
import functools
import os
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from bpekit.hf_transformers.encoding import Batch, Encoding, Padding, Truncation, encodings
from bpekit.hf_transformers.plan import PLANS, Plan, make_plan, state_key

__all__ = ["Backend", "warn_once"]

_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


def warn_once(reason: str) -> None:
    """Warns, once per process, that ``reason`` runs on HF ``tokenizers``."""
    with _WARNED_LOCK:
        if reason in _WARNED:
            return
        _WARNED.add(reason)
    warnings.warn(
        f"bpekit.patch_transformers: {reason}: this runs on HF tokenizers, not bpekit",
        stacklevel=4,
    )


def _threads() -> int | None:
    """All cores, unless ``TOKENIZERS_PARALLELISM`` says no, as ``tokenizers`` reads it."""
    value = os.environ.get("TOKENIZERS_PARALLELISM", "").strip().lower()
    return 1 if value in ("0", "false", "off", "no", "n", "f") else None


class Backend:
    """A ``tokenizers.Tokenizer`` whose encode and decode run on bpekit."""

    # Names kept on the wrapper itself; every other attribute is the wrapped tokenizer's.
    _OWN = frozenset({"_hf", "_hf_now", "_plan", "_why", "_key", "_json"})

    def __init__(self, hf: Any) -> None:
        self._hf = hf
        self._plan: Plan | None = None
        self._why = ""
        # None makes the next call build the plan again (a new model, new tokens).
        self._key: tuple[Any, ...] | None = None
        # The wrapped tokenizer's JSON for pickling, with the settings it was made in.
        self._json: tuple[Any, str] | None = None

    # ---- the wrapped tokenizer ------------------------------------------------------

    @property
    def _hf(self) -> Any:
        """The wrapped ``tokenizers.Tokenizer``; made from its JSON here where this
        backend lent its own to a copy unpickled in a forked child (``_restored``)."""
        hf = self.__dict__["_hf_now"]
        if isinstance(hf, str):
            import tokenizers  # type: ignore[import-untyped]

            hf = self.__dict__["_hf_now"] = tokenizers.Tokenizer.from_str(hf)
        return hf

    @_hf.setter
    def _hf(self, value: Any) -> None:
        self.__dict__["_hf_now"] = value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in Backend._OWN:
            raise AttributeError(name)
        return getattr(self._hf, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in Backend._OWN or hasattr(type(self), name):
            object.__setattr__(self, name, value)
        else:
            setattr(self._hf, name, value)
            self._changed()

    def __reduce__(self) -> tuple[Any, ...]:
        # The wrapped tokenizer pickles as its JSON (one string): datasets hashes the
        # function of a map by pickling it, tokenizer included, and bpekit's own state
        # (a dict of 100k tokens) took 4 s of a 3 s map to hash. The plan's token (made
        # here if need be: the map's workers are forked after the hash) lets a forked
        # worker take the plan from PLANS; on 2 processes that saved each ~1 s a map.
        # The JSON is kept while the state lasts (a map pickles its function once to
        # hash it and once per job: 0.1 s each for OLMo 2), and a worker forked from
        # this process takes the backend it inherited rather than parse the JSON
        # (0.5 s of OLMo 2's, of a map of ~2 s on 2 processes).
        plan = self._current()
        state = _settings(self._hf)
        if self._json is None or self._json[0] != state:
            object.__setattr__(self, "_json", (state, self._hf.to_str()))
        assert self._json is not None
        token = plan.token if plan is not None else None
        if token is not None:
            _LIVE[token] = (os.getpid(), weakref.ref(self, functools.partial(_gone, token)))
        return (_restored, (self._json[1], token))

    def __deepcopy__(self, memo: dict[int, Any]) -> Backend:
        new = Backend(copy.deepcopy(self._hf, memo))
        new._plan, new._why, new._key = self._plan, self._why, self._key
        return new

    def __copy__(self) -> Backend:
        return self.__deepcopy__({})

    def __repr__(self) -> str:
        return f"<bpekit Backend of {self._hf!r}>"

    def _changed(self) -> None:
        object.__setattr__(self, "_key", None)
        object.__setattr__(self, "_json", None)

    # Setting a component, adding tokens or training changes what bpekit must run.

    @property
    def normalizer(self) -> Any:
        return self._hf.normalizer

    @normalizer.setter
    def normalizer(self, value: Any) -> None:
        self._hf.normalizer = value
        self._changed()

    @property
    def pre_tokenizer(self) -> Any:
        return self._hf.pre_tokenizer

    @pre_tokenizer.setter
    def pre_tokenizer(self, value: Any) -> None:
        self._hf.pre_tokenizer = value
        self._changed()

    @property
    def post_processor(self) -> Any:
        return self._hf.post_processor

    @post_processor.setter
    def post_processor(self, value: Any) -> None:
        self._hf.post_processor = value
        self._changed()

    @property
    def decoder(self) -> Any:
        return self._hf.decoder

    @decoder.setter
    def decoder(self, value: Any) -> None:
        self._hf.decoder = value
        self._changed()

    @property
    def model(self) -> Any:
        return self._hf.model

    @model.setter
    def model(self, value: Any) -> None:
        self._hf.model = value
        self._changed()

    @property
    def encode_special_tokens(self) -> bool:
        return bool(self._hf.encode_special_tokens)

    @encode_special_tokens.setter
    def encode_special_tokens(self, value: bool) -> None:
        self._hf.encode_special_tokens = value

    def add_tokens(self, tokens: Any) -> int:
        self._changed()
        return int(self._hf.add_tokens(tokens))

    def add_special_tokens(self, tokens: Any) -> int:
        self._changed()
        return int(self._hf.add_special_tokens(tokens))

    def train(self, *args: Any, **kwargs: Any) -> Any:
        self._changed()
        return self._hf.train(*args, **kwargs)

    def train_from_iterator(self, *args: Any, **kwargs: Any) -> Any:
        self._changed()
        return self._hf.train_from_iterator(*args, **kwargs)

    # ---- bpekit's plan --------------------------------------------------------------

    def _current(self) -> Plan | None:
        """bpekit's plan for the wrapped tokenizer as it is now, or None (warned)."""
        key = state_key(self._hf)
        if self._key is None or key != self._key:
            made = make_plan(self._hf)
            self._plan, self._why = (made, "") if isinstance(made, Plan) else (None, made)
            self._key = key
        if self._plan is None:
            warn_once(self._why)
        return self._plan

    # ---- encoding -------------------------------------------------------------------

    def encode(
        self,
        sequence: Any,
        pair: Any = None,
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
    ) -> Any:
        if pair is None and not is_pretokenized and isinstance(sequence, str):
            found = self._encode([sequence], add_special_tokens)
            if found is not None:
                return found[0]
        elif pair is not None:
            warn_once("pairs of sequences (text_pair)")
        elif is_pretokenized:
            warn_once("pre-tokenized input (is_split_into_words=True)")
        return self._hf.encode(sequence, pair, is_pretokenized, add_special_tokens)

    def encode_batch(self, input: Any, is_pretokenized: bool = False, add_special_tokens: bool = True) -> Any:
        if is_pretokenized:
            warn_once("pre-tokenized input (is_split_into_words=True)")
        elif isinstance(input, list | tuple):
            texts = list(input)
            if all(isinstance(t, str) for t in texts):
                found = self._encode(texts, add_special_tokens)
                if found is not None:
                    return found
            else:
                warn_once("pairs of sequences (text_pair)")
        return self._hf.encode_batch(
            input, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens
        )

    def _encode(self, texts: list[str], add_special: bool) -> list[Encoding] | None:
        """The encodings of ``texts`` on bpekit, or None where it cannot give
        ``tokenizers``' (warned)."""
        plan = self._current()
        if plan is None:
            return None
        hf = self._hf
        trunc, pad, split = hf.truncation, hf.padding, bool(hf.encode_special_tokens)
        truncation = None
        if trunc is not None:
            added = plan.template.added if add_special else 0
            room = trunc["max_length"] - added
            why = ""
            if trunc["strategy"] == "only_second":
                why = "truncation='only_second' of one sequence"
            elif room < 0:
                why = "a max_length below the count of special tokens the template adds"
            elif room > 0 and trunc["stride"] >= room:
                why = "a stride not below max_length less the special tokens"
            if why:
                warn_once(why)
                return None
            truncation = Truncation(trunc["max_length"], trunc["stride"], trunc["direction"] == "left")
        padding = None
        if pad is not None:
            padding = Padding(
                pad["length"],
                pad["pad_to_multiple_of"],
                pad["direction"] == "left",
                pad["pad_id"],
                pad["pad_type_id"],
                pad["pad_token"],
            )
        core = plan.tok._core
        allowed: list[str] | None = [] if split else None
        try:
            if len(texts) == 1:
                seqs = [core.encode(texts[0], allowed, [])]
            else:
                seqs = core.encode_batch(texts, allowed, [], _threads())
        except UnicodeEncodeError:
            return None  # lone surrogates: tokenizers raises its own error
        settings = (trunc, pad, split)
        batch = Batch(
            plan.template,
            add_special,
            padding,
            lambda: _offsets_of(plan.tok, texts, allowed, add_special),
            lambda: self._twins(texts, add_special, settings),
            _window_first(plan.tok, add_special) if truncation is not None else None,
        )
        return encodings(seqs, batch, truncation)

    def _twins(self, texts: list[str], add_special: bool, settings: tuple[Any, Any, bool]) -> list[Any]:
        """``tokenizers``' encodings of a call made earlier, with that call's settings
        (restored after)."""
        hf = self._hf
        trunc, pad, split = settings
        now = (hf.truncation, hf.padding, hf.encode_special_tokens)
        try:
            _configure(hf, trunc, pad, split)
            return list(hf.encode_batch(texts, add_special_tokens=add_special))
        finally:
            _configure(hf, *now)

    # ---- decoding -------------------------------------------------------------------

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        plan = self._current()
        if plan is not None and plan.decode_ok:
            try:
                listed = list(ids)
                if listed and not 0 <= min(listed) <= max(listed) < plan.n_ids:
                    raise ValueError  # tokenizers skips ids it lacks; bpekit's extra bytes
                if skip_special_tokens and plan.special_ids:
                    skip = plan.special_ids
                    listed = [i for i in listed if i not in skip]
                return plan.tok.decode(listed)
            except (KeyError, TypeError, ValueError, OverflowError):
                pass
        return str(self._hf.decode(ids, skip_special_tokens=skip_special_tokens))

    def decode_batch(self, sequences: Any, skip_special_tokens: bool = True) -> list[str]:
        return [self.decode(ids, skip_special_tokens=skip_special_tokens) for ids in sequences]


#: The backend last pickled in this process for each plan's token, with the process's
#: id: a child forked afterwards finds there the backend it inherited (``_restored``).
#: Nothing of this goes into the pickle, which stays the same in every process (datasets
#: names a map's cache by it).
_LIVE: dict[str, tuple[int, weakref.ref[Backend]]] = {}


def _gone(token: str, ref: weakref.ref[Backend]) -> None:
    """Drops ``_LIVE``'s entry of a backend freed, unless a newer one took its place."""
    entry = _LIVE.get(token)
    if entry is not None and entry[1] is ref:
        _LIVE.pop(token, None)


def _settings(hf: Any) -> tuple[Any, ...]:
    """All of ``hf``'s state that its JSON holds, cheaply: ``state_key`` and the
    truncation, padding and special-token settings that transformers sets per call."""
    return (state_key(hf), repr(hf.truncation), repr(hf.padding), bool(hf.encode_special_tokens))


def _restored(data: str, token: str | None) -> Backend:
    """A backend unpickled, with the plan of ``token`` where this process has it. In a
    process forked from one that pickled it, the first time, it takes the
    ``tokenizers.Tokenizer`` of the backend this process inherited, where that one
    pickles to this same JSON: the inherited backend makes its own again from the JSON
    if it is ever used here, so the two share nothing, as copies do."""
    import tokenizers

    entry = _LIVE.pop(token, None) if token is not None else None
    if token is not None and entry is not None:
        inherited = entry[1]()
        kept = inherited._json if inherited is not None else None
        if entry[0] == os.getpid():
            _LIVE.setdefault(token, entry)  # this process's own: a copy is made below
        elif inherited is not None and kept is not None and kept[1] == data:
            hf = inherited._hf
            # encode_special_tokens is not in the JSON: a copy has it off.
            if not hf.encode_special_tokens and kept[0] == _settings(hf):
                inherited._hf = data
                backend = Backend(hf)
                backend._plan, backend._why, backend._key, backend._json = (
                    inherited._plan,
                    inherited._why,
                    inherited._key,
                    kept,
                )
                return backend
    hf = tokenizers.Tokenizer.from_str(data)
    backend = Backend(hf)
    plan = PLANS.get(token) if token is not None else None
    if plan is not None:
        backend._plan, backend._key = plan, state_key(hf)
    return backend


def _offsets_of(tok: Any, texts: list[str], allowed: list[str] | None, add_special: bool) -> list[Any] | None:
    """Each text's offsets, of its own ids (the template's come from the encoding), as
    ``Tokenizer.encode_batch_with_offsets`` makes them, with the call's special-token
    rule; None where the core refuses them (tokenizers' then, with its reason)."""
    from bpekit import _offsets

    trim = tok._trim(add_special)
    try:
        found = _offsets.on_texts(tok._core.encode_batch_with_offsets, texts, allowed, [], _threads(), trim)
    except ValueError as e:
        warn_once(f"offsets (return_offsets_mapping=True): {e}")
        return None
    return [offsets for _, offsets in found]


WindowFirst = Callable[[int, tuple[int, int]], tuple[int, int] | None]


def _window_first(tok: Any, add_special: bool) -> WindowFirst | None:
    """Where ``tokenizers``' ByteLevel post-processor trims with ``add_prefix_space``,
    it keeps the one leading space of each encoding's first token (index 0), that of a
    window cut from a longer text too; the whole text's offsets trimmed it there. The
    function gives a window's first token its offsets from its id and the trimmed ones
    (None for an added token: its string is the text it matched, which ``tokenizers``'
    own encoding has); None where nothing differs (no such trim, or a template's token
    first)."""
    trim = tok._trim(add_special)
    if trim is None or not trim[0] or trim[1] != 0:
        return None
    added = {t.get("id") for t in tok._hf.data.get("added_tokens", [])}

    def first(token: int, span: tuple[int, int]) -> tuple[int, int] | None:
        if token in added:
            return None
        # A byte-level token's only whitespace character is the space's ("Ġ").
        data = tok.decode_single_token_bytes(token)
        if len(data) - len(data.lstrip(b" ")) != 1:
            return span  # tokenizers keeps a single space only
        start, end = span
        # A lone " " was trimmed to (end, end); kept, its end is trimmed to its start.
        return (end - 1, end - 1) if data == b" " else (start - 1, end)

    return first


def _configure(hf: Any, trunc: dict[str, Any] | None, pad: dict[str, Any] | None, split: bool) -> None:
    if trunc is None:
        hf.no_truncation()
    else:
        hf.enable_truncation(**trunc)
    if pad is None:
        hf.no_padding()
    else:
        hf.enable_padding(**{k: v for k, v in pad.items() if k != "length" or v is not None})
    hf.encode_special_tokens = split
