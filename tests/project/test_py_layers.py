"""scripts/check_py_layers.py: the Python package's modules import only down their
layers, never the package itself, in no ring, and each is in a layer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_py_layers.py"

INIT = '''"""A package.

Its layers, lowest first:

1. ``_core``, ``util``: the core
   and the helpers.
2. ``formats``, ``viz``: files; pictures.
3. ``tokenizer``: the API object.
4. ``pkg``: this module.
"""

from pkg.tokenizer import Tokenizer
'''
TYPE_CHECKING_IMPORT = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    {}\n"


def run(pkg: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(pkg)], capture_output=True, text=True, timeout=60, cwd=pkg.parent
    )


def package(root: Path, files: dict[str, str]) -> Path:
    """A package ``pkg`` under ``root``: a sound one, with ``files`` added or replaced."""
    sound = {
        "__init__.py": INIT,
        "_core.pyi": "def encode(text: str) -> list[int]: ...\n",
        "util.py": "import os\nfrom pkg import _core\n",
        "formats/__init__.py": '"""Formats."""\n',
        "formats/gpt2.py": "from pkg.util import x\n",
        "formats/hf.py": "from . import gpt2\nfrom .gpt2 import y\nimport json\n",
        "viz/__init__.py": "from pkg.viz.data import z\n",
        "viz/data.py": TYPE_CHECKING_IMPORT.format("from pkg.formats import hf"),
        "tokenizer.py": (
            "from pkg import _core, util\nfrom pkg.formats.hf import save\n"
            "def show(tok):\n    from pkg.viz import visualize\n    return visualize(tok)\n"
        ),
    }
    pkg = root / "pkg"
    for name, text in {**sound, **files}.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pkg


def test_the_package_keeps_its_layers() -> None:
    result = run(ROOT / "python" / "bpekit")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_sound_package_passes(tmp_path: Path) -> None:
    result = run(package(tmp_path, {}))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_an_import_up_a_layer_is_named_with_its_line(tmp_path: Path) -> None:
    pkg = package(tmp_path, {"formats/gpt2.py": "import os\n\nfrom pkg.tokenizer import Tokenizer\n"})
    result = run(pkg)
    assert result.returncode == 1
    assert (
        "pkg/formats/gpt2.py:3: `from pkg.tokenizer import Tokenizer`: `formats.gpt2` (layer 2) "
        "imports `tokenizer` (layer 3), a higher layer"
    ) in result.stdout.splitlines()


def test_an_annotation_only_import_up_a_layer_counts(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {"viz/data.py": TYPE_CHECKING_IMPORT.format("from pkg import tokenizer")},
    )
    faults = run(pkg).stdout.splitlines()
    assert (
        "pkg/viz/data.py:3: `from pkg import tokenizer`: `viz.data` (layer 2) imports `tokenizer` "
        "(layer 3), a higher layer"
    ) in faults


def test_a_ring_is_named_with_the_imports_that_make_it(tmp_path: Path) -> None:
    # Within one layer, and through a package's __init__.py.
    pkg = package(tmp_path, {"formats/gpt2.py": "from pkg.viz import z\n"})
    result = run(pkg)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "files import each other: formats.gpt2, formats.hf, viz, viz.data: "
        "formats.gpt2 (pkg/formats/gpt2.py:1) -> viz (pkg/viz/__init__.py:1) -> "
        "viz.data (pkg/viz/data.py:3) -> formats.hf (pkg/formats/hf.py:1) -> formats.gpt2"
    ]


def test_a_ring_made_inside_a_function_counts(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "formats/gpt2.py": "def load():\n    from pkg.formats.hf import save\n    return save\n",
            "formats/hf.py": "from pkg.formats.gpt2 import load\n",
        },
    )
    faults = run(pkg).stdout.splitlines()
    assert faults == [
        "files import each other: formats.gpt2, formats.hf: "
        "formats.gpt2 (pkg/formats/gpt2.py:2) -> formats.hf (pkg/formats/hf.py:1) -> formats.gpt2"
    ]


def test_a_module_in_no_layer_and_a_name_that_is_no_module(tmp_path: Path) -> None:
    init = INIT.replace("2. ``formats``, ``viz``", "2. ``formats``, ``viz``, ``gone``")
    pkg = package(tmp_path, {"__init__.py": init, "stray.py": "", "cli/__main__.py": ""})
    faults = run(pkg).stdout.splitlines()
    assert "pkg/stray.py: module `stray` is in no layer of pkg/__init__.py" in faults
    assert "pkg/cli/__main__.py: module `cli` is in no layer of pkg/__init__.py" in faults
    assert "pkg/__init__.py: layer 2 lists `gone`, which is no module" in faults
    assert len(faults) == 3


def test_importing_the_package_itself_from_inside_it(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {"util.py": "import pkg\n", "formats/hf.py": "from pkg import Tokenizer\nfrom pkg import util\n"},
    )
    faults = run(pkg).stdout.splitlines()
    assert faults == [
        "pkg/formats/hf.py:1: `from pkg import Tokenizer` imports the package `pkg` itself (the top "
        "layer); import the module the name comes from",
        "pkg/util.py:1: `import pkg` imports the package `pkg` itself (the top layer); import the "
        "module the name comes from",
    ]


def test_import_module_with_a_constant_name_counts(tmp_path: Path) -> None:
    pkg = package(tmp_path, {"util.py": "import importlib\nm = importlib.import_module('pkg.tokenizer')\n"})
    faults = run(pkg).stdout.splitlines()
    assert any("`util` (layer 1) imports `tokenizer` (layer 3), a higher layer" in f for f in faults)


def test_a_docstring_without_layers_fails(tmp_path: Path) -> None:
    pkg = package(tmp_path, {"__init__.py": '"""A package."""\n'})
    faults = run(pkg).stdout.splitlines()
    assert faults[0] == "pkg/__init__.py: its docstring lists no layers (lines `N. ``name``: ...`)"
