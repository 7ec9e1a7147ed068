"""scripts/check_layers.py: the Rust modules import only down their layers, in no ring."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_layers.py"


def run(src: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(src)], capture_output=True, text=True, timeout=60)


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "src"


LIB = """//! 1. `error`, `ids`
//! 2. `count`
//! 3. `encode`
mod error;
mod ids;
mod count;
mod encode;
"""
ENCODE = """//! 1. `vocab`: the vocabulary.
//! 2. `engine`: the loop.
mod engine;
mod vocab;
pub use engine::Engine;
"""


def test_the_crate_keeps_its_layers() -> None:
    result = run(ROOT / "src")
    assert result.returncode == 0, result.stdout


def test_the_crate_lists_its_layers_in_order() -> None:
    """Dataset writing sits above encoding (it uses only the `Encoder`), and the
    bindings above everything; every top-level module is in the list."""
    spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
    assert spec is not None and spec.loader is not None
    check_layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_layers)
    layer = check_layers.layers(ROOT / "src" / "lib.rs", pattern_names=True)
    assert layer["encode"] == layer["train"] < layer["dataset"] < layer["py"]
    assert layer["corpus"] < layer["count"] < layer["encode"]
    assert max(layer.values()) == layer["py"]
    tops = {p.stem if p.is_file() else p.name for p in (ROOT / "src").iterdir()}
    tops -= {"lib", "testutil"}
    assert tops == set(layer), tops ^ set(layer)


def test_a_sound_tree_passes(tmp_path: Path) -> None:
    src = tree(
        tmp_path,
        {
            "lib.rs": LIB,
            "error.rs": "pub struct Error;\n",
            "ids.rs": "use crate::error::Error;\n",
            "count/mod.rs": "mod pieces;\nuse pieces::Table;\n// crate::encode::x in a comment\n",
            "count/pieces.rs": 'pub struct Table;\nconst S: &str = "crate::encode::x";\n',
            "encode/mod.rs": ENCODE,
            "encode/vocab.rs": "use crate::count::Counts;\n",
            "encode/engine.rs": (
                "use crate::encode::vocab::Bpe;\n"
                "#[cfg(test)]\nmod tests {\n    use crate::encode::Engine;\n}\n"
            ),
        },
    )
    result = run(src)
    assert result.returncode == 0, result.stdout


def test_an_import_up_a_layer_and_a_ring_are_named(tmp_path: Path) -> None:
    src = tree(
        tmp_path,
        {
            "lib.rs": LIB,
            "error.rs": "use crate::count::Table;\n",
            "ids.rs": "",
            "count/mod.rs": "mod pieces;\npub type FxMap = ();\nuse pieces::Table;\n",
            "count/pieces.rs": "use super::FxMap;\npub struct Table;\n",
            "encode/mod.rs": ENCODE,
            "encode/vocab.rs": "use crate::encode::engine::Engine;\n",
            "encode/engine.rs": "pub struct Engine;\n",
            "encode/stray.rs": "",
        },
    )
    result = run(src)
    assert result.returncode == 1
    faults = result.stdout.splitlines()
    assert "src/error.rs: `error` (layer 1) uses `count` (layer 2), a higher layer" in faults
    assert (
        "src/encode/vocab.rs: `encode::vocab` (encode layer 1) uses `encode::engine` "
        "(encode layer 2), not a lower one" in faults
    )
    assert "files use each other: count, count::pieces" in faults
    assert "src/encode/mod.rs: module `encode::stray` is in no layer" in faults
