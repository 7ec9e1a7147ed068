"""Reading token datasets through memory maps: a dataset folder (``manifest.json``, and
per split shards of ids with a document index each), or a single file of ids (``.npy``,
a raw ``.bin``, an llm.c ``.bin``, a Megatron ``.bin`` with its ``.idx``, a datatrove
``.ds``).

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

import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bpekit.dataset.files import (
    Shard,
    check_ids_file,
    check_index_file,
    check_sha256,
    check_trainer_files,
    datatrove_offsets,
    field,
    map_ids,
    megatron_offsets,
    open_file,
)
from bpekit.dataset.manifest import REWRITE, read_manifest
from bpekit.dataset.spec import ID_BYTES, MANIFEST, SHARD_FORMATS, little

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["TokenDataset"]

PathLike = str | os.PathLike[str]

_INCOMPLETE = "the run writing it has not finished; re-run it to resume"
# Memory maps kept open at once. Each holds a file descriptor (Python's mmap keeps a
# duplicate), so a dataset of 20,000 shards must not map them all: a batch that
# touches more shards than this maps some again, which costs a few microseconds each.
_OPEN_SHARDS = 64


class TokenDataset:
    """The ids of one split of a dataset folder, or of one file, through memory maps.

    ``path``: a folder with ``manifest.json`` (``split`` names the split, ``"train"`` by
    default; the split's own folder, ``out/val``, works too), or a file: a ``.npy`` of
    integer ids, an llm.c ``.bin`` (recognised by its header), or a raw ``.bin`` of
    ``dtype`` ids (``uint16`` unless given), a Megatron ``.bin`` (recognised by the
    ``.idx`` beside it, which gives the dtype and documents) or a datatrove ``.ds``
    (documents from ``.ds.index``, token size from ``.ds.metadata``). ``format``
    (``"npy"``, ``"bin"``, ``"llmc"``, ``"megatron"``, ``"datatrove"``) overrides what a
    file's name and header say. A single file is one document, unless a document index
    lies beside it (``x.idx.npy`` for ``x.npy``, or the trainer's).

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
        from bpekit._stores import is_url, local_path
        from bpekit.dataset.store import fetch_dataset

        text = fspath(path, "the dataset")
        if is_url(text):
            # A store's dataset is fetched (the split's files) into a local cache and
            # mapped from there: a memory map needs a local file.
            local = local_path(text)
            text = str(local) if local is not None else str(fetch_dataset(text, split))
        self.path = Path(text)
        if format is not None and format not in SHARD_FORMATS:
            raise ValueError(f"format must be one of {', '.join(map(repr, SHARD_FORMATS))}, not {format!r}")
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: no such file or folder")
        self.manifest: dict[str, Any] | None
        self.folder: Path | None
        self.split: str | None
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
            self.format, self.dtype, shard = open_file(self.path, format, dtype)
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
        assert self.manifest is not None and self.folder is not None and self.split is not None
        where = self.folder / MANIFEST
        m = self.manifest
        if m.get("complete") is not True:
            raise ValueError(f"{self.folder}: the dataset is incomplete ({MANIFEST} says so): {_INCOMPLETE}")
        fmt = field(m, "format", str, where)
        if fmt not in SHARD_FORMATS:
            raise ValueError(f"{where}: unknown format {fmt!r} (bpekit reads {', '.join(SHARD_FORMATS)})")
        dtype = field(m, "dtype", str, where)
        if dtype not in ID_BYTES:
            raise ValueError(f"{where}: unknown dtype {dtype!r} (bpekit writes uint16 or uint32)")
        splits = field(m, "splits", dict, where)
        if self.split not in splits:
            there = ", ".join(map(repr, splits)) or "none"
            hint = "; val/ is written only when val_fraction > 0" if self.split == "val" else ""
            raise ValueError(f"{self.folder}: no split {self.split!r} (the splits there: {there}){hint}")
        entry = field(splits, self.split, dict, where)
        place = f"{where}: split {self.split!r}"
        listed = field(entry, "shards", list, place)
        shards = []
        for k, info in enumerate(listed):
            if not isinstance(info, dict):
                raise ValueError(f"{place}: shard {k} is not an object; the manifest is damaged")
            shards.append(self._open_shard(info, fmt, dtype, f"{place}, shard {k}", first=k == 0))
        for key, total in (
            ("tokens", sum(s.tokens for s in shards)),
            ("documents", sum(s.documents for s in shards)),
        ):
            said = field(entry, key, int, place)
            if said != total:
                raise ValueError(
                    f"{place}: {key} is {said:,} but its shards hold {total:,}; the manifest is damaged"
                )
        return fmt, little(dtype), shards

    def _open_shard(self, info: dict[str, Any], fmt: str, dtype: str, place: str, first: bool) -> Shard:
        """A shard of the manifest, its ids file and index checked for presence and size."""
        assert self.folder is not None
        path = self._member(field(info, "file", str, place), place)
        index = self._member(field(info, "index", str, place), place)
        tokens = field(info, "tokens", int, place)
        documents = field(info, "documents", int, place)
        continues = info.get("continues", False)
        if not isinstance(continues, bool):
            raise ValueError(f"{place}: 'continues' must be true or false, not {continues!r}")
        if continues and first:
            raise ValueError(f"{place}: the first shard of a split cannot continue a document")
        # None where the dataset was written with checksums=False.
        sha256 = field(info, "sha256", str | None, place)
        index_sha256 = field(info, "index_sha256", str | None, place)
        side = []
        for f in field(info, "trainer_files", list, place) if "trainer_files" in info else []:
            if not isinstance(f, dict):
                raise ValueError(f"{place}: a trainer file is not an object; the manifest is damaged")
            file = self._member(field(f, "file", str, place), place)
            size = field(f, "size", int, place)
            if not file.exists():
                raise FileNotFoundError(
                    f"{file}: missing (a trainer's file listed in the manifest); {REWRITE}"
                )
            if file.stat().st_size != size:
                raise ValueError(
                    f"{file}: {file.stat().st_size:,} bytes, not the {size:,} the manifest says; {REWRITE}"
                )
            side.append((file, size, field(f, "sha256", str | None, place)))
        shard = Shard(
            path,
            index,
            tokens,
            documents,
            continues,
            little(dtype),
            0,
            sha256,
            index_sha256,
            "npy",
            tuple(side),
        )
        shard = replace(shard, offset=check_ids_file(shard, fmt))  # the header's length, read
        check_index_file(index, shard.parts + 1)
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
        return self._cached(self._arrays, k, lambda: map_ids(shard))

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
        to the shard's length, never decreasing), and a trainer's files (Megatron's
        ``.idx``, datatrove's ``.ds.index``) holding the same documents. Reads every byte;
        raises ``ValueError`` naming the first bad file. A single file has no sha256 to
        compare: its size, header and index are checked."""
        for shard in self.shards:
            check_ids_file(shard, self.format)
            check_sha256(shard.path, shard.sha256)
            if shard.index is not None:
                if shard.index_format == "npy":
                    check_index_file(shard.index, shard.parts + 1)
                check_sha256(shard.index, shard.index_sha256)
                check_trainer_files(shard, self.format, self._load_offsets(shard))

    def _load_offsets(self, shard: Shard) -> np.ndarray:
        import numpy as np

        if shard.index is None:
            return np.array([0, shard.tokens] if shard.tokens else [0], dtype=np.uint64)
        if shard.index_format == "megatron":
            return megatron_offsets(shard.index)[1]
        if shard.index_format == "datatrove":
            return datatrove_offsets(shard.index, shard.tokens)
        offsets: np.ndarray = np.load(shard.index, mmap_mode="r", allow_pickle=False)
        bad = None
        if offsets.shape != (shard.parts + 1,) or offsets.dtype.kind not in "ui":
            bad = f"{offsets.shape[0]} entries of {offsets.dtype}, not {shard.parts + 1} uint64 offsets"
        elif int(offsets[0]) != 0 or int(offsets[-1]) != shard.tokens:
            bad = f"runs from {int(offsets[0])} to {int(offsets[-1])}, not from 0 to {shard.tokens}"
        elif len(offsets) > 1 and bool((np.diff(offsets.astype(np.int64)) < 0).any()):
            bad = "has offsets that decrease"
        if bad is not None:
            raise ValueError(
                f"{shard.index}: not the document index of {shard.path.name}: it {bad}; {REWRITE}"
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
