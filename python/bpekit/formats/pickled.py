"""A tokenizer's pickled state: what rebuilds its core encoder, as plain data.

Not the native encoder, which cannot be pickled, and not file paths: its tokens, merges
(or ranks), special tokens in their order, pattern, name and defaults, so that a
tokenizer goes to ``multiprocessing`` workers and ``datasets.map(num_proc=...)`` whether
or not the other process has its files. A tokenizer read from ``tokenizer.json`` keeps
that document instead (its normalizers and added-token flags live nowhere else).

>>> from bpekit import _core
>>> core = _core.Encoder.from_merges([(i, bytes([i])) for i in range(256)], [], ["<|e|>"])
>>> state = tokenizer_state(Loaded(core, "tiny", "all"))
>>> loaded_from_state(state).core.encode("hi<|e|>")
[104, 105, 256]
"""

from __future__ import annotations

from typing import Any

from bpekit import _core
from bpekit.formats.hf_load import read_hf_data
from bpekit.formats.parts import Loaded

__all__ = ["STATE_VERSION", "loaded_from_state", "tokenizer_state"]

#: Bumped when what the state holds changes: a state of another version is refused,
#: never misread.
STATE_VERSION = 1


def tokenizer_state(parts: Loaded) -> dict[str, Any]:
    """The state of a tokenizer made of ``parts``."""
    core = parts.core
    if parts.hf is not None:
        return {"version": STATE_VERSION, "name": parts.name, "hf": parts.hf.data}
    specials = core.special_tokens()
    state: dict[str, Any] = {
        "version": STATE_VERSION,
        "name": parts.name,
        "pattern": core.pattern,
        "default_allowed": parts.default_allowed,
        "special_tokens": specials,
    }
    vocab = core.vocab()
    if core.is_ranks:
        # The ordinary tokens: every id but those of special tokens, except where a
        # special token shares an ordinary token's id (same bytes): that is a rank too.
        only_special = {i for t, i in specials if core.token_id(t.encode("utf-8")) != i}
        state["ranks"] = {b: i for i, b in vocab.items() if i not in only_special}
    else:
        # The whole vocab, special tokens included, so each special token finds its
        # id there rather than being appended again.
        state["vocab"] = vocab
        state["merges"] = core.merges()
    return state


def loaded_from_state(state: dict[str, Any]) -> Loaded:
    """The parts that ``state`` (of ``tokenizer_state``) rebuilds."""
    if state.get("version") != STATE_VERSION:
        raise ValueError(
            f"this pickled Tokenizer has state version {state.get('version')!r}; "
            f"this bpekit reads version {STATE_VERSION} (pickle it again with this version)"
        )
    if "hf" in state:
        return read_hf_data(state["hf"], name=state["name"])
    specials = [(str(t), int(i)) for t, i in state["special_tokens"]]
    if "ranks" in state:
        core = _core.Encoder.from_ranks(list(state["ranks"].items()), specials, state["pattern"])
    else:
        core = _core.Encoder.from_merges(
            list(state["vocab"].items()), state["merges"], [t for t, _ in specials], state["pattern"]
        )
    return Loaded(core, state["name"], state["default_allowed"])
