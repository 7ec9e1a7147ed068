"""``bpekit.patch_transformers`` on SentencePiece-style files: transformers' own Llama
and Gemma tokenizer classes (and the generic fast class for the variants), made from
``_sp_models``' files, give every field they give without the patch, offsets
(``return_offsets_mapping``) included, made by bpekit's core with no warning and no
fall-back to ``tokenizers``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from _shared_data import DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit

transformers = pytest.importorskip("transformers")

#: Name -> (the tokenizer class, its special tokens).
_LLAMA = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "</s>"}
CLASSES = {
    "llama": ("LlamaTokenizerFast", _LLAMA),
    "llama_legacy": ("LlamaTokenizerFast", _LLAMA),
    "gemma": ("GemmaTokenizerFast", {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>"}),
    "metaspace_split": ("PreTrainedTokenizerFast", _LLAMA),
    "added": ("PreTrainedTokenizerFast", _LLAMA),
    "unk": ("PreTrainedTokenizerFast", _LLAMA),
}

CALLS: list[dict[str, Any]] = [
    {"return_offsets_mapping": True},
    {"return_offsets_mapping": True, "padding": True, "return_special_tokens_mask": True},
    {
        "return_offsets_mapping": True,
        "add_special_tokens": False,
        "padding": "longest",
        "padding_side": "left",
    },
    {
        "return_offsets_mapping": True,
        "truncation": True,
        "max_length": 6,
        "stride": 2,
        "return_overflowing_tokens": True,
        "padding": "max_length",
    },
]


@pytest.fixture(scope="module")
def pairs(sp_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Any]]:
    """For each file: (transformers' tokenizer without the patch, with it)."""
    tmp = tmp_path_factory.mktemp("tf_sp")
    out = {}
    for name, (cls_name, specials) in CLASSES.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _save_folder(cls_name, sp_files[name], specials, tmp / name)
            ref = transformers.AutoTokenizer.from_pretrained(str(tmp / name))
            with bpekit.transformers_patched():
                ours = transformers.AutoTokenizer.from_pretrained(str(tmp / name))
        assert type(ours) is type(ref) and type(ours.backend_tokenizer).__name__ == "Backend", name
        out[name] = (ref, ours)
    return out


def _save_folder(cls_name: str, file: Path, specials: dict[str, str], folder: Path) -> None:
    """A folder ``AutoTokenizer`` loads as ``cls_name`` from ``file``. transformers 5's
    Llama and Gemma classes take a vocab and merges, not a file: there the folder is the
    generic class's, named as ``cls_name`` in its config (as the Hub's folders are)."""
    cls = getattr(transformers, cls_name)
    try:
        cls(tokenizer_file=str(file), **specials).save_pretrained(str(folder))
    except ValueError:
        generic = transformers.PreTrainedTokenizerFast(tokenizer_file=str(file), **specials)
        generic.save_pretrained(str(folder))
        config_path = folder / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["tokenizer_class"] = cls_name
        config_path.write_text(json.dumps(config), encoding="utf-8")


def _same(ref: Any, ours: Any, texts: list[str], where: str) -> None:
    """Every field of each call, offsets included, with no warning of bpekit's."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for kw in CALLS:
            want, got = ref(texts, **kw), ours(texts, **kw)
            assert dict(got) == dict(want), (where, kw, texts)
        for text in texts:
            kw = {"return_offsets_mapping": True}
            assert ours(text, **kw) == ref(text, **kw), (where, text)
    assert not [w for w in caught if "bpekit" in str(w.message)], where


HARD = [
    "Hello world",
    "",
    "  leading and trailing  ",
    "中文😀 é x\u0301 龘鬱",
    "<s>hi</s> there [mask] the end cat",
    "tab\tnew\nline\r\n",
]


def test_hard_texts_give_transformers_offsets(pairs: dict[str, tuple[Any, Any]]) -> None:
    for name, (ref, ours) in pairs.items():
        _same(ref, ours, HARD, name)


def test_corpus_lines_give_transformers_offsets(pairs: dict[str, tuple[Any, Any]]) -> None:
    lines: list[str] = []
    for where in ("corpora/tinystories_v2_train_head_2MiB.txt", "multilingual/fortunes_zh.txt"):
        p = DATA / where
        if p.is_file():
            text = p.read_bytes()[:20_000].decode("utf-8", errors="ignore")
            lines += [x for x in text.splitlines() if x.strip()][:30]
    if not lines:
        pytest.skip(f"the shared corpora are missing from {DATA}")
    for name, (ref, ours) in pairs.items():
        _same(ref, ours, lines, name)


_PIECES = st.one_of(
    st.text(st.sampled_from(list("ab zé\n\t0123.,'日本👨\u200d\u0301ﬁ龘▁")), max_size=10),
    st.sampled_from(["<s>", "</s>", "[mask]", "the end", "    "]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(_PIECES, max_size=8).map("".join), min_size=1, max_size=3))
def test_hypothesis_texts_give_transformers_offsets(
    pairs: dict[str, tuple[Any, Any]], texts: list[str]
) -> None:
    for name, (ref, ours) in pairs.items():
        _same(ref, ours, texts, name)
