"""Typed stub of the native module ``bpekit._core`` (Rust, PyO3)."""

from collections.abc import Callable, Iterable, Iterator, Sequence
from os import PathLike
from typing import Any, Literal, Protocol, TypedDict, final

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

__all__ = [
    "CL100K_PATTERN",
    "GPT2_PATTERN",
    "LLAMA3_PATTERN",
    "O200K_PATTERN",
    "UNICODE_VERSION",
    "CountsSum",
    "Encoder",
    "StreamEncoder",
    "WordCounts",
    "__version__",
    "_char_classes",
    "_time_pretokenize",
    "_untracked",
    "count_pretokens",
    "feeds_sha256",
    "file_ranges",
    "hf_normalize",
    "pretokenize",
    "pretokenizer_engine",
    "scanner_kernel",
    "train_from_counts",
    "write_shard_file",
]

__version__: str
GPT2_PATTERN: str
CL100K_PATTERN: str
O200K_PATTERN: str
LLAMA3_PATTERN: str
UNICODE_VERSION: str

_Progress = Callable[[int, int], object] | None

# A batch of an Arrow string column: its UTF-8 data (any buffer), n + 1 offsets into it
# (int32 or int64, C-contiguous), the row group (None outside Parquet) and the number
# of its first row.
_ArrowBatch = tuple[Buffer, npt.NDArray[np.int32] | npt.NDArray[np.int64], int | None, int]

# The inputs of count_pretokens and Encoder.encode_files, read in order: a text file
# (.gz / .zst by suffix), JSON lines with the dotted path of the text field, documents
# pulled from an iterator of str, or batches of an Arrow string column. The name of the
# last two is how messages name them. A plain file's (start, end) byte range, when
# given, is the part read (a unit of a distributed job, planned by file_ranges).
_Range = tuple[int, int] | None
_Source = (
    tuple[Literal["text"], str]
    | tuple[Literal["text"], str, _Range]
    | tuple[Literal["jsonl"], str, str]
    | tuple[Literal["jsonl"], str, str, _Range]
    | tuple[Literal["str"], str, Iterator[str]]
    | tuple[Literal["arrow"], str, Iterator[_ArrowBatch]]
)

class _Stats(TypedDict):
    documents: int  # record documents read, + 1 per text file
    skipped: int  # bad records skipped (bad_records="skip")
    skipped_examples: list[str]  # the first 5 skip messages
    bytes: int  # bytes of text read (decompressed; for records, the documents' text)

def pretokenize(text: str, pattern: str = "gpt2") -> list[str]: ...
def pretokenizer_engine(pattern: str = "gpt2") -> str: ...
def scanner_kernel() -> str: ...
def hf_normalize(normalizers: Sequence[tuple[str, str, bool, str]], text: str) -> str: ...
def _char_classes(start: int = 0, stop: int = 0x110000) -> bytes: ...
def _untracked(list: list[int]) -> list[int]: ...
def _time_pretokenize(data: bytes, pattern: str = "gpt2", repeat: int = 3) -> tuple[int, float]: ...

class _ReadOptions(Protocol):
    """What the core reads of ``bpekit.options.ReadOptions``."""

    @property
    def special_in_text(self) -> str | None: ...
    @property
    def bad_records(self) -> str: ...
    @property
    def errors(self) -> str: ...

class _RunOptions(Protocol):
    """What the core reads of ``bpekit.options.RunOptions``."""

    @property
    def num_threads(self) -> int | None: ...
    @property
    def chunk_size(self) -> int: ...

class _Layout(Protocol):
    """What the core reads of ``bpekit.dataset.Layout``, its dtype resolved."""

    @property
    def shard_tokens(self) -> int: ...
    @property
    def shard_format(self) -> str: ...
    @property
    def val_fraction(self) -> float: ...
    @property
    def seed(self) -> int: ...
    @property
    def dtype(self) -> object: ...  # "uint16" or "uint32"; another is a ValueError
    @property
    def checksums(self) -> bool: ...

class _Framing(Protocol):
    """What the core reads of ``bpekit.dataset.job.Framing``: the ids of the marks."""

    @property
    def record_bos(self) -> int | None: ...
    @property
    def record_eos(self) -> int | None: ...
    @property
    def file_bos(self) -> int | None: ...
    @property
    def file_eos(self) -> int | None: ...
    @property
    def after_each_file(self) -> int | None: ...

class _Job(Protocol):
    """What the core reads of ``bpekit.dataset.job.Job``: a file or dataset encode's
    options; ``digest``: the inputs (feeds) whose documents a dataset run hashes."""

    @property
    def read(self) -> _ReadOptions: ...
    @property
    def run(self) -> _RunOptions: ...
    @property
    def layout(self) -> _Layout: ...
    @property
    def framing(self) -> _Framing: ...
    @property
    def digest(self) -> Sequence[int]: ...
    @property
    def tokenizer_name(self) -> str: ...

class _UnitFiles(Protocol):
    """What the core reads of ``bpekit.distributed.dataset.UnitFiles``."""

    @property
    def units(self) -> Iterable[tuple[str, int]]: ...
    @property
    def is_text(self) -> Sequence[bool]: ...
    @property
    def size(self) -> int: ...

@final
class CountsSum:
    """The sum of ``WordCounts._to_bytes``' bytes (a distributed count's reducer)."""

    def __new__(cls) -> CountsSum: ...
    def add_bytes(self, data: bytes, name: str = "<counts of a unit>") -> None: ...
    def to_bytes(self) -> bytes: ...

@final
class WordCounts:
    # What the run that counted them read (_Stats, and keys the API adds); None for
    # counts made, loaded, added or updated.
    stats: dict[str, Any] | None
    def __new__(
        cls, counts: Iterable[tuple[bytes, int]] | None = None, pattern: str = "gpt2"
    ) -> WordCounts: ...
    def __len__(self) -> int: ...
    def __contains__(self, word: bytes, /) -> bool: ...
    def __getitem__(self, word: bytes, /) -> int: ...
    def __add__(self, other: WordCounts, /) -> WordCounts: ...
    def __radd__(self, other: WordCounts, /) -> WordCounts: ...
    @property
    def total(self) -> int: ...
    @property
    def pattern(self) -> str: ...
    @property
    def special_tokens(self) -> list[str]: ...
    def most_common(self, n: int = 10) -> list[tuple[bytes, int]]: ...
    def to_dict(self) -> dict[bytes, int]: ...
    def update(self, other: WordCounts) -> None: ...
    def save(self, path: str | PathLike[str]) -> None: ...
    @staticmethod
    def load(path: str | PathLike[str]) -> WordCounts: ...
    def __reduce__(
        self,
    ) -> tuple[Callable[[bytes, dict[str, Any] | None], WordCounts], tuple[bytes, dict[str, Any] | None]]: ...
    @staticmethod
    def _from_bytes(data: bytes, stats: dict[str, Any] | None = None) -> WordCounts: ...
    def _to_bytes(self) -> bytes: ...
    def _partition_bytes(self, parts: int) -> list[bytes]: ...
    @staticmethod
    def _from_partitions(parts: int, blobs: Iterable[tuple[int, bytes]]) -> WordCounts: ...

def count_pretokens(
    inputs: list[_Source],
    special_tokens: list[str],
    read: _ReadOptions,
    run: _RunOptions,
    pattern: str = "gpt2",
    progress: _Progress = None,
) -> WordCounts:
    """The counts, their ``stats`` (a ``_Stats``) set to what was read."""

def feeds_sha256(inputs: list[_Source], digest: list[int], progress: _Progress = None) -> str | None:
    """The chain ``Encoder.encode_dataset`` comes to over the documents of the inputs
    numbered in ``digest``, read to their end (None where none is)."""

def write_shard_file(
    path: str,
    header: bytes,
    pieces: list[tuple[int, int, int]],
    units: dict[int, str],
    width: int,
    hash: bool,
) -> tuple[int, str | None]:
    """Writes a distributed dataset's shard file ``path``: ``header``, then each piece,
    ``(unit, byte offset, ids)`` of the unit files ``units`` or ``(-1, id, 1)`` for a
    mark, at ``width`` bytes an id; whole or not at all. Returns its size and, with
    ``hash``, its sha256 (hex)."""

def file_ranges(
    path: str | PathLike[str],
    format: str,  # "text" or "jsonl"; another is a ValueError
    target: int,
    special_tokens: list[str],
    pattern: str = "gpt2",
    special_in_text: str | None = None,  # as ReadOptions.special_in_text
) -> list[tuple[int, int]]: ...
def train_from_counts(
    counts: WordCounts,
    vocab_size: int,
    special_tokens: list[str],
    progress: _Progress = None,
    num_threads: int | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]: ...

@final
class StreamEncoder:
    """Incremental encoder behind ``Tokenizer.encode_iterable``."""

    def feed(self, text: str) -> list[int]: ...
    def finish(self) -> list[int]: ...
    @property
    def pending(self) -> int: ...

@final
class Encoder:
    """Native byte-level BPE encoder; ``bpekit.Tokenizer`` wraps it.

    Every method raises ``MemoryError`` (saying what could not be made) where its
    memory cannot be had, never aborting the interpreter.

    ``allowed``: None for all special tokens, else the names recognised;
    ``disallowed``: names whose text in the input raises ValueError.
    """

    @staticmethod
    def from_merges(
        vocab: Sequence[tuple[int, bytes]],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: list[str],
        pattern: str = "gpt2",
    ) -> Encoder: ...
    @staticmethod
    def from_hf(
        vocab: Sequence[tuple[int, bytes]],
        merges: Sequence[tuple[bytes, bytes]],
        ignore_merges: bool,
        steps: Sequence[tuple[str, str, bool, str, bool]],
        front: tuple[
            Sequence[tuple[str, str, bool, str]],
            Sequence[tuple[str, int, bool, bool, bool, bool, bool]],
            bool,
            Sequence[tuple[int, bytes]],
        ],
        chars: tuple[
            bool,
            int | None,
            bool,
            str | None,
            bool,
            str | None,
            Sequence[tuple[str, str, str, int, int]],
        ]
        | None = None,
    ) -> Encoder: ...
    @staticmethod
    def from_ranks(
        ranks: Sequence[tuple[bytes, int]], special_tokens: list[tuple[str, int]], pattern: str
    ) -> Encoder: ...
    @staticmethod
    def from_rank_file(
        data: bytes,
        name: str,
        format: Literal["tiktoken", "gpt2"],
        special_tokens: list[tuple[str, int]],
        pattern: str,
    ) -> Encoder: ...
    def encode(
        self, text: str, allowed: list[str] | None = None, disallowed: list[str] = ...
    ) -> list[int]: ...
    def encode_to_numpy(
        self, text: str, allowed: list[str] | None = None, disallowed: list[str] = ...
    ) -> npt.NDArray[np.uint32]: ...
    def encode_batch(
        self,
        texts: list[str],
        allowed: list[str] | None = None,
        disallowed: list[str] = ...,
        num_threads: int | None = None,
    ) -> list[list[int]]: ...
    def encode_batch_to_numpy(
        self,
        texts: list[str],
        allowed: list[str] | None = None,
        disallowed: list[str] = ...,
        num_threads: int | None = None,
        eos: int | None = None,
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]: ...
    def encode_with_offsets(
        self,
        text: str,
        allowed: list[str] | None = None,
        disallowed: list[str] = ...,
        trim: tuple[bool, int] | None = None,
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """The ids of ``text`` and each one's ``(start, end)`` in characters; ``trim``:
        ``(add_prefix_space, index of the first id)`` of ``trim_offsets``."""
    def encode_with_offsets_to_numpy(
        self,
        text: str,
        allowed: list[str] | None = None,
        disallowed: list[str] = ...,
        trim: tuple[bool, int] | None = None,
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]: ...
    def encode_batch_with_offsets(
        self,
        texts: list[str],
        allowed: list[str] | None = None,
        disallowed: list[str] = ...,
        num_threads: int | None = None,
        trim: tuple[bool, int] | None = None,
    ) -> list[tuple[list[int], list[tuple[int, int]]]]: ...
    def decode_bytes(self, ids: Sequence[int]) -> bytes: ...
    def token_bytes(self, id: int) -> bytes: ...
    def encode_single_piece(self, piece: bytes, whole: bool = True) -> list[int]:
        """The ids of one piece of bytes, not pre-tokenized: merged by rank, after
        looking the whole piece up when ``whole``."""
    def token_id(self, token: bytes) -> int | None: ...
    def vocab(self) -> dict[int, bytes]: ...
    def special_tokens(self) -> list[tuple[str, int]]: ...
    def merges(self) -> list[tuple[bytes, bytes]]: ...
    def profile(self, text: str) -> tuple[float, float, int]: ...
    @property
    def n_vocab(self) -> int: ...
    @property
    def is_ranks(self) -> bool: ...
    @property
    def pattern(self) -> str: ...
    def cut_rule(self) -> tuple[str, list[str]]: ...
    def stream(self, allowed: list[str] | None = None, disallowed: list[str] = ...) -> StreamEncoder: ...
    def encode_files(
        self, inputs: list[_Source], output: str, job: _Job, progress: _Progress = None
    ) -> tuple[int, int, _Stats]:
        """Encodes the documents of ``inputs`` into the ``.npy`` ``output`` as ``job``
        says (of its layout, the dtype only); returns the tokens written, the text
        bytes read and the stats."""
    def fingerprint(self) -> str:
        """The sha256 (hex) of the pattern, special tokens, tokens by id and (where they
        are not ranks) merges: one fingerprint, the same ids."""
    def encode_dataset(
        self,
        inputs: list[_Source],
        out_dir: str,
        job: _Job,
        resume: list[tuple[int, dict[str, Any] | None]] | None = None,
        on_shard: Callable[[str, dict[str, Any]], None] | None = None,
        progress: _Progress = None,
    ) -> dict[str, Any]:
        """Writes the shards and their indexes into ``out_dir/train`` (and ``val``);
        ``on_shard(split, shard)`` is called (from another thread) as each shard is
        finished and hashed, each shard ``{"file", "index", "tokens", "documents",
        "continues", "first_document", "inputs", "sources", "size", "sha256", "index_sha256",
        "next"}``, and ``"trainer_files"`` (``[{"file", "size", "sha256"}]``) for the
        megatron and datatrove formats (``next``: where the shard after it starts, to go on from; the
        sha256 are None without ``job.layout.checksums``). With
        ``resume`` (``(kept, next)`` a split each) the run goes on after ``kept``
        shards of an earlier one. ``job.digest``: the inputs (feeds) whose documents
        are hashed, in one chain (``next["fed_sha256"]``: the chain up to there, which a
        run going on from there must come to, else a ValueError). Returns
        ``{"shards": [shard + "split", ...], "documents", "stats", "fed_sha256"}``: this
        run's shards, the whole dataset's counts and the feeds' chain (None without
        ``job.digest``). The manifest is Python's."""
    def encode_unit(
        self,
        inputs: list[_Source],
        output: str,
        job: _Job,
        progress: _Progress = None,
        table_bytes: int = 0,
    ) -> tuple[int, int, dict[str, Any], int, list[tuple[int, int, int, int, int, int, int, bytes]]]:
        """Encodes one unit of a distributed dataset encode into the unit file
        ``output`` (its items' ids, with the records' marks of ``job``, for
        ``assemble_dataset``); returns the tokens, the text bytes read, the stats, the
        file's CRC-32 (``zlib.crc32`` of its bytes) and its skeleton, both made as it
        was written: per item ``(input, at, documents, read, skipped, offset, ids,
        cuts)``, the fields of ``shardplan.Item`` (``input`` among the unit's).
        ``table_bytes``: the text to size the piece caches for, where more than the
        unit's (the worker's likely share of the run: its cache then keeps the pieces
        of every unit it encodes)."""
    def assemble_dataset(
        self,
        assembly: _UnitFiles,
        out_dir: str,
        job: _Job,
        on_shard: Callable[[str, dict[str, Any]], None] | None = None,
        progress: _Progress = None,
    ) -> dict[str, Any]:
        """Writes ``out_dir``'s shards from the unit files of ``assembly`` (its
        ``units``, ``(path, first input)`` in input order, each taken when its file is
        ready: ``next`` may wait; ``is_text``: whether each input is a text file;
        ``size``: the unit files' bytes, for progress, 0: not known) as
        ``encode_dataset`` writes them from the inputs they were encoded from, with the
        layout and the files' marks of ``job``. Returns what ``encode_dataset``
        returns."""
