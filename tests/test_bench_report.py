"""benchmarks/report.py: the page is a function of the result files, and the committed
page matches the committed results; benchmarks/corpora.py names a missing data folder."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
