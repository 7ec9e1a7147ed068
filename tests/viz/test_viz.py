"""The tokenizer visualizer: the page ``bpekit viz`` and ``Tokenizer.visualize`` write (read
back with ``html.parser``, and loaded in headless Chromium), and ``bpekit show``."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from _browser import Browser, find_chromium, png_size_and_colours
from conftest import bpekit_encoding, data_path

import bpekit
from bpekit.viz import Visualization, visualize
from bpekit.viz.data import MAX_TOKENS, vocab_payload

# Everything the text view must get right: markup, whitespace of every kind, a special
# token, characters split between tokens (partial UTF-8), emoji.
TEXT = (
    'Hello <script>alert("x")</script> & <b>bold</b>\n'
    "\tdef f(x):  return x  # two  spaces\r\n"
    "日本語 🤖 Ελληνικά<|endoftext|>done\n\n"
)


class Page(HTMLParser):
    """What a test reads from a page: the text view's ``data-id`` elements, in order, and
    their text; every tag's attributes; the script and style contents."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.token_ids: list[int] = []
        self.token_text: list[str] = []
        self.token_class: list[str] = []
        self.scripts: list[str] = []
        self.script_attrs: list[dict[str, str | None]] = []
        self.styles: list[str] = []
        self._stack: list[str] = []
        self._text_depth: int | None = None  # depth of the text view's element
        self._token_depth: int | None = None
        self._raw: list[str] | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag in ("script", "style"):
            self._raw = []
        if tag == "script":
            self.script_attrs.append(a)
        if tag in ("wbr", "br", "meta", "input", "img", "link"):
            return  # void elements have no end tag
        self._stack.append(tag)
        depth = len(self._stack)
        if a.get("data-role") == "text":
            self._text_depth = depth
        elif self._text_depth is not None and "data-id" in a:
            assert self._token_depth is None, "a token element inside another"
            self._token_depth = depth
            self.token_ids.append(int(a["data-id"] or "-1"))
            self.token_text.append("")
            self.token_class.append(a.get("class") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._raw is not None:
            (self.scripts if tag == "script" else self.styles).append("".join(self._raw))
            self._raw = None
        depth = len(self._stack)
        if depth == self._token_depth:
            self._token_depth = None
        if depth == self._text_depth:
            self._text_depth = None
        assert self._stack and self._stack[-1] == tag, f"</{tag}> closes <{self._stack[-1:]}>"
        self._stack.pop()

    def handle_data(self, data: str) -> None:
        if self._raw is not None:
            self._raw.append(data)
        if self._token_depth is not None:
            self.token_text[-1] += data

    def data(self) -> dict[str, Any]:
        """The JSON the page's script reads."""
        blob = next(
            s for s, a in zip(self.scripts, self.script_attrs, strict=True) if a.get("data-role") == "data"
        )
        return json.loads(blob)


@pytest.fixture(scope="module")
def gpt2() -> bpekit.Tokenizer:
    return bpekit_encoding("gpt2")


@pytest.fixture(scope="module")
def o200k() -> bpekit.Tokenizer:
    return bpekit_encoding("o200k_base")


@pytest.fixture(scope="module")
def trained() -> bpekit.Tokenizer:
    """A CS336-style tokenizer: ids in merge order, the special token among them."""
    vocab, merges = bpekit.train_bpe(data_path("corpora", "tinyshakespeare.txt"), 1000, ["<|endoftext|>"])
    return bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"])


@pytest.fixture(scope="module")
def gpt2_page(gpt2: bpekit.Tokenizer) -> tuple[str, Page]:
    html = visualize(gpt2, TEXT).html
    return html, Page(html)


# ---- the page's HTML ----------------------------------------------------------------


def test_page_is_self_contained(gpt2_page: tuple[str, Page]) -> None:
    html, page = gpt2_page
    assert html.startswith("<!doctype html>")
    for tag, attrs in page.tags:
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
        if tag == "script":
            assert "src" not in attrs, attrs
        for name in ("src", "href", "action", "data"):
            value = attrs.get(name) or ""
            assert not re.match(r"\s*(https?:)?//", value), (tag, name, value)
    assert not re.search(r"<script[^>]*\ssrc\s*=", html)
    for css in page.styles:
        assert "@import" not in css and "url(" not in css
    for js in page.scripts:
        assert not re.search(r"\b(fetch|XMLHttpRequest|import\s*\(|WebSocket)\b", js), (
            "the page loads nothing"
        )
    assert "http://" not in html and "https://" not in html


def test_one_element_per_token_with_its_id(gpt2: bpekit.Tokenizer, gpt2_page: tuple[str, Page]) -> None:
    _, page = gpt2_page
    ids = gpt2.encode(TEXT, allowed_special="all")
    assert page.token_ids == ids
    assert 'class="bpv-sp"' in gpt2_page[0]
    special = page.token_ids.index(gpt2.special_tokens["<|endoftext|>"])
    assert page.token_text[special] == "<|endoftext|>" and page.token_class[special] == "bpv-sp"
    # Whitespace marks: spaces as "·", a tab as "→", a newline as "↵" then the line break.
    shown = "".join(page.token_text)
    assert "·" in shown and "→\t" in shown and "↵\n" in shown and "␍" in shown
    assert shown.count("↵\n") == TEXT.count("\n")


def test_markup_in_the_text_is_escaped(gpt2_page: tuple[str, Page]) -> None:
    html, page = gpt2_page
    assert "<script>alert" not in html and "<b>bold" not in html
    assert ">&lt;</span>" in html  # "<" is a token of its own here
    shown = "".join(page.token_text).replace("·", " ")
    assert '<script>alert("x")</script>' in shown and "<b>bold</b>" in shown
    # Only the page's own two scripts: its data and its code.
    assert len(page.scripts) == 2
    assert "</script" not in page.scripts[0]


def test_partial_utf8_tokens_show_hex(gpt2: bpekit.Tokenizer, gpt2_page: tuple[str, Page]) -> None:
    _, page = gpt2_page
    ids = gpt2.encode("日本語", allowed_special="all")
    pieces = [gpt2.decode_single_token_bytes(i) for i in ids]
    assert any(not _valid_utf8(p) for p in pieces)
    hex_tokens = [
        (i, t)
        for i, t, c in zip(page.token_ids, page.token_text, page.token_class, strict=True)
        if c == "bpv-x"
    ]
    assert hex_tokens
    for i, text in hex_tokens:
        piece = gpt2.decode_single_token_bytes(i)
        assert not _valid_utf8(piece)
        assert text == piece.hex(" ")
    assert (ids[0], b"\xe6\x97".hex(" ")) in hex_tokens or (ids[0], pieces[0].hex(" ")) in hex_tokens


def _valid_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_header_counts(gpt2: bpekit.Tokenizer, gpt2_page: tuple[str, Page]) -> None:
    html, _ = gpt2_page
    n = len(gpt2.encode(TEXT, allowed_special="all"))
    nbytes = len(TEXT.encode())
    assert f"<dt>tokens</dt><dd>{n:,}</dd>" in html
    assert f"<dt>bytes</dt><dd>{nbytes:,}</dd>" in html
    assert f"<dt>characters</dt><dd>{len(TEXT):,}</dd>" in html
    assert f"<dd>{nbytes / n:.2f}</dd>" in html
    assert "<h1>gpt2</h1>" in html


def test_empty_text_says_so_and_keeps_the_explorer(gpt2: bpekit.Tokenizer) -> None:
    vis = visualize(gpt2, "")
    page = Page(vis.html)
    assert page.token_ids == []
    assert "The text is empty" in vis.html
    for role in ("hist", "specials", "first", "last", "search", "data"):
        assert f'data-role="{role}"' in vis.html
    assert page.data()["vocab"]["n_merges"] == 50_000


def test_huge_text_is_capped_and_says_so(gpt2: bpekit.Tokenizer) -> None:
    text = " word" * 250_000  # 250,000 tokens, 1.25 MB
    vis = visualize(gpt2, text)
    # (A regular expression: html.parser takes seconds over 200,000 spans.)
    assert re.findall(r'<span data-id="(\d+)"', vis.html) == ["1573"] * MAX_TOKENS  # " word"
    assert "Showing the first 200,000 of 250,000 tokens" in vis.html
    assert "<dt>tokens</dt><dd>250,000</dd>" in vis.html  # the counts are of the whole text
    # The byte cap, hit before the token cap.
    vis = visualize(gpt2, text, max_bytes=1000)
    assert len(vis.ids) == 200 and "Showing the first 200 of 250,000 tokens" in vis.html
    assert repr(vis) == "<Visualization 'gpt2': 200 of 250,000 tokens>"


def test_o200k_page_is_small(o200k: bpekit.Tokenizer) -> None:
    started = time.perf_counter()
    html = visualize(o200k, "hello").html
    size = len(html.encode("utf-8"))
    assert size < 3_000_000, size
    assert time.perf_counter() - started < 10


def _decode_payload(p: dict[str, Any]) -> dict[int, bytes]:
    """The vocabulary as the page's script rebuilds it (viz.js, buildVocab), in Python."""
    nm, w = p["n_merges"], p["width"]
    none = (1 << (8 * w)) - 1
    planes = base64.b64decode(p["merges"])
    values = [sum(planes[q * 2 * nm + k] << (8 * q) for q in range(w)) for k in range(2 * nm)]
    lefts, rights = values[:nm], values[nm:]
    jumps = dict((k, i) for k, i in p["jumps"])
    made, expected = [], 256
    for k in range(nm):
        i = jumps.get(k, expected)
        made.append(i)
        expected = i + 1
    vocab = {i: base64.b64decode(b) for i, b in p["leaves"]}
    for k in range(nm):
        m, a, b = made[k], lefts[k], rights[k]
        if m != none and a != none and m not in vocab and a in vocab and b in vocab:
            vocab[m] = vocab[a] + vocab[b]
    return vocab


@pytest.mark.parametrize("which", ["gpt2", "o200k", "trained", "hf"])
def test_packed_vocabulary_rebuilds_every_token(which: str, request: pytest.FixtureRequest) -> None:
    if which == "hf":
        tok = bpekit.load_tokenizer(data_path("hf", "allenai_gpt-neox-olmo-dolma-v1_5.json"))
    else:
        tok = request.getfixturevalue(which)
    p = vocab_payload(tok)
    assert _decode_payload(p) == tok.vocab
    assert p["n_merges"] == len(tok.merges)
    assert sorted(i for _, i in p["specials"]) == sorted(tok.special_tokens.values())
    if which in ("gpt2", "o200k"):
        assert p["is_ranks"] and len(p["leaves"]) == 256 + len(tok.special_tokens)


def test_visualize_repr_html_and_save(trained: bpekit.Tokenizer, tmp_path: Path) -> None:
    vis = trained.visualize("To be, or not to be<|endoftext|>")
    assert isinstance(vis, Visualization)
    fragment = vis._repr_html_()
    assert fragment.startswith('<div class="bpv" id="bpv-') and "<html" not in fragment
    assert Page(fragment).token_ids == trained.encode("To be, or not to be<|endoftext|>")
    out = vis.save(tmp_path / "sub" / "page.html")
    assert out.read_text(encoding="utf-8") == vis.html
    assert fragment in vis.html
    assert sorted(p.name for p in out.parent.iterdir()) == ["page.html"]  # no temporary left
    with pytest.raises(IsADirectoryError):
        vis.save(tmp_path)
    with pytest.raises(TypeError):
        visualize(trained, b"bytes")  # type: ignore[arg-type]


def test_two_visualizations_have_their_own_root() -> None:
    tok = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [])
    a, b = tok.visualize("a")._repr_html_(), tok.visualize("a")._repr_html_()
    root = re.compile(r'id="(bpv-[0-9a-f]+)"')
    assert root.search(a).group(1) != root.search(b).group(1)  # type: ignore[union-attr]


# ---- the command line ---------------------------------------------------------------


def bpekit_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "bpekit.cli", *args],
        capture_output=True,
        text=True,
        input=input,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_cli_viz_writes_one_page(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text("Hello <world>\n", encoding="utf-8")
    out = tmp_path / "page.html"
    r = bpekit_cli("viz", "-t", "gpt2", "--text", str(text), "-o", str(out))
    assert r.returncode == 0, r.stderr
    page = Page(out.read_text(encoding="utf-8"))
    assert page.token_ids == [15496, 1279, 6894, 29, 198]
    r = bpekit_cli("viz", "-t", "gpt2", "--string", "", "-o", str(out))
    assert r.returncode == 0 and "The text is empty" in out.read_text(encoding="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff")
    r = bpekit_cli("viz", "-t", "gpt2", "--text", str(bad), "-o", str(out))
    assert r.returncode == 2 and "bad.txt: invalid UTF-8 at byte offset 3" in r.stderr, r.stderr


def test_cli_show_plain_when_not_a_terminal() -> None:
    r = bpekit_cli("show", "Hello world\n\tx", "-t", "gpt2")
    assert r.returncode == 0, r.stderr
    assert "\x1b[" not in r.stdout
    assert r.stdout == "Hello| world|↵\n|→\t|x\n15496 995 198 197 87\n"
    r = bpekit_cli("show", "-t", "gpt2", "--no-ids", input="日本")
    assert r.stdout == "\\xe6\\x97|\\xa5|\\xe6\\x9c|\\xac\n"
    # Escape sequences in the text never reach the terminal.
    r = bpekit_cli("show", "a\x1b[31mb", "-t", "gpt2", "--no-ids")
    assert "\x1b" not in r.stdout and "␛" in r.stdout


def test_cli_show_colour() -> None:
    r = bpekit_cli("show", "Hello world<|endoftext|>", "-t", "gpt2", "--color", "always")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert re.sub(r"\x1b\[[0-9;]*m", "", lines[0]) == "Hello world<|endoftext|>"
    assert len(set(re.findall(r"\x1b\[48;5;(\d+)", lines[0]))) == 3  # a colour per token
    assert re.sub(r"\x1b\[[0-9;]*m", "", lines[1]) == "15496 995 50256"
    assert "3 tokens" in lines[2]
    r = bpekit_cli("show", "Hello", "-t", "gpt2", env={"FORCE_COLOR": "1"})
    assert "\x1b[48;5;" in r.stdout
    r = bpekit_cli(
        "show", "Hello", "-t", "gpt2", "--color", "auto", env={"FORCE_COLOR": "1", "NO_COLOR": "1"}
    )
    assert "\x1b[" not in r.stdout


# ---- in a real browser --------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Any:
    binary = find_chromium()
    if binary is None:
        reason = (
            "no chromium, chromium-browser or google-chrome on PATH (scripts/ensure_chromium.sh installs it)"
        )
        if os.environ.get("CI"):
            pytest.fail(f"the browser test must run in CI: {reason}")
        pytest.skip(reason)
    with Browser(binary, 1200, 900) as b:
        yield b


TOKENS_IN_VIEW = "Array.from(document.querySelectorAll('[data-role=text] [data-id]'), e => +e.dataset.id)"


def test_page_in_chromium(browser: Browser, o200k: bpekit.Tokenizer, tmp_path: Path) -> None:
    """The o200k page (200,000 tokens to rebuild) with the hard text: no script error,
    one element per token, a token's explorer, search, and a screenshot that is no
    blank page."""
    path = visualize(o200k, TEXT).save(tmp_path / "o200k.html")
    browser.open(path.as_uri())
    assert browser.console == []
    assert browser.eval(TOKENS_IN_VIEW) == o200k.encode(TEXT, allowed_special="all")
    assert browser.eval("document.querySelector('.bpv').getAttribute('data-bpv-ready')") == "1"
    # The markup of the text is text in the page, never elements.
    assert browser.eval("document.querySelectorAll('.bpv-tv script, .bpv-tv b').length") == 0

    # Clicking a token shows its merge tree down to single bytes.
    hello = o200k.encode("Hello")[0]
    detail = browser.eval(
        f"document.querySelector('[data-role=text] [data-id=\"{hello}\"]').click(),"
        "document.querySelector('[data-role=detail]').innerText"
    )
    assert "How it was built" in detail and f"{hello:,}" in detail
    leaves = browser.eval("document.querySelectorAll('[data-role=detail] .bpv-tree li').length")
    assert leaves == 2 * len(b"Hello") - 1  # a binary tree over 5 bytes

    # Search by id: the explorer shows the token's bytes as the tokenizer has them.
    for i in [0, 255, 1000, 123_456, 199_997, *o200k.special_tokens.values()]:
        shown = browser.eval(
            "(() => { const s = document.querySelector('[data-role=search]');"
            f" s.value = '{i}'; s.dispatchEvent(new KeyboardEvent('keydown', {{key: 'Enter'}}));"
            " return document.querySelector('[data-role=detail] .bpv-kv code').textContent })()"
        )
        assert shown == o200k.decode_single_token_bytes(i).hex(" "), i
    found = browser.eval(
        "(() => { const s = document.querySelector('[data-role=search]');"
        " s.value = ' token'; s.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'}));"
        " return document.querySelector('[data-role=results]').innerText })()"
    )
    assert "tokens match" in found and f"{o200k.encode(' token')[0]:,}" in found
    # A bar of the length histogram lists its tokens; the merge lists grow on demand.
    assert "tokens of 1 byte" in browser.eval(
        "document.querySelector('.bpv-bar').click(), document.querySelector('[data-role=results]').innerText"
    )
    assert (
        browser.eval(
            "(() => { const p = document.querySelector('[data-role=first]');"
            " p.querySelector('.bpv-more').click(); return p.querySelectorAll('.bpv-row').length })()"
        )
        == 400
    )

    # Hovering a token shows its id, rank and bytes.
    x, y = browser.eval(
        "(() => { const r = document.querySelector('[data-role=text] [data-id]').getBoundingClientRect();"
        " return [r.left + r.width / 2, r.top + r.height / 2] })()"
    )
    browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    tip = browser.eval(
        "(() => { const t = document.querySelector('[data-role=tip]');"
        " return t.hidden ? '' : t.innerText })()"
    )
    first = o200k.encode(TEXT, allowed_special="all")[0]
    assert (
        f"id {first:,}" in tip
        and f"rank {first:,}" in tip
        and o200k.decode_single_token_bytes(first).hex(" ") in tip
    )

    data = browser.screenshot(tmp_path / "o200k.png")
    width, height, colours = png_size_and_colours(data)
    assert (width, height) == (1200, 900)
    assert colours > 50, f"the screenshot looks blank: {colours} colours"
    assert browser.console == []


def test_other_vocabularies_in_chromium(browser: Browser, trained: bpekit.Tokenizer, tmp_path: Path) -> None:
    """A merges vocabulary (ranks are merge indices, the special token among the ids), a
    Hugging Face one (ids not in merge order) and one of bytes only (no merges at all)."""
    hf = bpekit.load_tokenizer(data_path("hf", "allenai_gpt-neox-olmo-dolma-v1_5.json"))
    bytes_only = bpekit.Tokenizer({i: bytes([i]) for i in range(256)}, [])
    for name, tok in [("trained", trained), ("hf", hf), ("bytes", bytes_only)]:
        page = visualize(tok, TEXT).save(tmp_path / f"{name}.html")
        browser.open(page.as_uri())
        ids = tok.encode(TEXT, allowed_special="all")
        assert browser.eval(TOKENS_IN_VIEW) == ids, name
        last = max(ids)
        shown = browser.eval(
            f"document.querySelector('[data-role=text] [data-id=\"{last}\"]').click(),"
            " document.querySelector('[data-role=detail] .bpv-kv code').textContent"
        )
        assert shown == tok.decode_single_token_bytes(last).hex(" "), name
        assert browser.console == [], name


def test_empty_and_huge_pages_in_chromium(browser: Browser, gpt2: bpekit.Tokenizer, tmp_path: Path) -> None:
    empty = visualize(gpt2, "").save(tmp_path / "empty.html")
    browser.open(empty.as_uri())
    assert browser.eval(TOKENS_IN_VIEW) == []
    assert "The text is empty" in browser.eval("document.body.innerText")
    assert browser.eval("document.querySelectorAll('.bpv-bar').length") > 10
    huge = visualize(gpt2, " Hello world." * 70_000).save(tmp_path / "huge.html")
    started = time.perf_counter()
    browser.open(huge.as_uri())
    assert browser.eval("document.querySelectorAll('[data-role=text] [data-id]').length") == MAX_TOKENS
    assert "Showing the first 200,000 of 210,000 tokens" in browser.eval(
        "document.querySelector('.bpv-notice').innerText"
    )
    assert time.perf_counter() - started < 20, "the 200,000-token page takes too long to load"
    assert browser.console == []


def test_browser_check_sees_script_errors(browser: Browser, tmp_path: Path) -> None:
    """The checks above would pass on a page whose script failed unless errors are seen."""
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><p>x</p><script>console.error('said'); undefinedName()</script>")
    browser.console.clear()
    browser.open(page.as_uri())
    assert any("said" in line for line in browser.console)
    assert any("Uncaught" in line and "undefinedName" in line for line in browser.console)
    browser.console.clear()
