"""``bpekit`` command line: one module per subcommand, each with ``add_parser`` and ``run``."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings
from pathlib import Path
from typing import Any

from bpekit._threads import check_num_threads

# Subcommand name -> module in this package. Each module defines
# ``add_parser(subparsers) -> ArgumentParser`` and ``run(args) -> int``.
COMMANDS = {
    "train": "train",
    "encode": "encode",
    "decode": "decode",
    "inspect": "inspect",
    "convert": "convert",
    "viz": "viz",
    "show": "show",
    "demo": "demo",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bpekit", description="Exact, fast byte-level BPE.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS.values():
        mod = importlib.import_module(f"bpekit.cli.{module}")
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run)
    return parser


def _quiet_broken_pipe() -> int:
    """Handles stdout's reader going away (``bpekit inspect ... | head -1``) as Unix
    tools do: no message, and the status of a process killed by SIGPIPE, 128 + 13,
    so that ``set -o pipefail`` sees what it sees for ``cat``. (Python leaves SIGPIPE
    ignored, so a write raises BrokenPipeError instead of ending the process.)"""
    try:
        # Python flushes stdout again on exit, which would fail again and print
        # "Exception ignored ..."; the docs' "Note on SIGPIPE" points it at devnull.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # a stdout without a file descriptor (a test's)
        pass
    return 141


def _os_error_text(e: OSError) -> str:
    """An OSError raised by Python itself (``[Errno 2] No such file or directory:
    'x.npy'``) worded as the core words its own: ``x.npy: no such file or directory``.

    >>> _os_error_text(FileNotFoundError(2, "No such file or directory", "x.npy"))
    'x.npy: no such file or directory'
    >>> _os_error_text(OSError("t.npy: not a .npy file"))
    't.npy: not a .npy file'
    """
    if e.filename is None or not e.strerror:
        return str(e)
    return f"{e.filename}: {e.strerror[:1].lower()}{e.strerror[1:]}"


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (what ``timeout`` and a closed terminal send), raised where
    Ctrl-C's ``KeyboardInterrupt`` would be, so that the same clean-up runs: the core
    stops at its next check and leaves no temporary file."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


def _stop_on_termination() -> None:
    """SIGTERM and SIGHUP stop a command as Ctrl-C does (by default they kill the
    process at once, leaving whatever was half done)."""
    for name in ("SIGTERM", "SIGHUP"):
        num = getattr(signal, name, None)
        if num is not None and signal.getsignal(num) in (signal.SIG_DFL, None):
            signal.signal(num, _raise_terminated)


def output_paths(args: argparse.Namespace) -> list[Path]:
    """The files a command writes (none for those that write to stdout)."""
    out = getattr(args, "out", None)
    if out is None:
        return []
    out = Path(out)
    if args.command in ("train", "demo"):
        return [out / name for name in ("vocab.json", "merges.txt", "bpekit.json")]
    return [out]


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _interrupted_message(args: argparse.Namespace, before: dict[Path, Any], e: KeyboardInterrupt) -> str:
    """What an interrupt left on disk, from the outputs' identities before and now:
    an interrupt can land after the last rename, when the new outputs are in place."""
    what = f"terminated ({e.args[0]})" if isinstance(e, Terminated) else "interrupted"
    changed = [p for p in output_paths(args) if _identity(p) != before.get(p)]
    if not changed:
        return f"bpekit: {what}; nothing was written"
    return f"bpekit: {what} after the output was complete: wrote {', '.join(map(str, changed))}"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    threads = getattr(args, "threads", None)
    try:
        # Checked before any work or output (demo printed its banner first).
        check_num_threads(threads, "--threads")
    except ValueError as e:
        print(f"bpekit {args.command}: error: {e}", file=sys.stderr)
        return 2
    saved = os.environ.get("RAYON_NUM_THREADS")
    if threads is not None and threads >= 1:
        # All of the command's parallel work (loading an encoding included) runs on
        # rayon's global pool, which reads this when the command first uses it.
        os.environ["RAYON_NUM_THREADS"] = str(threads)
    _stop_on_termination()
    before = {p: _identity(p) for p in output_paths(args)}
    try:
        with warnings.catch_warnings():
            # One line each, as the errors: a warning's default form adds the line
            # of Python source that raised it.
            warnings.showwarning = lambda message, *_, **__: print(
                f"bpekit {args.command}: warning: {message}", file=sys.stderr
            )
            status = int(args._run(args) or 0)
        # Here, not at exit, buffered output that meets a closed pipe raises.
        sys.stdout.flush()
        return status
    except BrokenPipeError:  # before OSError, which it is
        return _quiet_broken_pipe()
    except MemoryError as e:
        # The core's MemoryError says what could not be made; Python's own says nothing.
        print(f"bpekit {args.command}: error: {e or 'out of memory'}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print("\n" + _interrupted_message(args, before, e), file=sys.stderr)
        return 128 + e.signum if isinstance(e, Terminated) else 130
    except (OSError, ValueError, KeyError, TypeError) as e:
        # A KeyError's str() quotes its message. The core names the Python keyword;
        # on the command line it is a flag.
        text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        if isinstance(e, OSError):
            text = _os_error_text(e)
        message = text.replace(
            'pass errors="replace" or errors="ignore"', "pass --errors replace or --errors ignore"
        )
        print(f"bpekit {args.command}: error: {message}", file=sys.stderr)
        return 2
    finally:
        # A caller of main() in its own process keeps its environment.
        if saved is None:
            os.environ.pop("RAYON_NUM_THREADS", None)
        else:
            os.environ["RAYON_NUM_THREADS"] = saved


if __name__ == "__main__":
    sys.exit(main())
