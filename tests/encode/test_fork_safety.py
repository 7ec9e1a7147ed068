"""Encoding in a forked or spawned child after the parent's thread pools have started:
``multiprocessing`` pools (fork and spawn) and a bare ``os.fork``, in which a pickled
copy, a new encoding and a new tokenizer's batch all work. A pool's threads are not
forked with the process, so a child that reused them would wait forever in its first
parallel job; the check runs in a subprocess with a timeout so that such a hang fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from _subprocess import linux_only, run_file
from conftest import data_path

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
    # A child forked after the parent used the thread pool must not wait in its
    # first parallel job for the pool's threads, which were not forked with it.
    encodings = data_path("encodings")
    script = tmp_path / "fork_check.py"
    script.write_text(FORK_SCRIPT)
    proc = run_file(script, str(encodings), method, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok"
