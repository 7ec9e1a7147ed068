"""A distributed run whose driver is SIGKILLed part way, in a child process: the
resume tests start from what such a run leaves behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

# Defines ``DiesAfter(workers, last, fn_name=None)``: a local pool whose driver process
# is SIGKILLed as soon as it has handed on result number ``last`` (from 0) of a run of
# the task function named ``fn_name`` (of any run when None).
_DIES_AFTER = """
import os, signal
from bpekit.distributed import backends

class DiesAfter(backends.LocalBackend):
    def __init__(self, workers, last, fn_name=None):
        super().__init__(workers)
        self.last, self.fn_name = last, fn_name

    def run(self, fn, tasks):
        for n, result in enumerate(super().run(fn, tasks)):
            yield result
            if n == self.last and self.fn_name in (None, fn.__name__):
                os.kill(os.getpid(), signal.SIGKILL)
"""


def run_killed_driver(body: str) -> None:
    """Runs ``body`` (code that puts a ``DiesAfter`` in place of the run's backend,
    then starts the run) in a child process, and asserts the driver was SIGKILLed
    there rather than ending on its own."""
    script = _DIES_AFTER + textwrap.dedent(body)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert run.returncode == -signal.SIGKILL, run.stderr.decode()
