"""A tokenizer as the formats see it: the core encoder (``bpekit._core.Encoder``, which
holds the vocabulary, merges or ranks, special tokens and pattern) and the plain data
beside it (a name, which special tokens ``encode`` allows by default, and what a
``tokenizer.json`` adds).

Readers make ``Loaded`` parts and writers read a ``HoldsEncoder``; ``bpekit.Tokenizer``,
a layer above, is built from the one and is the other. So no format needs the
``Tokenizer`` class, and a new format is written against the core alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from bpekit import _core
from bpekit._encode_rules import AllowedSpecial

__all__ = ["HfExtras", "HoldsEncoder", "Loaded"]


@dataclass
class HfExtras:
    """What a tokenizer read from ``tokenizer.json`` keeps besides its encoder."""

    #: The document as read (``save(format="hf")`` writes it back).
    data: dict[str, Any]
    #: Ids the post-processor puts before and after a text (``add_special_tokens``).
    prefix: list[int] = field(default_factory=list)
    suffix: list[int] = field(default_factory=list)
    #: The added tokens marked ``special``, by content.
    special: dict[str, int] = field(default_factory=dict)
    #: The ``ByteLevel`` post-processor's ``trim_offsets`` where it trims:
    #: ``(add_prefix_space, after_template)``, ``after_template`` when a template before
    #: it has put its ids in first (offsets only).
    trim: tuple[bool, bool] | None = None


class Loaded(NamedTuple):
    """A tokenizer as a reader makes it; ``Tokenizer`` wraps these parts."""

    core: _core.Encoder
    name: str
    #: ``allowed_special``'s default: ``"all"`` (CS336 and ``tokenizer.json``
    #: tokenizers) or none (tiktoken's encodings).
    default_allowed: AllowedSpecial
    hf: HfExtras | None = None


class HoldsEncoder(Protocol):
    """A tokenizer as the writers read it: its core encoder, its name and, when it was
    read from a ``tokenizer.json``, that document. ``bpekit.Tokenizer`` is one."""

    @property
    def name(self) -> str: ...

    @property
    def _core(self) -> _core.Encoder: ...

    @property
    def _hf(self) -> HfExtras | None: ...
