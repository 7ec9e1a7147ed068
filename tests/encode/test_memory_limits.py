"""Under a memory limit (RLIMIT_AS), every job of the core -- encode, batches,
iterables, decode, loading, encode_file, counting, training -- fails with MemoryError
or finishes; a failed allocation never aborts the interpreter. Each case runs in a
subprocess, under its own limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from _subprocess import linux_only, run_args
from conftest import data_path

OOM_SCRIPT = """
import resource, sys, os
import hashlib  # imported before the limit: OpenSSL cannot load under it
import base64  # and binascii, struct: a shared object may fail to map under the limit
import bpekit
import bpekit.formats.tiktoken  # get_encoding's lazy import, made before the limit too
from bpekit.formats.gpt2 import load_vocab_merges

data, what, extra = sys.argv[1], sys.argv[2], int(sys.argv[3])
vocab, merges = load_vocab_merges(f"{data}/cs336/gpt2_vocab.json", f"{data}/cs336/gpt2_merges.txt")
tok = bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"])
stories = open(f"{data}/corpora/tinystories_v2_train_head_2MiB.txt", encoding="utf-8").read()
text = (stories * 10)[:20_000_000]
one_line = "ab" * 2_000_000
rss = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
jobs = {
    "encode": lambda: tok.encode(text),
    "encode_one_piece": lambda: tok.encode(one_line),
    "encode_batch": lambda: tok.encode_batch([text[:500_000]] * 8, num_threads=2),
    "encode_iterable": lambda: list(tok.encode_iterable([text])),
    "decode": lambda: tok.decode(list(range(1000)) * 5000),
    "load": lambda: bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"]),
    "get_encoding": lambda: bpekit.get_encoding("cl100k_base", path=f"{data}/encodings"),
    "encode_file": lambda: bpekit.encode_file(f"{data}/corpora/dict_gcide.txt", "out.npy", tok),
    "count": lambda: bpekit.count_pretokens(f"{data}/corpora/dict_gcide.txt", ["<|endoftext|>"]),
    "train": lambda: bpekit.train_bpe(f"{data}/corpora/kjv_bible.txt", 1000, ["<|endoftext|>"]),
}
resource.setrlimit(resource.RLIMIT_AS, (rss + extra, resource.RLIM_INFINITY))
try:
    jobs[what]()
    print("done")
except MemoryError as e:
    print("MemoryError", e)
"""


@linux_only
@pytest.mark.parametrize(
    "what",
    [
        "encode",
        "encode_one_piece",
        "encode_batch",
        "encode_iterable",
        "decode",
        "load",
        "get_encoding",
        "encode_file",
        "count",
        "train",
    ],
)
@pytest.mark.parametrize("extra_mb", [1, 8, 40, 150])
def test_a_memory_limit_gives_memory_error_not_an_abort(tmp_path: Path, what: str, extra_mb: int) -> None:
    # A failed allocation in the core is a MemoryError, not Rust's abort ("memory
    # allocation of 4194304 bytes failed ... Fatal Python error: Aborted"), e.g. in
    # Tokenizer.encode of a 20 MB text under RLIMIT_AS = current size + 8 MB.
    data = data_path()
    proc = run_args(["-c", OOM_SCRIPT, str(data), what, str(extra_mb * 1_000_000)], 120, None)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith(("MemoryError", "done")), proc.stdout
    if what == "encode" and extra_mb == 8:
        assert proc.stdout.startswith("MemoryError")


CS336_MEMORY_SCRIPT = """
import resource, sys
sys.path.insert(0, sys.argv[3])
from adapters import get_tokenizer
from bpekit.formats.gpt2 import load_vocab_merges

vocab, merges = load_vocab_merges(sys.argv[1] + "/gpt2_vocab.json", sys.argv[1] + "/gpt2_merges.txt")
tokenizer = get_tokenizer(vocab, merges, ["<|endoftext|>"])
contents = open(sys.argv[2], encoding="utf-8").read()
# CS336's memory_limit(int(1e6)): address space = current RSS + 1 MB.
rss = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (rss + 1_000_000, -1))
try:
    tokenizer.encode(contents)
    print("no error")
except MemoryError:
    print("MemoryError")
"""


@linux_only
def test_cs336_encode_memory_usage_raises_memory_error(tmp_path: Path) -> None:
    # CS336's test_encode_memory_usage (an xfail: encode takes more than 1 MB) must
    # fail with MemoryError, never kill pytest itself when run alone.
    stories = data_path("corpora", "tinystories_v2_train_head_2MiB.txt").read_text(encoding="utf-8")
    path = tmp_path / "tinystories_sample_5M.txt"
    path.write_text((stories * 3)[:5_000_000], encoding="utf-8")
    here = str(Path(__file__).resolve().parents[1])  # tests/, where adapters.py is
    proc = run_args(["-c", CS336_MEMORY_SCRIPT, str(data_path("cs336")), str(path), here], 120, None)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "MemoryError"
