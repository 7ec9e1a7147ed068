"""What users give as ``inputs``, turned into the sources that the native readers take.

A source is one of the native API's tuples, read in order: ``("text", path)``,
``("jsonl", path, text_field)``, ``("str", name, iterator)`` (documents as ``str``) or
``("arrow", name, iterator)`` (batches of an Arrow string column: Parquet files and
Hugging Face datasets, made by ``bpekit._arrow``).

What ``inputs`` may be, and how it is told apart:

- a path (``str``, ``bytes``, ``os.PathLike``): a file, or a pipe (``/dev/stdin``),
  read as it comes; a directory (its files, recursively, sorted by path, hidden ones
  skipped); or, when it holds ``*``, ``?`` or ``[`` and is no existing path, a glob
  pattern (``"data/*.jsonl.zst"``, ``"**/*.parquet"``): the files it matches, sorted,
  hidden ones skipped. A directory and a glob read regular files only (never FIFOs,
  sockets or devices), and never go into a symbolic link to a folder: ``**`` matches
  real folders only, as bash's ``globstar`` does, so a link back up the tree is not
  read again and again. A single ``str`` is never a document;
- a ``list`` or ``tuple``: each item a path as above, or one of the sources below, mixed
  freely. A list of ``str`` is a list of paths: to read strings as documents, pass
  ``iter(texts)``;
- a Hugging Face ``datasets.Dataset`` or ``IterableDataset`` (``text_field`` names its
  column), or a column of one (``ds["text"]``, ``ds["meta"]["body"]``): read as Arrow
  batches, never materialised;
- any other iterable (a generator, ``map``, ``iter(list)``): each item one document, a
  ``str``, pulled as the work goes. When its first item is an ``os.PathLike`` (a
  ``Path``), its items are paths instead, so ``Path("data").glob("*.txt")`` names files
  as before.

A file's format comes from its extension once ``.gz`` / ``.zst`` is taken off: ``.jsonl``,
``.ndjson`` and ``.json`` are JSON lines, ``.parquet`` is Parquet, anything else is text;
``format=`` sets it for every file instead.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> for name in ("a.jsonl.zst", "b.txt", ".hidden.txt"):
...     _ = (d / name).write_bytes(b"")
>>> [s[0] for s in resolve(str(d / "*")).sources]
['jsonl', 'text']
>>> resolve([d / "b.txt", iter(["one document", "another"])]).sources[1][:2]
('str', '<list_iterator>')
"""

from __future__ import annotations

import errno
import glob
import itertools
import os
import stat
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bpekit import _stores
from bpekit._paths import PathArg, fspath
from bpekit.options import (
    BAD_RECORDS,
    FORMATS,
    SPECIAL_IN_TEXT,
    ReadOptions,
    check_bad_records,
    check_format,
    check_special_in_text,
    check_text_field,
)

__all__ = [
    "BAD_RECORDS",
    "FORMATS",
    "SPECIAL_IN_TEXT",
    "SkippedRecordsWarning",
    "Sources",
    "check_bad_records",
    "check_format",
    "check_some_read",
    "check_special_in_text",
    "check_text_field",
    "file_format",
    "resolve",
    "resolve_files",
    "warn_skipped",
]

_BY_EXTENSION = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet"}
_COMPRESSED = (".gz", ".zst")
_GLOB_CHARS = frozenset("*?[")
_END = object()  # what next() gives for an iterable with no item


def file_format(path: Path | str, format: str | None) -> str:
    """How ``path`` is read: ``format`` when given, else by its extension once ``.gz`` /
    ``.zst`` is taken off. A compressed Parquet file is an error: Parquet compresses
    its pages inside.

    >>> file_format(Path("shard.JSONL.zst"), None), file_format(Path("a.txt.gz"), None)
    ('jsonl', 'text')
    >>> file_format(Path("notes.md"), "jsonl")
    'jsonl'
    """
    name = (path.name if isinstance(path, Path) else str(path).rpartition("/")[2]).lower()
    outer = next((c for c in _COMPRESSED if name.endswith(c)), "")
    fmt = format or _BY_EXTENSION.get(os.path.splitext(name[: len(name) - len(outer)])[1], "text")
    if fmt == "parquet" and outer:
        raise ValueError(
            f"{path}: a Parquet file cannot be read through {outer}: Parquet compresses its pages "
            f"inside; decompress the file (or write it with compression='zstd')"
        )
    return fmt


# --- the resolved inputs, and the stats the API reports --------------------------------


@dataclass
class Sources:
    """The resolved inputs: the native API's tuples and what a summary says about them."""

    sources: list[tuple[Any, ...]]
    files: int = 0  # files among the sources (a directory or glob counts its files)
    records: bool = False  # any input whose documents are records (JSONL, Parquet, iterables, datasets)
    text_files: bool = False


def check_some_read(stats: Mapping[str, Any]) -> None:
    """A ``ValueError`` where records were skipped and no document was read: a run
    whose every record was bad read nothing, whatever ``bad_records`` says: for the
    jobs whose stats are added up in Python (a count, a distributed run).

    >>> check_some_read({"documents": 0, "skipped": 1000, "skipped_examples": ["a.parquet: row 0: null"]})
    Traceback (most recent call last):
    ...
    ValueError: every record was bad (1,000 skipped; the first: a.parquet: row 0: null), so no document \
was read; fix the records, or how they are read (text_field=, format=)
    """
    n = int(stats.get("skipped", 0))
    if n and not stats.get("documents", 0):
        examples = stats.get("skipped_examples") or []
        first = f"; the first: {examples[0]}" if examples else ""
        raise ValueError(
            f"every record was bad ({n:,} skipped{first}), so no document was read; fix the records, "
            "or how they are read (text_field=, format=)"
        )


class SkippedRecordsWarning(UserWarning):
    """Bad records were skipped (``bad_records="skip"``): how many, and the first."""


def warn_skipped(stats: Mapping[str, Any], stacklevel: int = 3) -> None:
    """A warning with the number of bad records skipped and the first one, if any were."""
    n = stats.get("skipped", 0)
    if n:
        first = (stats.get("skipped_examples") or ["?"])[0]
        warnings.warn(
            f"skipped {n:,} bad record(s) (bad_records='skip'); the first: {first}",
            SkippedRecordsWarning,
            stacklevel=stacklevel,
        )


# --- resolution ------------------------------------------------------------------------


def resolve(
    inputs: Any,
    read: ReadOptions | None = None,
    *,
    format: str | None = ReadOptions.format,
    text_field: str = ReadOptions.text_field,
    bad_records: str = ReadOptions.bad_records,
) -> Sources:
    """``inputs`` (see the module's doc) as ``Sources``, read as ``read`` says (the
    jobs pass theirs), or the keywords, which are checked here.

    Raises ``FileNotFoundError`` naming a path that does not exist or a pattern that
    matches nothing, ``TypeError`` for what is no input at all, and ``ValueError`` for a
    Parquet file or dataset without the column ``text_field`` (naming the columns it has).
    """
    keywords = ReadOptions(format=format, text_field=text_field, bad_records=bad_records)
    if read is not None and keywords != ReadOptions():
        raise TypeError("give read= or the keywords format=, text_field=, bad_records=, not both")
    read = keywords if read is None else read
    out = Sources([])
    in_list = isinstance(inputs, list | tuple)
    for item in _items(inputs):
        if _is_path(item) and (url := _url_of(item)) is not None:
            for obj in _stores.list_objects(url):
                _add_object(out, obj, read)
        elif _is_path(item):
            for path in _paths(item, in_list):
                _add_file(out, path, read)
        else:
            _add_iterable(out, item, read)
    if not out.sources:
        raise ValueError("no inputs given")
    return out


def resolve_files(inputs: Any, *, format: str | None = None) -> list[tuple[Path | _stores.StoreObject, str]]:
    """The files that ``inputs`` name, with the format each is read in: what a
    distributed job plans its units from (an object of a store as a ``StoreObject``).
    Documents that only this process holds (an iterator, a Hugging Face dataset)
    cannot be read by other machines: a ``TypeError`` says to write them to files
    first.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "a.jsonl").write_text("")
    >>> [(p.name, f) for p, f in resolve_files(d)]
    [('a.jsonl', 'jsonl')]
    """
    format = check_format(format)
    out: list[tuple[Path | _stores.StoreObject, str]] = []
    in_list = isinstance(inputs, list | tuple)
    for item in _items(inputs):
        if _is_path(item) and (url := _url_of(item)) is not None:
            out.extend((obj, file_format(obj.url, format)) for obj in _stores.list_objects(url))
            continue
        if _is_path(item):
            out.extend((p, file_format(p, format)) for p in _paths(item, in_list))
            continue
        kind = _hf_kind(item)
        if kind is None:
            items = iter(item)
            first = next(items, _END)
            if isinstance(first, os.PathLike):  # Path("d").glob("*.txt")
                for path_item in itertools.chain([first], items):
                    out.extend((p, file_format(p, format)) for p in _paths(path_item, True))
                continue
            kind = type(item).__name__
        raise TypeError(
            f"a distributed job reads files that every worker can open, not a {kind}: write its "
            "documents to files first (JSON lines or Parquet)"
        )
    if not out:
        raise ValueError("no inputs given")
    return out


def _is_path(item: Any) -> bool:
    return isinstance(item, str | bytes | os.PathLike)


def _url_of(item: PathArg) -> str | None:
    """``item`` as the URL of a store (``s3://``, ``gs://``, ``hf://``), or None for a
    local path; a ``file://`` URL is its local path, and is None here."""
    if not isinstance(item, str | bytes):
        return None
    text = fspath(item, "an input")
    if not _stores.is_url(text) or _stores.local_path(text) is not None:
        return None
    return text


def _items(inputs: Any) -> list[Any]:
    """The inputs one by one: a list or tuple is taken item by item; anything else is one."""
    if not isinstance(inputs, list | tuple):
        _check_item(inputs, in_list=False)
        return [inputs]
    for item in inputs:
        _check_item(item, in_list=True)
    return list(inputs)


def _check_item(item: Any, in_list: bool) -> None:
    """Refuses what is no input, in one line saying what would be."""
    if _is_path(item):
        return
    hf = _hf_kind(item)
    if hf in ("DatasetDict", "IterableDatasetDict"):
        raise TypeError(
            f"a {hf} holds several splits ({', '.join(item)}); pass one of them, such as ds['train']"
        )
    if isinstance(item, Mapping | Set):
        raise TypeError(
            f"an input may not be a {type(item).__name__}, which has no order to read in: pass a list of "
            "paths (sorted(...)) or an iterator of documents"
        )
    if in_list and isinstance(item, list | tuple):
        raise TypeError(
            f"an input in a list must be a path, a dataset or an iterator of documents, not a "
            f"{type(item).__name__}: to read a list of strings as documents, pass iter(texts)"
        )
    if hf is not None or isinstance(item, Iterable):
        return
    if in_list:
        fspath(item, "an input")  # raises, naming what a path is
    raise TypeError(
        f"inputs must be a path (str, bytes or os.PathLike), an iterable of documents (str) or a list "
        f"of paths, not {type(item).__name__}: {item!r}"
    )


def _paths(item: PathArg, in_list: bool) -> list[Path]:
    """The files that a path, a directory or a glob pattern names."""
    text = fspath(item, "an input")
    if _stores.is_url(text):
        text = _stores.local_path(text) or text
    path = Path(text)
    if _GLOB_CHARS.isdisjoint(text) or _exists(path):
        return _files_of(path, in_list)
    files = _glob_files(text)
    if not files:
        error = FileNotFoundError(f"{text}: no file matches this pattern")
        error.errno = errno.ENOENT
        raise error
    return files


def _glob_files(pattern: str) -> list[Path]:
    """The regular files that ``pattern`` matches, sorted, each once: what
    ``glob.glob(pattern, recursive=True)`` matches, but for ``**``, which never enters a
    symbolic link to a folder (``glob`` follows them: a link to ``..`` read every file
    41 times, until the path was too long, and two such links ran for minutes).
    Folders, FIFOs (whose open waits for a writer), sockets and devices are left
    out, as the folder walk leaves them out; a broken link is an error naming it.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "sub").mkdir()
    >>> _ = (d / "a.txt").write_text("a"), (d / "sub" / "b.txt").write_text("b")
    >>> (d / "sub" / "up").symlink_to(d)
    >>> [str(p.relative_to(d)) for p in _glob_files(str(d / "**" / "*.txt"))]
    ['a.txt', 'sub/b.txt']
    """
    found = set()
    for match in _glob_without_links(pattern):
        path = Path(match)
        try:
            mode = path.stat().st_mode
        except OSError as e:
            raise _unreadable(path, e, False) from None
        if stat.S_ISREG(mode):
            found.add(match)
    return [Path(m) for m in sorted(found)]


def _glob_without_links(pattern: str) -> Iterator[str]:
    """``glob.glob(pattern, recursive=True)``, where ``**`` (a whole path component)
    matches the folders under a base that are real folders and not hidden: it walks
    them with ``os.walk``, which never follows a link to a folder, and globs the rest
    of the pattern in each."""
    parts = pattern.split(os.sep)
    if "**" not in parts:
        yield from glob.glob(pattern)
        return
    at = parts.index("**")
    head, rest = os.sep.join(parts[:at]), os.sep.join(parts[at + 1 :]) or "*"
    if at > 0 and not head:
        head = os.sep  # "/**/x": from the root
    bases = glob.glob(head) if glob.has_magic(head) else [head]
    for base in bases:
        if base and not os.path.isdir(base):
            continue
        for root, dirs, _ in os.walk(base or os.curdir):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            folder = "" if not base and root == os.curdir else root
            if not base and folder.startswith(os.curdir + os.sep):
                folder = folder[len(os.curdir + os.sep) :]  # "sub/x", as glob says it
            yield from _glob_without_links(os.path.join(glob.escape(folder), rest) if folder else rest)


def _exists(path: Path) -> bool:
    try:
        path.stat()
        return True
    except OSError:
        return False


def _files_of(path: Path, in_list: bool) -> list[Path]:
    try:
        mode = path.stat().st_mode
    except OSError as e:
        raise _unreadable(path, e, in_list) from None
    if stat.S_ISSOCK(mode):
        # Its open fails as "No such device or address", which does not say why.
        raise ValueError(
            f"{path}: is a socket, not a file or a pipe; give a file, or pipe what the socket sends "
            "into /dev/stdin"
        )
    return _files_under(path) if stat.S_ISDIR(mode) else [path]


def _files_under(folder: Path) -> list[Path]:
    """The regular files under ``folder``, recursively, sorted by path, hidden ones
    skipped; links to folders are not followed. A broken symbolic link among them is an
    error naming it, not a file left out."""
    found = []
    for p in folder.rglob("*"):
        if any(part.startswith(".") for part in p.relative_to(folder).parts):
            continue
        if p.is_file():
            found.append(p)
        elif p.is_symlink():
            try:
                p.stat()  # a link to a folder is not followed (as `grep -r` does)
            except OSError as e:
                raise _unreadable(p, e, False) from None
    if not found:
        raise ValueError(f"{folder}: directory holds no files to read")
    return sorted(found)


# How errors of stat() are worded, as the core words its own ("PATH: no such file or
# directory"); Python's "[Errno 40] Too many levels of symbolic links" is less clear.
_STAT_ERRORS = {
    errno.ENOENT: "no such file or directory",
    errno.ELOOP: "symbolic link loop (too many levels of symbolic links)",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
}


def _unreadable(path: Path, e: OSError, in_list: bool) -> OSError:
    """``e``, raised by ``path.stat()``, as an error of its own class naming ``path``.
    A missing "path" with white space in a list was likely a document: say how to pass those."""
    if path.is_symlink() and e.errno == errno.ENOENT:
        what = f"a symbolic link to {os.readlink(path)}, which does not exist"
    else:
        what = _STAT_ERRORS.get(e.errno or 0, (e.strerror or str(e)).lower())
    if in_list and e.errno == errno.ENOENT and any(c.isspace() for c in str(path)):
        what += " (a list of str is a list of paths: to read strings as documents, pass iter(texts))"
    error = type(e)(f"{path}: {what}")
    error.errno = e.errno  # for callers that look at it; str() stays the message
    return error


def _add_file(out: Sources, path: Path, read: ReadOptions) -> None:
    fmt = file_format(path, read.format)
    out.files += 1
    if fmt == "text":
        out.text_files = True
        out.sources.append(("text", str(path)))
        return
    out.records = True
    if fmt == "jsonl":
        out.sources.append(("jsonl", str(path), read.text_field))
    else:
        from bpekit import _arrow

        out.sources.append(_arrow.parquet_source(path, read.text_field, read.bad_records))


def _add_object(out: Sources, obj: _stores.StoreObject, read: ReadOptions) -> None:
    """An object of a store: text and JSON lines (plain, ``.gz``, ``.zst``) streamed to
    the core's reader of compressed files and pipes, a block at a time; Parquet read a
    row group at a time through ranged reads."""
    fmt = file_format(obj.url, read.format)
    out.files += 1
    if fmt == "text":
        out.text_files = True
        out.sources.append(("stream", obj.url, "text", "", _stores.open_object(obj.url), obj.size, obj))
        return
    out.records = True
    if fmt == "jsonl":
        out.sources.append(
            ("stream", obj.url, "jsonl", read.text_field, _stores.open_object(obj.url), obj.size, obj)
        )
    else:
        from bpekit import _arrow

        out.sources.append((*_arrow.parquet_source(obj.url, read.text_field, read.bad_records), obj))


def _add_iterable(out: Sources, item: Any, read: ReadOptions) -> None:
    if _hf_kind(item) is not None:
        from bpekit import _arrow

        out.records = True
        out.sources.append(_arrow.dataset_source(item, read.text_field, read.bad_records))
        return
    items: Iterator[Any] = iter(item)
    first = next(items, _END)
    if isinstance(first, os.PathLike):  # Path("d").glob("*.txt"): paths, as before
        for path_item in itertools.chain([first], items):
            for path in _paths(path_item, True):
                _add_file(out, path, read)
        return
    out.records = True
    documents = items if first is _END else itertools.chain([first], items)
    out.sources.append(("str", f"<{type(item).__name__}>", documents))


def _hf_kind(item: Any) -> str | None:
    """The class name of a Hugging Face ``datasets`` object (a dataset, a column of one,
    a dict of splits), or None. Nothing is imported: such an object's module is loaded."""
    if "datasets" not in sys.modules:
        return None
    name = type(item).__name__
    module = type(item).__module__ or ""
    known = ("Dataset", "IterableDataset", "Column", "IterableColumn", "DatasetDict", "IterableDatasetDict")
    return name if module.startswith("datasets.") and name in known else None
