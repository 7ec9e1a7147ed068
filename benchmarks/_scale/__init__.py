"""The parts of ``scale.py``, one job each:

- ``jobs``: the one-process, Ray and encode jobs, each run in a fresh process;
- ``ray_memory``: the memory of Ray's own processes, sampled from ``/proc`` while Ray works.

The jobs run as ``scale.py --worker KIND SPEC`` (``SCRIPT``) and log to stderr on the
parent's clock (``log``).
"""

import os
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scale.py"
RAY_CPUS = 2
SAMPLE_S = 0.5
# The log's clock starts with the parent; the jobs are told when (wall-clock seconds).
T0 = float(os.environ.get("BPEKIT_SCALE_T0") or time.time())


def log(message: str) -> None:
    print(f"[{time.time() - T0:7.1f} s] {message}", file=sys.stderr, flush=True)
