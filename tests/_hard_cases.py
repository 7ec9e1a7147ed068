"""The hard cases of the pre-tokenizer patterns, as pools of text atoms.

Shared by tests/pretokenize/test_pretokenize.py (hypothesis) and scripts/fuzz_pretokenize.py
(long random runs), so both weight the same cases.
"""

# Every White_Space code point (regex's and tiktoken's `\s`).
WHITESPACE = [chr(c) for c in [*range(9, 14), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B)]] + [
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
]
# Look like whitespace but are not: Python's str.isspace adds U+001C-U+001F; U+180E,
# U+200B, U+FEFF and U+2060 are format characters.
NOT_WHITESPACE = ["\x1c", "\x1d", "\x1e", "\x1f", "\u180e", "\u200b", "\ufeff", "\x00", "\x7f", "\u2060"]
MARKS = [
    "\u0301",
    "\u0308",
    "\u0903",
    "\u20dd",
    "\u200d",
    "\ufe0f",
    "\ufe0e",
    "\U000e0100",
    "\u3099",
    "\u0e31",
]
# Letters incl. the long s, dotted/dotless i and the Kelvin sign (case folding), title case (ǅ ǈ ᾈ),
# a modifier letter (ʰ), CJK, a ligature, a circled letter (So: not a letter), mathematical bold A,
# Cyrillic, Hebrew, Arabic, Devanagari.
LETTERS = list("abcdefghilmorstuvxyzABCDELMORSTVZéßſİı\u212aΩωǅǈᾈʰー中日ㄱアﬁⓐдЖאبक\U0001d400")
# Digits and numbers of many scripts: Nd, superscripts and fractions (No), Roman numerals (Nl).
DIGITS = list("0123456789٣۴५৩５²³¹½Ⅻⅻ〇𝟙\U0001f10a")
PUNCT = list('!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~’‘“—…😀👩🇺❤€')
SNIPPETS = [
    "'s",
    "'S",
    "'t",
    "'T",
    "'d",
    "'D",
    "'m",
    "'M",
    "'ll",
    "'LL",
    "'Ll",
    "'lL",
    "'ve",
    "'VE",
    "'re",
    "'Re",
    "'ſ",
    "’s",
    "’ll",
    "'",
    "''",
    "\r\n",
    "\r\n\r\n",
    "\r",
    "\n\n",
    "//",
    "!/",
    " /",
    "/\n",
    "👨\u200d👩\u200d👧",
    "e\u0301",
    "don't",
    "DON'T",
    "I'm",
    "camelCase",
    "HTTPServer",
    "ǅungla",
]
ATOMS = WHITESPACE + NOT_WHITESPACE + MARKS + LETTERS + DIGITS + PUNCT + SNIPPETS
