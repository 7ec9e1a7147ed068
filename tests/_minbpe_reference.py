"""minbpe's algorithm, written plainly from its source (karpathy/minbpe): the slow
reference ``bpekit.minbpe`` is checked against, and the baseline of
``benchmarks/minbpe_compare.py``. Every merge recounts every pair; the winner is
``max(stats, key=stats.get)``; encoding merges the present pair of lowest rank."""

from __future__ import annotations

import regex


def get_stats(ids, counts=None):
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):  # noqa: B905, RUF007 (minbpe's own line)
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids, pair, idx):
    newids = []
    i = 0
    while i < len(ids):
        if ids[i] == pair[0] and i < len(ids) - 1 and ids[i + 1] == pair[1]:
            newids.append(idx)
            i += 2
        else:
            newids.append(ids[i])
            i += 1
    return newids


def train_basic(text: str, vocab_size: int) -> dict:
    ids = list(text.encode("utf-8"))
    merges = {}
    for i in range(vocab_size - 256):
        stats = get_stats(ids)
        pair = max(stats, key=stats.get)
        ids = merge(ids, pair, 256 + i)
        merges[pair] = 256 + i
    return merges


def train_regex(text: str, vocab_size: int, pattern: str) -> dict:
    chunks = regex.findall(regex.compile(pattern), text)
    ids = [list(ch.encode("utf-8")) for ch in chunks]
    merges = {}
    for i in range(vocab_size - 256):
        stats = {}
        for chunk_ids in ids:
            get_stats(chunk_ids, stats)
        pair = max(stats, key=stats.get)
        ids = [merge(chunk_ids, pair, 256 + i) for chunk_ids in ids]
        merges[pair] = 256 + i
    return merges


def encode_chunk(text_bytes: bytes, merges: dict) -> list[int]:
    ids = list(text_bytes)
    while len(ids) >= 2:
        stats = get_stats(ids)
        pair = min(stats, key=lambda p: merges.get(p, float("inf")))
        if pair not in merges:
            break
        ids = merge(ids, pair, merges[pair])
    return ids


def encode_regex(text: str, merges: dict, pattern: str) -> list[int]:
    ids = []
    for chunk in regex.findall(regex.compile(pattern), text):
        ids.extend(encode_chunk(chunk.encode("utf-8"), merges))
    return ids
