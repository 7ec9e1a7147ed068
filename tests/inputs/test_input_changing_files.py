"""An input file that shrinks while it is mapped, during encode, train and
count_pretokens: an error naming the file and both sizes, never a SIGBUS that kills the
interpreter, and no temporary file left behind. The run is a subprocess with a timeout,
held at the right moment by a file lease."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _shared_data import ROOT
from _subprocess import linux_only
from conftest import data_path

COUNT_SCRIPT = """
import sys, bpekit
try:
    bpekit.count_pretokens(sys.argv[1:], ["<|endoftext|>"])
except OSError as e:
    print("OSError:", e)
"""


@linux_only
@pytest.mark.parametrize("how", ["encode", "train", "count_pretokens"])
@pytest.mark.parametrize(("size", "shrink_to"), [(1 << 20, 100), (5000, 4500)])
def test_an_input_that_shrinks_while_mapped_is_an_error(
    tmp_path: Path, how: str, size: int, shrink_to: int
) -> None:
    # Reading a mapped input past its new end faults (SIGBUS); the run must end with
    # a message instead and leave no hidden temporary file. The file is mapped first;
    # the file after it, on which this test holds a lease, keeps the run waiting in
    # open() until the first has been cut (a FIFO would not: pipes are streamed after
    # the mapped files). (1 MB -> 100 bytes faults; 5000 -> 4500 stays inside the
    # last page, where reads see zeros and nothing faults.)
    import fcntl
    import signal

    victim = tmp_path / "a.txt"
    victim.write_bytes(b"hello world\n" * (size // 12) + b"x" * (size % 12))
    held = tmp_path / "b.txt"
    held.write_text("more text\n")
    lease = os.open(held, os.O_RDONLY)
    try:
        fcntl.fcntl(lease, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    except OSError as e:
        os.close(lease)
        pytest.skip(f"no file leases here ({e})")
    if how == "count_pretokens":
        argv = ["-c", COUNT_SCRIPT, str(victim), str(held)]
    elif how == "encode":
        argv = ["-m", "bpekit.cli", "encode", str(victim), str(held), "-t", "gpt2", "-o", "out.npy"]
    else:
        argv = ["-m", "bpekit.cli", "train", str(victim), str(held), "--vocab-size", "300", "--out", "tok"]
    # The run's open() of b.txt breaks the lease, which the kernel tells this
    # process with SIGIO (blocked here, and waited for).
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGIO])
    try:
        proc = subprocess.Popen(
            [sys.executable, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "BPEKIT_ENCODINGS": str(data_path("encodings")), "PYTHONPATH": str(ROOT)},
        )
        try:
            assert signal.sigtimedwait([signal.SIGIO], 60) is not None, "the run never opened b.txt"
            os.truncate(victim, shrink_to)
            os.close(lease)  # gives the lease up: the run's open() returns
            lease = -1
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    finally:
        if lease >= 0:
            os.close(lease)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    message = f"{victim}: changed size while being read (was {size} bytes, now {shrink_to})"
    if how == "count_pretokens":
        assert proc.returncode == 0, err
        assert out.startswith(f"OSError: {message}")
    else:
        assert proc.returncode == 2, err
        assert f"bpekit {how}: error: {message}" in err
        assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]
