"""``bpekit`` command line: one module per subcommand, each with ``add_parser`` and ``run``."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

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


# What names no option, though it starts with "-": a negative number ("-5").
_NUMBER = re.compile(r"-\d[\d.e_]*")


def _guess_option(name: str, options: Sequence[str]) -> str | None:
    """The option a mistyped ``name`` meant: the same with dashes for underscores
    (``--vocab_size``), else the closest by ``difflib`` (``--num-threads``: ``--threads``).

    >>> _guess_option("--vocab_size", ["--vocab-size", "--out"])
    '--vocab-size'
    >>> _guess_option("--num-threads", ["--threads", "--out"])
    '--threads'
    """
    import difflib

    dashed = name.replace("_", "-").lower()
    if dashed in options:
        return dashed
    long = [o for o in options if o.startswith("--")]
    close = difflib.get_close_matches(dashed, long, n=1, cutoff=0.75)
    return close[0] if close else None


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors say which option a mistyped one meant: argparse
    says "unrecognized arguments: --num-threads 4", or only that a required option is
    missing where ``--vocab_size`` was meant for it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._seen: list[str] = []

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        # The arguments this parser (a command's, or the top one) is given, for error().
        self._seen = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _command_parser(self) -> Parser:
        """The parser of the command among the arguments, where this is the top one:
        unrecognized arguments are found here, but they are the command's options."""
        for action in self._subparsers._group_actions if self._subparsers else []:
            choices = getattr(action, "choices", None) or {}
            command = next((a for a in self._seen if not a.startswith("-")), None)
            parser = choices.get(command) if command is not None else None
            if isinstance(parser, Parser):
                return parser
        return self

    def error(self, message: str) -> NoReturn:
        parser = self._command_parser()
        options = list(parser._option_string_actions)
        for arg in parser._seen:
            if arg == "--":
                break
            name = arg.split("=", 1)[0]
            if not name.startswith("-") or name == "-" or _NUMBER.fullmatch(name) or name in options:
                continue
            if not name.startswith("--") and name[:2] in options:  # -tgpt2
                continue
            if name.startswith("--") and any(o.startswith(name) for o in options):  # an abbreviation
                continue
            guess = _guess_option(name, options)
            hint = f"no option {name}" + (
                f"; did you mean {guess}?" if guess else f" (see {parser.prog} --help)"
            )
            if message.startswith(("the following arguments are required", "unrecognized arguments")):
                message = hint
            else:
                message = f"{message} (and {hint})"
            break
        # The command's usage and name ("bpekit train: error: ..."), not the top one's.
        argparse.ArgumentParser.error(parser, message)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="bpekit", description="Exact, fast byte-level BPE.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS.values():
        mod = importlib.import_module(f"bpekit.cli.{module}")
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run, _parser=p)
    return parser


# Per command, a keyword that means what another flag of it sets: convert's --to is the
# format= of save (the option classes' --format is how inputs are read).
_COMMAND_KEYWORDS = {"bpekit convert": {"format": "--to"}}


def _option_classes() -> list[type]:
    """The classes of options whose keywords messages name (imported when a message is
    worded, not at every start). A new class is one more entry here."""
    from bpekit.dataset.options import Layout, Marks
    from bpekit.options import OPTION_CLASSES

    return [*OPTION_CLASSES, Layout, Marks]


def keyword_flags(classes: Sequence[type]) -> dict[str, str]:
    """A Python keyword in a message and the flag that sets it, from the option classes'
    fields (``num_threads``: ``--threads``); a boolean whose flag turns it off (or on)
    maps with that value as a whole (``resume=False``: ``--overwrite``).

    >>> from bpekit.options import RunOptions
    >>> keyword_flags([RunOptions])
    {'num_threads': '--threads', 'chunk_size': '--chunk-size', 'progress=True': '--progress', \
'resume=False': '--overwrite'}
    """
    import dataclasses

    table: dict[str, str] = {}
    for cls in classes:
        for f in dataclasses.fields(cls):
            flag = f.metadata.get("flag")
            if flag is None:
                continue
            table[f"{f.name}={not f.default}" if isinstance(f.default, bool) else f.name] = flag
    return table


# A keyword with its value: errors="replace", text_field=, resume=False.
_KEYWORD = r"""(?<![\w/.\\-])([a-z][a-z0-9_]*)=("[^"]*"|'[^']*'|[\w.]+)?"""
# An API-only aside the command line has no form for: "pass it as path= (get_encoding(...))".
_API_ONLY = re.compile(r", or pass it as path= \([^()]*\([^()]*\)\)")
# Python written as a call (Tokenizer.save(DIR, format="tiktoken")) stays as it is: its
# keywords are the call's, not the command's.
_CALL = re.compile(r"[\w.]+\([^()]*\)")


def cli_wording(message: str, parser: argparse.ArgumentParser | None) -> str:
    """A library message in the command line's words: the Python keywords of the
    command's options become the flags (``text_field=`` -> ``--text-field``,
    ``errors="replace"`` -> ``--errors replace``); a keyword followed by its flag in
    parentheses (``resume=False (--overwrite)``, the library's way of naming both) gives
    way to the flag. Keywords of no option of the command stay as they are.

    >>> p = argparse.ArgumentParser()
    >>> for flag in ("--errors", "--text-field"):
    ...     _ = p.add_argument(flag)
    >>> _ = p.add_argument("--overwrite", action="store_true")
    >>> cli_wording('bad byte; pass errors="replace" or errors="ignore"', p)
    'bad byte; pass --errors replace or --errors ignore'
    >>> cli_wording("no column 'txt'; pass text_field=", p)
    "no column 'txt'; pass --text-field"
    >>> cli_wording("differs; start over with resume=False (--overwrite)", p)
    'differs; start over with --overwrite'
    >>> _ = p.add_argument("--seed")
    >>> cli_wording("seed must be an int from 0 to 2**64 - 1, not -1", p)
    '--seed must be an int from 0 to 2**64 - 1, not -1'
    >>> cli_wording("text_field 'a..b' has an empty part; see bpekit.train_bpe", p)
    "--text-field 'a..b' has an empty part; see bpekit.train_bpe"
    >>> cli_wording('in Python: encode_file(path, out, errors="replace")', p)
    'in Python: encode_file(path, out, errors="replace")'
    >>> cli_wording("text_field.jsonl: line 2: not JSON; see /data/text_field/errors=1", p)
    'text_field.jsonl: line 2: not JSON; see /data/text_field/errors=1'
    """
    message = re.sub(_KEYWORD + r" \((--[^()]+)\)", r"\3", message)
    message = re.sub(r"\(" + _KEYWORD + r", (--[^()]+)\)", r"(\3)", message)
    message = _API_ONLY.sub("", message)
    if parser is None:
        return message
    calls: list[str] = []

    def mask(m: re.Match[str]) -> str:
        calls.append(m.group(0))
        return f"\0{len(calls) - 1}\0"

    message = _CALL.sub(mask, message)
    aliases = {**keyword_flags(_option_classes()), **_COMMAND_KEYWORDS.get(parser.prog, {})}
    flags: dict[str, argparse.Action] = {}
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith("--"):
                flags.setdefault(action.dest, action)
                flags.setdefault(option, action)

    def flag(m: re.Match[str]) -> str:
        keyword, value = m.group(1), m.group(2)
        whole = aliases.get(m.group(0))
        if whole is not None and whole in flags:
            return whole
        name = aliases.get(keyword, keyword)
        action = flags.get(name) or flags.get(keyword)
        if action is None:
            return m.group(0)
        option = next(o for o in action.option_strings if o.startswith("--"))
        if value is None or action.nargs == 0:
            return option
        return f"{option} {value.strip(chr(34) + chr(39))}"

    def bare(m: re.Match[str]) -> str:
        word = m.group(0)
        action = flags.get(aliases.get(word, word))
        return word if action is None else next(o for o in action.option_strings if o.startswith("--"))

    message = re.sub(_KEYWORD, flag, message)
    # A one-word keyword that a check names first ("seed must be an int ...").
    message = re.sub(r"^[a-z]+(?= must )", bare, message)
    # A keyword named alone ("shard_tokens must be a positive int"): only those with an
    # underscore, which no English word has, and none quoted, called or part of a path.
    message = re.sub(r"(?<![\w'\"./\\-])[a-z]+(?:_[a-z]+)+(?![\w'\"=(./\\-])", bare, message)
    message = re.sub("\0(\\d+)\0", lambda m: calls[int(m.group(1))], message)
    return message.replace(" ;", ";").rstrip()


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


def _complete_dataset(folder: Path) -> bool:
    """Whether ``folder`` holds a dataset whose manifest says it is complete."""
    import json

    try:
        return json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("complete") is True
    except (OSError, ValueError, AttributeError, RecursionError):
        return False


def _interrupted_message(args: argparse.Namespace, before: dict[Path, Any], e: KeyboardInterrupt) -> str:
    """What an interrupt left on disk, from the outputs' identities before and now:
    an interrupt can land after the last rename, when the new outputs are in place."""
    what = f"terminated ({e.args[0]})" if isinstance(e, Terminated) else "interrupted"
    changed = [p for p in output_paths(args) if _identity(p) != before.get(p)]
    # A dataset folder changes as soon as a run starts in it: only its manifest says
    # whether the dataset was complete.
    unfinished = [p for p in changed if p.is_dir() and not _complete_dataset(p)]
    if unfinished:
        return (
            f"bpekit: {what}; {unfinished[0]} holds an unfinished dataset: run the same command "
            "again to go on from its finished shards (or with --overwrite to start over)"
        )
    if not changed:
        return f"bpekit: {what}; nothing was written"
    return f"bpekit: {what} after the output was complete: wrote {', '.join(map(str, changed))}"


def _quiet_ray(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """For a ``--ray`` run, Ray's own INFO and WARNING lines kept off the terminal (its
    errors still show): among the command's own lines they read as bpekit's."""
    if getattr(args, "ray", None) is None:
        return contextlib.nullcontext()
    from bpekit.distributed.backends import quiet_ray

    return quiet_ray()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = getattr(args, "_parser", None)
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
                f"bpekit {args.command}: warning: {cli_wording(str(message), command)}", file=sys.stderr
            )
            with _quiet_ray(args):
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
    except RecursionError as e:
        # The readers name the file (a JSON document nested ~1,000 deep); this is the
        # last resort for one that does not, rather than a traceback.
        print(f"bpekit {args.command}: error: an input is nested too deeply to read ({e})", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print("\n" + _interrupted_message(args, before, e), file=sys.stderr)
        return 128 + e.signum if isinstance(e, Terminated) else 130
    except (OSError, ValueError, KeyError, TypeError) as e:
        # A KeyError's str() quotes its message. The library names Python keywords;
        # on the command line they are flags (cli_wording).
        text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        if isinstance(e, OSError):
            text = _os_error_text(e)
        print(f"bpekit {args.command}: error: {cli_wording(text, command)}", file=sys.stderr)
        return 2
    finally:
        # A caller of main() in its own process keeps its environment.
        if saved is None:
            os.environ.pop("RAYON_NUM_THREADS", None)
        else:
            os.environ["RAYON_NUM_THREADS"] = saved


if __name__ == "__main__":
    sys.exit(main())
