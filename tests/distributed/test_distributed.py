"""Distributed counting and training equal one machine's, on every backend.

The corpus (``conftest.dist_corpus``) mixes every input kind a plan cuts differently,
planned into 16 or more units. Ray runs locally with 2 CPUs, started once for the test
session; the two-node cluster runs in a subprocess of its own, as a process joins one
Ray at a time.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _killed_driver import run_killed_driver
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

import bpekit
import bpekit.distributed as dist
from bpekit import _core
from bpekit.distributed.backends import LocalBackend
from bpekit.distributed.plan import plan_units
from bpekit.distributed.work import CountSpec, count_unit, unit_files

EOT = "<|endoftext|>"
UNIT_BYTES = 24_000


@pytest.fixture(scope="module")
def corpus(dist_corpus: list[Path]) -> list[Path]:
    return dist_corpus


@pytest.fixture(scope="module")
def one_machine(corpus: list[Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict]:
    counts = bpekit.count_pretokens(corpus, [EOT])
    path = tmp_path_factory.mktemp("single") / "counts.wc"
    counts.save(path)
    return path.read_bytes(), counts.stats


def saved(counts: bpekit.WordCounts, path: Path) -> bytes:
    counts.save(path)
    return path.read_bytes()


def same_stats(stats: dict, single: dict) -> None:
    for key in ("documents", "bytes", "skipped", "files"):
        assert stats[key] == single[key], key


def test_the_plan_has_units_of_every_kind(corpus: list[Path]) -> None:
    plan = plan_units(corpus, special_tokens=[EOT], unit_bytes=UNIT_BYTES)
    assert len(plan.units) >= 16
    kinds = {(u.format, u.range is None) for u in plan.units}
    assert kinds == {("text", False), ("text", True), ("jsonl", False), ("parquet", False)}
    # Byte ranges cover each file, in order, with no gap.
    for k, (path, fmt, size, _) in enumerate(plan.files):
        ranges = [u.range for u in plan.units if u.input == k]
        if fmt in ("text", "jsonl") and not path.endswith(".gz"):
            assert ranges[0][0] == 0 and ranges[-1][1] == size
            assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))


@pytest.mark.parametrize("workers", [1, 2])
def test_local_pool_counts_equal_one_machine(corpus, one_machine, tmp_path: Path, workers: int) -> None:
    counts = dist.count_pretokens(corpus, [EOT], backend="local", workers=workers, unit_bytes=UNIT_BYTES)
    stats = counts.stats
    assert stats["units"] >= 16
    assert saved(counts, tmp_path / "d.wc") == one_machine[0]
    same_stats(stats, one_machine[1])


def test_ray_counts_and_training_equal_one_machine(
    corpus, one_machine, ray_local, tmp_path: Path, monkeypatch
) -> None:
    from bpekit.distributed import count

    assert count.partitions(2, UNIT_BYTES) == 1 and count.partitions(64, 256 << 20) == 16
    monkeypatch.setattr(count, "MIN_PARTITION_INPUT", 1)  # two partitions, one per CPU
    counts = dist.count_pretokens(corpus, [EOT], unit_bytes=UNIT_BYTES)
    assert saved(counts, tmp_path / "d.wc") == one_machine[0]
    same_stats(counts.stats, one_machine[1])
    assert dist.train_bpe(corpus, 600, [EOT], unit_bytes=UNIT_BYTES) == bpekit.train_bpe(corpus, 600, [EOT])


def test_a_count_on_ray_without_work_dir_takes_four_units_per_worker(
    corpus, one_machine, ray_local, tmp_path: Path, monkeypatch
) -> None:
    """unit_bytes left out: a count on Ray with no work_dir is planned again in four
    units per worker (within the default and the largest size); given, or with a
    work_dir, the size is the one asked for."""
    from bpekit.distributed import count

    assert count.larger_units(12 << 30, 2) == count.MAX_KEPT_UNIT
    assert count.larger_units(1 << 30, 64) == count.DEFAULT_UNIT_BYTES
    assert count.larger_units(6 << 30, 4) == 384 << 20
    # One size for a multiple of the workers' units: owt-12G made 12 of 1 GiB, the
    # last a third of one.
    assert count.larger_units(12_177_498_515, 2) == -(-12_177_498_515 // 12)
    assert count.larger_units(13 << 30, 2) == -(-(13 << 30) // 14)
    assert count.larger_units(25 << 30, 3) == -(-(25 << 30) // 27)
    total = sum(u.size for u in plan_units(corpus, special_tokens=[EOT]).units)
    # Sizes scaled down to this corpus: units of total / 8 (2 CPUs), between the two.
    monkeypatch.setattr(count, "DEFAULT_UNIT_BYTES", total // 20)
    monkeypatch.setattr(count, "MAX_KEPT_UNIT", total // 5)
    counts = dist.count_pretokens(corpus, [EOT])
    planned = {
        n: len(plan_units(corpus, special_tokens=[EOT], unit_bytes=n).units)
        for n in (-(-total // 8), total // 20)
    }
    assert planned[-(-total // 8)] < planned[total // 20]
    assert counts.stats["units"] == planned[-(-total // 8)]
    assert saved(counts, tmp_path / "d.wc") == one_machine[0]
    asked = dist.count_pretokens(corpus, [EOT], unit_bytes=UNIT_BYTES).stats["units"]
    assert asked == len(plan_units(corpus, special_tokens=[EOT], unit_bytes=UNIT_BYTES).units)
    kept = dist.count_pretokens(corpus, [EOT], work_dir=tmp_path / "w").stats["units"]
    assert kept == planned[total // 20]


def test_on_ray_the_driver_receives_the_final_table_not_the_units(
    corpus, one_machine, ray_local, tmp_path: Path, monkeypatch
) -> None:
    """The units' counts go from the workers that made them to the reducers; what
    reaches the driver is each unit's stats and, once, the final table."""
    from bpekit.distributed import backends, count

    received: list[int] = []
    get = backends._ray_get

    def counting_get(ray: Any, ref: Any) -> Any:
        value = get(ray, ref)
        received.append(len(pickle.dumps(value)))
        return value

    monkeypatch.setattr(backends, "_ray_get", counting_get)
    # Units this small would make one partition (count.MIN_PARTITION_INPUT): two here.
    monkeypatch.setattr(count, "MIN_PARTITION_INPUT", 1)
    counts = dist.count_pretokens(corpus, [EOT], unit_bytes=UNIT_BYTES)
    assert saved(counts, tmp_path / "d.wc") == one_machine[0]
    units = counts.stats["units"]
    plan = plan_units(corpus, special_tokens=[EOT], unit_bytes=UNIT_BYTES)
    spec = CountSpec((EOT,), "gpt2")
    unit_counts = sum(len(b"".join(count_unit(u, spec).parts or [])) for u in plan.units)
    final = len(counts._to_bytes())
    assert len(received) == units + 2  # each unit's stats, each of the 2 reducers' sums
    assert sum(received) < final + 2000 * units < unit_counts


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_worker_killed_mid_unit_is_retried(
    corpus, one_machine, tmp_path: Path, backend: str, request
) -> None:
    if backend == "ray":
        request.getfixturevalue("ray_local")
    marker = tmp_path / "crashed"
    counts = dist.count_pretokens(
        corpus,
        [EOT],
        backend=backend,
        workers=2,
        unit_bytes=UNIT_BYTES,
        _crash_once=(5, str(marker)),
    )
    assert marker.exists()  # the worker did die once
    assert saved(counts, tmp_path / "d.wc") == one_machine[0]


def test_work_dir_keeps_the_units_done(corpus, one_machine, tmp_path: Path) -> None:
    work = tmp_path / "work"
    options = {"backend": "local", "workers": 2, "unit_bytes": UNIT_BYTES, "work_dir": work}
    counts = dist.count_pretokens(corpus, [EOT], **options)
    n = counts.stats["units"]
    assert counts.stats["kept"] == 0 and saved(counts, tmp_path / "1.wc") == one_machine[0]
    # The driver died before some units ended: their files are missing, or one was
    # cut short, or damaged in place (same size, other bytes).
    for i in (0, 7):
        for f in unit_files(work, i):
            f.unlink()
    wc, _ = unit_files(work, 3)
    wc.write_bytes(wc.read_bytes()[:-5])
    wc, _ = unit_files(work, 4)
    data = bytearray(wc.read_bytes())
    data[-1] ^= 1
    wc.write_bytes(bytes(data))
    # count_with_stats, the deprecated alias, still answers (counts, counts.stats).
    counts, stats = dist.count_with_stats(corpus, [EOT], **options)
    assert stats is counts.stats
    assert stats["kept"] == n - 4
    assert saved(counts, tmp_path / "2.wc") == one_machine[0]
    same_stats(stats, one_machine[1])
    # Records edited by hand are not kept: stats cut short, a partition's end moved
    # (the file's sha256 still holds); their units are counted again.
    _, record = unit_files(work, 1)
    entry = json.loads(record.read_text())
    record.write_text(json.dumps({**entry, "stats": {"documents": 1}}))
    _, record = unit_files(work, 2)
    entry = json.loads(record.read_text())
    record.write_text(json.dumps({**entry, "ends": [entry["ends"][0] + 7, *entry["ends"][1:]]}))
    counts = dist.count_pretokens(corpus, [EOT], **options)
    assert counts.stats["kept"] == n - 2 and saved(counts, tmp_path / "4.wc") == one_machine[0]
    # A rerun with another number of workers splits the counts as the first run did,
    # so it keeps every unit.
    counts = dist.count_pretokens(corpus, [EOT], **{**options, "workers": 1})
    assert counts.stats["kept"] == n and saved(counts, tmp_path / "3.wc") == one_machine[0]
    with pytest.raises(NotADirectoryError, match="is a file; work_dir names a folder"):
        dist.count_pretokens(corpus, [EOT], **{**options, "work_dir": corpus[0]})
    # Another run's folder is refused, naming what differs.
    with pytest.raises(ValueError, match=r"holds the work of another run \(options"):
        dist.count_pretokens(corpus, [EOT], **options, pattern="cl100k")


def test_a_driver_killed_mid_run_resumes(corpus, one_machine, tmp_path: Path) -> None:
    """A driver SIGKILLed after its first results; rerun, it counts only the rest."""
    work = tmp_path / "work"
    run_killed_driver(
        f"""
        import bpekit.distributed as dist
        from bpekit.distributed import count

        count.open_backend = lambda address, backend, workers: DiesAfter(2, 2)
        dist.count_pretokens({[str(p) for p in corpus]!r}, [{EOT!r}], work_dir={str(work)!r},
                             backend="local", unit_bytes={UNIT_BYTES})
        """
    )
    done = len(list(work.glob("unit-*.json")))
    counts = dist.count_pretokens(
        corpus, [EOT], work_dir=work, backend="local", workers=2, unit_bytes=UNIT_BYTES
    )
    assert 3 <= counts.stats["kept"] == done < counts.stats["units"]
    assert saved(counts, tmp_path / "d.wc") == one_machine[0]


def test_four_node_cluster_and_a_node_lost(corpus, one_machine, tmp_path: Path) -> None:
    """Counting, training and a dataset on a cluster of four nodes of one CPU each
    equal one machine's; so does a count that loses a node (its tasks and the
    partitions it kept are made again elsewhere)."""
    pytest.importorskip("ray")
    out = tmp_path / "cluster.wc"
    script = textwrap.dedent(
        f"""
        import subprocess, sys
        import ray
        from ray.cluster_utils import Cluster
        import bpekit, bpekit.distributed as dist
        from bpekit.distributed import backends

        cluster = Cluster(initialize_head=True, head_node_args={{"num_cpus": 1, "include_dashboard": False}})
        nodes = [cluster.add_node(num_cpus=1) for _ in range(3)]
        corpus = {[str(p) for p in corpus]!r}
        # address=None starts a Ray of its own for the run, though a cluster runs on
        # this machine (a bare ray.init() joins it and refuses num_cpus). In a process
        # of its own: Ray joins no other cluster once shut down in a process.
        code = (
            "import bpekit.distributed as d, sys; "
            f"c = d.count_pretokens({{corpus!r}}, [{EOT!r}], unit_bytes={UNIT_BYTES}, workers=2); "
            "c.save(sys.argv[1])"
        )
        alone = subprocess.run(
            [sys.executable, "-c", code, {str(out)!r} + ".alone"], capture_output=True, text=True
        )
        assert alone.returncode == 0, alone.stderr[-2000:]
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        assert len(ray.nodes()) == 4
        counts = dist.count_pretokens(corpus, [{EOT!r}], address=cluster.address, unit_bytes={UNIT_BYTES})
        assert counts == bpekit.WordCounts.load({str(out)!r} + ".alone")
        counts.save({str(out)!r})
        assert dist.train_bpe(corpus, 400, [{EOT!r}], unit_bytes={UNIT_BYTES}) == bpekit.train_bpe(
            corpus, 400, [{EOT!r}]
        )
        # A node lost once two units are counted, its worker killed mid-task.
        results = backends.RayBackend._results

        def losing_a_node(self, firsts):
            for n, result in enumerate(results(self, firsts)):
                yield result
                if n == 1 and len(nodes) == 3:
                    cluster.remove_node(nodes.pop(), allow_graceful=False)

        backends.RayBackend._results = losing_a_node
        again = dist.count_pretokens(corpus, [{EOT!r}], address=cluster.address, unit_bytes={UNIT_BYTES})
        backends.RayBackend._results = results
        assert len(nodes) == 2 and again == counts
        # A dataset: the units' files come back to the driver from any node.
        layout = dict(shard_tokens=9000, val_fraction=0.1)
        dist.encode_dataset(corpus, {str(tmp_path)!r} + "/ray", "gpt2", address=cluster.address,
                            unit_bytes={UNIT_BYTES}, **layout)
        bpekit.encode_dataset(corpus, {str(tmp_path)!r} + "/one", "gpt2", **layout)
        ray.shutdown()
        cluster.shutdown()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=240, env=env)
    assert run.returncode == 0, run.stderr.decode()[-12000:]
    assert out.read_bytes() == one_machine[0]
    one = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*"))
    assert one == sorted(p.relative_to(tmp_path / "ray") for p in (tmp_path / "ray").rglob("*"))
    for name in one:
        if (tmp_path / "one" / name).is_file():
            assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes(), name


def test_errors_are_the_inputs_and_are_not_retried(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n' * 3 + "not json\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl.*line 4"):
        dist.count_pretokens(bad, backend="local", workers=1, unit_bytes=10)
    with pytest.raises(TypeError, match="not a generator: write its documents to files first"):
        dist.count_pretokens((t for t in ["a", "b"]), backend="local")
    with pytest.raises(ValueError, match='backend must be "ray" or "local"'):
        dist.count_pretokens(bad, backend="spark")
    # A task that cannot be sent to a worker is an error, not a wait for ever.
    backend = LocalBackend(1)
    try:
        with pytest.raises(Exception, match="pickle"):
            list(backend.run(len, [(lambda: None,)]))
    finally:
        backend.close()
    # A file that shrank between the plan and its unit's task.
    text = tmp_path / "t.txt"
    text.write_text("some words\n" * 100)
    plan = plan_units(text, unit_bytes=300)
    text.write_text("some words\n")
    spec = CountSpec((), "gpt2")
    with pytest.raises(OSError, match=r"t\.txt: holds 11 bytes, not the bytes 0\.\.30\d planned to be read"):
        count_unit(plan.units[0], spec)


def test_word_counts_pickle_as_saved_files(tmp_path: Path) -> None:
    counts = bpekit.WordCounts([(b" low", 3), (b"er", 2)], pattern="cl100k")
    again = pickle.loads(pickle.dumps(counts))
    assert again == counts and again.pattern == counts.pattern
    assert saved(again, tmp_path / "a.wc") == saved(counts, tmp_path / "b.wc")


SPECIALS = ["<|endoftext|>", "<|x|>"]
PIECES = st.sampled_from(
    ["a", "b", " ", "  ", "\n", "\n\n", "\r\n", "1", "23", "é", "日本", "'s", "!", " .", *SPECIALS]
)


@settings(max_examples=60, deadline=None)
@given(text=st.lists(PIECES, max_size=60).map("".join), unit=st.integers(1, 40), parts=st.integers(1, 5))
def test_units_add_up_to_the_whole(tmp_path_factory, text: str, unit: int, parts: int) -> None:
    """Any text, planned into units of any size, their counts split into any number of
    partitions: each partition's sum over the units, appended, is the whole file's
    counts, byte for byte once saved; the units' bytes add up to its bytes."""
    folder = tmp_path_factory.mktemp("h")
    path = folder / "t.txt"
    path.write_bytes(text.encode())
    spec = CountSpec(tuple(SPECIALS), "gpt2", parts=parts)
    plan = plan_units(path, special_tokens=SPECIALS, unit_bytes=unit)
    sums = [_core.CountsSum() for _ in range(parts)]
    read = 0
    for u in plan.units:
        result = count_unit(u, spec)
        assert result.parts is not None and len(result.parts) == parts
        for p, data in enumerate(result.parts):
            sums[p].add_bytes(data)
        read += result.stats["bytes"]
    total = bpekit.WordCounts._from_partitions(
        parts, reversed([(p, s.to_bytes()) for p, s in enumerate(sums)])
    )
    whole = bpekit.count_pretokens(path, SPECIALS)
    assert saved(total, folder / "a.wc") == saved(whole, folder / "b.wc")
    assert read == len(text.encode())


def test_partitions_are_checked_when_appended() -> None:
    counts = bpekit.WordCounts([(b" low", 3), (b"er", 2), (b" new", 1), (b"est", 4)])
    parts = counts._partition_bytes(2)
    with pytest.raises(ValueError, match="partition 0 of 2: given twice"):
        bpekit.WordCounts._from_partitions(2, [(0, parts[0]), (0, parts[0])])
    with pytest.raises(ValueError, match="belongs to another partition"):
        bpekit.WordCounts._from_partitions(2, [(1, parts[0])])  # both partitions hold words
    with pytest.raises(ValueError, match="partition 1 of 2 was never given"):
        bpekit.WordCounts._from_partitions(2, [(0, parts[0])])
    assert bpekit.WordCounts._from_partitions(2, [(1, parts[1]), (0, parts[0])]) == counts


def test_cli_train_on_ray_writes_what_one_machine_writes(corpus, ray_local, tmp_path: Path, capsys) -> None:
    from bpekit.cli import main

    common = ["train", *map(str, corpus), "--vocab-size", "400", "--special-token", EOT, "--quiet"]
    assert main([*common, "--out", str(tmp_path / "one")]) == 0
    ray_run = [*common, "--out", str(tmp_path / "ray"), "--ray", "--work-dir", str(tmp_path / "w")]
    assert main(ray_run) == 0
    assert "counted in 4 units on Ray\n" in capsys.readouterr().out
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()
    assert main(ray_run) == 0  # a rerun finds every unit done
    assert "counted in 4 units on Ray, 4 kept from an earlier run" in capsys.readouterr().out
    assert main([*common, "--out", str(tmp_path / "x"), "--work-dir", str(tmp_path / "w")]) == 2
    assert "--work-dir keeps the units of a --ray run; give --ray too" in capsys.readouterr().err


def test_a_script_without_a_main_guard_runs_once(corpus, tmp_path: Path) -> None:
    """The local workers are no spawned copies of the driver: a script calling the API
    at its top level (no ``if __name__ == "__main__":``) runs once, not once per worker."""
    script = tmp_path / "script.py"
    script.write_text(
        "import bpekit.distributed as dist\n"
        f"counts = dist.count_pretokens({str(corpus[0])!r}, backend='local', workers=2, unit_bytes=30000)\n"
        "print('counted', len(counts))\n"
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("counted") == 1


def test_clearing_units_removes_the_temporary_files_of_stopped_workers(tmp_path: Path) -> None:
    # A worker stopped while writing a unit left ".unit-N.ids.X.tmp", and the folder
    # stayed after a rerun had finished.
    from bpekit.distributed.work import clear_units

    work = tmp_path / ".ds.units"
    work.mkdir()
    names = ("unit-000001.ids", "unit-000001.json", ".unit-000002.ids.d20bb5bd1fce8384.tmp", "plan.json")
    # And a dataset's records of its shards written and of the units whose files went.
    names += ("written.jsonl", "unit-000004.skel", ".unit-000005.skel.0123456789abcdef.tmp")
    names += (".written.jsonl.k2j3h4g5.tmp", ".plan.json.a_b1c2d3.tmp")
    for name in names:
        (work / name).write_bytes(b"x")
    clear_units(work)
    assert not work.exists()
    work.mkdir()
    (work / "notes.txt").write_bytes(b"the user's")
    (work / ".unit-000003.ids.ab.tmp").write_bytes(b"x")
    clear_units(work)
    assert [p.name for p in work.iterdir()] == ["notes.txt"]


def test_a_workers_cache_is_sized_for_its_share_of_the_units() -> None:
    """Each worker's piece cache is made for the text it is likely to encode over the
    run (the units to encode over the workers, rounded up), not for one unit."""
    from bpekit.distributed.plan import Unit
    from bpekit.distributed.work import worker_share

    units = [Unit(k, 0, "a.txt", "text", (0, 1), size) for k, size in enumerate([300, 300, 301])]
    assert worker_share(units, 2) == 451
    assert worker_share(units, 1) == 901
    assert worker_share(units[:1], 8) == 38
    assert worker_share([], 4) == 0


@pytest.mark.parametrize("replay", [False, True])
def test_every_encode_task_is_told_its_workers_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay: bool
) -> None:
    """The spec each unit's task gets carries ``worker_share`` of the units over the
    runner's workers, whether the workers write the shards or the driver replays."""
    from bpekit.distributed import dataset as dist_dataset
    from bpekit.distributed.work import EncodeSpec

    class Told(Exception):
        pass

    specs: list[EncodeSpec] = []

    class Runner:
        workers = 3

        def run(self, fn: Any, tasks: list[tuple[Any, ...]]) -> Any:
            specs.extend(t[1] for t in tasks)
            raise Told

        def close(self) -> None:
            pass

    monkeypatch.setattr(dist_dataset, "open_backend", lambda *a, **k: Runner())
    text = tmp_path / "in.txt"
    text.write_text("some words here\n" * 20_000)
    with pytest.raises(Told):
        if replay:
            from bpekit.dataset import Layout, Marks
            from bpekit.options import DistributedOptions, ReadOptions, RunOptions

            spread = DistributedOptions(backend="local", workers=2, unit_bytes=65_536)
            dist_dataset.write_dataset(
                text,
                tmp_path / "ds",
                "gpt2",
                Layout(),
                Marks(),
                ReadOptions(),
                RunOptions(num_threads=1),
                spread,
                _replay=True,
            )
        else:
            dist.encode_dataset(text, tmp_path / "ds", "gpt2", backend="local", workers=2, unit_bytes=65_536)
    assert len(specs) > 3
    assert {s.table_bytes for s in specs} == {-(-text.stat().st_size // 3)}
