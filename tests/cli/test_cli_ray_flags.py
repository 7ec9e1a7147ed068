"""`--ray` on the command line: `--workers` and `--unit-bytes` (train's and encode's)
spread a run over as many units and CPUs as asked, the same result as one machine's, and
Ray's own INFO and WARNING lines stay off the terminal."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from bpekit.cli import build_parser, main
from bpekit.cli._input import byte_size
from tests.conftest import DATA

CORPUS = DATA.joinpath("cs336", "corpus.en")  # 133 kB
pytestmark = pytest.mark.skipif(
    not CORPUS.exists(), reason=f"test data {CORPUS} is missing (the shared data goes next to the repository)"
)


def command(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices[name]
    return parser


def test_train_and_encode_take_workers_and_unit_bytes() -> None:
    spread = ["--ray", "--workers", "3", "--unit-bytes", "64M"]
    for name, rest in [
        ("train", ["--vocab-size", "300", "--out", "tok"]),
        ("encode", ["-t", "gpt2", "-o", "ds"]),
    ]:
        args = command(name).parse_args([str(CORPUS), *rest, *spread])
        assert (args.workers, args.unit_bytes) == (3, 64 << 20), name
    assert [byte_size(s) for s in ("4096", "32k", "1MiB", "2G")] == [4096, 32 << 10, 1 << 20, 2 << 30]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--workers", "2"], "--workers is for a --ray run; give --ray too"),
        (["--unit-bytes", "1M"], "--unit-bytes is for a --ray run; give --ray too"),
        (["--ray", "auto", "--workers", "2"], "--workers is the CPUs of a Ray started here for the run"),
        (["--ray", "--workers", "0"], "--workers must be a positive number of CPUs, not 0"),
        (["--ray", "--unit-bytes", "0"], "--unit-bytes must be a positive number of bytes, not 0"),
        (["--ray", "--chunk-size", "4096"], "--chunk-size is for a run on this machine"),
    ],
)
def test_spread_flags_are_checked_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    out = tmp_path / "tok"
    assert main(["train", str(CORPUS), "--vocab-size", "300", "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bpekit train: error: {said}") and err.count("\n") == 1, err
    assert not out.exists()


def test_a_ray_run_takes_the_units_and_workers_asked_for_quietly(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    common = [str(CORPUS), "--vocab-size", "400", "--special-token", "<|endoftext|>"]
    assert main(["train", *common, "--out", str(tmp_path / "one"), "--quiet"]) == 0
    # A process of its own: Ray started by the command, as a user's run starts it.
    spread = ["--ray", "--workers", "2", "--unit-bytes", "32K"]
    run = subprocess.run(
        [sys.executable, "-m", "bpekit.cli", "train", *common, "--out", str(tmp_path / "ray"), *spread],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "counted in 5 units on Ray\n" in run.stdout  # 133 kB in units of 32 KiB
    # The progress bars only: none of Ray's lines ("INFO worker.py:... Started a local
    # Ray instance.", "WARNING ...").
    assert [line.split()[0] for line in run.stderr.splitlines()] == ["counting", "merging"], run.stderr
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()
