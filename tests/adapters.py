"""CS336 assignment-1 test adapters: each is a one-line call of bpekit."""

from __future__ import annotations

import os

import bpekit


def run_train_bpe(
    input_path: str | os.PathLike[str], vocab_size: int, special_tokens: list[str], **kwargs: object
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    return bpekit.train_bpe(input_path, vocab_size, special_tokens, **kwargs)  # type: ignore[arg-type]
