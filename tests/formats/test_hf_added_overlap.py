"""Added tokens matched inside the whitespace an ``rstrip`` token before them took, and
offsets where a pre-tokenizer removes text: each against HF ``tokenizers``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import bpekit
from bpekit.formats.gpt2 import bytes_to_unicode

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers  # noqa: E402


def _tok(tmp_path: Path, added: list[Any], pre: Any = None) -> tuple[Any, bpekit.Tokenizer]:
    chars = bytes_to_unicode()
    hf = tokenizers.Tokenizer(models.BPE(vocab={chars[b]: b for b in range(256)}, merges=[]))
    hf.pre_tokenizer = pre or pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_tokens(added)
    path = tmp_path / "t.json"
    hf.save(str(path))
    return hf, bpekit.Tokenizer.from_hf(path)


@pytest.mark.parametrize(
    ("added", "text"),
    [
        ([AddedToken("\n", lstrip=True, rstrip=True)], "\n\n"),
        ([AddedToken("ab", rstrip=True), AddedToken("\n", lstrip=True)], "ab\n"),
        ([AddedToken("<m>", rstrip=True), AddedToken("  ", lstrip=True)], "<m>  x"),
        ([AddedToken("ab", rstrip=True), AddedToken("  ")], "ab  x"),  # taken twice, as tokenizers does
        ([AddedToken("\n", lstrip=True, rstrip=True)], "a \n\n\n b"),
    ],
)
def test_a_match_inside_the_whitespace_taken_is_as_tokenizers_has_it(
    tmp_path: Path, added: list[Any], text: str
) -> None:
    hf, ours = _tok(tmp_path, added)
    want = hf.encode(text, add_special_tokens=False)
    assert ours.encode(text) == want.ids
    assert ours.encode_with_offsets(text) == (want.ids, want.offsets)
    assert ours.encode_batch([text, text]) == [want.ids, want.ids]


def test_a_match_ending_inside_the_whitespace_taken_is_an_error(tmp_path: Path) -> None:
    """tokenizers panics there ("bad split"); bpekit says why, in one line."""
    hf, ours = _tok(tmp_path, [AddedToken("Hark", rstrip=True), AddedToken("  ", lstrip=True)])
    for call in (ours.encode, ours.encode_with_offsets):
        with pytest.raises(ValueError, match=r"added token \"  \" matched inside the whitespace") as e:
            call("Hark  \n")
        assert "\n" not in str(e.value)
    for text in ("Hark  x", "Hark x  \n"):  # no match ends inside: as tokenizers
        assert ours.encode_with_offsets(text) == (hf.encode(text).ids, hf.encode(text).offsets)


def test_offsets_where_a_split_removes_text_are_refused_in_one_line(tmp_path: Path) -> None:
    split = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(" ", "removed"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf, ours = _tok(tmp_path, [], split)
    assert ours.encode("a b") == hf.encode("a b").ids
    with pytest.raises(ValueError, match=r"removes text .* are not supported"):
        ours.encode_with_offsets("a b")
    with pytest.raises(ValueError, match="removes text"):
        ours.encode_with_offsets("ab")  # refused whatever the text, not only where text goes
    regex = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\s+"), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf, ours = _tok(tmp_path, [], regex)
    assert ours.encode_with_offsets("a  b")[1] == hf.encode("a  b").offsets
