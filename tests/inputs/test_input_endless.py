"""Inputs that may never end: a device such as /dev/zero is refused at once, and a
pipe is read a block at a time as it comes, in bounded memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from _subprocess import linux_only, run_args
from conftest import data_path


@linux_only
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_endless_device_is_refused_at_once(tmp_path: Path, device: str) -> None:
    # /dev/zero or /dev/urandom as an input of train or encode would be read until
    # memory ran out.
    for args in (
        ["encode", device, "-t", "gpt2", "-o", str(tmp_path / "o.npy")],
        ["train", device, "--vocab-size", "300", "--out", str(tmp_path / "tok")],
    ):
        proc = run_args(["-m", "bpekit.cli", *args], 60, {"BPEKIT_ENCODINGS": str(data_path("encodings"))})
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().endswith(
            f"error: {device}: is a device, not a file of text (it may never end); give a file or a pipe"
        )
    assert list(tmp_path.iterdir()) == []


PIPE_SCRIPT = """
import resource, subprocess, sys
feeder = subprocess.Popen(["sh", "-c", "yes 'hello world, here is a line' | head -c 200000000"],
                          stdout=subprocess.PIPE)
enc = subprocess.run([sys.executable, "-m", "bpekit.cli", "encode", "/dev/stdin", "-t", "gpt2",
                      "-o", sys.argv[1], "--quiet"], stdin=feeder.stdout, capture_output=True, text=True)
feeder.wait()
assert enc.returncode == 0, enc.stderr
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


@linux_only
def test_a_long_pipe_is_encoded_in_bounded_memory(tmp_path: Path) -> None:
    # A pipe is read as it comes, a block at a time, never whole into memory (an
    # endless one would take all of it).
    proc = run_args(
        ["-c", PIPE_SCRIPT, str(tmp_path / "o.npy")], 300, {"BPEKIT_ENCODINGS": str(data_path("encodings"))}
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout) < 150, f"peak {proc.stdout.strip()} MiB for 200 MB through a pipe"
    import numpy as np

    assert np.load(tmp_path / "o.npy", mmap_mode="r").shape[0] > 40_000_000
