"""The docstring examples of the encoding modules run as tests (HF tokenizers' habit:
documentation examples are tested)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "bpekit.tokenizer",
    "bpekit.datasets",
    "bpekit.encodings",
    "bpekit.reference",
    "bpekit.formats.tiktoken",
    "bpekit.formats.hf",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
