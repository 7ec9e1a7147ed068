//! The byte-pair merge of one piece: start from one part per byte, then merge the
//! adjacent pair of lowest rank, leftmost first, until no pair is in the table.
//!
//! Why two algorithms: almost every piece is short (English words are under 20
//! bytes), where a linear scan over a small array beats any structure. A long
//! piece ("a" * 1_000_000, a line without spaces) would make that scan quadratic,
//! so pieces longer than [`HEAP_THRESHOLD`] use a min-heap of candidate pairs over a
//! linked list of parts, with lazy invalidation: O(n log n). Both pick the same pair
//! at every step, `(rank, position)` smallest, so they give the same ids.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::pairs::{PairCache, PairTable};
use super::table::{Bpe, NONE};

/// Pieces up to this many bytes use the scan.
pub const HEAP_THRESHOLD: usize = 128;

/// Buffers reused from piece to piece, so merging allocates nothing in steady state.
#[derive(Default, Debug)]
pub struct Scratch {
    parts: Vec<u32>,
    /// Rank of the pair starting at each part; `NONE` if none.
    ranks: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    heap: BinaryHeap<Reverse<(u32, u32, u32, u32)>>,
    cache: PairCache,
}

/// Appends the ids of `piece` to `out`, using only pairs of rank below `max_rank`
/// (`NONE`: all of them).
pub fn merge_piece(bpe: &Bpe, piece: &[u8], max_rank: u32, s: &mut Scratch, out: &mut Vec<u32>) {
    if piece.len() <= HEAP_THRESHOLD {
        merge_scan(bpe, piece, max_rank, s, out);
    } else {
        merge_heap(bpe, piece, max_rank, s, out);
    }
}

/// `rank` if it is below `max_rank`, else `NONE`.
#[inline]
fn below(rank: u32, max_rank: u32) -> u32 {
    if rank < max_rank {
        rank
    } else {
        NONE
    }
}

#[inline]
fn rank_of(pairs: &PairTable, left: u32, right: u32, max_rank: u32, cache: &mut PairCache) -> u32 {
    below(pairs.rank_cached(left, right, cache), max_rank)
}

fn merge_scan(bpe: &Bpe, piece: &[u8], max_rank: u32, s: &mut Scratch, out: &mut Vec<u32>) {
    let pairs = bpe.pairs();
    let parts = &mut s.parts;
    let ranks = &mut s.ranks;
    let cache = &mut s.cache;
    cache.bind(pairs);
    parts.clear();
    parts.extend(piece.iter().map(|&b| bpe.byte_id(b)));
    ranks.clear();
    ranks.extend(
        piece
            .windows(2)
            .map(|w| below(pairs.byte_rank(w[0], w[1]), max_rank)),
    );
    loop {
        let mut best = NONE;
        let mut at = 0;
        for (i, &r) in ranks.iter().enumerate() {
            if r < best {
                best = r;
                at = i;
            }
        }
        if best == NONE {
            break;
        }
        parts[at] = pairs.merged_id(best);
        parts.remove(at + 1);
        ranks.remove(at);
        if at + 1 < parts.len() {
            ranks[at] = rank_of(pairs, parts[at], parts[at + 1], max_rank, cache);
        }
        if at > 0 {
            ranks[at - 1] = rank_of(pairs, parts[at - 1], parts[at], max_rank, cache);
        }
    }
    out.extend_from_slice(parts);
}

fn merge_heap(bpe: &Bpe, piece: &[u8], max_rank: u32, s: &mut Scratch, out: &mut Vec<u32>) {
    let pairs = bpe.pairs();
    let n = piece.len();
    let Scratch {
        parts,
        next,
        prev,
        heap,
        ..
    } = s;
    parts.clear();
    parts.extend(piece.iter().map(|&b| bpe.byte_id(b)));
    next.clear();
    next.extend((1..=n as u32).map(|i| if i as usize == n { NONE } else { i }));
    prev.clear();
    prev.extend((0..n as u32).map(|i| if i == 0 { NONE } else { i - 1 }));
    heap.clear();
    let push = |heap: &mut BinaryHeap<_>, parts: &[u32], at: u32, right: u32| {
        let (l, r) = (parts[at as usize], parts[right as usize]);
        let rank = below(pairs.rank(l, r), max_rank);
        if rank != NONE {
            heap.push(Reverse((rank, at, l, r)));
        }
    };
    // Build the first heap in O(n) (heapify) rather than n pushes.
    let mut initial = std::mem::take(heap).into_vec();
    initial.extend((0..n.saturating_sub(1)).filter_map(|i| {
        let (l, r) = (parts[i], parts[i + 1]);
        let rank = below(pairs.rank(l, r), max_rank);
        (rank != NONE).then_some(Reverse((rank, i as u32, l, r)))
    }));
    *heap = BinaryHeap::from(initial);
    while let Some(Reverse((rank, at, l, r))) = heap.pop() {
        let right = next[at as usize];
        // Stale entry: a neighbour merged since it was pushed.
        if parts[at as usize] != l || right == NONE || parts[right as usize] != r {
            continue;
        }
        parts[at as usize] = pairs.merged_id(rank);
        parts[right as usize] = NONE;
        let after = next[right as usize];
        next[at as usize] = after;
        if after != NONE {
            prev[after as usize] = at;
            push(heap, parts, at, after);
        }
        let before = prev[at as usize];
        if before != NONE {
            push(heap, parts, before, at);
        }
    }
    let mut i = 0;
    while i != NONE {
        out.push(parts[i as usize]);
        i = next[i as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bpe() -> Bpe {
        let mut vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        vocab.push((256, b"aa".to_vec()));
        vocab.push((257, b"aaaa".to_vec()));
        vocab.push((258, b"ab".to_vec()));
        let merges = vec![
            (b"a".to_vec(), b"a".to_vec()),
            (b"aa".to_vec(), b"aa".to_vec()),
            (b"a".to_vec(), b"b".to_vec()),
        ];
        Bpe::from_merges(vocab, &merges).unwrap()
    }

    fn both(piece: &[u8]) -> (Vec<u32>, Vec<u32>) {
        let b = bpe();
        let mut s = Scratch::default();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        merge_scan(&b, piece, NONE, &mut s, &mut x);
        merge_heap(&b, piece, NONE, &mut s, &mut y);
        (x, y)
    }

    #[test]
    fn leftmost_lowest_rank_first() {
        let (x, y) = both(b"aaaaab");
        assert_eq!(x, vec![257, 258]);
        assert_eq!(x, y);
        let (x, y) = both(b"aaa");
        assert_eq!(x, vec![256, 97]);
        assert_eq!(x, y);
    }

    #[test]
    fn scan_and_heap_agree_on_long_runs() {
        for n in [1usize, 2, 3, 5, 7, 8, 9, 31, 200, 1001] {
            let mut piece = vec![b'a'; n];
            piece.push(b'b');
            piece.extend(vec![b'a'; n / 2]);
            let (x, y) = both(&piece);
            assert_eq!(x, y, "n={n}");
        }
    }
}
