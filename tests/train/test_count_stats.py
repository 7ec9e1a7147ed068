"""Counting returns one result that says what was read: ``WordCounts.stats``, set by the
run (documents, skipped records, bytes of text, files), kept through pickling and gone
where no one run made the counts; and the options as typed objects, checked before any
work, give the same counts as the keywords."""

from __future__ import annotations

import gzip
import pickle
import warnings
from pathlib import Path

import pytest

import bpekit
from bpekit.options import ReadOptions, RunOptions
from bpekit.sources import SkippedRecordsWarning
from bpekit.training import count_inputs, count_with_stats

EOT = "<|endoftext|>"


def test_the_counts_carry_what_the_run_read(tmp_path: Path) -> None:
    text = tmp_path / "a.txt.gz"
    text.write_bytes(gzip.compress(f"low lower{EOT}newest".encode()))
    records = tmp_path / "b.jsonl"
    records.write_text('{"text": "low"}\nnot json\n{"text": "wide"}\n')
    with pytest.warns(SkippedRecordsWarning, match="skipped 1 bad record"):
        counts = bpekit.count_pretokens([text, records], [EOT], bad_records="skip")
    stats = counts.stats
    assert stats is not None and stats.pop("skipped_examples")[0].startswith(f"{records}: line 2 ")
    assert stats == {
        "documents": 3,
        "skipped": 1,
        "bytes": len(f"low lower{EOT}newest") + len("low") + len("wide"),
        "files": 2,
    }


def test_stats_travel_with_pickled_counts_and_leave_added_ones(tmp_path: Path) -> None:
    counts = bpekit.count_pretokens(iter(["low lower", "low"]))
    again = pickle.loads(pickle.dumps(counts))
    assert again == counts and again.stats == counts.stats == {
        "documents": 2,
        "skipped": 0,
        "skipped_examples": [],
        "bytes": 12,
        "files": 0,
    }
    # Counts no one run read have no stats: made, loaded, added, updated.
    assert bpekit.WordCounts([(b"low", 1)]).stats is None
    assert (counts + counts).stats is None
    counts.save(tmp_path / "c.wc")
    assert bpekit.WordCounts.load(tmp_path / "c.wc").stats is None
    again.update(counts)
    assert again.stats is None


def test_count_with_stats_is_the_counts_and_their_stats_without_a_warning() -> None:
    docs = ["low", None, "lower"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counts, stats = count_with_stats(iter(docs), bad_records="skip")
    assert stats is counts.stats and stats["skipped"] == 1
    with pytest.warns(SkippedRecordsWarning):
        assert bpekit.count_pretokens(iter(docs), bad_records="skip") == counts
    assert count_with_stats.__doc__ is not None and "Deprecated" in count_with_stats.__doc__


def test_the_typed_options_count_as_the_keywords(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"meta": {"body": "low lower"}}\n{"meta": {"body": "lowest \\ud800"}}\n')
    read = ReadOptions(text_field="meta.body", errors="replace")
    counts = count_inputs(
        path, [EOT], pattern="gpt2", read=read, run=RunOptions(num_threads=1, chunk_size=64)
    )
    assert counts == bpekit.count_pretokens(path, [EOT], text_field="meta.body", errors="replace")
    assert counts.stats is not None and counts.stats["documents"] == 2


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"format": "csv"}, ValueError, 'format must be "text", "jsonl", "parquet" or None'),
        ({"errors": "skip"}, ValueError, 'errors must be "strict", "replace" or "ignore"'),
        ({"chunk_size": -1}, ValueError, "chunk_size must be 0 (automatic) or a positive number"),
        ({"num_threads": 0}, ValueError, "num_threads must be between 1 and 1024, got 0"),
        ({"bad_records": "ignore"}, ValueError, 'bad_records must be "error" or "skip"'),
    ],
)
def test_options_are_checked_before_any_input_is_read(
    tmp_path: Path, options: dict[str, object], error: type, message: str
) -> None:
    # A path that does not exist: the options' error comes first.
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        bpekit.count_pretokens(tmp_path / "missing.txt", **options)  # type: ignore[arg-type]
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        bpekit.train_bpe(tmp_path / "missing.txt", 300, **options)  # type: ignore[arg-type]


def test_the_alias_signature_says_it_returns_a_pair() -> None:
    import inspect

    import bpekit.distributed
    import bpekit.training

    for module in (bpekit.training, bpekit.distributed):
        sig = inspect.signature(module.count_with_stats)
        assert sig.return_annotation == "tuple[WordCounts, dict[str, Any]]"
        assert list(sig.parameters) == list(inspect.signature(module.count_pretokens).parameters)
