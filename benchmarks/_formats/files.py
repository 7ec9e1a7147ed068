"""The ``en`` corpus in documents of ~5 KB (and ~500 B, ~50 KB) in every input format:
the plain-text, JSONL, zstd and Parquet files that ``formats_compare.py``'s docstring
lists, built into the bench folder once, with ``en.formats.json``, which says what they
were built from: they are rebuilt only when a file is missing or the corpus changed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import DOC_SEP, EOT, sha256_file, write_atomic

SEP = DOC_SEP.encode()  # between the documents of corpora.py's en.txt
DOC_SIZE = 5_000
OVERHEAD_SIZES = {"500 B": (500, "en.docs500.txt"), "5 KB": (DOC_SIZE, "en.docs.txt")}
OVERHEAD_SIZES["50 KB"] = (50_000, "en.docs50k.txt")
ROW_GROUP_ROWS = 10_000
ZSTD_LEVEL = 3
STAMP = "en.formats.json"
STAMP_VERSION = 3


def cut(text: bytes, target: int) -> Iterator[bytes]:
    """``text`` in documents of about ``target`` bytes that together are ``text``: each
    ends at the blank line nearest its ``target``-th byte within 80-120% of ``target``,
    else at the end of the line that holds that byte; never inside a line."""
    start, n = 0, len(text)
    while start < n:
        mid, lo, hi = start + target, start + target * 4 // 5, start + target * 6 // 5
        if n <= hi:
            yield text[start:]
            return
        before, after = text.rfind(b"\n\n", lo, mid), text.find(b"\n\n", mid, hi)
        if before != -1 or after != -1:
            end = 2 + min((i for i in (before, after) if i != -1), key=lambda i: abs(i - mid))
        else:
            end = text.find(b"\n", mid - 1)
            end = n if end == -1 else end + 1
        yield text[start:end]
        start = end


def documents(en: bytes, target: int) -> list[bytes]:
    """en.txt in documents of about ``target`` bytes: its own documents' separators become
    blank lines (most of its documents are shorter than 5 KB: C4 pages, news items), then
    the text is cut by ``cut``."""
    return list(cut(en.replace(SEP, b"\n\n"), target))


def read_documents(path: Path, block: int = 1 << 16) -> Iterator[str]:
    """The documents of a file that joins them by ``<|endoftext|>``, read ``block``
    characters at a time: every one a new ``str``."""
    with open(path, encoding="utf-8", newline="") as f:
        rest = ""
        while chunk := f.read(block):
            parts = (rest + chunk).split(EOT)
            rest = parts.pop()
            yield from parts
        yield rest


def build(bench: Path, en_path: Path, quiet: bool = False) -> dict[str, Any]:
    """Writes the files of the module's docstring into ``bench`` unless ``en.formats.json``
    says they were made from these bytes of ``en_path`` and they are all there; returns
    that stamp: the documents' count and text bytes per size, each file's size."""
    stamp_path = bench / STAMP
    source = {"name": en_path.name, "bytes": en_path.stat().st_size, "sha256": sha256_file(en_path)}
    try:
        stamp: dict[str, Any] = json.loads(stamp_path.read_text(encoding="utf-8"))
        if (
            stamp.get("version") == STAMP_VERSION
            and stamp.get("source") == source
            and all((bench / name).stat().st_size == size for name, size in stamp["files"].items())
        ):
            return stamp
    except (OSError, ValueError, KeyError):
        pass
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    t0 = time.perf_counter()
    if not quiet:
        print(f"building the format files from {en_path} into {bench} ...", flush=True)
    en = en_path.read_bytes()
    docs_info: dict[str, dict[str, Any]] = {}
    for label, (target, name) in OVERHEAD_SIZES.items():
        docs = documents(en, target)
        write_atomic(bench / name, EOT.encode().join(docs))
        docs_info[label] = {"count": len(docs), "bytes": sum(map(len, docs)), "file": name}
        if target == DOC_SIZE:
            base = docs
    texts = [d.decode("utf-8") for d in base]
    del en
    jsonl = "".join(json.dumps({"text": t}) + "\n" for t in texts).encode("ascii")
    write_atomic(bench / "en.jsonl", jsonl)
    cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    write_atomic(bench / "en.jsonl.zst", cctx.compress(jsonl))
    write_atomic(bench / "en.txt.zst", cctx.compress((bench / "en.docs.txt").read_bytes()))
    del jsonl
    table = pa.table({"text": pa.array(texts, pa.string())})
    for name, codec in (("en.parquet", "zstd"), ("en.snappy.parquet", "snappy")):

        def write_parquet(path: Path, codec: str = codec) -> None:
            pq.write_table(table, path, compression=codec, row_group_size=ROW_GROUP_ROWS)

        write_atomic(bench / name, write_parquet)
    names: list[str] = [info["file"] for info in docs_info.values()]
    names += ["en.jsonl", "en.txt.zst", "en.jsonl.zst", "en.parquet", "en.snappy.parquet"]
    stamp = {
        "version": STAMP_VERSION,
        "source": source,
        "documents": docs_info,
        "row_group_rows": ROW_GROUP_ROWS,
        "zstd_level": ZSTD_LEVEL,
        "files": {name: (bench / name).stat().st_size for name in names},
    }
    write_atomic(stamp_path, lambda p: p.write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8"))
    if not quiet:
        for name, size in stamp["files"].items():
            print(f"  {name:20s} {size:>13,d} bytes")
        print(f"  built in {time.perf_counter() - t0:.0f} s", flush=True)
    return stamp
