"""minbpe's BPE as vectorized tensor operations (minbpe-pytorch), on any device: the
optional extra ``bpekit[torch]``.

- ``merge(ids, pair, new_id)``: every occurrence of ``pair`` replaced, left to right
  without overlaps (``(1, 1)`` in ``[1, 1, 1, 1, 1, 2, 3]`` -> ``[4, 4, 1, 2, 3]``);
- ``get_stats(ids)``: each distinct pair with its count and first position
  (``torch.unique``);
- ``BasicTokenizer``: minbpe's ``train``/``encode``/``decode`` on one sequence, on a
  chosen device, with the same merges and ids as ``bpekit.minbpe.BasicTokenizer``;
- ``encode_pieces``: many pre-tokenized pieces at once, flattened with their
  boundaries; each step merges, in every piece at the same time, that piece's present
  pair of lowest rank. The ids equal the native encoder's.

This path is for studying BPE on tensors and for GPUs; on a CPU the native encoder is
much faster (``benchmarks/README.md``, ``torch-encode``). torch is imported on first
use, so this module imports (and its docs build) without it; ``tests/minbpe/test_torch.py``
holds the examples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ImportError("bpekit.torch needs PyTorch: pip install 'bpekit[torch]' (or torch)") from None
    return torch


__all__ = ["BasicTokenizer", "encode_pieces", "get_stats", "merge"]

Pair = tuple[int, int]


def _first_of_runs(pos: torch.Tensor) -> torch.Tensor:
    """Of sorted positions, those a left-to-right scan takes when each covers it and the
    next position: in a run of consecutive positions, every other one from its start."""
    torch = _torch()
    if len(pos) < 2:
        return torch.ones_like(pos, dtype=torch.bool)
    k = torch.arange(len(pos), device=pos.device)
    starts = torch.ones_like(pos, dtype=torch.bool)
    starts[1:] = pos[1:] != pos[:-1] + 1
    run_start = torch.cummax(torch.where(starts, k, torch.zeros_like(k)), 0).values
    return (k - run_start) % 2 == 0


def _byte_tensor(data: bytes, device: torch.device) -> torch.Tensor:
    """The bytes of ``data`` as a ``long`` tensor on ``device`` (through a ``uint8`` view:
    a list of a few MB of ints took seconds)."""
    torch = _torch()
    if not data:
        return torch.empty(0, dtype=torch.long, device=device)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device=device, dtype=torch.long)


def merge(ids: torch.Tensor, pair: Pair, new_id: int) -> torch.Tensor:
    """``ids`` (1-D) with each occurrence of ``pair``, left to right, replaced by
    ``new_id``: in an overlapping run (``(1, 1)`` in ``1 1 1``) every other one."""
    torch = _torch()
    if len(ids) < 2:
        return ids.clone()
    a, b = pair
    pos = torch.nonzero((ids[:-1] == a) & (ids[1:] == b)).flatten()
    if a == b:
        pos = pos[_first_of_runs(pos)]
    out = ids.clone()
    out[pos] = new_id
    keep = torch.ones(len(ids), dtype=torch.bool, device=ids.device)
    keep[pos + 1] = False
    return out[keep]


def get_stats(ids: torch.Tensor, width: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each distinct consecutive pair of ``ids`` (``[K, 2]``), its count and the position
    of its first occurrence (minbpe's ``get_stats``, which keeps pairs in that order).
    ``width``: an id bound (default: the largest id + 1)."""
    torch = _torch()
    if len(ids) < 2:
        empty = torch.empty(0, dtype=torch.long, device=ids.device)
        return empty.view(0, 2), empty, empty
    w = int(ids.max()) + 1 if width is None else width
    keys = ids[:-1].long() * w + ids[1:].long()
    uniq, inverse, counts = torch.unique(keys, return_inverse=True, return_counts=True)
    positions = torch.arange(len(keys), device=ids.device)
    first = torch.full((len(uniq),), len(keys), dtype=torch.long, device=ids.device)
    first = first.scatter_reduce(0, inverse, positions, reduce="amin")
    return torch.stack([uniq // w, uniq % w], 1), counts, first


class BasicTokenizer:
    """minbpe's ``BasicTokenizer`` with its sequence on ``device``: ``merges``
    ``{(int, int): int}`` and ``vocab`` ``{int: bytes}`` as minbpe has them."""

    def __init__(self, device: str | torch.device = "cpu") -> None:
        self.device = _torch().device(device)
        self.merges: dict[Pair, int] = {}
        self.vocab: dict[int, bytes] = {i: bytes([i]) for i in range(256)}

    def train(self, text: str, vocab_size: int, verbose: bool = False) -> None:
        """minbpe's merges: the most frequent pair, ties to the one that occurs first."""
        if vocab_size < 256:
            raise ValueError(f"vocab_size must be at least 256, not {vocab_size}")
        torch = _torch()
        ids = _byte_tensor(text.encode("utf-8"), self.device)
        merges: dict[Pair, int] = {}
        vocab = {i: bytes([i]) for i in range(256)}
        for i in range(vocab_size - 256):
            pairs, counts, first = get_stats(ids, vocab_size)
            if len(counts) == 0:
                raise ValueError(
                    f"no pair is left to merge after {i} merges: the text is too short for this vocab_size"
                )
            top = counts.max()
            tied = torch.nonzero(counts == top).flatten()
            k = tied[torch.argmin(first[tied])]
            pair = (int(pairs[k, 0]), int(pairs[k, 1]))
            idx = 256 + i
            ids = merge(ids, pair, idx)
            merges[pair] = idx
            vocab[idx] = vocab[pair[0]] + vocab[pair[1]]
            if verbose:
                n = vocab_size - 256
                print(f"merge {i + 1}/{n}: {pair} -> {idx} ({vocab[idx]!r}) had {int(top)} occurrences")
        self.merges, self.vocab = merges, vocab

    def encode(self, text: str) -> list[int]:
        """minbpe's ``encode``: the present pair of lowest merge rank, everywhere, until
        none is left, on the device."""
        return encode_pieces([text.encode("utf-8")], self.merges, device=self.device)[0]

    def decode(self, ids: Iterable[int]) -> str:
        return b"".join(self.vocab[int(i)] for i in ids).decode("utf-8", errors="replace")


class _Ranks:
    """Merges as sorted tensor keys: a pair's rank and new id by ``searchsorted``."""

    def __init__(self, merges: dict[Pair, int], device: torch.device) -> None:
        torch = _torch()
        self.width = max([256, *(i + 1 for i in merges.values())])
        keys = torch.tensor([a * self.width + b for a, b in merges], dtype=torch.long, device=device)
        ids = torch.tensor(list(merges.values()), dtype=torch.long, device=device)
        order = torch.argsort(keys)
        self.keys, self.ids = keys[order], ids[order]

    def lookup(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """The new id of each pair (the rank order: new ids grow with rank), or a value
        past every id where the pair is no merge."""
        torch = _torch()
        none = torch.full_like(left, self.width)
        if len(self.keys) == 0:
            return none
        q = left * self.width + right
        at = torch.searchsorted(self.keys, q).clamp(max=len(self.keys) - 1)
        return torch.where(self.keys[at] == q, self.ids[at], none)


def encode_pieces(
    pieces: Sequence[bytes], merges: dict[Pair, int], device: str | torch.device = "cpu"
) -> list[list[int]]:
    """The ids of each piece (bytes, pre-tokenized), all at once: the pieces flattened
    into one tensor with a piece number per position; each step takes in every piece its
    present pair of lowest rank (a segment minimum) and merges it there, every piece in
    parallel, until no piece has a pair to merge."""
    torch = _torch()
    device = torch.device(device)
    lengths = [len(p) for p in pieces]
    ids = _byte_tensor(b"".join(pieces), device)
    piece = torch.repeat_interleave(
        torch.arange(len(pieces), device=device), torch.tensor(lengths, dtype=torch.long, device=device)
    )
    ranks = _Ranks(merges, device)
    while len(ids) >= 2:
        same = piece[:-1] == piece[1:]
        new = ranks.lookup(ids[:-1], ids[1:])
        new = torch.where(same, new, torch.full_like(new, ranks.width))
        best = torch.full((len(pieces),), ranks.width, dtype=torch.long, device=device)
        best = best.scatter_reduce(0, piece[:-1], new, reduce="amin")
        chosen = (new < ranks.width) & (new == best[piece[:-1]])
        if not bool(chosen.any()):
            break
        pos = torch.nonzero(chosen).flatten()
        # Two chosen neighbours are the same pair (one rank per piece): a run of a token
        # with itself, merged every other one from the run's start.
        pos = pos[_first_of_runs(pos)]
        out = ids.clone()
        out[pos] = new[pos]
        keep = torch.ones(len(ids), dtype=torch.bool, device=device)
        keep[pos + 1] = False
        ids, piece = out[keep], piece[keep]
    counts = torch.bincount(piece, minlength=len(pieces)).tolist()
    flat = ids.tolist()
    out_lists, start = [], 0
    for n in counts:
        out_lists.append(flat[start : start + n])
        start += n
    return out_lists
