"""The offsets check both offsets test files run: ids, the list form and the array form
against ``tokenizers``' encoding, with and without the template's special tokens."""

from __future__ import annotations

from typing import Any

import numpy as np

import bpekit


def check_offsets(hf: Any, ours: bpekit.Tokenizer, text: str, where: str) -> None:
    for add in (False, True):
        want = hf.encode(text, add_special_tokens=add)
        ids, offsets = ours.encode_with_offsets(text, add_special_tokens=add)
        assert ids == want.ids, f"{where}: ids of {text[:60]!r}"
        if offsets != want.offsets:
            k = next(i for i, (a, b) in enumerate(zip(offsets, want.offsets, strict=False)) if a != b)
            raise AssertionError(
                f"{where} (add_special_tokens={add}): offsets differ at {k} ({want.tokens[k]!r}): "
                f"tokenizers {want.offsets[max(0, k - 2) : k + 3]}, bpekit {offsets[max(0, k - 2) : k + 3]} "
                f"(text {text[:60]!r})"
            )
        arr_ids, arr = ours.encode_with_offsets_to_numpy(text, add_special_tokens=add)
        assert arr_ids.tolist() == ids and arr.shape == (len(ids), 2) and arr.dtype == np.uint64
        assert [tuple(p) for p in arr.tolist()] == offsets, where
