"""The one check of a thread count, shared by the API and the command line."""

from __future__ import annotations

import operator

# Beyond any machine this runs on: a larger count is a slip (100000 for 1000), and
# each thread costs memory and start time (2,000 took an encode of 12 bytes 5 s).
MAX_THREADS = 1024


def check_num_threads(num_threads: int | None, name: str = "num_threads") -> int | None:
    """``num_threads`` as an ``int`` if it is ``None`` (all cores) or a whole number of
    threads in ``1..MAX_THREADS`` (a numpy integer too); otherwise a ``TypeError`` (not
    a whole number) or ``ValueError`` (out of range) naming ``name``."""
    if num_threads is None:
        return None
    try:
        if isinstance(num_threads, bool):
            raise TypeError
        n = operator.index(num_threads)
    except TypeError:
        raise TypeError(f"{name} must be an int or None, got {type(num_threads).__name__}") from None
    if not 1 <= n <= MAX_THREADS:
        raise ValueError(f"{name} must be between 1 and {MAX_THREADS}, got {n}")
    return n
