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
from pathlib import Path
from typing import Any

import pytest
from _dist_dataset import DEFAULTS, LAYOUT, LOCAL, OPTIONS, UNIT_BYTES, same_dataset
from hypothesis import given, settings
from hypothesis import strategies as st

import bpekit
import bpekit.distributed as dist
from bpekit.dataset import Layout
from bpekit.dataset.job import Framing, Job
from bpekit.distributed.dataset import UnitFiles
from bpekit.distributed.plan import plan_units
from bpekit.distributed.shardplan import Item, unit_skeleton
from bpekit.options import DistributedOptions, ReadOptions, RunOptions


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
