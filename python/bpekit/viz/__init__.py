"""A tokenizer visualizer: the tokens of a text, each on its own colour, and an explorer of
the vocabulary that shows how each token was merged from single bytes.

``visualize(tok, text)`` gives a ``Visualization`` (rendered by Jupyter, ``.save(path)``
writes a page that needs no network); ``bpekit viz`` writes that page and ``bpekit show``
prints the tokens in a terminal. ``tok`` is a ``bpekit.Tokenizer`` or any object with
what ``TokenizerLike`` lists.
"""

from __future__ import annotations

from bpekit.viz.data import MAX_BYTES, MAX_TOKENS, TokenizerLike, tokenize_text, vocab_payload
from bpekit.viz.page import fragment_html
from bpekit.viz.visualization import Visualization

__all__ = ["TokenizerLike", "Visualization", "visualize"]


def visualize(
    tokenizer: TokenizerLike,
    text: str,
    *,
    title: str | None = None,
    max_tokens: int = MAX_TOKENS,
    max_bytes: int = MAX_BYTES,
) -> Visualization:
    """The tokens of ``text`` under ``tokenizer`` and its vocabulary, as a page. The text
    view shows at most ``max_tokens`` tokens and ``max_bytes`` bytes of text, and says
    so when it stops early; the counts are of the whole text. ``title`` defaults to the
    tokenizer's name."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    tt = tokenize_text(tokenizer, text, max_tokens, max_bytes)
    vocab = vocab_payload(tokenizer)
    name = title if title is not None else tokenizer.name
    return Visualization(name, tt, fragment_html(name, tt, vocab, len(tokenizer.special_tokens)))
