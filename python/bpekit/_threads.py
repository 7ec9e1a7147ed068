"""The one check of a thread count, shared by the API and the command line."""

from __future__ import annotations

# Beyond any machine this runs on: a larger count is a slip (100000 for 1000), and
# each thread costs memory and start time (2,000 took an encode of 12 bytes 5 s).
MAX_THREADS = 1024


def check_num_threads(num_threads: int | None, name: str = "num_threads") -> int | None:
    """``num_threads`` if it is ``None`` (all cores) or a whole number of threads in
    ``1..MAX_THREADS``; otherwise a ``ValueError`` naming ``name``."""
    if num_threads is None:
        return None
    if not isinstance(num_threads, int) or isinstance(num_threads, bool):
        raise TypeError(f"{name} must be an int or None, got {type(num_threads).__name__}")
    if not 1 <= num_threads <= MAX_THREADS:
        raise ValueError(f"{name} must be between 1 and {MAX_THREADS}, got {num_threads}")
    return num_threads
