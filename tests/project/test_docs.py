"""The documentation is true: its code runs, its commands exist, its links resolve.

Pages: ``README.md`` and ``docs/*.md``. The conventions, which docs/development.md
states for writers:

- A ```` ```python ```` block runs. A page's blocks run in order, in one namespace and in
  one working folder of their own: a fresh temporary folder holding ``corpus.txt``
  (~300 KB of TinyStories from ``../shared/data``: documents separated by
  ``<|endoftext|>``). ``$BPEKIT_ENCODINGS`` names the shared rank files (conftest.py).
- A ```` ```python no-run: REASON ```` block is only compiled (it needs a cluster, the
  network, files a reader has). Such blocks are few, and each says why.
- In a ```` ```sh ```` (or ``bash``, ``console``) block, every ``bpekit CMD ...`` line names
  a command and options that ``bpekit CMD --help`` lists, and every ``make TARGET`` a
  target of the Makefile. A ```` ```sh run ```` block also runs, with bash, in its page's
  folder, after the page's blocks above it.
- Relative links point at files that exist, and ``#anchors`` at headings that exist.
- Every ``bpekit.NAME`` (a module, function or class) exists, and every repository
  path in backticks (``src/...``, ``python/...``, ``tests/...``) exists.
- docs/architecture.md's lists of layers are those that the layer checks read, in
  ``src/lib.rs``, ``src/encode/mod.rs`` and ``python/bpekit/__init__.py``.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from _shared_data import DATA, ROOT, data_path

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = ("sh", "bash", "console", "shell")
# Optional packages a block may import: without one, the block is skipped saying so.
OPTIONAL = {"torch", "pyarrow", "datasets", "zstandard", "tokenizers", "transformers", "tiktoken", "ray"}
# Blocks that only compile. Raise this on purpose only: a block that runs stays true.
MAX_NO_RUN = 3
# The README is a front door, not the manual.
MAX_README_LINES = 200


@dataclass
class Block:
    page: Path
    line: int  # of the first line of code, 1-based
    lang: str
    flags: str  # the info string after the language
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _fences(text: str) -> list[tuple[int, str, str]]:
    """(line of the code's first line, info string, code) of each fenced block."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        body = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            line = lines[j]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            j += 1
        out.append((i + 2, info, "\n".join(body) + "\n"))
        i = j + 1
    return out


def _blocks() -> list[Block]:
    blocks = []
    for page in PAGES:
        for line, info, code in _fences(page.read_text(encoding="utf-8")):
            lang, _, flags = info.partition(" ")
            blocks.append(Block(page, line, lang, flags.strip(), code))
    return blocks


BLOCKS = _blocks()
PYTHON = [b for b in BLOCKS if b.lang == "python"]
SHELL = [b for b in BLOCKS if b.lang in SHELLS]
RUN = [
    b
    for b in BLOCKS
    if (b.lang == "python" and not b.flags.startswith("no-run"))
    or (b.lang in SHELLS and b.flags.split()[:1] == ["run"])
]


# --- running the blocks ------------------------------------------------------------------


@dataclass
class PageState:
    folder: Path
    namespace: dict[str, Any] = field(default_factory=dict)


_STATES: dict[Path, PageState] = {}


def _corpus() -> str:
    """~300 KB of TinyStories, cut after a ``<|endoftext|>``."""
    text = data_path("corpora", "tinystories_v2_train_head_2MiB.txt").read_text(encoding="utf-8")
    eot = "<|endoftext|>"
    return text[: text.index(eot, 300_000) + len(eot)] + "\n"


@pytest.fixture
def page_state(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> PageState:
    block: Block = request.node.callspec.params["block"]
    state = _STATES.get(block.page)
    if state is None:
        folder = tmp_path_factory.mktemp(block.page.stem.lower())
        (folder / "corpus.txt").write_text(_corpus(), encoding="utf-8")
        state = _STATES[block.page] = PageState(folder, {"__name__": "__docs__"})
    return state


def _skip_if_optional(e: ModuleNotFoundError, block: Block) -> None:
    name = (e.name or "").split(".")[0]
    if name in OPTIONAL:
        pytest.skip(f"{block.id} needs {name}, which is not installed")


def _skip_if_no_encodings(e: BaseException, block: Block) -> None:
    if "never downloads" in str(e) and not (DATA / "encodings").is_dir():
        pytest.skip(f"{block.id} needs OpenAI's rank files ({DATA / 'encodings'} is missing)")


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_block_runs(block: Block, page_state: PageState, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each page's code, run in order in its own folder: what a reader pastes works."""
    monkeypatch.chdir(page_state.folder)
    if block.lang == "python":
        # Padded so that a traceback names the page's own line numbers.
        code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
        try:
            exec(code, page_state.namespace)
        except ModuleNotFoundError as e:
            _skip_if_optional(e, block)
            raise
        except FileNotFoundError as e:
            _skip_if_no_encodings(e, block)
            raise
        return
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=page_state.folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        _skip_if_no_encodings(RuntimeError(done.stderr), block)
    assert done.returncode == 0, f"{block.id}: exit status {done.returncode}\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_python_block_compiles(block: Block) -> None:
    """Every Python block is valid Python, those that do not run included."""
    compile(block.code, block.id, "exec")


def test_no_run_blocks_are_few_and_say_why() -> None:
    no_run = [b for b in PYTHON if b.flags.startswith("no-run")]
    for b in no_run:
        assert b.flags.removeprefix("no-run").strip(" :"), f"{b.id}: say why it does not run (no-run: REASON)"
    assert len(no_run) <= MAX_NO_RUN, f"{len(no_run)} blocks do not run: {[b.id for b in no_run]}"
    print(f"{len(no_run)} of {len(PYTHON)} Python blocks do not run: {[b.id for b in no_run]}")


# --- commands and options ------------------------------------------------------------------


def _shell_lines(code: str) -> list[str]:
    """Lines of a shell block, continuations joined, prompts taken off."""
    joined = code.replace("\\\n", " ")
    return [line.strip().removeprefix("$ ") for line in joined.splitlines() if line.strip()]


def _commands(code: str, program: str) -> list[list[str]]:
    """The words of each ``program ...`` command in ``code``, up to a pipe, a redirection
    or the next command."""
    found = []
    for line in _shell_lines(code):
        line = re.sub(r"<\([^)]*\)", "FIFO", line)  # a process substitution is one argument
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:  # an unclosed quote: not a command line
            continue
        current: list[str] | None = None
        for w in words:
            if w == program and current is None:
                current = [w]
            elif current is not None and re.fullmatch(r"[|&;<>()]+", w):
                found.append(current)
                current = None
            elif current is not None:
                current.append(w)
        if current is not None:
            found.append(current)
    return found


@cache
def _help(command: str) -> str:
    args = [sys.executable, "-m", "bpekit.cli", *([command] if command else []), "--help"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _options(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", help_text))


CLI_LINES = [(b, words) for b in SHELL for words in _commands(b.code, "bpekit")]


@pytest.mark.parametrize(
    ("block", "words"), CLI_LINES, ids=[f"{b.id}:{' '.join(w[:2])}" for b, w in CLI_LINES]
)
def test_cli_line_uses_real_options(block: Block, words: list[str]) -> None:
    """``bpekit CMD --flag`` in the docs: CMD and every flag are in ``bpekit CMD --help``."""
    commands = re.search(r"\{([\w,]+)\}", _help(""))
    assert commands is not None
    assert len(words) > 1 and words[1] in commands.group(1).split(","), f"{block.id}: {' '.join(words)}"
    known = _options(_help(words[1]))
    for w in words[2:]:
        if not w.startswith("-") or w in ("-", "--") or re.fullmatch(r"-\d[\d.e_]*", w):
            continue
        flag = w.split("=", 1)[0]
        assert flag in known, f"{block.id}: bpekit {words[1]} has no option {flag}"


def test_make_targets_exist() -> None:
    targets = set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M))
    for b in SHELL:
        for words in _commands(b.code, "make"):
            for w in words[1:]:
                if not w.startswith("-") and "=" not in w:
                    assert w in targets, f"{b.id}: make has no target {w}"


# --- links, names and paths --------------------------------------------------------------------


def _prose(text: str) -> str:
    """The text without fenced blocks and code spans, where brackets are no links."""
    text = re.sub(r"^\s*(`{3,}|~{3,}).*?^\s*\1", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading.

    >>> slug("Tokenizers that models ship: `tokenizer.json`")
    'tokenizers-that-models-ship-tokenizerjson'
    """
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_links_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", _prose(text)):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: link to {target}: no such file"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{page.name}: link to {target}: no such heading"


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    obj: Any = None
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError as e:
            if (e.name or "").split(".")[0] in OPTIONAL:
                return True  # a module that needs an optional package
            continue
        for name in parts[k:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_api_names_exist(page: Path) -> None:
    """``bpekit.X.Y`` anywhere on a page names a module or attribute that exists."""
    text = page.read_text(encoding="utf-8")
    names = set(re.findall(r"(?<![\w/.-])(bpekit(?:\.[A-Za-z_]\w*)+)", text))
    missing = sorted(n for n in names if n != "bpekit.json" and not _resolves(n))
    assert not missing, f"{page.name}: no such names: {missing}"


REPO_PATH = re.compile(r"`((?:src|python|tests|scripts|benchmarks|docs|examples|tools)/[\w./-]*)`")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_repository_paths_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = sorted({p for p in REPO_PATH.findall(text) if not (ROOT / p).exists()})
    assert not missing, f"{page.name}: no such files or folders: {missing}"


def test_readme_is_a_front_door() -> None:
    """Short, and it starts with the two commands."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES
    first = _fences(text)[0][2]
    assert "make demo" in first and "make test" in first


# --- the architecture page and the lists it copies -------------------------------------------


def _numbered_lists(text: str) -> list[list[list[str]]]:
    """The numbered lists of ``text`` (markdown, or a doc comment with its ``//!``
    taken off): each item as the names in backticks before its first colon."""
    lists: list[list[list[str]]] = []
    head: list[str] | None = None
    for raw in text.splitlines():
        line = re.sub(r"^//! ?", "", raw)
        m = re.match(r"^(\d+)\.\s+(.*)$", line)
        if m:
            if m.group(1) == "1":
                lists.append([])
            head = [m.group(2)]
            lists[-1].append([])
        elif head is not None and line[:1].isspace() and ":" not in "".join(head):
            head.append(line)
        else:
            head = None
        if head is not None and lists:
            before = "".join(head).split(":", 1)[0]
            lists[-1][-1] = re.findall(r"`+([A-Za-z_]\w*)`+", before)
    return lists


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_architecture_copies_the_layer_lists() -> None:
    """docs/architecture.md's layers are the ones the layer checks read."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    crate = _numbered_lists(_section(page, "The crate's layers"))
    package = _numbered_lists(_section(page, "The package's layers"))
    lib = _numbered_lists((ROOT / "src" / "lib.rs").read_text(encoding="utf-8"))
    encode = _numbered_lists((ROOT / "src" / "encode" / "mod.rs").read_text(encoding="utf-8"))
    init = (ROOT / "python" / "bpekit" / "__init__.py").read_text(encoding="utf-8")
    assert crate[0] == lib[0], "the crate's layers differ from src/lib.rs"
    assert crate[1] == encode[0], "the encoder's layers differ from src/encode/mod.rs"
    assert package[0] == _numbered_lists(init)[0], "the package's layers differ from bpekit/__init__.py"
