"""A ``tokenizer.json`` regex, written for Oniguruma (Ruby syntax: what ``tokenizers``
compiles ``Split`` and ``Replace`` patterns with), as a regex of the core's engine
(``fancy-regex`` over the ``regex`` crate) that matches the same text.

Most patterns read the same in both and come back unchanged (every pattern of the
files models ship that was tried). Where they part:

- ``^`` and ``$`` are always line anchors in Ruby syntax: ``(?m:^)``, ``(?m:$)``;
- Ruby's ``m`` flag is the dot-matches-newline one: ``(?s)``;
- ``\\w`` (and ``\\W``, ``\\b``, ``\\B``) lacks Join_Control in Oniguruma and, outside a
  bracket, has six Latin-1 numbers (``²`` is a word character there only);
- ``\\h`` is a hex digit, ``\\Z`` the end or before a final newline;
- POSIX brackets (``[[:alpha:]]``) are Unicode classes in Oniguruma, ASCII in ``regex``.

Each class spelled otherwise is checked against ``tokenizers`` on every code point
(``tests/formats/test_hf_onig.py``).

What has no counterpart here is refused (``ValueError``, one line): ``\\W`` or ``\\H``
inside a bracket, ``\\X``, ``\\R``, ``\\K``, ``\\G``, back-references by name or
number, Ruby's flags other than ``i``, ``m`` and ``x``, and a case-insensitive pattern
holding text that one character folds to (``ss``, which ``(?i)`` in Oniguruma matches
in ``ß``; the ``regex`` crate folds a character to one only).
"""

from __future__ import annotations

__all__ = ["rust_regex"]

#: Oniguruma's ``\w`` outside a bracket, as the inside of one: Unicode's Alphabetic,
#: Mark, Decimal_Number and Connector_Punctuation, and the Latin-1 numbers that are
#: not decimal (its table of the first 256 code points has ² ³ ¹ ¼ ½ ¾ as word
#: characters). The ``regex`` crate's ``\w`` has Join_Control (ZWNJ, ZWJ) too, and
#: not those six.
_WORD = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\xB2\xB3\xB9\xBC-\xBE"

#: Oniguruma's ``\w`` inside a bracket, which reads the Unicode table only: not those
#: six.
_WORD_IN_BRACKET = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}"

#: POSIX brackets -> the inside of a bracket, as Oniguruma reads them on Unicode text
#: (each checked on every code point, as ``_WORD``).
_POSIX = {
    "alnum": r"\p{Alphabetic}\p{Nd}",
    "alpha": r"\p{Alphabetic}",
    "ascii": r"\x00-\x7F",
    "blank": r"\p{Zs}\t",
    "cntrl": r"\p{Cc}",
    "digit": r"\p{Nd}",
    "graph": r"[^\s\p{Cc}\p{Cn}\p{Cs}]",
    "lower": r"\p{Lowercase}",
    "print": r"[^\p{Cc}\p{Cn}\p{Cs}\p{Zl}\p{Zp}\t\n\x0B\x0C\r\x85]",
    "punct": r"\p{P}\p{S}",
    "space": r"\s",
    "upper": r"\p{Uppercase}",
    "word": _WORD_IN_BRACKET,
    "xdigit": r"0-9A-Fa-f",
}

_REFUSED_ESCAPES = {
    "X": "\\X (an extended grapheme cluster)",
    "R": "\\R (a line break)",
    "K": "\\K (keep)",
    "G": "\\G (where the last match ended)",
    "k": "a named back-reference (\\k<...>)",
    "g": "a subexpression call (\\g<...>)",
}


def rust_regex(pattern: str) -> str:
    """``pattern`` (Oniguruma, Ruby syntax) as the core's engine must be given it to
    match what ``tokenizers`` matches; unchanged where nothing differs.

    >>> rust_regex(r"\\s+(?!\\S)|\\p{L}+")
    '\\\\s+(?!\\\\S)|\\\\p{L}+'
    >>> rust_regex(r"^[a-z]+$")
    '(?m:^)[a-z]+(?m:$)'
    >>> rust_regex("(?m).+")
    '(?s).+'
    """
    if "(?" in pattern and _folds_to_several(pattern):
        raise ValueError(
            "a case-insensitive pattern with text one character folds to (as 'ss' from 'ß') "
            "reads differently in Oniguruma"
        )
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0  # brackets open
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("ends with a lone backslash")
            e = pattern[i + 1]
            out.append(_escape(e, depth > 0))
            i += 2
            if e in "pP" and i < n and pattern[i] == "{":
                end = pattern.find("}", i)
                if end < 0:
                    raise ValueError(f"an unclosed \\{e}{{ at {i - 2}")
                name = pattern[i + 1 : end]
                if name.startswith("^"):  # Oniguruma's negation inside the braces
                    out[-1] = "\\P" if e == "p" else "\\p"
                    name = name[1:]
                out.append("{" + name + "}")
                i = end + 1
            continue
        if depth:
            if pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                if end < 0:
                    out.append(c)
                    i += 1
                    continue
                name = pattern[i + 2 : end]
                negated = name.startswith("^")
                inside = _POSIX.get(name[1:] if negated else name)
                if inside is None:
                    raise ValueError(f"the POSIX bracket [:{name}:] is not Oniguruma's")
                out.append(f"[^{inside}]" if negated else inside)
                i = end + 2
                continue
            if c == "[":
                depth += 1
                i = _open_bracket(pattern, i, out)
                continue
            if c == "]":
                depth -= 1
            out.append(c)
            i += 1
            continue
        if c == "[":
            depth = 1
            i = _open_bracket(pattern, i, out)
            continue
        if c == "^":
            out.append("(?m:^)")
        elif c == "$":
            out.append("(?m:$)")
        elif c == "(" and pattern.startswith("(?", i):
            i = _group(pattern, i, out)
            continue
        else:
            out.append(c)
        i += 1
    if depth:
        raise ValueError("an unclosed bracket")
    return "".join(out)


def _open_bracket(pattern: str, i: int, out: list[str]) -> int:
    """Copies the opening of the bracket at ``pattern[i]`` (``[``, ``[^``); returns where
    its items start. A ``]`` first is a literal in Oniguruma: escaped, so that it does
    not close the bracket."""
    out.append("[")
    i += 1
    if pattern.startswith("^", i):
        out.append("^")
        i += 1
    if pattern.startswith("]", i):
        out.append("\\]")
        i += 1
    return i


def _escape(e: str, in_bracket: bool) -> str:
    """The core's spelling of the escape ``\\e``."""
    if e in _REFUSED_ESCAPES:
        raise ValueError(f"{_REFUSED_ESCAPES[e]} reads differently in Oniguruma or has no counterpart")
    if e.isdigit() and e != "0":
        raise ValueError(f"the back-reference \\{e} is not supported")
    if e == "w":
        return _WORD_IN_BRACKET if in_bracket else f"[{_WORD}]"
    if e == "h":
        return "0-9A-Fa-f" if in_bracket else "[0-9A-Fa-f]"
    if e in "WH":
        if in_bracket:
            raise ValueError(f"\\{e} inside a bracket is not supported")
        return f"[^{_WORD}]" if e == "W" else "[^0-9A-Fa-f]"
    if e in "bB" and not in_bracket:
        word = f"[{_WORD}]"
        edge = f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"
        inside = f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"
        return edge if e == "b" else inside
    if e == "Z" and not in_bracket:
        return r"(?=\n?\z)"
    return "\\" + e


def _group(pattern: str, i: int, out: list[str]) -> int:
    """Copies the opening of the group at ``pattern[i:]`` (``(?``...), with Ruby's flags
    as the core spells them; returns where the group's body starts."""
    j = i + 2
    while j < len(pattern) and (pattern[j].isalpha() or pattern[j] == "-"):
        j += 1
    flags = pattern[i + 2 : j]
    if flags and j < len(pattern) and pattern[j] in ":)":
        for f in flags:
            if f not in "imx-":
                raise ValueError(f"the flag {f!r} of {pattern[i : j + 1]!r} is not Ruby's (i, m, x)")
        out.append("(?" + flags.replace("m", "s") + pattern[j])
        return j + 1
    out.append("(?")
    return i + 2


def _folds_to_several(pattern: str) -> bool:
    """Whether ``pattern`` has an ``i`` flag and holds a text that some character folds
    to in full case folding (``ß`` -> ``ss``): Oniguruma matches that character there."""
    import re

    if not re.search(r"\(\?[a-z]*i[a-z-]*[:)]", pattern):
        return False
    lowered = pattern.casefold()
    return any(target in lowered for target in _MULTI_FOLDS)


#: The texts of two or more characters that a character folds to in Unicode's full
#: case folding (``str.casefold``; ``tests/formats/test_hf_onig.py`` makes it again
#: from every code point: made here at each load, it took ~0.14 s).
_MULTI_FOLDS = frozenset(
    (
        "aʾ ff ffi ffl fi fl ẖ i̇ ǰ ss st ẗ ẘ ẙ ʼn άι ήι ᾶ ᾶι αι ῆ ῆι ηι ῒ "
        "ΐ ῗ ῖ ῤ ῢ ΰ ῧ ὐ ὒ ὔ ὖ ῦ ῶ ῶι ωι ώι եւ մե մի մխ մն վն ἀι "
        "ἁι ἂι ἃι ἄι ἅι ἆι ἇι ἠι ἡι ἢι ἣι ἤι ἥι ἦι ἧι ὠι ὡι ὢι ὣι ὤι ὥι ὦι ὧι ὰι ὴι ὼι "
    ).split()
)
