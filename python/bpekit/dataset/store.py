"""A dataset written to an object store (``s3://bucket/prefix/ds``), which has no
rename: each object is put under its final name only when whole, and the manifest is
put last, as the commit record.

The protocol, the same rules the local writer keeps for a folder (``folder``):

1. The prefix is listed. Empty: a new dataset. Holding ``manifest.json`` of bpekit:
   a dataset of ours, whose own objects are the manifest and, in ``train/`` and
   ``val/``, the shards and indexes named as ``folder`` names them. Anything else
   there (objects without our manifest, or beside it) is a stranger: the run is
   refused, and never deletes or overwrites it.
2. A finished dataset of the same inputs and options, every object present at its
   recorded size, is returned as it is, reading nothing.
3. Otherwise a manifest marked unfinished is put first, claiming the prefix; the
   dataset is written into a local staging folder (``staging_folder``), and each
   shard, once finished and hashed, is put as one object (a multipart upload where
   large, which the store makes visible only when completed: a killed upload leaves
   no object) and deleted locally, so staging holds only the shards in flight.
4. Once every shard is up, our objects of an earlier run that the dataset does not
   name are deleted, and the finished manifest is put last.

Each object is put with its sha256 as metadata (``bpekit-sha256``). A rerun reuses
an object of ours whose size and sha256 match what it would put, and puts the rest:
so a run killed anywhere, rerun, ends with the same bytes as one uninterrupted run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bpekit import _stores
from bpekit._paths import sha256_of
from bpekit.dataset.folder import _OURS, _same_feeds, shard_files
from bpekit.dataset.manifest import REWRITE, differences, dump
from bpekit.dataset.spec import FORMAT_VERSION, MANIFEST, SPLITS

__all__ = ["StoreTarget", "remove_staging", "staging_folder", "store_or_folder"]

SHA_KEY = "bpekit-sha256"


def staging_folder(url: str) -> Path:
    """The local folder a dataset bound for ``url`` is staged in: one per URL (so a
    rerun on this machine finds what a killed run left), under ``$BPEKIT_STAGING`` or
    the temporary folder."""
    base = os.environ.get("BPEKIT_STAGING") or os.path.join(tempfile.gettempdir(), "bpekit-staging")
    return Path(base) / hashlib.sha256(url.encode()).hexdigest()[:16]


def store_or_folder(out_dir: str | os.PathLike[str]) -> tuple[StoreTarget | None, Path]:
    """Where a dataset is written: a store's prefix and its staging folder, or a local
    folder (a path, or a ``file://`` URL) and no store."""
    text = os.fspath(out_dir)
    if not _stores.is_url(text):
        return None, Path(text)
    local = _stores.local_path(text)
    if local is not None:
        return None, Path(local)
    target = StoreTarget(text)
    return target, staging_folder(target.url)


class StoreTarget:
    """The prefix ``url`` of a store, written by one dataset run."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.fs = _stores.store(self.url)
        self.root = self.fs._strip_protocol(self.url).rstrip("/")
        self.present: dict[str, dict[str, Any]] = {}  # relative key -> info, ours only
        self.put_here: set[str] = set()

    def _key(self, name: str) -> str:
        return f"{self.root}/{name}"

    def _call(self, what: str, name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args)``, its errors as one line naming the object's URL."""
        try:
            return fn(*args, **kwargs)
        except FileNotFoundError as e:
            raise FileNotFoundError(_stores._message(f"{self.url}/{name}", e, what)) from None
        except Exception as e:
            raise _stores._store_error(f"{self.url}/{name}", e, what) from None

    def prepare(
        self, manifest: dict[str, Any], resume: bool, feeds: Callable[[], str | None] | None
    ) -> dict[str, Any] | None:
        """Steps 1 and 2: the finished dataset found there (returned as it is, once
        ``feeds``, where given, hash as its documents did), or None once the prefix is
        claimed for this run (an unfinished manifest put)."""
        self.fs.invalidate_cache()
        try:
            listed = self.fs.find(self.root, detail=True)
        except FileNotFoundError:
            listed = {}
        except Exception as e:
            raise _stores._store_error(self.url, e, "cannot be listed") from None
        objects = {
            name[len(self.root) + 1 :]: info
            for name, info in listed.items()
            if name.startswith(self.root + "/")
        }
        old: dict[str, Any] | None = None
        if objects:
            if MANIFEST not in objects:
                raise FileExistsError(
                    f"{self.url}: the prefix holds other objects ({', '.join(sorted(objects)[:3])}); "
                    "give an empty or new prefix for the dataset"
                )
            old = _read_json(self, MANIFEST)
            strangers = sorted(n for n in objects if n != MANIFEST and not _is_ours(n))
            if old is None or strangers:
                what = ", ".join(strangers[:3]) if old is not None else MANIFEST
                raise FileExistsError(
                    f"{self.url}: the prefix holds objects that are not the dataset's ({what}), which "
                    "bpekit never deletes or overwrites; give another prefix for the dataset"
                )
        self.present = objects
        if old is not None and resume:
            differs = differences(old, manifest)
            if differs:
                state = "a dataset" if old.get("complete") else "an unfinished dataset"
                raise FileExistsError(
                    f"{self.url}: holds {state} written with other {', '.join(differs)}; "
                    "pass resume=False (--overwrite) to start over"
                )
            if old.get("complete") and self._all_present(old) and _same_feeds(self.url, old, feeds):
                return old
        pending = {k: v for k, v in manifest.items() if k not in ("splits", "totals", "resume", "complete")}
        pending["complete"] = False
        self._put_bytes(MANIFEST, dump(pending))
        return None

    def _all_present(self, manifest: dict[str, Any]) -> bool:
        """Whether every object ``manifest`` names is there, each shard at its size."""
        for split in manifest.get("splits", {}).values():
            for shard in split["shards"]:
                if any(name not in self.present for name in shard_files(shard)):
                    return False
                if int(self.present[shard["file"]].get("size") or 0) != shard.get("size"):
                    return False
        return True

    def _same(self, name: str, size: int, sha256: str) -> bool:
        """Whether our object ``name`` holds these bytes already (its size, and the
        sha256 we put with it)."""
        info = self.present.get(name)
        if info is None or int(info.get("size") or -1) != size:
            return False
        try:
            meta = self.fs.metadata(self._key(name))
        except Exception:  # a store without metadata: put it again
            return False
        return bool(meta.get(SHA_KEY) == sha256)

    def put_file(self, local: Path, name: str) -> None:
        """``local`` as the object ``name``, unless ours holds its bytes already."""
        size, sha = local.stat().st_size, sha256_of(local)
        if not self._same(name, size, sha):
            # One object when whole: s3fs puts a large file as a multipart upload, which
            # the store shows only once completed.
            self._call(
                "cannot be written", name, self.fs.put_file, str(local), self._key(name), **_meta(self, sha)
            )
        self.present[name] = {"size": size}
        self.put_here.add(name)

    def _put_bytes(self, name: str, data: bytes) -> None:
        sha = hashlib.sha256(data).hexdigest()
        self._call("cannot be written", name, self.fs.pipe_file, self._key(name), data, **_meta(self, sha))

    def put_shard(self, root: Path, shard: dict[str, Any]) -> None:
        """A finished shard's files put, then deleted from staging."""
        for name in shard_files(shard):
            self.put_file(root / name, name)
            (root / name).unlink()

    def commit(self, root: Path, manifest: dict[str, Any]) -> None:
        """Step 4: the files staging still holds put, our objects the dataset does not
        name deleted, and the finished manifest put last."""
        named = {
            name for split in manifest["splits"].values() for s in split["shards"] for name in shard_files(s)
        }
        for name in sorted(named):
            if (root / name).is_file():
                self.put_file(root / name, name)
            elif name not in self.present:
                raise FileNotFoundError(
                    f"{self.url}/{name}: neither staged nor in the store; pass resume=False to write it again"
                )
        for name in sorted(set(self.present) - named - {MANIFEST}):
            if _is_ours(name):
                self._call("cannot be deleted", name, self.fs.rm_file, self._key(name))
        self._put_bytes(MANIFEST, dump(manifest))


def _meta(target: StoreTarget, sha: str) -> dict[str, Any]:
    """The keywords that put our sha256 with an object, where the store takes them."""
    if target.fs.protocol and "s3" in target.fs.protocol:
        return {"Metadata": {SHA_KEY: sha}}
    return {}


def _is_ours(name: str) -> bool:
    split, _, file = name.partition("/")
    return split in SPLITS and "/" not in file and _OURS.fullmatch(file) is not None


def _read_json(target: StoreTarget, name: str) -> dict[str, Any] | None:
    """Our manifest there, or None where it is not bpekit's."""
    import json

    data = target._call("cannot be read", name, target.fs.cat_file, target._key(name))
    try:
        m = json.loads(data)
    except ValueError:
        return None
    return m if isinstance(m, dict) and m.get("format_version") == FORMAT_VERSION else None


def remove_staging(root: Path) -> None:
    """The staging folder, once its dataset is committed."""
    with contextlib.suppress(OSError):
        shutil.rmtree(root)


def fetch_dataset(url: str, split: str | None) -> Path:
    """A local copy of the finished dataset at ``url`` (its manifest, and the files of
    ``split``, or of every split): what ``TokenDataset`` maps, since a memory map
    needs a local file. Kept in ``$BPEKIT_CACHE`` or the temporary folder, one folder
    per URL; a file there already at its recorded size and sha256 is not fetched
    again. An unfinished dataset is an error, as a local one is."""
    import json

    base = os.environ.get("BPEKIT_CACHE") or os.path.join(tempfile.gettempdir(), "bpekit-datasets")
    target = StoreTarget(url)
    local = Path(base) / hashlib.sha256(target.url.encode()).hexdigest()[:16]
    local.mkdir(parents=True, exist_ok=True)
    data = target._call("cannot be read", MANIFEST, target.fs.cat_file, target._key(MANIFEST))
    where = f"{target.url}/{MANIFEST}"
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{where}: not valid JSON ({e}); the manifest is damaged: {REWRITE}") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{where}: not a bpekit dataset manifest (a JSON object was expected)")
    if manifest.get("complete") is not True:
        raise ValueError(
            f"{target.url}: the dataset is incomplete ({MANIFEST} says so); finish writing it first"
        )
    # Every name is checked before anything is fetched: the manifest is the store's to
    # say, and a name such as ../x would put its object outside the cache folder.
    wanted: list[tuple[str, str | None]] = []
    try:
        for name, entry in manifest.get("splits", {}).items():
            if split is not None and name != split:
                continue
            for shard in entry["shards"]:
                wanted += [(shard["file"], shard.get("sha256")), (shard["index"], shard.get("index_sha256"))]
                wanted += [(extra, None) for extra in shard_files(shard)[2:]]
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(
            f"{where}: not a bpekit dataset manifest ({type(e).__name__}: {e}); "
            f"the manifest is damaged: {REWRITE}"
        ) from None
    for file, _ in wanted:
        rel = Path(file) if isinstance(file, str) else Path()
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"{where}: {file!r} is not a path inside the dataset folder")
    for file, sha in wanted:
        path = local / file
        if path.is_file() and sha is not None and sha256_of(path) == sha:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".part")
        target._call("cannot be read", file, target.fs.get_file, target._key(file), str(partial))
        partial.replace(path)
    (local / MANIFEST).write_bytes(data)
    return local
