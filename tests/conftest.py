"""Shared test helpers: where the shared data lives, and skipping when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

# ../shared/data relative to the repository root, where CI and developers keep it.
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def data_path(*parts: str) -> Path:
    """A path inside ../shared/data; skips the test (with the reason) when it is missing."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared test data not found at {path} (expected ../shared/data beside the repo)")
    return path
