"""One array of token ids: encode files into a ``.npy`` (``encode_file``), read it back
by memmap (``load_tokens``), and sample training batches from it (``get_batch``).

>>> import tempfile, pathlib, bpekit
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "a.txt").write_text("hello world<|endoftext|>bye")
>>> tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
>>> encode_file(d / "a.txt", d / "a.npy", tok)
15
>>> tokens = load_tokens(d / "a.npy")
>>> tokens.dtype.name, int(tokens[11])
('uint16', 256)
>>> x, y = get_batch(tokens, batch_size=2, context_length=4)  # torch tensors when torch is installed
>>> tuple(x.shape)
(2, 4)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

from bpekit._progress import progress_bar
from bpekit._stores import is_url, local_path
from bpekit.dataset.job import Framing, Job, prepare, resolve_framing
from bpekit.dataset.options import Layout, Marks
from bpekit.options import ReadOptions, RunOptions
from bpekit.sources import resolve, warn_skipped
from bpekit.tokenizer import Tokenizer
from bpekit.training import Inputs

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Encoded", "encode_file", "get_batch", "load_tokens", "write_tokens"]

PathLike = str | os.PathLike[str]


def encode_file(
    inputs: Inputs,
    output: PathLike,
    tokenizer: Tokenizer | str,
    *,
    dtype: npt.DTypeLike | None = Layout.dtype,
    num_threads: int | None = RunOptions.num_threads,
    progress: bool = RunOptions.progress,
    errors: str = ReadOptions.errors,
    chunk_size: int = RunOptions.chunk_size,
    after_each_file: str | None = Marks.after_each_file,
    format: str | None = ReadOptions.format,
    text_field: str = ReadOptions.text_field,
    special_in_text: str | None = ReadOptions.special_in_text,
    bad_records: str = ReadOptions.bad_records,
    eos: str | None = Marks.eos,
    bos: str | None = Marks.bos,
) -> int:
    """Encodes files, directories, glob patterns, a Hugging Face dataset or an iterable of
    ``str`` documents into one ``.npy``.

    Inputs are read as ``count_pretokens`` reads them (text, JSON lines, Parquet, ``.gz``
    / ``.zst``; ``format``, ``text_field``, ``special_in_text``, ``bad_records`` and
    ``errors`` mean the same: ``bpekit.options.ReadOptions``), in order. Work runs in
    parallel over document-aligned chunks (``num_threads``, ``chunk_size``: 0 picks it;
    ``progress``: a bar on stderr; ``bpekit.options.RunOptions``), in memory independent
    of the input size; the output is written to a temporary file and renamed, so an
    interrupted run (Ctrl-C) leaves no output. ``tokenizer`` may also be an encoding
    name or a folder with vocab.json + merges.txt. ``dtype``: ``"uint16"`` where every
    id fits, else ``"uint32"``; or the one given (a numpy dtype too).

    ``eos`` / ``bos``: the text of one token, written after / before each document. By
    default records (JSON lines, Parquet rows, items) get the tokenizer's
    ``<|endoftext|>`` after each, when it has that special token, and text files nothing:
    their documents are kept apart by the special tokens in their text. An ``eos`` or
    ``bos`` given applies to each record and to each text file (one document for it);
    ``eos=None`` adds nothing. Empty records get theirs too.

    ``after_each_file`` (say ``"<|endoftext|>"``), the text of one token, writes that
    token's id after each input, empty ones included: for a folder with one document per
    file, so that documents stay apart in the array (nanoGPT's data scripts append
    ``eot_token`` to each document the same way). (``bpekit.dataset.Marks`` holds the
    three.)

    Returns the number of tokens written; skipped bad records are a warning.

    >>> import tempfile, pathlib, json, bpekit
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.jsonl").write_text(json.dumps({"text": "hi"}) + "\\n" + json.dumps({"text": ""}))
    >>> tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    >>> encode_file(d / "a.jsonl", d / "a.npy", tok)
    4
    >>> load_tokens(d / "a.npy").tolist()
    [104, 105, 256, 256]
    """
    read = ReadOptions(
        format=format,
        text_field=text_field,
        special_in_text=special_in_text,
        bad_records=bad_records,
        errors=errors,
    )
    run = RunOptions(num_threads=num_threads, chunk_size=chunk_size, progress=progress)
    marks = Marks(eos=eos, bos=bos, after_each_file=after_each_file)
    result = write_tokens(inputs, output, tokenizer, Layout(dtype=dtype), marks, read, run)
    warn_skipped(result.stats)
    return result.tokens


class Encoded(NamedTuple):
    """What ``write_tokens`` did, as the command line's summary reports it."""

    tokens: int  # written
    bytes: int  # of text read (decompressed; for records, their documents' text)
    stats: dict[str, Any]  # documents, skipped, skipped_examples, bytes
    files: int  # files read (a directory or glob counts its files)
    framing: Framing


def write_tokens(
    inputs: Inputs,
    output: PathLike,
    tokenizer: Tokenizer | str,
    layout: Layout,
    marks: Marks,
    read: ReadOptions,
    run: RunOptions,
    *,
    cli: bool = False,
) -> Encoded:
    """``encode_file`` with its options as objects (of ``layout``, only ``dtype`` is
    used), returning what it did: the tokens written, the text bytes read (a ``.gz``
    file's decompressed bytes, as the bytes/token figure wants them), the stats, the
    files read and the marks (their notes worded for the command line's flags when
    ``cli``). Skipped records are not warned of: the caller reports them."""
    if not os.fspath(output):
        raise ValueError("output is an empty path; give the path of the .npy file to write")
    if is_url(url := os.fspath(output)):
        output = local_path(url) or ""
    if not output:
        raise ValueError(
            f"{url}: one .npy is written to a local path; to write to a store, "
            "write a dataset (encode_dataset, or an --out without .npy), whose objects are put when whole"
        )
    tok, layout, end_id = prepare(tokenizer, layout, marks)
    sources = resolve(inputs, format=read.format, text_field=read.text_field, bad_records=read.bad_records)
    framing = resolve_framing(tok, marks, sources, end_id, cli)
    job = Job(read, run, layout, framing)
    with progress_bar(run.progress, "encoding") as bar:
        n_tokens, n_bytes, native = tok._core.encode_files(
            sources.sources, os.fspath(output), job, progress=bar
        )
    return Encoded(n_tokens, n_bytes, dict(native), sources.files, framing)


def load_tokens(path: PathLike) -> np.ndarray:
    """The ids in a ``.npy`` file, memory-mapped read-only (nothing is read up front); or
    those of a trainer's file: a Megatron ``.bin`` with its ``.idx`` beside it, or a
    datatrove ``.ds`` (their indexes give the dtype).

    Raises ``ValueError`` naming the file when it is not a 1-D integer ``.npy`` array.
    """
    from pathlib import Path

    import numpy as np

    from bpekit.dataset.files import map_ids, open_file

    given = Path(os.fspath(path))
    trainer = "datatrove" if given.suffix == ".ds" else "megatron" if given.suffix == ".bin" else None
    if trainer == "megatron" and not given.with_suffix(".idx").exists():
        trainer = None
    if trainer is not None:
        return map_ids(open_file(given, trainer, None)[2])
    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise ValueError(
                f"{os.fspath(path)}: not a .npy file, a Megatron .bin with its .idx or a datatrove .ds "
                "(write one with bpekit encode)"
            )
    try:
        tokens: np.ndarray = np.load(os.fspath(path), mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as e:  # a truncated file, a bad header
        raise ValueError(f"{os.fspath(path)}: not a readable .npy array ({e})") from None
    if tokens.ndim != 1 or tokens.dtype.kind not in "ui":
        got = f"{tokens.dtype} of shape {tokens.shape}"
        raise ValueError(f"{os.fspath(path)}: expected a 1-D integer array of token ids, got {got}")
    return tokens


def get_batch(
    tokens: npt.ArrayLike,
    batch_size: int,
    context_length: int,
    device: str = "cpu",
    *,
    rng: np.random.Generator | None = None,
) -> tuple[Any, Any]:
    """Samples ``batch_size`` windows: inputs ``tokens[s : s + context_length]`` and targets
    shifted by one, ``s`` uniform in ``[0, len(tokens) - context_length)`` (as CS336's
    data loader). Returns int64 torch tensors on ``device`` when torch is installed,
    else int64 numpy arrays (then ``device`` must be ``"cpu"``).
    """
    import numpy as np

    for name, value in (("batch_size", batch_size), ("context_length", context_length)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    data = np.asarray(tokens)
    if data.ndim != 1:
        raise ValueError(f"tokens must be 1-D, got shape {data.shape}")
    if data.dtype.kind not in "iu":
        raise ValueError(f"tokens must be integer token ids, got an array of {data.dtype}")
    if len(data) <= context_length:
        raise ValueError(f"need more than context_length={context_length} tokens, have {len(data)}")
    rng = rng or np.random.default_rng()
    starts = rng.integers(0, len(data) - context_length, size=batch_size)
    offsets = np.arange(context_length)
    x = data[starts[:, None] + offsets].astype(np.int64)
    y = data[starts[:, None] + offsets + 1].astype(np.int64)
    try:
        import torch
    except ImportError:
        if str(device) != "cpu":
            raise ValueError(f"device {device!r} needs torch, which is not installed") from None
        return x, y
    return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
