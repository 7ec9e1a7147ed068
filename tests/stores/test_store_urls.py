"""URLs without a local server: gs:// and hf:// are parsed and dispatched to their
fsspec filesystem, here stood in for by fsspec's in-memory filesystem under their
scheme (their real libraries, gcsfs and huggingface_hub's HfFileSystem, reach only
the network); memory:// and file:// are read for real. A scheme whose library is
missing is one line saying what to install, and ``import bpekit`` imports none."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import bpekit
from bpekit import _stores

fsspec = pytest.importorskip("fsspec")
from fsspec.implementations.memory import MemoryFileSystem  # noqa: E402

DOCS = ["The first document.", "A second one, longer than the first.", ""]
JSONL = "".join(json.dumps({"text": d}) + "\n" for d in DOCS).encode()


def _standin(scheme: str) -> type[MemoryFileSystem]:
    """An in-memory filesystem that answers for ``scheme``, its own store of files."""

    class Standin(MemoryFileSystem):
        protocol = (scheme,)
        store: dict[str, Any] = {}  # noqa: RUF012 (fsspec's class-level store)
        pseudo_dirs = [""]  # noqa: RUF012
        root_marker = ""

        @classmethod
        def _strip_protocol(cls, path: str) -> str:
            return path.split("://", 1)[-1].rstrip("/")

    return Standin


@pytest.mark.parametrize(
    ("scheme", "prefix"), [("gs", "gs://bucket/corpus"), ("hf", "hf://datasets/org/name/data")]
)
def test_gs_and_hf_urls_go_to_their_filesystem(
    scheme: str, prefix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    standin = _standin(scheme)
    asked = []

    def get_class(protocol: str) -> Any:
        asked.append(protocol)
        return standin

    monkeypatch.setattr(fsspec, "get_filesystem_class", get_class)
    fs = standin()
    fs.pipe_file(f"{prefix}/a.jsonl.gz", gzip.compress(JSONL))
    fs.pipe_file(f"{prefix}/sub/b.txt", "<|endoftext|>".join(DOCS).encode())
    fs.pipe_file(f"{prefix}/.hidden.txt", b"never read")
    (tmp_path / "a.jsonl").write_bytes(JSONL)
    (tmp_path / "b.txt").write_text("<|endoftext|>".join(DOCS))
    local = bpekit.count_pretokens([tmp_path / "a.jsonl", tmp_path / "b.txt"], ["<|endoftext|>"])
    assert bpekit.count_pretokens(f"{prefix}/", ["<|endoftext|>"]) == local
    assert bpekit.count_pretokens(f"{prefix}/**/*.txt", ["<|endoftext|>"]) == bpekit.count_pretokens(
        tmp_path / "b.txt", ["<|endoftext|>"]
    )
    assert set(asked) == {scheme}
    with pytest.raises(FileNotFoundError, match=f"^{prefix}/none.txt: no such object"):
        bpekit.count_pretokens(f"{prefix}/none.txt")


def test_memory_and_file_urls_read_as_paths(tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/bpekit-test/a.jsonl", JSONL)
    (tmp_path / "a.jsonl").write_bytes(JSONL)
    want = bpekit.count_pretokens(tmp_path / "a.jsonl")
    assert bpekit.count_pretokens("memory://bpekit-test/a.jsonl") == want
    assert bpekit.count_pretokens(f"file://{tmp_path}/a.jsonl") == want
    assert bpekit.count_pretokens(f"file://{tmp_path}/*.jsonl") == want


def test_a_scheme_whose_library_is_missing_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(protocol: str) -> Any:
        raise ImportError(f"Install gcsfs to access {protocol}")

    monkeypatch.setattr(fsspec, "get_filesystem_class", missing)
    with pytest.raises(ImportError) as e:
        bpekit.count_pretokens("gs://bucket/a.txt")
    assert (
        str(e.value)
        == "gs://bucket/a.txt: reading gs:// URLs needs gcsfs, which is not installed: pip install gcsfs"
    )


def test_an_unknown_scheme_is_named() -> None:
    with pytest.raises(ValueError, match=r"^nope://x/a\.txt: unknown URL scheme nope://"):
        bpekit.count_pretokens("nope://x/a.txt")


def test_urls_are_told_from_paths() -> None:
    assert _stores.split_url("S3://b/k") == ("s3", "b/k")
    assert not _stores.is_url("c:/data/a.txt") and not _stores.is_url("data/s3:/x")
    assert _stores.local_path("file://localhost/tmp/x") == "/tmp/x"
    with pytest.raises(ValueError, match="names no host"):
        _stores.local_path("file://server/x")


def test_import_bpekit_loads_no_store_library() -> None:
    libraries = ("fsspec", "s3fs", "gcsfs", "huggingface_hub")
    code = f"import sys, bpekit; print([m for m in {libraries!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
