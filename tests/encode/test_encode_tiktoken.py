"""Ids identical to tiktoken's (built offline from the same rank files).

Covered: gpt2, cl100k_base and o200k_base on every text file of ../shared/data
(corpora, multilingual, cs336; .jsonl files as their documents joined by
<|endoftext|>), encoded with allowed_special="all". Files up to 1.5 MB are compared
whole; for larger ones the first ~1 MB (cut at a line end) is compared, which keeps
the suite at a few minutes on 2 cores (tiktoken runs ~4-10 MB/s per thread). Both
sides run in parallel (encode_batch). Also every row of reference/*.csv for r50k,
p50k, p50k_edit, cl100k and o200k; and a sample of each vocabulary's tokens in contexts
that make pieces which are, or almost are, tokens.
"""

from __future__ import annotations

import ast
import csv

import pytest
from conftest import bpekit_encoding, data_path, read_text_file, tiktoken_encoding

ENCODINGS = ["gpt2", "cl100k_base", "o200k_base"]
WHOLE_FILE_LIMIT = 1_500_000
PREFIX = 1_000_000


def _sample(text: str) -> str:
    if len(text.encode("utf-8")) <= WHOLE_FILE_LIMIT:
        return text
    cut = text.rfind("\n", 0, PREFIX)
    return text[: cut + 1 if cut > 0 else PREFIX]


def _texts() -> list[tuple[str, str]]:
    out = []
    for sub in ("corpora", "multilingual", "cs336"):
        for p in sorted(data_path(sub).iterdir()):
            if p.suffix in (".txt", ".jsonl", ".en"):
                out.append((f"{sub}/{p.name}", _sample(read_text_file(p))))
    return out


@pytest.fixture(scope="module")
def texts() -> list[tuple[str, str]]:
    return _texts()


def _first_difference(a: list[int], b: list[int]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"first difference at token {i}: tiktoken {a[i : i + 5]} bpekit {b[i : i + 5]}"
    return f"lengths differ: tiktoken {len(a)} bpekit {len(b)}"


@pytest.mark.parametrize("name", ENCODINGS)
def test_data_files_match_tiktoken(name: str, texts: list[tuple[str, str]]) -> None:
    tk = tiktoken_encoding(name)
    ours = bpekit_encoding(name)
    contents = [t for _, t in texts]
    expected = tk.encode_batch(contents, num_threads=2, allowed_special="all")
    got = ours.encode_batch(contents, num_threads=2, allowed_special="all")
    bad = [
        f"{label}: {_first_difference(e, g)}"
        for (label, _), e, g in zip(texts, expected, got, strict=True)
        if e != g
    ]
    assert not bad, "\n".join(bad)


# Texts made of vocabulary tokens: pieces that are a token, almost a token (case
# changed, a space or a contraction added), or several glued, so the merges run on
# pieces where one wrong rank changes the ids (random text rarely makes such pieces).
TOKEN_CONTEXTS = [
    lambda t: t,
    lambda t: " " + t,
    lambda t: t + t,
    lambda t: t * 5,
    lambda t: "x" + t + "\n",
    lambda t: t.upper(),
    lambda t: t.swapcase() + "'s",
    lambda t: "1" + t + " ",
    lambda t: t.strip() * 3,
]
TOKEN_SAMPLE = 3000


@pytest.mark.parametrize("name", ENCODINGS)
def test_vocabulary_tokens_in_contexts_like_tiktoken(name: str) -> None:
    import random

    tk = tiktoken_encoding(name)
    ours = bpekit_encoding(name)
    tokens = []
    for i in range(tk.n_vocab):
        try:
            tokens.append(tk.decode_single_token_bytes(i).decode("utf-8"))
        except (KeyError, UnicodeDecodeError):
            continue  # special-token gaps, and tokens that are part of a character
    rng = random.Random(20261122)
    sample = rng.sample(tokens, TOKEN_SAMPLE)
    texts = [context(t) for context in TOKEN_CONTEXTS for t in sample]
    texts += ["".join(sample[i : i + 20]) for i in range(0, len(sample), 20)]
    expected = tk.encode_ordinary_batch(texts, num_threads=2)
    got = ours.encode_ordinary_batch(texts, num_threads=2)
    pairs = zip(texts, expected, got, strict=True)
    bad = [f"{t!r}: {_first_difference(e, g)}" for t, e, g in pairs if e != g]
    assert not bad, "\n".join(bad[:10])


def _reference_rows(name: str) -> list[tuple[str, list[int]]]:
    path = data_path("reference", f"jtokkit_{name}_encodings.csv")
    with open(path, encoding="utf-8", newline="") as f:
        return [(row["input"], ast.literal_eval(row["output"])) for row in csv.DictReader(f)]


@pytest.mark.parametrize("name", ["r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base"])
def test_reference_csv(name: str) -> None:
    enc = bpekit_encoding(name)
    rows = _reference_rows(name)
    assert len(rows) > 400
    for text, ids in rows:
        assert enc.encode(text) == ids, text
        assert enc.encode_ordinary(text) == ids, text
        assert enc.decode(ids) == text


@pytest.mark.parametrize("name", ENCODINGS)
def test_special_token_defaults_like_tiktoken(name: str) -> None:
    tk = tiktoken_encoding(name)
    ours = bpekit_encoding(name)
    text = "hi <|endoftext|> there"
    with pytest.raises(ValueError, match="disallowed special token"):
        tk.encode(text)
    with pytest.raises(ValueError, match="disallowed special token"):
        ours.encode(text)
    for kwargs in (
        {"allowed_special": "all"},
        {"allowed_special": {"<|endoftext|>"}},
        {"disallowed_special": ()},
        {"allowed_special": set(), "disallowed_special": set()},
    ):
        assert ours.encode(text, **kwargs) == tk.encode(text, **kwargs), kwargs
    assert ours.encode_ordinary(text) == tk.encode_ordinary(text)
    assert ours.eot_token == tk.eot_token
    assert ours.n_vocab == tk.n_vocab
    assert ours.special_tokens_set == tk.special_tokens_set
    ids = tk.encode("héllo wörld 🙃", allowed_special="all")
    assert ours.decode_bytes(ids) == tk.decode_bytes(ids)
    assert [ours.decode_single_token_bytes(i) for i in ids] == [tk.decode_single_token_bytes(i) for i in ids]
    arr = ours.encode_to_numpy("hello world")
    assert arr.dtype.name == "uint32" and arr.tolist() == tk.encode("hello world")


def test_unknown_id_is_a_key_error() -> None:
    enc = bpekit_encoding("gpt2")
    with pytest.raises(KeyError, match="99999999"):
        enc.decode([1, 99999999])
    with pytest.raises(KeyError, match="-1"):
        enc.decode([-1])
    # Past 64 bits too (an OverflowError from the conversion before).
    with pytest.raises(KeyError, match=str(2**63)):
        enc.decode([1, 2**63])
    with pytest.raises(KeyError, match=str(2**64)):
        enc.decode_single_token_bytes(2**64)
    with pytest.raises(KeyError, match=str(-(2**70))):
        enc.decode_tokens_bytes([1, -(2**70)])


def test_missing_encoding_file_says_where_it_looked(tmp_path, monkeypatch) -> None:
    import bpekit

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BPEKIT_ENCODINGS", str(tmp_path / "env"))
    (tmp_path / "given").mkdir()
    with pytest.raises(FileNotFoundError) as e:
        bpekit.get_encoding("cl100k_base", path=tmp_path / "given")
    msg = str(e.value)
    assert "cl100k_base.tiktoken" in msg
    for place in ("given", "env", "cache"):
        assert place in msg
    # It says how to provide the files.
    assert "path=" in msg and "BPEKIT_ENCODINGS" in msg
    with pytest.raises(
        FileNotFoundError, match=r"gpt2: cannot find vocab\.bpe \(gpt2 needs vocab\.bpe and encoder\.json\)"
    ):
        bpekit.get_encoding("gpt2", path=tmp_path / "given")
    # A mistyped path is an error, not passed over for the places searched next.
    with pytest.raises(
        FileNotFoundError, match=r"typo\.tiktoken: no such file or folder \(the path given for"
    ):
        bpekit.get_encoding("cl100k_base", path=tmp_path / "typo.tiktoken")
    # tiktoken reads an empty TIKTOKEN_CACHE_DIR as "no cache"; so does the search.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "datagym"))
    with pytest.raises(FileNotFoundError) as e:
        bpekit.get_encoding("cl100k_base", path=tmp_path / "given")
    assert "datagym" not in str(e.value) and "data-gym-cache" not in str(e.value)


def test_no_developer_folder_is_searched(tmp_path, monkeypatch) -> None:
    """The installed package looks only where it is told: with no path, no
    BPEKIT_ENCODINGS and an empty tiktoken cache, the shared data beside this
    repository is not found, and the error says how to provide the files."""
    import bpekit
    from bpekit import encodings

    data_path("encodings")  # the folder that must not be found exists
    monkeypatch.delenv("BPEKIT_ENCODINGS", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(encodings, "_cache", {})
    with pytest.raises(FileNotFoundError, match="BPEKIT_ENCODINGS") as e:
        bpekit.get_encoding("o200k_base")
    assert "shared" not in str(e.value).replace(str(tmp_path), "")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        bpekit.get_encoding("o200k_base")


def test_gpt2_from_its_vocab_bpe_file(tmp_path) -> None:
    """GPT-2 has two files: given vocab.bpe as path, encoder.json is found beside it
    (it was checked against vocab.bpe's own sha256, "corrupt or another file")."""
    import shutil

    import bpekit

    shutil.copy(data_path("encodings", "gpt2_vocab.bpe"), tmp_path / "vocab.bpe")
    shutil.copy(data_path("encodings", "gpt2_encoder.json"), tmp_path / "encoder.json")
    enc = bpekit.get_encoding("gpt2", path=tmp_path / "vocab.bpe")
    assert enc.encode("hello world") == [31373, 995]


def test_tiktoken_cache_dir_and_hash_check(tmp_path, monkeypatch) -> None:
    import hashlib
    import shutil

    import bpekit
    from bpekit import encodings

    src = data_path("encodings", "r50k_base.tiktoken")
    spec = encodings.ENCODINGS["r50k_base"].files[0]
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(src, cache / hashlib.sha1(spec.url.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.delenv("BPEKIT_ENCODINGS", raising=False)
    encodings._cache.clear()
    try:
        assert bpekit.get_encoding("r50k_base").encode("hello world") == [31373, 995]
        bad = tmp_path / "bad"
        bad.mkdir()
        (bad / "r50k_base.tiktoken").write_bytes(src.read_bytes()[:-10])
        with pytest.raises(ValueError, match="sha256"):
            bpekit.get_encoding("r50k_base", path=bad)
    finally:
        encodings._cache.clear()


SURROGATE_TEXTS = [
    "a\ud800b",
    "\udfff",
    "x\ud83d",
    "hello \ud83d",
    "\udc00\ud800",
    "\ud83d\ude00",  # a pair: tiktoken reads it as the emoji it encodes
    "x\udfff",
    "a" * 70_000 + "\ud800 b",  # past the core's first 65,536-code-point block
]


def test_lone_surrogates_like_tiktoken() -> None:
    tk = tiktoken_encoding("cl100k_base")
    ours = bpekit_encoding("cl100k_base")
    for text in SURROGATE_TEXTS:
        assert ours.encode(text) == tk.encode(text)
        assert ours.encode_ordinary(text) == tk.encode_ordinary(text)
        assert ours.encode_to_numpy(text).tolist() == tk.encode(text)


def test_surrogates_in_batches_and_streams_like_tiktoken() -> None:
    # encode_batch, encode_ordinary_batch, encode_to_numpy and encode_iterable give
    # ids where tiktoken does, never UnicodeEncodeError.
    tk = tiktoken_encoding("o200k_base")
    ours = bpekit_encoding("o200k_base")
    batch = ["plain text", *SURROGATE_TEXTS]
    expected = [tk.encode(t) for t in batch]
    assert ours.encode_batch(batch, num_threads=2) == expected
    assert ours.encode_ordinary_batch(batch) == [tk.encode_ordinary(t) for t in batch]
    for text in SURROGATE_TEXTS:
        for size in (1, 2, 3, 7):
            chunks = [text[i : i + size] for i in range(0, len(text), size)]
            assert list(ours.encode_iterable(chunks)) == tk.encode(text), (text[:20], size)
    # A pair split between two chunks is still one character of the joined text.
    assert list(ours.encode_iterable(["ab\ud83d", "\ude00cd"])) == tk.encode("ab\U0001f600cd")
    assert list(ours.encode_iterable(["ab\ud83d", "", "\ude00"])) == tk.encode("ab\U0001f600")
    assert list(ours.encode_iterable(["ab\ud83d"])) == tk.encode("ab\ufffd")


def test_disallowed_special_like_tiktoken() -> None:
    tk = tiktoken_encoding("cl100k_base")
    ours = bpekit_encoding("cl100k_base")
    text = "hello <|endoftext|> world"
    # Any string may be disallowed, not only special tokens.
    for disallowed in ({"hello"}, {"lo <|end"}, {"world", "<|endoftext|>"}):
        with pytest.raises(ValueError, match="disallowed special token") as tk_error:
            tk.encode(text, allowed_special="all", disallowed_special=disallowed)
        with pytest.raises(ValueError) as our_error:
            ours.encode(text, allowed_special="all", disallowed_special=disallowed)
        assert str(our_error.value) == str(tk_error.value)
        policy = {"allowed_special": "all", "disallowed_special": disallowed}
        with pytest.raises(ValueError, match="disallowed special token"):
            ours.encode_to_numpy(text, **policy)
        with pytest.raises(ValueError, match="disallowed special token"):
            ours.encode_batch(["ok", text], **policy)
        with pytest.raises(ValueError, match="disallowed special token"):
            list(ours.encode_iterable(list(text), **policy))  # split in single characters
    # The core's check of special tokens words its error as tiktoken does.
    with pytest.raises(ValueError) as tk_error:
        tk.encode(text)
    with pytest.raises(ValueError) as our_error:
        ours.encode(text)
    assert str(our_error.value) == str(tk_error.value)
    # Absent strings, and any empty value, disable nothing else.
    assert ours.encode(text, allowed_special="all", disallowed_special={"absent"}) == tk.encode(
        text, allowed_special="all", disallowed_special={"absent"}
    )
    for empty in ("", (), set(), frozenset(), []):
        assert ours.encode(text, disallowed_special=empty) == tk.encode(text, disallowed_special=empty)


@pytest.mark.parametrize("name", ENCODINGS)
def test_single_tokens_and_offsets_like_tiktoken(name: str) -> None:
    tk = tiktoken_encoding(name)
    ours = bpekit_encoding(name)
    # Ordinary tokens by bytes or text; special tokens by text or by their UTF-8 bytes.
    for token in ["hello", b"hello", " the", b"\xe6", "<|endoftext|>", b"<|endoftext|>"]:
        assert ours.encode_single_token(token) == tk.encode_single_token(token), token
    for not_one in ["hello world", b"\xff<|endoftext|>", "<|endoftext|>x"]:
        with pytest.raises(KeyError):
            tk.encode_single_token(not_one)
        with pytest.raises(KeyError):
            ours.encode_single_token(not_one)
    # Offsets, tokens that start inside a character included (CJK, emoji, accents).
    for text in ["héllo 🙃", "日本語のテキスト 🙃🙃 x", "naïve café — ok", "a", ""]:
        ids = tk.encode(text)
        assert ours.decode_with_offsets(ids) == tk.decode_with_offsets(ids), text
    half = [tk.encode_single_token(b"\xc3")]  # the first byte of "é" alone: invalid UTF-8
    with pytest.raises(UnicodeDecodeError):
        tk.decode_with_offsets(half)
    with pytest.raises(UnicodeDecodeError):
        ours.decode_with_offsets(half)
