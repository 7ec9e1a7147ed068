"""Resume: ``encode_dataset`` run to the end, run again killed with SIGKILL once its
manifest lists half the shards, and rerun (it resumes); the rerun's time against the
full run's, and whether the resumed dataset is byte for byte the full run's."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import columns, remove, table
from _dataset import SCRIPT, TOKENIZER
from _dataset.corpora import Corpus
from _dataset.readers import file_hashes

RESUME_THREADS = 2
# The rerun after a kill is on target when it costs at most the work left plus this
# share of a full run.
RESUME_SLACK = 0.10
POLL_S = 0.002
SHARD_NAME = re.compile(r"^\d+\.(npy|bin)$")


def dataset_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """``encode_dataset`` as a user runs it (resume is the default), timed; an error is
    reported, not raised."""
    import bpekit

    t = time.perf_counter()
    try:
        m = bpekit.encode_dataset(
            spec["path"],
            spec["out"],
            TOKENIZER,
            shard_tokens=spec["shard_tokens"],
            num_threads=spec["threads"],
        )
    except Exception as e:  # the driver says what failed
        return {"error": f"{type(e).__name__}: {e}"}
    return {"seconds": time.perf_counter() - t, "tokens": m["totals"]["tokens"]}


@dataclass
class Watched:
    result: dict[str, Any] | None  # the worker's report (None when killed or failed)
    killed: bool
    listed: int  # shards the manifest listed when the run ended or was killed
    listed_tokens: int
    listed_while_running: int  # the most shards listed while "complete" was false
    on_disk: int  # finished shard files seen
    error: str = ""


def _listed(root: Path) -> tuple[int, int, bool] | None:
    """Shards and tokens ``root/manifest.json`` lists, and whether it says complete."""
    try:
        m = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    shards = [s for split in (m.get("splits") or {}).values() for s in split.get("shards", [])]
    return len(shards), sum(s.get("tokens", 0) for s in shards), bool(m.get("complete"))


def _on_disk(root: Path) -> int:
    n = 0
    for split in ("train", "val"):
        try:
            n += sum(1 for name in os.listdir(root / split) if SHARD_NAME.match(name))
        except OSError:
            pass
    return n


def watch(spec: dict[str, Any], env: dict[str, str], stop: Callable[[int, int], bool] | None) -> Watched:
    """Runs ``dataset_worker(spec)`` in a fresh process, watching its manifest (read
    again whenever its mtime changes) and its shard files every 2 ms; kills it with
    SIGKILL once ``stop(listed shards, shard files)`` is true."""
    root = Path(spec["out"])
    cmd = [sys.executable, str(SCRIPT), "--worker", "dataset", json.dumps(spec)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen_mtime, listed, tokens, most, on_disk, killed = None, 0, 0, 0, 0, False
    while proc.poll() is None:
        try:
            mtime = (root / "manifest.json").stat().st_mtime_ns
        except OSError:
            mtime = None
        if mtime is not None and mtime != seen_mtime:
            seen_mtime = mtime
            got = _listed(root)
            if got is not None:
                listed, tokens, complete = got
                if not complete:
                    most = max(most, listed)
        on_disk = _on_disk(root)
        if stop is not None and stop(listed, on_disk):
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(POLL_S)
    out, err = proc.communicate()
    got = _listed(root)
    if got is not None and not killed:
        listed, tokens, _ = got
    if killed:
        return Watched(None, True, listed, tokens, most, on_disk)
    if proc.returncode != 0:
        return Watched(None, False, listed, tokens, most, on_disk, (err.strip().splitlines() or ["?"])[-1])
    result = json.loads(out.strip().splitlines()[-1])
    return Watched(result, False, listed, tokens, most, on_disk, result.get("error", ""))


Runs = list[tuple[Corpus, list[dict[str, Any]]]]


def resume_rounds(
    corpora: list[Corpus], rounds: int, shard_tokens: int, out_root: Path, env: dict[str, str]
) -> Runs:
    """Per corpus, per round: a full run, a run killed at half its shards, the rerun."""
    found = []
    full_dir, part_dir = out_root / "resume-full", out_root / "resume-part"
    for c in corpora:
        spec = {"path": str(c.path), "shard_tokens": shard_tokens, "threads": RESUME_THREADS}
        runs: list[dict[str, Any]] = []
        for r in range(rounds):
            remove(full_dir)
            remove(part_dir)
            os.sync()
            full = watch({**spec, "out": str(full_dir)}, env, None)
            if full.result is None or full.error:
                runs.append({"error": f"the full run failed: {full.error}"})
                break
            manifest = json.loads((full_dir / "manifest.json").read_text(encoding="utf-8"))
            shards = [s for split in manifest["splits"].values() for s in split["shards"]]
            expected, total = len(shards), manifest["totals"]["tokens"]
            half = math.ceil(expected / 2)
            reference = file_hashes(full_dir)
            run: dict[str, Any] = {"full": full.result["seconds"], "shards": expected, "tokens": total}
            # A manifest that lists no shard until the run ends cannot be resumed from:
            # kill when half the shard files are there instead, to show what a rerun does.
            per_shard = full.listed_while_running > 0
            if not per_shard:
                run["note"] = (
                    "the manifest listed no shard before the run ended: killed at half the shard files"
                )

            def stop(listed: int, files: int, half: int = half, per_shard: bool = per_shard) -> bool:
                return (listed if per_shard else files) >= half

            os.sync()
            part = watch({**spec, "out": str(part_dir)}, env, stop)
            if not part.killed:
                run["error"] = (
                    f"the run ended before it could be killed ({part.listed_while_running} of {expected} "
                    f"shards listed while it ran{'; ' + part.error if part.error else ''})"
                )
                runs.append(run)
                break
            run.update(killed_listed=part.listed, killed_tokens=part.listed_tokens, killed_files=part.on_disk)
            run["left"] = 1 - part.listed_tokens / total if total else None
            # Watched as the other two runs are, so that all three share the watcher's cost.
            rerun = watch({**spec, "out": str(part_dir)}, env, None)
            if rerun.result is None or rerun.error:
                message = f"the rerun failed: {rerun.error}"
                if "FileExistsError" in rerun.error and "resum" in rerun.error:
                    message = f"this bpekit cannot resume a killed run yet ({rerun.error})"
                run["error"] = message
                runs.append(run)
                break
            run["rerun"] = rerun.result["seconds"]
            run["ratio"] = run["rerun"] / run["full"]
            got = file_hashes(part_dir)
            run["identical"] = got == reference
            if not run["identical"]:
                differ = sorted(k for k in reference.keys() | got.keys() if reference.get(k) != got.get(k))
                run["differ"] = differ
            runs.append(run)
            left = "-" if run["left"] is None else f"{run['left']:.0%}"
            print(
                f"  resume {c.name} round {r + 1}/{rounds}: full {run['full']:.2f} s, killed at "
                f"{part.listed}/{expected} shards listed ({left} of the tokens left), rerun "
                f"{run['rerun']:.2f} s = {run['ratio']:.2f}x, identical: {run['identical']}",
                flush=True,
            )
        remove(full_dir)
        remove(part_dir)
        found.append((c, runs))
    return found


def resume_table(found: Runs) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The table, the figures the targets are judged on, and the problems found."""
    rows, figures, problems = [], {}, []
    for c, runs in found:
        done = [r for r in runs if "ratio" in r]
        failed = [r for r in runs if r.get("error")]
        row: dict[str, Any] = {"corpus": c.name, "runs": len(done)}
        notes = sorted({r["note"] for r in runs if r.get("note")})
        if failed:
            notes.append(f"FAILED: {failed[0]['error']}")
            problems.append(f"resume, {c.name}: {failed[0]['error']}")
            figures[f"resume_failed:{c.name}"] = failed[0]["error"]
        if done:
            row.update(
                full=statistics.median(r["full"] for r in done),
                rerun=statistics.median(r["rerun"] for r in done),
                ratio=statistics.median(r["ratio"] for r in done),
                left=statistics.median(r["left"] for r in done),
                shards=done[0]["shards"],
                killed=" / ".join(str(r["killed_listed"]) for r in done),
                identical="yes" if all(r["identical"] for r in done) else "NO",
            )
            figures[f"resume_ratio:{c.name}"] = row["ratio"]
            figures[f"resume_left:{c.name}"] = row["left"]
            figures[f"resume_identical:{c.name}"] = all(r["identical"] for r in done)
            for r in done:
                if not r["identical"]:
                    notes.append(f"differ: {', '.join(r['differ'][:4])}")
                    problems.append(
                        f"resume, {c.name}: the resumed dataset differs ({', '.join(r['differ'][:4])})"
                    )
        elif runs and "full" in runs[0]:
            row.update(full=runs[0]["full"], shards=runs[0]["shards"])
        row["note"] = "; ".join(notes)
        rows.append(row)
    text = (
        f"`encode_dataset` ({RESUME_THREADS} threads, npy shards of the throughput table's size) in "
        "fresh processes: a full run; a run killed with SIGKILL once its manifest lists at least half "
        "of the full run's shards; the same call again (it resumes), timed. Full run and rerun: the "
        "call's seconds (median over the rounds); killed at: the shards the manifest listed at the "
        "kill, per round; left: the share of the tokens it did not list (what a rerun must redo); "
        "rerun / full: the target is about 0.5; identical: every shard and index file of the "
        "resumed dataset has the full run's sha256."
    )
    cols = columns(
        ("corpus", "corpus", "text"),
        ("shards", "shards", "int"),
        ("full", "full run, s", "num"),
        ("killed", "killed at, shards listed", "text"),
        ("left", "left", "pct"),
        ("rerun", "rerun, s", "num"),
        ("ratio", "rerun / full", "ratio"),
        ("identical", "identical", "text"),
        ("runs", "rounds", "int"),
        ("note", "notes", "text"),
    )
    return table("Resume after SIGKILL at half the shards", text, cols, rows), figures, problems
