"""Compare bpekit's ids with tiktoken's on any text file (tiktoken built offline).

    python scripts/tiktoken_parity.py FILE [--encoding o200k_base] [--max-mb 20]

Prints the first difference, if any. Needs tiktoken and ../shared/data/encodings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", type=Path)
    p.add_argument("--encoding", default="o200k_base", choices=["gpt2", "cl100k_base", "o200k_base"])
    p.add_argument("--max-mb", type=float, default=20.0)
    args = p.parse_args()
    from conftest import bpekit_encoding, tiktoken_encoding

    text = args.file.read_text(encoding="utf-8")[: int(args.max_mb * 1e6)]
    expected = tiktoken_encoding(args.encoding).encode(text, allowed_special="all")
    got = bpekit_encoding(args.encoding).encode(text, allowed_special="all")
    if got == expected:
        print(f"{args.file}: {len(got):,} tokens, identical")
        return 0
    i = next(
        (i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b),
        min(len(got), len(expected)),
    )
    print(f"{args.file}: differ at token {i}: tiktoken {expected[i : i + 5]} bpekit {got[i : i + 5]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
