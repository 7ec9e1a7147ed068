"""Build the benchmark corpora from the data folder, so every run times the same bytes.

    python benchmarks/corpora.py [--data DIR] [--out DIR]

``--data`` (else ``$BPEKIT_DATA``, else ``../shared/data`` beside the repository) holds
``corpora/`` (English) and ``multilingual/``; ``--out`` (else ``$BPEKIT_BENCH_DIR``, else
``/tmp/bpekit_bench``) receives, documents joined by ``"\\n<|endoftext|>\\n"``:

  ts.txt        2 MiB of TinyStories (corpora/tinystories_v2_train_head_2MiB.txt)
  en.txt        all English text of corpora/ (prose, news, web, dictionaries, technical
                docs; ~116 MB), smallest files first, so that a prefix is mostly prose
  en-small.txt  the longest prefix of en.txt that ends at a document boundary, <= 20 MiB
  ml.txt        all of multilingual/ (Russian, Chinese, Japanese, Korean, the UDHR's
                ~380 languages, emoji; ~25 MB)
  cjk.txt       the lines of fortunes_zh.txt and wagahaiwa_nekodearu_ja.txt that are at
                least 80% CJK characters (the pre-tokenizers' non-ASCII path)

and prints each file's size and sha256. A file whose bytes are already there is left
alone. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC_SEP = "\n<|endoftext|>\n"
EN_SMALL_LIMIT = 20 * 1024 * 1024
NAMES = ("ts", "en", "en-small", "ml", "cjk")


def data_dir(given: str | os.PathLike[str] | None = None) -> Path:
    """The data folder: ``given``, else ``$BPEKIT_DATA``, else ``../shared/data`` beside
    the repository; exits with a one-line error naming it when it is missing."""
    path = Path(given or os.environ.get("BPEKIT_DATA") or REPO.parent / "shared" / "data")
    if not (path / "corpora").is_dir():
        sys.exit(f"benchmark data folder {path} is missing or has no corpora/: use --data DIR or BPEKIT_DATA")
    return path


def bench_dir(given: str | os.PathLike[str] | None = None) -> Path:
    """Where the corpora are written: ``given``, else ``$BPEKIT_BENCH_DIR``, else /tmp/bpekit_bench."""
    return Path(given or os.environ.get("BPEKIT_BENCH_DIR") or "/tmp/bpekit_bench")


def _jsonl_texts(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def _english(data: Path) -> bytes:
    units = []
    for p in sorted((data / "corpora").glob("*.txt")):
        text = p.read_text(encoding="utf-8")
        units.append((len(text.encode("utf-8")), p.name, text))
    c4 = DOC_SEP.join(_jsonl_texts(data / "corpora" / "c4_sample.jsonl"))
    units.append((len(c4.encode("utf-8")), "c4_sample.jsonl", c4))
    units.sort(key=lambda u: (u[0], u[1]))
    return DOC_SEP.join(t for _, _, t in units).encode("utf-8")


def _multilingual(data: Path) -> bytes:
    texts = []
    for p in sorted((data / "multilingual").iterdir()):
        if p.suffix == ".txt":
            texts.append(p.read_text(encoding="utf-8"))
        elif p.suffix == ".jsonl":
            texts.extend(_jsonl_texts(p))
    return DOC_SEP.join(texts).encode("utf-8")


def _cjk(data: Path) -> bytes:
    lines = []
    for name in ["fortunes_zh.txt", "wagahaiwa_nekodearu_ja.txt"]:
        for line in (data / "multilingual" / name).read_text(encoding="utf-8").splitlines(True):
            chars = [c for c in line if not c.isspace()]
            if chars and sum(c >= "\u2e80" for c in chars) >= 0.8 * len(chars):
                lines.append(line)
    return "".join(lines).encode("utf-8")


def build(data: Path, out: Path, quiet: bool = False) -> dict[str, Path]:
    """Writes every corpus of ``NAMES`` into ``out``; returns their paths by name."""
    out.mkdir(parents=True, exist_ok=True)
    en = _english(data)
    cut = en.rfind(DOC_SEP.encode("utf-8"), 0, EN_SMALL_LIMIT + 1)
    contents = {
        "ts": (data / "corpora" / "tinystories_v2_train_head_2MiB.txt").read_bytes(),
        "en": en,
        "en-small": en[:cut],
        "ml": _multilingual(data),
        "cjk": _cjk(data),
    }
    paths = {}
    for name, content in contents.items():
        path = out / f"{name}.txt"
        if not (path.is_file() and path.stat().st_size == len(content) and path.read_bytes() == content):
            tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
            tmp.write_bytes(content)
            tmp.replace(path)
        paths[name] = path
        if not quiet:
            digest = hashlib.sha256(content).hexdigest()[:16]
            print(f"{name:9s} {len(content):>12,d} bytes  sha256 {digest}  {path}")
    return paths


def corpus_path(
    name: str, out: str | os.PathLike[str] | None = None, data: str | os.PathLike[str] | None = None
) -> Path:
    """The corpus ``name`` (one of ``NAMES``), built first when it is missing."""
    path = bench_dir(out) / f"{name}.txt"
    if not path.exists():
        build(data_dir(data), bench_dir(out), quiet=True)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="data folder (default: $BPEKIT_DATA or ../shared/data)")
    ap.add_argument(
        "--out", default=None, help="output folder (default: $BPEKIT_BENCH_DIR, else /tmp/bpekit_bench)"
    )
    args = ap.parse_args()
    build(data_dir(args.data), bench_dir(args.out))


if __name__ == "__main__":
    main()
