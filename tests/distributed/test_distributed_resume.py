"""A distributed dataset's rerun after its driver died goes on from what the run left:
the unit files kept, the shards its workers recorded as written and the units whose
files went into those; whatever its records say, the result is one machine's dataset,
byte for byte, and no file outside the dataset or its units' folder is touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _dist_dataset import LAYOUT, LOCAL, OPTIONS, UNIT_BYTES, same_dataset
from _killed_driver import run_killed_driver

import bpekit
import bpekit.distributed as dist
from bpekit.distributed.work import unit_files
from bpekit.options import DistributedOptions


@pytest.fixture(scope="module")
def one_machine(dist_corpus: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single") / "ds"
    bpekit.encode_dataset(dist_corpus, out, "gpt2", **LAYOUT)
    return out


def test_a_driver_killed_mid_run_resumes(dist_corpus, one_machine, tmp_path: Path) -> None:
    """A driver SIGKILLed after its third unit: a rerun keeps the units it finished
    (in ``.ds.units`` beside the dataset, work_dir not given) and encodes the rest."""
    out = tmp_path / "ds"
    run_killed_driver(
        f"""
        import bpekit.distributed as dist
        from bpekit.distributed import dataset

        dataset.open_backend = lambda address, backend, workers, here=False: DiesAfter(2, 2)
        dist.encode_dataset({[str(p) for p in dist_corpus]!r}, {str(out)!r}, "gpt2",
                            backend="local", unit_bytes={UNIT_BYTES}, **{LAYOUT!r})
        """
    )
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
    run_killed_driver(
        f"""
        import bpekit.distributed as dist
        from bpekit.distributed import dataset

        dataset.open_backend = (
            lambda address, backend, workers, here=False: DiesAfter(2, {shards - 1}, "write_shard")
        )
        {patch}
        dist.encode_dataset({[str(p) for p in dist_corpus]!r}, {str(out)!r}, "gpt2", backend="local",
                            workers=2, unit_bytes={unit_bytes}, **{LAYOUT!r})
        """
    )


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
