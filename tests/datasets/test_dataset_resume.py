"""Resuming ``bpekit.encode_dataset``: a run cut short at any shard, by an error, a
kill or a full disk, and run again ends byte-identical (shards, indexes and manifest)
to one that was never cut short; a damaged shard is written again; a run with other
inputs or options is refused."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import zstandard
from conftest import bpekit_encoding

import bpekit
import bpekit.dataset.shards

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tok():
    return bpekit_encoding("gpt2")


def words(rng: random.Random, n: int) -> str:
    pool = ["the", "cat", " on", "mat", "Über", "naïve", "東京", "42", "1999", "!!", "\n", "  ", "don't"]
    return " ".join(rng.choice(pool) for _ in range(n))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Inputs of every kind that resumes differently: a mapped text file (documents
    between special tokens, one long enough to span shards), JSON lines mapped and
    zstd-streamed, an empty text file, and gzip-streamed text."""
    rng = random.Random(7)
    d = tmp_path_factory.mktemp("resume-corpus")
    docs = [words(rng, rng.choice([0, 3, 40, 300])) for _ in range(60)] + [words(rng, 3000)]
    text = d / "a.txt"
    text.write_text(EOT.join(docs) + EOT + words(rng, 50), encoding="utf-8")
    records = [json.dumps({"text": words(rng, rng.choice([1, 20, 200]))}) + "\n" for _ in range(80)]
    jsonl = d / "b.jsonl"
    jsonl.write_text("".join(records), encoding="utf-8")
    zst = d / "c.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress("".join(reversed(records)).encode()))
    empty = d / "d.txt"
    empty.write_text("")
    gz = d / "e.txt.gz"
    gz.write_bytes(gzip.compress((EOT.join(reversed(docs[:40])) + EOT).encode()))
    return [text, jsonl, zst, empty, gz]


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


OPTIONS: list[dict[str, Any]] = [
    {"shard_tokens": 700},
    {"shard_tokens": 97, "val_fraction": 0.3, "seed": 5},
    {"shard_tokens": 2500, "val_fraction": 0.5, "shard_format": "llmc", "after_each_file": EOT},
    {"shard_tokens": 97, "val_fraction": 0.3, "shard_format": "megatron"},
    {"shard_tokens": 700, "val_fraction": 0.2, "shard_format": "datatrove"},
]


def full_run(inputs: Any, root: Path, tok: Any, monkeypatch: pytest.MonkeyPatch, **options: Any) -> dict:
    """``encode_dataset``'s manifest, and in ``root / "starts.json"`` the resume points
    its manifest held while the run went on (a finished manifest has none)."""
    seen: dict[str, Any] = {}
    real = bpekit.dataset.shards.atomic_write

    def spy(path: Path, data: bytes) -> None:
        seen.update(json.loads(data).get("resume", {}))
        real(path, data)

    with monkeypatch.context() as patch:
        patch.setattr(bpekit.dataset.shards, "atomic_write", spy)
        patch.setattr(bpekit.dataset.shards._Recorder, "EVERY", 0.0)  # Every shard's.
        m = bpekit.encode_dataset(inputs, root, tok, **options)
    assert "resume" not in m
    (root.parent / f"{root.name}.starts.json").write_text(json.dumps(seen))
    return m


def cut_short(full: Path, root: Path, kept: list[int], leave_rest: bool) -> None:
    """``root``: ``full`` as a run killed once it had recorded the first ``kept[k]``
    shards of split k (the later shards left in place, as whole files, or not)."""
    starts = json.loads((full.parent / f"{full.name}.starts.json").read_text())
    assert all(len(starts[name]) >= n for name, n in zip(starts, kept, strict=False)), "a start is missing"
    shutil.copytree(full, root)
    m = json.loads((root / "manifest.json").read_text())
    m["resume"] = {}
    for (name, split), n in zip(m["splits"].items(), kept, strict=True):
        for shard in split["shards"][n:]:
            if not leave_rest:
                for file in [
                    shard["file"],
                    shard["index"],
                    *(f["file"] for f in shard.get("trainer_files", [])),
                ]:
                    (root / file).unlink()
        m["splits"][name] = {"shards": split["shards"][:n]}
        m["resume"][name] = starts[name][:n]
    m["complete"] = False
    del m["totals"]
    (root / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize(
    "options", OPTIONS, ids=["train", "val", "llmc-val", "megatron-val", "datatrove-val"]
)
def test_a_run_cut_short_after_any_shard_ends_as_an_uncut_one(
    tmp_path: Path, tok, corpus: list[Path], options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    full = tmp_path / "full"
    m = full_run(corpus, full, tok, monkeypatch, chunk_size=2048, num_threads=2, **options)
    counts = [len(split["shards"]) for split in m["splits"].values()]
    assert min(counts) >= 2, counts
    want = files_of(full)
    rng = random.Random(str(options))
    cuts = {tuple(rng.randrange(c + 1) for c in counts) for _ in range(4)}
    cuts |= {tuple(0 for _ in counts), tuple(c - 1 for c in counts), tuple(counts)}
    for k, kept in enumerate(sorted(cuts)):
        root = tmp_path / f"cut{k}"
        cut_short(full, root, list(kept), leave_rest=k % 2 == 0)
        # Other threads and chunks than the first run: where it goes on from is a
        # place in the input, not a chunk of that run.
        again = bpekit.encode_dataset(corpus, root, tok, chunk_size=5000, num_threads=1 + k % 2, **options)
        assert again == m, kept
        assert files_of(root) == want, kept


def test_a_damaged_or_missing_shard_is_written_again(
    tmp_path: Path, tok, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"shard_tokens": 300, "val_fraction": 0.3}
    full = tmp_path / "full"
    m = full_run(corpus, full, tok, monkeypatch, **options)
    want = files_of(full)
    train = m["splits"]["train"]["shards"]
    for k, damage in enumerate(["flip", "truncate", "remove", "index"]):
        root = tmp_path / f"cut{k}"
        cut_short(full, root, [len(train) - 1, 2], leave_rest=True)
        victim = root / train[3]["index" if damage == "index" else "file"]
        data = bytearray(victim.read_bytes())
        if damage == "remove":
            victim.unlink()
        elif damage == "truncate":
            victim.write_bytes(data[:-2])
        else:
            data[-1] ^= 1
            victim.write_bytes(bytes(data))
        assert bpekit.encode_dataset(corpus, root, tok, **options) == m
        assert files_of(root) == want


def test_an_error_part_way_then_a_rerun_gives_the_uncut_dataset(tmp_path: Path, tok) -> None:
    def docs(stop: int | None) -> Any:
        for i in range(3000):
            if i == stop:
                raise KeyError("stop here")
            # ~5 KB: the documents before the error fill batches of the feed (4 MB).
            yield f"document number {i} " * (1 + i % 17) * 50

    options = {"shard_tokens": 100_000, "val_fraction": 0.1}
    want = bpekit.encode_dataset(docs(None), tmp_path / "full", tok, **options)
    root = tmp_path / "ds"
    with pytest.raises(KeyError, match="stop here"):
        bpekit.encode_dataset(docs(2000), root, tok, num_threads=2, **options)
    cut = json.loads((root / "manifest.json").read_text())
    assert cut["complete"] is False and len(cut["splits"]["train"]["shards"]) >= 5
    # No shard is left half written: the files there are whole, recorded shards.
    recorded = {s[k] for split in cut["splits"].values() for s in split["shards"] for k in ("file", "index")}
    assert {str(p.relative_to(root)) for p in root.glob("*/*")} <= recorded
    assert bpekit.encode_dataset(docs(None), root, tok, **options) == want
    assert files_of(root) == files_of(tmp_path / "full")


def test_a_failure_to_record_a_shard_stops_the_run_and_a_rerun_goes_on(
    tmp_path: Path, tok, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    full = tmp_path / "full"
    m = bpekit.encode_dataset(corpus, full, tok, shard_tokens=200)
    real = bpekit.dataset.shards.atomic_write
    calls = []

    def failing(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(bpekit.dataset.shards, "atomic_write", failing)
    monkeypatch.setattr(bpekit.dataset.shards._Recorder, "EVERY", 0.0)  # After every shard.
    root = tmp_path / "ds"
    with pytest.raises(OSError, match=r"recording train/00003\.npy: .*No space left on device"):
        bpekit.encode_dataset(corpus, root, tok, shard_tokens=200)
    monkeypatch.setattr(bpekit.dataset.shards, "atomic_write", real)
    # The failed run tried once more as it ended, and recorded the shard it had hashed.
    assert len(json.loads((root / "manifest.json").read_text())["splits"]["train"]["shards"]) == 4
    assert bpekit.encode_dataset(corpus, root, tok, shard_tokens=200) == m
    assert files_of(root) == files_of(full)


RUN = textwrap.dedent(
    """
    import os, resource, signal, sys
    import bpekit
    import bpekit.dataset.shards
    from conftest import bpekit_encoding
    bpekit.dataset.shards._Recorder.EVERY = 0.0  # Each shard recorded as it finishes.
    limit = int(sys.argv[3])
    if limit:
        # A file larger than this fails to grow, as on a full disk (EFBIG, not SIGXFSZ).
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    tok = bpekit_encoding("gpt2")
    fmt = sys.argv[4] if len(sys.argv) > 4 else "npy"
    bpekit.encode_dataset(sys.argv[1], sys.argv[2], tok, shard_tokens=40_000, num_threads=2, shard_format=fmt)
    """
)


def run_child(args: list[str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]), *sys.path])}
    return subprocess.Popen(
        [sys.executable, "-c", RUN, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.fixture(scope="module")
def big_text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(3)
    path = tmp_path_factory.mktemp("big") / "big.txt"
    with path.open("w", encoding="utf-8") as f:
        for _ in range(3000):
            f.write(words(rng, rng.randrange(50, 600)) + EOT)
    return path


@pytest.mark.parametrize("fmt", ["npy", "megatron", "datatrove"])
def test_a_killed_run_goes_on_where_it_was_killed(tmp_path: Path, tok, big_text: Path, fmt: str) -> None:
    full = tmp_path / "full"
    bpekit.encode_dataset(big_text, full, tok, shard_tokens=40_000, num_threads=2, shard_format=fmt)
    root = tmp_path / "ds"
    child = run_child([str(big_text), str(root), "0", fmt])
    manifest = root / "manifest.json"

    def recorded() -> int:
        if not manifest.exists():
            return 0
        return len(json.loads(manifest.read_text()).get("splits", {}).get("train", {}).get("shards", []))

    while child.poll() is None and recorded() < 2:
        pass
    child.send_signal(signal.SIGKILL)
    child.wait()
    if child.returncode == 0:
        pytest.skip("the run ended before it could be killed")
    assert json.loads(manifest.read_text())["complete"] is False
    bpekit.encode_dataset(big_text, root, tok, shard_tokens=40_000, num_threads=2, shard_format=fmt)
    assert files_of(root) == files_of(full)


def test_a_full_disk_names_the_shard_and_a_rerun_goes_on(tmp_path: Path, tok, big_text: Path) -> None:
    full = tmp_path / "full"
    m = bpekit.encode_dataset(big_text, full, tok, shard_tokens=40_000, num_threads=2)
    assert len(m["splits"]["train"]["shards"]) >= 3
    root = tmp_path / "ds"
    # Shards are 80 KB: the limit lets two be written and stops the third.
    child = run_child([str(big_text), str(root), str(60_000)])
    _, err = child.communicate(timeout=120)
    assert child.returncode != 0
    last = err.decode().strip().splitlines()[-1]
    assert "train/00000.npy" in last and "File too large" in last, last
    bpekit.encode_dataset(big_text, root, tok, shard_tokens=40_000, num_threads=2)
    assert files_of(root) == files_of(full)


def test_other_inputs_or_options_are_refused_and_resume_false_starts_over(
    tmp_path: Path, tok, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    full = tmp_path / "full"
    m = full_run(corpus, full, tok, monkeypatch, shard_tokens=300)
    root = tmp_path / "ds"
    cut_short(full, root, [2], leave_rest=False)
    with pytest.raises(FileExistsError, match=r"ds: holds an unfinished dataset written with other shard_"):
        bpekit.encode_dataset(corpus, root, tok, shard_tokens=301)
    with pytest.raises(FileExistsError, match=r"other inputs; pass resume=False \(--overwrite\) to start"):
        bpekit.encode_dataset(corpus[:2], root, tok, shard_tokens=300)
    os.utime(corpus[3], ns=(0, 0))  # Touched: a new modification time is another input.
    with pytest.raises(FileExistsError, match=r"other inputs"):
        bpekit.encode_dataset(corpus, root, tok, shard_tokens=300)
    again = bpekit.encode_dataset(corpus, root, tok, shard_tokens=300, resume=False)
    assert again["splits"] == m["splits"]
    assert {k: v for k, v in files_of(root).items() if k != "manifest.json"} == {
        k: v for k, v in files_of(full).items() if k != "manifest.json"
    }


def test_the_cli_goes_on_and_overwrite_starts_over(
    tmp_path: Path, tok, corpus: list[Path], capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bpekit.cli import main

    full = tmp_path / "full"
    args = [*map(str, corpus), "-t", "gpt2", "--shard-tokens", "300", "--quiet"]
    full_run(corpus, full, "gpt2", monkeypatch, shard_tokens=300)
    root = tmp_path / "ds"
    cut_short(full, root, [3], leave_rest=False)
    capsys.readouterr()
    assert main(["encode", *args, "--out", str(root)]) == 0
    assert "kept its 3 finished shard(s)" in capsys.readouterr().out
    assert files_of(root) == files_of(full)
    assert main(["encode", *args, "--out", str(root), "--overwrite"]) == 0
    assert "kept" not in capsys.readouterr().out
    assert (
        hashlib.sha256((root / "train/00000.npy").read_bytes()).digest()
        == hashlib.sha256((full / "train/00000.npy").read_bytes()).digest()
    )


def test_without_checksums_the_manifest_has_none_and_a_rerun_checks_sizes(
    tmp_path: Path, tok, corpus: list[Path], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from bpekit.cli import main

    full = tmp_path / "full"
    m = full_run(corpus, full, tok, monkeypatch, shard_tokens=300, checksums=False)
    shards = m["splits"]["train"]["shards"]
    assert m["checksums"] is False and all(s["sha256"] is None and s["index_sha256"] is None for s in shards)
    want = bpekit.encode_dataset(corpus, tmp_path / "hashed", tok, shard_tokens=300)
    assert [s["size"] for s in want["splits"]["train"]["shards"]] == [s["size"] for s in shards]
    assert files_of(full)["train/00001.npy"] == files_of(tmp_path / "hashed")["train/00001.npy"]
    root = tmp_path / "ds"
    cut_short(full, root, [4], leave_rest=False)
    (root / shards[3]["file"]).write_bytes(b"")  # A size that is wrong is still seen.
    assert bpekit.encode_dataset(corpus, root, tok, shard_tokens=300, checksums=False) == m
    assert files_of(root) == files_of(full)
    with pytest.raises(FileExistsError, match="other checksums"):
        bpekit.encode_dataset(corpus, root, tok, shard_tokens=300)
    ds = bpekit.TokenDataset(root)
    ds.verify()
    assert len(ds) == m["totals"]["tokens"]
    assert main(["inspect", str(root), "--verify"]) == 0
    assert "written without sha256" in capsys.readouterr().out


def test_the_tokenizer_is_told_by_what_it_encodes_with(tmp_path: Path, tok) -> None:
    same = pickle.loads(pickle.dumps(tok))  # Built anew from its ranks.
    assert same._core is not tok._core and same._core.fingerprint() == tok._core.fingerprint()
    assert len(tok._core.fingerprint()) == 64
    folder = tmp_path / "tok"
    tok.save(folder)
    saved = bpekit.load_tokenizer(folder)
    assert bpekit.load_tokenizer(folder)._core.fingerprint() == saved._core.fingerprint()
    with pytest.warns(UserWarning, match="vocabulary grows to 50,258 ids"):
        other = bpekit.load_tokenizer(folder, special_tokens=["<|endoftext|>", "<|pad|>"])
    assert other._core.fingerprint() != saved._core.fingerprint()


def test_the_manifest_is_rewritten_at_most_so_often_and_once_more_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    manifest = {"shards": []}
    recorder = bpekit.dataset.shards._Recorder(path, manifest)
    with pytest.raises(KeyError), recorder:
        for k in range(3):
            manifest["shards"].append(k)
            recorder.changed()  # Within EVERY seconds of the start: not yet written.
        assert not path.exists()
        raise KeyError("the run fails")
    assert json.loads(path.read_text()) == {"shards": [0, 1, 2]}
    recorder.written_at -= recorder.EVERY
    manifest["shards"].append(3)
    recorder.changed()
    assert json.loads(path.read_text())["shards"] == [0, 1, 2, 3] and not recorder.dirty


def test_a_finished_dataset_missing_a_shard_is_written_again(tmp_path: Path, tok, corpus: list[Path]) -> None:
    root = tmp_path / "ds"
    m = bpekit.encode_dataset(corpus, root, tok, shard_tokens=300)
    want = files_of(root)
    (root / m["splits"]["train"]["shards"][1]["file"]).unlink()
    with pytest.raises(FileNotFoundError, match=r"00001\.npy: missing .*again with resume=False"):
        bpekit.TokenDataset(root)
    assert bpekit.encode_dataset(corpus, root, tok, shard_tokens=300) == m
    assert files_of(root) == want
    (root / m["splits"]["train"]["shards"][0]["file"]).write_bytes(b"cut")
    assert bpekit.encode_dataset(corpus, root, tok, shard_tokens=300) == m
    assert files_of(root) == want
