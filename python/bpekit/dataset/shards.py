"""Writing a dataset's shards: a core call writes them, and the manifest on disk
records each as it is finished and hashed (with where the shard after it starts), so
that a run cut short goes on from the last one recorded; ``finish_manifest`` marks the
dataset finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from bpekit._atomic import atomic_write
from bpekit._progress import progress_bar
from bpekit.dataset.folder import Fresh
from bpekit.dataset.manifest import dump, start_sha256
from bpekit.dataset.spec import MANIFEST, split_names

__all__ = ["Shards", "finish_manifest", "write_shards"]


class Shards(NamedTuple):
    """What ``write_shards`` did: the manifest (finished but for being written), the
    core's stats, and how many shards of an interrupted run it kept."""

    manifest: dict[str, Any]
    stats: dict[str, Any]
    kept: int = 0


def write_shards(
    root: Path,
    manifest: dict[str, Any],
    state: Fresh,
    run: Callable[[Callable[..., None], Any, Any], dict[str, Any]],
    *,
    progress: bool,
    resumable: bool = True,
    label: str = "encoding",
    after_shard: Callable[[dict[str, Any]], None] | None = None,
) -> Shards:
    """Writes the shards of the dataset ``manifest`` describes into ``root``, made ready
    by ``prepare_folder``, with ``run(on_shard, resume_from, progress_bar)`` (a core
    call that writes them and returns its summary), recording each finished shard in
    the manifest on disk. A run that is not ``resumable`` records no place to go on
    from. The caller completes the manifest's totals and writes it
    (``finish_manifest``). ``after_shard(entry)``, where given, is called with each
    finished shard's entry once it is recorded (a store's writer puts it there)."""
    names = split_names(manifest["val_fraction"])
    kept_by_split = dict(zip(names, state.kept, strict=True))
    splits = {name: {"shards": [shard for shard, _ in kept]} for name, kept in kept_by_split.items()}
    manifest["splits"] = splits
    # Where each shard's successor starts in the input, for a run that goes on after it.
    # It depends on how the run cut its input (threads, chunk size), so it goes once the
    # dataset is finished: the finished manifest is the same however it was written.
    manifest["resume"] = {name: [start for _, start in kept] for name, kept in kept_by_split.items()}
    atomic_write(root / MANIFEST, dump(manifest))

    recorder = _Recorder(root / MANIFEST, manifest)

    def on_shard(split: str, shard: dict[str, Any]) -> None:
        # Called from the core's hasher thread, in the order the shards finish.
        start = shard.pop("next")
        if resumable and start is not None:
            start["sha256"] = start_sha256(split, len(splits[split]["shards"]), shard, start)
        manifest["resume"][split].append(start if resumable else None)
        splits[split]["shards"].append(shard)
        recorder.changed()
        if after_shard is not None:
            after_shard(shard)

    resume_from = [(len(kept), kept[-1][1] if kept else None) for kept in state.kept]
    with progress_bar(progress, label) as bar, recorder:
        written = run(on_shard, resume_from if any(kept for kept in state.kept) else None, bar)
    if sum(len(split["shards"]) for split in splits.values()) != len(written["shards"]) + sum(
        len(k) for k in state.kept
    ):
        raise RuntimeError(f"{root}: the shards recorded differ from those written; please report this")
    for split in splits.values():
        split["tokens"] = sum(s["tokens"] for s in split["shards"])
        split["documents"] = sum(s["documents"] for s in split["shards"])
    stats = written["stats"]
    manifest["totals"] = {
        "tokens": sum(split["tokens"] for split in splits.values()),
        "documents": written["documents"],
        "bytes": stats["bytes"],
        "skipped": stats["skipped"],
    }
    if written.get("fed_sha256") is not None:
        # Of the inputs known only by their documents: what a rerun on a finished
        # dataset compares (``_same_feeds``).
        manifest["fed_sha256"] = written["fed_sha256"]
    return Shards(manifest, stats, sum(len(k) for k in state.kept))


def finish_manifest(root: Path, manifest: dict[str, Any]) -> None:
    """Marks the dataset finished and writes its manifest: the end of a run."""
    del manifest["resume"]
    manifest["complete"] = True
    atomic_write(root / MANIFEST, dump(manifest))


class _Recorder:
    """Rewrites the manifest (atomically) as shards finish: after each one, but not
    more often than every ``EVERY`` seconds, and once more if the run fails.

    Why the bound: each rewrite writes every shard's entry, so a rewrite after each of
    many small shards was quadratic (a test's run of 400 shards of 97 tokens took 30 s,
    2 s bounded). A rerun after a kill writes again at most ``EVERY`` seconds of
    shards; shards of the default 2**28 tokens take longer than that each."""

    EVERY = 0.5

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path, self.manifest = path, manifest
        self.written_at = time.monotonic()
        self.dirty = False

    def changed(self) -> None:
        self.dirty = True
        if time.monotonic() - self.written_at >= self.EVERY:
            self.write()

    def write(self) -> None:
        atomic_write(self.path, dump(self.manifest))
        self.written_at, self.dirty = time.monotonic(), False

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        # A failed run records the shards it finished; a failure to do so (a full
        # disk) must not hide the run's own error. A finished run's caller writes the
        # final manifest.
        if self.dirty and error is not None:
            try:
                self.write()
            except OSError:
                pass
