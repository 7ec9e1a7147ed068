"""The parts of ``formats_compare.py``, one job each:

- ``files``: the ``en`` corpus cut into documents and written in every input format;
- ``inputs``: what ``count_pretokens`` is given for each input, and the interleaved timings;
- ``tables``: the throughput, per-document cost and targets tables from those timings;
- ``memory``: each input counted in a fresh process at 1 to 8 times the corpus.

The memory workers run as ``formats_compare.py --worker mem ...`` (``SCRIPT``).
"""

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "formats_compare.py"
THREADS = (1, 2)
