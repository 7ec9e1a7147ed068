"""Which encoding an OpenAI model uses: ``encoding_name_for_model`` and
``encoding_for_model``, with tiktoken 0.14's table of model names and name prefixes
(``bpekit._openai_models``; an exact name first, then the first prefix the name starts
with).

>>> encoding_name_for_model("gpt-4o-2024-05-13"), encoding_name_for_model("text-davinci-003")
('o200k_base', 'p50k_base')
"""

from __future__ import annotations

from bpekit._openai_models import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING, encoding_name_for_model
from bpekit.encodings import get_encoding
from bpekit.tokenizer import Tokenizer

__all__ = ["MODEL_PREFIX_TO_ENCODING", "MODEL_TO_ENCODING", "encoding_for_model", "encoding_name_for_model"]


def encoding_for_model(model_name: str) -> Tokenizer:
    """The encoding ``model_name`` uses (``get_encoding`` of its name)."""
    return get_encoding(encoding_name_for_model(model_name))
