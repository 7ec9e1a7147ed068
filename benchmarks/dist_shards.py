"""The distributed dataset encode's driver load: one process vs Ray replaying the unit
files in the driver vs Ray's workers writing the shards, each in a fresh process.

    python benchmarks/dist_shards.py /tmp/bpekit_bench/owt-1G.txt --cpus 2

Prints, per way, the wall time (a Ray's start apart: it is started before the clock),
the driver's peak RSS (``getrusage``) and the bytes it
read and wrote (``/proc/self/io``'s rchar and wchar: files, pipes and sockets), and
whether the dataset equals the one process's (manifest bytes).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, sys, time
import bpekit
from bpekit.dataset import Layout, Marks
from bpekit.distributed import dataset
from bpekit.options import DistributedOptions, ReadOptions, RunOptions
way, path, out, cpus, shard_tokens, unit_bytes = sys.argv[1:7]
tok = bpekit.get_encoding("gpt2")
ray_start = 0.0
if way != "one":
    # Started before the clock, as benchmarks/scale.py does: its start is reported apart.
    import ray
    t = time.perf_counter()
    ray.init(num_cpus=int(cpus), include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - t
t = time.perf_counter()
if way == "one":
    bpekit.encode_dataset(path, out, tok, shard_tokens=int(shard_tokens), num_threads=int(cpus))
else:
    spread = DistributedOptions(backend="ray", workers=int(cpus), unit_bytes=int(unit_bytes))
    dataset.write_dataset(path, out, tok, Layout(shard_tokens=int(shard_tokens)), Marks(), ReadOptions(),
                          RunOptions(num_threads=1), spread, _replay=way == "replay")
wall = time.perf_counter() - t
io = dict(line.split(": ") for line in open("/proc/self/io").read().splitlines())
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, from the parent's memory.
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
print(json.dumps({"wall": wall, "ray_start": ray_start, "rss_mb": hwm / 1024,
                  "read_mb": int(io["rchar"]) / 1e6, "written_mb": int(io["wchar"]) / 1e6}))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path")
    p.add_argument("--cpus", type=int, default=2)
    p.add_argument("--shard-tokens", type=int, default=1 << 24)
    p.add_argument("--unit-bytes", type=int, default=256 << 20)
    p.add_argument("--ways", default="one,replay,workers")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bpekit-dist-shards-", dir="/tmp"))
    manifests = {}
    try:
        for n, way in enumerate(args.ways.split(",")):
            out = root / f"{way}-{n}"
            cmd = [
                sys.executable,
                "-c",
                CHILD,
                way,
                args.path,
                str(out),
                str(args.cpus),
                str(args.shard_tokens),
                str(args.unit_bytes),
            ]
            run = subprocess.run(cmd, capture_output=True, text=True, check=True)
            result = json.loads(run.stdout.strip().splitlines()[-1])
            manifests[way] = (out / "manifest.json").read_bytes()
            same = manifests[way] == manifests.get("one", manifests[way])
            shutil.rmtree(out)
            print(
                json.dumps({"way": way, **{k: round(v, 2) for k, v in result.items()}, "same": same}),
                flush=True,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
