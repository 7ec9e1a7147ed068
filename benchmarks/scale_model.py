"""The scale model of docs/scale-out.md: wall time, driver load and memory of a
distributed count, training and dataset for 1, 10 and 100 TB on 16, 64 and 256 cores,
projected from per-unit costs measured on this project's 2-core VM.

Usage: python benchmarks/scale_model.py     # prints the Markdown table

Each constant below is a measurement, named with where it comes from; the projection
assumes what the docs say (tasks of one core each, independent of one another; the
distinct pre-tokens following the Heaps fit that make_big.py uses for OpenWebText).
"""

from __future__ import annotations

UNIT = 256 * 2**20
# A 256 MiB unit of owt-1G counted on one core (1.00 s) and split into partitions
# (0.034 s): bpekit.distributed.work.count_unit's work, timed alone.
COUNT_BPS = UNIT / 1.034
# That unit's counts: 872,692 distinct words, 18 MB as bytes.
UNIT_COUNTS_SHARE = 18e6 / UNIT
# A reducer (work.reduce_partition's _core.CountsSum) adds one partition of owt-12G's
# twelve 1 GiB units, 196 MB of counts into 3.0 M distinct words, in 0.40, 0.68 and
# 0.92 s (three fresh processes, its bytes written out included; the spread is the
# kernel's zeroing of the growing table's pages). WordCounts' own adding took 1.38 s.
REDUCE_BPS = 196e6 / 0.68
# Reducers on Ray: one per 16 MiB of a unit's input at most (count.MIN_PARTITION_INPUT).
MAX_REDUCERS = UNIT // (16 << 20)
# owt-12G's final table: 6,030,779 words, 129.7 MB as bytes (what the driver received).
TABLE_BYTES_PER_WORD = 129.7e6 / 6_030_779
# The merge loop to 32,000 tokens: 1.52 s for owt-1G's 1.36 M distinct pre-tokens,
# 7.74 s for owt-12G's 6.03 M (benchmarks/README.md, scale): about linear.
MERGE_S_PER_WORD = 7.74 / 6_030_779
# Peak memory of counting + training per distinct pre-token (docs/training.md).
TRAIN_BYTES_PER_WORD = 232
# encode_dataset of owt-12G: 279.5 MB/s of text on 2 threads.
ENCODE_BPS_PER_CORE = 279.5e6 / 2
# The distributed dataset's driver copies every id into the shards: 0.73 GB of ids in
# 2.1 s, about 530 MB/s of input text, whatever the number of workers.
REPLAY_BPS = 530e6


def heaps(n_bytes: float) -> float:
    """Distinct GPT-2 pre-tokens of an OpenWebText-like corpus of ``n_bytes``."""
    return 3.45 * n_bytes**0.62


def show(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def main() -> None:
    print(
        "| corpus | cores | distinct pre-tokens | count | reduce (16 reducers) "
        "| final table to the driver | merge (1 thread) | driver memory (training) "
        "| dataset, workers write | dataset, driver replays ids |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for tb in (1, 10, 100):
        total = tb * 1e12
        words = heaps(total)
        for cores in (16, 64, 256):
            count = total / (cores * COUNT_BPS)
            reduce = UNIT_COUNTS_SHARE * total / (min(cores, MAX_REDUCERS) * REDUCE_BPS)
            encode = total / (cores * ENCODE_BPS_PER_CORE)
            print(
                f"| {tb} TB | {cores} | {words / 1e6:,.0f} M | {show(count)} | {show(reduce)} "
                f"| {words * TABLE_BYTES_PER_WORD / 1e9:.1f} GB | {show(words * MERGE_S_PER_WORD)} "
                f"| {words * TRAIN_BYTES_PER_WORD / 2**30:,.0f} GiB | {show(encode)} "
                f"| {show(max(encode, total / REPLAY_BPS))} |"
            )


if __name__ == "__main__":
    main()
