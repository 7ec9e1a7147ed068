"""transformers' fast tokenizers on bpekit: ``patch_transformers()``,
``unpatch_transformers()`` and the context manager ``transformers_patched()``.

While patched, every fast tokenizer transformers makes (``AutoTokenizer.from_pretrained``,
``PreTrainedTokenizerFast(tokenizer_file=...)``; transformers 4.40+ and 5.x) is
transformers' own class with the same settings, whose backend (``backend_tokenizer``)
is a ``Backend``: its encode and decode run on bpekit and give what ``tokenizers``
gives; what bpekit does not support runs on ``tokenizers``, with one warning per reason
(see ``bpekit.hf_transformers.backend``).

The hook is the attribute transformers keeps its backend in (``_tokenizer``), set on
its fast tokenizer class (``TokenizersBackend`` in 5.x, ``PreTrainedTokenizerFast`` in
4.x): a ``tokenizers.Tokenizer`` assigned to it is wrapped, however transformers built
it (a file, a slow tokenizer's conversion, a ``tokenizer_object``). Nothing else of
transformers is replaced, so its own code makes every output from the encodings.
``unpatch_transformers()`` removes the hook: tokenizers made after it are pure
transformers; those made before keep their bpekit backend.

transformers is imported when ``patch_transformers`` runs, never by ``import bpekit``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bpekit.hf_transformers.backend import Backend

__all__ = ["Backend", "patch_transformers", "transformers_patched", "unpatch_transformers"]

_MISSING = object()
# Where transformers' fast tokenizers keep their tokenizers.Tokenizer (4.x and 5.x).
_ATTR = "_tokenizer"
_LOCK = threading.Lock()
# The patched class and what its class dict held under the name before.
_patched: list[tuple[type, Any]] = []


class _BackendSlot:
    """The ``_tokenizer`` attribute of transformers' fast tokenizers while patched:
    stored in the instance, a ``tokenizers.Tokenizer`` wrapped in a ``Backend``."""

    def __init__(self, default: Any, hf_class: type) -> None:
        self._default = default
        self._hf_class = hf_class

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self if self._default is _MISSING else self._default
        try:
            return obj.__dict__["_tokenizer"]
        except KeyError:
            if self._default is _MISSING:
                raise AttributeError("_tokenizer") from None
            return self._default

    def __set__(self, obj: Any, value: Any) -> None:
        if type(value) is self._hf_class:
            value = Backend(value)
        obj.__dict__["_tokenizer"] = value

    def __delete__(self, obj: Any) -> None:
        obj.__dict__.pop("_tokenizer", None)


def _fast_class() -> type:
    """transformers' base class of fast tokenizers (5.x, else 4.x)."""
    import importlib

    try:
        found = importlib.import_module("transformers.tokenization_utils_tokenizers").TokenizersBackend
    except ImportError:
        found = importlib.import_module("transformers.tokenization_utils_fast").PreTrainedTokenizerFast
    assert isinstance(found, type)
    return found


def patch_transformers() -> None:
    """Makes transformers' fast tokenizers encode and decode on bpekit, from now until
    ``unpatch_transformers()``. Calling it again does nothing.

    >>> import bpekit
    >>> bpekit.patch_transformers()    # doctest: +SKIP
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained("path/to/olmo-2")   # doctest: +SKIP
    >>> tok(["Hello world"], padding=True, return_tensors="np")  # doctest: +SKIP
    """
    with _LOCK:
        if _patched:
            return
        import importlib

        hf_class = importlib.import_module("tokenizers").Tokenizer
        cls = _fast_class()
        before = cls.__dict__.get(_ATTR, _MISSING)
        setattr(cls, _ATTR, _BackendSlot(before, hf_class))
        _patched.append((cls, before))


def unpatch_transformers() -> None:
    """Undoes ``patch_transformers()``: tokenizers made from now on are transformers'
    own; those made while patched keep running on bpekit. Does nothing if not patched."""
    with _LOCK:
        while _patched:
            cls, before = _patched.pop()
            if before is _MISSING:
                delattr(cls, _ATTR)
            else:
                setattr(cls, _ATTR, before)


@contextmanager
def transformers_patched() -> Iterator[None]:
    """``patch_transformers()`` for the ``with`` block, undone after it unless it was
    patched before the block.

    >>> import bpekit
    >>> with bpekit.transformers_patched():   # doctest: +SKIP
    ...     tok = AutoTokenizer.from_pretrained("path/to/olmo-2")
    """
    was = bool(_patched)
    patch_transformers()
    try:
        yield
    finally:
        if not was:
            unpatch_transformers()
