"""``bpekit inspect DIR`` on a token dataset folder: its manifest's summary, and whether
its files are there (``--verify``: and their sha256 right)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bpekit.dataset.manifest import read_manifest
from bpekit.dataset.reader import TokenDataset
from bpekit.dataset.spec import MANIFEST


def is_dataset(path: str | Path) -> bool:
    """Whether ``path`` is a dataset folder (it holds ``manifest.json``)."""
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def _count(n: Any, word: str) -> str:
    """``n`` ``word``s, with thousands separators; ``?`` for a count the manifest lacks.

    >>> _count(1234, "token"), _count(1, "shard"), _count(None, "document")
    ('1,234 tokens', '1 shard', '? documents')
    """
    if not isinstance(n, int):
        return f"? {word}s"
    return f"{n:,} {word}{'s' * (n != 1)}"


def _token(entry: Any) -> str:
    """An eos / bos entry of the manifest: its text and id, or ``none``.

    >>> _token({"token": "<|endoftext|>", "id": 50256}), _token(None)
    ("'<|endoftext|>' (id 50256)", 'none')
    """
    if not isinstance(entry, dict):
        return "none"
    return f"{entry.get('token')!r} (id {entry.get('id')})"


def _tokenizer(entry: Any) -> str:
    """The manifest's tokenizer: its name, path and files with the start of their sha256.

    >>> _tokenizer({"name": "gpt2", "path": None, "files": {"gpt2.tiktoken": "0123456789abcdef"}})
    'gpt2 (files: gpt2.tiktoken sha256 0123456789ab…)'
    """
    if not isinstance(entry, dict):
        return "?"
    said = [f"path {entry['path']}"] if entry.get("path") else []
    files = entry.get("files") or {}
    if isinstance(files, dict) and files:
        said.append("files: " + ", ".join(f"{name} sha256 {str(sha)[:12]}…" for name, sha in files.items()))
    return f"{entry.get('name', '?')}" + (f" ({'; '.join(said)})" if said else "")


def _totals_line(totals: dict[str, Any]) -> str:
    tokens, documents = _count(totals.get("tokens"), "token"), _count(totals.get("documents"), "document")
    line = f"total       {tokens}, {documents}"
    nbytes, ntokens = totals.get("bytes"), totals.get("tokens")
    if isinstance(nbytes, int):
        line += f", {nbytes:,} bytes of text"
        if isinstance(ntokens, int) and ntokens:
            line += f" ({nbytes / ntokens:.3f} bytes/token)"
    if totals.get("skipped"):
        line += f"; {_count(totals['skipped'], 'bad record')} skipped"
    return line


def summary(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """The lines that describe a dataset from its manifest."""
    m = manifest
    complete = m.get("complete") is True
    lines = [
        f"dataset     {folder} (format_version {m.get('format_version')}, "
        f"written by bpekit {m.get('bpekit_version', '?')})",
        "complete    yes"
        if complete
        else "complete    no: the run writing it has not finished; re-run it to resume",
        f"tokenizer   {_tokenizer(m.get('tokenizer'))}",
        f"format      {m.get('format', '?')}, {m.get('dtype', '?')} ids; shards of at most "
        + _count(m.get("shard_tokens"), "token"),
        f"eos         {_token(m.get('eos'))}",
        f"bos         {_token(m.get('bos'))}",
        f"split by    val_fraction {m.get('val_fraction', '?')}, seed {m.get('seed', '?')}",
    ]
    splits = m.get("splits")
    if not isinstance(splits, dict):
        splits = {}
    for name, split in splits.items():
        split = split if isinstance(split, dict) else {}
        shards = split.get("shards")
        if not complete and isinstance(shards, list):
            # An unfinished run's manifest lists the shards finished so far.
            done = [s for s in shards if isinstance(s, dict)]
            tokens = sum(s.get("tokens", 0) for s in done if isinstance(s.get("tokens"), int))
            lines.append(f"{name:<11} {_count(len(done), 'shard')} finished so far, {tokens:,} tokens")
            continue
        counts = [
            _count(split.get("tokens"), "token"),
            _count(split.get("documents"), "document"),
            _count(len(shards) if isinstance(shards, list) else None, "shard"),
        ]
        lines.append(f"{name:<11} {', '.join(counts)}")
    totals = m.get("totals") if isinstance(m.get("totals"), dict) else {}
    if not complete:
        lines.append("total       not known until the run finishes")
        totals = None
    if totals is not None:
        lines.append(_totals_line(totals))
    inputs = m.get("inputs")
    if not isinstance(inputs, list):
        inputs = []
    names = [str(i.get("name", "?")) if isinstance(i, dict) else "?" for i in inputs]
    shown = ", ".join(names[:3]) + (f", … ({len(names) - 3:,} more)" if len(names) > 3 else "")
    lines.append(f"inputs      {len(names):,}" + (f": {shown}" if names else ""))
    return lines


def check_files(folder: Path, manifest: dict[str, Any], verify: bool) -> tuple[str, bool]:
    """Opens every split (files present, sizes as the manifest says), and with ``verify``
    reads them all for their sha256; the line that says how that went, and whether well."""
    if manifest.get("complete") is not True:
        return "files       not checked: the dataset is incomplete", True
    try:
        for split in manifest.get("splits") or {}:
            ds = TokenDataset(folder, split)
            if verify:
                ds.verify()
    except (OSError, ValueError) as e:
        # The library names the keyword and the flag; here the flag does.
        return f"files       BAD: {str(e).replace('resume=False (--overwrite)', '--overwrite')}", False
    if verify and manifest.get("checksums") is False:
        return "files       all present with the sizes the manifest says (written without sha256)", True
    if verify:
        return "files       verified: every shard and index has the size and sha256 the manifest says", True
    return "files       all present with the sizes the manifest says (--verify checks their sha256)", True


def run(folder: Path, verify: bool) -> int:
    """Prints a dataset's summary; 1 when a file is missing or bad, else 0."""
    manifest = read_manifest(folder)
    lines = summary(folder, manifest)
    files, ok = check_files(folder, manifest, verify)
    print("\n".join([*lines, files]))
    return 0 if ok else 1
