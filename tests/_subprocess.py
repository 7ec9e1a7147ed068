"""Running Python and the ``bpekit`` command in a child process, for the tests whose
case could hang, crash or exhaust the interpreter: a timeout turns a hang into a failed
test instead of a stopped suite, and a crash ends the child, not pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _shared_data import ROOT, data_path

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux (fork, rlimits)")


def run_args(args: list[str], timeout: float, env: dict[str, str] | None) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in the repository root with ``env`` added to this process's
    environment; a hang past ``timeout`` seconds fails the test."""
    try:
        return subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung for {timeout} s; output so far: {e.stdout!r} {e.stderr!r}")


def run_file(
    path: Path, *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs the script file ``path`` with ``args`` as ``run_args`` runs its arguments."""
    return run_args([str(path), *args], timeout, env)


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``bpekit ARGS`` run in ``cwd``, the shared rank files as its encodings."""
    env = {**os.environ, "BPEKIT_ENCODINGS": str(data_path("encodings"))}
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", *args], capture_output=True, text=True, cwd=cwd, env=env
    )
