"""The HTML of a visualization: the text view rendered here, in Python, as one ``<span
data-id>`` per token (so the coloured text shows with scripts off, in a notebook that is
not trusted, and tests can read it), and the template, style sheet and script inlined
around it, so that one file opened from disk needs nothing else."""

from __future__ import annotations

import html
import json
import re
import secrets
from importlib import resources
from typing import Any

from bpekit.viz.data import TextTokens, hex_bytes, token_text
from bpekit.viz.marks import marked_runs

_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")


def _resource(name: str) -> str:
    return resources.files("bpekit.viz").joinpath(name).read_text(encoding="utf-8")


def _fill(template: str, values: dict[str, str]) -> str:
    """Replaces each ``{{NAME}}`` in one pass, so that a value holding ``{{...}}`` (a
    text about templates) is never filled in again."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _token_html(piece: bytes, special: str | None) -> tuple[str, str]:
    """(class, inner HTML) of one token of the text view. The marks of spaces are no
    break opportunity, as spaces are: a ``<wbr>`` before them lets lines wrap between
    words, and so before a token rather than inside it."""
    if special is not None:
        return "bpv-sp", html.escape(special, quote=False)
    text = token_text(piece)
    if text is None:
        return "bpv-x", hex_bytes(piece)
    inner = []
    for run, mark in marked_runs(text):
        if not mark:
            inner.append(html.escape(run, quote=False))
        else:
            inner.append(
                ("<wbr>" if "·" in run or "→" in run else "") + f"<i>{html.escape(run, quote=False)}</i>"
            )
    return "", "".join(inner)


# A chunk of the text view ends after a token that ends a line once it holds this many
# tokens, or after any token once it holds CHUNK_MAX: one block of 200,000 inline spans
# took Chromium 27 s to lay out, blocks of a few hundred (drawn only when scrolled to,
# `content-visibility: auto`) take 1 s.
CHUNK_MIN = 300
CHUNK_MAX = 2000
# For the height a chunk is given before it is drawn, so that the scroll bar is right.
_LINE_PX = 27.3
_CHARS_PER_LINE = 90


def _chunk_html(spans: list[str], texts: list[str]) -> str:
    lines = sum(1 + len(line) // _CHARS_PER_LINE for line in "".join(texts).split("\n"))
    height = round(lines * _LINE_PX)
    return f'<div class="bpv-k" style="contain-intrinsic-size:auto {height}px">{"".join(spans)}</div>'


def text_view_html(tt: TextTokens, specials: dict[int, str]) -> str:
    """One ``<span data-id="ID">`` per shown token, in order, in blocks of a few hundred
    that end at a line's end where they can. The spans' colours come from the style
    sheet (``nth-of-type``), which keeps 200,000 of them a few MB."""
    out: list[str] = []
    spans: list[str] = []
    texts: list[str] = []
    for i, piece in zip(tt.ids, tt.pieces, strict=True):
        cls, inner = _token_html(piece, specials.get(i))
        attr = f' class="{cls}"' if cls else ""
        spans.append(f'<span data-id="{i}"{attr}>{inner}</span>')
        texts.append(piece.decode("utf-8", "replace"))
        if (len(spans) >= CHUNK_MIN and piece.endswith(b"\n")) or len(spans) >= CHUNK_MAX:
            out.append(_chunk_html(spans, texts))
            spans, texts = [], []
    if spans:
        out.append(_chunk_html(spans, texts))
    return "".join(out)


def _facts(items: list[tuple[str, str]]) -> str:
    return "".join(f"<div><dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd></div>" for k, v in items)


def _amount(n: int) -> str:
    """A size as the notice words it.

    >>> _amount(1 << 20), _amount(1000)
    ('1 MB', '1,000 bytes')
    """
    return f"{n >> 20:,} MB" if n % (1 << 20) == 0 else f"{n:,} bytes"


def _notice(tt: TextTokens) -> str:
    if tt.total_tokens == 0:
        return (
            '<p class="bpv-notice bpv-empty">The text is empty: there are no tokens to show. '
            "The token explorer and the vocabulary below still work.</p>"
        )
    if tt.capped:
        return (
            f'<p class="bpv-notice">Showing the first {len(tt.ids):,} of {tt.total_tokens:,} tokens '
            f"(the text view stops at {tt.max_tokens:,} tokens or {_amount(tt.max_bytes)} of text); "
            "the counts above are of the whole text.</p>"
        )
    return ""


def _script_json(value: Any) -> str:
    """JSON that is safe inside ``<script>``: no ``</script>`` or ``<!--`` can form."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def fragment_html(title: str, tt: TextTokens, vocab: dict[str, Any], n_special: int) -> str:
    """The visualization as one ``<div>`` with its style and script: what Jupyter shows,
    and the body of the page. Its id is random so that two in one notebook each find
    their own elements."""
    specials = {i: t for t, i in vocab["specials"]}
    vocab_facts = [
        ("vocabulary", f"{vocab['n_tokens']:,}"),
        ("merges", f"{vocab['n_merges']:,}"),
        ("special tokens", f"{n_special:,}"),
    ]
    text_facts = [
        ("tokens", f"{tt.total_tokens:,}"),
        ("bytes", f"{tt.total_bytes:,}"),
        ("characters", f"{tt.total_chars:,}"),
        ("bytes / token", f"{tt.bytes_per_token:.2f}" if tt.total_tokens else "–"),
    ]
    return _fill(
        _resource("template.html"),
        {
            "ROOT_ID": f"bpv-{secrets.token_hex(6)}",
            "CSS": _resource("viz.css"),
            "JS": _resource("viz.js"),
            "TITLE": html.escape(title),
            "VOCAB_FACTS": _facts(vocab_facts),
            "TEXT_FACTS": _facts(text_facts),
            "NOTICE": _notice(tt),
            "TEXT_VIEW": text_view_html(tt, specials),
            "DATA": _script_json({"vocab": vocab}),
        },
    )


def page_html(title: str, fragment: str) -> str:
    """A whole HTML document around ``fragment``: the file ``bpekit viz`` writes."""
    return _fill(_resource("page.html"), {"TITLE": html.escape(title), "BODY": fragment})
