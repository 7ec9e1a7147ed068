"""Where the Ray workers are, and what a run leaves on a Ray the caller keeps.

A dataset's workers write unit files and shards straight into the dataset's folder
only when every worker runs on this machine; a Ray the caller joined beforehand with
nodes elsewhere must take the path whose ids come back to the driver, or the shards
would land on other machines' disks. A submission cut short (Ctrl-C) must not leave
its tasks running on the caller's Ray.
"""

from __future__ import annotations

import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

import bpekit
import bpekit.distributed as dist
from bpekit.distributed import backends
from bpekit.distributed import dataset as dist_dataset

EOT = "<|endoftext|>"


def _fake_ray(me: str, nodes: list[dict[str, Any]] | Exception, initialized: bool = True) -> Any:
    def listed() -> list[dict[str, Any]]:
        if isinstance(nodes, Exception):
            raise nodes
        return nodes

    return types.SimpleNamespace(
        is_initialized=lambda: initialized,
        nodes=listed,
        util=types.SimpleNamespace(get_node_ip_address=lambda: me),
    )


@pytest.mark.parametrize(
    ("backend", "address", "ray", "here"),
    [
        ("local", None, None, True),
        ("ray", "ray://head:10001", None, False),
        ("ray", None, None, True),  # bpekit starts a Ray of its own here
        ("ray", None, _fake_ray("10.0.0.1", [], initialized=False), True),
        ("ray", None, _fake_ray("10.0.0.1", [{"Alive": True, "NodeManagerAddress": "10.0.0.1"}] * 4), True),
        (
            "ray",
            None,
            _fake_ray(
                "10.0.0.1",
                [
                    {"Alive": True, "NodeManagerAddress": "10.0.0.1"},
                    {"Alive": True, "NodeManagerAddress": "10.0.0.2"},
                ],
            ),
            False,
        ),
        # A node gone is no worker.
        (
            "ray",
            None,
            _fake_ray(
                "10.0.0.1",
                [
                    {"Alive": True, "NodeManagerAddress": "10.0.0.1"},
                    {"Alive": False, "NodeManagerAddress": "10.0.0.2"},
                ],
            ),
            True,
        ),
        ("ray", None, _fake_ray("10.0.0.1", RuntimeError("client mode")), False),
    ],
)
def test_workers_are_here_only_where_every_live_node_is_this_machine(
    monkeypatch, backend: str, address: str | None, ray: Any, here: bool
) -> None:
    if ray is None:
        monkeypatch.delitem(sys.modules, "ray", raising=False)
    else:
        monkeypatch.setitem(sys.modules, "ray", ray)
    assert backends.workers_are_here(backend, address) is here


def test_a_ray_joined_with_a_node_elsewhere_sends_the_ids_to_the_driver(
    dist_corpus: list[Path], ray_local: Any, tmp_path: Path, monkeypatch
) -> None:
    """On the caller's Ray with a node of another address, no worker writes into the
    dataset's folder: the units' ids come back, and the dataset is one machine's."""
    one = tmp_path / "one"
    bpekit.encode_dataset(dist_corpus, one, "gpt2", shard_tokens=9000)
    real = ray_local.nodes
    far = {"Alive": True, "NodeManagerAddress": "192.0.2.7", "NodeID": "f" * 56}
    monkeypatch.setattr(ray_local, "nodes", lambda: [*real(), far])
    monkeypatch.setattr(dist_dataset, "_write_by_workers", lambda *a, **k: pytest.fail("workers wrote"))
    out = tmp_path / "ds"
    dist.encode_dataset(dist_corpus, out, "gpt2", shard_tokens=9000, unit_bytes=24_000)
    got = sorted((p.relative_to(out), p.read_bytes()) for p in out.rglob("*") if p.is_file())
    want = sorted((p.relative_to(one), p.read_bytes()) for p in one.rglob("*") if p.is_file())
    assert got == want and len(got) > 2


def test_a_submission_cut_short_cancels_the_tasks_it_started(ray_local: Any, monkeypatch) -> None:
    """Ctrl-C while tasks are being submitted: those already started are cancelled, on
    a Ray the caller keeps running."""
    runner = backends.RayBackend(None, None)
    started: list[Any] = []
    real_remote = ray_local.remote

    def remote(fn: Any) -> Any:
        made = real_remote(fn)

        class Options:
            def __init__(self, **options: Any) -> None:
                self.task = made.options(**options)

            def remote(self, *args: Any) -> Any:
                if len(started) == 3:
                    raise KeyboardInterrupt
                ref = self.task.remote(*args)
                started.append(ref)
                return ref

        return types.SimpleNamespace(options=lambda **o: Options(**o))

    monkeypatch.setattr(ray_local, "remote", remote)
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        runner.submit(subprocess.call, [(["sleep", "60"],)] * 8)
    monkeypatch.undo()
    assert len(started) == 3
    ready, pending = ray_local.wait(started, num_returns=3, timeout=90)
    assert not pending and time.monotonic() - t < 45
    for ref in ready:
        try:
            code = ray_local.get(ref)
        except (ray_local.exceptions.TaskCancelledError, ray_local.exceptions.WorkerCrashedError):
            continue
        # Ray kills a cancelled worker's children too: the sleep killed first ends the
        # task with its signal, before the worker's own end is seen.
        assert code < 0


def test_a_cancel_ray_drops_is_sent_again() -> None:
    """Ray drops a cancel that reaches a task handed to a worker not yet running it;
    closing the results cancels the tasks still pending again until they end."""
    cancels: list[str] = []

    def wait(refs: list[str], num_returns: int, timeout: float) -> tuple[list[str], list[str]]:
        # The first cancel of "b" is lost: it stays pending until cancelled twice.
        pending = [r for r in refs if r == "b" and cancels.count("b") < 2]
        return [r for r in refs if r not in pending], pending

    fake = types.SimpleNamespace(
        is_initialized=lambda: True,
        cancel=lambda ref, force: cancels.append(ref),
        wait=wait,
    )
    backends._Results(fake, ["a", "b"]).close()
    assert sorted(cancels) == ["a", "b", "b"]


def test_tasks_that_write_here_stay_on_this_node(ray_local: Any, monkeypatch) -> None:
    """A backend for tasks that write into this machine's folders pins them to the
    driver's node (not soft): a node joining the caller's Ray later gets none."""
    seen: list[dict[str, Any]] = []
    real_remote = ray_local.remote

    def remote(fn: Any) -> Any:
        made = real_remote(fn)
        return types.SimpleNamespace(options=lambda **o: seen.append(o) or made.options(**o))

    monkeypatch.setattr(ray_local, "remote", remote)
    here = backends.RayBackend(None, None, here=True)
    results, _ = here.submit(subprocess.call, [(["true"],)])
    assert [r for _, r in results] == [0]
    strategy = seen[-1]["scheduling_strategy"]
    assert strategy.node_id == ray_local.get_runtime_context().get_node_id() and strategy.soft is False
    anywhere = backends.RayBackend(None, None)
    results, _ = anywhere.submit(subprocess.call, [(["true"],)])
    assert [r for _, r in results] == [0]
    assert "scheduling_strategy" not in seen[-1]


def test_a_joined_ray_on_this_machine_is_here_when_its_node_sees_our_files(
    ray_local: Any, tmp_path: Path
) -> None:
    """The probe runs a task on each node, which reads the file written here; nothing
    is left behind."""
    other = tmp_path / "units"
    other.mkdir()
    assert backends.workers_are_here("ray", None, [tmp_path, other]) is True
    assert sorted(tmp_path.rglob("*")) == [other]


def _probing_ray(sees: bool | Exception, calls: list[tuple[str, ...]]) -> Any:
    """A fake Ray whose one node (this machine's address) answers the probe ``sees``."""

    class Remote:
        def options(self, **kw: Any) -> Remote:
            return self

        def remote(self, paths: list[str], token: str) -> Any:
            calls.append((*paths, token))
            assert all(Path(p).read_text() == token for p in paths)  # written before the task
            return sees

    def get(refs: list[Any], timeout: float) -> list[Any]:
        for r in refs:
            if isinstance(r, Exception):
                raise r
        return refs

    ray = _fake_ray("10.0.0.1", [{"Alive": True, "NodeManagerAddress": "10.0.0.1", "NodeID": "a" * 56}])
    ray.remote = lambda fn: Remote()
    ray.get = get
    ray.cancel = lambda ref, force: None
    return ray


@pytest.mark.parametrize(("sees", "here"), [(True, True), (False, False), (TimeoutError("slow"), False)])
def test_a_node_of_our_address_that_does_not_see_our_files_is_elsewhere(
    monkeypatch, tmp_path: Path, sees: bool | Exception, here: bool
) -> None:
    """Two containers on the host's network share an address, not a filesystem: a node
    that does not find the probe file (or cannot say) is another machine."""
    pytest.importorskip("ray")
    calls: list[tuple[str, ...]] = []
    monkeypatch.setitem(sys.modules, "ray", _probing_ray(sees, calls))
    assert backends.workers_are_here("ray", None, [tmp_path]) is here
    assert len(calls) == 1 and list(tmp_path.iterdir()) == []


def test_a_probe_that_cannot_be_written_means_elsewhere(monkeypatch, tmp_path: Path) -> None:
    calls: list[tuple[str, ...]] = []
    monkeypatch.setitem(sys.modules, "ray", _probing_ray(True, calls))
    assert backends.workers_are_here("ray", None, [tmp_path, tmp_path / "missing"]) is False
    assert calls == [] and list(tmp_path.iterdir()) == []


def test_a_probe_cut_short_is_removed(monkeypatch, tmp_path: Path) -> None:
    """The file written, then its write fails (a full disk): it is not left behind."""
    calls: list[tuple[str, ...]] = []
    monkeypatch.setitem(sys.modules, "ray", _probing_ray(True, calls))
    real = Path.write_text

    def full(self: Path, data: str, *a: Any, **k: Any) -> int:
        real(self, data[:3])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    assert backends.workers_are_here("ray", None, [tmp_path]) is False
    assert calls == [] and list(tmp_path.iterdir()) == []


def test_a_node_without_an_id_is_elsewhere(monkeypatch, tmp_path: Path) -> None:
    ray = _fake_ray("10.0.0.1", [{"Alive": True, "NodeManagerAddress": "10.0.0.1"}])
    monkeypatch.setitem(sys.modules, "ray", ray)
    assert backends.workers_are_here("ray", None, [tmp_path]) is False


def test_a_probe_left_by_a_killed_run_is_not_a_stranger(tmp_path: Path) -> None:
    """A run killed while its nodes read the probe leaves the file; the next run takes
    the folder (the probe is the dataset's own temporary file) and the units folder's
    cleanup removes it."""
    from bpekit.distributed.work import clear_units

    out = tmp_path / "ds"
    out.mkdir()
    (out / f"{backends.PROBE_PREFIX}{'0' * 32}").write_text("x")
    bpekit.encode_dataset([_text_file(tmp_path)], out, "gpt2")
    assert not list(out.glob(".bpekit-probe-*"))
    units = tmp_path / "units"
    units.mkdir()
    (units / f"{backends.PROBE_PREFIX}{'a' * 32}").write_text("x")
    clear_units(units)
    assert not units.exists()


def _text_file(tmp_path: Path) -> Path:
    path = tmp_path / "a.txt"
    path.write_text(f"hello world{EOT}again")
    return path
