"""Named pre-tokenizer patterns: the regex text each name stands for.

``gpt2`` is CS336's ``PAT`` (GPT-2's pattern; tiktoken's r50k/p50k pattern behaves
identically); ``cl100k`` and ``o200k`` are tiktoken's patterns for cl100k_base and
o200k_base; ``llama3`` is cl100k's older, non-possessive form that Llama 3 and OLMo 2
ship. Pass a name or any regex wherever a ``pattern`` is taken; a regex that is
not one of these runs through the generic regex engine.

>>> import regex
>>> regex.findall(GPT2, "I'll go  now")
['I', "'ll", ' go', ' ', ' now']
"""

import re

GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

CL100K = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# cl100k's pattern before tiktoken made it possessive, as Llama 3 and OLMo 2 ship it:
# cl100k's pieces except for a final whitespace run that holds a line break.
LLAMA3 = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""
)

O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

NAMED: dict[str, str] = {
    "gpt2": GPT2,
    "r50k_base": GPT2,
    "p50k_base": GPT2,
    "cl100k": CL100K,
    "cl100k_base": CL100K,
    "llama3": LLAMA3,
    "o200k": O200K,
    "o200k_base": O200K,
}


def resolve(pattern: str) -> str:
    """The regex text of ``pattern``: a name from ``NAMED`` or the regex itself.

    >>> resolve("gpt2") == GPT2
    True
    """
    return NAMED.get(pattern, pattern)


# What a pattern name looks like: a bare word. As a regex such a word matches itself
# and no other text, which no pre-tokenizer wants, so one that is no name is a name
# mistyped ("gpt3", "GPT2", "o200k-base").
_NAME_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def unknown_name(pattern: str) -> bool:
    """Whether ``pattern`` looks like a pattern name but is none of ``NAMED``.

    >>> unknown_name("gpt3"), unknown_name("gpt2"), unknown_name(r"\\S+|\\s+")
    (True, False, False)
    """
    return pattern not in NAMED and _NAME_LIKE.fullmatch(pattern) is not None
