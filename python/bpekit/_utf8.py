"""The ``errors=`` argument: what to do with invalid UTF-8, checked before any work.

>>> check_errors("replace")
'replace'
>>> check_errors(None)
Traceback (most recent call last):
...
TypeError: errors must be "strict", "replace" or "ignore", not None
"""

from __future__ import annotations

from typing import Any

# What the core's readers (training, file encoding) do with invalid UTF-8, as in
# bytes.decode: an error naming the file and byte offset, U+FFFD, or nothing.
POLICIES = ("strict", "replace", "ignore")


def _shown(errors: Any) -> str:
    return f'"{errors}"' if isinstance(errors, str) else repr(errors)


def check_errors(errors: Any) -> str:
    """``errors`` if it is one of ``POLICIES``; else a ``TypeError`` (not a str: the
    core said "'None' is not an instance of 'str'") or a ``ValueError``."""
    if errors in POLICIES and isinstance(errors, str):
        return errors
    message = f'errors must be "strict", "replace" or "ignore", not {_shown(errors)}'
    raise (ValueError if isinstance(errors, str) else TypeError)(message)


def check_decode_errors(errors: Any) -> str:
    """``errors`` for ``bytes.decode``: one of ``POLICIES`` or another error handler
    that ``codecs`` knows (``"backslashreplace"``, as tiktoken allows). Checked up
    front: ``bytes.decode`` looks the handler up only when it meets invalid UTF-8.

    >>> check_decode_errors("backslashreplace")
    'backslashreplace'
    """
    if errors in POLICIES and isinstance(errors, str):
        return errors
    if isinstance(errors, str):
        import codecs

        try:
            codecs.lookup_error(errors)
            return errors
        except LookupError:
            pass
    message = (
        f'errors must be "strict", "replace", "ignore" or another error handler of '
        f"bytes.decode, not {_shown(errors)}"
    )
    raise (ValueError if isinstance(errors, str) else TypeError)(message)
