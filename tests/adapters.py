"""CS336 assignment-1 adapters, each a one-line call of bpekit."""

from __future__ import annotations

import bpekit

run_train_bpe = lambda input_path, vocab_size, special_tokens, **kw: bpekit.train_bpe(  # noqa: E731
    input_path, vocab_size, special_tokens, **kw
)


def get_tokenizer(vocab, merges, special_tokens=None):
    return bpekit.Tokenizer(vocab, merges, special_tokens)
