"""How each tool is loaded and driven in the peer workloads of ``peers_compare.py``.

A tokenizer is a ``Source``: a ``tokenizer.json`` file (``kind="json"``, the oracle is
HF ``tokenizers``) or an OpenAI encoding (``kind="tiktoken"``, the oracle is tiktoken,
built offline from the same rank files). Each tool has a loader and, for each workload
it has an API for, a call:

* ``doc``: each document in turn, one thread, its ids as a Python list;
* ``batch``: one call on all the documents, N threads, a list of lists;
* ``flat``: one call on all the documents, N threads, one numpy array of ids and the
  documents' offsets;
* ``file``: from the file on disk to ids, N threads.

With a ``tokenizer.json`` every tool recognises the added tokens in the text, as
``tokenizers.encode(text, add_special_tokens=False)`` does; with an OpenAI encoding
every tool encodes ordinary text (``encode_ordinary`` where the tool has it). The
documents carry no ``<|endoftext|>`` (they are the text between them), so the two
agree on them; the file workload's text does carry them.

Every call returns what the tool returns; ``canonical`` turns the last call's result
into per-document ids for the check against the oracle (untimed).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from _common import EOT, tiktoken_encoding

SEPARATOR = EOT


@dataclass(frozen=True)
class Source:
    """A tokenizer as every tool is given it.

    ``path``: the ``tokenizer.json`` (for an encoding, the one bpekit exports, which
    the tools without a rank-file loader read); ``name``: the encoding's name;
    ``ranks``: its ``.tiktoken`` rank file; ``pattern``: tiktoken's regex for it."""

    kind: str  # "json" | "tiktoken"
    label: str
    path: str
    name: str = ""
    ranks: str = ""
    pattern: str = ""


@dataclass(frozen=True)
class Call:
    """One workload's call: ``run(tok, inputs, threads)``, where inputs are the
    documents (``list[str]``) or, for ``file``, the file's path; ``api`` says what it
    calls, for the table (``{n}``: the thread count)."""

    api: str
    run: Callable[[Any, Any, int], Any]


# ---- loaders ---------------------------------------------------------------------------


def _load_bpekit(src: Source) -> Any:
    import bpekit

    return bpekit.Tokenizer.from_hf(src.path) if src.kind == "json" else bpekit.get_encoding(src.name)


def _load_fastokens(src: Source) -> Any:
    import fastokens  # type: ignore[import-untyped]

    if src.kind == "json":
        return fastokens.Tokenizer.from_file(src.path)
    if src.name in ("cl100k_base", "o200k_base"):
        return fastokens.Tokenizer.from_tiktoken(src.ranks, encoding=src.name)
    # Its presets stop at cl100k: other rank files take the pattern and specials.
    return fastokens.Tokenizer.from_tiktoken(src.ranks, pattern=src.pattern, special_tokens=_specials(src))


def _load_tokie(src: Source) -> Any:
    import tokie

    return tokie.Tokenizer.from_json(src.path)


def _load_kitoken(src: Source) -> Any:
    from kitoken import Kitoken

    # From a rank file kitoken recognises the encoding by its vocabulary.
    return (
        Kitoken.from_tokenizers_file(src.path)
        if src.kind == "json"
        else Kitoken.from_tiktoken_file(src.ranks)
    )


def _load_gigatoken(src: Source) -> Any:
    import gigatoken

    # from_tiktoken takes the pattern and specials from the file's name (r50k_base, ...).
    return (
        gigatoken.Tokenizer(src.path) if src.kind == "json" else gigatoken.Tokenizer.from_tiktoken(src.ranks)
    )


def _load_tokenizers(src: Source) -> Any:
    import tokenizers  # type: ignore[import-untyped]

    return tokenizers.Tokenizer.from_file(src.path)


def _load_tiktoken(src: Source) -> Any:
    return tiktoken_encoding(src.name)


def _specials(src: Source) -> dict[str, int]:
    from bpekit.encodings import ENCODINGS

    return dict(ENCODINGS[src.name].special_tokens)


# ---- calls -----------------------------------------------------------------------------


def _bpekit_file(tok: Any, path: Path, threads: int, folder: str = "PEERS_TMP") -> np.ndarray:
    import bpekit

    out = Path(os.environ[folder]) / "tokens.npy"
    # A new output each run, as a first run writes: replacing the last run's would time
    # the file system freeing its blocks inside the rename.
    out.unlink(missing_ok=True)
    bpekit.encode_file(path, out, tok, num_threads=threads)
    return bpekit.load_tokens(out)


def _read_docs(path: Path) -> list[str]:
    return [d for d in path.read_text(encoding="utf-8").split(SEPARATOR) if d]


def _awkward_flat(arr: Any) -> tuple[np.ndarray, np.ndarray]:
    # gigatoken's batch is an awkward list array: its ids and offsets are numpy
    # buffers already, taken without a copy.
    layout = arr.layout
    return np.asarray(layout.content.data), np.asarray(layout.offsets.data)


def _frombuffer(pair: tuple[bytes, bytes]) -> tuple[np.ndarray, np.ndarray]:
    return np.frombuffer(pair[0], np.uint32), np.frombuffer(pair[1], np.uint64)


def _hf_style_calls() -> dict[str, Call]:
    """``doc`` and ``batch`` of a tool with HF ``tokenizers``' API (tokenizers, tokie)."""
    return {
        "doc": Call(
            "[encode(d, add_special_tokens=False).ids for d in docs]",
            lambda t, docs, n: [t.encode(d, add_special_tokens=False).ids for d in docs],
        ),
        "batch": Call(
            "[e.ids for e in encode_batch(docs, add_special_tokens=False)]",
            lambda t, docs, n: [e.ids for e in t.encode_batch(docs, add_special_tokens=False)],
        ),
    }


def _calls(tool: str, kind: str) -> dict[str, Call]:
    """The workload calls of ``tool`` for a source of ``kind``."""
    hf = kind == "json"
    if tool == "bpekit":
        if hf:
            doc = Call("[encode(d) for d in docs]", lambda t, docs, n: [t.encode(d) for d in docs])
            batch = Call("encode_batch(docs, {n})", lambda t, docs, n: t.encode_batch(docs, n))
            flat = Call(
                "encode_batch_to_numpy(docs, {n})", lambda t, docs, n: t.encode_batch_to_numpy(docs, n)
            )
        else:
            doc = Call(
                "[encode_ordinary(d) for d in docs]", lambda t, docs, n: [t.encode_ordinary(d) for d in docs]
            )
            batch = Call(
                "encode_ordinary_batch(docs, {n})", lambda t, docs, n: t.encode_ordinary_batch(docs, n)
            )
            flat = Call(
                "encode_batch_to_numpy(docs, {n}, allowed_special=set())",
                lambda t, docs, n: t.encode_batch_to_numpy(
                    docs, n, allowed_special=set(), disallowed_special=()
                ),
            )
        file = Call("encode_file(path, out.npy, num_threads={n}); load_tokens", _bpekit_file)
        return {"doc": doc, "batch": batch, "flat": flat, "file": file}
    if tool == "bpekit-shm":
        # The same call with its output in memory (tmpfs), as gigatoken's and tokie's
        # are: on a VM, writing to the disk costs more than encoding (see the notes).
        return {
            "file": Call(
                "encode_file(path, /dev/shm/out.npy, num_threads={n}); load_tokens",
                lambda t, path, n: _bpekit_file(t, path, n, "PEERS_SHM"),
            )
        }
    if tool == "fastokens":
        # An OpenAI encoding encodes special tokens' text as text (encode_ordinary).
        split = not hf
        kw = "" if hf else ", split_special_tokens=True"

        def one(t: Any, d: str) -> Any:
            return t.encode(d).ids if hf else t.encode_ordinary(d).ids

        return {
            "doc": Call(
                f"[{'encode' if hf else 'encode_ordinary'}(d).ids for d in docs]",
                lambda t, docs, n: [one(t, d) for d in docs],
            ),
            "batch": Call(
                f"[e.ids for e in encode_batch(docs{kw})]",
                lambda t, docs, n: [e.ids for e in t.encode_batch(docs, split_special_tokens=split)],
            ),
            "flat": Call(
                f"encode_batch_flat(docs{kw})",
                lambda t, docs, n: _frombuffer(t.encode_batch_flat(docs, split_special_tokens=split)),
            ),
            "file": Call(
                f"read, split, encode_batch_flat(docs{kw}) (no file API)",
                lambda t, path, n: _frombuffer(
                    t.encode_batch_flat(_read_docs(path), split_special_tokens=split)
                ),
            ),
        }
    if tool == "tokie":
        file = Call("encode_files([path])", lambda t, path, n: t.encode_files([str(path)]))
        return {**_hf_style_calls(), "file": file}
    if tool == "kitoken":
        # encode_specials=True: added tokens in the text encode as such, as tokenizers does.
        return {
            "doc": Call(
                f"[encode(d, {hf}) for d in docs]", lambda t, docs, n: [t.encode(d, hf) for d in docs]
            ),
            "batch": Call(f"encode_all(docs, {hf}) (one thread)", lambda t, docs, n: t.encode_all(docs, hf)),
        }
    if tool == "gigatoken":
        return {
            "doc": Call(
                "[encode(d).tolist() for d in docs]", lambda t, docs, n: [t.encode(d).tolist() for d in docs]
            ),
            "batch": Call(
                "encode_batch_list(docs)", lambda t, docs, n: t.encode_batch_list(docs, parallel=True)
            ),
            "flat": Call(
                "encode_batch(docs) (awkward)",
                lambda t, docs, n: _awkward_flat(t.encode_batch(docs, parallel=True)),
            ),
            "file": Call("encode_files(path)", lambda t, path, n: t.encode_files(str(path), parallel=True)),
        }
    if tool == "tokenizers":
        return _hf_style_calls()
    if tool == "tiktoken":
        return {
            "doc": Call(
                "[encode_ordinary(d) for d in docs]", lambda t, docs, n: [t.encode_ordinary(d) for d in docs]
            ),
            "batch": Call(
                "encode_ordinary_batch(docs, num_threads={n})",
                lambda t, docs, n: t.encode_ordinary_batch(docs, num_threads=n),
            ),
        }
    raise ValueError(f"unknown tool {tool!r}")


LOADERS: dict[str, Callable[[Source], Any]] = {
    "bpekit": _load_bpekit,
    "bpekit-shm": _load_bpekit,
    "fastokens": _load_fastokens,
    "tokie": _load_tokie,
    "kitoken": _load_kitoken,
    "gigatoken": _load_gigatoken,
    "tokenizers": _load_tokenizers,
    "tiktoken": _load_tiktoken,
}
# The tools of each kind of source; the oracle's own row comes last.
TOOLS = {
    "json": ["bpekit", "bpekit-shm", "fastokens", "tokie", "kitoken", "gigatoken", "tokenizers"],
    "tiktoken": [
        "bpekit",
        "bpekit-shm",
        "fastokens",
        "tokie",
        "kitoken",
        "gigatoken",
        "tiktoken",
        "tokenizers",
    ],
}
# Where a tool reads an OpenAI encoding from bpekit's exported tokenizer.json, not from
# the rank file: its row says so.
VIA_EXPORT = {"tokie", "tokenizers"}


def call(tool: str, kind: str, workload: str) -> Call | None:
    """``tool``'s call for ``workload``, or None when it has no API for it."""
    return _calls(tool, kind).get(workload)


def env(threads: int) -> dict[str, str]:
    """The thread settings every tool reads, for a measurement on ``threads`` threads:
    rayon's pool (bpekit's default, tokenizers, gigatoken, fastokens' batches),
    fastokens' own pool that splits one long input across cores (all cores by
    default), and tokenizers' switch. tokie has no setting: the worker limits the
    process's CPUs instead (see ``limit_cpus``)."""
    n = str(threads)
    return {"RAYON_NUM_THREADS": n, "FASTOKENS_BPE_THREADS": n, "TOKENIZERS_PARALLELISM": "true"}


def limit_cpus(threads: int) -> None:
    """Lets this process run on ``threads`` CPUs only, when it may use more: every
    thread pool sizes itself by the CPUs it may use, so this bounds the tools that
    take no thread count (tokie) and fastokens' per-input pool alike."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > threads:
        os.sched_setaffinity(0, cpus[:threads])


# ---- per-document ids, for the check against the oracle ---------------------------------


def canonical(workload: str, out: Any, sep_id: int) -> list[Sequence[int]] | tuple[np.ndarray, np.ndarray]:
    """The ids of each document (the text between separators, empty ones left out) in
    ``out``: a list of lists, or one array with the offsets of the documents."""
    if isinstance(out, tuple):  # (ids, offsets) of each document
        return np.asarray(out[0]), np.asarray(out[1], dtype=np.int64)
    if workload == "file":  # the whole file's ids, separators included
        if type(out).__module__.partition(".")[0] == "awkward":  # gigatoken: one row per file
            out = _awkward_flat(out)[0]
        return split_at(np.asarray(out), sep_id)
    lists: list[Sequence[int]] = out
    return lists


def split_at(ids: np.ndarray, sep_id: int) -> tuple[np.ndarray, np.ndarray]:
    """The ids of the whole text cut into documents at ``sep_id`` (dropped), the empty
    documents left out, as ``(ids, offsets)``."""
    ids = np.asarray(ids)
    cuts = np.flatnonzero(ids == sep_id)
    starts = np.concatenate([[0], cuts + 1])
    ends = np.concatenate([cuts, [len(ids)]])
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    body = np.delete(ids, cuts)  # the documents' ids, in order, the empty ones adding none
    offsets = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)
    return body, offsets


def differing(
    got: list[Sequence[int]] | tuple[np.ndarray, np.ndarray], oracle: tuple[np.ndarray, np.ndarray]
) -> dict[str, Any]:
    """How many documents' ids differ from the oracle's, and the first one that does."""
    o_ids, o_off = oracle
    n = len(o_off) - 1
    docs: Sequence[Any]
    if isinstance(got, tuple):
        g_ids, g_off = got
        docs = [g_ids[g_off[i] : g_off[i + 1]] for i in range(len(g_off) - 1)]
    else:
        docs = got
    bad, first = 0, None
    for i in range(max(n, len(docs))):
        want = o_ids[o_off[i] : o_off[i + 1]] if i < n else None
        have = np.asarray(docs[i], dtype=np.int64) if i < len(docs) else None
        if want is None or have is None or len(want) != len(have) or not np.array_equal(want, have):
            bad += 1
            if first is None:
                first = _first_difference(i, have, want)
    return {"docs": n, "docs_returned": len(docs), "differ": bad, "first": first}


def _first_difference(i: int, have: np.ndarray | None, want: np.ndarray | None) -> str:
    if have is None or want is None:
        return f"document {i}: {'missing' if have is None else 'extra'}"
    k = next((j for j in range(min(len(have), len(want))) if have[j] != want[j]), min(len(have), len(want)))
    return (
        f"document {i}, id {k}: {have[k : k + 4].tolist()} instead of {want[k : k + 4].tolist()} "
        f"({len(have)} ids, oracle {len(want)})"
    )
