"""A dataset encoded by many workers is byte-identical to ``bpekit.encode_dataset``'s:
every shard, every document index and the manifest, on every backend, through retries,
a driver killed mid-run, and any cut of the input into units.

The corpus (``conftest.dist_corpus``) mixes text with special tokens, ``.gz``, JSON
lines and Parquet, planned into 16 or more units; the layout makes every part of the
writer work: small shards that cut documents, a val split, marks around files.
"""

from __future__ import annotations

import filecmp
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpekit
import bpekit.distributed as dist
from bpekit.dataset import Layout, Marks
from bpekit.dataset.job import Framing, Job
from bpekit.distributed.dataset import UnitFiles
from bpekit.distributed.plan import plan_units
from bpekit.distributed.shardplan import Item, unit_skeleton
from bpekit.distributed.work import unit_files
from bpekit.options import DistributedOptions, ReadOptions, RunOptions

EOT = "<|endoftext|>"
UNIT_BYTES = 24_000
LAYOUT: dict[str, Any] = {
    "shard_tokens": 7_000,
    "val_fraction": 0.2,
    "seed": 3,
    "after_each_file": EOT,
    "bos": EOT,
}
# LAYOUT as the option objects that dist.dataset.write_dataset takes, and the defaults.
OPTIONS = (
    Layout(shard_tokens=LAYOUT["shard_tokens"], val_fraction=LAYOUT["val_fraction"], seed=LAYOUT["seed"]),
    Marks(after_each_file=EOT, bos=EOT),
    ReadOptions(),
    RunOptions(num_threads=1),
)
DEFAULTS = (Layout(), Marks(), ReadOptions(), RunOptions(num_threads=1))
# A local pool of 2 workers, the corpus cut into 16 units or more.
LOCAL = DistributedOptions(backend="local", workers=2, unit_bytes=UNIT_BYTES)


def core_job(width: int = 2, after_each_file: int | None = None, **layout: Any) -> Job:
    """A job as the core's encode_unit and assemble_dataset take it: ids of ``width``
    bytes, ``layout`` (Layout's keywords), ``after_each_file``'s id."""
    dtype = {2: "uint16", 4: "uint32"}[width]
    framing = Framing(after_each_file=after_each_file)
    return Job(ReadOptions(), RunOptions(), Layout(dtype=dtype, **layout), framing)


@pytest.fixture(scope="module")
def one_machine(dist_corpus: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single") / "ds"
    bpekit.encode_dataset(dist_corpus, out, "gpt2", **LAYOUT)
    return out


def same_dataset(a: Path, b: Path) -> None:
    """``a`` and ``b`` hold the same files with the same bytes."""
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert len(files) > 6
    for f in files:
        assert filecmp.cmp(a / f, b / f, shallow=False), f


@pytest.mark.parametrize("workers", [1, 2])
def test_local_pool_writes_what_one_machine_writes(dist_corpus, one_machine, tmp_path: Path, workers) -> None:
    out = tmp_path / "ds"
    written = dist.dataset.write_dataset(
        dist_corpus,
        out,
        "gpt2",
        *OPTIONS,
        DistributedOptions(backend="local", workers=workers, unit_bytes=UNIT_BYTES),
    )
    assert written.stats["units"] >= 16
    same_dataset(one_machine, out)
    # The unit files are gone once the dataset is written.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_ray_writes_what_one_machine_writes(dist_corpus, one_machine, ray_local, tmp_path: Path) -> None:
    work = tmp_path / "work"
    manifest = dist.encode_dataset(
        dist_corpus, tmp_path / "ds", "gpt2", unit_bytes=UNIT_BYTES, work_dir=work, **LAYOUT
    )
    same_dataset(one_machine, tmp_path / "ds")
    assert manifest == json.loads((one_machine / "manifest.json").read_text())
    assert not work.exists()  # the units' files went, and the folder they emptied


def test_uint32_records_only_and_a_tokenizer_object(dist_corpus, tmp_path: Path) -> None:
    """Records (JSONL, Parquet) with their default eos, uint32 ids, a Tokenizer passed as
    an object (pickled to the workers) rather than a name."""
    tok = bpekit.get_encoding("cl100k_base")
    inputs = dist_corpus[2:]
    options = {"dtype": "uint32", "shard_tokens": 5_000, "shard_format": "bin"}
    bpekit.encode_dataset(inputs, tmp_path / "one", tok, **options)
    dist.encode_dataset(
        inputs, tmp_path / "two", tok, backend="local", workers=2, unit_bytes=9_000, **options
    )
    same_dataset(tmp_path / "one", tmp_path / "two")


@pytest.mark.parametrize("fmt", ["megatron", "datatrove"])
def test_trainer_formats_are_one_machine_s(dist_corpus, tmp_path: Path, fmt: str) -> None:
    """Megatron's and datatrove's files beside the shards, from units assembled."""
    options = {"shard_tokens": 5_000, "shard_format": fmt, "val_fraction": 0.2}
    bpekit.encode_dataset(dist_corpus, tmp_path / "one", "gpt2", **options)
    dist.encode_dataset(
        dist_corpus, tmp_path / "two", "gpt2", backend="local", workers=2, unit_bytes=9_000, **options
    )
    same_dataset(tmp_path / "one", tmp_path / "two")
    suffix = {"megatron": "*.idx", "datatrove": "*.ds.metadata"}[fmt]
    assert sorted(p.name for p in (tmp_path / "two/train").glob(suffix))


@pytest.mark.parametrize("hf", ["allenai_eleuther-ai-gpt-neox-20b-pii-special.json"])
def test_a_tokenizer_json_writes_what_one_machine_writes(dist_corpus, tmp_path: Path, hf: str) -> None:
    """A tokenizer.json tokenizer (NFC and space-run added tokens for NeoX) goes to the
    workers pickled, and the planner cuts units where its front keeps the ids."""
    from conftest import data_path

    tok = bpekit.Tokenizer.from_hf(data_path("hf", hf))
    bpekit.encode_dataset(dist_corpus, tmp_path / "one", tok, **LAYOUT)
    written = dist.dataset.write_dataset(dist_corpus, tmp_path / "two", tok, *OPTIONS, LOCAL)
    assert written.stats["units"] >= 16
    same_dataset(tmp_path / "one", tmp_path / "two")


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_worker_killed_mid_unit_is_retried(dist_corpus, one_machine, tmp_path, backend, request) -> None:
    if backend == "ray":
        request.getfixturevalue("ray_local")
    marker = tmp_path / "crashed"
    dist.dataset.write_dataset(
        dist_corpus,
        tmp_path / "ds",
        "gpt2",
        *OPTIONS,
        DistributedOptions(backend=backend, workers=2, unit_bytes=UNIT_BYTES),
        _crash_once=(6, str(marker)),
    )
    assert marker.exists()  # the worker did die once
    same_dataset(one_machine, tmp_path / "ds")


def test_a_driver_killed_mid_run_resumes(dist_corpus, one_machine, tmp_path: Path) -> None:
    """A driver SIGKILLed after its third unit: a rerun keeps the units it finished
    (in ``.ds.units`` beside the dataset, work_dir not given) and encodes the rest."""
    out = tmp_path / "ds"
    script = textwrap.dedent(
        f"""
        import os, signal
        import bpekit.distributed as dist
        from bpekit.distributed import backends, dataset

        class DiesAfterThree(backends.LocalBackend):
            def run(self, fn, tasks):
                for n, result in enumerate(super().run(fn, tasks)):
                    yield result
                    if n == 2:
                        os.kill(os.getpid(), signal.SIGKILL)

        dataset.open_backend = lambda address, backend, workers, here=False: DiesAfterThree(2)
        dist.encode_dataset({[str(p) for p in dist_corpus]!r}, {str(out)!r}, "gpt2",
                            backend="local", unit_bytes={UNIT_BYTES}, **{LAYOUT!r})
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert run.returncode == -signal.SIGKILL, run.stderr.decode()
    units = tmp_path / ".ds.units"
    done = len(list(units.glob("unit-*.json")))
    assert done >= 3
    # One kept unit damaged in place: it is encoded again, not replayed.
    ids, _ = unit_files(units, int(sorted(units.glob("unit-*.json"))[0].stem[5:]), ".ids")
    data = bytearray(ids.read_bytes())
    data[-1] ^= 1
    ids.write_bytes(bytes(data))
    written = dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    assert written.stats["kept"] == done - 1
    same_dataset(one_machine, out)
    assert not units.exists()
    # Rerun on the finished dataset: nothing to do, no worker started (on a cluster that
    # is not there) and no unit planned (of a byte each).
    nowhere = DistributedOptions(address="ray://nowhere.invalid:1", unit_bytes=1)
    again = dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, nowhere)
    assert again.done_before


def _kill_after_shards(
    dist_corpus: list[Path], out: Path, shards: int, unit_bytes: int = UNIT_BYTES, patch: str = ""
) -> None:
    """Runs the dataset on a local pool in a child process SIGKILLed once the workers
    have written ``shards`` shards (or where ``patch``, code run first, kills it)."""
    script = textwrap.dedent(
        f"""
        import os, signal
        import bpekit.distributed as dist
        from bpekit.distributed import backends, dataset

        class DiesAfterShards(backends.LocalBackend):
            def run(self, fn, tasks):
                for n, result in enumerate(super().run(fn, tasks)):
                    yield result
                    if fn.__name__ == "write_shard" and n == {shards - 1}:
                        os.kill(os.getpid(), signal.SIGKILL)

        dataset.open_backend = lambda address, backend, workers, here=False: DiesAfterShards(2)
        {patch}
        dist.encode_dataset({[str(p) for p in dist_corpus]!r}, {str(out)!r}, "gpt2", backend="local",
                            workers=2, unit_bytes={unit_bytes}, **{LAYOUT!r})
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert run.returncode == -signal.SIGKILL, run.stderr.decode()


def test_a_driver_killed_while_writing_shards_resumes(dist_corpus, one_machine, tmp_path: Path) -> None:
    """Killed once six shards are written by the workers: the manifest says the
    dataset is unfinished; the unit files whose ids were all written are gone, their
    skeletons recorded; the rerun keeps every unit and the shards written, encodes
    nothing and writes only the other shards."""
    out, units = tmp_path / "ds", tmp_path / ".ds.units"
    _kill_after_shards(dist_corpus, out, 6)
    manifest = json.loads((out / "manifest.json").read_text())
    assert not manifest["complete"]
    logged = (units / "written.jsonl").read_text().splitlines()
    assert len(logged) == 6
    kept_files = {
        json.loads(line)["entry"]["file"]: (out / json.loads(line)["entry"]["file"]).stat() for line in logged
    }
    gone = [p for p in units.glob("unit-*.skel") if not p.with_suffix(".ids").exists()]
    assert gone, "no unit file was let go once its shards were written"
    done = len(list(units.glob("unit-*.json")))
    written = dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    assert written.stats["kept"] == done == written.stats["units"]
    same_dataset(one_machine, out)
    # The shards written before were kept, not written again.
    for file, stat in kept_files.items():
        assert (out / file).stat().st_ino == stat.st_ino, file
    assert not units.exists()


def test_a_shard_damaged_after_its_unit_files_went_is_written_again(
    dist_corpus, one_machine, tmp_path: Path
) -> None:
    """A kept shard whose bytes changed, and one deleted, after their units' files were
    let go: those units are encoded again, and their shards written again."""
    out, units = tmp_path / "ds", tmp_path / ".ds.units"
    _kill_after_shards(dist_corpus, out, 6)
    rows = [json.loads(line) for line in (units / "written.jsonl").read_text().splitlines()]
    skels = [json.loads(p.read_text()) for p in units.glob("unit-*.skel")]
    gone = [s for s in skels if not unit_files(units, s["unit"], ".ids")[0].exists() and s["shards"]]
    assert gone
    damaged = out / rows[0]["entry"]["file"]
    data = bytearray(damaged.read_bytes())
    data[-1] ^= 1
    damaged.write_bytes(bytes(data))
    (out / rows[-1]["entry"]["file"]).unlink()
    # A torn last line (a driver killed while appending it) is left out too.
    with open(units / "written.jsonl", "a") as f:
        f.write('{"split": "train", "k": 99, "ent')
    written = dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    assert written.stats["kept"] < written.stats["units"]
    same_dataset(one_machine, out)


def test_a_finished_dataset_with_a_shard_gone_is_written_again_whole(
    dist_corpus, one_machine, tmp_path: Path
) -> None:
    """Killed after the manifest said complete but before the units' records were
    cleared, then a shard deleted: the rerun writes the dataset again whole (the
    folder kept no shard), never keeping shards from the records."""
    out, units = tmp_path / "ds", tmp_path / ".ds.units"
    patch = "dataset.clear_units = lambda folder: os.kill(os.getpid(), signal.SIGKILL)"
    _kill_after_shards(dist_corpus, out, 10**6, patch=patch)
    assert json.loads((out / "manifest.json").read_text())["complete"]
    assert (units / "written.jsonl").is_file()
    (out / "train" / "00002.npy").unlink()
    written = dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    assert written.manifest["complete"] and written.stats["kept"] == 0
    same_dataset(one_machine, out)
    assert not units.exists()
    # Killed the same way, then rerun untouched: returned as it is, the records cleared.
    _kill_after_shards(dist_corpus, tmp_path / "again", 10**6, patch=patch)
    assert dist.dataset.write_dataset(dist_corpus, tmp_path / "again", "gpt2", *OPTIONS, LOCAL).done_before
    assert not (tmp_path / ".again.units").exists()


def test_records_of_shards_not_their_own_are_not_kept(dist_corpus, one_machine, tmp_path: Path) -> None:
    """Lines of written.jsonl edited by hand (one naming a file outside the dataset with
    that file's true size and sha256, two with their entries swapped) are not kept: the
    rerun writes those shards again, and touches no file outside the dataset."""
    out, units = tmp_path / "ds", tmp_path / ".ds.units"
    _kill_after_shards(dist_corpus, out, 12)
    rows = [json.loads(line) for line in (units / "written.jsonl").read_text().splitlines()]
    victim = tmp_path / "victim.npy"
    victim.write_bytes((out / rows[0]["entry"]["file"]).read_bytes())
    rows[0]["entry"]["file"] = "../victim.npy"
    rows[1]["entry"], rows[2]["entry"] = rows[2]["entry"], rows[1]["entry"]
    (units / "written.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    written = dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    assert written.manifest["complete"]
    same_dataset(one_machine, out)
    assert victim.is_file()


def test_a_skeleton_naming_other_shards_fails_once_then_resumes(
    dist_corpus, one_machine, tmp_path: Path
) -> None:
    """A unit's skeleton edited to name shards it is not in, whose own shard was not
    recorded: that unit's file is gone, so the rerun stops with an error naming the
    folder and removes its records; the next rerun encodes it again."""
    out, units = tmp_path / "ds", tmp_path / ".ds.units"
    _kill_after_shards(dist_corpus, out, 12)
    log = units / "written.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    skel_path = next(p for p in sorted(units.glob("unit-*.skel")) if not p.with_suffix(".ids").exists())
    skel = json.loads(skel_path.read_text())
    own = {tuple(k) for k in skel["shards"]}
    others = [[r["split"], r["k"]] for r in rows if (r["split"], r["k"]) not in own]
    skel["shards"] = others[:1]
    skel_path.write_text(json.dumps(skel))
    log.write_text("".join(json.dumps(r) + "\n" for r in rows if (r["split"], r["k"]) not in own))
    with pytest.raises(RuntimeError, match=r"\.ds\.units: the records of an earlier run do not hold shard"):
        dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    assert not skel_path.exists()
    dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    same_dataset(one_machine, out)


def test_rows_planned_otherwise_cost_one_failed_rerun(dist_corpus, one_machine, tmp_path: Path) -> None:
    """Rows of several units' shards edited to disagree with the plan: the first rerun
    stops with an error, the next finishes (every skeleton kept went with the error)."""
    out, units = tmp_path / "ds", tmp_path / ".ds.units"
    _kill_after_shards(dist_corpus, out, 40)
    log = units / "written.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    for row in rows[::8]:
        row["entry"]["tokens"] += 1
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(RuntimeError, match="a rerun encodes them again"):
        dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    same_dataset(one_machine, out)


@pytest.mark.parametrize("planted", ["fifo", "link to a folder"])
def test_a_log_that_is_no_file_is_no_record(dist_corpus, one_machine, tmp_path: Path, planted: str) -> None:
    """written.jsonl replaced by a FIFO (whose read would block for ever) or a link to a
    folder: no shard is kept from it, the rerun finishes, and the link's folder is
    untouched."""
    import os

    out, units = tmp_path / "ds", tmp_path / ".ds.units"
    _kill_after_shards(dist_corpus, out, 12)
    log = units / "written.jsonl"
    log.unlink()
    if planted == "fifo":
        os.mkfifo(log)
    else:
        (tmp_path / "elsewhere").mkdir()
        log.symlink_to(tmp_path / "elsewhere")
    dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    same_dataset(one_machine, out)
    assert planted == "fifo" or list((tmp_path / "elsewhere").iterdir()) == []


def test_the_shards_kept_stay_recorded_across_reruns(dist_corpus, one_machine, tmp_path: Path) -> None:
    """A rerun with another cut into units (the units' records cleared) killed in turn,
    after a torn last line: the shards kept the first time are still recorded, and
    every line of the log reads back."""
    out, units = tmp_path / "ds", tmp_path / ".ds.units"
    _kill_after_shards(dist_corpus, out, 6)
    logged = (units / "written.jsonl").read_text().splitlines()
    first = {(r["split"], r["k"]) for r in map(json.loads, logged)}
    with open(units / "written.jsonl", "a") as f:
        f.write('{"split": "train", "k": 1, "ent')
    _kill_after_shards(dist_corpus, out, 2, unit_bytes=UNIT_BYTES // 2)
    lines = (units / "written.jsonl").read_text().splitlines()
    rows = {(r["split"], r["k"]) for r in map(json.loads, lines)}
    assert first < rows and len(rows) == len(first) + 2
    dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    same_dataset(one_machine, out)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(items="x"),
        lambda d: d["items"][0].__setitem__(6, d["items"][0][6] + 1),
        lambda d: d["items"][0].__setitem__(7, "not base64!"),
        lambda d: d["items"][0].__setitem__(2, "3"),
        lambda d: d.update(shards=[["train"]]),
        lambda d: d.update(unit=-1),
    ],
)
def test_a_skeleton_edited_by_hand_is_not_kept(dist_corpus, one_machine, tmp_path: Path, edit: Any) -> None:
    """A unit whose file is gone and whose skeleton is not one bpekit writes (or not
    this unit's) is encoded again, not planned from it."""
    out, units = tmp_path / "ds", tmp_path / ".ds.units"
    _kill_after_shards(dist_corpus, out, 6)
    skel = next(p for p in sorted(units.glob("unit-*.skel")) if not p.with_suffix(".ids").exists())
    data = json.loads(skel.read_text())
    edit(data)
    skel.write_text(json.dumps(data))
    done = len(list(units.glob("unit-*.json")))
    written = dist.dataset.write_dataset(dist_corpus, out, "gpt2", *OPTIONS, LOCAL)
    assert written.stats["kept"] == done - 1
    same_dataset(one_machine, out)


class Serial:
    """A backend that runs each task here, in turn: what a test patches, workers see."""

    workers, keeps_objects = 1, False

    def run(self, fn: Any, tasks: Any) -> Any:
        for k, task in enumerate(tasks):
            yield k, fn(*task)

    def close(self) -> None:
        pass


def test_another_runs_work_dir_and_dataset_are_refused(dist_corpus, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work).mkdir()
    (work / "plan.json").write_text(json.dumps({"job": "count"}))
    with pytest.raises(ValueError, match=r"work: holds the work of another run \(job"):
        dist.encode_dataset(dist_corpus[:1], tmp_path / "ds", "gpt2", backend="local", work_dir=work)
    with pytest.raises(ValueError, match=r"work: holds the work of another run \(job"):
        dist.encode_dataset(
            dist_corpus[:1], tmp_path / "ds", "gpt2", backend="local", work_dir=work, resume=False
        )
    assert (work / "plan.json").is_file()  # another run's work is not deleted
    bpekit.encode_dataset(dist_corpus[:1], tmp_path / "one", "gpt2")
    with pytest.raises(FileExistsError, match="holds a dataset written with other seed"):
        dist.encode_dataset(dist_corpus[:1], tmp_path / "one", "gpt2", backend="local", seed=1)
    with pytest.raises(TypeError, match="not a generator: write its documents to files first"):
        dist.encode_dataset((t for t in ["a"]), tmp_path / "x", "gpt2", backend="local")
    # The units' folder may not be the dataset's, nor inside it: nothing is made.
    for work_dir in (tmp_path / "ds2", tmp_path / "ds2" / "units"):
        with pytest.raises(ValueError, match="is the dataset's folder or inside it"):
            dist.encode_dataset(dist_corpus[:1], tmp_path / "ds2", "gpt2", backend="local", work_dir=work_dir)
        assert not (tmp_path / "ds2").exists()


def test_a_failure_replaying_shards_stops_the_encoding(dist_corpus, tmp_path: Path, monkeypatch) -> None:
    """The replay writes the shards while units are encoded: its failure (a full disk,
    say) is raised, the workers stop, and the units done are kept for a rerun."""
    from bpekit.distributed import dataset

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dataset, "write_shards", full_disk)
    with pytest.raises(OSError, match="No space left on device"):
        dataset.write_dataset(dist_corpus, tmp_path / "ds", "gpt2", *DEFAULTS, LOCAL, _replay=True)
    monkeypatch.undo()
    written = dist.dataset.write_dataset(dist_corpus, tmp_path / "ds", "gpt2", *DEFAULTS, LOCAL, _replay=True)
    assert written.stats["kept"] < written.stats["units"]
    assert not (tmp_path / ".ds.units").exists()


class FullDisk:
    """``_core`` as shardwrite calls it, whose shard writes fail as the core reports a
    full disk (the file named first); ``after`` real writes succeed first."""

    def __init__(self, after: int = 0) -> None:
        self.after = after

    def write_shard_file(self, path: str, *args: Any) -> Any:
        if self.after > 0:
            self.after -= 1
            return bpekit._core.write_shard_file(path, *args)
        raise OSError(f"{path}: No space left on device (os error 28)")


def test_a_failure_writing_shards_stops_the_run(dist_corpus, tmp_path: Path, monkeypatch) -> None:
    """A worker that fails to write a shard (a full disk, say): the error is raised,
    naming the shard, and the units are kept for a rerun, which finishes the dataset."""
    from bpekit.distributed import dataset, shardwrite

    monkeypatch.setattr(dataset, "open_backend", lambda *a: Serial())
    monkeypatch.setattr(shardwrite, "_core", FullDisk())
    with pytest.raises(OSError, match=r"train/00000\.npy: No space left on device"):
        dist.encode_dataset(dist_corpus, tmp_path / "ds", "gpt2", backend="local", unit_bytes=UNIT_BYTES)
    assert not [p for p in (tmp_path / "ds/train").iterdir() if p.name.endswith(".tmp")]
    monkeypatch.setattr(shardwrite, "_core", bpekit._core)
    written = dist.dataset.write_dataset(dist_corpus, tmp_path / "ds", "gpt2", *DEFAULTS, LOCAL)
    assert written.stats["kept"] == written.stats["units"]
    assert not (tmp_path / ".ds.units").exists()
    one = bpekit.encode_dataset(dist_corpus, tmp_path / "one", "gpt2")
    assert one == written.manifest


def test_a_shard_file_is_whole_or_absent(tmp_path: Path) -> None:
    """The core's shard writer: a unit file cut short is an error naming it, and leaves
    no shard (nor a temporary file); a mark id past the width is refused; pieces and
    marks land in order, hashed."""
    import hashlib

    unit = tmp_path / "u.ids"
    unit.write_bytes(bytes(range(200)))
    out = tmp_path / "s.bin"
    size, sha = bpekit._core.write_shard_file(
        str(out), b"HD", [(0, 4, 3), (-1, 9, 1)], {0: str(unit)}, 2, True
    )
    want = b"HD" + bytes(range(4, 10)) + b"\x09\x00"
    assert out.read_bytes() == want and size == len(want) and sha == hashlib.sha256(want).hexdigest()
    with pytest.raises(ValueError, match=r"u\.ids: ends before byte 202; the unit file changed"):
        bpekit._core.write_shard_file(str(tmp_path / "t.bin"), b"", [(0, 2, 100)], {0: str(unit)}, 2, False)
    with pytest.raises(ValueError, match=r"mark id 70000 does not fit 2 bytes"):
        bpekit._core.write_shard_file(str(tmp_path / "t.bin"), b"", [(-1, 70_000, 1)], {}, 2, False)
    with pytest.raises(ValueError, match=r"t\.bin: a piece of unit 5, which the shard was not given"):
        bpekit._core.write_shard_file(str(tmp_path / "t.bin"), b"", [(5, 0, 1)], {0: str(unit)}, 2, False)
    with pytest.raises(FileNotFoundError, match=r"gone\.ids"):
        bpekit._core.write_shard_file(
            str(tmp_path / "t.bin"), b"", [(0, 0, 1)], {0: str(tmp_path / "gone.ids")}, 2, False
        )
    (tmp_path / "adir").mkdir()
    with pytest.raises(IsADirectoryError, match=r"adir: Is a directory"):
        bpekit._core.write_shard_file(
            str(tmp_path / "t.bin"), b"", [(0, 0, 1)], {0: str(tmp_path / "adir")}, 2, False
        )
    far = [(0, 2**40, 1)]
    with pytest.raises(ValueError, match=r"u\.ids: ends before byte 1099511627778; the unit file changed"):
        bpekit._core.write_shard_file(str(tmp_path / "t.bin"), b"", far, {0: str(unit)}, 2, False)
    with pytest.raises(ValueError, match=r"u\.ids: a piece of 4611686018427387904 ids"):
        bpekit._core.write_shard_file(
            str(tmp_path / "t.bin"), b"", [(0, 2**63, 2**62)], {0: str(unit)}, 4, False
        )
    with pytest.raises(ValueError, match=r"unit -2: -1 marks a mark"):
        bpekit._core.write_shard_file(str(tmp_path / "t.bin"), b"", [(-2, 0, 1)], {}, 4, False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "s.bin", "u.ids"]


def test_a_bad_record_names_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n' * 30 + "not json\n" + '{"text": "fine"}\n' * 30)
    with pytest.raises(ValueError, match=r"bad\.jsonl: line 31 \(byte 51\d\)"):
        dist.encode_dataset(bad, tmp_path / "ds", "gpt2", backend="local", workers=2, unit_bytes=100)
    with pytest.warns(UserWarning, match=r"skipped 1 bad record.*line 31"):
        m = dist.encode_dataset(
            bad, tmp_path / "ds2", "gpt2", backend="local", workers=2, unit_bytes=100, bad_records="skip"
        )
    assert m["totals"]["documents"] == 60 and m["totals"]["skipped"] == 1


@pytest.mark.parametrize("width", [2, 4])
def test_a_unit_files_checksum_is_zlibs_crc32_of_its_bytes(tmp_path: Path, width: int) -> None:
    """The CRC-32 the core takes as it writes a unit file (header last, body across
    staging flushes) is the one a rerun checks with ``zlib.crc32``."""
    import zlib

    text = tmp_path / "t.txt"
    text.write_text("".join(f"doc {i} {'é' * (i % 9)} words<|endoftext|>" for i in range(60_000)))
    tok = bpekit.get_encoding("gpt2")
    unit = tmp_path / "u.ids"
    tokens, _, _, crc, _ = tok._core.encode_unit([("text", str(text), None)], str(unit), core_job(width))
    data = unit.read_bytes()
    assert tokens > 300_000 and len(data) > tokens * width  # past the 1 MiB staging buffer
    assert crc == zlib.crc32(data)


def test_a_damaged_unit_file_is_an_error_naming_it(tmp_path: Path) -> None:
    """The replay checks what it reads: a unit file cut short, or of another id width."""
    text = tmp_path / "t.txt"
    text.write_text("some words<|endoftext|>more words\n" * 200)
    tok = bpekit.get_encoding("gpt2")
    unit = tmp_path / "u.ids"
    tok._core.encode_unit([("text", str(text), None)], str(unit), core_job())
    whole = unit.read_bytes()
    unit.write_bytes(whole[:-3])
    with pytest.raises(ValueError, match=r"u\.ids: an item claims more than the file's \d+ bytes"):
        tok._core.assemble_dataset(UnitFiles([(str(unit), 0)], [True], 0), str(tmp_path / "a"), core_job())
    unit.write_bytes(whole + b"extra")
    with pytest.raises(ValueError, match=r"u\.ids: holds \d+ bytes, \d+ tokens; its header says"):
        tok._core.assemble_dataset(UnitFiles([(str(unit), 0)], [True], 0), str(tmp_path / "a2"), core_job())
    unit.write_bytes(whole)
    with pytest.raises(ValueError, match=r"u\.ids: holds 2-byte ids, not 4-byte"):
        tok._core.assemble_dataset(UnitFiles([(str(unit), 0)], [True], 0), str(tmp_path / "b"), core_job(4))
    with pytest.raises(ValueError, match=r"u\.ids: an item of input 0 of 0"):
        tok._core.assemble_dataset(UnitFiles([(str(unit), 0)], [], 0), str(tmp_path / "c"), core_job())


SPECIALS = ["<|endoftext|>", "<|x|>"]
PIECES = st.sampled_from(
    ["a", "b", " ", "  ", "\n", "\n\n", "\r\n", "1", "23", "é", "日本", "'s", "!", " .", *SPECIALS]
)


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.lists(PIECES, max_size=40).map("".join), min_size=1, max_size=3),
    unit=st.integers(1, 40),
    shard_tokens=st.integers(1, 30),
)
def test_units_of_any_size_replay_to_the_whole(tmp_path_factory, texts, unit, shard_tokens) -> None:
    """Any texts, cut into units of any size and replayed: the dataset one machine
    writes (empty files, specials at cuts and shards of one token included)."""
    d = tmp_path_factory.mktemp("h")
    paths = []
    for i, text in enumerate(texts):
        paths.append(d / f"{i}.txt")
        paths[-1].write_bytes(text.encode())
    vocab = {**{i: bytes([i]) for i in range(256)}, 256: b" a", 257: b"\n\n"}
    tok = bpekit.Tokenizer(vocab, [(b" ", b"a"), (b"\n", b"\n")], SPECIALS)
    layout = {"shard_tokens": shard_tokens, "val_fraction": 0.3, "after_each_file": "<|x|>"}
    bpekit.encode_dataset(paths, d / "one", tok, **layout)
    plan = plan_units(paths, special_tokens=SPECIALS, unit_bytes=unit)
    units = []
    for u in plan.units:
        units.append((str(d / f"u{u.index}.ids"), u.input))
        tok._core.encode_unit([u.source("text", "error")], units[-1][0], core_job())
    core = tok._core.assemble_dataset(
        UnitFiles(units, [True] * len(paths), 0),
        str(d / "two"),
        core_job(
            shard_tokens=shard_tokens, val_fraction=0.3, after_each_file=tok.encode_single_token("<|x|>")
        ),
    )
    one = json.loads((d / "one" / "manifest.json").read_text())
    assert core["documents"] == one["totals"]["documents"]
    for split in one["splits"].values():
        for shard in split["shards"]:
            for key in ("file", "index"):
                assert filecmp.cmp(d / "one" / shard[key], d / "two" / shard[key], shallow=False)
    assert sum(len(s["shards"]) for s in one["splits"].values()) == len(core["shards"])


def test_cli_encode_on_ray_writes_what_one_machine_writes(dist_corpus, ray_local, tmp_path, capsys) -> None:
    from bpekit.cli import main

    common = ["encode", *map(str, dist_corpus), "-t", "gpt2", "--shard-tokens", "9000", "--quiet"]
    assert main([*common, "--out", str(tmp_path / "one")]) == 0
    ray_run = [*common, "--out", str(tmp_path / "ray"), "--ray", "--work-dir", str(tmp_path / "w")]
    assert main(ray_run) == 0
    assert "encoded in 4 units on Ray\n" in capsys.readouterr().out
    same_dataset(tmp_path / "one", tmp_path / "ray")
    assert main(ray_run) == 0
    assert "holds this dataset already" in capsys.readouterr().out
    assert main([*common, "--out", str(tmp_path / "x.npy"), "--ray"]) == 2
    assert "--ray writes a dataset folder, and --out" in capsys.readouterr().err
    assert main([*common, "--out", str(tmp_path / "x.npy"), "--work-dir", "w"]) == 2
    assert "--work-dir keeps the units of a --ray run; give --ray too" in capsys.readouterr().err


def test_skipped_records_count_as_on_one_machine(tmp_path: Path) -> None:
    """Bad records skipped in JSON lines (by the core) and nulls in Parquet (by
    Python) add up in the manifest and the warning as one machine counts them."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    lines = [json.dumps({"doc": {"body": f"text {i} é"}}) if i % 9 else "{broken" for i in range(120)]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    texts = [None if i % 7 == 0 else f"row {i} 日本" for i in range(90)]
    docs = pa.array([{"body": t} for t in texts])
    pq.write_table(pa.table({"doc": docs}), tmp_path / "b.parquet", row_group_size=10)
    inputs = [tmp_path / "a.jsonl", tmp_path / "b.parquet"]
    options = {"text_field": "doc.body", "bad_records": "skip", "shard_tokens": 500}
    with pytest.warns(UserWarning, match="skipped 27 bad record"):
        one = bpekit.encode_dataset(inputs, tmp_path / "one", "gpt2", **options)
    with pytest.warns(UserWarning, match="skipped 27 bad record"):
        two = dist.encode_dataset(
            inputs, tmp_path / "two", "gpt2", backend="local", workers=2, unit_bytes=600, **options
        )
    assert one == two and one["totals"]["skipped"] == 27
    same_dataset(tmp_path / "one", tmp_path / "two")
    # A flat column whose name holds the dots is not the nested path: said in words.
    pq.write_table(pa.table({"doc.body": texts}), tmp_path / "c.parquet")
    with pytest.raises(ValueError, match=r"c\.parquet: text_field 'doc\.body' is read as a path"):
        bpekit.encode_dataset(tmp_path / "c.parquet", tmp_path / "three", "gpt2", text_field="doc.body")


def planned_by_workers(
    tok: Any, units: list[tuple[str, int]], is_text: list[bool], job: Job, out: Path
) -> Any:
    """The shards of ``units`` (unit files, in order) as the workers write them: the
    files' skeletons planned (``ShardPlanner``), each shard written (``write_shard``);
    returns the manifest entries and the documents."""
    from bpekit.distributed.dataset import _entry
    from bpekit.distributed.shardplan import ShardPlanner, unit_skeleton
    from bpekit.distributed.shardwrite import ShardTask, write_shard

    lay, fr = job.layout, job.framing
    width = 2 if job.dtype_name == "uint16" else 4
    names = ("train", "val") if lay.val_fraction > 0 else ("train",)
    specials = sorted({i for _, i in tok._core.special_tokens()})
    planner = ShardPlanner(
        is_text,
        names,
        lay.shard_tokens,
        width,
        lay.val_fraction,
        lay.seed,
        fr.file_bos,
        fr.file_eos,
        fr.after_each_file,
    )
    for k, (path, first) in enumerate(units):
        planner.add(k, unit_skeleton(path, first, is_text[first], width, specials))
    entries = []
    for name in names:
        (out / name).mkdir(parents=True, exist_ok=True)
    for s in planner.finish(len(is_text)):
        task = ShardTask(
            str(out),
            s.split,
            s.k,
            lay.shard_format,
            width,
            "tk",
            True,
            s.tokens,
            s.starts,
            s.pieces,
            dict(enumerate(p for p, _ in units)),
        )
        entries.append(_entry(s, lay.shard_format, write_shard(task)))
    return entries, planner.documents


RECORDS = st.lists(st.sampled_from(["", "a", " a a", "日本 1", "<|x|>b", "\n\n"]), max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.lists(PIECES, max_size=40).map("".join), min_size=1, max_size=3),
    records=st.lists(RECORDS, max_size=2),
    unit=st.integers(1, 40),
    shard_tokens=st.integers(1, 30),
    val=st.sampled_from([0.0, 0.3]),
    marks=st.tuples(*[st.sampled_from([None, 256, 257]) for _ in range(5)]),
    fmt=st.sampled_from(["npy", "bin", "llmc", "megatron", "datatrove"]),
    width=st.sampled_from([2, 4]),
)
def test_shards_planned_from_lengths_are_the_replayed_shards(
    tmp_path_factory, texts, records, unit, shard_tokens, val, marks, fmt, width
) -> None:
    """Any text files and records (empty ones included), cut into units of any size,
    with any marks, split, shard size and format: the shards the workers write from
    the plan are the bytes the replay writes, and so one machine's; their manifest
    entries too."""
    d = tmp_path_factory.mktemp("p")
    paths = []
    for i, text in enumerate(texts):
        paths.append(d / f"{i}.txt")
        paths[-1].write_bytes(text.encode())
    for i, recs in enumerate(records):
        paths.append(d / f"{i}.jsonl")
        paths[-1].write_text("".join(json.dumps({"text": r}) + "\n" for r in recs))
    vocab = {**{i: bytes([i]) for i in range(256)}, 256: b" a", 257: b"\n\n"}
    tok = bpekit.Tokenizer(vocab, [(b" ", b"a"), (b"\n", b"\n")], SPECIALS)
    rb, re_, fb, fe, after = marks
    dtype = {2: "uint16", 4: "uint32"}[width]
    layout = Layout(dtype=dtype, shard_tokens=shard_tokens, val_fraction=val, seed=5, shard_format=fmt)
    framing = Framing(record_bos=rb, record_eos=re_, file_bos=fb, file_eos=fe, after_each_file=after)
    job = Job(ReadOptions(), RunOptions(), layout, framing, tokenizer_name="tk")
    plan = plan_units(paths, special_tokens=SPECIALS, unit_bytes=unit)
    units = []
    is_text = [p.suffix == ".txt" for p in paths]
    specials = sorted({i for _, i in tok._core.special_tokens()})
    for u in plan.units:
        units.append((str(d / f"u{u.index}.ids"), u.input))
        *_, rows = tok._core.encode_unit([u.source("text", "error")], units[-1][0], job)
        # The skeleton the core makes as it writes is the one read back from the file.
        read_back = unit_skeleton(units[-1][0], u.input, is_text[u.input], width, specials)
        assert [Item(u.input, *row[1:]) for row in rows] == read_back
        assert all(row[0] == 0 for row in rows)
    core = tok._core.assemble_dataset(UnitFiles(units, is_text, 0), str(d / "one"), job)
    entries, documents = planned_by_workers(tok, units, is_text, job, d / "two")
    assert documents == core["documents"]
    want = sorted(core["shards"], key=lambda s: s["file"])
    for s in want:
        s.pop("next"), s.pop("split")
    got = sorted(entries, key=lambda s: s["file"])
    assert [(s["file"], s.keys()) for s in got] == [(s["file"], s.keys()) for s in want]
    for a, b in zip(got, want, strict=True):
        assert [(k, a[k]) for k in a if a[k] != b[k]] == [], b
    same = [p.relative_to(d / "one") for p in (d / "one").rglob("*") if p.is_file()]
    assert sorted(same) == sorted(p.relative_to(d / "two") for p in (d / "two").rglob("*") if p.is_file())
    for f in same:
        assert filecmp.cmp(d / "one" / f, d / "two" / f, shallow=False), f


@pytest.mark.parametrize("fmt", ["npy", "llmc"])
def test_replay_and_workers_write_the_same_dataset(
    dist_corpus, one_machine, tmp_path: Path, fmt: str
) -> None:
    """The replay, still used where workers cannot reach the dataset's folder, and the
    workers writing the shards give one machine's dataset."""
    layout = Layout(shard_tokens=7_000, val_fraction=0.2, seed=3, shard_format=fmt)
    options = (layout, *OPTIONS[1:])
    for replay in (True, False):
        out = tmp_path / f"ds-{replay}"
        dist.dataset.write_dataset(dist_corpus, out, "gpt2", *options, LOCAL, _replay=replay)
    same_dataset(tmp_path / "ds-True", tmp_path / "ds-False")
    if fmt == "npy":
        same_dataset(one_machine, tmp_path / "ds-False")


@pytest.mark.parametrize("left", [0, 40])
def test_a_unit_file_cut_short_under_a_shard_writer_is_named(tmp_path: Path, left: int) -> None:
    """A unit file shorter than its shard's pieces say (changed during the run): an error
    naming it, and neither the shard nor a temporary file is left."""
    from bpekit.distributed.shardwrite import ShardTask, write_shard

    unit = tmp_path / "unit-000000.ids"
    unit.write_bytes(bytes(left))
    (tmp_path / "train").mkdir()
    task = ShardTask(str(tmp_path), "train", 0, "npy", 2, "gpt2", True, 8, [0], [(0, 32, 8)], {0: str(unit)})
    with pytest.raises(ValueError, match=r"unit-000000\.ids: ends before byte 48; the unit file changed"):
        write_shard(task)
    assert list((tmp_path / "train").iterdir()) == []


def test_a_shard_writer_s_temporary_name_is_one_a_rerun_removes(tmp_path: Path) -> None:
    """A worker killed mid-write leaves its temporary file: named as the core's writers
    name theirs, so that a rerun knows it as the dataset's own."""
    from bpekit.dataset import folder
    from bpekit.distributed.shardwrite import _Whole

    out = _Whole(tmp_path / "00000.npy", hash=False)
    try:
        assert folder._OURS.fullmatch(Path(out.tmp).name)
    finally:
        out.abandon()
    assert list(tmp_path.iterdir()) == []


def test_a_shard_failing_after_others_names_it_and_a_pool_writes_all_at_once(
    dist_corpus, tmp_path: Path, monkeypatch
) -> None:
    """A shard write that fails after others were written raises the error naming that
    shard and leaves no temporary file; a backend without ``submit`` gets every shard
    in one ``run``."""
    from bpekit.distributed import dataset, shardwrite

    calls: list[str] = []

    class Counting(Serial):
        def run(self, fn: Any, tasks: Any) -> Any:
            calls.append(fn.__name__)
            return super().run(fn, tasks)

    monkeypatch.setattr(dataset, "open_backend", lambda *a: Counting())
    monkeypatch.setattr(shardwrite, "_core", FullDisk(after=1))
    options = {"backend": "local", "unit_bytes": UNIT_BYTES, **LAYOUT}
    with pytest.raises(OSError, match=r"/000\d\d\.npy: No space left on device"):
        dist.encode_dataset(dist_corpus, tmp_path / "ds", "gpt2", **options)
    assert not [p for p in (tmp_path / "ds").rglob("*") if p.name.endswith(".tmp")]
    monkeypatch.setattr(shardwrite, "_core", bpekit._core)
    calls.clear()
    dist.encode_dataset(dist_corpus, tmp_path / "ds2", "gpt2", **options)
    assert calls == ["unit_items", "write_shard"]


def test_closing_ray_results_after_ray_is_shut_down_starts_no_ray() -> None:
    """Cancelling calls Ray; on a Ray shut down meanwhile they would start a new one."""
    from bpekit.distributed.backends import _Results

    class Down:
        def is_initialized(self) -> bool:
            return False

        def cancel(self, *a: Any, **k: Any) -> None:
            raise AssertionError("a Ray call after shutdown")

    results = _Results(Down(), ["ref"])
    results.close()
    assert results.refs == {}
    del results
