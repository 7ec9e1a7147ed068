"""`bpekit train --name NAME`: the tokenizer's name, saved with it, so that loading the
folder, the visualizer's header and a dataset's manifest give it; "bpe" without one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bpekit
from bpekit.cli import main
from tests.conftest import DATA

CORPUS = DATA.joinpath("cs336", "tinystories_sample.txt")
pytestmark = pytest.mark.skipif(
    not CORPUS.exists(), reason=f"test data {CORPUS} is missing (the shared data goes next to the repository)"
)


def train(out: Path, *extra: str) -> int:
    return main(["train", str(CORPUS), "--vocab-size", "300", "--out", str(out), "--quiet", *extra])


def test_the_name_is_saved_with_the_tokenizer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tok"
    assert train(out, "--name", "tiny-stories-300") == 0
    assert "(named 'tiny-stories-300')" in capsys.readouterr().out
    assert json.loads((out / "bpekit.json").read_text())["name"] == "tiny-stories-300"
    assert bpekit.load_tokenizer(out).name == "tiny-stories-300"
    page = tmp_path / "page.html"
    assert main(["viz", "-t", str(out), "--string", "Once upon a time", "-o", str(page)]) == 0
    assert "tiny-stories-300" in page.read_text(encoding="utf-8")


def test_without_a_name_it_stays_bpe(tmp_path: Path) -> None:
    # Not the folder's name: the same training in two folders writes the same files.
    for folder in ("a", "b"):
        assert train(tmp_path / folder) == 0
    assert bpekit.load_tokenizer(tmp_path / "a").name == "bpe"
    assert (tmp_path / "a" / "bpekit.json").read_bytes() == (tmp_path / "b" / "bpekit.json").read_bytes()


def test_an_empty_name_is_refused_before_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert train(tmp_path / "tok", "--name", " ") == 2
    err = capsys.readouterr().err
    assert (
        err
        == "bpekit train: error: --name must not be empty: give the tokenizer a name, or leave --name out\n"
    )
    assert not (tmp_path / "tok").exists()
