"""The summaries of `bpekit train` and `bpekit encode` say which bytes they count: the
text read (a compressed file's decompressed, a record's text alone); train's gives the
files' bytes, which the progress bar counts, beside it where they differ."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bpekit.cli import main

TEXT = "".join(f"Once upon a time, story {i} began and ended.\n" for i in range(40_000))


def summary(capsys: pytest.CaptureFixture[str], inputs: Path, out: Path) -> str:
    assert main(["train", str(inputs), "--vocab-size", "300", "--out", str(out), "--quiet"]) == 0
    return capsys.readouterr().out


def test_a_compressed_file_shows_its_text_and_its_file_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stories.txt.gz"
    path.write_bytes(gzip.compress(TEXT.encode()))
    text_mb, file_mb = len(TEXT) / 1e6, path.stat().st_size / 1e6
    out = summary(capsys, path, tmp_path / "t")
    assert f"on 1 file(s), {text_mb:,.1f} MB of text ({file_mb:,.1f} MB of files)\n" in out
    assert "MB/s of text" in out


def test_records_show_their_text_and_their_file_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stories.jsonl"
    lines = TEXT.splitlines(keepends=True)
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(lines)))
    out = summary(capsys, path, tmp_path / "t")
    file_mb = path.stat().st_size / 1e6
    assert f"{len(TEXT) / 1e6:,.1f} MB of text ({file_mb:,.1f} MB of files)\n" in out


def test_plain_text_shows_one_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "stories.txt"
    path.write_text(TEXT)
    out = summary(capsys, path, tmp_path / "t")
    assert f"on 1 file(s), {len(TEXT) / 1e6:,.1f} MB of text\n" in out


@pytest.mark.parametrize("out_name", ["ids.npy", "ds"])
def test_encode_says_its_bytes_are_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out_name: str
) -> None:
    # `bpekit encode`'s summary counts text bytes too (its bar, the files' bytes).
    path = tmp_path / "stories.txt.gz"
    path.write_bytes(gzip.compress(TEXT.encode()))
    args = ["encode", str(path), "-t", "gpt2", "-o", str(tmp_path / out_name), "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"encoded 1 file(s), {len(TEXT) / 1e6:,.1f} MB of text -> " in out
    assert "MB/s of text" in out
