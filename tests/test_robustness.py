"""Reliability under hostile conditions: forked children, inputs that change while
they are read, memory limits, signals, planted symlinks. Each case that could hang or
kill the interpreter runs in a subprocess with a timeout, so a regression fails the
suite instead of stopping it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import data_path

ROOT = Path(__file__).resolve().parents[1]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux (fork, rlimits)")


def run_script(script: str, *args: str, timeout: float = 120, env: dict[str, str] | None = None):
    """Runs ``script`` in a fresh interpreter; a hang past ``timeout`` fails the test."""
    return run_args(["-c", textwrap.dedent(script), *args], timeout, env)


def run_file(path: Path, *args: str, timeout: float = 120, env: dict[str, str] | None = None):
    """Runs the script file ``path`` as ``run_script`` runs a script's text."""
    return run_args([str(path), *args], timeout, env)


def run_args(args: list[str], timeout: float, env: dict[str, str] | None):
    try:
        return subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung for {timeout} s; output so far: {e.stdout!r} {e.stderr!r}")


# ---------------------------------------------------------------- fork

FORK_SCRIPT = """
import multiprocessing as mp, os, pickle, signal, sys
import bpekit

# At import, so that spawned children (which import this file) have it too.
enc = bpekit.get_encoding("gpt2", path=sys.argv[1])
texts = ["hello world %d" % i for i in range(64)]


def one(t):
    return enc.encode_ordinary(t)


def batch(ts):
    return enc.encode_batch(ts, num_threads=2)


def default_batch(ts):
    return enc.encode_batch(ts)


def bare_fork():
    # A pickled copy, a new encoding built from ranks, a new tokenizer's batch.
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)
        ok = pickle.loads(pickle.dumps(enc)).encode("hello") == enc.encode("hello")
        bpekit.encodings._cache.clear()
        cl = bpekit.get_encoding("cl100k_base", path=sys.argv[1])
        ok &= cl.encode_batch(texts, num_threads=2) == [cl.encode(t) for t in texts]
        t = bpekit.Tokenizer({**{i: bytes([i]) for i in range(256)}, 256: b"he"}, [(b"h", b"e")], ["<|x|>"])
        ok &= t.encode_batch(["he<|x|>"] * 8) == [[256, 257]] * 8
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status


if __name__ == "__main__":
    want_batch = enc.encode_batch(texts, num_threads=2)  # starts a pool's threads
    want_one = [enc.encode_ordinary(t) for t in texts]
    enc.encode_batch(texts)  # and the default pool's
    with mp.get_context(sys.argv[2]).Pool(2) as pool:
        assert pool.map(one, texts) == want_one
        assert pool.map(batch, [texts, texts[:5]]) == [want_batch, want_batch[:5]]
        assert pool.map(default_batch, [texts]) == [want_batch]
    if sys.argv[2] == "fork":
        bare_fork()
    print("ok")
"""


@linux_only
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_after_the_pool_started(method: str, tmp_path: Path) -> None:
    # Issue 22, item 1: a child forked after the parent used the thread pool hung in
    # its first parallel job (its pool's threads were not forked with it).
    encodings = data_path("encodings")
    script = tmp_path / "fork_check.py"
    script.write_text(FORK_SCRIPT)
    proc = run_file(script, str(encodings), method, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok"
