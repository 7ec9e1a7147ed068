"""A file or dataset encode's options resolved against its tokenizer and inputs: the
ids of the marks (``Framing``), the ids' dtype, and the ``Job`` the core reads
(``_core.Encoder.encode_files``, ``encode_dataset``, ``encode_unit``,
``assemble_dataset`` take it and read its attributes, as ``src/py/dataset.rs``'s
``PyJob`` says).

>>> from bpekit.sources import Sources
>>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
>>> resolve_framing(tok, Marks(), Sources([], records=True)).record_eos
256
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import NamedTuple

from bpekit.dataset.options import EOT, RECORDS_DEFAULT, Layout, Marks
from bpekit.dataset.spec import ID_BYTES, id_dtype_name, megatron_dtype_name
from bpekit.options import ReadOptions, RunOptions
from bpekit.sources import Sources
from bpekit.tokenizer import Tokenizer

__all__ = ["Framing", "Job", "Prepared", "prepare", "resolve_framing", "single_token_id"]


@dataclass(frozen=True)
class Framing:
    """The ids written around documents and after each file, and what a summary says
    of them (``notes``)."""

    record_bos: int | None = None
    record_eos: int | None = None
    file_bos: int | None = None
    file_eos: int | None = None
    after_each_file: int | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Job:
    """What the core is told of an encode: how inputs are read, how the run goes, the
    layout (its ``dtype`` resolved for the vocabulary), the ids of the marks, and
    ``digest``: the inputs that nothing but their documents identifies (an iterable, a
    dataset object), whose documents a dataset run hashes."""

    read: ReadOptions
    run: RunOptions
    layout: Layout
    framing: Framing
    digest: tuple[int, ...] = ()
    # The tokenizer's name, which the datatrove format's metadata records.
    tokenizer_name: str = ""

    @property
    def dtype_name(self) -> str:
        """``"uint16"`` or ``"uint32"``."""
        return str(self.layout.dtype)

    @property
    def dtype_bytes(self) -> int:
        return ID_BYTES[self.dtype_name]


class Prepared(NamedTuple):
    """The tokenizer, loaded; the layout, its dtype resolved; ``after_each_file``'s id."""

    tok: Tokenizer
    layout: Layout
    end_id: int | None


def prepare(tokenizer: Tokenizer | str | os.PathLike[str], layout: Layout, marks: Marks) -> Prepared:
    """Loads the tokenizer, picks the ids' dtype for its vocabulary (or checks the one
    given) and finds ``after_each_file``'s token: all before any input is read."""
    from bpekit.encodings import load_tokenizer

    tok = load_tokenizer(tokenizer)
    dtype = layout.dtype
    if dtype is None and layout.shard_format == "megatron":
        dtype = megatron_dtype_name(tok.n_vocab)
    layout = replace(layout, dtype=id_dtype_name(tok.n_vocab, dtype))
    end_id = (
        None
        if marks.after_each_file is None
        else single_token_id(tok, marks.after_each_file, "to write after each file")
    )
    return Prepared(tok, layout, end_id)


def resolve_framing(
    tok: Tokenizer, marks: Marks, inputs: Sources, end_id: int | None = None, cli: bool = False
) -> Framing:
    """The ids of ``marks.eos`` / ``marks.bos`` for records and for text files (and
    ``end_id``, after each file), and a note on each saying what is added and why
    (worded for the command line's flags when ``cli``).

    >>> from bpekit.sources import Sources
    >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    >>> resolve_framing(tok, Marks(), Sources([], records=True)).notes
    ("eos '<|endoftext|>' (id 256) after each record: the default for records",)
    """
    eos, bos = marks.eos, marks.bos
    kinds = (("each record", inputs.records), ("each text file", inputs.text_files))
    where = " and ".join(kind for kind, present in kinds if present)
    add_eos = "--eos TOKEN" if cli else "eos='TOKEN'"
    notes = []
    ids: dict[str, int | None] = {}
    if eos is RECORDS_DEFAULT:
        ids["record_eos"] = eot = tok.special_tokens.get(EOT)
        if not inputs.records:
            notes.append(f"no eos/bos: text files keep the separators in their text ({add_eos} adds one)")
        elif eot is None:
            notes.append(f"no eos after records: the tokenizer has no {EOT!r} ({add_eos} adds one)")
        else:
            notes.append(f"eos {EOT!r} (id {eot}) after each record: the default for records")
    elif eos is None:
        notes.append("no eos: --no-eos" if cli else "no eos: eos=None")
    else:
        eos_id = single_token_id(tok, eos, "given as --eos" if cli else "given as eos")
        ids["record_eos"] = ids["file_eos"] = eos_id
        notes.append(f"eos {eos!r} (id {eos_id}) after {where}: {'--eos' if cli else 'eos='} given")
    if bos is not None:
        bos_id = single_token_id(tok, bos, "given as --bos" if cli else "given as bos")
        ids["record_bos"] = ids["file_bos"] = bos_id
        notes.append(f"bos {bos!r} (id {bos_id}) before {where}: {'--bos' if cli else 'bos='} given")
    return Framing(**ids, after_each_file=end_id, notes=tuple(notes))


def single_token_id(tok: Tokenizer, text: str, role: str) -> int:
    """The id of the token whose text is ``text``: a special token first (where an ordinary
    token has the same text, the special one is meant), else an ordinary token. ``role``
    says what it is for, in errors.

    >>> single_token_id(Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"]), "<|eot|>", "eos")
    256
    """
    if not isinstance(text, str):
        raise TypeError(f"the token {role} must be the text of a token (a str), not {text!r}")
    special = tok.special_tokens.get(text)
    if special is not None:
        return special
    try:
        return tok.encode_single_token(text)
    except KeyError:
        specials = ", ".join(sorted(tok.special_tokens)) or "none"
        raise ValueError(
            f"{text!r}, {role}, is not a single token of {tok.name!r} (its special tokens: {specials})"
        ) from None
