"""How a token's invisible characters are shown, the same on the page and in a terminal:
token boundaries fall inside whitespace as often as inside words (``" the"``, ``"\\n\\n"``),
so spaces, tabs and newlines get visible marks, and control characters (which a terminal
would obey and a browser would drop) get the Unicode control pictures."""

from __future__ import annotations

import re

# Space: a middle dot; tab: an arrow, then the tab itself so that columns still line up;
# newline: a return arrow, then the line break itself.
_MARKS = {" ": "·", "\t": "→\t", "\n": "↵\n", "\r": "␍", "\xa0": "⍽", "\u2028": "↵\n", "\u2029": "¶\n"}

# Characters that are not seen as themselves: whitespace, C0 and C1 controls, DEL, and
# the zero-width characters and byte-order mark.
_INVISIBLE = re.compile("[\\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u2060\ufeff]+")


def _mark(ch: str) -> str:
    if ch in _MARKS:
        return _MARKS[ch]
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # U+2400 control pictures: ␀ ␁ ... ␟
    if code == 0x7F:
        return "␡"
    if ch.isspace():  # the other Unicode spaces (en space, ideographic space, ...)
        return "·"
    return f"<U+{code:04X}>"


def marked_runs(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into runs, each ``(shown, is_mark)``: ordinary text as it is, and
    each run of invisible characters as its marks.

    >>> marked_runs(" the\\n")
    [('·', True), ('the', False), ('↵\\n', True)]
    >>> marked_runs("a\\x1b[0m")
    [('a', False), ('␛', True), ('[0m', False)]
    """
    runs: list[tuple[str, bool]] = []
    at = 0
    for m in _INVISIBLE.finditer(text):
        if m.start() > at:
            runs.append((text[at : m.start()], False))
        runs.append(("".join(_mark(c) for c in m.group()), True))
        at = m.end()
    if at < len(text):
        runs.append((text[at:], False))
    return runs
