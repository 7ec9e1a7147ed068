"""Where the tests' offline data lives, and tiktoken built from it (never the network).

The data is ``../shared/data`` beside the repository; a test that needs a missing part
is skipped saying what is missing. ``conftest.py`` re-exports these helpers and points
``$BPEKIT_ENCODINGS`` at the data's ``encodings/`` (``use_shared_encodings``), since
``bpekit.get_encoding`` looks in no developer folder of its own.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

# tiktoken's own r50k pattern (gpt2 and r50k_base), to compare against the real thing;
# bpekit's gpt2 pattern is CS336's, which splits every text the same way.
TIKTOKEN_R50K = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""


def data_path(*parts: str) -> Path:
    """``../shared/data/<parts>``; the test is skipped (with the reason) when it is missing."""
    p = DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"test data {p} is missing (expected the shared data next to the repository)")
    return p


def use_shared_encodings() -> None:
    """Sets ``$BPEKIT_ENCODINGS`` to the shared rank files when it is unset and they
    exist, for this process and every subprocess it starts."""
    encodings = DATA / "encodings"
    if not os.environ.get("BPEKIT_ENCODINGS") and encodings.is_dir():
        os.environ["BPEKIT_ENCODINGS"] = str(encodings)


def read_text_file(path: Path) -> str:
    """A data file's text; ``.jsonl`` files give their documents' texts joined by ``<|endoftext|>``."""
    if path.suffix == ".jsonl":
        docs = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                docs.append(row.get("text", ""))
        return "<|endoftext|>".join(docs)
    return path.read_text(encoding="utf-8")


def build_tiktoken(name: str, enc_dir: Path):
    """tiktoken's encoding ``name`` (any of ``bpekit.encodings.ENCODINGS``) with its
    pattern and special tokens, its ranks read from the rank files in ``enc_dir``."""
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe

    from bpekit.encodings import ENCODINGS, TIKTOKEN_PATTERNS

    spec = ENCODINGS[name]
    if name == "gpt2":
        ranks = data_gym_to_mergeable_bpe_ranks(
            str(enc_dir / "gpt2_vocab.bpe"), str(enc_dir / "gpt2_encoder.json")
        )
    else:
        ranks = load_tiktoken_bpe(str(enc_dir / spec.files[0].names[0]))
    pat = TIKTOKEN_R50K if spec.pattern == "gpt2" else TIKTOKEN_PATTERNS[spec.pattern]
    return tiktoken.Encoding(
        name=name, pat_str=pat, mergeable_ranks=ranks, special_tokens=spec.special_tokens
    )


@functools.cache
def tiktoken_encoding(name: str):
    """tiktoken's encoding ``name`` from the shared rank files; skips without tiktoken or them."""
    pytest.importorskip("tiktoken")
    return build_tiktoken(name, data_path("encodings"))


@functools.cache
def bpekit_encoding(name: str):
    """``bpekit.get_encoding(name)`` (found through ``$BPEKIT_ENCODINGS``); skips
    without the shared rank files."""
    import bpekit

    data_path("encodings")
    return bpekit.get_encoding(name)
