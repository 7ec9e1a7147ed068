"""SentencePiece-style BPE ``tokenizer.json`` files built here, as models ship them,
with no hub: small BPE models trained by ``sentencepiece`` (``byte_fallback``) on a
slice of the shared corpora, converted by transformers' own converters (Llama's, old
and new, and Gemma's), plus variants edited from them for the components the
converters do not make (``byte_fallback`` off, ``fuse_unk`` off, ``Metaspace`` with
``split``, added tokens with flags, a BOS template). Training takes ~0.1 s a model.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from _shared_data import data_path

#: Name -> how it is made; ``build`` writes ``NAME.json`` for each.
NAMES = (
    "llama_legacy",  # Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer, a <s> template
    "llama",  # Metaspace(prepend_scheme "first", split false)
    "gemma",  # Replace(" ", "▁"), Split(" ") (which finds no space), digits apart
    "spans_words",  # tokens across words ("▁of▁the") and runs of ▁: few cuts are safe
    "unk",  # byte_fallback false: unknown characters are one fused <unk>
    "unk_unfused",  # ... one <unk> each
    "metaspace_split",  # Metaspace(prepend_scheme "always", split true), its decoder
    "added",  # added tokens: normalized, lstrip/rstrip, single_word, special
)


def training_text(folder: Path) -> Path:
    """English and multilingual text from the shared corpora, ~700 KB."""
    parts = [
        ("corpora", "tinystories_v2_train_head_2MiB.txt", 400_000),
        ("corpora", "python311_docs_rst.txt", 100_000),
        ("multilingual", "fortunes_zh.txt", 60_000),
        ("multilingual", "wagahaiwa_nekodearu_ja.txt", 60_000),
        ("multilingual", "fortunes_ru.txt", 60_000),
        ("multilingual", "fortunes_de.txt", 40_000),
    ]
    out = folder / "train.txt"
    with open(out, "w", encoding="utf-8") as f:
        for *where, size in parts:
            raw = data_path(*where).read_bytes()[:size]
            f.write(raw.decode("utf-8", errors="ignore"))
            f.write("\n")
    return out


def _train(text: Path, prefix: Path, **options: Any) -> Path:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(prefix),
        model_type="bpe",
        num_threads=1,
        minloglevel=2,
        **options,
    )
    return prefix.with_suffix(".model")


def _save(doc: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def build(folder: Path) -> dict[str, Path]:
    """Every tokenizer of ``NAMES`` in ``folder``: name -> its ``tokenizer.json``."""
    import warnings

    from tokenizers import AddedToken, Tokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import GemmaTokenizer, LlamaTokenizer
    from transformers.convert_slow_tokenizer import GemmaConverter, LlamaConverter

    text = training_text(folder)
    base = _train(text, folder / "base", vocab_size=2000, byte_fallback=True, character_coverage=0.9995)
    gemma = _train(
        text,
        folder / "gemma",
        vocab_size=2000,
        byte_fallback=True,
        pad_id=0,
        eos_id=1,
        bos_id=2,
        unk_id=3,
        split_digits=True,
        allow_whitespace_only_pieces=True,
        remove_extra_whitespaces=False,
    )
    spans = _train(
        text,
        folder / "spans",
        vocab_size=3000,
        byte_fallback=True,
        split_by_whitespace=False,
        allow_whitespace_only_pieces=True,
        remove_extra_whitespaces=False,
    )
    rare = _train(text, folder / "rare", vocab_size=1500, byte_fallback=False, character_coverage=0.98)
    out = {name: folder / f"{name}.json" for name in NAMES}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the slow tokenizers' notes on legacy behaviour
        legacy = LlamaConverter(LlamaTokenizer(str(base), legacy=True)).converted()
        legacy.post_processor = TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
        legacy.save(str(out["llama_legacy"]))
        LlamaConverter(LlamaTokenizer(str(base), legacy=False)).converted().save(str(out["llama"]))
        GemmaConverter(GemmaTokenizer(str(gemma))).converted().save(str(out["gemma"]))
        LlamaConverter(LlamaTokenizer(str(spans), legacy=False)).converted().save(str(out["spans_words"]))
        LlamaConverter(LlamaTokenizer(str(rare), legacy=False)).converted().save(str(out["unk"]))
    doc = json.loads(out["unk"].read_text(encoding="utf-8"))
    doc["model"]["byte_fallback"] = False
    _save(doc, out["unk"])
    doc["model"]["fuse_unk"] = False
    _save(doc, out["unk_unfused"])
    doc = json.loads(out["llama"].read_text(encoding="utf-8"))
    split = copy.deepcopy(doc)
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    split["pre_tokenizer"], split["decoder"] = metaspace, metaspace
    _save(split, out["metaspace_split"])
    added = Tokenizer.from_file(str(out["llama"]))
    added.add_tokens(
        [
            AddedToken("[mask]", lstrip=True, rstrip=True),
            AddedToken("the end", normalized=True),
            AddedToken("cat", single_word=True),
        ]
    )
    added.add_special_tokens([AddedToken("<|im_start|>", special=True)])
    added.save(str(out["added"]))
    return out


# Texts that every SentencePiece-style test runs: spaces at either end and in runs,
# marks already in the text, added tokens, characters missing from the vocab (byte
# fallback, unknown tokens), scripts, emoji, planes past the BMP.
HARD = [
    "",
    " ",
    "   ",
    "a",
    " a",
    "  leading and trailing  ",
    "Hello world",
    "tab\tnew\nline\r\nend\n\n",
    "中文测试，日本語のテキスト。한국어",
    "emoji 😀👍🏽🇫🇷 and ZWJ 👩‍👩‍👧",
    "\x00\x01\x1f\x7f control",
    "ŉ ǅ ß ﬁ Å e\u0301 \u0301x İstanbul",
    "▁already ▁▁marked",
    "<s>hi</s> there <s>",
    "</s>",
    "x" * 500,
    "1234567 89 0.5",
    "the end of the cat, [mask] concat cat <|im_start|>x",
    "  [mask]  the end  <|im_start|>  ",
    "\U0010fffd\U0001d11e rare planes 龘鬱é龘 x龘",
    "Once upon a time, there was a little girl named Lily.",
]


if __name__ == "__main__":
    import sys

    where = Path(sys.argv[1])
    where.mkdir(parents=True, exist_ok=True)
    for name, path in build(where).items():
        print(name, path)
