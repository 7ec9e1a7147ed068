"""The jobs of ``scale.py``, each in a fresh process so that its peak RSS is its own:
counting and merging in one process, the same on a local Ray (and Ray's encode), and
the encode in one process."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

from _common import EOT, peak_rss_mib
from _scale import log
from _scale.ray_memory import RaySampler

TOP = 100  # the most common pre-tokens compared between the one-process and Ray counts


def _summary(counts: Any) -> dict[str, Any]:
    """What the parent compares of two counts."""
    top = [[word.hex(), n] for word, n in counts.most_common(TOP)]
    return {"distinct": len(counts), "occurrences": counts.total, "top": top}


def _merge(counts: Any, vocab_size: int) -> float:
    import bpekit

    t = time.perf_counter()
    bpekit.train_from_counts(counts, vocab_size, [EOT])
    return time.perf_counter() - t


def single_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Counting, then merging, in this process on every core."""
    import bpekit

    t = time.perf_counter()
    counts = bpekit.count_pretokens(spec["path"], [EOT])
    count_s = time.perf_counter() - t
    count_peak = peak_rss_mib()
    log(f"  one process: counted in {count_s:.1f} s, {len(counts):,} distinct; merging ...")
    merge_s = _merge(counts, spec["vocab_size"])
    peak = peak_rss_mib()
    log(f"  one process: merged in {merge_s:.1f} s")
    return {
        "count_s": count_s,
        "merge_s": merge_s,
        "count_peak_rss_mib": count_peak,
        "peak_rss_mib": peak,
        **_summary(counts),
    }


def ray_job(spec: dict[str, Any]) -> dict[str, Any]:
    """A local Ray started, counting on it, merging on the driver, then the encode on it."""
    import ray

    from bpekit.distributed import count_with_stats

    t = time.perf_counter()
    # address="local": a Ray of its own, even where another Ray runs on this machine (ray.init()
    # would join that one).
    ray.init(address="local", num_cpus=spec["cpus"], include_dashboard=False, log_to_driver=False)
    init_s = time.perf_counter() - t
    log(f"  Ray: started in {init_s:.1f} s; counting ...")
    try:
        sampler = RaySampler()
        sampler.start()
        t = time.perf_counter()
        counts, stats = count_with_stats(spec["path"], [EOT], unit_bytes=spec["unit_bytes"])
        count_s = time.perf_counter() - t
        procs = sampler.stop()
        count_peak = peak_rss_mib()
        log(f"  Ray: counted in {count_s:.1f} s ({stats['units']} unit(s)); merging ...")
        merge_s = _merge(counts, spec["vocab_size"])
        peak = peak_rss_mib()
        log(f"  Ray: merged in {merge_s:.1f} s; encoding ...")
        summary = _summary(counts)
        del counts
        sampler = RaySampler()
        sampler.start()
        encoded = _encode(spec, distributed=True)
        encode_procs = sampler.stop()
        log(f"  Ray: encoded in {encoded['encode_s']:.1f} s")
    finally:
        ray.shutdown()
    return {
        "init_s": init_s,
        "count_s": count_s,
        "merge_s": merge_s,
        **encoded,
        "encode_worker_peak_rss_mib": encode_procs["worker_peak_rss_mib"],
        "units": stats["units"],
        "count_peak_rss_mib": count_peak,
        "peak_rss_mib": peak,
        **procs,
        **summary,
    }


def _encode(spec: dict[str, Any], distributed: bool) -> dict[str, Any]:
    """The corpus encoded into a dataset folder with gpt2, in this process or on Ray
    (``spec["unit_bytes"]``); its seconds, tokens and manifest's sha256."""
    import bpekit
    from bpekit import distributed as dist

    tok = bpekit.get_encoding("gpt2")
    out = Path(spec["out"])
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        if distributed:
            manifest = dist.encode_dataset(spec["path"], out, tok, unit_bytes=spec["unit_bytes"])
        else:
            manifest = bpekit.encode_dataset(spec["path"], out, tok)
        seconds = time.perf_counter() - t
    finally:
        shutil.rmtree(out, ignore_errors=True)
    digest = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()
    return {"encode_s": seconds, "tokens": manifest["totals"]["tokens"], "manifest_sha256": digest}


def encode_job(spec: dict[str, Any]) -> dict[str, Any]:
    """The encode in this process on every core."""
    found = _encode(spec, distributed=False)
    log(f"  encode: {found['tokens']:,} tokens in {found['encode_s']:.1f} s")
    return {**found, "peak_rss_mib": peak_rss_mib()}


JOBS = {"single": single_job, "ray": ray_job, "encode": encode_job}
