"""The shards' writing, seen from the driver of a distributed dataset: each shard
handed to the workers as the plan closes it (``shardwrite.write_shard`` is what a
worker does with one), and each written reported back in turn."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bpekit.dataset.job import Job
from bpekit.distributed.shardplan import ShardPlan
from bpekit.distributed.shardwrite import ShardTask, write_shard

__all__ = ["ShardWrites"]


class ShardWrites:
    """The shards' writing on the workers: ``start`` hands shards over as they are
    planned, and ``on_written`` hears of each written (with its sizes and hashes) as
    ``check`` or ``results`` takes it.

    Where the backend takes tasks while others run (Ray's ``submit``), each shard starts at once:
    written all after the encoding, owt-12G's 8 GB of shards were ~10 s of a 57 s run
    on 2 CPUs here, as the page cache's dirty limit held the writers to the disk's
    speed; written while the units encode, they reach the disk at the encoding's pace
    (and the unit files go as they are used up). A local pool writes them after the
    encoding."""

    def __init__(
        self,
        runner: Any,
        root: Path,
        job: Job,
        width: int,
        paths: dict[int, str],
        on_written: Callable[[ShardPlan, dict[str, Any]], None],
    ) -> None:
        self.runner, self.root, self.job, self.width, self.paths = runner, root, job, width, paths
        self.on_written = on_written
        self.now = hasattr(runner, "submit")  # Ray's: tasks started while others run
        # Ray's: (the first shard's place in ``shards``, its tasks' results), as started.
        self.started: list[tuple[int, Any]] = []
        self.later: list[tuple[ShardTask]] = []  # a local pool's, written after the units
        self.shards: list[ShardPlan] = []

    def start(self, shards: list[ShardPlan]) -> None:
        if not shards:
            return
        layout = self.job.layout
        tasks = [
            (
                ShardTask(
                    str(self.root),
                    s.split,
                    s.k,
                    layout.shard_format,
                    self.width,
                    self.job.tokenizer_name,
                    layout.checksums,
                    s.tokens,
                    s.starts,
                    s.pieces,
                    {u: self.paths[u] for u in {p[0] for p in s.pieces if p[0] >= 0}},
                ),
            )
            for s in shards
        ]
        if self.now:
            self.started.append((len(self.shards), self.runner.submit(write_shard, tasks)[0]))
        else:
            self.later += tasks
        self.shards += shards

    def check(self) -> None:
        """Takes the shards written by now, raising the first failure at once (a full
        disk stops the encoding rather than waiting for its end)."""
        for first, started in self.started:
            self._take(first, started.finished())

    def results(self) -> None:
        """Waits for every shard started."""
        for first, started in self.started:
            self._take(first, started)
        if self.later:
            self._take(len(self.shards) - len(self.later), self.runner.run(write_shard, self.later))

    def _take(self, first: int, results: Iterable[tuple[int, dict[str, Any]]]) -> None:
        for k, written in results:
            self.on_written(self.shards[first + k], written)

    def cancel(self) -> None:
        """Stops the shards still being written (the run failed) and waits for their
        tasks to end: none is left writing into the dataset's folder."""
        for _, started in self.started:
            started.close()
