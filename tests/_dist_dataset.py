"""What the distributed dataset tests share: the layout that makes every part of the
writer work, the options as ``write_dataset`` takes them, and a comparison of two
dataset folders file by file."""

from __future__ import annotations

import filecmp
from pathlib import Path
from typing import Any

from bpekit.dataset import Layout, Marks
from bpekit.options import DistributedOptions, ReadOptions, RunOptions

EOT = "<|endoftext|>"
UNIT_BYTES = 24_000
LAYOUT: dict[str, Any] = {
    "shard_tokens": 7_000,
    "val_fraction": 0.2,
    "seed": 3,
    "after_each_file": EOT,
    "bos": EOT,
}
# LAYOUT as the option objects that dist.dataset.write_dataset takes, and the defaults.
OPTIONS = (
    Layout(shard_tokens=LAYOUT["shard_tokens"], val_fraction=LAYOUT["val_fraction"], seed=LAYOUT["seed"]),
    Marks(after_each_file=EOT, bos=EOT),
    ReadOptions(),
    RunOptions(num_threads=1),
)
DEFAULTS = (Layout(), Marks(), ReadOptions(), RunOptions(num_threads=1))
# A local pool of 2 workers, the corpus cut into 16 units or more.
LOCAL = DistributedOptions(backend="local", workers=2, unit_bytes=UNIT_BYTES)


def same_dataset(a: Path, b: Path) -> None:
    """``a`` and ``b`` hold the same files with the same bytes."""
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert len(files) > 6
    for f in files:
        assert filecmp.cmp(a / f, b / f, shallow=False), f
