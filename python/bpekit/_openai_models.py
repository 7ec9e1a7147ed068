"""tiktoken 0.14's table of OpenAI model names and name prefixes -> encoding names, and
the lookup (an exact name first, then the first prefix the name starts with).

Plain data below both users: ``bpekit.models`` (which loads the encoding) and
``bpekit.encodings`` (whose errors name the encoding a model's name stands for).

>>> encoding_name_for_model("gpt-4o-2024-05-13"), encoding_name_for_model("text-davinci-003")
('o200k_base', 'p50k_base')
"""

from __future__ import annotations

__all__ = ["MODEL_PREFIX_TO_ENCODING", "MODEL_TO_ENCODING", "encoding_name_for_model"]

_O200K, _CL100K, _P50K, _R50K = "o200k_base", "cl100k_base", "p50k_base", "r50k_base"

# Tried in this order: a name matching several prefixes gets the first.
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "o1-": _O200K,
    "o3-": _O200K,
    "o4-mini-": _O200K,
    "gpt-5": _O200K,
    "gpt-4.5-": _O200K,
    "gpt-4.1-": _O200K,
    "chatgpt-4o-": _O200K,
    "gpt-4o-": _O200K,
    "gpt-4-": _CL100K,
    "gpt-3.5-turbo-": _CL100K,
    "gpt-35-turbo-": _CL100K,  # Azure's deployment names
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": _O200K,
    "ft:gpt-4": _CL100K,
    "ft:gpt-3.5-turbo": _CL100K,
    "ft:davinci-002": _CL100K,
    "ft:babbage-002": _CL100K,
}

MODEL_TO_ENCODING: dict[str, str] = {
    **dict.fromkeys(["o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o"], _O200K),
    **dict.fromkeys(
        [
            "gpt-4",
            "gpt-3.5-turbo",
            "gpt-3.5",
            "gpt-35-turbo",
            "davinci-002",
            "babbage-002",
            "text-embedding-ada-002",
            "text-embedding-3-small",
            "text-embedding-3-large",
        ],
        _CL100K,
    ),
    # Deprecated models.
    **dict.fromkeys(
        [
            "text-davinci-003",
            "text-davinci-002",
            "code-davinci-002",
            "code-davinci-001",
            "code-cushman-002",
            "code-cushman-001",
            "davinci-codex",
            "cushman-codex",
        ],
        _P50K,
    ),
    **dict.fromkeys(["text-davinci-edit-001", "code-davinci-edit-001"], "p50k_edit"),
    **dict.fromkeys(
        [
            "text-davinci-001",
            "text-curie-001",
            "text-babbage-001",
            "text-ada-001",
            "davinci",
            "curie",
            "babbage",
            "ada",
            "text-similarity-davinci-001",
            "text-similarity-curie-001",
            "text-similarity-babbage-001",
            "text-similarity-ada-001",
            "text-search-davinci-doc-001",
            "text-search-curie-doc-001",
            "text-search-babbage-doc-001",
            "text-search-ada-doc-001",
            "code-search-babbage-code-001",
            "code-search-ada-code-001",
        ],
        _R50K,
    ),
    "gpt2": "gpt2",
    "gpt-2": "gpt2",
}


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding ``model_name`` uses; ``KeyError`` for a model neither
    named in the table nor starting with one of its prefixes."""
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise KeyError(
        f"Could not automatically map {model_name} to a tokeniser. "
        "Please use `bpekit.get_encoding` to explicitly get the tokeniser you expect."
    )
