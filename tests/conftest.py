"""Shared test setup: the helpers of ``_shared_data`` (the offline data, tiktoken built
from it), and ``$BPEKIT_ENCODINGS`` pointing at the shared rank files, set here at
import so that every test and every subprocess a test starts finds the encodings."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _shared_data import (
    DATA,
    ROOT,
    bpekit_encoding,
    data_path,
    read_text_file,
    tiktoken_encoding,
    use_shared_encodings,
)

__all__ = ["DATA", "ROOT", "bpekit_encoding", "data_path", "read_text_file", "tiktoken_encoding"]

use_shared_encodings()
