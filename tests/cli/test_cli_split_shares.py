"""The summary of ``bpekit encode`` into a dataset with a val split gives each split's
share of the tokens beside its share of the documents: documents go to val/ by their
number, so a few long records can leave val/ a far smaller share of the tokens than
``--val-fraction`` says."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest


def test_each_split_names_its_share_of_tokens_and_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bpekit.cli import main

    # Short records, and one long "book" every 50: the token shares differ from the
    # document shares.
    texts = [("a long book " * 2000) if i % 50 == 0 else f"record {i}" for i in range(400)]
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    out = tmp_path / "ds"
    args = ["encode", str(src), "-t", "gpt2", "-o", str(out), "--quiet", "--val-fraction", "0.1"]
    assert main(args) == 0
    lines = [
        ln.strip() for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith(("train:", "val:"))
    ]
    assert len(lines) == 2
    manifest = json.loads((out / "manifest.json").read_text())
    splits = manifest["splits"]
    for line, name in zip(lines, ("train", "val"), strict=True):
        for key in ("tokens", "documents"):
            n = splits[name][key]
            total = sum(s[key] for s in splits.values())
            assert f"{n:,} {key} ({n / total:.2%})" in line, line
    shares = [float(x) for line in lines for x in re.findall(r"\(([\d.]+)%\)", line)]
    assert (
        len(shares) == 4
        and abs(shares[0] + shares[2] - 100) < 0.02
        and abs(shares[1] + shares[3] - 100) < 0.02
    )


def test_one_split_gives_no_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bpekit.cli import main

    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"text": f"record {i}"}) + "\n" for i in range(20)))
    assert main(["encode", str(src), "-t", "gpt2", "-o", str(tmp_path / "ds"), "--quiet"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("train:"))
    assert "%" not in line
