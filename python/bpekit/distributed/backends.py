"""Where units run: a local process pool, or Ray tasks. Both take the same shard
functions (plain functions of picklable arguments, which know nothing of either) and
hand results back as they finish, retrying a unit whose worker died.

A unit whose function raises (a bad record, a missing file) is not retried: the error
is the input's and would recur; it is raised on the driver as the function raised it.
A worker that dies (killed, out of memory, ``os._exit``) is a system failure: its
units run again, up to ``max_retries`` times each.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

__all__ = ["Backend", "LocalBackend", "RayBackend", "open_backend"]

MAX_RETRIES = 3


class Backend(Protocol):
    """Runs ``fn(*args)`` for each of ``tasks`` and yields ``(index, result)`` as each
    finishes, in any order."""

    workers: int

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]: ...

    def close(self) -> None: ...


def open_backend(address: str | None, backend: str, workers: int | None) -> Backend:
    """``backend="ray"``: Ray, started locally for ``address=None`` (with ``workers`` CPUs)
    or joined at ``address`` (``"auto"``: the running cluster); ``"local"``: a pool of
    ``workers`` processes (default: one per core)."""
    if backend == "ray":
        return RayBackend(address, workers)
    if backend == "local":
        if address is not None:
            raise ValueError(f"address={address!r} is for backend='ray'; the local backend runs here")
        return LocalBackend(workers)
    raise ValueError(f'backend must be "ray" or "local", not {backend!r}')


class LocalBackend:
    """A pool of worker processes on this machine, started by ``spawn`` (a forked copy
    of a process running threads may hold their locks)."""

    def __init__(self, workers: int | None = None, max_retries: int = MAX_RETRIES) -> None:
        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise ValueError(f"workers must be a positive int or None (one per core), not {workers!r}")
        self.workers = workers or os.cpu_count() or 1
        self.max_retries = max_retries
        self._pool: ProcessPoolExecutor | None = None

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_exit_with_parent,
            initargs=(os.getpid(),),
        )

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        pending = list(range(len(tasks)))[::-1]  # popped from the end: in order
        attempts = [0] * len(tasks)
        running: dict[Future[Any], int] = {}
        pool = self._pool = self._pool or self._new_pool()
        try:
            while pending or running:
                # A bounded number in flight, so that a broken pool costs few reruns.
                while pending and len(running) < 2 * self.workers:
                    i = pending.pop()
                    attempts[i] += 1
                    running[pool.submit(fn, *tasks[i])] = i
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = []
                for future in done:
                    i = running.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        broken.append(i)
                        continue
                    yield i, result
                if broken:
                    # Every unit in flight failed with the pool; each runs again.
                    lost = broken + list(running.values())
                    running.clear()
                    pool.shutdown(wait=True, cancel_futures=True)
                    pool = self._pool = self._new_pool()
                    for i in sorted(lost, reverse=True):
                        if attempts[i] > self.max_retries:
                            raise RuntimeError(
                                f"unit {i}: its worker died {attempts[i]} times (killed, out of memory?)"
                            )
                        pending.append(i)
                    pending.sort(reverse=True)
        finally:
            for future in running:
                future.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _exit_with_parent(parent: int) -> None:
    """Ends this pool worker once the driver is gone. A driver killed outright (SIGKILL,
    the OOM killer) cannot shut its pool down, and its workers, each holding the task
    queue open, would otherwise wait on it forever."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="bpekit-parent-watch", daemon=True).start()


class RayBackend:
    """Ray tasks of one CPU each, retried when their worker dies. Ray started here (for
    ``address=None``) is shut down by ``close``; a Ray already running in this process
    (``ray.init`` called before) is used as it is and left running."""

    def __init__(self, address: str | None, workers: int | None, max_retries: int = MAX_RETRIES) -> None:
        try:
            import ray
        except ImportError:
            raise ImportError(
                "running on Ray needs ray, which is not installed: pip install 'bpekit[ray]'"
            ) from None
        self.ray = ray
        self.max_retries = max_retries
        self.started = False
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                options["num_cpus"] = workers or os.cpu_count() or 1
            ray.init(address=address, **options)
            self.started = True
        self.workers = max(int(ray.available_resources().get("CPU", 1)), 1)

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        ray = self.ray
        remote = ray.remote(fn).options(num_cpus=1, max_retries=self.max_retries, retry_exceptions=False)
        refs = {remote.remote(*args): i for i, args in enumerate(tasks)}
        try:
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                for ref in done:
                    i = refs.pop(ref)
                    yield i, _ray_get(ray, ref)
        finally:
            for ref in refs:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False


def _ray_get(ray: Any, ref: Any) -> Any:
    """The task's result; the exception it raised, as it raised it (Ray wraps it)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise
