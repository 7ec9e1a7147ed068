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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from bpekit._progress import progress_bar
from bpekit._threads import check_num_threads
from bpekit._utf8 import check_errors
from bpekit.sources import Sources, check_special_in_text, resolve, warn_skipped
from bpekit.tokenizer import Tokenizer
from bpekit.training import Inputs

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


class _RecordsDefault:
    """The default ``eos``: the tokenizer's ``<|endoftext|>`` after each record, when it has one."""

    def __repr__(self) -> str:
        return "'<|endoftext|>' after each record"


RECORDS_DEFAULT: Any = _RecordsDefault()
EOT = "<|endoftext|>"


def encode_file(
    inputs: Inputs,
    output: PathLike,
    tokenizer: Tokenizer | str,
    *,
    dtype: npt.DTypeLike | None = None,
    num_threads: int | None = None,
    progress: bool = False,
    errors: str = "strict",
    chunk_size: int = 0,
    after_each_file: str | None = None,
    format: str | None = None,
    text_field: str = "text",
    special_in_text: str | None = None,
    bad_records: str = "error",
    eos: str | None = RECORDS_DEFAULT,
    bos: str | None = None,
) -> int:
    """Encodes files, directories, glob patterns, a Hugging Face dataset or an iterable of
    ``str`` documents into one ``.npy``.

    Inputs are read as ``count_pretokens`` reads them (text, JSON lines, Parquet, ``.gz``
    / ``.zst``; ``format``, ``text_field``, ``special_in_text``, ``bad_records`` and
    ``errors`` mean the same), in order. Work runs in parallel over document-aligned
    chunks, in memory independent of the input size; the output is written to a
    temporary file and renamed, so an interrupted run (Ctrl-C) leaves no output.
    ``tokenizer`` may also be an encoding name or a folder with vocab.json + merges.txt.

    ``eos`` / ``bos``: the text of one token, written after / before each document. By
    default records (JSON lines, Parquet rows, items) get the tokenizer's
    ``<|endoftext|>`` after each, when it has that special token, and text files nothing:
    their documents are kept apart by the special tokens in their text. An ``eos`` or
    ``bos`` given applies to each record and to each text file (one document for it);
    ``eos=None`` adds nothing. Empty records get theirs too.

    ``after_each_file`` (say ``"<|endoftext|>"``), the text of one token, writes that
    token's id after each input, empty ones included: for a folder with one document per
    file, so that documents stay apart in the array (nanoGPT's data scripts append
    ``eot_token`` to each document the same way).

    Returns the number of tokens written.

    >>> import tempfile, pathlib, json, bpekit
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.jsonl").write_text(json.dumps({"text": "hi"}) + "\\n" + json.dumps({"text": ""}))
    >>> tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    >>> encode_file(d / "a.jsonl", d / "a.npy", tok)
    4
    >>> load_tokens(d / "a.npy").tolist()
    [104, 105, 256, 256]
    """
    result = encode_file_counts(
        inputs,
        output,
        tokenizer,
        dtype=dtype,
        num_threads=num_threads,
        progress=progress,
        errors=errors,
        chunk_size=chunk_size,
        after_each_file=after_each_file,
        format=format,
        text_field=text_field,
        special_in_text=special_in_text,
        bad_records=bad_records,
        eos=eos,
        bos=bos,
    )
    warn_skipped(result.stats)
    return result.tokens


@dataclass(frozen=True)
class Framing:
    """The ids written around documents, and what a summary says of them."""

    record_bos: int | None = None
    record_eos: int | None = None
    file_bos: int | None = None
    file_eos: int | None = None
    notes: tuple[str, ...] = ()

    def native(self) -> dict[str, int | None]:
        """The ids as the native encoders take them."""
        return {
            "record_bos": self.record_bos,
            "record_eos": self.record_eos,
            "file_bos": self.file_bos,
            "file_eos": self.file_eos,
        }


def resolve_framing(
    tok: Tokenizer, eos: str | None, bos: str | None, inputs: Sources, cli: bool = False
) -> Framing:
    """The ids of ``eos`` / ``bos`` for records and for text files, and a note on each
    saying what is added and why (worded for the command line's flags when ``cli``).

    >>> from bpekit.sources import Sources
    >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    >>> resolve_framing(tok, RECORDS_DEFAULT, None, Sources([], records=True)).notes
    ("eos '<|endoftext|>' (id 256) after each record: the default for records",)
    """
    kinds = (("each record", inputs.records), ("each text file", inputs.text_files))
    where = " and ".join(kind for kind, present in kinds if present)
    add_eos = "--eos TOKEN" if cli else "eos='TOKEN'"
    notes = []
    ids: dict[str, int | None] = {}
    if eos is RECORDS_DEFAULT:
        ids["record_eos"] = eot = tok.special_tokens.get(EOT)
        if not inputs.records:
            notes.append(f"no eos/bos: text files keep the separators in their text ({add_eos} adds one)")
        elif eot is None:
            notes.append(f"no eos after records: the tokenizer has no {EOT!r} ({add_eos} adds one)")
        else:
            notes.append(f"eos {EOT!r} (id {eot}) after each record: the default for records")
    elif eos is None:
        notes.append("no eos: --no-eos" if cli else "no eos: eos=None")
    else:
        eos_id = _single_token_id(tok, eos, "given as --eos" if cli else "given as eos")
        ids["record_eos"] = ids["file_eos"] = eos_id
        notes.append(f"eos {eos!r} (id {eos_id}) after {where}: {'--eos' if cli else 'eos='} given")
    if bos is not None:
        bos_id = _single_token_id(tok, bos, "given as --bos" if cli else "given as bos")
        ids["record_bos"] = ids["file_bos"] = bos_id
        notes.append(f"bos {bos!r} (id {bos_id}) before {where}: {'--bos' if cli else 'bos='} given")
    return Framing(**ids, notes=tuple(notes))


class Encoded(NamedTuple):
    """What ``encode_file_counts`` did."""

    tokens: int  # written
    bytes: int  # of text read (decompressed; for records, their documents' text)
    stats: dict[str, Any]  # documents, skipped, skipped_examples, bytes
    files: int  # files read (a directory or glob counts its files)
    framing: Framing


def encode_file_counts(
    inputs: Inputs,
    output: PathLike,
    tokenizer: Tokenizer | str,
    *,
    dtype: npt.DTypeLike | None = None,
    num_threads: int | None = None,
    progress: bool = False,
    errors: str = "strict",
    chunk_size: int = 0,
    after_each_file: str | None = None,
    format: str | None = None,
    text_field: str = "text",
    special_in_text: str | None = None,
    bad_records: str = "error",
    eos: str | None = RECORDS_DEFAULT,
    bos: str | None = None,
    cli: bool = False,
) -> Encoded:
    """``encode_file``, returning what the command line's summary reports (no warning for
    skipped records: the summary says it): the tokens written, the text bytes read (a
    ``.gz`` file's decompressed bytes, as the bytes/token figure wants them), the stats."""
    from bpekit.encodings import load_tokenizer

    errors = check_errors(errors)
    special_in_text = check_special_in_text(special_in_text)
    if not os.fspath(output):
        raise ValueError("output is an empty path; give the path of the .npy file to write")
    tok = load_tokenizer(tokenizer)
    num_threads = check_num_threads(num_threads)
    if chunk_size < 0:
        raise ValueError(f"chunk_size must be 0 (automatic) or a positive number of bytes, got {chunk_size}")
    itemsize = _ID_BYTES[_id_dtype_name(tok.n_vocab, dtype)]
    end_id = (
        None
        if after_each_file is None
        else _single_token_id(tok, after_each_file, "to write after each file")
    )
    sources = resolve(inputs, format=format, text_field=text_field, bad_records=bad_records)
    framing = resolve_framing(tok, eos, bos, sources, cli)
    out = os.fspath(output)
    with progress_bar(progress, "encoding") as bar:
        n_tokens, n_bytes, native = tok._core.encode_files(
            sources.sources,
            out,
            itemsize,
            num_threads=num_threads,
            errors=errors,
            chunk_size=chunk_size,
            progress=bar,
            after_each_file=end_id,
            special_in_text=special_in_text,
            bad_records=bad_records,
            **framing.native(),
        )
    return Encoded(n_tokens, n_bytes, dict(native), sources.files, framing)


def _single_token_id(tok: Tokenizer, text: str, role: str) -> int:
    """The id of the token whose text is ``text``: a special token first (where an ordinary
    token has the same text, the special one is meant), else an ordinary token. ``role``
    says what it is for, in errors.

    >>> _single_token_id(Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"]), "<|eot|>", "eos")
    256
    """
    if not isinstance(text, str):
        raise TypeError(f"the token {role} must be the text of a token (a str), not {text!r}")
    special = tok.special_tokens.get(text)
    if special is not None:
        return special
    try:
        return tok.encode_single_token(text)
    except KeyError:
        specials = ", ".join(sorted(tok.special_tokens)) or "none"
        raise ValueError(
            f"{text!r}, {role}, is not a single token of {tok.name!r} (its special tokens: {specials})"
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
