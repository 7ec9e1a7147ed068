"""The parts of ``dataset_compare.py``, one job each:

- ``corpora``: the corpora it writes datasets from (en.jsonl, owt-1G) and their ``--quick`` slices;
- ``readers``: reading a dataset's shards back (npy, bin, llm.c) and hashing ids and files;
- ``throughput``: the writers timed in this process against ``encode_file``;
- ``memory``: each writer's peak memory at 1, 2 and 4 times the input, in fresh processes;
- ``resume``: a run killed with SIGKILL at half its shards, and the rerun that resumes it;
- ``peers``: the tiktoken / HF tokenizers pipelines of nanoGPT and llm.c beside bpekit's;
- ``targets``: each target against the figures the others found.

The workers run as ``dataset_compare.py --worker KIND SPEC`` (``SCRIPT``).
"""

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "dataset_compare.py"
TOKENIZER = "gpt2"
