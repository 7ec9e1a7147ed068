"""Checks that the Rust modules of src/ import only from their own or lower layers,
and that no files import each other, directly or in a ring.

The layers are read from the doc comments that draw them, so the picture and the
check cannot drift apart:

- `src/lib.rs`: lines `//! N. `a`, `b`, ...` give the crate's top-level modules
  their layer N (1 lowest). A module may use modules of its own layer or lower.
- `src/encode/mod.rs`: lines `//! N. `name`: ...` give encode's submodules their
  layer; there a module may use only lower layers (each layer is one module).

Every `.rs` file is a node; `crate::`, `super::`, `self::` and child-module paths
in its code (comments, strings and `#[cfg(test)] mod tests` excluded) are its
edges, resolved to the deepest module file they name. Usage:

    python scripts/check_layers.py [SRC]     # exit status 1 and one line per fault
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

Mod = tuple[str, ...]
"""A module as its path of names: `("encode", "vocab", "bpe")`; the crate root is `()`."""

LAYER_LINE = re.compile(r"^//!\s*(\d+)\.\s+(.*)$")
NAME = re.compile(r"`([a-z_][a-z0-9_]*)`")
PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
CHILD_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)
TESTS = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def module_of(src: Path, file: Path) -> tuple[str, ...]:
    """`src/encode/vocab/bpe.rs` -> ("encode", "vocab", "bpe"); lib.rs -> ()."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts.pop()
    return tuple(parts)


def strip(code: str) -> str:
    """The code without comments, string and char literals, and test modules."""
    m = TESTS.search(code)
    if m:
        code = code[: m.start()]
    out = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            i = n if j < 0 else j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == '"' or code.startswith('r"', i) or code.startswith('r#"', i):
            if c == "r":
                hashes = code[i + 1 : code.index('"', i)]
                end = '"' + hashes
                j = code.find(end, code.index('"', i) + 1)
                i = n if j < 0 else j + len(end)
            else:
                j = i + 1
                while j < n and code[j] != '"':
                    j += 2 if code[j] == "\\" else 1
                i = j + 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", code[i : i + 4]):
            i = code.index("'", i + 1 + (code[i + 1] == "\\")) + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def layers(doc_file: Path, pattern_names: bool) -> dict[str, int]:
    """Module name -> layer, from the numbered doc-comment lines of `doc_file`."""
    found: dict[str, int] = {}
    for line in doc_file.read_text().splitlines():
        m = LAYER_LINE.match(line.strip())
        if not m:
            continue
        names = NAME.findall(m.group(2))
        if not pattern_names:
            names = names[:1]
        for name in names:
            found[name] = int(m.group(1))
    return found


def resolve(here: Mod, path: str, modules: set[Mod]) -> Mod | None:
    """The deepest module file that `path`, written in module `here`, names."""
    segs = path.split("::")
    if segs[0] == "crate":
        base: list[str] = []
        segs = segs[1:]
    else:
        # A file's `self` is its own module; `super` is the module above it.
        base = list(here)
        while segs and segs[0] in ("self", "super"):
            if segs[0] == "super":
                if not base:
                    return None
                base.pop()
            segs = segs[1:]
    target = tuple(base)
    for s in segs:
        if (*target, s) in modules:
            target = (*target, s)
        else:
            break
    return target


def check(src: Path) -> list[str]:
    files = sorted(src.rglob("*.rs"))
    nodes = {module_of(src, f): f for f in files}
    modules = set(nodes)
    crate_layer = layers(src / "lib.rs", pattern_names=True)
    encode_layer = layers(src / "encode" / "mod.rs", pattern_names=False)
    faults = []
    for top in {m[0] for m in modules if m}:
        if top not in crate_layer and top != "testutil":
            faults.append(f"src/lib.rs: module `{top}` is in no layer")
    for sub in {m[1] for m in modules if len(m) > 1 and m[0] == "encode"}:
        if sub not in encode_layer:
            faults.append(f"src/encode/mod.rs: module `encode::{sub}` is in no layer")

    edges: dict[Mod, set[Mod]] = {m: set() for m in modules}
    for mod, file in nodes.items():
        if mod == ("testutil",):
            continue  # test helpers (cfg(test)) may use any layer
        code = strip(file.read_text())
        children = set(CHILD_MOD.findall(code))
        paths = PATH.findall(code)
        # 2018 paths through a child module declared in this file: `use batch::Batch`.
        paths += [
            "self::" + m.group(0)
            for m in re.finditer(r"\b([a-z_][a-z0-9_]*)(?:::[A-Za-z_]\w*)+", code)
            if m.group(1) in children and code[max(0, m.start() - 2) : m.start()] != "::"
        ]
        for p in paths:
            target = resolve(mod, p, modules)
            # The crate root only re-exports (`crate::Result`).
            if target is not None and target != mod and target != ():
                edges[mod].add(target)

    def name(m: Mod) -> str:
        return "::".join(m) or "crate"

    for a, targets in sorted(edges.items()):
        for b in sorted(targets):
            if not a or not b:
                continue
            la, lb = crate_layer.get(a[0]), crate_layer.get(b[0])
            if a[0] != b[0] and la is not None and lb is not None and lb > la:
                faults.append(
                    f"{nodes[a].relative_to(src.parent)}: `{name(a)}` (layer {la}) "
                    f"uses `{name(b)}` (layer {lb}), a higher layer"
                )
            if a[0] == b[0] == "encode" and len(a) > 1 and len(b) > 1 and a[1] != b[1]:
                ea, eb = encode_layer.get(a[1]), encode_layer.get(b[1])
                if ea is not None and eb is not None and eb >= ea:
                    faults.append(
                        f"{nodes[a].relative_to(src.parent)}: `{name(a)}` (encode layer "
                        f"{ea}) uses `{name(b)}` (encode layer {eb}), not a lower one"
                    )

    # Rings of files: Tarjan's strongly connected components.
    index: dict[Mod, int] = {}
    low: dict[Mod, int] = {}
    stack: list[Mod] = []
    on_stack: set[Mod] = set()
    counter = [0]

    def visit(v: Mod) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            ring = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                ring.append(w)
                if w == v:
                    break
            if len(ring) > 1:
                faults.append("files use each other: " + ", ".join(sorted(name(m) for m in ring)))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return faults


def main() -> int:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent / "src")
    faults = check(src)
    for f in faults:
        print(f)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
