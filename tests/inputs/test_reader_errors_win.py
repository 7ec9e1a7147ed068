"""A reader's error always wins over the end of the input, whichever worker meets it.

Compressed files and Python iterables are read in order by whichever worker asks next,
so the worker that reads a damaged block is not always the one whose item it is. Every
job (count, encode to a file, a dataset, a distributed dataset) must then fail with the
reader's error and write nothing, never finish "complete" with the ids read before it.
The race showed in a few runs in a hundred, more under load, so each case runs many
times in subprocesses that load both cores beside each other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests._corpus_formats import jsonl_bytes, shared_docs, zstd_compress

ROOT = Path(__file__).resolve().parents[2]

# Each job runs on a cut-short .jsonl.zst and on a generator that raises part-way, with
# two threads; any that finishes, or fails with another error, or leaves an output, is
# reported (a dataset keeps what it wrote, to be resumed, but never as complete).
# Short chunks give many items, so that the failing block is rarely the first.
STRESS = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    import bpekit
    from bpekit.distributed import encode_dataset as dist_encode_dataset

    folder, runs = Path(sys.argv[1]), int(sys.argv[2])
    cut = folder / "cut.jsonl.zst"
    docs = json.loads((folder / "docs.json").read_text())
    gpt2 = bpekit.get_encoding("gpt2")

    def generator():
        for i, doc in enumerate(docs):
            if i == len(docs) * 2 // 3:
                raise RuntimeError("the generator failed part-way")
            yield doc

    def jobs(k):
        out = folder / f"out{k}"
        return {
            "encode_file zst": (lambda: bpekit.encode_file(cut, out.with_suffix(".npy"), gpt2,
                                                           num_threads=2, chunk_size=1 << 14),
                                "not a valid .zst file", out.with_suffix(".npy")),
            "encode_file generator": (lambda: bpekit.encode_file(generator(), out.with_suffix(".npy"),
                                                                 gpt2, num_threads=2, chunk_size=1 << 14),
                                      "failed part-way", out.with_suffix(".npy")),
            "encode_dataset zst": (lambda: bpekit.encode_dataset([cut], out / "zst", gpt2, num_threads=2,
                                                                 chunk_size=1 << 14, shard_tokens=20_000),
                                   "not a valid .zst file", out / "zst" / "manifest.json"),
            "encode_dataset generator": (lambda: bpekit.encode_dataset(generator(), out / "gen", gpt2,
                                                                       num_threads=2, chunk_size=1 << 14),
                                         "failed part-way", out / "gen" / "manifest.json"),
            "count zst": (lambda: bpekit.count_pretokens([cut], num_threads=2, chunk_size=1 << 14),
                          "not a valid .zst file", None),
            "count generator": (lambda: bpekit.count_pretokens(generator(), num_threads=2,
                                                               chunk_size=1 << 14),
                                "failed part-way", None),
        }

    # An output file, or a dataset whose manifest says it is complete (a cut-short
    # dataset keeps an incomplete manifest, to be resumed).
    def left_complete(output):
        if output is None or not output.exists():
            return False
        return output.suffix != ".json" or json.loads(output.read_text())["complete"]

    wrong = []
    for k in range(runs):
        for name, (job, want, output) in jobs(k).items():
            try:
                job()
                wrong.append(f"{name}: finished")
            except Exception as e:
                if want not in str(e):
                    wrong.append(f"{name}: {type(e).__name__}: {e}")
            if left_complete(output):
                wrong.append(f"{name}: left {output}")
    # The distributed dataset, through its local backend, a few times (each starts workers).
    for k in range(3):
        out = folder / f"dist{k}"
        try:
            dist_encode_dataset([cut], out, gpt2, work_dir=folder / f"work{k}", backend="local",
                                workers=2, unit_bytes=1 << 16, shard_tokens=20_000)
            wrong.append("distributed: finished")
        except Exception as e:
            if "not a valid .zst file" not in str(e):
                wrong.append(f"distributed: {type(e).__name__}: {e}")
        if left_complete(out / "manifest.json"):
            wrong.append(f"distributed: left {out / 'manifest.json'}")
    print(json.dumps(wrong))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="runs two loaded subprocesses (Linux)")
def test_a_reader_error_always_fails_the_job_under_load(tmp_path: Path) -> None:
    docs = shared_docs("c4")
    data = zstd_compress(jsonl_bytes(docs))
    procs = []
    for side in ("a", "b"):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "cut.jsonl.zst").write_bytes(data[: len(data) * 2 // 3])
        (folder / "docs.json").write_text(json.dumps(docs[:600]))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", STRESS, str(folder), "25"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env={**os.environ, "RAY_DISABLE_IMPORT_WARNING": "1"},
            )
        )
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail("the stress runs hung")
        assert proc.returncode == 0, err[-3000:]
        wrong = json.loads(out.strip().splitlines()[-1])
        assert wrong == [], wrong[:10]
