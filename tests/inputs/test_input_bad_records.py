"""Records that hold no document: a missing field names the fields the record has and
the option that picks one; a run whose every record was bad is an error, whatever
``bad_records`` says; the command line words the advice in its flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _shared_data import bpekit_encoding

import bpekit
from bpekit.cli import main


def records(tmp_path: Path, n: int = 1000, name: str = "d.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(
        "".join(json.dumps({"txt": f"doc {i}", "id": i}) + "\n" for i in range(n)), encoding="utf-8"
    )
    return path


def test_a_missing_field_lists_the_fields_of_the_record(tmp_path: Path) -> None:
    # It said only "no field 'text'; pass bad_records="skip" (--bad-records skip)".
    path = records(tmp_path)
    with pytest.raises(ValueError) as e:
        bpekit.count_pretokens(path)
    assert str(e.value) == (
        f'{path}: line 1 (byte 0): no field \'text\' (the record has "txt", "id"); pass text_field= naming '
        'the field that holds the text, or bad_records="skip" to leave out records without it'
    )
    nested = tmp_path / "n.jsonl"
    nested.write_text(json.dumps({"meta": {"title": "t", "lang": "en"}}) + "\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"no field 'meta\.body' \('meta' has \"title\", \"lang\"\); pass text_field="
    ):
        bpekit.count_pretokens(nested, text_field="meta.body")
    empty = tmp_path / "e.jsonl"
    empty.write_text("{}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"no field 'text' \(the record has no fields\)"):
        bpekit.count_pretokens(empty)
    # The field it names works.
    assert bpekit.count_pretokens(path, text_field="txt").to_dict()[b"doc"] == 1000


def test_skipping_every_record_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    # Following the advice gave 0 tokens, "skipped 1,000 bad records" and success.
    path = records(tmp_path)
    tok = bpekit_encoding("gpt2")
    message = (
        f"every record was bad (1,000 skipped; the first: {path}: line 1 (byte 0): no field 'text' (the "
        'record has "txt", "id")), so no document was read; fix the records, or how they are read '
        "(text_field=, format=)"
    )
    with pytest.raises(ValueError) as e:
        bpekit.encode_file(path, tmp_path / "o.npy", tok, bad_records="skip")
    assert str(e.value) == message
    assert not (tmp_path / "o.npy").exists()
    with pytest.raises(ValueError) as e:
        bpekit.encode_dataset(path, tmp_path / "ds", tok, bad_records="skip")
    assert str(e.value) == message
    manifest = tmp_path / "ds" / "manifest.json"  # a run that failed: resumable, not complete
    assert not manifest.exists() or not json.loads(manifest.read_text(encoding="utf-8"))["complete"]
    for run in (bpekit.count_pretokens, lambda p, **kw: bpekit.train_bpe(p, 300, ["<|endoftext|>"], **kw)):
        with pytest.raises(ValueError) as e:
            run(path, bad_records="skip")
        assert str(e.value) == message
    # Some records read: skipping the bad ones is what was asked for.
    (tmp_path / "mixed.jsonl").write_text(
        path.read_text(encoding="utf-8") + json.dumps({"text": "kept"}) + "\n", encoding="utf-8"
    )
    with pytest.warns(UserWarning, match="skipped 1,000 bad record"):
        assert bpekit.count_pretokens(tmp_path / "mixed.jsonl", bad_records="skip").to_dict() == {b"kept": 1}
    # A text file among the inputs is a document read.
    (tmp_path / "t.txt").write_text("plain\n", encoding="utf-8")
    with pytest.warns(UserWarning, match="skipped 1,000 bad record"):
        assert bpekit.count_pretokens([path, tmp_path / "t.txt"], bad_records="skip").to_dict()[b"plain"] == 1


@pytest.mark.parametrize("command", ["encode", "train"])
def test_the_command_line_names_its_flags_and_fails_when_all_was_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = records(tmp_path)
    out = ["-t", "gpt2", "-o", str(tmp_path / "o.npy")] if command == "encode" else ["--vocab-size", "300"]
    if command == "train":
        out += ["--out", str(tmp_path / "tok")]
    assert main([command, str(path), *out, "--text-field", "text", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f'bpekit {command}: error: {path}: line 1 (byte 0): no field \'text\' (the record has "txt", "id"); '
        "pass --text-field naming the field that holds the text, or --bad-records skip to leave out records "
        "without it"
    )
    assert main([command, str(path), *out, "--bad-records", "skip", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"bpekit {command}: error: every record was bad (1,000 skipped; the first: {path}")
    assert err.endswith(
        "so no document was read; fix the records, or how they are read (--text-field, --format)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]
    # Other bad records: the advice is the flag.
    (tmp_path / "bad.jsonl").write_text("not json\n", encoding="utf-8")
    assert main([command, str(tmp_path / "bad.jsonl"), *out, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "line 1 (byte 1): not JSON (expected ident); pass --bad-records skip to leave such records out"
    )


def test_a_distributed_run_that_skipped_every_record_is_an_error(tmp_path: Path) -> None:
    """Units may skip all of theirs; the run as a whole may not."""
    import bpekit.distributed as dist

    path = records(tmp_path, 300)
    with pytest.raises(ValueError, match=r"^every record was bad \(300 skipped; the first: "):
        dist.count_pretokens(path, backend="local", workers=1, unit_bytes=4096, bad_records="skip")
    tok = bpekit_encoding("gpt2")
    with pytest.raises(ValueError, match=r"^every record was bad \(300 skipped; the first: "):
        dist.encode_dataset(path, tmp_path / "ds", tok, backend="local", workers=1, bad_records="skip")
    manifest = tmp_path / "ds" / "manifest.json"
    assert not manifest.exists() or not json.loads(manifest.read_text(encoding="utf-8"))["complete"]


def test_a_parquet_column_of_nulls_only_is_an_error_for_every_job(tmp_path: Path) -> None:
    # Nulls were left out in Python, before the core counted anything: encode_file and
    # encode_dataset wrote an empty output and succeeded.
    pa = pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) is not installed")
    import pyarrow.parquet as pq

    path = tmp_path / "n.parquet"
    pq.write_table(pa.table({"text": pa.nulls(5, pa.string()), "id": list(range(5))}), path, row_group_size=2)
    tok = bpekit_encoding("gpt2")
    # Which null is named first depends on which thread reports first.
    null = rf"{path}: row group \d, row \d: field 'text' is null"
    want = rf"every record was bad \(5 skipped; the first: {null}\)"
    with pytest.raises(ValueError, match=want):
        bpekit.encode_file(path, tmp_path / "o.npy", tok, bad_records="skip")
    assert not (tmp_path / "o.npy").exists()
    with pytest.raises(ValueError, match=want):
        bpekit.encode_dataset(path, tmp_path / "ds", tok, bad_records="skip")
    manifest = tmp_path / "ds" / "manifest.json"  # a run that failed: resumable, not complete
    assert not manifest.exists() or not json.loads(manifest.read_text(encoding="utf-8"))["complete"]
    with pytest.raises(ValueError, match=want):
        bpekit.count_pretokens(path, bad_records="skip")
    # Some rows of text: the nulls are skipped and counted by the core, as any bad record.
    some = tmp_path / "s.parquet"
    pq.write_table(pa.table({"text": ["one", None, "two", None]}), some, row_group_size=3)
    skipped = r"skipped 2 bad record\(s\).*row group 0, row 1: field 'text' is null"
    with pytest.warns(UserWarning, match=skipped):
        n = bpekit.encode_file(some, tmp_path / "s.npy", tok, bad_records="skip")
    assert n == len(tok.encode("one")) + len(tok.encode("two")) + 2
