"""A run stopped part way: SIGTERM and SIGHUP (a timeout, a closed terminal) clean up
as Ctrl-C does, leaving no temporary file, and the message says whether the output was
already in place when the interrupt came."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _shared_data import ROOT
from _subprocess import linux_only
from conftest import data_path


@linux_only
@pytest.mark.parametrize(
    ("command", "sig"),
    [("encode", "SIGTERM"), ("encode", "SIGHUP"), ("train", "SIGTERM")],
)
def test_termination_mid_run_cleans_up_like_ctrl_c(tmp_path: Path, command: str, sig: str) -> None:
    # SIGTERM or SIGHUP (a timeout, a closed terminal) stops a run as Ctrl-C does,
    # removing its multi-MB hidden temporary file. The input is a pipe this test
    # holds open, so the run is surely under way when the signal comes.
    import signal
    import time

    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    out = tmp_path / ("out.npy" if command == "encode" else "tok")
    args = ["-t", "gpt2"] if command == "encode" else ["--vocab-size", "300"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpekit.cli", command, str(fifo), *args, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "BPEKIT_ENCODINGS": str(data_path("encodings"))},
        # A suite run under nohup passes SIGHUP on ignored, and bpekit leaves an
        # ignored signal ignored, as it should: the child gets the default back.
        preexec_fn=lambda: signal.signal(getattr(signal, sig), signal.SIG_DFL),
    )
    try:
        # Opened without blocking, retried until the run has the pipe open: a child that
        # dies at start would leave a blocking open() waiting for ever.
        deadline = time.monotonic() + 60
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:  # ENXIO: no reader yet
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline, "the run never opened its input"
                time.sleep(0.01)
        os.set_blocking(fd, True)
        with open(fd, "w") as writer:
            writer.write("hello world\n" * 100_000)
            writer.flush()
            proc.send_signal(getattr(signal, sig))
            time.sleep(0.5)  # the signal is seen while the run waits for more input
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + getattr(signal, sig), err
    assert f"terminated ({sig}); nothing was written" in err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fifo"]


def test_an_interrupt_after_the_output_is_in_place_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A Ctrl-C landing just after the final rename does not say "nothing was
    # written": the old output has been replaced by then.
    import bpekit.cli.encode as encode_cli
    from bpekit.cli import main

    src = tmp_path / "in.txt"
    src.write_text("hello world")
    out = tmp_path / "out.npy"
    out.write_bytes(b"old")
    real = encode_cli.write_tokens  # type: ignore[attr-defined]

    def interrupted_after(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(encode_cli, "write_tokens", interrupted_after)
    monkeypatch.setenv("BPEKIT_ENCODINGS", str(data_path("encodings")))
    assert main(["encode", str(src), "-t", "gpt2", "-o", str(out), "--quiet"]) == 130
    assert out.read_bytes() != b"old"
    err = capsys.readouterr().err
    assert f"bpekit: interrupted after the output was complete: wrote {out}" in err

    def interrupted_before(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(encode_cli, "write_tokens", interrupted_before)
    assert main(["encode", str(src), "-t", "gpt2", "-o", str(out), "--quiet"]) == 130
    assert "bpekit: interrupted; nothing was written" in capsys.readouterr().err


def test_interrupt_messages_tell_what_is_on_disk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from bpekit.cli import _identity, _interrupted_message

    out = tmp_path / "out.npy"
    args = argparse.Namespace(command="encode", out=out)
    before = {out: _identity(out)}
    assert (
        _interrupted_message(args, before, KeyboardInterrupt()) == "bpekit: interrupted; nothing was written"
    )
    out.write_bytes(b"new")
    msg = _interrupted_message(args, before, KeyboardInterrupt())
    assert msg == f"bpekit: interrupted after the output was complete: wrote {out}"
