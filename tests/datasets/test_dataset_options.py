"""The option objects of file and dataset encodes (``bpekit.dataset.Layout`` and
``Marks``, beside ``bpekit.options.ReadOptions`` and ``RunOptions``): their defaults,
checks and flags, defined once, and the public functions' keywords read from them."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import bpekit
import bpekit.distributed
from bpekit.dataset import Layout, Marks
from bpekit.dataset.options import RECORDS_DEFAULT
from bpekit.options import DistributedOptions, ReadOptions, RunOptions

# Each public function and the option classes whose every field it takes as a keyword.
FRONTS: list[tuple[Callable[..., Any], tuple[type, ...]]] = [
    (bpekit.encode_dataset, (Layout, Marks, ReadOptions, RunOptions)),
    (bpekit.distributed.encode_dataset, (Layout, Marks, ReadOptions, RunOptions, DistributedOptions)),
    (bpekit.encode_file, (Marks, ReadOptions)),
]


@pytest.mark.parametrize(("front", "classes"), FRONTS, ids=lambda x: getattr(x, "__module__", ""))
def test_public_functions_take_every_option_as_a_typed_keyword(
    front: Callable[..., Any], classes: tuple[type, ...]
) -> None:
    params = inspect.signature(front).parameters
    assert not [p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    for cls in classes:
        for f in dataclasses.fields(cls):
            param = params[f.name]
            assert param.kind is inspect.Parameter.KEYWORD_ONLY, f.name
            assert param.annotation != "Any", f.name
            # Each tasks' threads: 1 by default on the workers of a distributed run.
            if (front, f.name) != (bpekit.distributed.encode_dataset, "num_threads"):
                assert param.default is f.default, f.name
    with pytest.raises(TypeError, match="unexpected keyword argument 'shard_size'"):
        front([], "x", "gpt2", shard_size=1)


def test_option_objects_keep_defaults_checks_and_flags() -> None:
    default = Layout(shard_tokens=2**28, shard_format="npy", val_fraction=0.0, seed=0, checksums=True)
    assert Layout() == default
    assert Marks().eos is RECORDS_DEFAULT and Marks().bos is None
    flags = {f.name: f.metadata["flag"] for cls in (Layout, Marks) for f in dataclasses.fields(cls)}
    assert flags["shard_tokens"] == "--shard-tokens" and flags["checksums"] == "--no-checksums"
    assert flags["after_each_file"] == "--after-each-file"
    assert Layout(dtype=np.uint32).dtype == "uint32"
    with pytest.raises(
        ValueError, match=r"shard_format must be one of npy, bin, llmc, megatron, datatrove, not 'csv'"
    ):
        Layout(shard_format="csv")
    with pytest.raises(ValueError, match=r"dtype must be uint16 or uint32, not float32"):
        Layout(dtype="float32")
    with pytest.raises(TypeError, match=r"checksums must be True or False, not 'no'"):
        Layout(checksums="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"the token to write after each file must be the text of a token"):
        Marks(after_each_file=5)  # type: ignore[arg-type]
    # The default eos is told apart by identity, after a trip to another process too.
    assert pickle.loads(pickle.dumps(Marks())).eos is RECORDS_DEFAULT


def test_options_are_checked_before_the_tokenizer_is_loaded(tmp_path) -> None:
    """A bad option is named before any work, even with a tokenizer that cannot load."""
    with pytest.raises(ValueError, match=r"val_fraction must be at least 0 and below 1, not 1.5"):
        bpekit.encode_dataset([], tmp_path / "ds", tmp_path / "no tokenizer", val_fraction=1.5)
    with pytest.raises(ValueError, match=r"chunk_size must be 0 \(automatic\)"):
        bpekit.encode_file([], tmp_path / "o.npy", tmp_path / "no tokenizer", chunk_size=-1)
    assert not (tmp_path / "ds").exists()


def test_the_old_module_name_still_works() -> None:
    import bpekit.dataset
    import bpekit.datasets

    for name in bpekit.datasets.__all__:
        assert getattr(bpekit.datasets, name) is getattr(bpekit.dataset, name)
    assert bpekit.datasets.encode_file is bpekit.encode_file


def test_the_lazy_names_are_listed_by_dir_and_help() -> None:
    import pydoc

    import bpekit.dataset
    import bpekit.datasets

    for module in (bpekit.dataset, bpekit.datasets):
        assert {"encode_file", "encode_dataset", "TokenDataset", "get_batch"} <= set(dir(module))
    assert "encode_file(" in pydoc.render_doc(bpekit.datasets)
