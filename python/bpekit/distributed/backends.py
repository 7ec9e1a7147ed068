"""Where units run: a local process pool, or Ray tasks. Both take the same shard
functions (plain functions of picklable arguments, which know nothing of either) and
hand results back as they finish, retrying a unit whose worker died.

A unit whose function raises (a bad record, a missing file) is not retried: the error
is the input's and would recur; it is raised on the driver as the function raised it.
A worker that dies (killed, out of memory, ``os._exit``) is a system failure: its
units run again, up to ``max_retries`` times each.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import queue
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from bpekit.distributed import _wire

__all__ = ["Backend", "Handle", "LocalBackend", "RayBackend", "fetch_each", "open_backend", "quiet_ray"]

MAX_RETRIES = 3

# The level of Ray's own log lines on stderr when a run starts or joins Ray ("Started a
# local Ray instance.", warnings of its setup): Ray's default (None) for the library,
# errors only under quiet_ray (the command line, where they read as bpekit's own).
_RAY_LOGGING_LEVEL: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "ray_logging_level", default=None
)


@contextlib.contextmanager
def quiet_ray() -> Iterator[None]:
    """Ray started or joined in this block prints its errors only, not its INFO and
    WARNING lines (its tasks' output never reaches this process: ``log_to_driver`` is
    off)."""
    token = _RAY_LOGGING_LEVEL.set(logging.ERROR)
    try:
        yield
    finally:
        _RAY_LOGGING_LEVEL.reset(token)


#: Where one partition of a unit's counts lies in a work folder: ``(path, start, end)``.
#: A backend that keeps results where they were made (Ray) hands its own handles instead.
Handle = tuple[str, int, int]


class Backend(Protocol):
    """Runs ``fn(*args)`` for each of ``tasks`` and yields ``(index, result)`` as each
    finishes, in any order. ``keeps_objects``: whether results can stay where a task
    made them for other tasks to take (``RayBackend.submit``), never passing through
    the driver."""

    workers: int
    keeps_objects: bool

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]: ...

    def close(self) -> None: ...


def open_backend(address: str | None, backend: str, workers: int | None, here: bool = False) -> Backend:
    """``backend="ray"``: Ray, started locally for ``address=None`` (with ``workers`` CPUs)
    or joined at ``address`` (``"auto"``: the running cluster); ``"local"``: a pool of
    ``workers`` processes (default: one per core). ``here``: Ray's tasks run on this
    machine's node only (they write into its folders)."""
    if backend == "ray":
        return RayBackend(address, workers, here=here)
    if backend == "local":
        if address is not None:
            raise ValueError(f"address={address!r} is for backend='ray'; the local backend runs here")
        return LocalBackend(workers)
    raise ValueError(f'backend must be "ray" or "local", not {backend!r}')


def workers_are_here(
    backend: str, address: str | None, probe_dirs: Sequence[str | os.PathLike[str]] = ()
) -> bool:
    """Whether every worker of ``open_backend(address, backend, ...)`` runs on this
    machine, and so sees its files: the local pool; a Ray this call starts; a Ray this
    process joined beforehand (``ray.init(address=...)``) only where each of its live
    nodes has this machine's address (a Ray client's never does) and finds in each of
    ``probe_dirs`` a file this process writes there: two containers that share the
    host's network have one address and two filesystems."""
    if backend == "local":
        return True
    if address is not None:
        return False
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return True
    try:
        me = ray.util.get_node_ip_address()
        nodes = [n for n in ray.nodes() if n.get("Alive")]
    except Exception:  # a client or a cluster that cannot say: its files are not ours
        return False
    if not nodes or any(n.get("NodeManagerAddress") != me for n in nodes):
        return False
    if not probe_dirs:
        return True
    ids = [n.get("NodeID") for n in nodes]
    return all(isinstance(i, str) for i in ids) and _nodes_see(ray, ids, [Path(d) for d in probe_dirs])


def _nodes_see(ray: Any, node_ids: list[str], folders: list[Path]) -> bool:
    """Whether a task on each of ``node_ids`` reads the file this process writes in
    each of ``folders`` (removed after, whatever happens)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    token = secrets.token_hex(16)
    probes = [folder / f"{PROBE_PREFIX}{token}" for folder in folders]
    refs: list[Any] = []
    try:
        for probe in probes:
            probe.write_text(token)
        check = ray.remote(_sees)
        # No CPU asked: the check must not wait for the caller's other jobs.
        refs = [
            check.options(
                num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)
            ).remote([str(p) for p in probes], token)
            for n in node_ids
        ]
        return all(ray.get(refs, timeout=PROBE_TIMEOUT_S))
    except Exception:  # no probe written (full, read-only), a node gone or too slow to say
        for ref in refs:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        return False
    finally:
        for probe in probes:
            probe.unlink(missing_ok=True)


#: The name of a probe file, before its token: a dataset folder's own temporary file
#: (a run killed while probing leaves it; the next run removes it).
PROBE_PREFIX = ".bpekit-probe-"

#: How long the nodes have to say whether they see the probe file: a node's first task
#: may start a worker process (~1-2 s).
PROBE_TIMEOUT_S = 60.0


def _sees(paths: list[str], token: str) -> bool:
    """Run on a node: whether each of ``paths`` there holds ``token``."""
    try:
        for path in paths:
            with open(path, encoding="utf-8") as f:
                if f.read() != token:
                    return False
    except OSError:
        return False
    return True


class LocalBackend:
    """Worker processes on this machine (``bpekit.distributed._worker``), one task at a
    time each, kept for the backend's life. Each is fed by a thread of the driver; a
    worker that dies is started again and its unit put back in the queue."""

    def __init__(self, workers: int | None = None, max_retries: int = MAX_RETRIES) -> None:
        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise ValueError(f"workers must be a positive int or None (one per core), not {workers!r}")
        self.workers = workers or os.cpu_count() or 1
        self.keeps_objects = False
        self.max_retries = max_retries
        self._procs: list[_Process | None] = [None] * self.workers

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        todo: queue.Queue[int] = queue.Queue()
        for i in range(len(tasks)):
            todo.put(i)
        results: queue.Queue[tuple[int, bool, Any]] = queue.Queue()
        attempts = [0] * len(tasks)
        stop = threading.Event()

        def feed(slot: int) -> None:
            while not stop.is_set():
                try:
                    i = todo.get(timeout=0.1)
                except queue.Empty:
                    continue
                attempts[i] += 1
                try:
                    proc = self._procs[slot] = self._procs[slot] or _Process()
                    ok, value = proc.call(fn, tasks[i])
                except (EOFError, OSError):
                    self._kill(slot)
                    if attempts[i] > self.max_retries:
                        why = f"unit {i}: its worker died {attempts[i]} times (killed? out of memory?)"
                        results.put((i, False, RuntimeError(why)))
                        return
                    todo.put(i)
                    continue
                except Exception as e:  # a task or result that cannot be pickled
                    self._kill(slot)
                    results.put((i, False, e))
                    return
                results.put((i, ok, value))

        threads = [threading.Thread(target=feed, args=(k,), daemon=True) for k in range(self.workers)]
        for t in threads:
            t.start()
        finished = False
        try:
            for _ in range(len(tasks)):
                i, ok, value = results.get()
                if not ok:
                    raise value
                yield i, value
            finished = True
        finally:
            stop.set()
            if not finished:  # stopped early: units still running are abandoned
                for slot in range(self.workers):
                    self._kill(slot)
            for t in threads:
                t.join()

    def _kill(self, slot: int) -> None:
        proc, self._procs[slot] = self._procs[slot], None
        if proc is not None:
            proc.kill()

    def close(self) -> None:
        for slot, proc in enumerate(self._procs):
            if proc is not None:
                proc.close()
            self._procs[slot] = None


class _Process:
    """One worker process and its two pipes."""

    def __init__(self) -> None:
        # The driver's import path, so that the worker finds what the driver imports.
        path = os.pathsep.join(p for p in sys.path if p)
        env = {**os.environ, "PYTHONPATH": path}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bpekit.distributed._worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
        """``(True, fn(*args))`` or ``(False, the exception it raised)``, computed in the
        worker; ``EOFError`` or ``OSError`` if the worker died."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        _wire.send(self.proc.stdin, (fn, args))
        reply: tuple[bool, Any] = _wire.receive(self.proc.stdout)
        return reply

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        """Ends the worker: it exits when its tasks end."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()


class RayBackend:
    """Ray tasks of one CPU each, retried when their worker dies. Ray started here (for
    ``address=None``) is shut down by ``close``; a Ray already running in this process
    (``ray.init`` called before) is used as it is and left running."""

    def __init__(
        self, address: str | None, workers: int | None, max_retries: int = MAX_RETRIES, here: bool = False
    ) -> None:
        try:
            import ray
        except ImportError:
            raise ImportError(
                "running on Ray needs ray, which is not installed: pip install 'bpekit[ray]'"
            ) from None
        self.ray: Any = ray
        self.max_retries = max_retries
        self.started = False
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            level = _RAY_LOGGING_LEVEL.get()
            if level is not None:
                options["logging_level"] = level
            if address is None:
                # "local" starts a Ray of its own even where a cluster runs on this
                # machine (a bare ray.init() would join it, and refuse num_cpus).
                address = "local"
                options["num_cpus"] = workers or os.cpu_count() or 1
            ray.init(address=address, **options)
            self.started = True
        # The cluster's CPUs, not those free now: a run just ended may still hold some,
        # and the number of partitions follows this.
        self.workers = max(int(self.ray.cluster_resources().get("CPU", 1)), 1)
        self.keeps_objects = True
        # Tasks that write into this machine's folders stay on its node: a node that
        # joins the caller's Ray later (an autoscaler's) would write to its own disk.
        self.node: str | None = None
        if here:
            self.node = ray.get_runtime_context().get_node_id()
            nodes: list[dict[str, Any]] = self.ray.nodes()
            node: dict[str, Any] = next((n for n in nodes if n.get("NodeID") == self.node), {})
            self.workers = max(int(node.get("Resources", {}).get("CPU", 1)), 1)

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        return self.submit(fn, tasks)[0]

    def submit(
        self, fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]], keep: int = 0
    ) -> tuple[_Results, list[list[Any]]]:
        """Starts the tasks now; returns what ``run`` yields, and for each task the
        handles of the ``keep`` results it keeps: with ``keep``, ``fn`` returns
        ``(result, [keep blobs])``, and the blobs stay in Ray's object store (made again
        from their task if a node is lost) for other tasks to take by their handles
        (``fetch_each``), never passing through the driver. Stopping the iteration early
        cancels the tasks still running."""
        ray = self.ray
        options: dict[str, Any] = {"num_cpus": 1, "max_retries": self.max_retries, "retry_exceptions": False}
        if self.node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(self.node, soft=False)
        remote = ray.remote(_kept_apart if keep else fn).options(num_returns=keep + 1, **options)
        refs: list[Any] = []
        try:
            for args in tasks:
                refs.append(remote.remote(fn, *args) if keep else remote.remote(*args))
        except BaseException:
            # Ctrl-C (or a failed submission) part way: the tasks already started would
            # run on, on a Ray the caller keeps, with nobody to take their results.
            _Results(ray, [r[0] if keep else r for r in refs]).close()
            raise
        if keep:
            return self._results([r[0] for r in refs]), [list(r[1:]) for r in refs]
        return self._results(refs), [[] for _ in tasks]

    def _results(self, firsts: list[Any]) -> _Results:
        return _Results(self.ray, firsts)

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False


class _Results:
    """``(index, result)`` of Ray tasks as each finishes; ``close`` (or dropping the
    iterator) cancels the tasks still running, whether or not any was taken."""

    def __init__(self, ray: Any, firsts: list[Any]) -> None:
        self.ray = ray
        self.refs = {ref: i for i, ref in enumerate(firsts)}

    def __iter__(self) -> _Results:
        return self

    def __next__(self) -> tuple[int, Any]:
        if not self.refs:
            raise StopIteration
        try:
            done, _ = self.ray.wait(list(self.refs), num_returns=1)
            i = self.refs.pop(done[0])
            return i, _ray_get(self.ray, done[0])
        except BaseException:
            self.close()
            raise

    def finished(self) -> list[tuple[int, Any]]:
        """The results of the tasks done by now, without waiting; raises the first
        error among them, as ``next`` would."""
        if not self.refs:
            return []
        try:
            done, _ = self.ray.wait(list(self.refs), num_returns=len(self.refs), timeout=0)
            return [(self.refs.pop(ref), _ray_get(self.ray, ref)) for ref in done]
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Cancels the tasks still running and waits (up to a minute) for them to end."""
        refs, self.refs = list(self.refs), {}
        # Ray calls on a Ray shut down meanwhile would start a new one.
        if not refs or not self.ray.is_initialized():
            return
        # Ray drops a cancel that reaches a task handed to a worker not yet running it
        # (the task then runs to its end), so the tasks still pending are cancelled
        # again every second until all have ended.
        deadline = time.monotonic() + 60
        while refs:
            for ref in refs:
                self.ray.cancel(ref, force=True)
            left = deadline - time.monotonic()
            if left <= 0:
                return
            _, refs = self.ray.wait(refs, num_returns=len(refs), timeout=min(1.0, left))

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # Ray may be shut down already
            self.close()


def _kept_apart(fn: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    """``fn``'s ``(result, blobs)`` as Ray's several returns: the result, then each blob."""
    result, blobs = fn(*args)
    return (result, *blobs)


def fetch_each(handles: Sequence[Any]) -> Iterator[bytes]:
    """The bytes of each handle, in the order they are ready: a ``Handle`` is read from
    its file; a Ray object is taken from Ray's store as soon as its task is done (Ray
    lends this task's CPU to others while it waits)."""
    pending: list[Any] = []
    for handle in handles:
        if isinstance(handle, tuple):
            yield _read_range(*handle)
        else:
            pending.append(handle)
    if pending:
        import ray

        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield _ray_get(ray, done[0])


def _read_range(path: str, start: int, end: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    if len(data) != end - start:
        raise ValueError(f"{path}: cut short: it ends before byte {end} (was it changed during the run?)")
    return data


def _ray_get(ray: Any, ref: Any) -> Any:
    """The task's result; the exception it raised, as it raised it (Ray wraps it)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise
