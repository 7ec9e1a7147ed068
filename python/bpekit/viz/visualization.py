"""``Visualization``: what ``visualize`` returns, an HTML page held in memory that Jupyter
renders and ``save`` writes."""

from __future__ import annotations

import os
from pathlib import Path

from bpekit._atomic import atomic_write
from bpekit._paths import fspath
from bpekit.viz.data import TextTokens
from bpekit.viz.page import page_html


class Visualization:
    """The tokens of a text and the tokenizer's vocabulary, as a self-contained page.

    ``html`` is the whole page (``save`` writes it); ``_repr_html_`` is the same view as
    one ``<div>``, which Jupyter shows in the cell's output; ``ids`` are the tokens in
    the text view (the first ones, when the text was too long to show all).
    """

    def __init__(self, title: str, text_tokens: TextTokens, fragment: str) -> None:
        self.title = title
        self.text_tokens = text_tokens
        self._fragment = fragment
        self._page: str | None = None

    @property
    def ids(self) -> list[int]:
        return list(self.text_tokens.ids)

    @property
    def html(self) -> str:
        if self._page is None:
            self._page = page_html(self.title, self._fragment)
        return self._page

    def _repr_html_(self) -> str:
        return self._fragment

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the page to ``path`` (a temporary file renamed into place, so an
        interrupted save leaves no half page); returns the path."""
        out = Path(fspath(path, "the output file"))
        atomic_write(out, self.html.encode("utf-8"))
        return out

    def __repr__(self) -> str:
        tt = self.text_tokens
        shown = f"{len(tt.ids):,} of {tt.total_tokens:,}" if tt.capped else f"{tt.total_tokens:,}"
        return f"<Visualization {self.title!r}: {shown} tokens>"
