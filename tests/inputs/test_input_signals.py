"""Ctrl-C (and SIGTERM, SIGHUP) stop a run promptly while it waits on its input: a
pipe that never ends or never writes, a FIFO with no writer, a Python generator
blocked in ``time.sleep`` or ``queue.get()``. Each case runs in a child process with
real signals and a timeout, so that a regression fails instead of hanging the suite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _shared_data import ROOT, data_path

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="pipes, FIFOs and /proc as Linux has them"
)

# Generous against a loaded machine: the run itself stops within ~0.1 s (measured
# 0.09-0.2 s from the signal to the process's exit, interpreter shutdown included).
STOP_SECONDS = 2.0


def _env(tmp_path: Path) -> dict[str, str]:
    # TMPDIR is watched: nothing may be spooled there.
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {
        **os.environ,
        "BPEKIT_ENCODINGS": str(data_path("encodings")),
        "PYTHONPATH": str(ROOT / "python"),
        "TMPDIR": str(tmp_path / "tmp"),
    }


def _default_signals() -> None:
    # A suite run in the background or under nohup passes SIGINT / SIGHUP on ignored,
    # and bpekit rightly leaves an ignored signal ignored: the child gets the default.
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _wait_until_running(proc: subprocess.Popen[str]) -> None:
    """Until the child runs its job's thread (a second thread), and a little more."""
    tasks = Path(f"/proc/{proc.pid}/task")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list(tasks.iterdir())) >= 2:
            break
        time.sleep(0.01)
    time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()


def _stop(proc: subprocess.Popen[str], sig: int) -> tuple[float, str]:
    """Sends ``sig``; the seconds until the child ended, and its stderr."""
    start = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"{signal.Signals(sig).name} did not stop the run within 30 s")
    return time.monotonic() - start, err


def _status(sig: int) -> int:
    return 130 if sig == signal.SIGINT else 128 + sig


@linux_only
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_an_endless_pipe_stops_at_a_signal_and_spools_nothing(tmp_path: Path, sig: int) -> None:
    # `yes hello | bpekit encode /dev/stdin` ignored SIGINT and SIGHUP, and its scratch
    # copy of the pipe grew to 3.4 GB in 5 s. The pipe is read as it comes now.
    feeder = subprocess.Popen(["yes", "hello"], stdout=subprocess.PIPE)
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bpekit.cli",
                "encode",
                "/dev/stdin",
                "-t",
                "gpt2",
                "-o",
                "x.npy",
                "--quiet",
            ],
            stdin=feeder.stdout,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=_env(tmp_path),
            preexec_fn=_default_signals,
        )
        _wait_until_running(proc)
        assert list((tmp_path / "tmp").iterdir()) == []  # nothing spooled
        seconds, err = _stop(proc, sig)
    finally:
        feeder.kill()
        feeder.wait()
    assert proc.returncode == _status(sig), err
    assert "nothing was written" in err and "Traceback" not in err
    assert seconds < STOP_SECONDS, seconds
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]


@linux_only
@pytest.mark.parametrize(
    ("command", "sig"),
    [("encode", signal.SIGINT), ("train", signal.SIGINT), ("train", signal.SIGTERM)],
    ids=["encode-SIGINT", "train-SIGINT", "train-SIGTERM"],
)
def test_a_silent_pipe_stops_at_a_signal(tmp_path: Path, command: str, sig: int) -> None:
    # `sleep 60 | bpekit encode /dev/stdin` and `bpekit train /dev/stdin` ignored
    # signals until the writer closed: the read of the pipe could not be cancelled.
    args = ["-t", "gpt2", "-o", "x.npy"] if command == "encode" else ["--vocab-size", "300", "--out", "tok"]
    writer = subprocess.Popen(["sleep", "60"], stdout=subprocess.PIPE)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bpekit.cli", command, "/dev/stdin", *args, "--quiet"],
            stdin=writer.stdout,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=_env(tmp_path),
            preexec_fn=_default_signals,
        )
        _wait_until_running(proc)
        seconds, err = _stop(proc, sig)
    finally:
        writer.kill()
        writer.wait()
    assert proc.returncode == _status(sig), err
    assert "nothing was written" in err and "Traceback" not in err
    assert seconds < STOP_SECONDS, seconds
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]


@linux_only
def test_a_fifo_without_a_writer_stops_at_a_signal(tmp_path: Path) -> None:
    # Its open() waited, uncancellable, for a writer that never came.
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpekit.cli", "encode", str(fifo), "-t", "gpt2", "-o", "x.npy", "--quiet"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        preexec_fn=_default_signals,
    )
    _wait_until_running(proc)
    seconds, err = _stop(proc, signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "terminated (SIGTERM); nothing was written" in err
    assert seconds < STOP_SECONDS, seconds
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fifo", "tmp"]


@linux_only
def test_pipes_and_fifos_are_read_whole_as_they_come(tmp_path: Path) -> None:
    """Streamed, not spooled: a pipe of text or JSON lines, a FIFO written by another
    process and a compressed FIFO give what their text as a file gives."""
    import gzip
    import json

    import bpekit

    tok = bpekit.get_encoding("gpt2")
    text = "".join(f"line {i} of a pipe <|endoftext|> more\n" for i in range(30_000))
    (tmp_path / "t.txt").write_text(text, encoding="utf-8")
    want = bpekit.encode_file(tmp_path / "t.txt", tmp_path / "want.npy", tok, chunk_size=4096)
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(text.encode()))
    for name in ("p.txt", "p.txt.gz"):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        writer = _copy_into(tmp_path / name.replace("p.", "t."), fifo)
        try:
            got = bpekit.encode_file(fifo, tmp_path / "got.npy", tok, chunk_size=4096)
        finally:
            writer.wait(timeout=30)
        assert got == want
        assert (
            bpekit.load_tokens(tmp_path / "got.npy").tolist()
            == bpekit.load_tokens(tmp_path / "want.npy").tolist()
        )
        fifo.unlink()
    lines = "".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(5000))
    (tmp_path / "t.jsonl").write_text(lines, encoding="utf-8")
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    writer = _copy_into(tmp_path / "t.jsonl", fifo)
    try:
        counts = bpekit.count_pretokens(fifo)
    finally:
        writer.wait(timeout=30)
    assert counts.to_dict()[b"doc"] == 5000


def _copy_into(source: Path, fifo: Path) -> subprocess.Popen[bytes]:
    """Another process that writes ``source``'s bytes into ``fifo``."""
    script = "import shutil, sys; shutil.copyfileobj(open(sys.argv[1], 'rb'), open(sys.argv[2], 'wb'))"
    return subprocess.Popen([sys.executable, "-c", script, str(source), str(fifo)])


GENERATOR_SCRIPT = """
import os, queue, signal, sys, threading, time
import bpekit

signal.signal(signal.SIGINT, signal.default_int_handler)
events = []

def documents():
    try:
        yield "hello world"
        if sys.argv[1] == "sleep":
            time.sleep(60)
        else:
            queue.Queue().get()
        yield "never"
    finally:
        events.append("generator closed")

threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.perf_counter()
try:
    if sys.argv[2] == "count":
        bpekit.count_pretokens(documents())
    else:
        bpekit.encode_file(documents(), "out.npy", bpekit.get_encoding("gpt2"))
    print("finished")
except KeyboardInterrupt:
    events.append("interrupted")
    print(" / ".join(events), round(time.perf_counter() - start - 1.0, 3))
"""


@linux_only
@pytest.mark.parametrize("blocked_in", ["sleep", "queue"])
@pytest.mark.parametrize("job", ["count", "encode"])
def test_ctrl_c_stops_a_blocked_generator_as_a_plain_loop_would(
    tmp_path: Path, blocked_in: str, job: str
) -> None:
    # A generator blocked in time.sleep(6) held KeyboardInterrupt back until it
    # yielded; one blocked on queue.get() was never interrupted. It is pulled on the
    # calling (main) thread now, where Python runs its signal handlers: the interrupt
    # is raised inside the generator, which closes, as in a `for` loop over it.
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(GENERATOR_SCRIPT), blocked_in, job],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_env(tmp_path),
            timeout=30,
            preexec_fn=_default_signals,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("Ctrl-C did not stop the run within 30 s")
    assert done.returncode == 0, done.stderr
    what, seconds = done.stdout.rsplit(" ", 1)
    assert what == "generator closed / interrupted", done.stdout
    assert float(seconds) < STOP_SECONDS, done.stdout
    assert not (tmp_path / "out.npy").exists()
