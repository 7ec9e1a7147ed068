"""The options of encoding into token files, one typed object per concern, in the style
of ``bpekit.options`` (each option's default, check, doc and command-line flag here):

- ``Layout``: how a dataset is laid out (shards, their format, the val split, the ids'
  dtype, checksums); a single ``.npy`` uses its ``dtype`` only.
- ``Marks``: the tokens written around documents and after files, as text.

With ``bpekit.options.ReadOptions`` (how inputs are read) and ``RunOptions`` (how a run
goes), they are all a file or dataset encode takes. Each is checked when made, before
any work:

>>> Layout(shard_tokens=0)
Traceback (most recent call last):
...
ValueError: shard_tokens must be a positive int, not 0
>>> Marks(eos=50256)
Traceback (most recent call last):
...
TypeError: the token given as eos must be the text of a token (a str), not 50256
>>> Layout(dtype="<u4").dtype
'uint32'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bpekit.dataset.spec import SHARD_FORMATS, id_dtype_name

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["EOT", "RECORDS_DEFAULT", "Layout", "Marks", "check_layout"]

EOT = "<|endoftext|>"


class _RecordsDefault:
    """The default ``eos``: the tokenizer's ``<|endoftext|>`` after each record, when it has one."""

    def __repr__(self) -> str:
        return "'<|endoftext|>' after each record"

    def __reduce__(self) -> str:
        # Unpickled as the one object, which ``eos is RECORDS_DEFAULT`` tells apart.
        return "RECORDS_DEFAULT"


RECORDS_DEFAULT: Any = _RecordsDefault()


def _option(default: Any, flag: str, doc: str) -> Any:
    """A dataclass field with its command-line flag and one-line doc."""
    return field(default=default, metadata={"flag": flag, "doc": doc})


def check_layout(shard_tokens: Any, shard_format: Any, val_fraction: Any, seed: Any) -> None:
    """Refuses a layout that cannot be written, before any input is read (the command
    line names the flags for the keywords).

    >>> check_layout(2**64 + 1, "npy", 0.0, 0)
    Traceback (most recent call last):
    ...
    ValueError: shard_tokens must be from 1 to 2**64 - 1, not 18446744073709551617
    """
    if not isinstance(shard_tokens, int) or isinstance(shard_tokens, bool) or shard_tokens < 1:
        raise ValueError(f"shard_tokens must be a positive int, not {shard_tokens!r}")
    if shard_tokens >= 2**64:  # The core counts a shard's ids in 64 bits.
        raise ValueError(f"shard_tokens must be from 1 to 2**64 - 1, not {shard_tokens!r}")
    if shard_format not in SHARD_FORMATS:
        raise ValueError(f"shard_format must be one of {', '.join(SHARD_FORMATS)}, not {shard_format!r}")
    if shard_format == "llmc" and shard_tokens >= 2**31:
        raise ValueError(f"shard_tokens {shard_tokens:,} is more than llm.c's header counts (2**31 - 1)")
    if shard_format == "megatron" and shard_tokens >= 2**31:
        raise ValueError(
            f"shard_tokens {shard_tokens:,} is more than Megatron's index counts in a sequence (2**31 - 1)"
        )
    if not isinstance(val_fraction, int | float) or not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be at least 0 and below 1, not {val_fraction!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int from 0 to 2**64 - 1, not {seed!r}")


@dataclass(frozen=True)
class Layout:
    """How a dataset is laid out; a single ``.npy`` uses ``dtype`` only."""

    shard_tokens: int = _option(2**28, "--shard-tokens", "ids per shard at most")
    shard_format: str = _option(
        "npy",
        "--shard-format",
        '"npy"; "bin": raw little-endian ids, for np.memmap; "llmc": llm.c\'s .bin; '
        '"megatron": .bin and Megatron-LM\'s .idx; "datatrove": .ds, .ds.index and .ds.metadata',
    )
    val_fraction: float = _option(
        0.0,
        "--val-fraction",
        "the share of documents written to val/, chosen by a hash of each document's number "
        "and the seed, whatever the threads or shard size",
    )
    seed: int = _option(0, "--seed", "the seed of the val split")
    # (A field like the others: ruff knows no numpy type to be immutable.)
    dtype: npt.DTypeLike | None = _option(  # noqa: RUF009
        None,
        "--dtype",
        '"uint16" or "uint32" (a numpy dtype too); None: uint16 where the vocabulary fits '
        "(for megatron, below 65,500 ids, as Megatron picks it)",
    )
    checksums: bool = _option(
        True,
        "--no-checksums",
        "the sha256 of each shard and index in the manifest (~10% of an encoding core's time; "
        "without, a resumed run checks sizes only); the flag turns it off",
    )

    def __post_init__(self) -> None:
        check_layout(self.shard_tokens, self.shard_format, self.val_fraction, self.seed)
        if not isinstance(self.checksums, bool):
            raise TypeError(f"checksums must be True or False, not {self.checksums!r}")
        # Held by its name ("uint16", "uint32"), which the manifest records: a numpy
        # dtype is resolved here, once.
        if self.dtype is not None:
            object.__setattr__(self, "dtype", id_dtype_name(0, self.dtype))


# What a mark is for, as errors name it.
_ROLES = {"eos": "given as eos", "bos": "given as bos", "after_each_file": "to write after each file"}


@dataclass(frozen=True)
class Marks:
    """The tokens written around documents and after files, each the text of one token
    (a special token's, or an ordinary token's)."""

    eos: str | None = _option(
        RECORDS_DEFAULT,
        "--eos",
        "after each document: each record, and each text file as one document; by default the "
        "tokenizer's '<|endoftext|>' after each record when it has one, nothing after text files "
        "(their separators are in their text); None (--no-eos): nothing",
    )
    bos: str | None = _option(None, "--bos", "before each document: each record and each text file")
    after_each_file: str | None = _option(
        None,
        "--after-each-file",
        "after each input file, empty ones included: keeps one-document-per-file inputs apart",
    )

    def __post_init__(self) -> None:
        for name, role in _ROLES.items():
            text = getattr(self, name)
            if not (text is None or isinstance(text, str) or (name == "eos" and text is RECORDS_DEFAULT)):
                raise TypeError(f"the token {role} must be the text of a token (a str), not {text!r}")
