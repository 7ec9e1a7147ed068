"""Token datasets: encode files into one ``.npy`` of ids, read it back by memmap, and
sample training batches from it.

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
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bpekit._progress import ProgressBar
from bpekit._threads import check_num_threads
from bpekit._utf8 import check_errors
from bpekit.tokenizer import Tokenizer
from bpekit.training import resolve_inputs

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# numpy is imported only where an array is made or a numpy dtype is given: importing
# it starts OpenBLAS's threads, which spin for ~0.1 s of CPU; on a 2-core machine
# that is taken from the encoder's threads (perf, a cold 2-thread `bpekit encode`).

__all__ = ["encode_file", "get_batch", "load_tokens", "pick_dtype"]

PathLike = str | os.PathLike[str]

_ID_BYTES = {"uint16": 2, "uint32": 4}


def _id_dtype_name(n_vocab: int, dtype: npt.DTypeLike | None) -> str:
    """``"uint16"`` or ``"uint32"``: picked for ``n_vocab``, or ``dtype`` checked.

    >>> _id_dtype_name(50257, None), _id_dtype_name(50257, "uint32")
    ('uint16', 'uint32')
    """
    if dtype is None:
        return "uint16" if n_vocab <= 1 << 16 else "uint32"
    if isinstance(dtype, str) and dtype in _ID_BYTES:
        name = dtype
    else:
        import numpy as np

        resolved = np.dtype(dtype)
        if resolved.byteorder == ">" or (resolved.byteorder == "=" and sys.byteorder == "big"):
            raise ValueError(f"dtype {dtype!r} is big-endian; token files are little-endian uint16 or uint32")
        name = resolved.name
    if name not in _ID_BYTES:
        raise ValueError(f"dtype must be uint16 or uint32, not {name}")
    if name == "uint16" and n_vocab > 1 << 16:
        raise ValueError(f"uint16 cannot hold the ids of a {n_vocab}-token vocabulary; use uint32")
    return name


def pick_dtype(n_vocab: int, dtype: npt.DTypeLike | None = None) -> np.dtype[Any]:
    """``uint16`` when every id fits (``n_vocab <= 65536``), else ``uint32``; or check ``dtype``.

    >>> pick_dtype(50257).name, pick_dtype(200019).name
    ('uint16', 'uint32')
    """
    import numpy as np

    return np.dtype(_id_dtype_name(n_vocab, dtype))


def encode_file(
    inputs: PathLike | Iterable[PathLike],
    output: PathLike,
    tokenizer: Tokenizer | str,
    *,
    dtype: npt.DTypeLike | None = None,
    num_threads: int | None = None,
    progress: bool = False,
    errors: str = "strict",
    chunk_size: int = 0,
    after_each_file: str | None = None,
) -> int:
    """Encodes a file, several, or a directory (its files sorted by path) into one ``.npy``.

    Documents keep their input order and special tokens become their ids (every special
    token of ``tokenizer`` is recognised). Work runs in parallel over document-aligned
    chunks, in memory independent of the input size; the output is written to a
    temporary file and renamed, so an interrupted run (Ctrl-C) leaves no output.
    ``tokenizer`` may also be an encoding name or a folder with vocab.json + merges.txt.

    ``after_each_file`` (say ``"<|endoftext|>"``), the text of one token, writes that
    token's id after each input file, empty ones included: for a folder with one
    document per file, so that documents stay apart in the array (nanoGPT's data
    scripts append ``eot_token`` to each document the same way).

    Returns the number of tokens written.
    """
    n_tokens, _ = encode_file_counts(
        inputs,
        output,
        tokenizer,
        dtype=dtype,
        num_threads=num_threads,
        progress=progress,
        errors=errors,
        chunk_size=chunk_size,
        after_each_file=after_each_file,
    )
    return n_tokens


def encode_file_counts(
    inputs: PathLike | Iterable[PathLike],
    output: PathLike,
    tokenizer: Tokenizer | str,
    *,
    dtype: npt.DTypeLike | None = None,
    num_threads: int | None = None,
    progress: bool = False,
    errors: str = "strict",
    chunk_size: int = 0,
    after_each_file: str | None = None,
) -> tuple[int, int]:
    """``encode_file``, returning the number of tokens written and of text bytes read
    (a ``.gz`` file's decompressed bytes, as the bytes/token figure wants them)."""
    from bpekit.encodings import load_tokenizer

    errors = check_errors(errors)
    if not os.fspath(output):
        raise ValueError("output is an empty path; give the path of the .npy file to write")
    tok = load_tokenizer(tokenizer)
    files = resolve_inputs(inputs)
    num_threads = check_num_threads(num_threads)
    if chunk_size < 0:
        raise ValueError(f"chunk_size must be 0 (automatic) or a positive number of bytes, got {chunk_size}")
    itemsize = _ID_BYTES[_id_dtype_name(tok.n_vocab, dtype)]
    end_id = None if after_each_file is None else _single_token_id(tok, after_each_file)
    out = os.fspath(output)
    bar = ProgressBar("encoding", unit="bytes") if progress else None
    completed = False
    try:
        counts: tuple[int, int] = tok._core.encode_files(
            [os.fspath(f) for f in files],
            out,
            itemsize,
            num_threads=num_threads,
            errors=errors,
            chunk_size=chunk_size,
            progress=bar,
            after_each_file=end_id,
        )
        completed = True
        return counts
    finally:
        if bar is not None:
            bar.close(completed)


def _single_token_id(tok: Tokenizer, text: str) -> int:
    """The id of the token whose text is ``text``: a special token first (where an ordinary
    token has the same text, the special one is meant), else an ordinary token.

    >>> _single_token_id(Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"]), "<|eot|>")
    256
    """
    if not isinstance(text, str):
        raise TypeError(f"after_each_file must be the text of a token (a str), not {text!r}")
    special = tok.special_tokens.get(text)
    if special is not None:
        return special
    try:
        return tok.encode_single_token(text)
    except KeyError:
        specials = ", ".join(sorted(tok.special_tokens)) or "none"
        raise ValueError(
            f"{text!r}, to write after each file, is not a single token of {tok.name!r} "
            f"(its special tokens: {specials})"
        ) from None


def load_tokens(path: PathLike) -> np.ndarray:
    """The ids in a ``.npy`` file, memory-mapped read-only (nothing is read up front).

    Raises ``ValueError`` naming the file when it is not a 1-D integer ``.npy`` array.
    """
    import numpy as np

    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise ValueError(f"{os.fspath(path)}: not a .npy file (write one with bpekit encode)")
    try:
        tokens = np.load(os.fspath(path), mmap_mode="r", allow_pickle=False)
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
