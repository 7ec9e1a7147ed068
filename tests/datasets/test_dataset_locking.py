"""One run at a time on a dataset folder (and on a distributed ``work_dir``): a run
holds a kernel lock on a file inside the folder for its whole length; a second run,
in another process or the same one, fails at once in one line naming the folder and
the holder's pid; a killed holder leaves no lock behind. Every case with a second
process runs it with a timeout, so a hang fails the test instead of the suite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import bpekit_encoding

import bpekit
from bpekit._lock import LOCK_NAME, FolderLock

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs flock and signals")

HERE = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}

# Encodes a generator into the dataset folder argv[1]; the generator waits (holding the
# run, and so the lock, open) until the file argv[2] exists.
HOLDER = textwrap.dedent(
    """
    import pathlib, sys, time
    import bpekit
    from conftest import bpekit_encoding
    go = pathlib.Path(sys.argv[2])
    def docs():
        yield "the first document"
        deadline = time.monotonic() + 60
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        yield "the last document"
    bpekit.encode_dataset(docs(), sys.argv[1], bpekit_encoding("gpt2"), num_threads=1)
    """
)


def start_holder(ds: Path, go: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(ds), str(go)],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lock = ds / LOCK_NAME
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if child.poll() is not None:
            pytest.fail(f"the holder ended early: {child.communicate()}")
        try:
            if lock.read_text().startswith(f"{child.pid} "):
                return child
        except OSError:
            pass
        time.sleep(0.01)
    child.kill()
    pytest.fail("the holder never took the lock")


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, "-m", "bpekit.cli", *args],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung for {timeout} s: {e.stdout!r} {e.stderr!r}")


def text_file(path: Path, words: str, n: int) -> Path:
    path.write_text("".join(f"{words} {i}<|endoftext|>" for i in range(n)), encoding="utf-8")
    return path


def test_a_second_run_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    ds, go = tmp_path / "ds", tmp_path / "go"
    holder = start_holder(ds, go)
    try:
        other = text_file(tmp_path / "b.txt", "other words", 200)
        t0 = time.monotonic()
        # --overwrite too: without the lock it deleted the holder's files.
        second = cli("encode", str(other), "-t", "gpt2", "-o", str(ds), "--overwrite", "--quiet")
        assert time.monotonic() - t0 < 30  # at once: it never waits for the holder
        lines = second.stderr.strip().splitlines()
        assert second.returncode == 2 and len(lines) == 1, second.stderr
        assert str(ds) in lines[0] and f"pid {holder.pid}" in lines[0], lines[0]
        assert "another bpekit run" in lines[0]
    finally:
        go.touch()
        _, err = holder.communicate(timeout=120)
    assert holder.returncode == 0, err
    # The holder's dataset, whole, and no lock file left behind.
    ds_read = bpekit.TokenDataset(ds)
    ds_read.verify()
    assert ds_read.n_documents == 2 and not (ds / LOCK_NAME).exists()


def test_a_killed_holder_leaves_no_lock(tmp_path: Path) -> None:
    ds, go = tmp_path / "ds", tmp_path / "go"
    holder = start_holder(ds, go)
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=60)
    assert (ds / LOCK_NAME).exists()  # the file stays; its lock died with the process
    other = text_file(tmp_path / "b.txt", "other words", 50)
    done = cli("encode", str(other), "-t", "gpt2", "-o", str(ds), "--overwrite", "--quiet")
    assert done.returncode == 0, done.stderr
    assert bpekit.TokenDataset(ds).n_documents == 50 and not (ds / LOCK_NAME).exists()


def test_two_runs_at_once_never_mix_their_shards(tmp_path: Path) -> None:
    a = text_file(tmp_path / "a.txt", "alpha beta gamma " * 20, 3000)
    b = text_file(tmp_path / "b.txt", "delta epsilon " * 30, 3000)
    for k in range(2):
        ds = tmp_path / f"ds{k}"
        args = ["-t", "gpt2", "-o", str(ds), "--shard-tokens", "50000", "--quiet"]
        runs = [
            subprocess.Popen(
                [sys.executable, "-m", "bpekit.cli", "encode", str(src), *args],
                env=ENV,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for src in (a, b)
        ]
        results = [(r.communicate(timeout=300), r.returncode) for r in runs]
        for (_, err), code in results:
            # Each run either wrote the dataset, or was refused: by the lock, or after
            # the other finished, as a dataset of other inputs.
            assert code == 0 or ("another bpekit run" in err or "other inputs" in err), err
        assert any(code == 0 for _, code in results)
        check = cli("inspect", str(ds), "--verify")
        assert check.returncode == 0, check.stdout + check.stderr


def test_the_same_process_cannot_run_twice_on_a_folder(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    with FolderLock(ds):
        with pytest.raises(BlockingIOError, match=rf"{ds}: another bpekit run \(pid {os.getpid()}\)"):
            bpekit.encode_dataset(iter(["one document"]), ds, bpekit_encoding("gpt2"))
    # Released: the run goes ahead, and leaves the folder as the dataset alone.
    bpekit.encode_dataset(iter(["one document"]), ds, bpekit_encoding("gpt2"))
    assert sorted(p.name for p in ds.iterdir()) == ["manifest.json", "train"]


# Holds the folder argv[1] as a work_dir until its stdin closes.
WORK_HOLDER = textwrap.dedent(
    """
    import sys
    from bpekit._lock import FolderLock
    with FolderLock(sys.argv[1], "work_dir"):
        print("held", flush=True)
        sys.stdin.read()
    """
)


def test_a_work_dir_is_held_by_one_distributed_run(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import bpekit.distributed as dist

    work = tmp_path / "work"
    src = text_file(tmp_path / "a.txt", "some words", 100)
    holder = subprocess.Popen(
        [sys.executable, "-c", WORK_HOLDER, str(work)],
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        message = rf"{work}: another bpekit run \(pid {holder.pid}\) is writing this work_dir"
        with pytest.raises(BlockingIOError, match=message):
            dist.encode_dataset(src, tmp_path / "ds", "gpt2", backend="local", workers=1, work_dir=work)
        with pytest.raises(BlockingIOError, match=message):
            dist.count_pretokens(src, ["<|endoftext|>"], backend="local", workers=1, work_dir=work)
    finally:
        holder.communicate(timeout=60)
    assert list(work.iterdir()) == []  # the holder's lock file went with it


def test_a_manifest_left_half_written_by_a_killed_run_is_the_datasets_own(tmp_path: Path) -> None:
    # A run killed while writing its manifest left ".manifest.json.XXXX.tmp", and the
    # next run refused the folder as holding other files.
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / ".manifest.json.c2ee6qln.tmp").write_text('{"format_ver', encoding="utf-8")
    other = text_file(tmp_path / "b.txt", "other words", 50)
    done = cli("encode", str(other), "-t", "gpt2", "-o", str(ds), "--quiet")
    assert done.returncode == 0, done.stderr
    assert bpekit.TokenDataset(ds).n_documents == 50
    assert sorted(p.name for p in ds.iterdir()) == ["manifest.json", "train"]
