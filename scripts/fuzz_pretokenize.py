"""Long-running differential fuzzing of the pre-tokenizer scanners against ``regex``.

Generates random strings weighted toward the hard cases (every White_Space code point and
its lookalikes, marks, ZWJ and variation selectors, digits and letters of many scripts,
title case, contractions in every case, CR/LF, runs of whitespace, slashes after
punctuation, random code points), and checks that ``bpekit.pretokenize(text, name)``
equals ``regex.findall(pattern, text)`` for gpt2, cl100k and o200k.

Usage: .venv/bin/python scripts/fuzz_pretokenize.py [--seconds T] [--cases N] [--seed S]

Stops after T seconds or N cases per pattern, whichever comes first; prints the first
failing input (shrunk to a short reproducer) and exits 1, or prints a summary and exits 0.
See docs/fuzzing.md for the runs made so far.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import regex

import bpekit
from bpekit import patterns

NAMES = ["gpt2", "cl100k", "o200k"]

# The same weighted hard cases as tests/pretokenize/test_pretokenize.py.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _hard_cases import DIGITS, LETTERS, MARKS, NOT_WHITESPACE, PUNCT, SNIPPETS, WHITESPACE  # noqa: E402

POOLS = [WHITESPACE, NOT_WHITESPACE, MARKS, LETTERS, DIGITS, PUNCT, SNIPPETS, [" ", "  ", "a", "'", "\n"]]


def random_atom(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.08:
        return rng.choice(WHITESPACE) * rng.randint(1, 8)
    if r < 0.16:
        while True:
            cp = rng.randrange(0x110000)
            if not 0xD800 <= cp < 0xE000:
                return chr(cp)
    return rng.choice(rng.choice(POOLS))


def random_text(rng: random.Random) -> str:
    n = rng.choice([rng.randint(0, 8), rng.randint(0, 40), rng.randint(0, 300)])
    return "".join(random_atom(rng) for _ in range(n))


def differs(compiled, name: str, text: str) -> bool:
    return bpekit.pretokenize(text, name) != compiled.findall(text)


def shrink(compiled, name: str, text: str) -> str:
    """Drops characters while the difference remains: a short reproducer."""
    changed = True
    while changed:
        changed = False
        for i in range(len(text)):
            shorter = text[:i] + text[i + 1 :]
            if differs(compiled, name, shorter):
                text, changed = shorter, True
                break
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--cases", type=int, default=10**9, help="per pattern")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    compiled = {name: regex.compile(patterns.resolve(name)) for name in NAMES}
    start = time.monotonic()
    cases = chars = 0
    while cases < args.cases and time.monotonic() - start < args.seconds:
        text = random_text(rng)
        for name in NAMES:
            if differs(compiled[name], name, text):
                small = shrink(compiled[name], name, text)
                print(f"MISMATCH ({name}, seed {seed}, case {cases}): {small!r}")
                print(f"  scanner: {bpekit.pretokenize(small, name)!r}")
                print(f"  regex:   {compiled[name].findall(small)!r}")
                return 1
        cases += 1
        chars += len(text)
    elapsed = time.monotonic() - start
    print(
        f"ok: {cases:,} cases x {len(NAMES)} patterns ({chars:,} characters) in {elapsed:.0f} s, seed {seed}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
