"""What a dataset run checks before it goes on from (or returns) what a folder holds:
documents known only as an iterable are told by their sha256, never by a type name;
resume points are covered by a sha256 of their own, and one damaged or edited by hand
is not gone on from; the advice for a damaged dataset is one that works, and a rerun
that writes nothing says so."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import bpekit_encoding

import bpekit
import bpekit.dataset.shards
from bpekit.dataset import Layout
from bpekit.dataset.job import Framing, Job
from bpekit.options import ReadOptions, RunOptions

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tok():
    return bpekit_encoding("gpt2")


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from bpekit.cli import main

    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


# ---- iterables ------------------------------------------------------------------------


def test_a_finished_dataset_of_an_iterable_is_returned_only_for_the_same_documents(
    tmp_path: Path, tok
) -> None:
    ds = tmp_path / "ds"
    first = bpekit.encode_dataset(iter(["doc one"] * 10), ds, tok)
    assert isinstance(first.get("fed_sha256"), str)
    files = files_of(ds)
    for other in (["DIFFERENT"] * 3, ["doc one"] * 9, ["doc one"] * 11, ["doc", " one"] + ["doc one"] * 8):
        with pytest.raises(FileExistsError, match=r"other documents of <list_iterator> .*resume=False"):
            bpekit.encode_dataset(iter(other), ds, tok)
        assert files_of(ds) == files
    assert bpekit.encode_dataset(iter(["doc one"] * 10), ds, tok) == first
    assert files_of(ds) == files
    again = bpekit.encode_dataset(iter(["DIFFERENT"] * 3), ds, tok, resume=False)
    assert again["totals"]["documents"] == 3


def documents(n: int, stop: int | None = None, first: str | None = None) -> Iterator[str]:
    for i in range(n):
        if i == stop:
            raise KeyError("stop here")
        if i == 0 and first is not None:
            yield first
            continue
        # ~5 KB each: the documents before the stop fill several batches of the feed.
        yield f"document number {i} " * (1 + i % 17) * 50


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"first": "another first document"}, id="first-differs"),
        pytest.param({"n": 300}, id="shorter"),
    ],
)
def test_a_run_cut_short_on_one_iterable_is_not_gone_on_with_on_another(
    tmp_path: Path, tok, other: dict[str, Any]
) -> None:
    options = {"shard_tokens": 100_000, "val_fraction": 0.1}
    ds = tmp_path / "ds"
    with pytest.raises(KeyError, match="stop here"):
        bpekit.encode_dataset(documents(3000, stop=2000), ds, tok, num_threads=2, **options)
    cut = files_of(ds)
    assert json.loads(cut["manifest.json"])["complete"] is False
    n = other.get("n", 3000)
    with pytest.raises(ValueError, match=r"<generator>: the documents differ .*resume=False"):
        bpekit.encode_dataset(documents(n, first=other.get("first")), ds, tok, **options)
    # Refused before anything was written: the right documents still go on from there.
    assert files_of(ds) == cut
    want = bpekit.encode_dataset(documents(3000), tmp_path / "full", tok, **options)
    assert bpekit.encode_dataset(documents(3000), ds, tok, **options) == want
    assert files_of(ds) == files_of(tmp_path / "full")


# ---- resume points ----------------------------------------------------------------------


def words(rng: random.Random, n: int) -> str:
    pool = ["the", "cat", " on", "mat", "Über", "naïve", "東京", "42", "!!", "\n", "don't"]
    return " ".join(rng.choice(pool) for _ in range(n))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    rng = random.Random(11)
    d = tmp_path_factory.mktemp("checks-corpus")
    text = d / "a.txt"
    text.write_text(EOT.join(words(rng, rng.choice([3, 40, 300])) for _ in range(60)), encoding="utf-8")
    jsonl = d / "b.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"text": words(rng, 30)}) + "\n" for _ in range(50)), encoding="utf-8"
    )
    return [text, jsonl]


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory: pytest.TempPathFactory, tok, corpus: list[Path]) -> tuple[Path, dict, dict]:
    """A finished dataset, and the manifest of the same run as it stood once its first
    four shards were recorded (with its resume points)."""
    full = tmp_path_factory.mktemp("checks") / "full"
    seen: list[dict] = []
    real = bpekit.dataset.shards.atomic_write

    def spy(path: Path, data: bytes) -> None:
        seen.append(json.loads(data))
        real(path, data)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bpekit.dataset.shards, "atomic_write", spy)
        patch.setattr(bpekit.dataset.shards._Recorder, "EVERY", 0.0)
        m = bpekit.encode_dataset(corpus, full, tok, shard_tokens=300)
    partial = next(s for s in seen if len(s.get("splits", {}).get("train", {}).get("shards", [])) == 4)
    assert partial["complete"] is False and len(partial["resume"]["train"]) == 4
    return full, m, partial


def cut_short(full: Path, root: Path, partial: dict) -> None:
    shutil.copytree(full, root)
    kept = {s[k] for s in partial["splits"]["train"]["shards"] for k in ("file", "index")}
    for path in (root / "train").iterdir():
        if f"train/{path.name}" not in kept:
            path.unlink()
    (root / "manifest.json").write_text(json.dumps(partial))


@pytest.mark.parametrize(
    ("field", "value"),
    [("at", -5), ("at", 2**70), ("document", 0), ("skip", 3), ("documents_before", 1), ("input", 7)],
)
def test_a_damaged_resume_point_is_not_gone_on_from(
    tmp_path: Path, tok, corpus: list[Path], cut_run: tuple[Path, dict, dict], field: str, value: int
) -> None:
    full, m, partial = cut_run
    root = tmp_path / "ds"
    cut_short(full, root, partial)
    damaged = json.loads((root / "manifest.json").read_text())
    damaged["resume"]["train"][-1][field] = value  # the point the run goes on from
    (root / "manifest.json").write_text(json.dumps(damaged))
    # The shards up to the damaged point are kept; the rest is written again, exactly.
    assert bpekit.encode_dataset(corpus, root, tok, shard_tokens=300) == m
    assert files_of(root) == files_of(full)


def test_a_resume_point_out_of_range_is_a_value_error_naming_it(
    tok, corpus: list[Path], tmp_path: Path
) -> None:
    # Past the checks above (its sha256 made to match): the core still says what is wrong.
    point = {
        "input": 0,
        "at": -5,
        "documents_before": 0,
        "open": False,
        "started": False,
        "records_before": 0,
        "bytes_before": 0,
        "skipped_before": 0,
        "last_input": 0,
        "last_input_document": 0,
        "document": 0,
        "skip": 0,
    }
    root = tmp_path / "ds"
    (root / "train").mkdir(parents=True)
    with pytest.raises(ValueError, match=r'"next": "at" is -5, out of range'):
        job = Job(ReadOptions(), RunOptions(), Layout(dtype="uint16"), Framing())
        tok._core.encode_dataset([("text", str(corpus[0]))], str(root), job, resume=[(1, point)])


# ---- advice that works, summaries that say what was done -------------------------------------


def test_the_advice_for_a_corrupt_shard_works_and_a_rerun_claims_no_write(
    tmp_path: Path, corpus: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ds = tmp_path / "ds"
    args = ["encode", *map(str, corpus), "-t", "gpt2", "-o", str(ds), "--shard-tokens", "300", "--quiet"]
    assert cli(capsys, *args)[0] == 0
    shard = ds / "train" / "00001.npy"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1  # the same size: only its sha256 tells
    shard.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"00001\.npy: sha256 .*encode the dataset again with resume=False"):
        bpekit.TokenDataset(ds).verify()
    status, out, _ = cli(capsys, "inspect", str(ds), "--verify")
    assert status == 1 and "files       BAD:" in out and "--overwrite" in out, out
    assert "resume=False" not in out and "re-run" not in out
    # A plain rerun does nothing, and says so, claiming no write.
    status, out, _ = cli(capsys, *args)
    assert status == 0 and "nothing to do" in out and "wrote" not in out, out
    assert shard.read_bytes() == bytes(data)
    # What the advice says does mend it.
    status, out, _ = cli(capsys, *args, "--overwrite")
    assert status == 0 and f"wrote {ds}/manifest.json" in out
    assert cli(capsys, "inspect", str(ds), "--verify")[0] == 0
    bpekit.TokenDataset(ds).verify()


def test_a_shard_size_past_64_bits_is_one_line_naming_the_flag(
    tmp_path: Path, corpus: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = cli(
        capsys,
        "encode",
        str(corpus[0]),
        "-t",
        "gpt2",
        "-o",
        str(tmp_path / "ds"),
        "--shard-tokens",
        str(2**64 + 1),
    )
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1, err
    assert "--shard-tokens must be from 1 to 2**64 - 1, not 18446744073709551617" in lines[0]
    with pytest.raises(ValueError, match=r"shard_tokens must be from 1 to 2\*\*64 - 1"):
        bpekit.encode_dataset(corpus[0], tmp_path / "ds", "gpt2", shard_tokens=2**64)
