"""benchmarks/dataset_compare.py: the shard readers its id checks rely on
(``_dataset/readers.py``), its slices for --quick (``_dataset/corpora.py``), and how
report.py lays out its result (a ``ratio`` column, after encoding)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
MACHINE = {"cpu": "Test CPU", "cores": 2, "memory_gib": 8.0, "os": "Linux 6.0", "python": "3.11.7"}


def _load(name: str):
    """The benchmark module ``name`` (``_dataset.readers``), imported as the scripts import
    it: with benchmarks/ on the path."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


def test_shards_read_back_in_every_format(tmp_path: Path) -> None:
    readers = _load("_dataset.readers")
    ids = np.array([5, 50256, 0, 7, 65535], dtype=np.uint16)
    np.save(tmp_path / "a.npy", ids)
    ids.tofile(tmp_path / "a.bin")
    header = np.zeros(256, dtype="<i4")
    header[:3] = (20240520, 1, len(ids))
    (tmp_path / "a.llmc").write_bytes(header.tobytes() + ids.tobytes())
    wide = np.array([70000, 1], dtype=np.uint32)
    header[:3] = (20240801, 7, len(wide))
    (tmp_path / "w.llmc").write_bytes(header.tobytes() + wide.astype("<u4").tobytes())
    assert readers.read_shard(tmp_path / "a.npy", "npy", "uint16").tolist() == ids.tolist()
    assert readers.read_shard(tmp_path / "a.bin", "bin", "uint16").tolist() == ids.tolist()
    assert readers.read_shard(tmp_path / "a.llmc", "llmc", "uint16").tolist() == ids.tolist()
    assert readers.read_shard(tmp_path / "w.llmc", "llmc", "uint32").tolist() == [70000, 1]
    # A header that counts more ids than the file holds is refused.
    header[:3] = (20240520, 1, len(ids) + 1)
    (tmp_path / "bad.llmc").write_bytes(header.tobytes() + ids.tobytes())
    try:
        readers.read_shard(tmp_path / "bad.llmc", "llmc", "uint16")
    except ValueError as e:
        assert "bad.llmc" in str(e)
    else:
        raise AssertionError("a short llm.c file was read")


def test_ids_hash_is_the_same_however_the_ids_are_cut() -> None:
    readers = _load("_dataset.readers")
    ids = np.arange(1000, dtype=np.uint32) * 37 % 50257
    whole = readers.ids_of(iter([ids]))
    assert readers.ids_of(iter([ids[:3].astype(np.uint16), ids[3:700], ids[700:].astype(np.uint16)])) == whole
    assert whole[0] == 1000
    assert readers.ids_of(iter([ids[:-1]])) != whole


def test_quick_slices_end_at_a_document(tmp_path: Path) -> None:
    corpora = _load("_dataset.corpora")
    text = tmp_path / "big.txt"
    text.write_bytes(b"one\n<|endoftext|>\ntwo two\n<|endoftext|>\nthree three three")
    corpora.write_prefix(text, tmp_path / "q" / "big.txt", 30, corpora.SEP)
    assert (tmp_path / "q" / "big.txt").read_bytes() == b"one"
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["é", "bb", "ccc"]), encoding="utf-8")
    corpora.write_prefix(jsonl, tmp_path / "q" / "a.jsonl", 40, b"\n")
    assert corpora.jsonl_text_bytes(tmp_path / "q" / "a.jsonl") == (2 + 2, 2)


def test_report_lays_out_a_dataset_result(tmp_path: Path) -> None:
    """dataset.json's own tables, a ``ratio`` column among them; it sorts after encoding
    and before pre-tokenizing."""
    results = tmp_path / "results"
    results.mkdir()
    columns = [
        {"key": "corpus", "name": "corpus", "kind": "text"},
        {"key": "ratio", "name": "rerun / full", "kind": "ratio"},
        {"key": "left", "name": "left", "kind": "pct"},
    ]
    dataset = {
        "workload": "dataset",
        "title": "Writing a training-ready token dataset",
        "description": "Writes.",
        "command": "python benchmarks/dataset_compare.py",
        "unit": "MB/s",
        "versions": {"bpekit": "1.0", "tiktoken": "0.14.0"},
        "runs": 3,
        "tables": [
            {
                "heading": "Resume",
                "columns": columns,
                "rows": [
                    {"corpus": "en", "ratio": 0.4812, "left": 0.42},
                    {"corpus": "owt-1G", "ratio": None},
                ],
            }
        ],
        "rows": [],
        "date": "2026-01-02 03:04 UTC",
        "machine": MACHINE,
    }
    others = []
    for name in ("encode-en-gpt2", "pretokenize-en"):
        row = {"tool": "bpekit", "case": "", "seconds": 1.0, "runs": 1}
        others.append({**dataset, "workload": name, "title": name, "tables": None, "rows": [row]})
    for result in (dataset, *others):
        (results / f"{result['workload']}.json").write_text(json.dumps(result), encoding="utf-8")
    out = tmp_path / "README.md"
    report = _load("report")
    assert report.main(["--results", str(results), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.index("### encode-en-gpt2") < page.index("### dataset") < page.index("### pretokenize-en")
    section = page[page.index("### dataset") : page.index("### pretokenize-en")]
    assert section == (
        "### dataset\n\n"
        "**Writing a training-ready token dataset.** Writes.\n\n"
        "#### Resume\n\n"
        "| corpus | rerun / full | left |\n"
        "| --- | ---: | ---: |\n"
        "| en | 0.481x | 42% |\n"
        "| owt-1G | - | - |\n\n"
        "runs per figure: 3; versions: bpekit 1.0, tiktoken 0.14.0.\n"
        "Machine: Test CPU, 2 cores, 8 GiB memory, Linux 6.0, Python 3.11.7. Date: 2026-01-02 03:04 UTC.\n"
        "Command: `python benchmarks/dataset_compare.py`\n\n"
    )
