"""HF ``tokenizer.json`` import, checked against ``tokenizers`` itself.

The tokenizers: the three shipped in ``../shared/data/hf`` (OLMo 2's dolma2, two
GPT-NeoX), GPT-2 built with ``tokenizers`` from the shared GPT-2 files, bpekit's own
exports, and variants of a small tokenizer that exercise each supported component
(normalizers, split behaviors, digits, prefix space, added-token flags, a BOS
template, ``ignore_merges``). Each is compared on every file of ``../shared/data``
(whole up to 2 MB, the first MB of larger ones) or on a sample, and on hypothesis text.
"""

from __future__ import annotations

import copy
import json
import pickle
import warnings
from pathlib import Path
from typing import Any

import pytest
from _shared_data import DATA
from conftest import data_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit
from bpekit.formats.hf import to_hf_json

tokenizers = pytest.importorskip("tokenizers")

SHIPPED = [
    "allenai_dolma2.json",
    "allenai_eleuther-ai-gpt-neox-20b-pii-special.json",
    "allenai_gpt-neox-olmo-dolma-v1_5.json",
]


def _data_texts(limit_whole: int = 1 << 20, head: int = 512 << 10) -> list[tuple[str, str]]:
    """Every file of the shared data: whole up to ``limit_whole`` bytes, else its first
    ``head`` bytes (cut back to a character boundary)."""
    out = []
    for p in sorted(DATA.rglob("*")):
        if not p.is_file():
            continue
        size = p.stat().st_size
        with open(p, "rb") as f:
            raw = f.read(size if size <= limit_whole else head)
        out.append((str(p.relative_to(DATA)), raw.decode("utf-8", errors="ignore")))
    return out


TRICKY = [
    "",
    " ",
    "hello  world   x    y",
    "a\n\n  b\n  ",
    "<|endoftext|>Hi<|endoftext|>",
    " |||EMAIL_ADDRESS||| x|||PHONE_NUMBER|||y",
    "e\u0301 caf\u00e9 \u0301x Å Å",
    "x<|endoftext|>\u0301 <|padding|>  <|endoftext|>",
    "12345 6789 ٣٤٥ ²³",
    "Hello\r\n\r\n \t\u3000\u00a0end\n",
    "don't DON'T we'll I'M ’s",
    "👨\u200d👩\u200d👧 🇺🇸 ❤\ufe0f",
    "ﬁ ﬀ ㎏ Ⅻ ½ ｆｕｌｌ",
    "ΣΑΣ İstanbul ǅ",
]


def _hf(path_or_data: Path | dict[str, Any]) -> Any:
    if isinstance(path_or_data, Path):
        return tokenizers.Tokenizer.from_file(str(path_or_data))
    return tokenizers.Tokenizer.from_str(json.dumps(path_or_data))


def _ours(path_or_data: Path | dict[str, Any]) -> bpekit.Tokenizer:
    if isinstance(path_or_data, Path):
        return bpekit.Tokenizer.from_hf(path_or_data)
    from bpekit.formats.hf_load import read_hf_data

    return bpekit.Tokenizer._from_parts(read_hf_data(copy.deepcopy(path_or_data)))


def _check(hf: Any, ours: bpekit.Tokenizer, text: str, where: str = "") -> None:
    want = hf.encode(text, add_special_tokens=False).ids
    got = ours.encode(text)
    if got != want:
        k = next(
            (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want))
        )
        raise AssertionError(
            f"{where}: ids differ at {k}: tokenizers {want[max(0, k - 3) : k + 4]}, "
            f"bpekit {got[max(0, k - 3) : k + 4]} (text {text[:60]!r})"
        )
    assert ours.encode(text, add_special_tokens=True) == hf.encode(text, add_special_tokens=True).ids
    if _NEW_DECODE or not set(want) & _normalized_changed(ours):
        assert ours.decode(want) == hf.decode(want, skip_special_tokens=False), where


# tokenizers 0.23 decodes an added token marked ``normalized`` as its normalized text
# (huggingface/tokenizers#1995), as bpekit does; 0.22 (which transformers 4 pins) as its
# text in the file.
_NEW_DECODE = tuple(int(x) for x in tokenizers.__version__.split(".")[:2]) >= (0, 23)


def _normalized_changed(tok: bpekit.Tokenizer) -> set[int]:
    """Ids of the added tokens whose normalized text differs from their text."""
    from bpekit import _core
    from bpekit.formats.hf_load import _normalizers

    assert tok._hf is not None
    normalizers = _normalizers(tok._hf.data.get("normalizer"), "normalizer")
    added = tok._hf.data.get("added_tokens", [])
    norm = [t for t in added if t.get("normalized") and normalizers]
    return {t["id"] for t in norm if _core.hf_normalize(normalizers, t["content"]) != t["content"]}


# ---- the shipped tokenizers and GPT-2 ------------------------------------------------


@pytest.fixture(scope="module")
def gpt2_json(tmp_path_factory) -> Path:
    """GPT-2's tokenizer.json as ``tokenizers`` builds it from the shared GPT-2 files."""
    from tokenizers import decoders, models, pre_tokenizers

    vocab = data_path("cs336", "gpt2_vocab.json")
    merges = data_path("cs336", "gpt2_merges.txt")
    tok = tokenizers.Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    path = tmp_path_factory.mktemp("gpt2") / "tokenizer.json"
    tok.save(str(path))
    return path


def _shipped_and_gpt2(gpt2_json: Path) -> list[Path]:
    return [data_path("hf", name) for name in SHIPPED] + [gpt2_json]


def _share(texts: list[tuple[str, str]], k: int, of: int) -> list[tuple[str, str]]:
    """Every ``of``-th file from the ``k``-th, with every multilingual file and tricky text."""
    return [t for i, t in enumerate(texts) if i % of == k or t[0].startswith(("multilingual/", "tricky"))]


def test_every_shared_file_encodes_as_tokenizers_does(gpt2_json: Path) -> None:
    """Whole texts on both sides (tokenizers runs ~1 MB/s on one text, so the files go
    through its batch, in parallel). Every file (its first 512 KiB) goes through OLMo 2's
    pipeline (the llama3 pattern) or NeoX's (gpt2's, NFC, space runs), alternately, and
    every multilingual file through both (where NFC and the patterns' letter classes
    differ); GPT-2 (NeoX's without NFC and space runs) and the second NeoX file (other
    added-token ids) a fifth of them: 39 MB in all, where every file whole through both
    made this test ~100 s of CI's ~8 minutes."""
    texts = _data_texts() + [(f"tricky {i}", t) for i, t in enumerate(TRICKY)]
    assert len(texts) > 60
    shares = {SHIPPED[0]: _share(texts, 0, 2), SHIPPED[1]: _share(texts, 1, 2)}
    assert {w for s in shares.values() for w, _ in s} == {w for w, _ in texts}
    for path in _shipped_and_gpt2(gpt2_json):
        hf, ours = _hf(path), _ours(path)
        some = shares.get(path.name, texts[2::5])
        wants = hf.encode_batch([t for _, t in some], add_special_tokens=False)
        gots = ours.encode_batch([t for _, t in some])
        for (where, text), want, got in zip(some, wants, gots, strict=True):
            if got != want.ids:
                _check(hf, ours, text, f"{path.name} on {where}")
            assert ours.decode(got) == hf.decode(got, skip_special_tokens=False)


def test_shipped_patterns_run_on_scanners(gpt2_json: Path) -> None:
    """OLMo 2's Split regex is the llama3 pattern and NeoX's and GPT-2's ByteLevel regex
    is gpt2's: each gets its scanner, not the regex engine."""
    engines = {p.name: _ours(p)._core.cut_rule()[0] for p in _shipped_and_gpt2(gpt2_json)}
    assert engines == {
        "allenai_dolma2.json": "cl100k",
        "allenai_eleuther-ai-gpt-neox-20b-pii-special.json": "gpt2",
        "allenai_gpt-neox-olmo-dolma-v1_5.json": "gpt2",
        "tokenizer.json": "gpt2",
    }
    assert _ours(data_path("hf", SHIPPED[0])).pattern == bpekit.patterns.LLAMA3


def test_neox_space_runs_and_bytes_no_utf8_holds() -> None:
    """NeoX's normalized added tokens are runs of spaces, found after NFC; its vocab
    lacks the bytes no UTF-8 text holds, which get ids after all others."""
    path = data_path("hf", SHIPPED[1])
    hf, ours = _hf(path), _ours(path)
    text = "a  b\u0301   c" + " " * 30 + "d"
    assert ours.encode(text) == hf.encode(text).ids
    assert 50276 in ours.encode(text)  # "  "
    assert ours.n_vocab == 50280 + 13
    assert ours.encode("ÿ") == hf.encode("ÿ").ids


# ---- hypothesis ------------------------------------------------------------------

_ALPHABET = st.one_of(
    st.sampled_from(
        list(" \n\r\t\u00a0\u3000'sdmtlvre0123456789٣²½aAbBzZéÉßΣσİıǅﬁ中文字カナ한글ไทยअआ\u0301\u0308\u064b")
    ),
    st.characters(codec="utf-8", exclude_categories=("Cs", "Co", "Cn")),
)
_SPECIALS = ["<|endoftext|>", "<|padding|>", "|||EMAIL_ADDRESS|||", "<|im_start|>", "  ", "    "]


@st.composite
def _hf_texts(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(
            st.one_of(st.text(_ALPHABET, max_size=12), st.sampled_from(_SPECIALS), st.just(" ")),
            max_size=12,
        )
    )
    return "".join(parts)


@pytest.fixture(scope="module")
def all_pairs(gpt2_json: Path) -> list[tuple[str, Any, bpekit.Tokenizer]]:
    return [(p.name, _hf(p), _ours(p)) for p in _shipped_and_gpt2(gpt2_json)]


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_hf_texts())
def test_hypothesis_text_encodes_as_tokenizers_does(all_pairs, text: str) -> None:
    for name, hf, ours in all_pairs:
        _check(hf, ours, text, name)


# ---- variants of a small tokenizer, one component at a time -------------------------


@pytest.fixture(scope="module")
def base_json() -> dict[str, Any]:
    """A 600-token tokenizer trained on Shakespeare, exported by bpekit: the model the
    variants change the rest around. ``ignore_merges`` off (it is a merges tokenizer)."""
    vocab, merges = bpekit.train_bpe(data_path("corpora", "tinyshakespeare.txt"), 600, ["<|endoftext|>"])
    data = to_hf_json(bpekit.Tokenizer(vocab, merges, ["<|endoftext|>"]))
    data["pre_tokenizer"] = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": True,
    }
    return data


def _added(content: str, id: int, **flags: bool) -> dict[str, Any]:
    base = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False}
    return {"id": id, "content": content, **base, **flags}


def _split(pattern: str, behavior: str, invert: bool = False, literal: bool = False) -> dict[str, Any]:
    key = "String" if literal else "Regex"
    return {"type": "Split", "pattern": {key: pattern}, "behavior": behavior, "invert": invert}


_BYTELEVEL_NO_REGEX = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "trim_offsets": True,
    "use_regex": False,
}

VARIANTS: dict[str, dict[str, Any]] = {
    "lowercase": {"normalizer": {"type": "Lowercase"}},
    "nfkc": {"normalizer": {"type": "NFKC"}},
    "nfd": {"normalizer": {"type": "NFD"}},
    "nfkd+lowercase": {
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "Lowercase"}]}
    },
    "replace+prepend": {
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Replace", "pattern": {"String": "the"}, "content": "THE"},
                {"type": "Replace", "pattern": {"Regex": "[0-9]+"}, "content": "#"},
                {"type": "Prepend", "prepend": "^"},
            ],
        }
    },
    "prefix space": {
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        }
    },
    "digits": {
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [{"type": "Digits", "individual_digits": True}, _BYTELEVEL_NO_REGEX],
        }
    },
    "digits runs + gpt2": {
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Digits", "individual_digits": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            ],
        }
    },
    **{
        f"split {behavior}{' inverted' if invert else ''}": {
            "pre_tokenizer": {
                "type": "Sequence",
                "pretokenizers": [_split(r"\s+|[,.;!?]", behavior, invert), _BYTELEVEL_NO_REGEX],
            }
        }
        for behavior in ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
        for invert in [False, True]
    },
    "split string": {
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [_split(" ", "MergedWithNext", literal=True), _BYTELEVEL_NO_REGEX],
        }
    },
    "llama3 split": {
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [_split(bpekit.patterns.LLAMA3, "Isolated"), _BYTELEVEL_NO_REGEX],
        }
    },
    "ignore_merges": {"model": {"ignore_merges": True}},
    "bos template": {
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {
                "<|endoftext|>": {"id": "<|endoftext|>", "ids": [256], "tokens": ["<|endoftext|>"]}
            },
        }
    },
    "added flags": {
        "added_tokens": [
            _added("<|endoftext|>", 256, special=True),
            _added("<mask>", 600, special=True, lstrip=True),
            _added("</s>", 601, special=True, rstrip=True),
            _added("king", 602, single_word=True),
            _added("thou", 603, normalized=True),
            _added("Hark", 604, normalized=True, special=True),
            _added("<b> <c>", 605, lstrip=True, rstrip=True),
        ],
        "normalizer": {"type": "Lowercase"},
    },
}

VARIANT_TEXTS = [
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\n",
    "KING HENRY: the king's kingdom, thou THOU Thou hark HARK  <mask> x  <mask>y</s>  z",
    "a  <b> <c>   b<b> <c>king king, 123 4567 thou",
    "the THE The 42 ! ?? ..; \t\n",
    "  leading and trailing  ",
    "<|endoftext|>Hark!<|endoftext|>",
]


def _variant(base: dict[str, Any], name: str) -> dict[str, Any]:
    data = copy.deepcopy(base)
    for key, value in VARIANTS[name].items():
        if key == "model":
            data["model"].update(value)
        else:
            data[key] = value
    return data


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_component_encodes_as_tokenizers_does(base_json: dict[str, Any], name: str) -> None:
    data = _variant(base_json, name)
    hf, ours = _hf(data), _ours(data)
    shakespeare = data_path("corpora", "tinyshakespeare.txt").read_text()[:200_000]
    for text in [*VARIANT_TEXTS, *TRICKY, shakespeare]:
        _check(hf, ours, text, name)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.lists(st.sampled_from(VARIANT_TEXTS + TRICKY + ["<mask>", "</s>", "king", " ", "  "]), max_size=8)
)
def test_components_on_hypothesis_text(base_json: dict[str, Any], text: list[str]) -> None:
    joined = "".join(text)
    for name in VARIANTS:
        data = _variant(base_json, name)
        _check(_hf(data), _ours(data), joined, name)


def test_a_normalized_added_token_decodes_as_its_normalized_text(base_json: dict[str, Any]) -> None:
    data = _variant(base_json, "added flags")
    ours = _ours(data)
    assert ours.encode("HARK Hark") == [604, 32, 604]
    assert ours.decode([604]) == "hark"
    assert _normalized_changed(ours) == {604}
    if _NEW_DECODE:
        assert _hf(data).decode([604]) == "hark"


def test_bpekit_exports_load_back(tmp_path: Path) -> None:
    """bpekit's own exports (Split by the tokenizer's pattern, ByteLevel without regex)
    load to the same ids, on the named pattern's scanner."""
    text = data_path("corpora", "taylorswift_wikipedia_en.txt").read_text()
    for name in ["gpt2", "cl100k_base", "o200k_base"]:
        enc = bpekit.get_encoding(name)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(to_hf_json(enc)))
        ours, hf = bpekit.Tokenizer.from_hf(path), _hf(path)
        assert ours.encode(text) == enc.encode(text, allowed_special="all") == hf.encode(text).ids
        assert ours._core.cut_rule()[0] != r"(?s:.)"


# ---- the Tokenizer around it ---------------------------------------------------------


def test_files_datasets_and_pickles_keep_the_ids(tmp_path: Path) -> None:
    """The file encoder cuts a file into chunks: with NFC and space-run added tokens
    (NeoX) the ids are those of the whole text; a pickled tokenizer is the same."""
    import numpy as np

    tok = _ours(data_path("hf", SHIPPED[1]))
    text = (
        data_path("corpora", "python311_docs_rst.txt").read_text()[:3_000_000] + "e\u0301<|endoftext|>"
    ) * 2
    src = tmp_path / "in.txt"
    src.write_text(text)
    out = tmp_path / "ids.npy"
    bpekit.encode_file(src, out, tok, chunk_size=1 << 16)
    assert np.load(out).tolist() == tok.encode(text)
    again = pickle.loads(pickle.dumps(tok))
    assert again.encode(text[:100_000]) == tok.encode(text[:100_000])
    assert again._hf is not None and again._hf.special == tok._hf.special


@pytest.mark.parametrize(
    "name", ["added flags", "prefix space", "replace+prepend", "nfkd+lowercase", "digits"]
)
def test_files_keep_the_ids_whatever_the_front(base_json: dict[str, Any], tmp_path: Path, name: str) -> None:
    """A front that reads the text around an added token (lstrip, rstrip, single_word),
    adds a prefix space or normalizes across lines gets no cuts it would change: the
    file encoder's chunks give the whole text's ids."""
    import numpy as np

    tok = _ours(_variant(base_json, name))
    text = "".join(VARIANT_TEXTS * 40) + data_path("corpora", "tinyshakespeare.txt").read_text()[:300_000]
    src = tmp_path / "in.txt"
    src.write_text(text)
    bpekit.encode_file(src, tmp_path / "ids.npy", tok, chunk_size=1 << 12)
    assert np.load(tmp_path / "ids.npy").tolist() == tok.encode(text)
    pieces = (text[k : k + 999] for k in range(0, len(text), 999))
    assert list(tok.encode_iterable(pieces)) == tok.encode(text)


def test_load_tokenizer_and_cli_take_a_tokenizer_json(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = data_path("hf", SHIPPED[0])
    folder = tmp_path / "olmo2"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(path.read_bytes())
    text = "Hello OLMo<|endoftext|> 2"
    want = _hf(path).encode(text).ids
    assert bpekit.load_tokenizer(str(path)).encode(text) == want
    assert bpekit.load_tokenizer(folder).encode(text) == want
    src = tmp_path / "in.txt"
    src.write_text(text)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "bpekit.cli",
            "encode",
            str(src),
            "-t",
            str(folder),
            "-o",
            str(tmp_path / "ids.npy"),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    import numpy as np

    assert np.load(tmp_path / "ids.npy").tolist() == want


# ---- bad input -------------------------------------------------------------------


def _write(tmp_path: Path, data: Any) -> Path:
    p = tmp_path / "tokenizer.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


def _bad(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(base)
    for key, value in change.items():
        if key == "model":
            data["model"].update(value)
        else:
            data[key] = value
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": {"type": "WordPiece"}}, r"model\.type: model 'WordPiece' is not supported"),
        ({"model": {"type": "Unigram"}}, r"model\.type: model 'Unigram'"),
        ({"model": {"merges": [["a", "zzz"]]}}, r"model\.merges\[0\]: 'zzz' is not in the vocab"),
        ({"model": {"merges": ["a b c"]}}, r"model\.merges\[0\]: 'a b c' is not two tokens"),
        ({"model": {"dropout": 0.1}}, r"model\.dropout: 0\.1 is not supported"),
        ({"model": {"byte_fallback": True}}, r"model\.byte_fallback"),
        ({"model": {"continuing_subword_prefix": "##"}}, r"model\.continuing_subword_prefix"),
        ({"normalizer": {"type": "BertNormalizer"}}, r"normalizer\.type: normalizer 'BertNormalizer'"),
        (
            {"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "StripAccents"}]}},
            r"normalizer\.normalizers\[1\]\.type: normalizer 'StripAccents'",
        ),
        # Without a ByteLevel pre-tokenizer a file is read as SentencePiece-style BPE.
        ({"pre_tokenizer": {"type": "Metaspace"}}, r"pre_tokenizer\.replacement: expected a string"),
        ({"pre_tokenizer": None}, r"decoder\.type: 'ByteLevel' without a ByteLevel pre-tokenizer"),
        ({"pre_tokenizer": {"type": "Digits"}}, r"decoder\.type: 'ByteLevel' without a ByteLevel pre-tok"),
        ({"decoder": {"type": "WordPiece"}}, r"decoder\.type: decoder 'WordPiece'"),
        ({"post_processor": {"type": "RobertaProcessing"}}, r"post_processor\.type: post-processor"),
        ({"truncation": {"max_length": 512}}, r"truncation: not supported"),
        (
            {
                "pre_tokenizer": {
                    "type": "Sequence",
                    "pretokenizers": [_split(r"\p{N}{1,3}+", "Isolated"), _BYTELEVEL_NO_REGEX],
                }
            },
            r"pre_tokenizer\.pretokenizers\[0\]\.pattern\.Regex: an interval followed by",
        ),
        ({"pre_tokenizer": _split("(", "Isolated")}, r"decoder\.type: 'ByteLevel' without a ByteLevel"),
        (
            {
                "pre_tokenizer": {
                    "type": "Sequence",
                    "pretokenizers": [_split("(", "Isolated"), _BYTELEVEL_NO_REGEX],
                }
            },
            r"invalid pre-tokenizer pattern",
        ),
        (
            {
                "pre_tokenizer": {
                    "type": "Sequence",
                    "pretokenizers": [_split("x", "Sideways"), _BYTELEVEL_NO_REGEX],
                }
            },
            r"pre_tokenizer\.pretokenizers\[0\]\.behavior: unknown behavior 'Sideways'",
        ),
        (
            {"added_tokens": [_added("<a>", 600), _added("<b>", 600)]},
            r"added_tokens\[1\]\.id: id 600 is also the id of added_tokens\[0\]",
        ),
        (
            {"added_tokens": [_added("<a>", 600), _added("<a>", 601)]},
            r"added_tokens\[1\]\.content: '<a>' is also added_tokens\[0\]",
        ),
        (
            {"added_tokens": [{"id": "x", "content": "<a>"}]},
            r"added_tokens\[0\]\.id: \"x\" is not an integer",
        ),
    ],
)
def test_bad_tokenizer_json_is_a_one_line_error_with_its_path(
    tmp_path: Path, base_json: dict[str, Any], change: dict[str, Any], message: str
) -> None:
    path = _write(tmp_path, _bad(base_json, change))
    with pytest.raises(ValueError, match=message) as info:
        bpekit.Tokenizer.from_hf(path)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


def test_added_token_ids_are_those_tokenizers_gives(tmp_path: Path, base_json: dict[str, Any]) -> None:
    """tokenizers reads no added token's id from the file: the model's id of its text,
    else the next from the vocab's size on; it warns where the file differs."""
    data = _bad(
        base_json, {"added_tokens": [_added("<a>", 97), _added("<|endoftext|>", 3), _added("<b>", 600)]}
    )
    path = _write(tmp_path, data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = bpekit.Tokenizer.from_hf(path)
    assert [str(w.message) for w in caught] == [
        "added_tokens[0]: the token '<a>' has id 97 in the file; tokenizers gives it 600, and so does bpekit",
        "added_tokens[1]: the token '<|endoftext|>' has id 3 in the file; tokenizers gives it 256, "
        "and so does bpekit",
        "added_tokens[2]: the token '<b>' has id 600 in the file; tokenizers gives it 601, "
        "and so does bpekit",
    ]
    hf = _hf(path)
    assert (
        ours.encode("<b>x<a><|endoftext|>") == hf.encode("<b>x<a><|endoftext|>").ids == [601, 120, 600, 256]
    )


def test_a_file_that_is_not_json_names_itself(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"model": ')
    with pytest.raises(ValueError, match=r"tokenizer\.json: not a valid JSON document \(.*line 1"):
        bpekit.Tokenizer.from_hf(path)
    with pytest.raises(FileNotFoundError, match=r"no tokenizer\.json there"):
        bpekit.Tokenizer.from_hf(tmp_path / "missing")
    path.write_bytes(b'\xff\xfe{"model": 1}')
    with pytest.raises(
        ValueError, match=r"tokenizer\.json: not UTF-8 at byte 0; a tokenizer\.json is UTF-8 JSON"
    ):
        bpekit.Tokenizer.from_hf(path)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"\$: the document is a JSON list"):
        bpekit.Tokenizer.from_hf(path)
