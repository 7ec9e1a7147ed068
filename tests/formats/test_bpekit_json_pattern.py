"""The "pattern" of bpekit.json: a pattern name or a regex loads; a name that is no
pattern name (a typo, the wrong case) is an error naming the file, from the API and the
command line, rather than a regex that matches almost nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import bpekit


def _set_pattern(folder: Path, pattern: str) -> None:
    import json

    config = json.loads((folder / "bpekit.json").read_text(encoding="utf-8"))
    config["pattern"] = pattern
    (folder / "bpekit.json").write_text(json.dumps(config), encoding="utf-8")


@pytest.mark.parametrize("name", ["gpt3", "GPT2", "o200k-base"])
def test_an_unknown_pattern_name_in_bpekit_json_is_an_error(tmp_path: Path, name: str) -> None:
    # Read as a regex, "gpt3" would match only "gpt3", and `bpekit encode` would write
    # 0 tokens for any other text, with exit status 0.
    folder = tmp_path / "tok"
    bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, []).save(folder)
    _set_pattern(folder, name)
    config = folder / "bpekit.json"
    message = f'{config}: "pattern" is {name!r}, which is no pattern name; give one of gpt2, r50k_base,'
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        bpekit.load_tokenizer(folder)
    with pytest.raises(ValueError, match=re.escape(message)):
        bpekit.Tokenizer.from_files(folder / "vocab.json", folder / "merges.txt")
    text = tmp_path / "t.txt"
    text.write_text("hello world")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bpekit.cli",
            "encode",
            str(text),
            "-t",
            str(folder),
            "-o",
            str(tmp_path / "o.npy"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "o.npy").exists()


def test_pattern_names_and_regexes_in_bpekit_json_still_load(tmp_path: Path) -> None:
    folder = tmp_path / "tok"
    bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, []).save(folder)
    for pattern, pieces in [("o200k_base", 2), ("gpt2", 2), (r"\S+|\s+", 3), ("[a-z]+|[^a-z]+", 3)]:
        _set_pattern(folder, pattern)
        tok = bpekit.load_tokenizer(folder)
        assert tok.decode(tok.encode("hi there")) == "hi there"
        assert len(bpekit.pretokenize("hi there", tok.pattern)) == pieces
