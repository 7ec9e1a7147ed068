"""What tiktoken does to a text before encoding it, for the cases the core leaves to Python.

* Lone surrogates: a Python ``str`` may hold code points U+D800-U+DFFF, which have no
  UTF-8. tiktoken re-reads such a text as UTF-16 (``surrogatepass``, then ``replace``):
  a high surrogate followed by a low one becomes the character they encode, and any
  other surrogate becomes U+FFFD. The core reports such a text by raising
  ``UnicodeEncodeError``; callers then retry with :func:`without_surrogates`, so texts
  without surrogates pay nothing.
* ``disallowed_special`` may name any strings, not only special tokens: tiktoken
  refuses a text containing any of them. The core checks special tokens; when other
  strings are named too, :class:`DisallowedStrings` checks them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

HIGH_SURROGATES = ("\ud800", "\udbff")


def without_surrogates(text: str) -> str:
    """Surrogates as tiktoken reads them: pairs joined, lone ones U+FFFD.

    >>> without_surrogates("a\\ud800b") == "a\\ufffdb"
    True
    >>> without_surrogates("\\ud83d\\ude00") == "\\U0001f600"
    True
    """
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def split_high_surrogate(chunk: str) -> tuple[str, str]:
    """``chunk`` without a high surrogate that ends it, and that surrogate (or "").

    For a stream of chunks: the surrogate waits for the next chunk, which may start
    with its low half (a pair split between chunks is one character of the joined
    text).

    >>> split_high_surrogate("ab\\ud83d") == ("ab", "\\ud83d")
    True
    """
    if chunk and HIGH_SURROGATES[0] <= chunk[-1] <= HIGH_SURROGATES[1]:
        return chunk[:-1], chunk[-1]
    return chunk, ""


def disallowed_error(token: str) -> ValueError:
    """tiktoken's error for a disallowed special token (word for word)."""
    return ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )


class DisallowedStrings:
    """The strings ``disallowed_special`` names, when not all are special tokens.

    Texts are checked as they arrive; the last ``longest - 1`` characters of each are
    kept, so a string split between two chunks of a stream is found too.
    """

    def __init__(self, strings: Iterable[str]) -> None:
        ordered = sorted({s for s in strings if s}, key=lambda s: (-len(s), s))
        # Longest first: at the leftmost match, the longest string is reported.
        self._regex = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._keep = max(map(len, ordered), default=1) - 1
        self._tail = ""

    def __bool__(self) -> bool:
        return self._regex is not None

    def check(self, text: str) -> None:
        """Raises tiktoken's ``ValueError`` if ``text`` holds one of the strings."""
        if self._regex is not None and (found := self._regex.search(text)):
            raise disallowed_error(found.group())

    def check_next(self, chunk: str) -> None:
        """``check`` for the next chunk of a stream (strings across chunks included)."""
        if self._regex is None:
            return
        self.check(self._tail + chunk)
        self._tail = (self._tail + chunk)[-self._keep :] if self._keep else ""


#: No strings to check (the usual case: ``disallowed_special`` names special tokens only).
NO_OTHER_STRINGS = DisallowedStrings(())
