"""`make demo` as a newcomer meets it: a quiet install, then `bpekit demo`, which ends
with commands to try on what it made, with the paths it wrote, and each of them runs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, data_path


def bpekit_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_demo_ends_with_commands_that_run_on_what_it_made(tmp_path: Path) -> None:
    corpus = data_path("cs336", "tinystories_sample.txt")
    out = tmp_path / "demo out"  # a space: the commands quote their paths
    r = bpekit_cli("demo", "--input", str(corpus), "--vocab-size", "400", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    tail = r.stdout[r.stdout.index("try it:\n") :].splitlines()[1:]
    commands = [shlex.split(line) for line in tail]
    assert [c[:2] for c in commands] == [["bpekit", "show"], ["bpekit", "viz"], ["bpekit", "encode"]]
    assert all(c[c.index("-t") + 1] == str(out) for c in commands)
    for command in commands:
        run = bpekit_cli(*command[1:])
        assert run.returncode == 0, (command, run.stderr)
    shown = bpekit_cli(*commands[0][1:], "--color", "never").stdout.splitlines()[0]
    assert shown.replace("|", "") == commands[0][-1] and shown.count("|") > 5
    assert (out / "viz.html").is_file()
    assert commands[2][2] == str(corpus) and (out / "tokens.npy").is_file()


def test_the_install_that_make_runs_keeps_pip_quiet() -> None:
    # pip, run by maturin, printed ~140 lines ("Ignoring tiktoken: markers 'extra ==
    # "bench"' ...", one per requirement already there) before the demo's own: PIP_QUIET
    # keeps its warnings and errors only; -q quiets cargo.
    makefile = (ROOT / "Makefile").read_text()
    build = re.search(r"^build:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert build is not None
    install = next(line for line in build.group(1).splitlines() if "maturin develop" in line)
    assert "PIP_QUIET=1" in install and " -q" in install
    demo = re.search(r"^demo:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert demo is not None and "source $(VENV)/bin/activate" in demo.group(1)
