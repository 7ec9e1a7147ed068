"""The flags of how inputs are read and how a run goes are made from the option classes
(`bpekit.options`): each flag's default, choices and help are its field's, on every
command that reads a corpus; and the messages' keywords become the flags the classes
name."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from bpekit.cli import _option_classes, build_parser, keyword_flags
from bpekit.cli._input import dest_of
from bpekit.options import DistributedOptions, ReadOptions, RunOptions

READ = [f for f in dataclasses.fields(ReadOptions)]
COMMANDS = {
    "train": [*READ, *(f for f in dataclasses.fields(RunOptions) if f.name in ("num_threads", "chunk_size"))],
    "demo": READ,
    "encode": READ,
    "inspect": [f for f in READ if f.name != "errors"],
}


def actions(name: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices[name]
    return {o: a for a in parser._actions for o in a.option_strings}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_flag_is_its_options_field(name: str) -> None:
    flags = actions(name)
    for f in COMMANDS[name]:
        action = flags[f.metadata["flag"]]
        assert action.dest == dest_of(f.metadata["flag"])
        assert action.default == f.default, f.name
        assert action.choices == f.metadata["choices"], f.name
        assert action.help is not None and action.help.startswith(f.metadata["doc"].replace("%", "%%"))


def test_the_spread_flags_are_distributed_options() -> None:
    for name in ("train", "encode"):
        flags = actions(name)
        for f in dataclasses.fields(DistributedOptions):
            if f.name in ("work_dir", "workers", "unit_bytes"):
                assert flags[f.metadata["flag"]].default == f.default


def test_messages_name_the_flags_of_every_option_class() -> None:
    table = keyword_flags(_option_classes())
    # Where the keyword and the flag differ, and the booleans whose flag turns them off.
    assert table["num_threads"] == "--threads"
    assert table["resume=False"] == "--overwrite"
    assert table["checksums=False"] == "--no-checksums"
    assert table["address"] == "--ray"
    for cls in _option_classes():
        for f in dataclasses.fields(cls):
            if f.metadata.get("flag") is not None:
                key = f"{f.name}={not f.default}" if isinstance(f.default, bool) else f.name
                assert table[key] == f.metadata["flag"]
