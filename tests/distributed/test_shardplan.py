"""The shard plan's bulk path equals its per-document rules.

``ShardPlanner`` places a split's share of an item's whole documents a shard at a time
(``_Split.whole_run``); with ``bulk=False`` every document goes through the rules of
the one-machine writer one by one. Both must give the same shards (their pieces,
document starts, places and first documents), the same shards closed after each unit
and the same units still held by open shards, for any skeletons: text items whose
first document continues the last item's, records of no ids, documents longer than a
shard, several inputs cut into several units, marks around files, a val split.
(test_distributed_encode.py checks the plan's shards against one machine's bytes.)
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpekit.distributed.consumed import _items_of
from bpekit.distributed.shardplan import Item, ShardPlan, ShardPlanner

# An item: its documents' lengths (a text item: the ids after its last cut, too).
ITEM = st.tuples(st.lists(st.integers(0, 12), max_size=30), st.integers(0, 9))
INPUT = st.tuples(st.booleans(), st.lists(st.lists(ITEM, min_size=1, max_size=3), min_size=1, max_size=3))


def _units(inputs: list[tuple[bool, list[list[tuple[list[int], int]]]]], width: int) -> list[list[Item]]:
    """Unit files' skeletons: each input's parts are units (an input continued over
    several), each part its items, with offsets as a unit file lays them out."""
    units: list[list[Item]] = []
    for input, (text, parts) in enumerate(inputs):
        for part in parts:
            items, offset = [], 32
            for lengths, tail in part:
                if text:
                    # A text item's documents end after a special token: none is empty.
                    lengths = [max(1, n) for n in lengths]
                ends = np.cumsum(lengths, dtype=np.int64) if lengths else np.zeros(0, np.int64)
                ids = int(ends[-1]) if len(ends) else 0
                ids += tail if text else 0
                cuts = ends.astype("<u8").tobytes()
                items.append(Item(input, 0, len(lengths), 0, 0, offset + 56, ids, cuts))
                offset += 56 + ids * width + (0 if text else len(lengths) * 8)
            units.append(items)
    return units


def _plan(units: list[list[Item]], is_text: list[bool], bulk: bool, **options: Any) -> list[Any]:
    splits = ("train", "val") if options["val_fraction"] > 0 else ("train",)
    planner = ShardPlanner(is_text, splits, **options, bulk=bulk)
    seen: list[Any] = []
    for k, items in enumerate(units):
        planner.add(k, items)
        seen.append((planner.closed(), planner.open_units(), planner.documents))
    seen.append((planner.finish(len(is_text)), planner.closed(), planner.documents))
    return seen


@settings(max_examples=300, deadline=None)
@given(
    inputs=st.lists(INPUT, min_size=1, max_size=4),
    shard_tokens=st.integers(1, 40),
    width=st.sampled_from([2, 4]),
    val_fraction=st.sampled_from([0.0, 0.3, 0.9]),
    seed=st.integers(0, 2**64 - 1),
    marks=st.tuples(*[st.sampled_from([None, 7]) for _ in range(3)]),
)
def test_the_bulk_plan_is_the_per_document_plan(
    inputs: Any, shard_tokens: int, width: int, val_fraction: float, seed: int, marks: Any
) -> None:
    units = _units(inputs, width)
    is_text = [text for text, _ in inputs]
    options = dict(
        shard_tokens=shard_tokens,
        width=width,
        val_fraction=val_fraction,
        seed=seed,
        file_bos=marks[0],
        file_eos=marks[1],
        after_each_file=marks[2],
    )
    assert _plan(units, is_text, True, **options) == _plan(units, is_text, False, **options)


def test_a_long_run_of_documents_is_planned_a_shard_at_a_time() -> None:
    """200,000 documents of one record file, shards of 1,000 ids: the same plan both
    ways, and every document's start recorded."""
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 60, 200_000)
    ends = np.cumsum(lengths)
    items = [Item(0, 0, len(lengths), 0, 0, 88, int(ends[-1]), ends.astype("<u8").tobytes())]
    options = dict(
        shard_tokens=1000,
        width=4,
        val_fraction=0.01,
        seed=5,
        file_bos=None,
        file_eos=None,
        after_each_file=None,
    )
    bulk, one_by_one = _plan([items], [False], True, **options), _plan([items], [False], False, **options)
    assert bulk == one_by_one
    shards = bulk[-1][0]
    assert sum(s.documents for s in shards) == len(lengths)
    assert sum(s.tokens for s in shards) == int(ends[-1])


def test_a_shard_let_go_keeps_its_document_count() -> None:
    """The driver drops a written shard's starts and pieces; its manifest facts stay."""
    for continues in (False, True):
        shard = ShardPlan("train", 3, continues, 7, tokens=9, starts=[0, 4, 6], pieces=[(0, 88, 9)])
        documents = shard.documents
        shard.let_go()
        assert (shard.starts, shard.pieces, shard.documents) == ([], [], documents)
        assert documents == 3 - int(continues)


def test_a_skeleton_read_back_with_its_ends_out_of_order_is_refused() -> None:
    """A ``.skel`` edited by hand to end documents out of order, or past its item's
    ids, is not one bpekit writes (its unit is encoded again), and the plan never
    meets a negative length: the bulk path would not move on from one."""
    good = [0, 0, 3, 0, 0, 88, 9, base64.b64encode(np.array([2, 5, 9], "<u8").tobytes()).decode()]
    assert _items_of([good])[0].cuts == np.array([2, 5, 9], "<u8").tobytes()
    for ends in ([5, 2, 9], [2, 5, 10]):
        row = [*good[:7], base64.b64encode(np.array(ends, "<u8").tobytes()).decode()]
        with pytest.raises(ValueError, match="cuts are not in order"):
            _items_of([row])
    bad = Item(0, 0, 2, 0, 0, 88, 9, np.array([5, 2], "<u8").tobytes())
    planner = ShardPlanner([False], ("train",), 4, 2, 0.0, 0, None, None, None)
    with pytest.raises(ValueError, match="unit 0: a document of -3 ids"):
        planner.add(0, [bad])
