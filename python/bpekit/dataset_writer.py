"""Encoding a corpus into a training dataset: ``train/`` (and ``val/``) shards of at most
``shard_tokens`` ids, cut between documents, each with its document index, and a
``manifest.json`` saying what was encoded with what (the layout is in the README,
"Token datasets"; ``bpekit.TokenDataset`` reads it back).

>>> import tempfile, pathlib, bpekit
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
>>> m = encode_dataset(iter(["one", "two!"]), d / "ds", tok, shard_tokens=5)
>>> [(s["file"], s["tokens"], s["documents"]) for s in m["splits"]["train"]["shards"]]
[('train/00000.npy', 4, 1), ('train/00001.npy', 5, 1)]
>>> bpekit.TokenDataset(d / "ds").document(1).tolist()
[116, 119, 111, 33, 256]
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, NamedTuple

from bpekit._atomic import atomic_write
from bpekit._progress import progress_bar
from bpekit._threads import check_num_threads
from bpekit._utf8 import check_errors
from bpekit.datasets import (
    _ID_BYTES,
    RECORDS_DEFAULT,
    Framing,
    _id_dtype_name,
    _single_token_id,
    resolve_framing,
)
from bpekit.sources import check_special_in_text, resolve, warn_skipped
from bpekit.tokenizer import Tokenizer
from bpekit.training import Inputs

__all__ = ["FORMAT_VERSION", "SHARD_FORMATS", "Written", "encode_dataset", "write_dataset"]

FORMAT_VERSION = 1
SHARD_FORMATS = ("npy", "bin", "llmc")
MANIFEST = "manifest.json"


def encode_dataset(
    inputs: Inputs,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str,
    **options: Any,
) -> dict[str, Any]:
    """Encodes ``inputs`` (as ``encode_file`` takes them) into the dataset folder
    ``out_dir``; returns the manifest (also written to ``out_dir/manifest.json``).

    Options, all keyword: ``shard_tokens=2**28``; ``shard_format="npy"`` (or ``"bin"``:
    raw little-endian ids, for ``np.memmap``; ``"llmc"``: llm.c's ``.bin``);
    ``val_fraction=0.0`` and ``seed=0``: documents go to ``val/`` by a hash of their
    number and the seed, whatever the threads or shard size; ``overwrite=False``; and
    ``encode_file``'s: ``eos``, ``bos``, ``after_each_file``, ``format`` (the inputs'
    format: one name for one thing), ``text_field``, ``special_in_text``,
    ``bad_records``, ``errors``, ``dtype``, ``num_threads``, ``chunk_size``,
    ``progress``. Skipped bad records are a warning.

    ``out_dir`` must be empty or missing; a folder holding a finished dataset written
    with the same inputs and options is returned as it is (a re-run does nothing), and
    ``overwrite=True`` replaces a dataset (never other files). Resuming a run that was
    interrupted part way is not done yet: such a folder needs ``overwrite=True``.
    """
    written = write_dataset(inputs, out_dir, tokenizer, **options)
    warn_skipped(written.stats)
    return written.manifest


class Written(NamedTuple):
    """What ``write_dataset`` wrote, and what the command line's summary reports."""

    manifest: dict[str, Any]
    stats: dict[str, Any]  # documents, skipped, skipped_examples, bytes, files
    framing: Framing
    files: int
    done_before: bool  # the folder held this dataset already


def write_dataset(
    inputs: Inputs,
    out_dir: str | os.PathLike[str],
    tokenizer: Tokenizer | str,
    *,
    shard_tokens: int = 2**28,
    shard_format: str = "npy",
    val_fraction: float = 0.0,
    seed: int = 0,
    eos: str | None = RECORDS_DEFAULT,
    bos: str | None = None,
    format: str | None = None,
    text_field: str = "text",
    special_in_text: str | None = None,
    bad_records: str = "error",
    errors: str = "strict",
    dtype: str | None = None,
    num_threads: int | None = None,
    chunk_size: int = 0,
    after_each_file: str | None = None,
    progress: bool = False,
    overwrite: bool = False,
    cli: bool = False,
) -> Written:
    """``encode_dataset``, returning what the command line's summary reports (no
    warning for skipped records: the summary says it)."""
    errors = check_errors(errors)
    special_in_text = check_special_in_text(special_in_text)
    _check_layout(shard_tokens, shard_format, val_fraction, seed)
    num_threads = check_num_threads(num_threads)
    if chunk_size < 0:
        raise ValueError(f"chunk_size must be 0 (automatic) or a positive number of bytes, got {chunk_size}")
    from bpekit.encodings import load_tokenizer

    tok = load_tokenizer(tokenizer)
    dtype_name = _id_dtype_name(tok.n_vocab, dtype)
    end_id = (
        None
        if after_each_file is None
        else _single_token_id(tok, after_each_file, "to write after each file")
    )
    sources = resolve(inputs, format=format, text_field=text_field, bad_records=bad_records)
    framing = resolve_framing(tok, eos, bos, sources, cli)
    root = Path(os.fspath(out_dir))
    manifest: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "bpekit_version": _version(),
        "complete": False,
        "tokenizer": _tokenizer_identity(tokenizer, tok),
        "format": shard_format,
        "dtype": dtype_name,
        "shard_tokens": shard_tokens,
        "val_fraction": val_fraction,
        "seed": seed,
        # What the documents end (begin) with: the records' marks where there are records.
        "eos": _mark(tok, framing.record_eos if sources.records else framing.file_eos),
        "bos": _mark(tok, framing.record_bos if sources.records else framing.file_bos),
        "options": {
            "format": format,
            "text_field": text_field,
            "special_in_text": special_in_text,
            "bad_records": bad_records,
            "errors": errors,
            "after_each_file": after_each_file,
            "record_eos": framing.record_eos,
            "record_bos": framing.record_bos,
            "file_eos": framing.file_eos,
            "file_bos": framing.file_bos,
        },
        "inputs": [_describe(s) for s in sources.sources],
    }
    done = _prepare(root, manifest, overwrite)
    if done is not None:
        totals = done["totals"]
        stats = {"documents": totals["documents"], "skipped": totals["skipped"], "skipped_examples": []}
        return Written(done, {**stats, "bytes": totals["bytes"]}, framing, sources.files, True)
    atomic_write(root / MANIFEST, _dump(manifest))
    with progress_bar(progress, "encoding") as bar:
        written = tok._core.encode_dataset(
            sources.sources,
            str(root),
            _ID_BYTES[dtype_name],
            format=shard_format,
            shard_tokens=shard_tokens,
            val_fraction=val_fraction,
            seed=seed,
            num_threads=num_threads,
            errors=errors,
            chunk_size=chunk_size,
            progress=bar,
            after_each_file=end_id,
            special_in_text=special_in_text,
            bad_records=bad_records,
            **framing.native(),
        )
    stats = sources.stats(written["stats"])
    _hash_shards(root, [s for shards in written["splits"].values() for s in shards], num_threads)
    splits = {}
    for name, shards in written["splits"].items():
        splits[name] = {
            "tokens": sum(s["tokens"] for s in shards),
            "documents": sum(s["documents"] for s in shards),
            "shards": shards,
        }
    manifest["splits"] = splits
    manifest["totals"] = {
        "tokens": written["tokens"],
        "documents": written["documents"],
        "bytes": stats["bytes"],
        "skipped": stats["skipped"],
    }
    manifest["complete"] = True
    atomic_write(root / MANIFEST, _dump(manifest))
    return Written(manifest, stats, framing, sources.files, False)


def _check_layout(shard_tokens: int, shard_format: str, val_fraction: float, seed: int) -> None:
    """Refuses a layout that cannot be written, before any input is read.

    >>> _check_layout(0, "npy", 0.0, 0)
    Traceback (most recent call last):
    ...
    ValueError: shard_tokens must be a positive int, not 0
    """
    if not isinstance(shard_tokens, int) or isinstance(shard_tokens, bool) or shard_tokens < 1:
        raise ValueError(f"shard_tokens must be a positive int, not {shard_tokens!r}")
    if shard_format not in SHARD_FORMATS:
        raise ValueError(f"shard_format must be one of {', '.join(SHARD_FORMATS)}, not {shard_format!r}")
    if shard_format == "llmc" and shard_tokens >= 2**31:
        raise ValueError(f"shard_tokens {shard_tokens:,} is more than llm.c's header counts (2**31 - 1)")
    if not isinstance(val_fraction, int | float) or not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be at least 0 and below 1, not {val_fraction!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int from 0 to 2**64 - 1, not {seed!r}")


def _prepare(root: Path, manifest: dict[str, Any], overwrite: bool) -> dict[str, Any] | None:
    """Makes ``root`` ready for a new dataset; or returns the finished dataset already
    there when it was written from the same inputs with the same options."""
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f"{root}: not a folder; give the folder to write the dataset in")
    root.mkdir(parents=True, exist_ok=True)
    present = sorted(p.name for p in root.iterdir())
    if not present:
        return None
    old = _read_manifest(root / MANIFEST) if MANIFEST in present else None
    if old is None:
        raise FileExistsError(
            f"{root}: the folder holds other files ({', '.join(present[:3])}); "
            "give an empty or new folder for the dataset"
        )
    strangers = [name for name in present if name not in (MANIFEST, "train", "val")]
    if strangers:
        raise FileExistsError(f"{root}: the folder holds files that are not the dataset's ({strangers[0]})")
    differs = _differences(old, manifest)
    if old.get("complete") and not differs:
        return old
    if not overwrite:
        if old.get("complete"):
            raise FileExistsError(
                f"{root}: holds a dataset written with other {', '.join(differs)}; "
                "pass overwrite=True (--overwrite) to replace it"
            )
        raise FileExistsError(
            f"{root}: holds a dataset whose run did not finish; resuming it is not done yet: "
            "pass overwrite=True (--overwrite) to start over"
        )
    for split in ("train", "val"):
        shutil.rmtree(root / split, ignore_errors=True)
    (root / MANIFEST).unlink()
    return None


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "format_version" in data else None


# What must agree for a dataset on disk to be the one asked for.
_SAME = ("tokenizer", "format", "dtype", "shard_tokens", "val_fraction", "seed", "options", "inputs")


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The options (as the API names them) in which ``old`` and ``new`` differ."""
    names = {"format": "shard_format", "options": "reading options"}
    differ = [key for key in _SAME if old.get(key) != json.loads(_dump({key: new[key]}))[key]]
    return [names.get(key, key) for key in differ]


def _describe(source: tuple[Any, ...]) -> dict[str, Any]:
    """An input as the manifest records it: a file's name, size and modification time;
    a feed's name."""
    kind, name = source[0], source[1]
    entry: dict[str, Any] = {"kind": kind, "name": name}
    if kind in ("text", "jsonl") or (kind == "arrow" and os.path.isfile(name)):
        st = os.stat(name)
        entry.update(size=st.st_size, mtime_ns=st.st_mtime_ns)
    if kind == "jsonl":
        entry["text_field"] = source[2]
    return entry


def _tokenizer_identity(spec: Tokenizer | str | os.PathLike[str], tok: Tokenizer) -> dict[str, Any]:
    """The tokenizer's name, its path when it was given one, and the sha256 of its files
    (an encoding's rank files, whose sha256 is checked when they are loaded)."""
    from bpekit.encodings import ENCODINGS

    identity: dict[str, Any] = {"name": tok.name, "path": None, "files": {}}
    if isinstance(spec, str) and spec in ENCODINGS:
        identity["files"] = {f.names[0]: f.sha256 for f in ENCODINGS[spec].files}
    elif isinstance(spec, str | os.PathLike):
        folder = Path(spec)
        identity["path"] = str(folder.resolve())
        for name in ("vocab.json", "merges.txt", "bpekit.json"):
            if (folder / name).is_file():
                identity["files"][name] = _sha256(folder / name)
    return identity


def _mark(tok: Tokenizer, token_id: int | None) -> dict[str, Any] | None:
    if token_id is None:
        return None
    return {"token": tok.decode_single_token_bytes(token_id).decode("utf-8", "replace"), "id": token_id}


def _hash_shards(root: Path, shards: list[dict[str, Any]], num_threads: int | None) -> None:
    """Adds each shard's and index's sha256, several files at once (``hashlib`` lets go
    of the GIL): one at a time, hashing took half as long as encoding the shards."""
    from concurrent.futures import ThreadPoolExecutor

    files = [root / s[key] for s in shards for key in ("file", "index")]
    with ThreadPoolExecutor(max_workers=num_threads or os.cpu_count() or 1) as pool:
        digests = list(pool.map(_sha256, files))
    for k, shard in enumerate(shards):
        shard["sha256"], shard["index_sha256"] = digests[2 * k], digests[2 * k + 1]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def _dump(manifest: dict[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _version() -> str:
    from bpekit import __version__

    return __version__
