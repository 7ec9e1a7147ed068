"""Reading token datasets through memory maps: a dataset folder (``manifest.json``, and
per split shards of ids with a document index each), or a single file of ids (``.npy``,
a raw ``.bin``, an llm.c ``.bin``).

Opening reads the manifest and each file's size and header, never a shard's ids: a 10 GB
dataset opens in no memory, and pages are read only where documents or batches are taken.

>>> import tempfile, pathlib, numpy as np
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> np.save(d / "ids.npy", np.arange(100, 120, dtype=np.uint16))
>>> ds = TokenDataset(d / "ids.npy")
>>> len(ds), ds.n_documents, ds.document(0)[:3].tolist()
(20, 1, [100, 101, 102])
>>> x, y = ds.get_batch(2, 4, rng=np.random.default_rng(0))
>>> (np.asarray(y) - np.asarray(x)).tolist()  # targets: the inputs shifted by one
[[1, 1, 1, 1], [1, 1, 1, 1]]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["FORMAT_VERSION", "LLMC_HEADERS", "Shard", "TokenDataset", "read_manifest"]

PathLike = str | os.PathLike[str]

# The dataset format this module reads is the one dataset_writer.py writes (its
# manifest, shard and index names, and header layouts).
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
FORMATS = ("npy", "bin", "llmc")
_ITEMSIZE = {"uint16": 2, "uint32": 4}
# llm.c's token files: 256 little-endian int32 (1,024 bytes), header[0] the magic,
# header[1] the version, header[2] the number of tokens; then the ids.
LLMC_HEADERS = {"uint16": (20240520, 1), "uint32": (20240801, 7)}
LLMC_HEADER_BYTES = 1024
_INCOMPLETE = "the run writing it has not finished; re-run it to resume"
# What writes a damaged dataset again. Not a plain rerun: on a finished dataset that
# checks only that every file has its size, and says there is nothing to do where a
# file's bytes changed and its size did not.
_REWRITE = "encode the dataset again with resume=False (--overwrite)"
# Memory maps kept open at once. Each holds a file descriptor (Python's mmap keeps a
# duplicate), so a dataset of 20,000 shards must not map them all: a batch that
# touches more shards than this maps some again, which costs a few microseconds each.
_OPEN_SHARDS = 64


@dataclass(frozen=True)
class Shard:
    """One file of ids and what the manifest says of it.

    ``offset`` is the byte where the ids start (the ``.npy`` header's length, llm.c's
    1,024, 0 for a raw ``.bin``); ``documents`` counts the documents that start in the
    shard, and ``continues`` says that its first part ends the previous shard's last
    document. ``index`` is the document index (``NNNNN.idx.npy``), ``None`` for a single
    file that has none beside it (then the file is one document).
    """

    path: Path
    index: Path | None
    tokens: int
    documents: int
    continues: bool
    dtype: np.dtype[Any]
    offset: int
    sha256: str | None = None
    index_sha256: str | None = None

    @property
    def parts(self) -> int:
        """The entries of the document index less one: documents and a continued part."""
        return self.documents + self.continues


def read_manifest(folder: PathLike) -> dict[str, Any]:
    """The manifest of a dataset folder, its format version checked (not whether the run
    writing it finished: ``manifest["complete"]``).

    Raises ``FileNotFoundError`` when the folder has no ``manifest.json`` and
    ``ValueError`` when it is not a manifest this version of bpekit reads.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "manifest.json").write_text('{"format_version": 1, "complete": false}')
    >>> read_manifest(d)["complete"]
    False
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
        raise ValueError(f"{path}: not valid JSON ({e}); the manifest is damaged: {_REWRITE}") from None
    except RecursionError:
        raise ValueError(
            f"{path}: JSON nested too deeply to read; the manifest is damaged: {_REWRITE}"
        ) from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{path}: not a bpekit dataset manifest (a JSON object was expected)")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        from bpekit import __version__

        raise ValueError(
            f"{path}: unknown format_version {version!r}; this bpekit ({__version__}) reads "
            f"format_version {FORMAT_VERSION} (a newer bpekit may read it)"
        )
    return manifest


class TokenDataset:
    """The ids of one split of a dataset folder, or of one file, through memory maps.

    ``path``: a folder with ``manifest.json`` (``split`` names the split, ``"train"`` by
    default; the split's own folder, ``out/val``, works too), or a file: a ``.npy`` of
    integer ids, an llm.c ``.bin`` (recognised by its header), or a raw ``.bin`` of
    ``dtype`` ids (``uint16`` unless given). ``format`` (``"npy"``, ``"bin"``,
    ``"llmc"``) overrides what a file's name and header say. A single file is one
    document, unless a document index lies beside it (``x.idx.npy`` for ``x.npy``).

    ``len(ds)`` is the number of tokens; documents are taken by ``ds.document(i)`` or by
    iterating; ``ds.get_batch`` samples training windows. Opening checks that every file
    the manifest lists is there with the size it says; ``verify()`` checks their sha256.

    >>> import tempfile, pathlib, numpy as np
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> np.arange(6, dtype=np.uint16).tofile(d / "ids.bin")
    >>> np.save(d / "ids.idx.npy", np.array([0, 2, 6], dtype=np.uint64))
    >>> ds = TokenDataset(d / "ids.bin")
    >>> ds.n_documents, [doc.tolist() for doc in ds]
    (2, [[0, 1], [2, 3, 4, 5]])
    """

    def __init__(
        self,
        path: PathLike,
        split: str | None = None,
        *,
        dtype: npt.DTypeLike | None = None,
        format: str | None = None,
    ) -> None:
        import numpy as np

        from bpekit._paths import fspath

        self.path = Path(fspath(path, "the dataset"))
        if format is not None and format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(map(repr, FORMATS))}, not {format!r}")
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: no such file or folder")
        self.manifest: dict[str, Any] | None
        if self.path.is_dir():
            if format is not None or dtype is not None:
                raise ValueError(
                    f"{self.path}: a dataset folder's manifest gives its format and dtype; "
                    "format= and dtype= are for a single .npy or .bin file"
                )
            self.folder, self.split = self._find_folder(split)
            self.manifest = read_manifest(self.folder)
            self.format, self.dtype, self.shards = self._open_split()
        else:
            if split is not None:
                raise ValueError(
                    f"{self.path}: split={split!r} names a split of a dataset folder; a single file has none"
                )
            self.folder, self.split, self.manifest = None, None, None
            self.format, self.dtype, shard = _open_file(self.path, format, dtype)
            self.shards = [shard]
        self._tokens = np.array([s.tokens for s in self.shards], dtype=np.int64)
        # The number of documents that start in shards 0..k, for finding a document's shard.
        self._doc_ends = np.cumsum([s.documents for s in self.shards], dtype=np.int64)
        self._init_caches()

    # -- opening ---------------------------------------------------------------------

    def _find_folder(self, split: str | None) -> tuple[Path, str]:
        """The dataset folder and the split: ``path`` itself, or ``path``'s parent when
        ``path`` is a split's folder (``out/val``)."""
        # Path(".").parent is ".": the real parent of "." and ".." needs the full path.
        parent = self.path.parent if self.path.name not in ("", "..") else self.path.resolve().parent
        if not (self.path / MANIFEST).exists() and (parent / MANIFEST).exists():
            name = self.path.resolve().name
            if split is not None and split != name:
                raise ValueError(
                    f"{self.path} is the folder of split {name!r}, but split={split!r} was given"
                )
            return parent, name
        return self.path, "train" if split is None else split

    def _open_split(self) -> tuple[str, np.dtype[Any], list[Shard]]:
        """The format, dtype and shards of the split, each shard's files checked for
        presence and size."""
        assert self.manifest is not None and self.folder is not None
        where = self.folder / MANIFEST
        m = self.manifest
        if m.get("complete") is not True:
            raise ValueError(f"{self.folder}: the dataset is incomplete ({MANIFEST} says so): {_INCOMPLETE}")
        fmt = _field(m, "format", str, where)
        if fmt not in FORMATS:
            raise ValueError(f"{where}: unknown format {fmt!r} (bpekit reads {', '.join(FORMATS)})")
        dtype = _field(m, "dtype", str, where)
        if dtype not in _ITEMSIZE:
            raise ValueError(f"{where}: unknown dtype {dtype!r} (bpekit writes uint16 or uint32)")
        splits = _field(m, "splits", dict, where)
        if self.split not in splits:
            there = ", ".join(map(repr, splits)) or "none"
            hint = "; val/ is written only when val_fraction > 0" if self.split == "val" else ""
            raise ValueError(f"{self.folder}: no split {self.split!r} (the splits there: {there}){hint}")
        entry = _field(splits, self.split, dict, where)
        place = f"{where}: split {self.split!r}"
        listed = _field(entry, "shards", list, place)
        shards = []
        for k, info in enumerate(listed):
            if not isinstance(info, dict):
                raise ValueError(f"{place}: shard {k} is not an object; the manifest is damaged")
            shards.append(self._open_shard(info, fmt, dtype, f"{place}, shard {k}", first=k == 0))
        for key, total in (
            ("tokens", sum(s.tokens for s in shards)),
            ("documents", sum(s.documents for s in shards)),
        ):
            said = _field(entry, key, int, place)
            if said != total:
                raise ValueError(
                    f"{place}: {key} is {said:,} but its shards hold {total:,}; the manifest is damaged"
                )
        return fmt, _little(dtype), shards

    def _open_shard(self, info: dict[str, Any], fmt: str, dtype: str, place: str, first: bool) -> Shard:
        """A shard of the manifest, its ids file and index checked for presence and size."""
        assert self.folder is not None
        path = self._member(_field(info, "file", str, place), place)
        index = self._member(_field(info, "index", str, place), place)
        tokens = _field(info, "tokens", int, place)
        documents = _field(info, "documents", int, place)
        continues = info.get("continues", False)
        if not isinstance(continues, bool):
            raise ValueError(f"{place}: 'continues' must be true or false, not {continues!r}")
        if continues and first:
            raise ValueError(f"{place}: the first shard of a split cannot continue a document")
        # None where the dataset was written with checksums=False.
        sha256 = _field(info, "sha256", str | None, place)
        index_sha256 = _field(info, "index_sha256", str | None, place)
        shard = Shard(path, index, tokens, documents, continues, _little(dtype), 0, sha256, index_sha256)
        shard = replace(shard, offset=_check_ids_file(shard, fmt))  # the header's length, read
        _check_index_file(index, shard.parts + 1)
        return shard

    def _member(self, name: str, place: str) -> Path:
        """``name``, a path the manifest gives relative to the dataset folder, checked to
        stay inside it."""
        assert self.folder is not None
        rel = Path(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"{place}: {name!r} is not a path inside the dataset folder")
        return self.folder / rel

    # -- what it holds ---------------------------------------------------------------

    def __len__(self) -> int:
        """The number of tokens."""
        return int(self._tokens.sum())

    @property
    def n_documents(self) -> int:
        """The number of documents (a document continued across shards counts once)."""
        return int(self._doc_ends[-1]) if len(self.shards) else 0

    def __repr__(self) -> str:
        where = (
            f"{str(self.folder)!r}, split={self.split!r}" if self.folder is not None else repr(str(self.path))
        )
        shards = f", {len(self.shards):,} shards" if self.folder is not None else ""
        return (
            f"TokenDataset({where}: {len(self):,} tokens, {self.n_documents:,} documents{shards}, "
            f"{self.format} {self.dtype.name})"
        )

    def shard(self, k: int) -> np.ndarray:
        """The ids of shard ``k``, memory-mapped read-only."""
        shard = self.shards[k]
        return self._cached(self._arrays, k, lambda: _map_ids(shard))

    def offsets(self, k: int) -> np.ndarray:
        """The document index of shard ``k``: where each document (or continued part)
        starts, then the shard's length (uint64, memory-mapped)."""
        shard = self.shards[k]
        return self._cached(self._offsets, k, lambda: self._load_offsets(shard))

    def document(self, i: int) -> np.ndarray:
        """Document ``i`` (negative counts from the end): a view of its shard, or, for a
        document continued across shards, its parts joined into a new array.

        >>> import tempfile, pathlib, numpy as np
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> np.save(d / "x.npy", np.array([5, 6, 7], dtype=np.uint16))
        >>> np.save(d / "x.idx.npy", np.array([0, 1, 3], dtype=np.uint64))
        >>> ds = TokenDataset(d / "x.npy")
        >>> ds.document(-1).tolist(), np.shares_memory(ds.document(-1), ds.shard(0))
        ([6, 7], True)
        """
        import numpy as np

        n = self.n_documents
        if isinstance(i, bool) or not isinstance(i, int | np.integer):
            raise TypeError(f"document index must be an integer, not {type(i).__name__}")
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"document {i} is out of range: {self._name()} has {n:,} documents")
        k = int(np.searchsorted(self._doc_ends, j, side="right"))
        shard = self.shards[k]
        part = j - (int(self._doc_ends[k]) - shard.documents) + shard.continues
        offsets = self.offsets(k)
        ids = self.shard(k)[int(offsets[part]) : int(offsets[part + 1])]
        if part + 1 < shard.parts or not self._continued(k):
            return ids
        parts = [ids]
        while self._continued(k):
            k += 1
            offsets = self.offsets(k)
            parts.append(self.shard(k)[: int(offsets[1])])
            if self.shards[k].parts > 1:
                break
        return np.concatenate(parts)

    def __iter__(self) -> Iterator[np.ndarray]:
        """The documents in order: views, and a new array for a document continued
        across shards."""
        import numpy as np

        pending: list[np.ndarray] = []
        for k, shard in enumerate(self.shards):
            offsets = self.offsets(k)
            # A plain ndarray over the map: slicing a memmap costs twice as much.
            ids = self.shard(k).view(np.ndarray)
            for block in range(0, shard.parts, 1 << 16):
                starts = offsets[block : block + (1 << 16) + 1].tolist()
                for p, (start, end) in enumerate(itertools.pairwise(starts), block):
                    part = ids[start:end]
                    if p == 0 and shard.continues:
                        pending.append(part)
                        continue
                    if pending:
                        yield pending[0] if len(pending) == 1 else np.concatenate(pending)
                    pending = [part]
        if pending:
            yield pending[0] if len(pending) == 1 else np.concatenate(pending)

    def _continued(self, k: int) -> bool:
        return k + 1 < len(self.shards) and self.shards[k + 1].continues

    def _name(self) -> str:
        return f"{self.folder} split {self.split!r}" if self.folder is not None else str(self.path)

    # -- batches ---------------------------------------------------------------------

    def get_batch(
        self,
        batch_size: int,
        context_length: int,
        device: str = "cpu",
        rng: np.random.Generator | int | None = None,
    ) -> tuple[Any, Any]:
        """Samples ``batch_size`` windows uniformly over all windows that lie inside one
        shard: inputs ``ids[s : s + context_length]`` of a shard and targets shifted by
        one, ``s`` in ``[0, len(shard) - context_length)`` (CS336's data loader, as
        ``bpekit.get_batch``, on each shard; on one array the same draws as it, for the
        same ``rng``). A window never crosses a shard boundary; it may cross documents.
        Returns int64 torch tensors on ``device`` when torch is installed, else int64
        numpy arrays (then ``device`` must be ``"cpu"``). ``rng``: a numpy ``Generator``
        or a seed.

        >>> import tempfile, pathlib, numpy as np
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> np.arange(10, dtype=np.uint16).tofile(d / "x.bin")
        >>> x, y = TokenDataset(d / "x.bin").get_batch(3, 9, rng=0)  # one window: s = 0
        >>> np.asarray(x)[0].tolist(), np.asarray(y)[0].tolist()
        ([0, 1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8, 9])
        """
        import numpy as np

        for name, value in (("batch_size", batch_size), ("context_length", context_length)):
            if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        windows = np.maximum(self._tokens - context_length, 0)
        total = int(windows.sum())
        if total == 0:
            if len(self) == 0:
                raise ValueError(f"{self._name()}: no tokens to sample from")
            longest = int(self._tokens.max())
            within = "every shard" if self.folder is not None else "the file"
            raise ValueError(
                f"context_length={context_length} is longer than {within} allows: a window needs "
                f"context_length + 1 tokens inside one shard, and the longest has {longest:,}"
            )
        rng = np.random.default_rng(rng)
        drawn = rng.integers(0, total, size=batch_size)
        ends = np.cumsum(windows)
        where = np.searchsorted(ends, drawn, side="right")
        starts = drawn - (ends - windows)[where]
        span = np.arange(context_length + 1)
        out = np.empty((batch_size, context_length + 1), dtype=np.int64)
        for k in np.unique(where):
            rows = np.flatnonzero(where == k)
            out[rows] = self.shard(int(k))[starts[rows, None] + span]
        x = np.ascontiguousarray(out[:, :-1])
        y = np.ascontiguousarray(out[:, 1:])
        try:
            import torch
        except ImportError:
            if str(device) != "cpu":
                raise ValueError(f"device {device!r} needs torch, which is not installed") from None
            return x, y
        return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)

    # -- checking --------------------------------------------------------------------

    def verify(self) -> None:
        """Checks every shard and document index of the split again: present, of the size
        the manifest gives, with the sha256 it gives, and each index well formed (from 0
        to the shard's length, never decreasing). Reads every byte; raises ``ValueError``
        naming the first bad file. A single file has no sha256 to compare: its size,
        header and index are checked."""
        for shard in self.shards:
            _check_ids_file(shard, self.format)
            _check_sha256(shard.path, shard.sha256)
            if shard.index is not None:
                _check_index_file(shard.index, shard.parts + 1)
                _check_sha256(shard.index, shard.index_sha256)
                self._load_offsets(shard)

    def _load_offsets(self, shard: Shard) -> np.ndarray:
        import numpy as np

        if shard.index is None:
            return np.array([0, shard.tokens] if shard.tokens else [0], dtype=np.uint64)
        offsets = np.load(shard.index, mmap_mode="r", allow_pickle=False)
        bad = None
        if offsets.shape != (shard.parts + 1,) or offsets.dtype.kind not in "ui":
            bad = f"{offsets.shape[0]} entries of {offsets.dtype}, not {shard.parts + 1} uint64 offsets"
        elif int(offsets[0]) != 0 or int(offsets[-1]) != shard.tokens:
            bad = f"runs from {int(offsets[0])} to {int(offsets[-1])}, not from 0 to {shard.tokens}"
        elif len(offsets) > 1 and bool((np.diff(offsets.astype(np.int64)) < 0).any()):
            bad = "has offsets that decrease"
        if bad is not None:
            raise ValueError(
                f"{shard.index}: not the document index of {shard.path.name}: it {bad}; {_REWRITE}"
            )
        return offsets

    # -- memory maps, kept for a while -----------------------------------------------

    def _init_caches(self) -> None:
        self._arrays: OrderedDict[int, np.ndarray] = OrderedDict()
        self._offsets: OrderedDict[int, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _cached(
        self, cache: OrderedDict[int, np.ndarray], k: int, load: Callable[[], np.ndarray]
    ) -> np.ndarray:
        with self._lock:
            if k in cache:
                cache.move_to_end(k)
                return cache[k]
        value = load()
        with self._lock:
            cache[k] = value
            while len(cache) > _OPEN_SHARDS:
                cache.popitem(last=False)
        return value

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (to a DataLoader worker, spawned) without its maps: a memmap would
        # pickle its whole data. The other process maps the files again.
        state = self.__dict__.copy()
        for key in ("_arrays", "_offsets", "_lock"):
            state.pop(key)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_caches()


# -- files -------------------------------------------------------------------------


def _field(d: dict[str, Any], key: str, kind: Any, place: Any) -> Any:
    """``d[key]``, checked to be a ``kind`` (a count: an int, 0 or more)."""
    if key not in d:
        raise ValueError(f"{place}: no {key!r}; the manifest is damaged or not from bpekit")
    value = d[key]
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    else:
        ok = isinstance(value, kind)
    if not ok:
        name = getattr(kind, "__name__", kind)
        want = "a count (a whole number, 0 or more)" if kind is int else f"a {name}"
        raise ValueError(f"{place}: {key!r} is {value!r}, not {want}; the manifest is damaged")
    return value


def _size(path: Path, what: str) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing ({what} listed in the manifest); {_REWRITE}") from None


def _npy_header(path: Path) -> tuple[np.dtype[Any], tuple[int, ...], int]:
    """The dtype, shape and data offset of a ``.npy`` file, from its header alone."""
    from tokenize import TokenError

    from numpy.lib import format as npy

    with open(path, "rb") as f:
        try:
            version = npy.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = npy.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, _, dtype = npy.read_array_header_2_0(f)
            else:
                raise ValueError(f".npy version {version[0]}.{version[1]} is not read here")
        except (ValueError, EOFError, SyntaxError, TokenError) as e:  # numpy parses the header as Python
            raise ValueError(f"{path}: not a readable .npy file ({e})") from None
        return dtype, shape, f.tell()


def _check_ids_file(shard: Shard, fmt: str) -> int:
    """Checks a shard's file against what the manifest says of it (its size, and the
    header of a ``.npy`` or llm.c file); returns the byte where its ids start."""
    path, tokens, dtype = shard.path, shard.tokens, shard.dtype
    size = _size(path, "a shard")
    if fmt == "npy":
        got, shape, offset = _npy_header(path)
        if got != dtype or shape != (tokens,):
            raise ValueError(
                f"{path}: holds {got} of shape {shape}, but the manifest says {tokens:,} {dtype.name} ids; "
                f"the shard is corrupt or from another run: {_REWRITE}"
            )
    elif fmt == "llmc":
        offset = LLMC_HEADER_BYTES
        header = _llmc_header(path)
        magic, version = LLMC_HEADERS[dtype.name]
        if header is None or header != (magic, version, tokens):
            raise ValueError(
                f"{path}: its llm.c header {header} is not (magic {magic}, version {version}, {tokens:,} "
                f"tokens) as {dtype.name} ids need; the shard is corrupt or from another run: {_REWRITE}"
            )
    else:
        offset = 0
    want = offset + tokens * dtype.itemsize
    if size != want:
        raise ValueError(
            f"{path}: {size:,} bytes, not the {want:,} that its {tokens:,} {dtype.name} ids (as the manifest "
            f"says) take; the shard is truncated or was changed: {_REWRITE}"
        )
    return offset


def _little(name: str) -> np.dtype[Any]:
    """The little-endian numpy dtype of ``"uint16"`` or ``"uint32"``."""
    import numpy as np

    return np.dtype("<u" + str(_ITEMSIZE[name]))


def _check_index_file(path: Path, entries: int) -> None:
    """Checks a document index's header and size: ``entries`` uint64 offsets."""
    import numpy as np

    size = _size(path, "a document index")
    dtype, shape, offset = _npy_header(path)
    if dtype != np.dtype("<u8") or shape != (entries,) or size != offset + 8 * entries:
        raise ValueError(
            f"{path}: {size:,} bytes holding {dtype} of shape {shape}, but the manifest calls for "
            f"{entries:,} uint64 offsets; the index is corrupt: {_REWRITE}"
        )


def _llmc_header(path: Path) -> tuple[int, int, int] | None:
    """Magic, version and token count of an llm.c file, ``None`` when it is too short."""
    import numpy as np

    with open(path, "rb") as f:
        head = f.read(LLMC_HEADER_BYTES)
    if len(head) < LLMC_HEADER_BYTES:
        return None
    magic, version, tokens = np.frombuffer(head[:12], dtype="<i4").tolist()
    return magic, version, tokens


def _check_sha256(path: Path, want: str | None) -> None:
    if want is None:
        return
    with open(path, "rb") as f:
        got = hashlib.file_digest(f, "sha256").hexdigest()
    if got != want.lower():
        raise ValueError(
            f"{path}: sha256 {got} differs from the manifest's {want}; the file is corrupt: {_REWRITE}"
        )


def _open_file(path: Path, fmt: str | None, dtype: npt.DTypeLike | None) -> tuple[str, np.dtype[Any], Shard]:
    """A single file of ids as one shard: its format, dtype and the shard (with the
    document index beside it, ``x.idx.npy``, when there is one)."""
    size = path.stat().st_size
    if fmt is None:
        fmt = "npy" if path.suffix == ".npy" else "bin"
        header = _llmc_header(path) if fmt == "bin" else None
        if header is not None and header[0] in {magic for magic, _ in LLMC_HEADERS.values()}:
            fmt = "llmc"
    read = {"npy": _read_npy, "llmc": _read_llmc, "bin": _read_bin}[fmt]
    resolved, tokens, offset = read(path, size, dtype)
    index = path.with_name(path.name.removesuffix(path.suffix) + ".idx.npy")
    if not index.exists():
        return fmt, resolved, Shard(path, None, tokens, 1 if tokens else 0, False, resolved, offset)
    entries = _npy_header(index)[1]
    if len(entries) != 1 or entries[0] < 1:
        raise ValueError(f"{index}: not a document index (a 1-D array of uint64 offsets)")
    _check_index_file(index, entries[0])
    return fmt, resolved, Shard(path, index, tokens, entries[0] - 1, False, resolved, offset)


def _read_npy(path: Path, size: int, dtype: npt.DTypeLike | None) -> tuple[np.dtype[Any], int, int]:
    """The dtype, number of ids and data offset of a ``.npy`` file of ids."""
    import numpy as np

    got, shape, offset = _npy_header(path)
    if len(shape) != 1 or got.kind not in "ui":
        raise ValueError(f"{path}: expected a 1-D integer array of token ids, got {got} of shape {shape}")
    if dtype is not None and np.dtype(dtype) != got:
        raise ValueError(f"{path}: holds {got} ids, not {np.dtype(dtype)}; dtype= is for raw .bin files")
    want = offset + shape[0] * got.itemsize
    if size != want:
        raise ValueError(f"{path}: {size:,} bytes, not the {want:,} its header says; the file is truncated")
    return got, shape[0], offset


def _read_llmc(path: Path, size: int, dtype: npt.DTypeLike | None) -> tuple[np.dtype[Any], int, int]:
    """The dtype, number of ids and data offset of an llm.c ``.bin``, from its header."""
    import numpy as np

    from bpekit.datasets import _id_dtype_name

    header = _llmc_header(path)
    name = {v: k for k, v in LLMC_HEADERS.items()}.get(header[:2]) if header is not None else None
    if header is None or name is None:
        wanted = " or ".join(f"magic {m} with version {v}" for m, v in LLMC_HEADERS.values())
        raise ValueError(f"{path}: not an llm.c token file: its header is {header}, not {wanted}")
    if dtype is not None and _id_dtype_name(0, dtype) != name:
        raise ValueError(f"{path}: an llm.c file of {name} ids (its header says), not {np.dtype(dtype)}")
    tokens, resolved = header[2], _little(name)
    want = LLMC_HEADER_BYTES + tokens * resolved.itemsize
    if tokens < 0 or size != want:
        raise ValueError(
            f"{path}: an llm.c header for {tokens:,} {name} ids, but {size:,} bytes, not {want:,}; the "
            "file is truncated, or not llm.c's (format='bin' reads it raw)"
        )
    return resolved, tokens, LLMC_HEADER_BYTES


def _read_bin(path: Path, size: int, dtype: npt.DTypeLike | None) -> tuple[np.dtype[Any], int, int]:
    """The dtype and number of ids of a raw ``.bin`` of ``dtype`` (default uint16) ids."""
    from bpekit.datasets import _id_dtype_name

    name = _id_dtype_name(0, "uint16" if dtype is None else dtype)
    resolved = _little(name)
    if size % resolved.itemsize:
        raise ValueError(
            f"{path}: {size:,} bytes is not a whole number of {name} ids; give the dtype it was "
            "written with (dtype='uint32'), or the file is truncated"
        )
    return resolved, size // resolved.itemsize, 0


def _map_ids(shard: Shard) -> np.ndarray:
    """The ids of ``shard``, memory-mapped read-only (an empty array for no ids: a file
    cannot be mapped for none)."""
    import numpy as np

    if shard.tokens == 0:
        return np.empty(0, dtype=shard.dtype)
    return np.memmap(shard.path, dtype=shard.dtype, mode="r", offset=shard.offset, shape=(shard.tokens,))
