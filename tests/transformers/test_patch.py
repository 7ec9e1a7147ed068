"""``bpekit.patch_transformers``: transformers' own tokenizer, on bpekit, returning every
field transformers returns without the patch.

Each tokenizer is a folder ``AutoTokenizer`` loads, made as a model's is
(``PreTrainedTokenizerFast(tokenizer_file=...)`` with its special tokens, saved): OLMo 2
(dolma2) as shipped and with a Llama-3-style BOS template whose type ids are not 0,
GPT-NeoX-20B, GPT-2 as the Hub ships it, and a tokenizer bpekit trained and saved with
``format="hf"``. For each, the same texts go through the tokenizer made without the
patch and the one made with it, under every option of a call (padding, truncation with
stride and overflow, left and right, every ``return_*``, numpy tensors, no special
tokens, ``split_special_tokens``), and every field is compared; so are ``decode``,
``batch_decode``, ``convert_ids_to_tokens``, ``tokens()``, ``word_ids()`` and
``apply_chat_template``. Texts: hypothesis (multi-byte characters, added tokens, runs
of spaces, empty strings) and lines of the shared corpora.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _shared_data import DATA
from conftest import data_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpekit

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

OLMO_SPECIALS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|pad|>"}
NEOX_SPECIALS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|padding|>"}
GPT2_SPECIALS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}
CHAT = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"


def _folder(tokenizer_json: Path, out: Path, specials: dict[str, str]) -> Path:
    """A folder ``AutoTokenizer`` loads: the file and the config transformers writes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json), **specials)
    tok.chat_template = CHAT
    tok.save_pretrained(str(out))
    return out


def _with_template(src: Path, out: Path) -> Path:
    """``src`` with a TemplateProcessing post-processor: a BOS before the text (type 1),
    and the text of type 2, as no shipped file has: type ids show."""
    data = json.loads(src.read_text(encoding="utf-8"))
    bos = next(t for t in data["added_tokens"] if t["content"] == "<|endoftext|>")
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}},
            {"Sequence": {"id": "A", "type_id": 2}},
        ],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {
            "<|endoftext|>": {"id": "<|endoftext|>", "ids": [bos["id"]], "tokens": ["<|endoftext|>"]}
        },
    }
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every tokenizer of the module, by name, as folders."""
    tmp = tmp_path_factory.mktemp("tf")
    dolma = data_path("hf", "allenai_dolma2.json")
    neox = data_path("hf", "allenai_eleuther-ai-gpt-neox-20b-pii-special.json")
    from tokenizers import decoders, models, pre_tokenizers, processors

    cs336 = data_path("cs336")
    gpt2 = tokenizers.Tokenizer(
        models.BPE.from_file(str(cs336 / "gpt2_vocab.json"), str(cs336 / "gpt2_merges.txt"))
    )
    gpt2.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    gpt2.decoder = decoders.ByteLevel()
    gpt2.post_processor = processors.ByteLevel(trim_offsets=False)
    gpt2.add_special_tokens(["<|endoftext|>"])
    gpt2.save(str(tmp / "gpt2.json"))
    text = (DATA / "corpora" / "tinystories_v2_train_head_2MiB.txt").read_text(encoding="utf-8")[:200_000]
    (tmp / "ts.txt").write_text(text, encoding="utf-8")
    vocab, merges = bpekit.train_bpe(str(tmp / "ts.txt"), 600, ["<|endoftext|>", "<|pad|>"])
    bpekit.Tokenizer(vocab, merges, ["<|endoftext|>", "<|pad|>"]).save(str(tmp / "trained-src"), format="hf")
    return {
        "olmo2": _folder(dolma, tmp / "olmo2", OLMO_SPECIALS),
        "olmo2-bos": _folder(_with_template(dolma, tmp / "bos.json"), tmp / "olmo2-bos", OLMO_SPECIALS),
        "neox": _folder(neox, tmp / "neox", NEOX_SPECIALS),
        "gpt2-hub": _folder(tmp / "gpt2.json", tmp / "gpt2-hub", GPT2_SPECIALS),
        "trained": _folder(
            tmp / "trained-src" / "tokenizer.json",
            tmp / "trained",
            {"eos_token": "<|endoftext|>", "pad_token": "<|pad|>"},
        ),
    }


@pytest.fixture(scope="module")
def pairs(folders: dict[str, Path]) -> dict[str, tuple[Any, Any]]:
    """For each tokenizer: (made without the patch, made with it)."""
    out = {}
    for name, path in folders.items():
        ref = transformers.AutoTokenizer.from_pretrained(str(path))
        with bpekit.transformers_patched():
            ours = transformers.AutoTokenizer.from_pretrained(str(path))
        assert type(ours) is type(ref)
        assert type(ours.backend_tokenizer).__name__ == "Backend", name
        assert type(ref.backend_tokenizer) is tokenizers.Tokenizer
        out[name] = (ref, ours)
    return out


# Every option of a call; each is applied to both tokenizers.
CALLS: list[dict[str, Any]] = [
    {},
    {
        "return_token_type_ids": True,
        "return_attention_mask": True,
        "return_special_tokens_mask": True,
        "return_length": True,
    },
    {"add_special_tokens": False, "return_special_tokens_mask": True, "return_token_type_ids": True},
    {"padding": True, "pad_to_multiple_of": 8, "return_special_tokens_mask": True},
    {"padding": "longest", "padding_side": "left", "return_token_type_ids": True},
    {
        "truncation": True,
        "max_length": 7,
        "stride": 2,
        "return_overflowing_tokens": True,
        "padding": "max_length",
        "return_special_tokens_mask": True,
        "return_token_type_ids": True,
        "return_length": True,
    },
    {"truncation": True, "max_length": 5, "return_overflowing_tokens": True, "padding": True},
    {"truncation": True, "max_length": 1, "stride": 0, "return_overflowing_tokens": True},
    {"split_special_tokens": True, "return_special_tokens_mask": True},
]


def _same(ref: Any, ours: Any, texts: list[str], where: str) -> None:
    """Every field of every call, and the batch's tokens and word ids."""
    for kw in CALLS:
        for side in ("right", "left"):
            ref.truncation_side = ours.truncation_side = side
            want, got = ref(texts, **kw), ours(texts, **kw)
            assert dict(got) == dict(want), (where, kw, side, texts)
            assert [e.tokens for e in got.encodings] == [e.tokens for e in want.encodings], (where, kw)
            if not kw.get("truncation"):
                break
    ref.truncation_side = ours.truncation_side = "right"
    for i in range(len(texts)):
        assert ours(texts[i]).word_ids() == ref(texts[i]).word_ids()
        assert ours(texts[i]) == ref(texts[i]), (where, texts[i])


def _decodes(ref: Any, ours: Any, texts: list[str], where: str) -> None:
    ids = ref(texts)["input_ids"] + [[0, 1, 2, 3, ref.vocab_size - 1]]
    for skip in (False, True):
        for clean in (False, True):
            kw = {"skip_special_tokens": skip, "clean_up_tokenization_spaces": clean}
            assert ours.batch_decode(ids, **kw) == ref.batch_decode(ids, **kw), (where, kw)
    assert [ours.convert_ids_to_tokens(x) for x in ids] == [ref.convert_ids_to_tokens(x) for x in ids]


_ALPHABET = st.sampled_from(list("ab zé\n\t0123.,'-日本👨\u200d\u0301ﬁÅǅ"))
_PIECES = st.one_of(
    st.text(_ALPHABET, max_size=10),
    st.sampled_from(
        ["<|endoftext|>", "<|pad|>", "<|padding|>", "<|im_start|>", "|||EMAIL_ADDRESS|||", "    "]
    ),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6),
)
_TEXTS = st.lists(st.lists(_PIECES, max_size=8).map("".join), min_size=1, max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=_TEXTS)
def test_hypothesis_texts_give_every_field_of_transformers(
    pairs: dict[str, tuple[Any, Any]], texts: list[str]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the offsets' warning
        for name, (ref, ours) in pairs.items():
            _same(ref, ours, texts, name)
            _decodes(ref, ours, texts, name)


def _corpus_lines() -> list[str]:
    lines: list[str] = []
    for name in ("botchan_en.txt", "kjv_bible.txt", "taylorswift_wikipedia_en.txt", "python311_docs_rst.txt"):
        text = data_path("corpora", name).read_text(encoding="utf-8")[:30_000]
        lines += [line for line in text.splitlines() if line.strip()][:40]
    multilingual = sorted(p for p in (DATA / "multilingual").rglob("*") if p.is_file())[:6]
    for p in multilingual:
        lines += p.read_bytes()[:3000].decode("utf-8", errors="ignore").splitlines()[:10]
    return lines


def test_corpus_lines_give_every_field_of_transformers(pairs: dict[str, tuple[Any, Any]]) -> None:
    lines = _corpus_lines()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (ref, ours) in pairs.items():
            for start in range(0, len(lines), 40):
                chunk = lines[start : start + 40]
                for kw in CALLS[:2] + CALLS[3:6]:
                    assert dict(ours(chunk, **kw)) == dict(ref(chunk, **kw)), (name, kw, start)
            _decodes(ref, ours, lines[:40], name)
            whole = "\n".join(lines[:60])
            assert ours.encode(whole) == ref.encode(whole)
            assert ours.tokenize(whole) == ref.tokenize(whole)


def test_numpy_tensors_and_single_texts(pairs: dict[str, tuple[Any, Any]]) -> None:
    texts = ["Hello world<|endoftext|>", "", "é日本 x  y"]
    for name, (ref, ours) in pairs.items():
        want = ref(texts, padding=True, return_tensors="np", return_special_tokens_mask=True)
        got = ours(texts, padding=True, return_tensors="np", return_special_tokens_mask=True)
        assert want.keys() == got.keys()
        for key in want:
            assert isinstance(got[key], np.ndarray)
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"{name} {key}")
        for text in texts:
            assert ours.encode(text) == ref.encode(text)
            assert ours.encode(text, add_special_tokens=False) == ref.encode(text, add_special_tokens=False)
            assert (
                ours(text, return_tensors="np")["input_ids"].tolist()
                == ref(text, return_tensors="np")["input_ids"].tolist()
            )


def test_apply_chat_template_tokenizes_as_transformers(pairs: dict[str, tuple[Any, Any]]) -> None:
    chat = [
        {"role": "user", "content": "Hi there é"},
        {"role": "assistant", "content": "Hello<|endoftext|>!"},
    ]
    for name, (ref, ours) in pairs.items():
        for kw in ({}, {"return_dict": True}, {"return_dict": True, "return_tensors": "np"}):
            want = ref.apply_chat_template(chat, tokenize=True, **kw)
            got = ours.apply_chat_template(chat, tokenize=True, **kw)
            if isinstance(want, dict) or hasattr(want, "keys"):
                assert {k: np.asarray(v).tolist() for k, v in got.items()} == {
                    k: np.asarray(v).tolist() for k, v in want.items()
                }, name
            else:
                assert got == want, name


def test_offsets_are_those_of_transformers(pairs: dict[str, tuple[Any, Any]]) -> None:
    texts = ["Hello  world<|endoftext|> é日本", "x\u0301 ﬁ"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (ref, ours) in pairs.items():
            for kw in (
                {},
                {"truncation": True, "max_length": 4, "stride": 1, "return_overflowing_tokens": True},
            ):
                kw = {"return_offsets_mapping": True, "padding": True, **kw}
                assert dict(ours(texts, **kw)) == dict(ref(texts, **kw)), name


def test_offsets_of_cut_windows_keep_tokenizers_first_token_space(tmp_path: Path) -> None:
    """ByteLevel's trim_offsets with add_prefix_space keeps the single leading space of
    each encoding's first token: a window cut from a longer text (left truncation, the
    overflowing ones) has its own first token, unlike the whole text's offsets."""
    data = json.loads(data_path("hf", "allenai_eleuther-ai-gpt-neox-20b-pii-special.json").read_text("utf-8"))
    data["post_processor"] = {
        "type": "ByteLevel",
        "add_prefix_space": True,
        "trim_offsets": True,
        "use_regex": True,
    }
    data["added_tokens"].append(
        {"id": 50277, "content": " xq", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": False}
    )  # fmt: skip
    (tmp_path / "t.json").write_text(json.dumps(data), encoding="utf-8")
    folder = _folder(tmp_path / "t.json", tmp_path / "prefix", NEOX_SPECIALS)
    ref = transformers.AutoTokenizer.from_pretrained(str(folder))
    with bpekit.transformers_patched():
        ours = transformers.AutoTokenizer.from_pretrained(str(folder))
    texts = ["one two  three", " lead  two", "a \n b  ", "x xq xq y", "  \t z", "é 日本 x"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for side in ("left", "right"):
            ref.truncation_side = ours.truncation_side = side
            for max_length in (1, 2, 3):
                for kw in (
                    {"truncation": True, "max_length": max_length},
                    {
                        "truncation": True,
                        "max_length": max_length,
                        "stride": 0,
                        "return_overflowing_tokens": True,
                    },
                    {
                        "truncation": True,
                        "max_length": max_length,
                        "padding": "max_length",
                        "padding_side": "left",
                    },
                ):
                    kw = {"return_offsets_mapping": True, **kw}
                    assert dict(ours(texts, **kw)) == dict(ref(texts, **kw)), (side, kw)


def test_added_tokens_and_changes_after_loading_are_seen(folders: dict[str, Path]) -> None:
    """Tokens added after the first call, and a post-processor set later: bpekit's
    tokenizer is made again from the backend's state."""
    ref = transformers.AutoTokenizer.from_pretrained(str(folders["olmo2"]))
    with bpekit.transformers_patched():
        ours = transformers.AutoTokenizer.from_pretrained(str(folders["olmo2"]))
    text = "say hello world and <new_tok> twice<new_tok>"
    assert ours(text) == ref(text)
    for tok in (ref, ours):
        tok.add_tokens(["<new_tok>", "hello world"])
        tok.add_special_tokens({"additional_special_tokens": ["<sp>"]})
    assert ours(text + "<sp>") == ref(text + "<sp>")
    assert ours.decode(ref(text + "<sp>")["input_ids"], skip_special_tokens=True) == ref.decode(
        ref(text + "<sp>")["input_ids"], skip_special_tokens=True
    )
    from tokenizers import processors

    for tok in (ref, ours):
        tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
            single="<|endoftext|> $A <|pad|>", special_tokens=[("<|endoftext|>", 100257), ("<|pad|>", 100277)]
        )
    assert ours(text, return_special_tokens_mask=True) == ref(text, return_special_tokens_mask=True)


def test_added_tokens_read_as_the_text_they_matched(folders: dict[str, Path]) -> None:
    """An added token's string is what it matched: with the spaces lstrip and rstrip
    took, or the normalized text; not its vocabulary entry."""
    from tokenizers import AddedToken

    ref = transformers.AutoTokenizer.from_pretrained(str(folders["olmo2"]))
    with bpekit.transformers_patched():
        ours = transformers.AutoTokenizer.from_pretrained(str(folders["olmo2"]))
    for tok in (ref, ours):
        tok.add_tokens(
            [AddedToken("[mask]", lstrip=True, rstrip=True), AddedToken("Hi There", normalized=True)]
        )
    text = "a [mask] b Hi There"
    assert ours.tokenize(text) == ref.tokenize(text)
    assert ours(text).tokens() == ref(text).tokens() and " [mask] " in ref(text).tokens()


def test_what_bpekit_lacks_runs_on_tokenizers_with_one_warning(
    pairs: dict[str, tuple[Any, Any]], tmp_path: Path
) -> None:
    from bpekit.hf_transformers import backend

    backend._WARNED.clear()
    ref, ours = pairs["olmo2"]
    with pytest.warns(UserWarning, match=r"pairs of sequences \(text_pair\)") as caught:
        got = ours(["a b", "c"], ["d", "e é"], padding=True)
    assert dict(got) == dict(ref(["a b", "c"], ["d", "e é"], padding=True))
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours(["a b"], ["d"])  # warned once only
    with pytest.warns(UserWarning, match=r"is_split_into_words"):
        got = ours([["a", "b"], ["c"]], is_split_into_words=True)
    assert dict(got) == dict(ref([["a", "b"], ["c"]], is_split_into_words=True))
    # A tokenizer.json bpekit refuses: the warning names the JSON path.
    wp = tokenizers.Tokenizer(tokenizers.models.WordPiece({"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]"))
    wp.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    wp.save(str(tmp_path / "wp.json"))
    folder = _folder(tmp_path / "wp.json", tmp_path / "wp", {"unk_token": "[UNK]"})
    ref_wp = transformers.AutoTokenizer.from_pretrained(str(folder))
    with bpekit.transformers_patched():
        ours_wp = transformers.AutoTokenizer.from_pretrained(str(folder))
    with pytest.warns(
        UserWarning,
        match=r"tokenizer\.json: model\.type: model 'WordPiece' is not supported",
    ):
        assert ours_wp(["ab a", "b"]) == ref_wp(["ab a", "b"])


def test_unpatch_restores_transformers(folders: dict[str, Path]) -> None:
    path = str(folders["gpt2-hub"])
    bpekit.patch_transformers()
    bpekit.patch_transformers()  # twice: nothing more
    before = transformers.AutoTokenizer.from_pretrained(path)
    direct = transformers.PreTrainedTokenizerFast(tokenizer_file=str(Path(path) / "tokenizer.json"))
    bpekit.unpatch_transformers()
    after = transformers.AutoTokenizer.from_pretrained(path)
    assert type(before.backend_tokenizer).__name__ == "Backend"
    assert type(direct.backend_tokenizer).__name__ == "Backend"
    assert type(after.backend_tokenizer) is tokenizers.Tokenizer
    assert (
        "_tokenizer" not in vars(transformers.PreTrainedTokenizerFast)
        or vars(transformers.PreTrainedTokenizerFast)["_tokenizer"] is None
    )
    assert before("Hello world!") == after("Hello world!")  # made before: still works
    bpekit.unpatch_transformers()  # not patched: nothing
    with bpekit.transformers_patched():
        bpekit.patch_transformers()
    assert type(transformers.AutoTokenizer.from_pretrained(path).backend_tokenizer) is tokenizers.Tokenizer


def test_pickles_copies_and_saves(pairs: dict[str, tuple[Any, Any]], tmp_path: Path) -> None:
    import copy

    ref, ours = pairs["neox"]
    for again in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours)):
        assert type(again.backend_tokenizer).__name__ == "Backend"
        assert again(["Hello   world", "é"]) == ref(["Hello   world", "é"])
    # A BatchEncoding pickles (as from a DataLoader's worker), encodings included.
    want, got = ref(["a b", "é"], padding=True), pickle.loads(pickle.dumps(ours(["a b", "é"], padding=True)))
    assert dict(got) == dict(want)
    assert [e.ids for e in got.encodings] == [e.ids for e in want.encodings]
    assert [e.offsets for e in got.encodings] == [e.offsets for e in want.encodings]
    ours.save_pretrained(str(tmp_path / "saved"))
    assert json.loads((tmp_path / "saved" / "tokenizer.json").read_text())["model"]["type"] == "BPE"
    assert transformers.AutoTokenizer.from_pretrained(str(tmp_path / "saved"))("a b") == ref("a b")


def test_the_lists_of_ints_a_call_returns_are_not_tracked_by_the_collector(pairs) -> None:
    """Ids, masks and token types are lists of ints only, which can be in no cycle:
    the cyclic collector need not walk them (it walked every item of each list kept,
    ~35% of a call). Lists of anything else stay tracked."""
    import gc

    from bpekit._core import _untracked

    ref, ours = pairs["olmo2-bos"]  # a template around the ids: lists made in Python
    got = ours(["Hello world", "é"], return_special_tokens_mask=True, return_token_type_ids=True)
    assert dict(got) == dict(
        ref(["Hello world", "é"], return_special_tokens_mask=True, return_token_type_ids=True)
    )
    for field in ("input_ids", "attention_mask", "token_type_ids", "special_tokens_mask"):
        assert not any(gc.is_tracked(row) for row in got[field]), field
    padded = ours(["a", "a b c d"], padding=True)
    assert not any(gc.is_tracked(row) for field in padded.values() for row in field)
    mixed = [1, 2, "3"]
    assert _untracked(mixed) is mixed and gc.is_tracked(mixed)
    big = [1, 2**80, True]  # bool and big ints are not exact small ints: all are ints
    assert _untracked(big) is big and gc.is_tracked(big)
    ints = [1, 2**80]
    assert _untracked(ints) is ints and not gc.is_tracked(ints)

    class Held(list):  # type: ignore[type-arg]
        pass

    held = Held([1, 2])
    held.me = held  # a cycle through its __dict__: it must stay in the collector's sight
    assert _untracked(held) is held and gc.is_tracked(held)
    ints.append(ints)  # a cycle made by hand is freed once broken, as documented
    ints.pop()


def _in_a_fork(fn: Any, before: Any = None) -> Any:
    """``fn(data)`` in a child forked now, ``data`` what ``before()`` returns in this
    process once the child runs (pickled bytes made after the fork)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    down_r, down_w = ctx.Pipe(duplex=False)
    up_r, up_w = ctx.Pipe(duplex=False)
    child = ctx.Process(target=lambda: up_w.send(fn(down_r.recv())))
    child.start()
    down_w.send(before() if before is not None else None)
    got = up_r.recv()
    child.join()
    assert child.exitcode == 0
    return got


def test_a_forked_worker_takes_the_backend_it_inherited(folders: dict[str, Path]) -> None:
    """A worker forked after the tokenizer was pickled (``datasets.map(num_proc=N)``)
    takes the ``tokenizers.Tokenizer`` its inherited backend holds rather than parse the
    JSON again, and the inherited backend makes its own again if used there: the two
    share nothing, as copies. A second copy there is made from the JSON, as is one whose
    state changed since the fork; every copy encodes as transformers does. The pickle is
    the same bytes in every process (datasets names a map's cache by it)."""
    path = str(folders["olmo2"])
    ref = transformers.AutoTokenizer.from_pretrained(path)
    with bpekit.transformers_patched():
        ours = transformers.AutoTokenizer.from_pretrained(path)
    texts = ["Hello   world", "é zzqx <|endoftext|>"]
    data = pickle.dumps(ours)
    inner = ours.backend_tokenizer._hf

    def twice(_: Any) -> Any:
        a, b = pickle.loads(data), pickle.loads(data)
        taken = a.backend_tokenizer._hf is inner and b.backend_tokenizer._hf is not inner
        lent = isinstance(ours.backend_tokenizer.__dict__["_hf_now"], str)
        a_out, b_out = dict(a(texts)), dict(b(texts))
        a.add_tokens(["zzqx"])
        a.backend_tokenizer.enable_truncation(3)
        # The inherited tokenizer is untouched by the copy's changes.
        return taken, lent, a_out, b_out, dict(ours(texts)), dict(a(texts))

    taken, lent, a_out, b_out, inherited_out, changed_out = _in_a_fork(twice)
    assert taken and lent
    assert a_out == b_out == inherited_out == dict(ref(texts)) != changed_out

    def after_a_change() -> bytes:
        ours.add_tokens(["zzqx"])
        return pickle.dumps(ours)

    def once(changed: bytes) -> Any:
        c = pickle.loads(changed)
        return c.backend_tokenizer._hf is inner, dict(c(texts))

    c_inherited, c_out = _in_a_fork(once, after_a_change)
    ref.add_tokens(["zzqx"])
    assert not c_inherited
    assert c_out == dict(ref(texts)) != a_out
    code = (
        "import bpekit, pickle, sys, transformers; bpekit.patch_transformers(); "
        "t = transformers.AutoTokenizer.from_pretrained(sys.argv[1]); t('a b'); "
        "sys.stdout.buffer.write(pickle.dumps(t))"
    )
    there = subprocess.run([sys.executable, "-c", code, path], capture_output=True, check=True).stdout
    with bpekit.transformers_patched():
        fresh = transformers.AutoTokenizer.from_pretrained(path)
    fresh("a b")
    assert pickle.dumps(fresh) == there
    # The registry of pickled backends lets go of those freed.
    import gc

    from bpekit.hf_transformers import backend as backend_module

    token = fresh.backend_tokenizer._plan.token
    assert token in backend_module._LIVE
    del fresh
    gc.collect()
    assert token not in backend_module._LIVE


def test_datasets_map_on_two_processes(pairs: dict[str, tuple[Any, Any]]) -> None:
    pytest.importorskip("datasets.arrow_dataset")  # not tests/datasets, where datasets is missing
    import datasets

    ref, ours = pairs["olmo2"]
    texts = [f"document {i}: héllo wörld " * (i % 7) for i in range(40)]
    ds = datasets.Dataset.from_dict({"text": texts})
    want = ds.map(lambda b: ref(b["text"]), batched=True, batch_size=8, load_from_cache_file=False)
    got = ds.map(
        lambda b: ours(b["text"]), batched=True, batch_size=8, num_proc=2, load_from_cache_file=False
    )
    assert got["input_ids"] == want["input_ids"] and got["attention_mask"] == want["attention_mask"]


def test_import_bpekit_does_not_import_transformers() -> None:
    code = "import sys, bpekit; bpekit.patch_transformers; print('transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
