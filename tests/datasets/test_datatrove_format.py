"""``shard_format="datatrove"``: each shard a ``.ds`` with ``.ds.index`` and
``.ds.metadata``, byte for byte what datatrove's ``TokenizedFile`` writes for the same
ids; read here from the format's specification, with datatrove's own writer and readers
where it is installed (``make test`` installs it), and by ``TokenDataset``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _trainer_formats import (
    EOT,
    expected_documents,
    interleaves,
    parse_datatrove,
    parse_megatron,
    split_documents,
    write_corpus,
)
from conftest import bpekit_encoding

import bpekit
from bpekit.dataset import TokenDataset

NEEDS_DATATROVE = "datatrove is not installed (pip install 'datatrove==0.9.0', as make test does)"


def datatrove_docs(path: Path) -> list[list[int]]:
    return parse_datatrove(path)["documents"]


@pytest.mark.parametrize(
    ("name", "width", "eos"),
    [("gpt2", 2, True), ("gpt2", 2, False), ("o200k_base", 4, True)],
    ids=["uint16-eos", "uint16-no-eos", "uint32-eos"],
)
def test_shards_read_back_as_the_encoded_documents(tmp_path: Path, name: str, width: int, eos: bool) -> None:
    tok = bpekit_encoding(name)
    corpus, texts = write_corpus(tmp_path)
    root = tmp_path / "ds"
    options: dict[str, Any] = {
        "shard_tokens": 300,
        "val_fraction": 0.25,
        "seed": 3,
        "eos": EOT if eos else None,
    }
    m = bpekit.encode_dataset(corpus, root, tok, shard_format="datatrove", **options)
    assert m["format"] == "datatrove" and m["dtype"] == ("uint16" if width == 2 else "uint32")
    assert any(s["continues"] for s in m["splits"]["train"]["shards"])
    for split in m["splits"].values():
        for shard in split["shards"]:
            d = parse_datatrove(root / shard["file"])
            assert shard["file"].endswith(".ds")
            assert (d["name"], d["width"], d["count"]) == (name, width, shard["tokens"])
            assert len(d["ids"]) == shard["tokens"] and d["ends"][-1] == shard["tokens"]
            assert len(d["ends"]) == shard["documents"] + shard["continues"]
            assert d["ends"] == sorted(d["ends"])
            names = [f["file"] for f in shard["trainer_files"]]
            assert names == [shard["file"] + ".index", shard["file"] + ".metadata"]
    expected = expected_documents(tok, texts, eos)
    train, val = (split_documents(root, s, datatrove_docs) for s in ("train", "val"))
    assert val and interleaves(expected, train, val)
    for split, docs in (("train", train), ("val", val)):
        ds = TokenDataset(root, split)
        ds.verify()
        assert [d.tolist() for d in ds] == docs
        x, y = ds.get_batch(4, 16, rng=2)
        assert (np.asarray(x)[:, 1:] == np.asarray(y)[:, :-1]).all()


def test_metadata_counts_as_humanize_does(tmp_path: Path) -> None:
    humanize = pytest.importorskip("humanize", reason="humanize (a datatrove dependency) is not installed")
    tok = bpekit_encoding("gpt2")
    corpus, _ = write_corpus(tmp_path, n=200, seed=5)
    m = bpekit.encode_dataset(corpus, tmp_path / "ds", tok, shard_format="datatrove", shard_tokens=1234)
    for shard in m["splits"]["train"]["shards"]:
        d = parse_datatrove(tmp_path / "ds" / shard["file"])
        assert d["human"] == humanize.metric(shard["tokens"], unit="T")


def test_bytes_are_datatrove_s_tokenized_file(tmp_path: Path) -> None:
    """Each shard's three files equal those datatrove's ``TokenizedFile`` writes (with its
    final metadata) for the shard's documents."""
    pytest.importorskip("datatrove", reason=NEEDS_DATATROVE)
    from datatrove.pipeline.tokens.tokenizer import TokenizedFile

    for name, width in (("gpt2", 2), ("o200k_base", 4)):
        tok = bpekit_encoding(name)
        corpus, _ = write_corpus(tmp_path, seed=width)
        root = tmp_path / f"ds-{name}"
        m = bpekit.encode_dataset(corpus, root, tok, shard_format="datatrove", shard_tokens=300, eos=None)
        theirs = tmp_path / f"theirs-{name}"
        for shard in m["splits"]["train"]["shards"]:
            docs = datatrove_docs(root / shard["file"])
            out = TokenizedFile(
                str(theirs),
                shard["file"],
                tokenizer_name_or_path=name,
                save_final_metadata=True,
                token_size=width,
            )
            for doc in docs:
                out.write(doc, None)
            out.close()
            for suffix in ("", ".index", ".metadata"):
                ours = (root / (shard["file"] + suffix)).read_bytes()
                assert ours == (theirs / (shard["file"] + suffix)).read_bytes(), shard["file"] + suffix


def test_datatrove_s_merger_reads_the_split(tmp_path: Path) -> None:
    """datatrove's ``DocumentTokenizerMerger`` (unshuffled) takes a split's folder as its
    input: its metadata, indexes and ids, into one file of the same documents."""
    pytest.importorskip("datatrove", reason=NEEDS_DATATROVE)
    from datatrove.pipeline.tokens.merger import DocumentTokenizerMerger, get_data_reader, load_doc_ends

    tok = bpekit_encoding("gpt2")
    corpus, texts = write_corpus(tmp_path)
    root = tmp_path / "ds"
    bpekit.encode_dataset(corpus, root, tok, shard_format="datatrove", shard_tokens=300)
    merged = tmp_path / "merged"
    DocumentTokenizerMerger(str(root / "train"), str(merged), "all", shuffle=False, progress=False).run()
    ends = load_doc_ends(open(merged / "000_all.ds.index", "rb"))
    docs = [
        np.frombuffer(b, "<u2").tolist() for b in get_data_reader(open(merged / "000_all.ds", "rb"), ends, 2)
    ]
    # A document continued across shards is a document of each shard for datatrove.
    ours = [
        d.tolist()
        for k in range(len(list((root / "train").glob("*.ds"))))
        for d in TokenDataset(root / f"train/{k:05d}.ds")
    ]
    assert docs == ours
    assert [t for d in docs for t in d] == [t for d in expected_documents(tok, texts, True) for t in d]
    assert (merged / "all.ds.metadata").read_text().split("\n")[0] == "gpt2|2"


def test_datatrove_s_folder_dataset(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is not installed (DatatroveFolderDataset is a torch Dataset)")
    pytest.importorskip("datatrove", reason=NEEDS_DATATROVE)
    from datatrove.utils.dataset import DatatroveFolderDataset

    tok = bpekit_encoding("gpt2")
    corpus, _ = write_corpus(tmp_path)
    root = tmp_path / "ds"
    bpekit.encode_dataset(corpus, root, tok, shard_format="datatrove", shard_tokens=300)
    seq = 15
    ds = DatatroveFolderDataset(str(root / "train"), seq_len=seq, token_size=2)
    ours = TokenDataset(root)
    want = [
        ours.shard(k)[i * (seq + 1) : (i + 1) * (seq + 1)].tolist()
        for k in range(len(ours.shards))
        for i in range(ours.shards[k].tokens // (seq + 1))
    ]
    assert [ds[i]["input_ids"].tolist() for i in range(len(ds))] == want


def test_single_file_by_path_and_load_tokens(tmp_path: Path) -> None:
    tok = bpekit_encoding("o200k_base")
    corpus, texts = write_corpus(tmp_path, n=20)
    bpekit.encode_dataset(corpus, tmp_path / "ds", tok, shard_format="datatrove")
    path = tmp_path / "ds/train/00000.ds"
    ds = TokenDataset(path)
    assert ds.format == "datatrove" and ds.dtype == np.uint32
    assert [d.tolist() for d in ds] == expected_documents(tok, texts, True)
    tokens = bpekit.load_tokens(path)
    assert tokens.dtype == np.uint32 and len(tokens) == len(ds)
    # Without its metadata the token size is given, as datatrove's readers take it.
    (tmp_path / "ds/train/00000.ds.metadata").unlink()
    assert [d.tolist() for d in TokenDataset(path, dtype="uint32")] == [d.tolist() for d in ds]


def test_a_damaged_index_is_named(tmp_path: Path) -> None:
    tok = bpekit_encoding("gpt2")
    corpus, _ = write_corpus(tmp_path, n=20)
    bpekit.encode_dataset(corpus, tmp_path / "ds", tok, shard_format="datatrove")
    index = tmp_path / "ds/train/00000.ds.index"
    index.write_bytes(index.read_bytes()[:-8])
    with pytest.raises(ValueError, match=r"00000\.ds\.index: .* not the .*"):
        TokenDataset(tmp_path / "ds")
    with pytest.raises(ValueError, match=r"00000\.ds\.index: not the datatrove index"):
        TokenDataset(tmp_path / "ds/train/00000.ds")


def test_an_index_end_past_the_ids_is_refused(tmp_path: Path) -> None:
    # An end of 2**63 or more once wrapped negative in the check and gave documents of
    # ids the file does not hold.
    ds = tmp_path / "x.ds"
    ds.write_bytes(np.arange(10, dtype="<u2").tobytes())
    for ends in ([2**64 - 1, 6, 10], [12, 6, 10]):
        (tmp_path / "x.ds.index").write_bytes(np.array(ends, dtype="<u8").tobytes())
        with pytest.raises(ValueError, match=r"x\.ds\.index: not the datatrove index of 10 ids"):
            TokenDataset(ds)


def test_megatron_pairs_are_datatrove_s_megatron_writer_s(tmp_path: Path) -> None:
    """datatrove also writes Megatron's format (``MegatronTokenizedFile``, one sequence
    a document): for documents that all have ids, its pair equals bpekit's."""
    pytest.importorskip("datatrove", reason=NEEDS_DATATROVE)
    from datatrove.pipeline.tokens.megatron_tokenizer import MegatronTokenizedFile

    for name, width in (("gpt2", 2), ("o200k_base", 4)):
        tok = bpekit_encoding(name)
        corpus, _ = write_corpus(tmp_path, seed=width)
        root = tmp_path / f"ds-{name}"
        m = bpekit.encode_dataset(corpus, root, tok, shard_format="megatron", shard_tokens=300)
        for shard in m["splits"]["train"]["shards"]:
            prefix = shard["file"].removesuffix(".bin")
            out = MegatronTokenizedFile(str(tmp_path / f"theirs-{name}"), prefix, token_size=width)
            for seq in parse_megatron(root / prefix)["sequences"]:
                out.write(seq)
            out.close()
            for suffix in (".bin", ".idx"):
                assert (root / (prefix + suffix)).read_bytes() == (
                    tmp_path / f"theirs-{name}" / (prefix + suffix)
                ).read_bytes()


def test_the_cli_writes_datatrove_shards(tmp_path: Path) -> None:
    from bpekit.cli import main

    tok = bpekit_encoding("gpt2")
    corpus, texts = write_corpus(tmp_path, n=30)
    out = tmp_path / "ds"
    assert (
        main(
            [
                "encode",
                str(corpus),
                "-t",
                "gpt2",
                "--out",
                str(out),
                "--shard-format",
                "datatrove",
                "--shard-tokens",
                "300",
                "--quiet",
            ]
        )
        == 0
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "datatrove"
    assert split_documents(out, "train", datatrove_docs) == expected_documents(tok, texts, True)
