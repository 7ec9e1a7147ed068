"""encode_file / load_tokens / get_batch and the encode, decode and inspect commands."""

from __future__ import annotations

import os
import random
import signal
import threading

import numpy as np
import pytest
from conftest import bpekit_encoding, data_path

import bpekit
from bpekit.cli import main


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory):
    """Three files: TinyStories (with <|endoftext|>), Chinese text, and CRLF English."""
    d = tmp_path_factory.mktemp("docs")
    (d / "a.txt").write_text(
        data_path("corpora", "tinystories_v2_train_head_2MiB.txt").read_text(encoding="utf-8")[:600_000],
        encoding="utf-8",
    )
    (d / "b.txt").write_text(
        data_path("multilingual", "fortunes_zh.txt").read_text(encoding="utf-8")[:200_000], encoding="utf-8"
    )
    (d / "c.txt").write_bytes(data_path("corpora", "gutenberg_14263_katrine.txt").read_bytes()[:300_000])
    return d


def _expected(tok, files) -> list[int]:
    ids: list[int] = []
    for f in files:
        ids += tok.encode(f.read_bytes().decode("utf-8"), allowed_special="all")
    return ids


# Chunks of 200 KB taper (down to 64 KiB) through most of these 700 KB with 2 threads.
@pytest.mark.parametrize("chunk_size", [50_000, 200_000])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])
def test_encode_file_equals_encode(docs_dir, tmp_path, name: str, threads: int, chunk_size: int) -> None:
    tok = bpekit_encoding(name)
    files = sorted(docs_dir.iterdir())
    out = tmp_path / "tokens.npy"
    n = bpekit.encode_file(docs_dir, out, tok, num_threads=threads, chunk_size=chunk_size)
    tokens = bpekit.load_tokens(out)
    assert isinstance(tokens, np.memmap)
    assert tokens.dtype == (np.uint16 if name == "gpt2" else np.uint32)
    expected = _expected(tok, files)
    assert n == len(tokens) == len(expected)
    assert tokens.tolist() == expected
    # One file, and a list of files in a given order.
    bpekit.encode_file(files[1], out, tok, num_threads=threads)
    assert bpekit.load_tokens(out).tolist() == _expected(tok, [files[1]])
    bpekit.encode_file([files[2], files[0]], out, tok, num_threads=threads, dtype="uint32")
    assert bpekit.load_tokens(out).dtype == np.uint32
    assert bpekit.load_tokens(out).tolist() == _expected(tok, [files[2], files[0]])


@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])
def test_two_threads_grow_the_shared_table(tmp_path, name: str) -> None:
    # 70k distinct short words: the threads' shared piece table (32k pairs at first)
    # fills up and is replaced by larger copies between chunks while both encode.
    def word(i: int) -> str:
        letters = ""
        while True:
            letters += chr(ord("a") + i % 26)
            i //= 26
            if i == 0:
                return letters

    text = " ".join(word(i) + ("\n" if i % 13 == 0 else "") for i in range(70_000)) * 2
    (tmp_path / "w.txt").write_text(text, encoding="utf-8")
    tok = bpekit_encoding(name)
    out = tmp_path / "w.npy"
    bpekit.encode_file(tmp_path / "w.txt", out, tok, num_threads=2, chunk_size=8_192)
    assert bpekit.load_tokens(out).tolist() == tok.encode(text)
    batch = tok.encode_batch(text.split("\n"), num_threads=2)
    assert batch == [tok.encode(t) for t in text.split("\n")]


def test_encode_file_does_not_import_numpy() -> None:
    # numpy's import starts OpenBLAS threads that spin for ~0.1 s of CPU, taken from
    # the encoder's threads on a small machine; encoding files must not need it.
    import subprocess
    import sys

    code = "import sys, bpekit; bpekit.encode_file; import bpekit.cli.encode; print('numpy' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False"


def test_dtype_by_name_or_numpy_type(tmp_path) -> None:
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], [])
    (tmp_path / "x.txt").write_text("abc", encoding="utf-8")
    for dtype, want in [("uint32", np.uint32), (np.uint16, np.uint16), ("<u4", np.uint32)]:
        bpekit.encode_file(tmp_path / "x.txt", tmp_path / "x.npy", tok, dtype=dtype)
        tokens = bpekit.load_tokens(tmp_path / "x.npy")
        assert tokens.dtype == want and tokens.tolist() == [97, 98, 99]
    with pytest.raises(ValueError, match="uint16 or uint32, not int64"):
        bpekit.encode_file(tmp_path / "x.txt", tmp_path / "y.npy", tok, dtype="int64")


def test_special_tokens_kept_and_dtype_checked(tmp_path) -> None:
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    (tmp_path / "x.txt").write_text("ab<|endoftext|>c", encoding="utf-8")
    bpekit.encode_file(tmp_path / "x.txt", tmp_path / "x.npy", tok)
    assert bpekit.load_tokens(tmp_path / "x.npy").tolist() == [97, 98, 256, 99]
    with pytest.raises(ValueError, match="uint16"):
        bpekit.encode_file(
            tmp_path / "x.txt", tmp_path / "y.npy", bpekit_encoding("o200k_base"), dtype="uint16"
        )
    assert not (tmp_path / "y.npy").exists()


def test_invalid_utf8_names_file_and_offset(tmp_path) -> None:
    tok = bpekit_encoding("gpt2")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"hello \xff world")
    with pytest.raises(ValueError, match=r"bad.txt: invalid UTF-8 at byte offset 6"):
        bpekit.encode_file(bad, tmp_path / "o.npy", tok)
    assert list(tmp_path.iterdir()) == [bad]
    bpekit.encode_file(bad, tmp_path / "o.npy", tok, errors="replace")
    assert tok.decode(bpekit.load_tokens(tmp_path / "o.npy").tolist()) == "hello \ufffd world"


def test_interrupted_encode_leaves_no_output(tmp_path) -> None:
    tok = bpekit_encoding("cl100k_base")
    # 8 x 40 MB: seconds of work, so the signal lands mid-encode however fast it
    # gets (one copy alone can finish before the signal comes).
    big = [data_path("corpora", "dict_gcide.txt")] * 8
    out = tmp_path / "tokens.npy"
    # A suite started in the background by a shell inherits SIGINT ignored, and then
    # Python raises no KeyboardInterrupt: Ctrl-C is put back for this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            bpekit.encode_file(big, out, tok, num_threads=1)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_in_the_last_chunk_leaves_the_old_output(tmp_path) -> None:
    """A Ctrl-C while the one chunk of a file is encoded: the encode saw it only at its
    end, after its file had replaced the old output, and then raised anyway. The
    watcher now looks for a stop before the file is put in place."""
    tok = bpekit_encoding("gpt2")
    rng = random.Random(0)
    words = [" " + "".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(5000)]
    line = "".join(rng.choice(words) for _ in range(300_000)) + "\n"
    src = tmp_path / "one_line.txt"
    # Lines that start with a space are no place to cut for gpt2: one chunk of 78 MB
    # (a second or more of work).
    src.write_text(line * 40, encoding="utf-8")
    out = tmp_path / "tokens.npy"
    out.write_bytes(b"OLD CONTENT")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            bpekit.encode_file(src, out, tok)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert out.read_bytes() == b"OLD CONTENT"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one_line.txt", "tokens.npy"]


def test_get_batch() -> None:
    data = np.arange(100, dtype=np.uint16)
    x, y = bpekit.get_batch(data, batch_size=32, context_length=7, rng=np.random.default_rng(0))
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape == (32, 7)
    assert x.dtype == np.int64
    assert (y == x + 1).all()
    assert (np.diff(x, axis=1) == 1).all()
    assert x[:, 0].max() < 100 - 7
    with pytest.raises(ValueError):
        bpekit.get_batch(data[:5], 2, 7)
    # Bad arguments are named (a context length of 0 or -1 gave empty batches).
    for batch_size, context_length in [(2, 0), (2, -1), (-1, 4), (0, 4), (2, 3.0), (None, 4), (True, 4)]:
        with pytest.raises(ValueError, match="must be a positive integer"):
            bpekit.get_batch(data, batch_size, context_length)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="integer token ids"):
        bpekit.get_batch(data.astype(np.float32), 2, 4)


def test_decode_cli_streams_blocks_and_names_bad_input(tmp_path, capsys, monkeypatch) -> None:
    """`bpekit decode` decodes a block of ids at a time (it held every id and all the
    text at once), joining a character split between blocks as one decode would."""
    import bpekit.cli.decode as decode_command

    tok = bpekit_encoding("cl100k_base")
    text = "héllo wörld 🙃 中文\n" * 500
    ids = np.array(tok.encode(text), dtype=np.uint32)
    np.save(tmp_path / "t.npy", ids)
    monkeypatch.setattr(decode_command, "BLOCK", 7)  # splits characters between blocks
    assert main(["decode", str(tmp_path / "t.npy"), "-t", "cl100k_base"]) == 0
    assert capsys.readouterr().out == text
    np.save(tmp_path / "f.npy", ids.astype(np.float64))
    np.save(tmp_path / "m.npy", ids.reshape(-1, 1))
    for bad in ("f.npy", "m.npy"):
        assert main(["decode", str(tmp_path / bad), "-t", "cl100k_base"]) == 2
        assert "expected a 1-D integer array of token ids" in capsys.readouterr().err
    (tmp_path / "ids.txt").write_text("15339 99999999999999999999 1\n", encoding="utf-8")
    assert main(["decode", str(tmp_path / "ids.txt"), "-t", "cl100k_base"]) == 2
    want = "ids.txt, line 1 (index 1): token id 99999999999999999999 is not in the vocabulary\n"
    assert want in capsys.readouterr().err


def test_inspect_reads_the_file_as_encode_does(tmp_path, capsys) -> None:
    """`bpekit inspect --file` read text with newline translation (CRLF became LF), so its
    bytes/token was another file's."""
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(b"line one\r\nline two\r\n" * 100)
    assert main(["inspect", "gpt2", "--file", str(crlf), "--longest", "0"]) == 0
    tok = bpekit_encoding("gpt2")
    n = len(tok.encode(crlf.read_bytes().decode()))
    assert f"{len(crlf.read_bytes()):,} bytes -> {n:,} tokens" in capsys.readouterr().out
    (tmp_path / "bad.txt").write_bytes(b"ok \xff")
    assert main(["inspect", "gpt2", "--file", str(tmp_path / "bad.txt")]) == 2
    assert "bad.txt: invalid UTF-8 at byte offset 3; pass --errors replace" in capsys.readouterr().err
    assert main(["inspect", "gpt2", "--file", str(tmp_path / "bad.txt"), "--errors", "replace"]) == 0


def test_cli_encode_decode_inspect(tmp_path, capsys, monkeypatch) -> None:
    src = data_path("cs336", "tinystories_sample.txt")
    out = tmp_path / "t.npy"
    # --threads is every thread of the command: rayon's global pool (loading an
    # encoding) reads RAYON_NUM_THREADS when a fresh process first uses it. It is set
    # while the command runs, and the caller's value is back afterwards.
    import bpekit.cli.encode as encode_command

    seen: list[str | None] = []
    run = encode_command.run
    monkeypatch.setattr(
        encode_command, "run", lambda a: (seen.append(os.environ.get("RAYON_NUM_THREADS")), run(a))[1]
    )
    monkeypatch.setenv("RAYON_NUM_THREADS", "7")
    assert main(["encode", str(src), "-t", "gpt2", "-o", str(out), "--quiet", "--threads", "2"]) == 0
    assert seen == ["2"] and os.environ["RAYON_NUM_THREADS"] == "7"
    assert "tokens" in capsys.readouterr().out
    assert main(["decode", str(out), "-t", "gpt2"]) == 0
    assert capsys.readouterr().out == src.read_text(encoding="utf-8")
    ids_txt = tmp_path / "ids.txt"
    ids_txt.write_text("15496 995\n", encoding="utf-8")
    assert main(["decode", str(ids_txt), "-t", "gpt2"]) == 0
    assert capsys.readouterr().out == "Hello world"
    assert main(["inspect", "cl100k_base", "--file", str(src)]) == 0
    text = capsys.readouterr().out
    assert "100,261 tokens" in text and "bytes/token" in text and "<|endoftext|>" in text


def test_cli_with_trained_vocab_folder(tmp_path, capsys) -> None:
    corpus = data_path("cs336", "tinystories_sample.txt")
    vocab, merges = bpekit.train_bpe(corpus, 400, ["<|endoftext|>"])
    tok = bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"])
    tok.save(tmp_path / "tok")
    out = tmp_path / "t.npy"
    assert main(["encode", str(corpus), "-t", str(tmp_path / "tok"), "-o", str(out), "--quiet"]) == 0
    assert bpekit.load_tokens(out).tolist() == tok.encode(corpus.read_text(encoding="utf-8"))
    assert main(["inspect", str(tmp_path / "tok")]) == 0
    assert "'<|endoftext|>'=256" in capsys.readouterr().out


RSS_SCRIPT = """
import resource, sys
import bpekit
tok = bpekit.get_encoding("gpt2")
tok.encode("warm up " * 1000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
bpekit.encode_file(sys.argv[1], sys.argv[2], tok, num_threads=2)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def _as_json_lines(text: bytes) -> bytes:
    import json

    lines = text.decode("utf-8").splitlines()
    return "".join(json.dumps({"text": line}) + "\n" for line in lines).encode("utf-8")


@pytest.mark.parametrize("layout", ["lines", "json lines", "crlf", "russian", "gzip"])
def test_encode_file_memory_does_not_grow_with_input(tmp_path, layout: str) -> None:
    """The other layouts: chunks that ended only at a `\n` between printable ASCII and
    an ASCII letter or digit would make JSON lines, CRLF text and paragraphs in
    Cyrillic one chunk, held whole with its ids (peak RSS 120-180 MiB higher for
    these 42 MB)."""
    import subprocess
    import sys

    # Without special tokens, whose starts are cuts of their own.
    stories = data_path("corpora", "tinystories_v2_train_head_2MiB.txt").read_bytes()
    stories = stories.replace(b"<|endoftext|>", b"")
    unit = {
        "lines": stories,
        "json lines": _as_json_lines(stories),
        "crlf": stories.replace(b"\n", b"\r\n"),
        # Paragraphs separated by blank lines ("\n\n" only), in Cyrillic.
        "russian": data_path("multilingual", "tinystories_ru_sample.txt")
        .read_bytes()
        .replace(b"<|endoftext|>", b""),
        "gzip": stories,
    }[layout]
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        for _ in range(42_000_000 // len(unit) + 1):  # >= 42 MB
            f.write(unit)
    if layout == "gzip":
        # Twice as much, decompressed into a mapped temporary file: it was decompressed
        # into memory whole (+84 MB on top of the rest).
        import gzip

        with gzip.open(tmp_path / "big.txt.gz", "wb", compresslevel=1) as f:
            f.write(big.read_bytes() * 2)
        big.unlink()
        big = tmp_path / "big.txt.gz"
    proc = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT, str(big), str(tmp_path / "big.npy")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    growth_mib = int(proc.stdout.split()[-1]) / 1024
    # What an encode holds whatever the input's size: the shared short table (up to 32
    # MiB), the chunks in flight with their ids, the writer's buffer; 53-67 MiB measured
    # for 42, 84 and 168 MB of each layout (less under pytest). The input is mapped, and
    # its pages are released behind each written chunk. One chunk of 42 MB held whole
    # with its ids grew it by 120-180 MiB.
    assert growth_mib < 90, f"peak RSS grew by {growth_mib:.0f} MiB while encoding a 42 MB file"


def test_cli_decode_reads_stdin(monkeypatch, capsys) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("15496\n995  0\n"))
    assert main(["decode", "-t", "gpt2"]) == 0
    assert capsys.readouterr().out == "Hello world!"
    # "-" names stdin too, as in most Unix tools (it was read as a file named "-").
    monkeypatch.setattr("sys.stdin", io.StringIO("15496 995"))
    assert main(["decode", "-", "-t", "gpt2"]) == 0
    assert capsys.readouterr().out == "Hello world"
    monkeypatch.setattr("sys.stdin", io.StringIO("15496 x"))
    assert main(["decode", "-t", "gpt2"]) == 2
    assert "'x', not a token id" in capsys.readouterr().err


def test_load_tokens_rejects_other_files(tmp_path) -> None:
    import numpy as np

    import bpekit

    bad = tmp_path / "vocab.json"
    bad.write_text('{"a": 0}')
    with pytest.raises(ValueError, match=r"vocab\.json: not a \.npy file"):
        bpekit.load_tokens(bad)
    floats = tmp_path / "f.npy"
    np.save(floats, np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="1-D integer"):
        bpekit.load_tokens(floats)


def test_unwritable_outputs_fail_before_encoding(tmp_path, capsys) -> None:
    """An output that could never be renamed into place is refused before any input
    is read (rather than failing at the end, after the whole encode), and no progress
    line that looks finished comes before the error."""
    tok = bpekit_encoding("gpt2")
    src = tmp_path / "in.txt"
    src.write_text("hello world\n", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=r"missing: no such folder to write t\.npy in"):
        bpekit.encode_file(src, tmp_path / "missing" / "t.npy", tok)
    with pytest.raises(IsADirectoryError, match=r"is a folder; give the path of the \.npy file"):
        bpekit.encode_file(src, tmp_path, tok)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]
    capsys.readouterr()
    assert main(["encode", str(src), "-t", "gpt2", "-o", str(tmp_path / "no" / "t.npy")]) == 2
    err = capsys.readouterr().err
    assert "no such folder to write t.npy in" in err and "100.0%" not in err


def test_cli_names_the_errors_flag(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"hello \xff world")
    assert main(["encode", str(bad), "-t", "gpt2", "-o", str(tmp_path / "o.npy"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "invalid UTF-8 at byte offset 6; pass --errors replace or --errors ignore" in err


def test_pipes_are_read(tmp_path) -> None:
    """A pipe (`/dev/stdin`, `<(...)`) reports a length of 0: it was read as empty."""
    tok = bpekit_encoding("gpt2")
    text = "hello from a pipe\n" * 1000
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(write_end, text.encode()), os.close(write_end)))
    writer.start()
    try:
        n = bpekit.encode_file(f"/dev/fd/{read_end}", tmp_path / "p.npy", tok)
    finally:
        writer.join()
        os.close(read_end)
    assert n > 0 and bpekit.load_tokens(tmp_path / "p.npy").tolist() == tok.encode(text)
    # A pipe named *.gz is decompressed (it was read as an empty file).
    import gzip

    fifo = tmp_path / "p.txt.gz"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(gzip.compress(text.encode()))

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        n = bpekit.encode_file(fifo, tmp_path / "g.npy", tok)
    finally:
        writer.join()
    assert bpekit.load_tokens(tmp_path / "g.npy").tolist() == tok.encode(text)


def test_outputs_that_would_replace_an_input_or_a_device_are_refused(tmp_path) -> None:
    tok = bpekit_encoding("gpt2")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("hello\n", encoding="utf-8")
    with pytest.raises(ValueError, match="the output is also an input"):
        bpekit.encode_file(data / "a.txt", data / "a.txt", tok)
    assert (data / "a.txt").read_text(encoding="utf-8") == "hello\n"
    # A second run into the input folder would read the first run's output as text.
    bpekit.encode_file(data, data / "train.npy", tok)
    with pytest.raises(ValueError, match=r"train\.npy: the output is also an input"):
        bpekit.encode_file(data, data / "train.npy", tok)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        bpekit.encode_file(data / "a.txt", fifo, tok)
    assert fifo.is_fifo()


def test_more_files_than_the_process_may_map(tmp_path) -> None:
    """Files are opened a group at a time, for counting too: with every input mapped
    before encoding starts, past Linux's 65,530 maps no thread can be started (a
    panic, and a temporary file left)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    n_files = 66_000
    for i in range(n_files):
        (folder / f"{i:06d}.txt").write_bytes(f"doc {i}\n".encode())
    tok = bpekit_encoding("gpt2")
    out = tmp_path / "t.npy"
    n = bpekit.encode_file(folder, out, tok, num_threads=2)
    want = [i for k in range(n_files) for i in tok.encode(f"doc {k}\n")]
    assert n == len(want) and bpekit.load_tokens(out).tolist() == want
    counts = bpekit.count_pretokens(folder, num_threads=2)
    assert counts.total == 3 * n_files and counts.to_dict()[b"doc"] == n_files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "t.npy"]


def test_more_bad_arguments_are_named(tmp_path) -> None:
    tok = bpekit_encoding("gpt2")
    src = tmp_path / "in.txt"
    src.write_text("hello\n", encoding="utf-8")
    with pytest.raises(ValueError, match="chunk_size must be 0"):
        bpekit.encode_file(src, tmp_path / "o.npy", tok, chunk_size=-1)
    with pytest.raises(ValueError, match="chunk_size must be 0"):
        bpekit.count_pretokens(src, chunk_size=-1)
    with pytest.raises(ValueError, match="big-endian"):
        bpekit.encode_file(src, tmp_path / "o.npy", tok, dtype=">u4")
    # An encoding's special tokens are its own (extra ones were ignored without a word).
    with pytest.raises(ValueError, match="gpt2 has its own special tokens"):
        bpekit.load_tokenizer("gpt2", ["<|x|>"])
    bpekit.encode_file(src, tmp_path / "o.npy", tok)
    (tmp_path / "cut.npy").write_bytes((tmp_path / "o.npy").read_bytes()[:-3])
    with pytest.raises(ValueError, match=r"cut\.npy: not a readable \.npy array"):
        bpekit.load_tokens(tmp_path / "cut.npy")
    assert not list(tmp_path.glob(".*.tmp"))


def test_gz_is_streamed_without_room_in_tmpdir(tmp_path, monkeypatch) -> None:
    """A .gz input is decompressed as it is read, not spooled into TMPDIR: a missing
    TMPDIR changes nothing, and nothing is left behind."""
    import gzip

    src = tmp_path / "in.txt.gz"
    src.write_bytes(gzip.compress(b"hello world\n" * 100))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    bpekit.encode_file(src, tmp_path / "o.npy", bpekit_encoding("gpt2"))
    assert bpekit.load_tokens(tmp_path / "o.npy").tolist() == bpekit_encoding("gpt2").encode(
        "hello world\n" * 100
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt.gz", "o.npy"]


def test_cli_encode_counts_gz_text_decompressed(tmp_path, capsys) -> None:
    """The summary's MB and bytes/token are of the text (they used a .gz file's size)."""
    import gzip

    text = data_path("cs336", "tinystories_sample.txt").read_bytes()
    src = tmp_path / "t.txt.gz"
    src.write_bytes(gzip.compress(text))
    assert main(["encode", str(src), "-t", "gpt2", "-o", str(tmp_path / "t.npy"), "--quiet"]) == 0
    n = len(bpekit_encoding("gpt2").encode(text.decode(), allowed_special="all"))
    assert f"{len(text) / n:.2f} bytes/token" in capsys.readouterr().out


@pytest.mark.parametrize("threads", [1, 2])
def test_after_each_file_ends_every_file_in_order(tmp_path, threads: int) -> None:
    """`after_each_file` writes the token after each file, empty ones included, in
    input order, also across the groups that files are opened in (1,024 files each)
    and after files cut into many chunks."""
    tok = bpekit_encoding("gpt2")
    folder = tmp_path / "docs"
    folder.mkdir()
    texts = []
    for i in range(1_030):
        empty = i % 7 == 3 or i in (1_022, 1_023, 1_024, 1_029)
        lines = 40 if i % 50 == 0 else 1  # every 50th file is cut into several chunks
        text = "" if empty else f"document {i}\n" + "a line of text\n" * lines
        texts.append(text)
        (folder / f"{i:05d}.txt").write_text(text, encoding="utf-8")
    out = tmp_path / "t.npy"
    eot = tok.eot_token
    n = bpekit.encode_file(
        folder, out, tok, num_threads=threads, chunk_size=64, after_each_file="<|endoftext|>"
    )
    want = [i for text in texts for i in [*tok.encode_ordinary(text), eot]]
    assert n == len(want) and bpekit.load_tokens(out).tolist() == want
    # An ordinary token works too; text that is not one token is refused, naming it.
    bpekit.encode_file(folder / "00000.txt", out, tok, after_each_file="\n")
    assert bpekit.load_tokens(out).tolist() == [*tok.encode(texts[0]), 198]
    with pytest.raises(ValueError, match=r"'<\|eot\|>', to write after each file, is not a single token"):
        bpekit.encode_file(folder, out, tok, after_each_file="<|eot|>")


def test_cli_after_each_file(tmp_path, capsys) -> None:
    from bpekit.cli import main

    for name, text in [("a.txt", "one"), ("b.txt", ""), ("c.txt", "three")]:
        (tmp_path / name).write_text(text, encoding="utf-8")
    out = tmp_path / "t.npy"
    files = [str(tmp_path / n) for n in ("a.txt", "b.txt", "c.txt")]
    args = ["-t", "gpt2", "-o", str(out), "--after-each-file", "<|endoftext|>", "--quiet"]
    assert main(["encode", *files, *args]) == 0
    tok = bpekit_encoding("gpt2")
    assert tok.decode(bpekit.load_tokens(out).tolist()) == "one<|endoftext|><|endoftext|>three<|endoftext|>"
