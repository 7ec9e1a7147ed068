"""minbpe ``.model`` files that are damaged or hostile: refused in one line naming the
file and line, before memory is taken for tokens (the length of every token is known
from the merge lines alone)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bpekit.minbpe import MAX_MODEL_TOKEN_BYTES, BasicTokenizer, RegexTokenizer

ROOT = Path(__file__).resolve().parents[2]


def model(tmp_path: Path, merges: list[tuple[int, int]], specials: str = "0\n") -> Path:
    path = tmp_path / "m.model"
    path.write_text("minbpe v1\n\n" + specials + "".join(f"{a} {b}\n" for a, b in merges))
    return path


# Loads a model under an address-space limit of 512 MB above the interpreter's size:
# building the tokens a hostile file asks for is a MemoryError there, not gigabytes.
LOAD_BOUNDED = """
import resource, sys
from bpekit.minbpe import BasicTokenizer
import bpekit.tokenizer

with open("/proc/self/statm") as f:
    size = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (size + (512 << 20), resource.RLIM_INFINITY))
try:
    BasicTokenizer().load(sys.argv[1])
    print("loaded")
except ValueError as e:
    print("ValueError", e)
except MemoryError as e:
    print("MemoryError", e)
"""


def load_bounded(path: Path) -> str:
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(LOAD_BOUNDED), str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env=dict(os.environ),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {path} ran past 120 s")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
def test_doubling_merges_are_refused_before_any_token_is_made(tmp_path: Path) -> None:
    """45 lines make a token of 2**45 bytes: 45 * 5 bytes of file asking for 64 TB."""
    path = model(tmp_path, [(97, 97)] + [(i, i) for i in range(256, 300)])
    out = load_bounded(path)
    # "aa" is 2 bytes, each line doubles: the line whose tokens pass the bound.
    line = next(n for n in range(1, 46) if 256 + sum(2**k for k in range(1, n + 1)) > MAX_MODEL_TOKEN_BYTES)
    assert out.startswith(f"ValueError {path}, line {3 + line}: "), out
    assert "bytes, more than the 268,435,456" in out and "\n" not in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
def test_a_long_chain_of_merges_is_refused(tmp_path: Path) -> None:
    """30K merges each one byte longer than the last: 260 KB of file, 450 MB of
    tokens (1.76 GB in Python)."""
    path = model(tmp_path, [(97, 97)] + [(256 + k, 97) for k in range(30_000)])
    assert path.stat().st_size < 300_000
    out = load_bounded(path)
    assert out.startswith(f"ValueError {path}, line "), out


def test_a_model_within_the_bound_loads(tmp_path: Path) -> None:
    path = model(tmp_path, [(97, 97)] + [(256 + k, 97) for k in range(2_000)])
    tok = BasicTokenizer()
    tok.load(path)
    assert len(tok.vocab[256 + 2_000]) == 2_002
    assert tok.decode([256 + 2_000, 256]) == "a" * 2_004


@pytest.mark.parametrize("later", [False, True])
def test_a_repeated_merge_line_is_refused_naming_both_lines(tmp_path: Path, later: bool) -> None:
    """minbpe's own load overwrites the pair's id, leaving id 256 unmade: a later line
    that names it was a bare ``KeyError: 256``, and without one the ids were shifted."""
    merges = [(97, 97), (98, 98), (97, 97)] + ([(256, 257)] if later else [])
    path = model(tmp_path, merges)
    with pytest.raises(ValueError) as info:
        BasicTokenizer().load(path)
    assert str(info.value) == (
        f"{path}, line 6: merge (97, 97) is also line 4 (each pair is merged once; is the file damaged?)"
    )


def test_a_file_that_is_not_utf8_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.model"
    path.write_bytes(b"minbpe v1\n\\p{L}+\n1\n<|\xff|> 300\n97 97\n")
    with pytest.raises(ValueError) as info:
        RegexTokenizer().load(path)
    assert type(info.value) is ValueError
    assert str(info.value) == f"{path}, line 4: not UTF-8 (byte 21); a minbpe .model file is UTF-8 text"


def test_saved_models_load_back_with_any_line_ending(tmp_path: Path) -> None:
    tok = RegexTokenizer()
    tok.train("hello world, hello there " * 20, 256 + 10)
    tok.register_special_tokens({"<|end|>": 300})
    tok.save(str(tmp_path / "t"))
    text = (tmp_path / "t.model").read_text()
    for ending in ["\n", "\r\n"]:
        path = tmp_path / "u.model"
        path.write_bytes(text.replace("\n", ending).encode())
        back = RegexTokenizer()
        back.load(path)
        assert back.merges == tok.merges and back.special_tokens == tok.special_tokens
        assert back.pattern == tok.pattern
