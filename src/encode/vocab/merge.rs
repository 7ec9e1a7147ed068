//! The byte-pair merge of one piece: start from one part per byte, then merge the
//! adjacent pair of lowest rank, leftmost first, until no pair is in the table.
//!
//! Why two algorithms: almost every piece is short (English words are under 20
//! bytes), where a linear scan over a small array beats any structure. A long
//! piece ("a" * 1_000_000, a line without spaces) would make that scan quadratic,
//! so pieces longer than [`HEAP_THRESHOLD`] use a min-heap of candidate pairs over a
//! linked list of parts, with lazy invalidation: O(n log n). Both pick the same pair
//! at every step, `(rank, position)` smallest, so they give the same ids.
//!
//! Memory comes from the input here (a piece can be the whole text), so it is
//! reserved fallibly: a piece whose buffers cannot be had is an `OutOfMemory` error,
//! never an abort.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::bpe::{show, Bpe};
use super::pairs::{PairCache, PairTable};
use crate::error::{Error, Result};
use crate::ids::NONE;

/// Pieces up to this many bytes use the scan.
pub const HEAP_THRESHOLD: usize = 128;

/// Heap merges check for Ctrl-C every this many merges (a few ms of work).
const CHECK_EVERY: u32 = 1 << 16;

/// Buffers reused from piece to piece, so merging allocates nothing in steady state.
#[derive(Default, Debug)]
pub struct Scratch {
    parts: Vec<u32>,
    /// Rank of the pair starting at each part; `NONE` if none.
    ranks: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// `(rank << 32) | position` of candidate pairs: ordered as the merge order is.
    heap: BinaryHeap<Reverse<u64>>,
    cache: PairCache,
}

impl Scratch {
    /// Buffers for merging, or an error where their memory (the pair cache's 256 KB)
    /// cannot be had.
    pub fn try_new() -> Result<Self> {
        Ok(Self {
            parts: Vec::new(),
            ranks: Vec::new(),
            next: Vec::new(),
            prev: Vec::new(),
            heap: BinaryHeap::new(),
            cache: PairCache::try_new()
                .ok_or_else(|| Error::out_of_memory::<u64>("a pair cache", 1 << 15))?,
        })
    }
}

/// Reserves room for `n` more items in `v`, or an error naming `what`.
fn room<T>(v: &mut Vec<T>, n: usize, what: &'static str) -> Result<()> {
    v.try_reserve(n)
        .map_err(|_| Error::out_of_memory::<T>(what, n))
}

/// Appends the ids of `piece` to `out`, using only pairs of rank below `max_rank`
/// (`NONE`: all of them). An error (out of memory; or, for a huge piece, Ctrl-C in a
/// watched job) leaves `out` with some ids of the piece appended.
pub fn merge_piece(
    bpe: &Bpe,
    piece: &[u8],
    max_rank: u32,
    s: &mut Scratch,
    out: &mut Vec<u32>,
) -> Result<()> {
    room(out, piece.len(), "the ids of a piece")?;
    if let Some(model) = bpe.chars() {
        // A vocabulary of characters: the parts start from the characters, and the
        // same loops merge them (their pairs looked up in the table, not the grid).
        s.parts.clear();
        room(&mut s.parts, piece.len(), "merging a piece")?;
        model.first_parts(piece, &mut s.parts)?;
        return match s.parts.len() <= HEAP_THRESHOLD {
            true => merge_scan(bpe, Start::Parts, max_rank, s, out),
            false => merge_heap(bpe, Start::Parts, max_rank, s, out),
        };
    }
    if piece.len() <= HEAP_THRESHOLD {
        merge_scan(bpe, Start::Bytes(piece), max_rank, s, out)
    } else {
        merge_heap(bpe, Start::Bytes(piece), max_rank, s, out)
    }
}

/// The merges list of `bpe` as ids `(left, right)`, in rank order. For tiktoken
/// ranks it is recovered: each token of rank `r` is merged from its bytes using only
/// ranks below `r`, which must leave exactly two parts (minbpe's `recover_merges`).
pub(crate) fn recover_merges(bpe: &Bpe) -> Result<Vec<(u32, u32)>> {
    if let Some(m) = bpe.merges_given() {
        return Ok(m.clone());
    }
    let mut ws = Scratch::default();
    let mut out = Vec::new();
    for (id, bytes) in bpe.distinct_tokens().filter(|(_, b)| b.len() >= 2) {
        let mut parts = Vec::new();
        merge_piece(bpe, bytes, id, &mut ws, &mut parts)?;
        match parts[..] {
            [l, r] => out.push((l, r)),
            _ => {
                return Err(Error::invalid(format!(
                    "token id {id} ({}) cannot be built by merging two lower-ranked tokens",
                    show(bytes)
                )))
            }
        }
    }
    Ok(out)
}

/// What merging starts from: one part per byte of a piece, or the parts already in
/// [`Scratch`] (a vocabulary of characters).
#[derive(Clone, Copy)]
enum Start<'p> {
    Bytes(&'p [u8]),
    Parts,
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

fn merge_scan(
    bpe: &Bpe,
    start: Start<'_>,
    max_rank: u32,
    s: &mut Scratch,
    out: &mut Vec<u32>,
) -> Result<()> {
    let pairs = bpe.pairs();
    let parts = &mut s.parts;
    let ranks = &mut s.ranks;
    let cache = &mut s.cache;
    cache.bind(pairs);
    ranks.clear();
    match start {
        Start::Bytes(piece) => {
            parts.clear();
            room(parts, piece.len(), "merging a piece")?;
            room(ranks, piece.len(), "merging a piece")?;
            parts.extend(piece.iter().map(|&b| bpe.byte_id(b)));
            ranks.extend(
                piece
                    .windows(2)
                    .map(|w| below(pairs.byte_rank(w[0], w[1]), max_rank)),
            );
        }
        Start::Parts => {
            room(ranks, parts.len(), "merging a piece")?;
            for w in parts.windows(2) {
                ranks.push(rank_of(pairs, w[0], w[1], max_rank, cache));
            }
        }
    }
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
        let merged = pairs.merged_id(best);
        if let Some(&right) = parts.get(at + 2) {
            pairs.prefetch_cached(merged, right, cache);
        }
        if let Some(left) = at.checked_sub(1).and_then(|i| parts.get(i)) {
            pairs.prefetch_cached(*left, merged, cache);
        }
        parts[at] = merged;
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
    Ok(())
}

/// A heap entry: ordered by rank, then position.
#[inline]
fn entry(rank: u32, at: u32) -> Reverse<u64> {
    Reverse((u64::from(rank) << 32) | u64::from(at))
}

/// The heap merge. Each part keeps the rank of the pair it starts (`ranks`), and the
/// heap holds `(rank, position)` entries; an entry is current while the part's rank
/// still equals it. A position never sees the same rank twice (its pair only ever
/// grows, and a rank names one token's bytes), so an old entry can never pass for a
/// current one, and entries need no copy of the pair (8 bytes, not 16: a 50 MB piece
/// peaked at 1.6 GB with 16-byte entries holding both parts).
///
/// Stale entries pile up as neighbours merge; when the heap is full (twice the
/// piece's parts) it is rebuilt from the current pairs, so it never grows past the
/// room reserved at the start.
fn merge_heap(
    bpe: &Bpe,
    start: Start<'_>,
    max_rank: u32,
    s: &mut Scratch,
    out: &mut Vec<u32>,
) -> Result<()> {
    let pairs = bpe.pairs();
    let n = match start {
        Start::Bytes(piece) => piece.len(),
        Start::Parts => s.parts.len(),
    };
    if n == 0 {
        return Ok(());
    }
    let Scratch {
        parts,
        ranks,
        next,
        prev,
        heap,
        cache,
    } = s;
    cache.bind(pairs);
    let what = "merging a long piece";
    let mut entries = std::mem::take(heap).into_vec();
    entries.clear();
    if let Start::Bytes(_) = start {
        parts.clear();
    }
    room(parts, n, what)?;
    for v in [&mut *ranks, &mut *next, &mut *prev] {
        v.clear();
        room(v, n, what)?;
    }
    let heap_room = 2 * n + 16;
    room(&mut entries, heap_room, what)?;
    next.extend((1..=n as u32).map(|i| if i as usize == n { NONE } else { i }));
    prev.extend((0..n as u32).map(|i| if i == 0 { NONE } else { i - 1 }));
    match start {
        Start::Bytes(piece) => {
            parts.extend(piece.iter().map(|&b| bpe.byte_id(b)));
            ranks.extend((0..n).map(|i| match piece.get(i + 1) {
                Some(&b) => below(pairs.byte_rank(piece[i], b), max_rank),
                None => NONE,
            }));
        }
        Start::Parts => {
            for i in 0..n {
                ranks.push(match parts.get(i + 1) {
                    Some(&r) => rank_of(pairs, parts[i], r, max_rank, cache),
                    None => NONE,
                });
            }
        }
    }
    // Build the first heap in O(n) (heapify) rather than n pushes.
    entries.extend(
        ranks
            .iter()
            .enumerate()
            .filter(|(_, &r)| r != NONE)
            .map(|(i, &r)| entry(r, i as u32)),
    );
    *heap = BinaryHeap::from(entries);
    let mut merges = 0u32;
    while let Some(Reverse(top)) = heap.pop() {
        let (rank, at) = ((top >> 32) as u32, top as u32);
        if ranks[at as usize] != rank {
            continue; // stale: a neighbour merged since it was pushed
        }
        let right = next[at as usize];
        parts[at as usize] = pairs.merged_id(rank);
        parts[right as usize] = NONE;
        ranks[right as usize] = NONE;
        let after = next[right as usize];
        next[at as usize] = after;
        ranks[at as usize] = NONE;
        // The pairs that changed: the merged part with its right and left neighbours.
        let mut requeue = |left: u32, right: u32| {
            let r = rank_of(
                pairs,
                parts[left as usize],
                parts[right as usize],
                max_rank,
                cache,
            );
            ranks[left as usize] = r;
            if r != NONE {
                heap.push(entry(r, left));
            }
        };
        if after != NONE {
            prev[after as usize] = at;
            requeue(at, after);
        }
        let before = prev[at as usize];
        if before != NONE {
            requeue(before, at);
        }
        if heap.len() + 2 > heap_room {
            // Full of stale entries: keep only the current pairs (at most n - 1).
            let mut entries = std::mem::take(heap).into_vec();
            entries.clear();
            let mut i = 0;
            while i != NONE {
                if ranks[i as usize] != NONE {
                    entries.push(entry(ranks[i as usize], i));
                }
                i = next[i as usize];
            }
            *heap = BinaryHeap::from(entries);
        }
        merges += 1;
        if merges.is_multiple_of(CHECK_EVERY) && crate::progress::interrupted() {
            return Err(Error::Cancelled);
        }
    }
    let mut i = 0;
    while i != NONE {
        out.push(parts[i as usize]);
        i = next[i as usize];
    }
    Ok(())
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

    #[test]
    fn characters_merge_alike_by_scan_and_by_heap() {
        // A vocabulary of characters: "é" and "▁" are tokens, "中" falls back to bytes.
        let texts = [
            "<unk>",
            "a",
            "\u{e9}",
            "\u{2581}",
            "a\u{e9}",
            "\u{2581}a\u{e9}",
        ];
        let mut vocab: Vec<(u32, Vec<u8>)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (i as u32, t.as_bytes().to_vec()))
            .collect();
        for b in 0..=255u8 {
            vocab.push((
                6 + u32::from(b),
                super::super::byte_token_text(b).into_bytes(),
            ));
        }
        let merges = vec![
            ("a".as_bytes().to_vec(), "\u{e9}".as_bytes().to_vec()),
            (
                "\u{2581}".as_bytes().to_vec(),
                "a\u{e9}".as_bytes().to_vec(),
            ),
        ];
        let spec = super::super::CharSpec {
            byte_fallback: true,
            unk: Some(0),
            fuse_unk: true,
        };
        let b = Bpe::from_char_merges(vocab, &merges, &spec).unwrap();
        let unit = "\u{2581}a\u{e9}中";
        let one = {
            let mut out = Vec::new();
            merge_piece(&b, unit.as_bytes(), NONE, &mut Scratch::default(), &mut out).unwrap();
            out
        };
        assert_eq!(one, [5, 6 + 0xE4, 6 + 0xB8, 6 + 0xAD]);
        // 200 characters: past the scan's threshold, so merged on the heap.
        let long = unit.repeat(50);
        let mut out = Vec::new();
        merge_piece(&b, long.as_bytes(), NONE, &mut Scratch::default(), &mut out).unwrap();
        assert_eq!(out, one.repeat(50));
        assert_eq!(b.joins_before('\u{2581}'), Some(vec![]));
        assert_eq!(b.joins_before('中'), None, "no token of its own");
    }

    fn both(piece: &[u8]) -> (Vec<u32>, Vec<u32>) {
        let b = bpe();
        let mut s = Scratch::default();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        merge_scan(&b, Start::Bytes(piece), NONE, &mut s, &mut x).unwrap();
        merge_heap(&b, Start::Bytes(piece), NONE, &mut s, &mut y).unwrap();
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
    fn a_long_run_merges_whole_through_heap_rebuilds() {
        // Each merge of "a" * n pushes two pairs and makes two stale: the heap fills
        // its reserved room and is rebuilt from the current pairs along the way.
        let b = bpe();
        let mut s = Scratch::default();
        for k in [1000usize, 25_000] {
            let mut out = Vec::new();
            merge_heap(
                &b,
                Start::Bytes(&vec![b'a'; 4 * k + 3]),
                NONE,
                &mut s,
                &mut out,
            )
            .unwrap();
            let mut want = vec![257; k];
            want.extend([256, 97]);
            assert_eq!(out, want, "k={k}");
        }
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

    use crate::testutil::Rng;

    /// Merges as `(left bytes, right bytes)`, in rank order.
    type Merges = Vec<(Vec<u8>, Vec<u8>)>;

    /// A vocabulary over the bytes `a..a+alphabet` with `n_merges` merges of random
    /// pairs of earlier tokens (ids 0..=255 are the bytes, then one per merge).
    fn random_bpe(rng: &mut Rng, alphabet: u8, n_merges: usize) -> (Bpe, Merges) {
        let mut vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        let mut tokens: Vec<Vec<u8>> = (0..alphabet).map(|i| vec![b'a' + i]).collect();
        let mut merges = Vec::new();
        while merges.len() < n_merges {
            let a = tokens[rng.below(tokens.len())].clone();
            let b = tokens[rng.below(tokens.len())].clone();
            let joined = [a.as_slice(), b.as_slice()].concat();
            if joined.len() > 12 || tokens.contains(&joined) {
                continue;
            }
            vocab.push((256 + merges.len() as u32, joined.clone()));
            tokens.push(joined);
            merges.push((a, b));
        }
        (Bpe::from_merges(vocab, &merges).unwrap(), merges)
    }

    /// The merge as its definition reads: apply the lowest-ranked adjacent pair,
    /// leftmost first, over the bytes of each part, until none is left.
    fn naive(merges: &[(Vec<u8>, Vec<u8>)], piece: &[u8], max_rank: u32) -> Vec<Vec<u8>> {
        let mut parts: Vec<Vec<u8>> = piece.iter().map(|&b| vec![b]).collect();
        loop {
            let best = (0..parts.len().saturating_sub(1))
                .filter_map(|i| {
                    let rank = merges
                        .iter()
                        .position(|(a, b)| *a == parts[i] && *b == parts[i + 1])?;
                    (rank < max_rank as usize).then_some((rank, i))
                })
                .min();
            let Some((_, i)) = best else { return parts };
            let right = parts.remove(i + 1);
            parts[i].extend(right);
        }
    }

    #[test]
    fn scan_heap_and_the_definition_agree_on_random_pieces() {
        // Small alphabets make repeated pairs (ties of rank, broken by position) and
        // long chains of merges; pieces span one to several groups of scan lanes.
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut s = Scratch::default();
        for round in 0..60 {
            let alphabet = 2 + (round % 4) as u8;
            let n_merges = 20 + rng.below(60);
            let (b, merges) = random_bpe(&mut rng, alphabet, n_merges);
            for _ in 0..40 {
                let n = 1 + rng.below(HEAP_THRESHOLD);
                let piece: Vec<u8> = (0..n)
                    .map(|_| b'a' + rng.below(alphabet.into()) as u8)
                    .collect();
                let max_rank = match rng.below(3) {
                    0 => rng.below(merges.len()) as u32,
                    _ => NONE,
                };
                let (mut x, mut y) = (Vec::new(), Vec::new());
                merge_scan(&b, Start::Bytes(&piece), max_rank, &mut s, &mut x).unwrap();
                merge_heap(&b, Start::Bytes(&piece), max_rank, &mut s, &mut y).unwrap();
                let want: Vec<u32> = naive(&merges, &piece, max_rank)
                    .iter()
                    .map(|t| b.id_of(t).unwrap())
                    .collect();
                let show = String::from_utf8_lossy(&piece);
                assert_eq!(x, want, "scan, piece {show}, max_rank {max_rank}");
                assert_eq!(y, want, "heap, piece {show}, max_rank {max_rank}");
            }
        }
    }
}
