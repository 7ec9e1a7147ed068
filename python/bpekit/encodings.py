"""OpenAI encodings (gpt2, r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base,
o200k_harmony) from local rank files, never the network.

Where the files are looked for, in order, and nowhere else:

1. ``path``: a directory holding them, or (for a one-file encoding) the file itself;
2. each directory in ``$BPEKIT_ENCODINGS`` (``os.pathsep``-separated);
3. tiktoken's cache: ``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else
   ``<tmp>/data-gym-cache``, where files are named by the sha1 of their URL (so
   files tiktoken has downloaded are found).

In a directory a file is found under its own name (``o200k_base.tiktoken``,
``vocab.bpe``, ``encoder.json``; ``gpt2_vocab.bpe`` / ``gpt2_encoder.json`` too).
Every file's sha256 is checked against tiktoken's.

>>> enc = get_encoding("o200k_base")  # doctest: +SKIP
>>> enc.encode("hello world")  # doctest: +SKIP
[24912, 2375]
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from bpekit import patterns
from bpekit.formats.hf_load import find_tokenizer_json
from bpekit.tokenizer import Tokenizer

__all__ = ["ENCODINGS", "get_encoding", "infer_special_tokens", "list_encoding_names", "load_tokenizer"]

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

_BLOB = "https://openaipublic.blob.core.windows.net"


# NamedTuples rather than dataclasses: importing dataclasses (and the inspect module
# it needs) was a fifth of the time `import bpekit` took.
class RankFile(NamedTuple):
    """One file an encoding needs: the names it may have locally, its URL, its sha256."""

    names: tuple[str, ...]
    url: str
    sha256: str


class EncodingSpec(NamedTuple):
    name: str
    pattern: str  # a name the native pre-tokenizer knows
    special_tokens: dict[str, int]
    files: tuple[RankFile, ...]
    explicit_n_vocab: int | None = None
    gpt2_format: bool = False


def _tiktoken_file(name: str, sha256: str) -> tuple[RankFile, ...]:
    return (RankFile((f"{name}.tiktoken",), f"{_BLOB}/encodings/{name}.tiktoken", sha256),)


_O200K = _tiktoken_file("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d")
_R50K = _tiktoken_file("r50k_base", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930")
_P50K = _tiktoken_file("p50k_base", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069")
_GPT2 = (
    RankFile(
        ("vocab.bpe", "gpt2_vocab.bpe"),
        f"{_BLOB}/gpt-2/encodings/main/vocab.bpe",
        "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    ),
    RankFile(
        ("encoder.json", "gpt2_encoder.json"),
        f"{_BLOB}/gpt-2/encodings/main/encoder.json",
        "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    ),
)

# Patterns and special tokens exactly as tiktoken 0.14 (tiktoken_ext/openai_public.py)
# defines them. tiktoken's r50k pattern behaves exactly like the gpt2 pattern.
ENCODINGS: dict[str, EncodingSpec] = {
    "gpt2": EncodingSpec("gpt2", "gpt2", {ENDOFTEXT: 50256}, _GPT2, 50257, gpt2_format=True),
    "r50k_base": EncodingSpec("r50k_base", "gpt2", {ENDOFTEXT: 50256}, _R50K, 50257),
    "p50k_base": EncodingSpec("p50k_base", "gpt2", {ENDOFTEXT: 50256}, _P50K, 50281),
    "p50k_edit": EncodingSpec(
        "p50k_edit",
        "gpt2",
        {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282, FIM_SUFFIX: 50283},
        _P50K,
    ),
    "cl100k_base": EncodingSpec(
        "cl100k_base",
        "cl100k",
        {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260, ENDOFPROMPT: 100276},
        _tiktoken_file("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    ),
    "o200k_base": EncodingSpec("o200k_base", "o200k", {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}, _O200K),
    # o200k's ranks with the special tokens of OpenAI's harmony format. Its reserved
    # range gives 200018 a second name: `<|endofprompt|>` and `<|reserved_200018|>`
    # both encode to it, and it decodes to the first.
    "o200k_harmony": EncodingSpec(
        "o200k_harmony",
        "o200k",
        {
            ENDOFTEXT: 199999,
            ENDOFPROMPT: 200018,
            "<|startoftext|>": 199998,
            "<|reserved_200000|>": 200000,
            "<|reserved_200001|>": 200001,
            "<|return|>": 200002,
            "<|constrain|>": 200003,
            "<|reserved_200004|>": 200004,
            "<|channel|>": 200005,
            "<|start|>": 200006,
            "<|end|>": 200007,
            "<|message|>": 200008,
            "<|reserved_200009|>": 200009,
            "<|reserved_200010|>": 200010,
            "<|reserved_200011|>": 200011,
            "<|call|>": 200012,
            **{f"<|reserved_{i}|>": i for i in range(200013, 201088)},
        },
        _O200K,
    ),
}

# tiktoken's patterns, for reference and for exporting (the native engine uses the
# equivalent named pattern).
TIKTOKEN_PATTERNS = {"gpt2": patterns.GPT2, "cl100k": patterns.CL100K, "o200k": patterns.O200K}

_cache: dict[tuple[str, str | None], Tokenizer] = {}


def list_encoding_names() -> list[str]:
    return list(ENCODINGS)


def _tiktoken_cache_dir() -> Path | None:
    """tiktoken's cache folder, chosen as tiktoken chooses it (``None``: caching is off,
    as tiktoken reads ``TIKTOKEN_CACHE_DIR=""``)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return Path(os.environ[var]) if os.environ[var] else None
    import tempfile  # lazily: it imports shutil and random, which loading never needs

    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _candidates(f: RankFile, path: str | os.PathLike[str] | None, first: bool) -> Iterator[Path]:
    """Every place ``f`` may be, in search order; lazily, as the later places need
    modules (hashlib, tempfile) that the usual first place does not. A file given as
    ``path`` is the encoding's first file; its other files are looked for beside it."""
    dirs: list[Path] = []
    if path is not None:
        p = Path(path)
        if p.is_file():
            if first:
                yield p
            else:
                dirs.append(p.parent)
        else:
            dirs.append(p)
    dirs += [Path(d) for d in os.environ.get("BPEKIT_ENCODINGS", "").split(os.pathsep) if d]
    yield from (d / n for d in dirs for n in f.names)
    import hashlib  # lazily: OpenSSL adds ~4 MiB of RSS that training never needs

    cache = _tiktoken_cache_dir()
    if cache is not None:
        yield cache / hashlib.sha1(f.url.encode()).hexdigest()


def _read(spec: EncodingSpec, f: RankFile, path: str | os.PathLike[str] | None) -> bytes:
    first = f is spec.files[0]
    for p in _candidates(f, path, first):
        if p.is_file():
            data = p.read_bytes()
            import hashlib

            got = hashlib.sha256(data).hexdigest()
            if got != f.sha256:
                raise ValueError(
                    f"{p}: sha256 is {got}, but {spec.name}'s {f.names[0]} has {f.sha256}; "
                    "the file is corrupt or another file"
                )
            return data
    looked = "\n  ".join(str(p) for p in _candidates(f, path, first))
    needs = " and ".join(g.names[0] for g in spec.files)
    all_files = f" ({spec.name} needs {needs})" if len(spec.files) > 1 else ""
    raise FileNotFoundError(
        f"{spec.name}: cannot find {f.names[0]}{all_files} (bpekit never downloads). "
        f"Looked in:\n  {looked or '(nowhere: no path given, BPEKIT_ENCODINGS unset, no tiktoken cache)'}\n"
        f"Download {f.url} into a folder and name that folder in the BPEKIT_ENCODINGS environment "
        f"variable (several folders separated by {os.pathsep!r}; tiktoken's cache folder works too), "
        "or pass it as path= (get_encoding(name, path=DIR))."
    )


def _gpt2_ranks(vocab_bpe: bytes) -> dict[bytes, int]:
    """GPT-2's vocab.bpe -> ranks, as tiktoken's ``data_gym_to_mergeable_bpe_ranks``.

    The readable reference of the core's parser (``get_encoding`` uses that one, ~20x
    faster; the tests compare them). tiktoken also checks the ranks against encoder.json;
    here both files have passed their sha256 check (``_read``), so they are the published
    pair, which agree, and reading encoder.json's 50K tokens again is skipped.
    """
    from bpekit.formats.gpt2 import bytes_to_unicode, decode_token

    byte_order = list(bytes_to_unicode())  # printable bytes first, then the rest
    ranks = {bytes([b]): i for i, b in enumerate(byte_order)}
    merges = [line.split() for line in vocab_bpe.decode("utf-8").split("\n")[1:-1]]
    for first, second in merges:
        ranks[decode_token(first) + decode_token(second)] = len(ranks)
    return ranks


def get_encoding(name: str, path: str | os.PathLike[str] | None = None) -> Tokenizer:
    """The OpenAI encoding ``name`` as a ``Tokenizer`` with tiktoken's ids and defaults.

    Raises ``FileNotFoundError`` naming the missing file and every place looked.
    """
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(ENCODINGS)}")
    key = (name, None if path is None else str(path))
    if key in _cache:
        return _cache[key]
    spec = ENCODINGS[name]
    if path is not None and not Path(path).exists():
        # A mistyped path would otherwise be passed over for the places searched next.
        raise FileNotFoundError(f"{path}: no such file or folder (the path given for {name})")
    # The first file holds the ranks: a .tiktoken file, or GPT-2's vocab.bpe (whose
    # encoder.json is read only for its sha256 check; see _gpt2_ranks).
    data, *_ = [_read(spec, f, path) for f in spec.files]
    from bpekit.formats.tiktoken import read_rank_file  # lazily: `import bpekit` needs no base64

    loaded = read_rank_file(
        data,
        spec.files[0].names[0],
        spec.special_tokens,
        file_format="gpt2" if spec.gpt2_format else "tiktoken",
        pattern=spec.pattern,
        name=name,
    )
    tok = Tokenizer._from_parts(loaded)
    if spec.explicit_n_vocab is not None and tok.n_vocab != spec.explicit_n_vocab:
        raise ValueError(f"{name}: {tok.n_vocab} ids, expected {spec.explicit_n_vocab}")
    _cache[key] = tok
    return tok


# What a special token looks like: "<|endoftext|>", "<s>", "</s>", "<unk>", "[CLS]",
# "<extra_id_0>". Only a token that looks like one is taken as special: a vocab.json
# beside a merges.txt cut short makes thousands of ordinary tokens unreachable, and
# taking those as special (" i", "he") changed how ordinary text encodes, silently.
_LOOKS_SPECIAL = re.compile(r"<\|[^\s|][^\s]*\|>|</?[A-Za-z0-9_][\w.:-]*>|\[[A-Za-z0-9_][\w.:-]*\]", re.ASCII)


def looks_special(token: bytes) -> bool:
    """Whether ``token`` has the form of a special token: ``<|...|>``, ``<...>``,
    ``</...>`` or ``[...]`` around a name without spaces, in valid UTF-8.

    >>> [looks_special(t) for t in (b"<|endoftext|>", b"</s>", b"[CLS]", b" i", b"<|a b|>", b"<|\\xff|>")]
    [True, True, True, False, False, False]
    """
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:  # a special token is text
        return False
    return _LOOKS_SPECIAL.fullmatch(text) is not None


def unreachable_tokens(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]]) -> list[bytes]:
    """Tokens of ``vocab`` that are neither single bytes nor made by a merge, in id
    order: special tokens, or signs that ``merges`` is not all of ``vocab``'s merges.

    >>> unreachable_tokens({0: b"a", 1: b"b", 2: b"ab", 3: b"<|e|>", 4: b"ba"}, [(b"a", b"b")])
    [b'<|e|>', b'ba']
    """
    made = {a + b for a, b in merges}
    return [tok for _, tok in sorted(vocab.items()) if len(tok) > 1 and tok not in made]


def infer_special_tokens(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]]) -> list[str]:
    """The special tokens of a vocabulary with no record of them: the tokens that are
    neither single bytes nor made by a merge *and* look special (``looks_special``),
    in id order. Other unreachable tokens are ordinary ones whose merges are missing
    (see ``load_tokenizer``, which warns of them).

    >>> infer_special_tokens({0: b"a", 1: b"b", 2: b"ab", 3: b"<|e|>", 4: b"ba"}, [(b"a", b"b")])
    ['<|e|>']
    """
    return [tok.decode("utf-8") for tok in unreachable_tokens(vocab, merges) if looks_special(tok)]


def _warn_unreachable(folder: Path, vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]]) -> None:
    """Warns of the ordinary-looking tokens of ``vocab`` that no merge makes: encoding
    never gives them, which is what a merges.txt cut short or from another
    vocabulary looks like."""
    ordinary = [t for t in unreachable_tokens(vocab, merges) if not looks_special(t)]
    if not ordinary:
        return
    import warnings

    examples = ", ".join(repr(t.decode("utf-8", "replace")) for t in ordinary[:5])
    warnings.warn(
        f"{folder}: {len(ordinary):,} tokens of vocab.json are made by no merge of merges.txt "
        f"and do not look special ({examples}, ...); is merges.txt cut short or another "
        "vocabulary's? They stay ordinary tokens that encoding never gives; name the special "
        "tokens with special_tokens= (--special-token) or in a bpekit.json",
        UserWarning,
        stacklevel=3,
    )


def _warn_past_vocab(vocab_path: Path, vocab: dict[int, bytes], tok: Tokenizer) -> None:
    """Warns of the special tokens that vocab.json does not hold: they are appended
    after its highest id, so the vocabulary outgrows what it was trained to, and a
    model with one embedding row per trained token cannot take their ids."""
    size = max(vocab, default=-1) + 1
    added = sorted((i, t) for t, i in tok.special_tokens.items() if i >= size)
    if not added:
        return
    import warnings

    names = ", ".join(f"{t!r} (id {i})" for i, t in added)
    s = "s" * (len(added) > 1)
    warnings.warn(
        f"{vocab_path} holds no special token{s} {names}: added past its {size:,} ids, so the "
        f"vocabulary grows to {tok.n_vocab:,} ids (a model with {size:,} embedding rows cannot "
        f"take id {added[0][0]})",
        UserWarning,
        stacklevel=3,
    )


def load_tokenizer(
    spec: Tokenizer | str | os.PathLike[str], special_tokens: list[str] | None = None
) -> Tokenizer:
    """A tokenizer from a ``Tokenizer``, an encoding name (``"o200k_base"``), a HuggingFace
    ``tokenizer.json`` or a folder holding one (``Tokenizer.from_hf``), or a folder
    with ``vocab.json`` + ``merges.txt``: its pattern and special tokens are those of its
    ``bpekit.json`` (``Tokenizer.save`` and ``bpekit train`` write one), else GPT-2's
    pattern and the special tokens inferred (``infer_special_tokens``: unreachable by
    the merges and special-looking); ``special_tokens`` overrides either. Without a
    ``bpekit.json`` or ``special_tokens``, tokens that no merge makes but that look
    ordinary (a merges.txt cut short) are a ``UserWarning`` naming the folder.
    """
    if isinstance(spec, Tokenizer):
        return spec
    if isinstance(spec, str) and spec in ENCODINGS:
        enc = get_encoding(spec)
        if special_tokens is not None and set(special_tokens) != set(enc.special_tokens):
            raise ValueError(
                f"{spec} has its own special tokens ({', '.join(enc.special_tokens)}); "
                "special tokens can be given for a vocab.json + merges.txt folder only"
            )
        return enc
    folder = Path(spec)
    vocab_path, merges_path = folder / "vocab.json", folder / "merges.txt"
    hf_json = find_tokenizer_json(folder)
    # A model's folder often holds vocab.json and merges.txt beside tokenizer.json,
    # which alone has the added tokens and normalizers: it wins, unless bpekit wrote
    # the folder (its bpekit.json holds what GPT-2's files cannot).
    if hf_json is not None and not (folder / "bpekit.json").is_file():
        if special_tokens is not None:
            raise ValueError(
                f"{hf_json}: a tokenizer.json has its own added tokens; special tokens can be "
                "given for a vocab.json + merges.txt folder only"
            )
        return Tokenizer.from_hf(hf_json)
    if folder.is_dir() and vocab_path.is_file() and merges_path.is_file():
        from bpekit.formats.folder import load_config
        from bpekit.formats.gpt2 import load_vocab_merges

        config = load_config(folder)
        vocab, merges = load_vocab_merges(vocab_path, merges_path)
        if special_tokens is not None:
            specials = special_tokens
        elif config is not None:
            specials = config.special_tokens
        else:
            specials = infer_special_tokens(vocab, merges)
            _warn_unreachable(folder, vocab, merges)
        pattern, name = ("gpt2", None) if config is None else (config.pattern, config.name)
        tok = Tokenizer._from_loaded_files(vocab, merges, specials, pattern, name, merges_path)
        _warn_past_vocab(vocab_path, vocab, tok)
        return tok
    raise _not_a_tokenizer(spec)


def _close_name(name: str, names: list[str]) -> str | None:
    """The one of ``names`` that ``name`` likely meant: itself in other case, the first
    it is the start of (``o200k`` -> ``o200k_base``), else the closest by ``difflib``
    (``gpt4`` -> ``gpt-4``)."""
    import difflib

    name = name.lower()
    if name in names:
        return name
    starts = [n for n in names if n.startswith(name + "_")]
    if starts:
        return starts[0]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return close[0] if close else None


def _not_a_tokenizer(spec: str | os.PathLike[str]) -> Exception:
    """The error for a tokenizer spec that names nothing loadable, saying what it is:
    a model's name (and its encoding), a near miss of an encoding or model name, a
    path with nothing there (and a near miss beside it), or a folder or file of
    something else.

    >>> str(_not_a_tokenizer("gpt-4o"))
    "gpt-4o is an OpenAI model's name, not an encoding's: it uses o200k_base, so give o200k_base"
    >>> print(_not_a_tokenizer("gpt4"))
    gpt4: no encoding, model or folder of that name; did you mean gpt-4, a model whose encoding ...
    """
    from bpekit._openai_models import MODEL_TO_ENCODING, encoding_name_for_model

    text = os.fspath(spec)
    path = Path(text)
    wants = (
        "a tokenizer is an encoding name, a tokenizer.json, or a folder of one or of vocab.json + merges.txt"
    )
    if path.is_dir():
        return FileNotFoundError(
            f"{text}: a folder without tokenizer.json, nor vocab.json and merges.txt; {wants}"
        )
    if path.name in ("vocab.json", "merges.txt") and path.is_file():
        return ValueError(f"{text}: give the folder that holds vocab.json and merges.txt, {path.parent}")
    if path.exists():
        return ValueError(f"{text}: not a tokenizer.json; {wants}")
    here = _close_entry(path)
    bare = isinstance(spec, str) and not any(c in text for c in "/\\") and not text.startswith((".", "~"))
    if not bare or text.endswith(".json"):
        kind = "folder" if text.endswith(("/", os.sep)) else "file or folder"
        return FileNotFoundError(f"{text}: no such {kind}" + (f"; did you mean {here}?" if here else ""))
    try:
        encoding = encoding_name_for_model(text)
    except KeyError:
        encoding = None
    if encoding is not None:
        return ValueError(
            f"{text} is an OpenAI model's name, not an encoding's: it uses {encoding}, so give {encoding}"
        )
    what = f"{text}: no encoding, model or folder of that name"
    guess = _close_name(text, [*ENCODINGS, *MODEL_TO_ENCODING])
    if guess in ENCODINGS:
        return FileNotFoundError(f"{what}; did you mean {guess}?")
    if guess is not None:
        return FileNotFoundError(
            f"{what}; did you mean {guess}, a model whose encoding is {MODEL_TO_ENCODING[guess]}?"
        )
    if here is not None:
        return FileNotFoundError(f"{what}; did you mean {here}?")
    return FileNotFoundError(f"{what}; the encodings: {', '.join(ENCODINGS)}")


def _close_entry(path: Path) -> str | None:
    """A file or folder beside where ``path`` would be whose name is close to its name
    (``../tokk/`` -> ``../tok``), as written for the user; None when there is none or
    the folder it would be in does not exist."""
    import difflib

    parent, name = path.parent, path.name
    try:
        names = [entry.name for entry in parent.iterdir()] if parent.is_dir() else []
    except OSError:
        return None
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    if not close:
        return None
    return close[0] if str(parent) == "." else str(parent / close[0])
