"""The options the jobs share, one typed object per concern, each option defined once:
its name, default, check, doc and command-line flag live here and nowhere else.

- ``ReadOptions``: how inputs are read into documents (counting, encoding, datasets).
- ``RunOptions``: how a run goes (threads, chunk size, progress, resume); none of them
  changes a result.
- ``DistributedOptions``: how a job is spread over processes or machines
  (``bpekit.distributed``: where, how many workers, units of how many bytes).

Public functions keep explicit, typed keyword parameters whose defaults are read from
these classes (``num_threads: int | None = RunOptions.num_threads``), build the object
once, and pass it down; the command line builds the same objects from its flags
(``flag`` in each field's metadata); the core reads their attributes as they are (PyO3's
``FromPyObject``). An object is checked when it is made, before any work:

>>> ReadOptions(format="csv")
Traceback (most recent call last):
...
ValueError: format must be "text", "jsonl", "parquet" or None (by extension), not "csv"
>>> RunOptions(chunk_size=-1)
Traceback (most recent call last):
...
ValueError: chunk_size must be 0 (automatic) or a positive number of bytes, got -1
>>> ReadOptions(errors="replace").errors
'replace'
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from bpekit._threads import check_num_threads
from bpekit._utf8 import POLICIES as UTF8_ERRORS
from bpekit._utf8 import check_errors

__all__ = [
    "BACKENDS",
    "BAD_RECORDS",
    "DEFAULT_UNIT_BYTES",
    "FORMATS",
    "OPTION_CLASSES",
    "SPECIAL_IN_TEXT",
    "UTF8_ERRORS",
    "DistributedOptions",
    "ReadOptions",
    "RunOptions",
    "check_bad_records",
    "check_format",
    "check_special_in_text",
    "check_text_field",
    "flag_of",
]

FORMATS = ("text", "jsonl", "parquet")
SPECIAL_IN_TEXT = ("special", "text", "error")
BAD_RECORDS = ("error", "skip")


def _option(
    default: Any,
    flag: str | None,
    doc: str,
    choices: tuple[str, ...] | None = None,
    metavar: str | None = None,
) -> Any:
    """A dataclass field with its command-line flag and one-line doc (the flag's help
    too, so it says what the keyword means in words both read), and, for the command
    line, the values it may take and the name of its value in the usage."""
    metadata = {"flag": flag, "doc": doc, "choices": choices, "metavar": metavar}
    return field(default=default, metadata=metadata)


def _choice(name: str, value: Any, allowed: tuple[str, ...], none: str | None = None) -> Any:
    """``value`` if it is one of ``allowed`` (or None where ``none`` says what None means)."""
    if (isinstance(value, str) and value in allowed) or (value is None and none is not None):
        return value
    names = [f'"{a}"' for a in allowed] + ([f"None ({none})"] if none else [])
    shown = f'"{value}"' if isinstance(value, str) else repr(value)
    message = f"{name} must be {', '.join(names[:-1])} or {names[-1]}, not {shown}"
    raise (ValueError if isinstance(value, str) else TypeError)(message)


def check_format(format: Any) -> str | None:
    """``format=``: how every input file is read, or None for by its extension.

    >>> check_format("csv")
    Traceback (most recent call last):
    ...
    ValueError: format must be "text", "jsonl", "parquet" or None (by extension), not "csv"
    """
    checked: str | None = _choice("format", format, FORMATS, "by extension")
    return checked


def check_special_in_text(special_in_text: Any) -> str | None:
    """``special_in_text=``: what a special token's text inside a document is.

    >>> check_special_in_text("ignore")
    Traceback (most recent call last):
    ...
    ValueError: special_in_text must be "special", "text", "error" or None (special in text files, \
text in records), not "ignore"
    """
    checked: str | None = _choice(
        "special_in_text", special_in_text, SPECIAL_IN_TEXT, "special in text files, text in records"
    )
    return checked


def check_bad_records(bad_records: Any) -> str:
    """``bad_records=``: ``"error"`` stops at the first bad record, ``"skip"`` counts it."""
    return str(_choice("bad_records", bad_records, BAD_RECORDS))


def check_text_field(text_field: Any) -> str:
    """``text_field=``: a field name, or a dotted path into nested objects (``"meta.body"``).

    >>> check_text_field("meta..body")
    Traceback (most recent call last):
    ...
    ValueError: text_field 'meta..body' has an empty part; give a field name or a dotted path ('meta.body')
    """
    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str (a field name or a dotted path), not {text_field!r}")
    if not all(text_field.split(".")):
        raise ValueError(
            f"text_field {text_field!r} has an empty part; give a field name or a dotted path ('meta.body')"
        )
    return text_field


def check_chunk_size(chunk_size: Any) -> int:
    """``chunk_size=``: bytes per unit of work, 0 for automatic."""
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool):
        raise TypeError(f"chunk_size must be an int (bytes, 0 = automatic), not {chunk_size!r}")
    if chunk_size < 0:
        raise ValueError(f"chunk_size must be 0 (automatic) or a positive number of bytes, got {chunk_size}")
    return chunk_size


@dataclass(frozen=True)
class ReadOptions:
    """How inputs are read into documents; the same for counting, encoding and datasets."""

    format: str | None = _option(
        None,
        "--format",
        "how every input file is read (default: by its extension once .gz/.zst is taken off: "
        ".jsonl, .ndjson and .json are JSON lines, .parquet is Parquet, anything else text)",
        choices=FORMATS,
    )
    text_field: str = _option(
        "text",
        "--text-field",
        "the JSON field or Parquet column holding each record's text; a dotted path such as "
        "meta.body reaches into nested objects",
        metavar="FIELD",
    )
    special_in_text: str | None = _option(
        None,
        "--special-in-text",
        "a special token's text inside a document: 'special' reads it as the special token, "
        "'text' as ordinary text, 'error' stops (default: special in text files, text in records)",
        choices=SPECIAL_IN_TEXT,
    )
    bad_records: str = _option(
        "error",
        "--bad-records",
        "a record that is not JSON, lacks the field, holds no string, a null or invalid UTF-8: "
        "'error' stops naming it, 'skip' leaves it out and counts it",
        choices=BAD_RECORDS,
    )
    errors: str = _option(
        "strict",
        "--errors",
        "invalid UTF-8: 'strict' stops naming the file and byte offset, 'replace' and 'ignore' "
        "decode it as bytes.decode does",
        choices=UTF8_ERRORS,
    )

    def __post_init__(self) -> None:
        check_format(self.format)
        check_text_field(self.text_field)
        check_special_in_text(self.special_in_text)
        check_bad_records(self.bad_records)
        check_errors(self.errors)


@dataclass(frozen=True)
class RunOptions:
    """How a run goes; none of these changes a result."""

    num_threads: int | None = _option(None, "--threads", "threads for the work (default: all cores)")
    chunk_size: int = _option(
        0,
        "--chunk-size",
        "bytes of input a thread takes at a time, 0 for automatic; never changes the result",
        metavar="BYTES",
    )
    progress: bool = _option(False, "--progress", "a progress bar on stderr")
    resume: bool = _option(
        True, "--overwrite", "datasets: go on from a run cut short (the flag turns it off)"
    )

    def __post_init__(self) -> None:
        # A numpy integer thread count becomes an int here, once, for the core.
        object.__setattr__(self, "num_threads", check_num_threads(self.num_threads))
        check_chunk_size(self.chunk_size)


# About this much input per unit of a distributed job: large enough that a unit's fixed
# costs (a task's start, its counts sent back and added) are small against its work,
# small enough that many workers share a corpus of a few GB and a retried unit costs
# seconds.
DEFAULT_UNIT_BYTES = 256 << 20
BACKENDS = ("ray", "local")


@dataclass(frozen=True)
class DistributedOptions:
    """How a job is spread over processes or machines (``bpekit.distributed``); none of
    these changes a result."""

    address: str | None = _option(
        None,
        "--ray",
        "the Ray to run on: None starts one on this machine for the run, 'auto' joins the "
        "running cluster, or a cluster's address",
    )
    backend: str = _option(
        "ray", None, "'ray', or 'local': a pool of processes on this machine, with no Ray at all"
    )
    workers: int | None = _option(
        None,
        "--workers",
        "CPUs of a Ray started here for the run, or processes of the local pool (default: one per core)",
        metavar="N",
    )
    work_dir: str | None = _option(
        None,
        "--work-dir",
        "a folder every worker can reach, to keep each unit's result in: a rerun after a "
        "failure keeps the units done",
        metavar="DIR",
    )
    unit_bytes: int | None = _option(
        None,
        "--unit-bytes",
        "about this much input per unit, one task's share (default 256 MiB; a count on Ray "
        "with no work_dir: four units per worker, from 256 MiB to 1 GiB each); plain files "
        "are cut into units, a compressed file is one",
        metavar="BYTES",
    )

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS or not isinstance(self.backend, str):
            raise ValueError(f'backend must be "ray" or "local", not {self.backend!r}')
        if self.address is not None and self.backend == "local":
            raise ValueError(f"address={self.address!r} is for backend='ray'; the local backend runs here")
        workers = self.workers
        if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
            raise ValueError(f"workers must be a positive int or None (one per core), not {workers!r}")
        unit = self.unit_bytes
        if unit is not None and (not isinstance(unit, int) or isinstance(unit, bool) or unit < 1):
            raise ValueError(f"unit_bytes must be a positive number of bytes, not {unit!r}")


# Every class of options; the command line's wording of keywords is read from them.
OPTION_CLASSES: tuple[type, ...] = (ReadOptions, RunOptions, DistributedOptions)


def flag_of(keyword: str) -> str | None:
    """The command-line flag of a keyword of these options, or None.

    >>> flag_of("num_threads"), flag_of("text_field"), flag_of("nothing")
    ('--threads', '--text-field', None)
    """
    for cls in OPTION_CLASSES:
        for f in dataclasses.fields(cls):
            if f.name == keyword:
                flag: str | None = f.metadata["flag"]
                return flag
    return None
