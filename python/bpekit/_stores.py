"""URLs of object stores: ``s3://``, ``gs://``, ``hf://`` and ``file://`` (and any other
protocol fsspec knows, such as ``memory://``), listed and read through fsspec.

Why fsspec: one interface for every store the field keeps corpora in (s3fs, gcsfs,
and huggingface_hub's ``HfFileSystem``, which neither pyarrow's filesystems nor
obstore reach), the one that ``datasets`` and pandas already use, and configured the
way users of those already configure it (the stores' own variables, such as
``AWS_ENDPOINT_URL`` and ``AWS_ACCESS_KEY_ID``, or fsspec's ``FSSPEC_S3='{...}'``).
Reading an object 4 MiB at a time through it ran at the speed of pyarrow's
``S3FileSystem`` on the same objects (the measurements are in ``docs/inputs.md``).

Only the library of a scheme in use is imported, on first use: ``import bpekit`` loads
none of them. A scheme whose library is missing is one line saying what to install.
A ``file://`` URL is a local path, read as every local path is (mapped).

>>> split_url("s3://bucket/data/a.jsonl.zst")
('s3', 'bucket/data/a.jsonl.zst')
>>> is_url("C:/data/a.txt"), is_url("hf://datasets/org/name/a.parquet")
(False, True)
>>> local_path("file:///tmp/a%20b.txt")
'/tmp/a b.txt'
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["StoreObject", "is_url", "list_objects", "local_path", "open_object", "split_url", "store"]

# Bytes fetched from a store per request when an object is streamed. Each request
# costs a round trip: reading an object from the local S3 server (moto) ran at 157 MB/s
# in 4 MiB requests, 345 MB/s in 16 MiB and 383 MB/s in 32 MiB (s3fs; pyarrow's
# S3FileSystem 100, 290 and 394), and counting reads ~360 MB/s on 2 cores. One block
# and its read-ahead are held per object, and one object is read at a time.
STREAM_BLOCK_BYTES = 16 << 20

# A scheme is two letters or more: "C:/x" is a Windows path, not a URL.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://(.*)$", re.S)
_GLOB_CHARS = frozenset("*?[")

# What to install for each scheme whose library is not fsspec itself.
_LIBRARIES = {
    "s3": ("s3fs", "pip install s3fs"),
    "s3a": ("s3fs", "pip install s3fs"),
    "gs": ("gcsfs", "pip install gcsfs"),
    "gcs": ("gcsfs", "pip install gcsfs"),
    "hf": ("huggingface_hub", "pip install huggingface_hub"),
}


def is_url(text: str) -> bool:
    """Whether ``text`` is a URL (``scheme://...``), not a local path."""
    return _URL.match(text) is not None


def split_url(url: str) -> tuple[str, str]:
    """``(scheme, the rest)`` of a URL, the scheme in lower case."""
    m = _URL.match(url)
    if m is None:
        raise ValueError(f"{url}: not a URL (scheme://...)")
    return m.group(1).lower(), m.group(2)


def local_path(url: str) -> str | None:
    """The local path of a ``file://`` URL (percent-escapes decoded), else None."""
    scheme, rest = split_url(url)
    if scheme != "file":
        return None
    from urllib.parse import unquote

    host, _, path = rest.partition("/")
    if host not in ("", "localhost"):
        raise ValueError(f"{url}: a file:// URL names no host other than localhost")
    return unquote("/" + path)


def store(url: str) -> Any:
    """The fsspec filesystem of ``url``'s scheme, its library imported now. A missing
    library, or a scheme fsspec does not know, is an ``ImportError`` / ``ValueError``
    of one line naming the URL and what to install."""
    scheme, _ = split_url(url)
    try:
        import fsspec
    except ImportError:
        raise ImportError(
            f"{url}: reading URLs needs fsspec, which is not installed: pip install fsspec"
        ) from None
    try:
        cls = fsspec.get_filesystem_class(scheme)
    except ImportError:
        module, how = _LIBRARIES.get(scheme, (scheme, f"pip install the fsspec library for {scheme}://"))
        raise ImportError(
            f"{url}: reading {scheme}:// URLs needs {module}, which is not installed: {how}"
        ) from None
    except ValueError:
        raise ValueError(
            f"{url}: unknown URL scheme {scheme}://; give a path, or an s3://, gs://, hf:// or file:// URL"
        ) from None
    options = fsspec.config.conf.get(scheme, {})
    return cls(**options)


@dataclass(frozen=True)
class StoreObject:
    """An object in a store: its URL, its size, and what tells a changed one (an ETag,
    a version or a modification time, as the store says)."""

    url: str
    size: int
    version: str


def _version(info: dict[str, Any]) -> str:
    for key in ("ETag", "etag", "md5Hash", "blob_id", "last_commit", "mtime", "LastModified", "created"):
        value = info.get(key)
        if value:
            return str(value)
    return ""


def _object(fs: Any, info: dict[str, Any]) -> StoreObject:
    return StoreObject(fs.unstrip_protocol(info["name"]), int(info.get("size") or 0), _version(info))


def _hidden(relative: str) -> bool:
    return any(part.startswith(".") for part in relative.split("/") if part)


def list_objects(url: str) -> list[StoreObject]:
    """The objects that ``url`` names: one object; every object under a prefix (a
    "folder": a URL ending in ``/``, or one that names no object but has objects
    under it), sorted by key, hidden ones (a key part starting with ``.``) skipped;
    or, when it holds ``*``, ``?`` or ``[`` and no object has that exact key, the
    objects a glob pattern matches (``**`` across folders), sorted. Nothing matched is a ``FileNotFoundError``
    naming the URL; errors of the store (no bucket, no credentials) name it too."""
    _, rest = split_url(url)
    fs = store(url)
    path = fs._strip_protocol(url)
    glob = not _GLOB_CHARS.isdisjoint(rest)
    # A listing cached by an earlier call of this process may be stale: a run reads the
    # store as it is now.
    fs.invalidate_cache()
    try:
        # An object whose key holds `*`, `?` or `[` is read by its exact URL, as a local
        # file of that name is: the URL is a pattern only where no object has its key.
        if glob and not rest.endswith("/"):
            try:
                info = fs.info(path)
            except FileNotFoundError:
                info = None
            if info is not None and info.get("type") != "directory":
                return [_object(fs, info)]
        if glob:
            base = _glob_base(path)
            found = [
                info
                for info in fs.glob(path, detail=True).values()
                if info.get("type") != "directory" and not _hidden(posixpath.relpath(info["name"], base))
            ]
        else:
            info = None
            if not rest.endswith("/"):
                try:
                    info = fs.info(path)
                except FileNotFoundError:
                    pass
            if info is not None and info.get("type") != "directory":
                return [_object(fs, info)]
            under = path.rstrip("/")
            found = [
                info
                for name, info in fs.find(under, detail=True).items()
                if info.get("type") != "directory" and not _hidden(posixpath.relpath(name, under))
            ]
    except FileNotFoundError as e:
        raise FileNotFoundError(_message(url, e, "no such object or prefix")) from None
    except Exception as e:  # the store's library's own errors (botocore's are not OSErrors)
        raise _store_error(url, e, "cannot be listed") from None
    if not found:
        what = "no object matches this pattern" if glob else "no such object, and no objects under it"
        raise FileNotFoundError(f"{url}: {what}")
    return [_object(fs, i) for i in sorted(found, key=lambda i: i["name"])]


def _glob_base(path: str) -> str:
    """The part of a glob pattern before its first wildcard, to the last ``/``."""
    at = min((path.index(c) for c in _GLOB_CHARS if c in path), default=len(path))
    return path[:at].rpartition("/")[0] or "/"


def _store_error(url: str, e: Exception, what: str) -> OSError:
    """A store's error as an ``OSError`` of one line naming ``url``; a refusal is a
    ``PermissionError``."""
    kind = PermissionError if isinstance(e, PermissionError) else OSError
    return kind(_message(url, e, what))


def _message(url: str, e: BaseException, what: str) -> str:
    """One line: the URL, then what the store said (its first line)."""
    said = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if "credential" in said.lower() or type(e).__name__ == "NoCredentialsError":
        return f"{url}: no credentials for the store ({said}); set them as the store's library reads them"
    return f"{url}: {what} ({said})"


class _Reader:
    """An object read as it comes, a block at a time: opened on the first read (a
    folder of thousands of objects holds no connection per object), closed at its end.
    Its errors name the URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.f: Any = None
        self.done = False

    def read(self, n: int) -> bytes:
        if self.done:
            return b""
        try:
            if self.f is None:
                fs = store(self.url)
                path = fs._strip_protocol(self.url)
                self.f = fs.open(path, "rb", block_size=STREAM_BLOCK_BYTES, cache_type="readahead")
            data: bytes = self.f.read(n)
        except FileNotFoundError as e:
            raise FileNotFoundError(_message(self.url, e, "no such object")) from None
        except Exception as e:
            raise _store_error(self.url, e, "cannot be read") from None
        if not data:
            self.done = True
            self.f.close()
        return data


def open_object(url: str) -> _Reader:
    """``url``, to read as it comes (a read-ahead of one block, never the whole
    object), opened on its first read. Errors name the URL."""
    return _Reader(url)


def open_random(url: str) -> Any:
    """``url`` opened for random access (a Parquet file's footer, then its row groups)."""
    fs = store(url)
    try:
        return fs.open(fs._strip_protocol(url), "rb", block_size=4 << 20)
    except FileNotFoundError as e:
        raise FileNotFoundError(_message(url, e, "no such object")) from None
    except Exception as e:
        raise _store_error(url, e, "cannot be opened") from None
