"""benchmarks/report.py: the page is a function of the result files, and the committed
page matches the committed results; benchmarks/corpora.py names a missing data folder."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def _report():
    spec = importlib.util.spec_from_file_location("bench_report", BENCH / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MACHINE = {"cpu": "Test CPU", "cores": 2, "memory_gib": 8.0, "os": "Linux 6.0", "python": "3.11.7"}


def _row(tool: str, seconds: float, ratio: float, **extra) -> dict:
    row = {"tool": tool, "case": "", "version": "1.0", "seconds": seconds, "seconds_min": seconds * 0.9}
    row.update(seconds_max=seconds * 1.1, runs=3, throughput=2.0 / seconds, ratio=ratio, peak_rss_mib=30.4)
    row.update(note="", **extra)
    return row


def test_report_makes_one_table_per_workload(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    train = {
        "workload": "train-ts-10k",
        "title": "Training: ts, vocabulary 10,000",
        "description": "Trains.",
        "command": "python benchmarks/train_compare.py --corpus ts --vocab-size 10000 --runs 3",
        "corpus": {"name": "ts", "bytes": 2_000_000},
        "unit": "MB/s",
        "rows": [_row("bpekit", 0.02, 1.0), _row("rustbpe", 0.5, 25.0, version="0.1.0")],
        "date": "2026-01-02 03:04 UTC",
        "machine": MACHINE,
    }
    count = {
        **train,
        "workload": "count-ts",
        "title": "Counting",
        "command": "python benchmarks/train_compare.py --count --corpus ts",
        "rows": [{**_row("bpekit", 2.0, None, case="a | b"), "throughput": None, "peak_rss_mib": None}],
    }
    for result in (count, train):  # written in the wrong order: the page sorts them
        (results / f"{result['workload']}.json").write_text(json.dumps(result), encoding="utf-8")
    out = tmp_path / "README.md"
    report = _report()
    assert report.main(["--results", str(results), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith(report.INTRO)
    tail = page[len(report.INTRO) :]
    assert tail == (
        "\n## Workloads\n\n"
        "- `train-ts-10k`: Training: ts, vocabulary 10,000\n"
        "- `count-ts`: Counting\n\n"
        "### train-ts-10k\n\n"
        "**Training: ts, vocabulary 10,000.** Trains.\n\n"
        "| tool | time | MB/s | vs bpekit | peak RSS |\n"
        "| --- | ---: | ---: | ---: | ---: |\n"
        "| bpekit | 20.0 ms (18.0-22.0) | 100 | 1.00x | 30 MiB |\n"
        "| rustbpe | 500 ms (450-550) | 4.00 | 25.0x | 30 MiB |\n\n"
        "Corpus `ts`, 2,000,000 bytes; runs per figure: 3; versions: bpekit 1.0, rustbpe 0.1.0.\n"
        "Machine: Test CPU, 2 cores, 8 GiB memory, Linux 6.0, Python 3.11.7. Date: 2026-01-02 03:04 UTC.\n"
        "Command: `python benchmarks/train_compare.py --corpus ts --vocab-size 10000 --runs 3`\n\n"
        "### count-ts\n\n"
        "**Counting.** Trains.\n\n"
        "| case | tool | time |\n"
        "| --- | --- | ---: |\n"
        "| a \\| b | bpekit | 2.00 s (1.80-2.20) |\n\n"
        "Corpus `ts`, 2,000,000 bytes; runs per figure: 3; versions: bpekit 1.0.\n"
        "Machine: Test CPU, 2 cores, 8 GiB memory, Linux 6.0, Python 3.11.7. Date: 2026-01-02 03:04 UTC.\n"
        "Command: `python benchmarks/train_compare.py --count --corpus ts`\n"
    )
    # The same files give the same page, and --check says so; a changed file does not.
    assert report.main(["--results", str(results), "--out", str(out), "--check"]) == 0
    train["rows"][0]["seconds"] = 0.03
    (results / "train-ts-10k.json").write_text(json.dumps(train), encoding="utf-8")
    assert report.main(["--results", str(results), "--out", str(out), "--check"]) == 1


def test_committed_page_is_up_to_date() -> None:
    """benchmarks/README.md is what report.py makes of benchmarks/results/."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / "report.py"), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_corpora_names_a_missing_data_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no-data"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "corpora.py"), "--data", str(missing), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and str(missing) in proc.stderr and "BPEKIT_DATA" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_report_renders_a_result_with_its_own_tables(tmp_path: Path) -> None:
    """formats.json lays out its tables itself: columns of given kinds, "-" where a value is
    missing, the versions and rounds from the result; it sorts after the count tables."""
    results = tmp_path / "results"
    results.mkdir()
    columns = [
        {"key": "input", "name": "input", "kind": "text"},
        {"key": "file", "name": "file", "kind": "code"},
        {"key": "threads", "name": "threads", "kind": "int"},
        {"key": "seconds", "name": "time", "kind": "time"},
        {"key": "throughput", "name": "MB/s", "kind": "num"},
        {"key": "vs_text", "name": "vs text", "kind": "pct"},
        {"key": "over", "name": "over", "kind": "signed_pct"},
        {"key": "rss", "name": "RSS", "kind": "mib"},
        {"key": "note", "name": "notes", "kind": "text"},
    ]
    row = {"seconds": 0.5, "seconds_min": 0.4, "seconds_max": 0.6, "runs": 5, "throughput": 232.1}
    formats = {
        "workload": "formats",
        "title": "Counting from each input format",
        "description": "Counts.",
        "command": "python benchmarks/formats_compare.py --rounds 5",
        "corpus": {"name": "en", "bytes": 116_000_000},
        "unit": "MB/s",
        "versions": {"bpekit": "1.0", "pyarrow": "20.0"},
        "runs": 5,
        "tables": [
            {
                "heading": "Throughput",
                "text": "Per input.",
                "columns": columns,
                "rows": [
                    {**row, "input": "plain | text", "file": "en.docs.txt", "threads": 1, "vs_text": 1.0},
                    {**row, "input": "JSONL, zstd", "file": "en.jsonl.zst", "threads": 2, "vs_text": 0.784},
                    {**row, "input": "list", "file": None, "threads": 1, "over": 0.043, "rss": 80.4},
                ],
            },
            {"heading": "Targets", "columns": columns[:1], "rows": [{"input": "JSONL >= 70%"}]},
        ],
        "rows": [],
        "date": "2026-01-02 03:04 UTC",
        "machine": MACHINE,
    }
    count = {**formats, "workload": "count-en", "title": "Counting", "tables": None}
    count["rows"] = [_row("bpekit", 0.5, None, case="gpt2")]
    for result in (formats, count):
        (results / f"{result['workload']}.json").write_text(json.dumps(result), encoding="utf-8")
    out = tmp_path / "README.md"
    report = _report()
    assert report.main(["--results", str(results), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.index("### count-en") < page.index("### formats")
    assert page[page.index("### formats") :] == (
        "### formats\n\n"
        "**Counting from each input format.** Counts.\n\n"
        "#### Throughput\n\n"
        "Per input.\n\n"
        "| input | file | threads | time | MB/s | vs text | over | RSS | notes |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"
        "| plain \\| text | `en.docs.txt` | 1 | 500 ms (400-600) | 232 | 100% | - | - |  |\n"
        "| JSONL, zstd | `en.jsonl.zst` | 2 | 500 ms (400-600) | 232 | 78% | - | - |  |\n"
        "| list | - | 1 | 500 ms (400-600) | 232 | - | +4% | 80 MiB |  |\n\n"
        "#### Targets\n\n"
        "| input |\n"
        "| --- |\n"
        "| JSONL >= 70% |\n\n"
        "Corpus `en`, 116,000,000 bytes; runs per figure: 5; versions: bpekit 1.0, pyarrow 20.0.\n"
        "Machine: Test CPU, 2 cores, 8 GiB memory, Linux 6.0, Python 3.11.7. Date: 2026-01-02 03:04 UTC.\n"
        "Command: `python benchmarks/formats_compare.py --rounds 5`\n"
    )
    assert report.main(["--results", str(results), "--out", str(out), "--check"]) == 0
