"""One huge piece (tens of MB without a space): merged in O(n log n) by a heap over
pair ranks, and Ctrl-C heard within a second or two. Timed in subprocesses with
generous bounds (the ratio of two sizes, not absolute times)."""

from __future__ import annotations

from _subprocess import linux_only, run_args
from conftest import data_path

HUGE_PIECE_SCRIPT = """
import os, signal, sys, threading, time
import bpekit

enc = bpekit.get_encoding("gpt2", path=sys.argv[1])
letters = os.urandom(int(sys.argv[2])).translate(bytes(97 + b % 26 for b in range(256))).decode()
if sys.argv[3] == "time":
    t = time.perf_counter()
    ids = enc.encode(letters)
    assert enc.decode(ids) == letters
    print(time.perf_counter() - t)
else:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    t = time.perf_counter()
    try:
        enc.encode(letters)
        print("finished", time.perf_counter() - t)
    except KeyboardInterrupt:
        print("interrupted", time.perf_counter() - t)
"""


@linux_only
def test_one_huge_piece_is_n_log_n_and_hears_ctrl_c() -> None:
    # A quadratic merge encodes a 50 MB line without spaces at ~1 MB/s, and Ctrl-C
    # takes 48 s to act. Merging a long piece is a heap over pair ranks (O(n log n)),
    # and checks for Ctrl-C as it goes.
    enc_dir = str(data_path("encodings"))

    def best_of_two(n: int) -> float:
        # The smaller case takes ~0.1 s, where one slow moment of a shared machine
        # moved the ratio past the bound (28.8x in a CI run); the best of two runs
        # of each size keeps the test to what it is for.
        runs = []
        for _ in range(2):
            proc = run_args(["-c", HUGE_PIECE_SCRIPT, enc_dir, str(n), "time"], 300, None)
            assert proc.returncode == 0, proc.stderr[-2000:]
            runs.append(float(proc.stdout))
        return min(runs)

    times = [best_of_two(n) for n in (500_000, 4_000_000)]
    # 8x the bytes: ~9x the time for n log n, 64x for a quadratic merge.
    assert times[1] / times[0] < 24, times
    proc = run_args(["-c", HUGE_PIECE_SCRIPT, enc_dir, "40000000", "interrupt"], 300, None)
    assert proc.returncode == 0, proc.stderr[-2000:]
    what, seconds = proc.stdout.split()
    assert what == "interrupted" and float(seconds) < 3.0, proc.stdout
