"""``bpekit.torch``: minbpe's BPE on tensors, exact against ``bpekit.minbpe`` and the
native encoder, on CPU tensors (and CUDA where there is one). Skipped where torch is
not installed: CI does not install a multi-GB torch wheel (run it with torch on the path,
as ``benchmarks/torch_compare.py`` says)."""

from __future__ import annotations

import pytest
from conftest import data_path
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="torch is not installed (the optional extra bpekit[torch])")

from bpekit import _core, minbpe  # noqa: E402
from bpekit.torch import BasicTokenizer, encode_pieces, get_stats, merge  # noqa: E402

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def _text() -> str:
    return data_path("corpora", "taylorswift_wikipedia_en.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("device", DEVICES)
def test_merge_handles_overlapping_runs(device: str) -> None:
    t = torch.tensor([1, 1, 1, 1, 1, 2, 3], device=device)
    assert merge(t, (1, 1), 4).tolist() == [4, 4, 1, 2, 3]
    assert merge(torch.tensor([1, 2, 3, 1, 2], device=device), (1, 2), 4).tolist() == [4, 3, 4]
    assert merge(torch.tensor([7], device=device), (7, 7), 8).tolist() == [7]


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, 3), max_size=40), a=st.integers(0, 3), b=st.integers(0, 3))
def test_merge_and_stats_equal_minbpe(ids: list[int], a: int, b: int) -> None:
    t = torch.tensor(ids, dtype=torch.long)
    assert merge(t, (a, b), 9).tolist() == minbpe.merge(ids, (a, b), 9)
    pairs, counts, first = get_stats(t)
    order = torch.argsort(first).tolist()
    got = {(int(pairs[k, 0]), int(pairs[k, 1])): int(counts[k]) for k in order}
    want = minbpe.get_stats(ids)
    assert got == want and list(got) == list(want)


@pytest.mark.parametrize("device", DEVICES)
def test_basic_tokenizer_equals_minbpe(device: str) -> None:
    text = _text()[:20_000]
    ours = BasicTokenizer(device)
    ours.train(text, 256 + 50)
    want = minbpe.BasicTokenizer()
    want.train(text, 256 + 50)
    assert ours.merges == want.merges
    sample = _text()[20_000:30_000]
    assert ours.encode(sample) == want.encode(sample)
    assert ours.decode(ours.encode(sample)) == sample
    assert ours.encode("") == [] and ours.decode([]) == ""


@settings(max_examples=40, deadline=None)
@given(text=st.text(st.sampled_from(list("ab c\né🙂")), min_size=2, max_size=60), n=st.integers(1, 12))
def test_basic_tokenizer_on_tie_heavy_text(text: str, n: int) -> None:
    want = minbpe.BasicTokenizer()
    try:
        want.train(text, 256 + n)
    except ValueError:
        with pytest.raises(ValueError, match="no pair is left"):
            BasicTokenizer().train(text, 256 + n)
        return
    ours = BasicTokenizer()
    ours.train(text, 256 + n)
    assert ours.merges == want.merges
    assert ours.encode(text) == want.encode(text)


@pytest.mark.parametrize("device", DEVICES)
def test_batched_pieces_equal_the_native_encoder(device: str) -> None:
    tok = minbpe.RegexTokenizer()
    tok.train(_text()[:100_000], 256 + 300)
    text = _text()[100_000:160_000] + " aaaa  \n\n x🙂🙂 "
    pieces = [p.encode("utf-8") for p in _core.pretokenize(text, "llama3")]
    got = encode_pieces(pieces, tok.merges, device=device)
    assert [i for ids in got for i in ids] == tok.encode_ordinary(text)
    assert got[:5] == [tok.encode_ordinary(p.decode()) for p in pieces[:5]]
    assert encode_pieces([], tok.merges) == [] and encode_pieces([b""], tok.merges) == [[]]
