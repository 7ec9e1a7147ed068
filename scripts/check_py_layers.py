"""Checks that the modules of the Python package import only from their own or lower
layers, never the package itself, and that no files import each other, directly or in
a ring.

The layers are read from the docstring of the package's ``__init__.py``, so the list a
reader sees and the one checked cannot drift apart: an entry is a line ``N. ``a``,
``b``: what they are`` (1 lowest), its names the run of ````name```` items it starts
with (an entry may go on over indented lines). A name is a module (``tokenizer``) or a
subpackage (``formats``: all its files are in that layer), or the package's own name
for its ``__init__.py``.

Every ``.py`` file is a node. Its edges are every import it makes, wherever it makes
it: at module level, inside a function, under ``try`` or ``if TYPE_CHECKING:``, and
``importlib.import_module("pkg.x")`` with a constant name. An import inside a function
runs later but still needs the other module to exist and ties the two together; an
annotation-only import is exempt from nothing either, because a type that names a
higher layer's class is a dependency on it (the lower module cannot be understood, or
type-checked, without the higher one): a lower module that works on something of a
higher layer says so with a ``typing.Protocol`` of its own. Each import is resolved to
the deepest file it names: ``from pkg import x`` is the module ``x`` where there is
one, else a name of the package's ``__init__.py``. Importing a submodule also runs its
packages' ``__init__.py`` files; those are not counted as edges (Python does that for
every submodule, and an ``__init__.py`` that imports its own submodules is no ring).

Faults, one line each, exit status 1:

- an import of a module of a higher layer (file, line, the import, both layers);
- an import of the package itself from inside it (``import pkg``, or ``from pkg import
  name`` of a name that is no submodule), which would run the public face, the top
  layer, from below it;
- a module in no layer, and a listed name that is no module;
- files that import each other, directly or in a ring, within a layer too: the files
  of one subpackage share its layer but may not form a ring either.

Usage:

    python scripts/check_py_layers.py [PACKAGE_DIR]   # default python/bpekit
"""

from __future__ import annotations

import ast
import itertools
import re
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ENTRY = re.compile(r"^(\d+)\.\s+(.*)$")
NAMES = re.compile(r"^\s*((?:``[A-Za-z_][A-Za-z0-9_]*``(?:\s*,\s*|\s+and\s+|\s*)?)+)")
NAME = re.compile(r"``([A-Za-z_][A-Za-z0-9_]*)``")


@dataclass(frozen=True)
class Import:
    """One import statement's target, resolved to a node, and where it is written."""

    line: int
    text: str  # the import as written, shortened
    target: str  # dotted module name, "" for the package itself


def read_layers(init: Path) -> dict[str, int]:
    """Name -> layer, from the numbered entries of ``init``'s docstring."""
    doc = ast.get_docstring(ast.parse(init.read_text()), clean=True) or ""
    entries: list[tuple[int, str]] = []
    for line in doc.splitlines():
        m = ENTRY.match(line.strip())
        if m and not line.startswith((" ", "\t")):
            entries.append((int(m.group(1)), m.group(2)))
        elif entries and line.startswith((" ", "\t")) and line.strip():
            entries[-1] = (entries[-1][0], entries[-1][1] + " " + line.strip())
        elif not line.strip() and entries:
            entries.append((-1, ""))  # a blank line ends an entry
    found: dict[str, int] = {}
    for layer, text in entries:
        m = NAMES.match(text) if layer > 0 else None
        if m:
            for name in NAME.findall(m.group(1)):
                found[name] = layer
    return found


def modules(pkg: Path) -> dict[str, Path]:
    """Dotted name (relative to the package, "" for its ``__init__.py``) -> file."""
    out: dict[str, Path] = {}
    for f in sorted(pkg.rglob("*.py")):
        if "__pycache__" in f.parts:
            continue
        parts = list(f.relative_to(pkg).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _extension_modules(pkg: Path) -> set[str]:
    """Top-level modules with no ``.py`` file: compiled extensions and their stubs."""
    compiled = [*pkg.glob("*.so"), *pkg.glob("*.pyd")]
    return {p.name.split(".")[0] for p in compiled} | {p.stem for p in pkg.glob("*.pyi")}


def _imports(tree: ast.AST) -> Iterator[tuple[ast.AST, str | None, list[str], int]]:
    """(node, module, names, level) of every import in ``tree``: ``import a.b`` gives
    module None and names ["a.b"]; ``from .a import b, c`` gives ("a", ["b", "c"], 1);
    ``importlib.import_module("a.b")`` gives (None, ["a.b"])."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield node, None, [a.name for a in node.names], 0
        elif isinstance(node, ast.ImportFrom):
            yield node, node.module, [a.name for a in node.names], node.level
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id == "import_module")
            )
        ):
            yield node, None, [node.args[0].value], 0


def _deepest(dotted: str, known: set[str]) -> str:
    """The deepest module of ``known`` that ``dotted`` (relative to the package) names."""
    parts = dotted.split(".") if dotted else []
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


def imports_of(pkg_name: str, mod: str, file: Path, known: set[str]) -> list[Import]:
    """The imports ``file`` (module ``mod``) makes of modules of the package."""
    tree = ast.parse(file.read_text(), filename=str(file))
    is_package = file.name == "__init__.py"
    here = mod.split(".") if mod else []
    package = here if is_package else here[:-1]
    out: list[Import] = []
    for node, module, names, level in _imports(tree):
        line = getattr(node, "lineno", 0)
        text = ast.unparse(node)
        text = text if len(text) <= 80 else text[:77] + "..."
        if level == 0 and module is None:
            for name in names:
                first, _, rest = name.partition(".")
                if first == pkg_name:
                    out.append(Import(line, text, _deepest(rest, known)))
            continue
        if level > 0:
            if level - 1 > len(package):
                continue
            base = package[: len(package) - (level - 1)]
            full = [*base, *(module.split(".") if module else [])]
        else:
            assert module is not None
            first, _, rest = module.partition(".")
            if first != pkg_name:
                continue
            full = rest.split(".") if rest else []
        for name in names:
            sub = ".".join([*full, name])
            if name != "*" and sub in known:
                out.append(Import(line, text, sub))
            else:
                out.append(Import(line, text, _deepest(".".join(full), known)))
    return out


def _layer_key(mod: str, pkg_name: str) -> str:
    """The name a module's layer is listed under: its top-level module or subpackage."""
    return mod.split(".")[0] if mod else pkg_name


def _shortest_cycle(start: str, ring: set[str], edges: dict[str, dict[str, Import]]) -> list[str]:
    """The shortest path of imports from ``start`` back to it, inside ``ring``."""
    prev: dict[str, str] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        v = queue.popleft()
        for w in sorted(edges[v]):
            if w not in ring:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if w not in seen:
                seen.add(w)
                prev[w] = v
                queue.append(w)
    return [start, start]


def _rings(edges: dict[str, dict[str, Import]]) -> list[set[str]]:
    """Sets of two or more files that import each other (strongly connected components),
    found without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                ring: set[str] = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    ring.add(w)
                    if w == v:
                        break
                if len(ring) > 1:
                    found.append(ring)
    return found


def check(pkg: Path) -> list[str]:
    pkg_name = pkg.name
    nodes = modules(pkg)
    known = set(nodes) | _extension_modules(pkg)
    init = pkg / "__init__.py"
    layers = read_layers(init)
    # Paths as the reader runs the check: from the working folder when the package is
    # in it (python/bpekit/tokenizer.py), else from the package's parent.
    root = Path.cwd() if pkg.is_relative_to(Path.cwd()) else pkg.parent

    def where(mod: str) -> str:
        return str(nodes[mod].relative_to(root)) if mod in nodes else f"{pkg_name}.{mod}"

    def shown(mod: str) -> str:
        return mod or pkg_name

    faults: list[str] = []
    if not layers:
        faults.append(f"{init.relative_to(root)}: its docstring lists no layers (lines `N. ``name``: ...`)")
    tops = {_layer_key(m, pkg_name) for m in known}
    for name in sorted(tops - layers.keys()):
        key = "" if name == pkg_name else name
        files = [m for m in nodes if _layer_key(m, pkg_name) == name]
        shown_file = where(key if key in nodes else min(files)) if files else where(key)
        faults.append(f"{shown_file}: module `{name}` is in no layer of {init.relative_to(root)}")
    for name in sorted(layers.keys() - tops):
        faults.append(f"{init.relative_to(root)}: layer {layers[name]} lists `{name}`, which is no module")

    edges: dict[str, dict[str, Import]] = {m: {} for m in nodes}
    for mod, file in nodes.items():
        for imp in imports_of(pkg_name, mod, file, known):
            target = imp.target
            if target == "" and mod != "":
                faults.append(
                    f"{where(mod)}:{imp.line}: `{imp.text}` imports the package `{pkg_name}` itself "
                    f"(the top layer); import the module the name comes from"
                )
                continue
            if target == mod or target == "":
                continue
            la = layers.get(_layer_key(mod, pkg_name))
            lb = layers.get(_layer_key(target, pkg_name))
            if la is not None and lb is not None and lb > la:
                faults.append(
                    f"{where(mod)}:{imp.line}: `{imp.text}`: `{shown(mod)}` (layer {la}) imports "
                    f"`{target}` (layer {lb}), a higher layer"
                )
            if target in edges:
                edges[mod].setdefault(target, imp)

    for ring in sorted(_rings(edges), key=lambda r: sorted(r)):
        start = min(ring)
        cycle = _shortest_cycle(start, ring, edges)
        steps = " -> ".join(
            f"{shown(a)} ({where(a)}:{edges[a][b].line})" for a, b in itertools.pairwise(cycle)
        )
        names = ", ".join(sorted(shown(m) for m in ring))
        faults.append(f"files import each other: {names}: {steps} -> {shown(start)}")
    return faults


def main() -> int:
    default = Path(__file__).resolve().parent.parent / "python" / "bpekit"
    pkg = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    faults = check(pkg.resolve())
    for f in faults:
        print(f)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
