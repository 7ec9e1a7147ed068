"""tiktoken's rules around each call of ``Tokenizer`` to the core encoder.

* ``allowed_special`` / ``disallowed_special``: the core is told which special tokens to
  recognise (``None``: all of them) and which to refuse; ``disallowed_special`` may also
  name strings that are no special token, which tiktoken refuses too: those are checked
  in Python (``policy``).
* A text with lone surrogates, which has no UTF-8: the core raises
  ``UnicodeEncodeError`` and the call is made again on the text as tiktoken reads it
  (``on_str``, ``on_texts``, ``stream_ids``; see ``bpekit._text_rules``), so texts
  without surrogates pay nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, Literal, NamedTuple, TypeVar

from bpekit import _core
from bpekit._text_rules import NO_OTHER_STRINGS, DisallowedStrings, split_high_surrogate, without_surrogates

T = TypeVar("T")

AllowedSpecial = Literal["all"] | Collection[str]


class Default:
    """The default of ``allowed_special``: which it is depends on how the tokenizer was
    made (all its special tokens for a CS336 tokenizer, none for an OpenAI encoding)."""

    def __repr__(self) -> str:
        return "<the tokenizer's default>"


DEFAULT = Default()


class Policy(NamedTuple):
    """What the core and Python check for one call."""

    #: The special tokens recognised, sorted; None for all of them.
    allowed: list[str] | None
    #: The special tokens whose text the core refuses.
    disallowed: list[str]
    #: The other strings refused, checked in Python (usually none).
    others: DisallowedStrings


def policy(
    special_tokens: Mapping[str, int],
    default_allowed: AllowedSpecial,
    allowed_special: AllowedSpecial | Default,
    disallowed_special: AllowedSpecial,
) -> Policy:
    """tiktoken's rules for a tokenizer with ``special_tokens`` whose default of
    ``allowed_special`` is ``default_allowed``.

    >>> specials = {"<|a|>": 5, "<|b|>": 6}
    >>> policy(specials, "all", DEFAULT, "all")[:2]
    (None, [])
    >>> policy(specials, frozenset(), {"<|a|>"}, "all")[:2]
    (['<|a|>'], ['<|b|>'])
    """
    allowed = default_allowed if isinstance(allowed_special, Default) else allowed_special
    if allowed == "all":
        allowed_set = frozenset(special_tokens)
    elif isinstance(allowed, str):
        raise TypeError(f'allowed_special must be "all" or a set of strings, not {allowed!r}')
    else:
        allowed_set = frozenset(allowed)
    if disallowed_special == "all":
        disallowed = frozenset(special_tokens) - allowed_set
    elif not disallowed_special:
        disallowed = frozenset()  # tiktoken skips the check for any empty value
    elif isinstance(disallowed_special, str):
        raise TypeError(f'disallowed_special must be "all" or a set of strings, not {disallowed_special!r}')
    else:
        disallowed = frozenset(disallowed_special)
    names = None if allowed_set >= special_tokens.keys() else sorted(allowed_set)
    if disallowed <= special_tokens.keys():
        return Policy(names, sorted(disallowed), NO_OTHER_STRINGS)
    # Other strings too: all are checked here, in one search, so that the leftmost
    # match is the one reported, as in tiktoken.
    return Policy(names, [], DisallowedStrings(disallowed))


def on_str(encode: Callable[..., T], text: str, *args: Any) -> T:
    """``encode(text, *args)``, made again on ``text`` as tiktoken reads it when it has
    lone surrogates."""
    try:
        return encode(text, *args)
    except UnicodeEncodeError:
        return encode(without_surrogates(text), *args)


def on_texts(encode: Callable[..., T], texts: list[str], *args: Any) -> T:
    """``encode(texts, *args)``, made again on every text as tiktoken reads it when some
    text has lone surrogates."""
    try:
        return encode(texts, *args)
    except UnicodeEncodeError:
        return encode([without_surrogates(t) for t in texts], *args)


def stream_ids(
    stream: _core.StreamEncoder, chunks: Iterable[str], others: DisallowedStrings
) -> Iterator[int]:
    """The ids of the joined ``chunks``, fed to ``stream`` one by one. A high surrogate
    that ends a chunk waits for the next, which may start with its low half (a pair
    split between chunks is one character of the joined text)."""
    held = ""
    for chunk in chunks:
        if not isinstance(chunk, str):
            raise TypeError(f"encode_iterable wants str items, got {type(chunk).__name__}")
        others.check_next(chunk)
        chunk, held = held + chunk, ""
        try:
            ids = stream.feed(chunk)
        except UnicodeEncodeError:
            chunk, held = split_high_surrogate(chunk)
            ids = stream.feed(without_surrogates(chunk))
        yield from ids
    if held:
        yield from stream.feed(without_surrogates(held))
    yield from stream.finish()
