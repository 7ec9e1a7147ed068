"""``bpekit`` command line: one module per subcommand, each with ``add_parser`` and ``run``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Subcommand name -> module in this package. Each module defines
# ``add_parser(subparsers) -> ArgumentParser`` and ``run(args) -> int``.
COMMANDS = {
    "train": "train",
    "encode": "encode",
    "decode": "decode",
    "inspect": "inspect",
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    threads = getattr(args, "threads", None)
    saved = os.environ.get("RAYON_NUM_THREADS")
    if threads is not None and threads >= 1:
        # All of the command's parallel work (loading an encoding included) runs on
        # rayon's global pool, which reads this when the command first uses it.
        os.environ["RAYON_NUM_THREADS"] = str(threads)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("\nbpekit: interrupted; nothing was written", file=sys.stderr)
        return 130
    except (OSError, ValueError, KeyError, TypeError) as e:
        # A KeyError's str() quotes its message. The core names the Python keyword;
        # on the command line it is a flag.
        text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
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
