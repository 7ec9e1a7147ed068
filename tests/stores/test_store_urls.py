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


def test_a_key_with_glob_characters_is_read_by_its_exact_url(tmp_path: Path) -> None:
    # The URL was taken as a pattern whatever the store held: `[1]` matched nothing and
    # `?` matched other objects too.
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/bpekit-glob/br[1].txt", b"bracket")
    fs.pipe_file("/bpekit-glob/q?x.txt", b"question")
    fs.pipe_file("/bpekit-glob/qZx.txt", b"other")
    for text in (b"bracket", b"question", b"other"):
        (tmp_path / text.decode()).write_bytes(text)
    want = {t: bpekit.count_pretokens(tmp_path / t) for t in ("bracket", "question", "other")}
    assert bpekit.count_pretokens("memory://bpekit-glob/br[1].txt") == want["bracket"]
    assert bpekit.count_pretokens("memory://bpekit-glob/q?x.txt") == want["question"]
    # Where no object has the key, it is still a pattern.
    assert bpekit.count_pretokens("memory://bpekit-glob/q[Z]x.txt") == want["other"]


def _stored_dataset(prefix: str, tmp_path: Path) -> dict[str, Any]:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"document {i} of a few words.<|endoftext|>" for i in range(20)))
    bpekit.encode_dataset(corpus, f"memory://{prefix}", "gpt2", shard_tokens=1000)
    return json.loads(fsspec.filesystem("memory").cat_file(f"/{prefix}/manifest.json"))


def test_a_stored_manifest_naming_a_path_outside_is_refused_before_fetching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("BPEKIT_CACHE", str(cache))
    fs = fsspec.filesystem("memory")
    manifest = _stored_dataset("bpekit-evil", tmp_path)
    manifest["splits"]["train"]["shards"][0]["index"] = "../../ESCAPED.idx.npy"
    fs.pipe_file("/bpekit-evil/manifest.json", json.dumps(manifest).encode())
    fs.pipe_file("/bpekit-evil/../../ESCAPED.idx.npy", b"not ours")
    with pytest.raises(
        ValueError, match=r"bpekit-evil/manifest\.json: '\.\./\.\./ESCAPED\.idx\.npy' is not a path"
    ):
        bpekit.TokenDataset("memory://bpekit-evil")
    assert list(tmp_path.rglob("ESCAPED*")) == []


def test_a_damaged_stored_manifest_is_one_line_naming_it(tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    manifest = _stored_dataset("bpekit-damaged", tmp_path)
    del manifest["splits"]["train"]["shards"][0]["file"]
    for data, says in (
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "not a bpekit dataset manifest"),
        (json.dumps(manifest).encode(), r"not a bpekit dataset manifest \(KeyError: 'file'\)"),
    ):
        fs.pipe_file("/bpekit-damaged/manifest.json", data)
        with pytest.raises(ValueError, match=r"memory://bpekit-damaged/manifest\.json: " + says):
            bpekit.TokenDataset("memory://bpekit-damaged")
