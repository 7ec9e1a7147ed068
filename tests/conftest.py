"""Shared test setup: the helpers of ``_shared_data`` (the offline data, tiktoken built
from it), and ``$BPEKIT_ENCODINGS`` pointing at the shared rank files, set here at
import so that every test and every subprocess a test starts finds the encodings; the
distributed tests' corpus and their Ray, started once for the test session; the
SentencePiece-style ``tokenizer.json`` files built once (``_sp_models``)."""

from __future__ import annotations

import gzip
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _shared_data import (
    DATA,
    ROOT,
    bpekit_encoding,
    data_path,
    read_text_file,
    tiktoken_encoding,
    use_shared_encodings,
)

__all__ = ["DATA", "ROOT", "bpekit_encoding", "data_path", "read_text_file", "tiktoken_encoding"]

use_shared_encodings()


@pytest.fixture(scope="session")
def sp_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The SentencePiece-style files of ``_sp_models``, by name (skipped without
    ``sentencepiece``, ``tokenizers`` or ``transformers``). ``BPEKIT_SP_MODELS``: a
    folder where ``python tests/_sp_models.py FOLDER`` built them already (transformers
    5's tokenizer classes no longer read a ``.model``, which 4's converters take)."""
    from _sp_models import NAMES, build

    built = os.environ.get("BPEKIT_SP_MODELS")
    if built:
        return {name: Path(built) / f"{name}.json" for name in NAMES}
    for module in ("sentencepiece", "tokenizers", "transformers"):
        pytest.importorskip(module)
    return build(tmp_path_factory.mktemp("sp_models"))


@pytest.fixture(scope="session")
def dist_corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Every input kind a distributed plan cuts differently: a plain text file with
    special tokens (byte ranges at safe cuts), a ``.gz`` text file (whole), JSON lines
    (byte ranges after newlines) and Parquet (runs of row groups)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    eot = "<|endoftext|>"
    d = tmp_path_factory.mktemp("corpus")
    botchan = data_path("corpora", "botchan_en.txt").read_text(encoding="utf-8")
    paragraphs = botchan.split("\n\n")
    text = "".join(p + ("\n\n" if i % 7 else eot) for i, p in enumerate(paragraphs))
    (d / "a.txt").write_text(text, encoding="utf-8")
    russian = data_path("multilingual", "fortunes_ru.txt").read_bytes()[:150_000]
    (d / "b.txt.gz").write_bytes(gzip.compress(russian.decode("utf-8", "ignore").encode()))
    lines = data_path("corpora", "c4_sample.jsonl").read_text(encoding="utf-8").splitlines()[:250]
    (d / "c.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    genesis = data_path("multilingual", "genesis_multilingual.jsonl").read_text(encoding="utf-8")
    texts = [json.loads(line)["text"] for line in genesis.splitlines() if line.strip()]
    pq.write_table(pa.table({"text": texts}), d / "d.parquet", row_group_size=3)
    return [d / "a.txt", d / "b.txt.gz", d / "c.jsonl", d / "d.parquet"]


@pytest.fixture(scope="session")
def ray_local() -> Iterator[Any]:
    """Ray on this machine with 2 CPUs, as the distributed tests' ``address=None`` finds
    it (a Ray this process started is used as it is)."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        # "local": a Ray of its own even while another test's cluster runs on this
        # machine (the tests run in two processes; a bare init would join that one).
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="session")
def s3() -> Iterator[Any]:
    """A real S3 server, started locally for the session (``_s3_server``)."""
    from _s3_server import s3_server

    yield from s3_server()
