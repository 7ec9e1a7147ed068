"""A dataset's ``manifest.json``: what it is encoded from and with, its shards, and
(while a run goes on) where each shard's successor starts. Made here for a run that is
to write a dataset, compared with the one a folder holds, and read back.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "manifest.json").write_text('{"format_version": 1, "complete": false}')
>>> read_manifest(d)["complete"]
False
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from bpekit._stores import StoreObject
from bpekit.dataset.job import Job
from bpekit.dataset.spec import FORMAT_VERSION, MANIFEST
from bpekit.sources import Sources
from bpekit.tokenizer import Tokenizer

__all__ = [
    "REWRITE",
    "dataset_manifest",
    "differences",
    "dump",
    "fingerprint",
    "read_manifest",
    "read_own_manifest",
    "start_sha256",
]

# What writes a damaged dataset again. Not a plain rerun: on a finished dataset that
# checks only that every file has its size, and says there is nothing to do where a
# file's bytes changed and its size did not.
REWRITE = "encode the dataset again with resume=False (--overwrite)"


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a dataset folder, its format version checked (not whether the run
    writing it finished: ``manifest["complete"]``).

    Raises ``FileNotFoundError`` when the folder has no ``manifest.json`` and
    ``ValueError`` when it is not a manifest this version of bpekit reads.
    """
    path = Path(folder) / MANIFEST
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{folder}: no {MANIFEST}, so not a bpekit dataset folder (bpekit.encode_dataset or "
            "bpekit encode --out DIR writes one; a single .npy or .bin file may be given instead)"
        ) from None
    try:
        manifest = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e}); the manifest is damaged: {REWRITE}") from None
    except RecursionError:
        raise ValueError(
            f"{path}: JSON nested too deeply to read; the manifest is damaged: {REWRITE}"
        ) from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{path}: not a bpekit dataset manifest (a JSON object was expected)")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        from bpekit._core import __version__

        raise ValueError(
            f"{path}: unknown format_version {version!r}; this bpekit ({__version__}) reads "
            f"format_version {FORMAT_VERSION} (a newer bpekit may read it)"
        )
    return manifest


def read_own_manifest(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The manifest a run finds where it is to write: the manifest, or ``None`` and what
    is wrong with it where it cannot be read (``None``, ``None``: JSON, but no bpekit
    manifest)."""
    try:
        data = json.loads(path.read_bytes())
    except OSError as e:
        return None, f"unreadable: {e.strerror or e}"
    except (ValueError, UnicodeDecodeError) as e:
        return None, f"not valid JSON: {e}"
    except RecursionError:
        return None, "nested too deeply to be JSON bpekit wrote"
    if isinstance(data, dict) and "format_version" in data:
        return data, None
    return None, None


def dataset_manifest(
    job: Job,
    tokenizer: Tokenizer | str | os.PathLike[str],
    tok: Tokenizer,
    sources: Sources,
    after_each_file: str | None,
) -> dict[str, Any]:
    """The manifest of a dataset not yet written: what it is encoded from and with
    (``tokenizer`` as given, ``tok`` loaded; ``after_each_file``, the mark's text)."""
    layout, read, framing = job.layout, job.read, job.framing
    return {
        "format_version": FORMAT_VERSION,
        "bpekit_version": _version(),
        "complete": False,
        "tokenizer": _tokenizer_identity(tokenizer, tok),
        "format": layout.shard_format,
        "dtype": job.dtype_name,
        "shard_tokens": layout.shard_tokens,
        "val_fraction": layout.val_fraction,
        "seed": layout.seed,
        "checksums": layout.checksums,
        # What the documents end (begin) with: the records' marks where there are records.
        "eos": _mark(tok, framing.record_eos if sources.records else framing.file_eos),
        "bos": _mark(tok, framing.record_bos if sources.records else framing.file_bos),
        "options": {
            "format": read.format,
            "text_field": read.text_field,
            "special_in_text": read.special_in_text,
            "bad_records": read.bad_records,
            "errors": read.errors,
            "after_each_file": after_each_file,
            "record_eos": framing.record_eos,
            "record_bos": framing.record_bos,
            "file_eos": framing.file_eos,
            "file_bos": framing.file_bos,
        },
        "inputs": [_describe(s) for s in sources.sources],
    }


# What must agree for a dataset on disk to be the one asked for.
_SAME = (
    "tokenizer",
    "format",
    "dtype",
    "shard_tokens",
    "val_fraction",
    "seed",
    "checksums",
    "options",
    "inputs",
)


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The options (as the API names them) in which ``old`` and ``new`` differ."""
    names = {"format": "shard_format", "options": "reading options"}
    new = json.loads(dump(new))
    # The tokenizer by what it encodes with: a name and a folder holding it are one.
    old, new = {**old, "tokenizer": _fp(old)}, {**new, "tokenizer": _fp(new)}
    differ = [key for key in _SAME if old.get(key) != new.get(key)]
    return [names.get(key, key) for key in differ]


def start_sha256(split: str, k: int, shard: dict[str, Any], start: dict[str, Any]) -> str:
    """The sha256 that covers where shard ``k`` of ``split``'s successor starts, with the
    shard's entry: a resume point damaged or edited by hand (a negative or huge
    offset, a document number or a count of tokens written that is not the run's)
    does not check out, and the run goes on from the shard before it instead."""
    point = {key: value for key, value in start.items() if key != "sha256"}
    text = json.dumps([split, k, shard, point], sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint(tok: Tokenizer) -> str:
    """The sha256 of what a tokenizer encodes with (its pattern, special tokens, tokens by
    id and merges where they are not ranks), kept on the tokenizer."""
    if tok._fingerprint is None:
        tok._fingerprint = tok._core.fingerprint()
    return tok._fingerprint


def dump(manifest: dict[str, Any]) -> bytes:
    """The manifest as its file holds it."""
    return (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _fp(manifest: dict[str, Any]) -> Any:
    tokenizer = manifest.get("tokenizer")
    return tokenizer.get("sha256") if isinstance(tokenizer, dict) else None


def _describe(source: tuple[Any, ...]) -> dict[str, Any]:
    """An input as the manifest records it: a file's name, size and modification time;
    a feed's name."""
    kind, name = source[0], source[1]
    entry: dict[str, Any] = {"kind": kind, "name": name}
    if isinstance(source[-1], StoreObject):
        entry.update(size=source[-1].size, version=source[-1].version)
    elif kind in ("text", "jsonl") or (kind == "arrow" and os.path.isfile(name)):
        st = os.stat(name)
        entry.update(size=st.st_size, mtime_ns=st.st_mtime_ns)
    if kind == "jsonl" or (kind == "stream" and source[2] == "jsonl"):
        entry["text_field"] = source[3] if kind == "stream" else source[2]
    return entry


def _tokenizer_identity(spec: Tokenizer | str | os.PathLike[str], tok: Tokenizer) -> dict[str, Any]:
    """The tokenizer's name, its path when it was given one, the sha256 of its files (an
    encoding's rank files, whose sha256 is checked when they are loaded), and the sha256
    of what it encodes with (its tokens, merges, special tokens and pattern), which is
    what a dataset on disk must match to be gone on with, however the tokenizer was given."""
    from bpekit._paths import sha256_of
    from bpekit.encodings import ENCODINGS

    identity: dict[str, Any] = {"name": tok.name, "path": None, "files": {}, "sha256": fingerprint(tok)}
    if isinstance(spec, str) and spec in ENCODINGS:
        identity["files"] = {f.names[0]: f.sha256 for f in ENCODINGS[spec].files}
    elif isinstance(spec, str | os.PathLike):
        folder = Path(spec)
        identity["path"] = str(folder.resolve())
        for name in ("vocab.json", "merges.txt", "bpekit.json"):
            if (folder / name).is_file():
                identity["files"][name] = sha256_of(folder / name)
    return identity


def _mark(tok: Tokenizer, token_id: int | None) -> dict[str, Any] | None:
    if token_id is None:
        return None
    return {"token": tok.decode_single_token_bytes(token_id).decode("utf-8", "replace"), "id": token_id}


def _version() -> str:
    from bpekit._core import __version__

    return __version__
