"""A dataset run owns only what it writes: starting over (``resume=False``,
``--overwrite``) or going on removes the dataset's own files and never others; a split
folder that is a link is refused, never followed; an output folder inside an input
folder is refused; a corrupt manifest is said to be corrupt, and can be overwritten."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import bpekit_encoding

import bpekit

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tok():
    return bpekit_encoding("gpt2")


def corpus(folder: Path, n: int = 40) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "a.txt"
    path.write_text("".join(f"document {i} " * (5 + i % 7) + EOT for i in range(n)), encoding="utf-8")
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from bpekit.cli import main

    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_starting_over_and_going_on_keep_other_files(tmp_path: Path, tok, capsys) -> None:
    src = corpus(tmp_path / "in")
    ds = tmp_path / "ds"
    bpekit.encode_dataset(src, ds, tok, shard_tokens=60)
    notes = ds / "train" / "NOTES.txt"
    notes.write_text("mine")
    (ds / "train" / "extra").mkdir()
    # A rerun of a finished dataset, a resume and a fresh start: the notes stay.
    bpekit.encode_dataset(src, ds, tok, shard_tokens=60)
    bpekit.encode_dataset(src, ds, tok, shard_tokens=60, resume=False)
    assert notes.read_text() == "mine" and (ds / "train" / "extra").is_dir()
    status, _, err = cli(
        capsys,
        "encode",
        str(src),
        "-t",
        "gpt2",
        "-o",
        str(ds),
        "--shard-tokens",
        "80",
        "--overwrite",
        "--quiet",
    )
    assert status == 0, err
    assert notes.read_text() == "mine"
    ds_read = bpekit.TokenDataset(ds)
    ds_read.verify()
    assert ds_read.n_documents == 40
    # A split dropped (val_fraction back to 0) keeps its folder for the files in it.
    bpekit.encode_dataset(src, ds, tok, shard_tokens=80, val_fraction=0.3, resume=False)
    (ds / "val" / "keep.txt").write_text("mine too")
    bpekit.encode_dataset(src, ds, tok, shard_tokens=80, resume=False)
    assert sorted(p.name for p in (ds / "val").iterdir()) == ["keep.txt"]


def test_a_linked_split_folder_is_refused_and_never_followed(tmp_path: Path, tok, capsys) -> None:
    src = corpus(tmp_path / "in")
    ds = tmp_path / "ds"
    bpekit.encode_dataset(src, ds, tok, shard_tokens=60)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "00000.npy").write_bytes(b"someone else's")
    (elsewhere / "precious.txt").write_text("keep")
    for path in sorted((ds / "train").iterdir()):
        path.unlink()
    (ds / "train").rmdir()
    (ds / "train").symlink_to(elsewhere, target_is_directory=True)
    for resume in (True, False):
        with pytest.raises(FileExistsError, match=r"ds/train: a link, where the dataset's train shards go"):
            bpekit.encode_dataset(src, ds, tok, shard_tokens=60, resume=resume)
    status, _, err = cli(capsys, "encode", str(src), "-t", "gpt2", "-o", str(ds), "--overwrite", "--quiet")
    assert status == 2 and len(err.strip().splitlines()) == 1 and "a link" in err, err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["00000.npy", "precious.txt"]
    assert (elsewhere / "00000.npy").read_bytes() == b"someone else's"


def test_an_output_folder_inside_an_input_folder_is_refused(tmp_path: Path, tok, capsys) -> None:
    d = tmp_path / "d"
    corpus(d)
    out = d / "out"
    status, _, err = cli(capsys, "encode", str(d), "-t", "gpt2", "-o", str(out), "--quiet")
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1, err
    assert f"{out}: the output folder lies inside the input folder {d}" in lines[0]
    assert not out.exists()
    with pytest.raises(ValueError, match="the output folder lies inside the input folder"):
        bpekit.encode_dataset([str(d)], out, tok)
    with pytest.raises(ValueError, match="lies inside the input folder"):
        bpekit.encode_dataset(d, d, tok)
    # An input file inside the output folder: the output is also an input.
    ds = tmp_path / "ds"
    bpekit.encode_dataset(d / "a.txt", ds, tok)
    with pytest.raises(ValueError, match=r"the output is also an input \(.*00000\.npy lies inside it\)"):
        bpekit.encode_dataset([d / "a.txt", ds / "train" / "00000.npy"], ds, tok, format="text")
    # A folder beside the inputs is fine.
    bpekit.encode_dataset(d, tmp_path / "d-out", tok)


def test_a_corrupt_manifest_is_said_so_and_can_be_overwritten(tmp_path: Path, tok, capsys) -> None:
    src = corpus(tmp_path / "in")
    ds = tmp_path / "ds"
    want = bpekit.encode_dataset(src, ds, tok, shard_tokens=60)
    manifest = ds / "manifest.json"
    for damage in (manifest.read_bytes()[:300], b"[" * 1000 + b"]" * 1000, b"\xff\xfe"):
        manifest.write_bytes(damage)
        with pytest.raises(FileExistsError, match=r"manifest.json: the manifest is corrupt .*resume=False"):
            bpekit.encode_dataset(src, ds, tok, shard_tokens=60)
        status, _, err = cli(
            capsys, "encode", str(src), "-t", "gpt2", "-o", str(ds), "--shard-tokens", "60", "--quiet"
        )
        assert status == 2 and "manifest is corrupt" in err and "--overwrite" in err, err
        assert "other files" not in err
        status, _, err = cli(
            capsys,
            "encode",
            str(src),
            "-t",
            "gpt2",
            "-o",
            str(ds),
            "--shard-tokens",
            "60",
            "--overwrite",
            "--quiet",
        )
        assert status == 0, err
        assert json.loads(manifest.read_text())["splits"] == want["splits"]
    # JSON, but no bpekit manifest: a folder of someone else's, refused even to --overwrite.
    manifest.write_text('{"name": "my web app"}')
    with pytest.raises(FileExistsError, match="not a bpekit dataset's manifest"):
        bpekit.encode_dataset(src, ds, tok, shard_tokens=60, resume=False)


def test_a_deeply_nested_manifest_is_one_line_naming_it(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "manifest.json").write_text('{"format_version": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ValueError, match=r"manifest\.json: JSON nested too deeply to read"):
        bpekit.TokenDataset(ds)
    r = subprocess.run(
        [sys.executable, "-m", "bpekit.cli", "inspect", str(ds)], capture_output=True, text=True, timeout=120
    )
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert f"{ds / 'manifest.json'}: JSON nested too deeply" in lines[0] and "--overwrite" in lines[0]


def test_a_file_of_another_beside_the_dataset_is_kept_and_the_refusal_says_what_to_do(
    tmp_path: Path, tok
) -> None:
    # The refusal named the file but not what to do about it.
    path = corpus(tmp_path / "in")
    out = tmp_path / "ds"
    bpekit.encode_dataset(path, out, tok, shard_tokens=200)
    (out / "README.md").write_text("mine", encoding="utf-8")
    with pytest.raises(
        FileExistsError,
        match=r"holds files that are not the dataset's \(README\.md\), which bpekit never removes; move "
        r"them out, or give another folder",
    ):
        bpekit.encode_dataset(path, out, tok, shard_tokens=200, resume=False)
    assert (out / "README.md").read_text(encoding="utf-8") == "mine"
