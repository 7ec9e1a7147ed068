"""A worker process of the local backend: ``python -m bpekit.distributed._worker``.

It reads tasks from stdin and writes results to stdout, each a length-prefixed pickle:
a task is ``(fn, args)``, a result ``(True, value)`` or ``(False, exception)``. It
exits when stdin ends, so a driver that dies (even SIGKILLed) takes its workers with
it. Output the work prints goes to stderr, never into the results.

Started as a module of its own, not by ``multiprocessing``: a spawned child imports
the driver's ``__main__`` again, and a script without ``if __name__ == "__main__":``
then runs its work once more in every worker.
"""

from __future__ import annotations

import os
import pickle
import sys

from bpekit.distributed._wire import receive, send


def _picklable(e: BaseException) -> BaseException:
    """``e``, or a ``RuntimeError`` with its text where it cannot be pickled."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:
        return RuntimeError(f"{type(e).__name__}: {e}")


def main() -> None:
    tasks = os.fdopen(os.dup(0), "rb")
    results = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the work prints goes to stderr
    sys.stdout = sys.stderr
    while True:
        try:
            fn, args = receive(tasks)
        except EOFError:
            return
        try:
            reply = (True, fn(*args))
        except Exception as e:
            reply = (False, _picklable(e))
        send(results, reply)


if __name__ == "__main__":
    main()
