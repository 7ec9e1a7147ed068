"""The scanners' Unicode tables (src/pretokenize/unicode_tables.rs) equal what the pinned
``regex`` package reports, for every code point 0..0x10FFFF."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import regex

from bpekit import _core

ROOT = Path(__file__).resolve().parents[2]

# Bit i of _core._char_classes() is the i-th class here.
CLASSES = [r"\p{L}", r"\p{N}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}", r"\s"]


def regex_classes() -> np.ndarray:
    """Per code point, the bitmask of CLASSES that ``regex`` matches (one pass per class)."""
    every = "".join(map(chr, range(0x110000)))
    want = np.zeros(0x110000, dtype=np.uint16)
    for bit, cls in enumerate(CLASSES):
        for m in regex.finditer(cls + "+", every):
            want[m.start() : m.end()] |= 1 << bit
    return want


def test_regex_is_the_pinned_unicode_16_version():
    assert version("regex") == "2024.11.6"
    assert _core.UNICODE_VERSION == "16.0.0"


def test_tables_equal_regex_for_every_code_point():
    got = np.frombuffer(_core._char_classes(), dtype="<u2")
    want = regex_classes()
    assert got.shape == want.shape == (0x110000,)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [f"U+{cp:04X}: tables {got[cp]:#x}, regex {want[cp]:#x}" for cp in bad[:20]]


def test_whitespace_is_the_white_space_property():
    ws = np.nonzero(np.frombuffer(_core._char_classes(), dtype="<u2") & (1 << 8))[0].tolist()
    assert len(ws) == 25
    assert [*range(9, 14), 0x20, 0x85, 0xA0, 0x1680] == ws[:9]
    # Python's str.isspace() also says yes to these; regex's \s (White_Space) does not.
    for cp in [0x1C, 0x1D, 0x1E, 0x1F, 0x180E, 0x200B, 0xFEFF]:
        assert cp not in ws


def test_char_classes_takes_a_range():
    assert _core._char_classes(0x41, 0x43) == bytes([0x05, 0x00, 0x05, 0x00])  # A, B: \p{L} and \p{Lu}
    assert _core._char_classes(5, 5) == b""
    assert len(_core._char_classes(0x10FFFF, 2**32 - 1)) == 2  # capped at U+10FFFF


def test_generated_file_is_up_to_date():
    script = ROOT / "scripts" / "gen_unicode_tables.py"
    done = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
