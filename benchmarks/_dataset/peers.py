"""Peers: from en.jsonl on disk to a ``.bin`` of uint16 ids with ``<|endoftext|>`` after
each document, the way nanoGPT's and llm.c's data scripts do it with tiktoken and HF
tokenizers, beside bpekit's ``encode_dataset`` and ``encode_batch_to_numpy``."""

from __future__ import annotations

import gc
import json
import multiprocessing
import resource
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from _common import (
    EOT,
    columns,
    encodings_folder,
    read_through,
    remove,
    rotated,
    run_worker,
    table,
    tiktoken_encoding,
    time_fields,
)
from _dataset import SCRIPT, TOKENIZER
from _dataset.corpora import Corpus
from _dataset.readers import ids_of, split_arrays
from _memory import status_mib

PEER_BATCH_DOCS = 1024
POOL_CHUNKSIZE = 16  # llm.c's dev/data/fineweb.py


@dataclass(frozen=True)
class Peer:
    key: str
    tool: str  # tool_version's name
    label: str
    threads: int


PEERS = [
    Peer("bpekit", "bpekit", '`encode_dataset(..., shard_format="bin")` on en.jsonl', 1),
    Peer("bpekit", "bpekit", '`encode_dataset(..., shard_format="bin")` on en.jsonl', 2),
    Peer("bpekit-batch", "bpekit", "documents read in Python, `encode_batch_to_numpy(eos=...)`", 1),
    Peer("bpekit-batch", "bpekit", "documents read in Python, `encode_batch_to_numpy(eos=...)`", 2),
    Peer("tiktoken", "tiktoken", "`encode_ordinary_batch` + eot, uint16 (nanoGPT)", 1),
    Peer("tiktoken", "tiktoken", "`encode_ordinary_batch` + eot, uint16 (nanoGPT)", 2),
    Peer("tiktoken-pool", "tiktoken", "`Pool(2).imap` of `encode_ordinary` + eot (llm.c `dev/data`)", 2),
    Peer("hf", "HF tokenizers", "`encode_batch` + eot, uint16", 1),
    Peer("hf", "HF tokenizers", "`encode_batch` + eot, uint16", 2),
]


def read_batches(path: Path, size: int) -> Iterator[list[str]]:
    """The documents of a JSONL file, ``size`` at a time."""
    batch: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                batch.append(json.loads(line)["text"])
                if len(batch) == size:
                    yield batch
                    batch = []
    if batch:
        yield batch


def read_texts(path: Path) -> Iterator[str]:
    for batch in read_batches(path, PEER_BATCH_DOCS):
        yield from batch


def load_peer(key: str) -> Any:
    """The tokenizer of ``key``, from the rank files in $BPEKIT_ENCODINGS (the driver sets it)."""
    if key.startswith("bpekit"):
        import bpekit

        return bpekit.get_encoding(TOKENIZER)
    if key.startswith("tiktoken"):
        return tiktoken_encoding(TOKENIZER)
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # type: ignore[import-untyped]

    enc_dir = encodings_folder()
    tok = Tokenizer(models.BPE.from_file(str(enc_dir / "gpt2_encoder.json"), str(enc_dir / "gpt2_vocab.bpe")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([EOT])
    return tok


_POOL_ENC: Any = None  # the pool's workers' tiktoken encoding, inherited through fork


def _pool_tokenize(text: str) -> np.ndarray[Any, Any]:
    ids = _POOL_ENC.encode_ordinary(text)
    ids.append(_POOL_ENC.eot_token)
    return np.array(ids, dtype=np.uint16)


def run_peer(key: str, tok: Any, path: Path, out: Path, threads: int, shard_tokens: int) -> None:
    """From ``path`` on disk to token ids in ``out`` (a folder for bpekit, else a ``.bin``)."""
    global _POOL_ENC
    if key == "bpekit":
        import bpekit

        bpekit.encode_dataset(
            [str(path)], out, tok, shard_format="bin", shard_tokens=shard_tokens, num_threads=threads
        )
        return
    arrays = []
    if key == "tiktoken-pool":
        _POOL_ENC = tok
        with multiprocessing.get_context("fork").Pool(threads) as pool:
            arrays = list(pool.imap(_pool_tokenize, read_texts(path), chunksize=POOL_CHUNKSIZE))
    else:
        for texts in read_batches(path, PEER_BATCH_DOCS):
            if key == "bpekit-batch":
                ids, _ = tok.encode_batch_to_numpy(texts, threads, eos=EOT, disallowed_special=())
                arrays.append(ids.astype(np.uint16))
                continue
            flat: list[int] = []
            if key == "tiktoken":
                eot = tok.eot_token
                for doc in tok.encode_ordinary_batch(texts, num_threads=threads):
                    flat.extend(doc)
                    flat.append(eot)
            else:
                eot = tok.token_to_id(EOT)
                for enc in tok.encode_batch(texts, add_special_tokens=False):
                    flat.extend(enc.ids)
                    flat.append(eot)
            arrays.append(np.array(flat, dtype=np.uint16))
    np.concatenate(arrays).tofile(out)


def peer_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One peer configuration in this fresh process: the tokenizer loaded (untimed), then
    the pipeline timed; its ids hashed; peak RSS (the pool's workers apart)."""
    key, threads = spec["key"], spec["threads"]
    tok = load_peer(key)
    path, out = Path(spec["path"]), Path(spec["out"])
    remove(out)
    gc.collect()
    t = time.perf_counter()
    run_peer(key, tok, path, out, threads, spec["shard_tokens"])
    seconds = time.perf_counter() - t
    if key == "bpekit":
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        tokens, digest = ids_of(split_arrays(out, manifest))
    else:
        tokens, digest = ids_of([np.memmap(out, dtype=np.uint16, mode="r")])
    remove(out)
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "seconds": seconds,
        "tokens": tokens,
        "hash": digest,
        "peak_rss_mib": status_mib()["VmHWM"],
        "children_peak_mib": children if key == "tiktoken-pool" else None,
    }


Found = dict[tuple[str, int], list[dict[str, Any]]]


def peer_rounds(corpus: Corpus, rounds: int, shard_tokens: int, out_root: Path, env: dict[str, str]) -> Found:
    """``{(key, threads): [worker report per round]}``, the configurations interleaved."""
    found: Found = {(p.key, p.threads): [] for p in PEERS}
    read_through(corpus.path)
    for r in range(rounds):
        t0 = time.perf_counter()
        for p in rotated(PEERS, r):
            spec = {
                "key": p.key,
                "threads": p.threads,
                "path": str(corpus.path),
                "shard_tokens": shard_tokens,
                "out": str(out_root / ("peer" if p.key == "bpekit" else "peer.bin")),
            }
            penv = dict(env, RAYON_NUM_THREADS=str(p.threads), TOKENIZERS_PARALLELISM="true")
            rep = run_worker(SCRIPT, ["peer", json.dumps(spec)], penv, label=f"peer {spec}")
            if rep is not None:
                found[(p.key, p.threads)].append(rep)
        print(f"  peers round {r + 1}/{rounds}: {time.perf_counter() - t0:.1f} s", flush=True)
    return found


def peers_table(corpus: Corpus, found: Found) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The table, the figures, and the problems found."""
    rows, figures, problems = [], {}, []
    mb = corpus.text_bytes / 1e6
    reference = next((r for r in found[("bpekit", 1)] + found[("bpekit", 2)]), None)
    for p in PEERS:
        reps = found[(p.key, p.threads)]
        if not reps:
            problems.append(f"peers: {p.tool} ({p.key}, {p.threads} threads) failed")
            continue
        t = [r["seconds"] for r in reps]
        base = [r["seconds"] for r in found[("bpekit", p.threads)]]
        vs = None
        if base and p.key != "bpekit" and len(base) == len(t):
            vs = statistics.median(a / b for a, b in zip(t, base, strict=True))
            figures[f"vs_bpekit:{p.key}:{p.threads}"] = vs
        notes = []
        same = reference is not None and all(
            (r["tokens"], r["hash"]) == (reference["tokens"], reference["hash"]) for r in reps
        )
        if not same:
            notes.append("ids DIFFER from bpekit's")
            problems.append(f"peers: {p.tool} ({p.key}, {p.threads} threads): ids differ from bpekit's")
        children = [r["children_peak_mib"] for r in reps if r.get("children_peak_mib")]
        if children:
            notes.append(f"each worker process up to {max(children):,.0f} MiB besides")
        rows.append(
            {
                "tool": p.tool,
                "pipeline": p.label,
                "threads": p.threads,
                **time_fields(t),
                "throughput": mb / statistics.median(t),
                "vs_bpekit": vs,
                "peak_rss": max(r["peak_rss_mib"] for r in reps),
                "ids": "same" if same else "DIFFER",
                "note": "; ".join(notes),
            }
        )
    text = (
        f"{corpus.documents:,} documents from en.jsonl on disk to token ids in a file, "
        "`<|endoftext|>` after each document, each configuration in a fresh process that loads its "
        "tokenizer first (untimed); the time runs from opening the file to the ids written (bpekit's "
        "`encode_dataset` includes its shards' sha256 and manifest). vs bpekit: the row's time over "
        "`encode_dataset`'s (bin) on as many threads in the same round (the pool: 2). ids: a hash of "
        f"all ids against bpekit's. The Python pipelines read batches of {PEER_BATCH_DOCS:,} documents "
        "(`json.loads` per line) and build one uint16 array per batch (the pool: per document), "
        "concatenated and written with `tofile`."
    )
    cols = columns(
        ("tool", "tool", "text"),
        ("pipeline", "pipeline", "text"),
        ("threads", "threads", "int"),
        ("seconds", "time", "time"),
        ("throughput", "MB/s", "num"),
        ("vs_bpekit", "vs bpekit", "ratio"),
        ("peak_rss", "peak RSS", "mib"),
        ("ids", "ids", "text"),
        ("note", "notes", "text"),
    )
    return table("Peers: en.jsonl to a `.bin` of uint16 ids", text, cols, rows), figures, problems
