//! A vocabulary from tiktoken ranks (`token bytes -> rank`, the rank is the id): its
//! pair table holds every split of every token into two tokens.

use rayon::prelude::*;

use super::super::longparts::LongParts;
use super::super::pairs::PairTable;
use super::{show, Bpe};
use crate::error::{Error, Result};
use crate::ids::NONE;
use crate::piecekey::{self, key_of, KEY_LEN};
use crate::pool::run_in_pool;

/// Tokens whose splits' lines are prefetched while the splits of an earlier one are
/// looked up: 2 to 4 hid more of the misses than prefetching a token's own lines
/// just before its lookups.
const PREFETCH_AHEAD: usize = 4;

/// Tokens per parallel task when finding pairs.
const PAIRS_CHUNK: usize = 4096;

/// Buffers of [`Bpe::splits_into_tokens`]: a token's long prefixes and suffixes
/// that are tokens, `(length, id)`.
#[derive(Default)]
struct SplitScratch {
    prefixes: Vec<(usize, u32)>,
    suffixes: Vec<(usize, u32)>,
}

impl Bpe {
    /// From tiktoken mergeable ranks (`bytes -> rank`; the rank is the id).
    ///
    /// Every split of every token into two tokens is a pair (tiktoken merges the
    /// adjacent parts whose joined bytes rank lowest, whichever split they are):
    /// o200k's 1.2M splits hold 446K pairs. They are found in parallel, the parts of
    /// up to 15 bytes looked up by `piecekey` key in [`ShortIds`], whose lines are
    /// prefetched a few tokens ahead; the tokens are visited in id order, the order
    /// their bytes were allocated in. One thread built o200k in ~115 ms with a
    /// `hashbrown` table visited in its hash order, and in ~30% less time this way.
    pub fn from_ranks(ranks: Vec<(Vec<u8>, u32)>) -> Result<Self> {
        let vocab: Vec<(u32, Vec<u8>)> = ranks.into_iter().map(|(b, r)| (r, b)).collect();
        let mut bpe = Self::from_vocab(vocab, true, true)?;
        if bpe.ids.len() != bpe.tokens().count() {
            // A rank is an id, and two ids for the same bytes would make the ranks of
            // merges that give those bytes ambiguous.
            let (id, token) = bpe
                .tokens()
                .find(|&(id, t)| bpe.id_of(t) != Some(id))
                .unwrap_or_default();
            let first = bpe.id_of(token).unwrap_or(NONE);
            return Err(Error::invalid(format!(
                "token {} has two ranks, {first} and {id}",
                show(token)
            )));
        }
        // No list of all tokens or of all pairs is made along the way: fresh memory
        // costs its zeroing (0.5-1.3 GB/s measured), and such temporaries (~20 MB for
        // o200k) were a fifth of loading it in a fresh process.
        bpe.fill_short_ids(false);
        // Tokens are distinct here (checked above), so each pair is found once.
        let long = LongParts::new(&bpe.tokens);
        // On this crate's pools, not rayon's global one, which hangs in a forked child.
        let parts: Vec<Vec<(u32, u32, u32)>> = run_in_pool(0, || {
            bpe.tokens
                .par_chunks(PAIRS_CHUNK)
                .enumerate()
                .map(|(c, chunk)| {
                    let base = (c * PAIRS_CHUNK) as u32;
                    let token = |i: usize| chunk.get(i).and_then(|t| t.as_deref());
                    let mut pairs = Vec::new();
                    let mut scratch = SplitScratch::default();
                    for t in (0..PREFETCH_AHEAD).filter_map(token) {
                        bpe.prefetch_splits(t);
                    }
                    for i in 0..chunk.len() {
                        if let Some(ahead) = token(i + PREFETCH_AHEAD) {
                            bpe.prefetch_splits(ahead);
                        }
                        if let Some(t) = token(i) {
                            let id = base + i as u32;
                            bpe.splits_into_tokens(t, id, &long, &mut scratch, &mut pairs);
                        }
                    }
                    pairs
                })
                .collect()
        })?;
        drop(long);
        bpe.pairs = PairTable::from_parts(&parts, None, &bpe.byte_ids)?;
        Ok(bpe)
    }

    /// Starts loading the short-id lines that [`Bpe::splits_into_tokens`] of `token`
    /// will read: those of its short prefixes and suffixes.
    fn prefetch_splits(&self, token: &[u8]) {
        let n = token.len();
        for k in 1..n.min(KEY_LEN + 1) {
            self.short_ids.prefetch(piecekey::hash(key_of(&token[..k])));
            self.short_ids
                .prefetch(piecekey::hash(key_of(&token[n - k..])));
        }
    }

    /// The id of `part`, a token of at most [`KEY_LEN`] bytes, if it is one.
    #[inline]
    fn short_id(&self, part: &[u8]) -> Option<u32> {
        let key = key_of(part);
        self.short_ids.get(key, piecekey::hash(key))
    }

    /// Pushes `(left, right, id)` for every split of `token` (id `id`) into two
    /// tokens, shortest left part first. A split is a short or long prefix that is a
    /// token followed by a short or long suffix that is one; the long ones come from
    /// `long` (see `longparts`), so a token costs time linear in its length.
    fn splits_into_tokens(
        &self,
        token: &[u8],
        id: u32,
        long: &LongParts<'_>,
        s: &mut SplitScratch,
        pairs: &mut Vec<(u32, u32, u32)>,
    ) {
        let n = token.len();
        if n <= KEY_LEN + 1 {
            // Every part is short (the case of almost every token).
            for k in 1..n {
                if let Some(left) = self.short_id(&token[..k]) {
                    if let Some(right) = self.short_id(&token[k..]) {
                        pairs.push((left, right, id));
                    }
                }
            }
            return;
        }
        s.prefixes.clear();
        s.suffixes.clear();
        long.prefixes(token, &mut s.prefixes);
        long.suffixes(token, &mut s.suffixes);
        // The long suffixes, shortest first, are matched to the left parts, shortest
        // (so longest right part) first, from their end.
        let mut suffixes = s.suffixes.as_slice();
        let short = (1..=KEY_LEN).filter_map(|k| self.short_id(&token[..k]).map(|left| (k, left)));
        for (k, left) in short.chain(s.prefixes.iter().copied()) {
            let right = match n - k {
                m if m <= KEY_LEN => self.short_id(&token[k..]),
                m => {
                    while suffixes.last().is_some_and(|&(len, _)| len > m) {
                        suffixes = &suffixes[..suffixes.len() - 1];
                    }
                    suffixes
                        .last()
                        .filter(|&&(len, _)| len == m)
                        .map(|&(_, r)| r)
                }
            };
            if let Some(right) = right {
                pairs.push((left, right, id));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::FxMap;
    use crate::encode::vocab::bpe::tests::byte_ranks;
    use crate::testutil::finishes_within;

    #[test]
    fn ranks_recover_merges() {
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        ranks.push((b"ab".to_vec(), 256));
        ranks.push((b"bc".to_vec(), 257));
        ranks.push((b"abc".to_vec(), 258));
        let bpe = Bpe::from_ranks(ranks).unwrap();
        // "abc" splits as ab|c and a|bc; both pairs lead to 258.
        assert_eq!(bpe.pair(256, 99), Some((258, 258)));
        assert_eq!(bpe.pair(97, 257), Some((258, 258)));
        assert_eq!(
            crate::encode::vocab::recover_merges(&bpe).unwrap(),
            vec![(97, 98), (98, 99), (256, 99)]
        );
    }

    /// tiktoken's merge of `piece` by `ranks` (bytes -> rank), with the ranks below
    /// `max_rank` only: the adjacent parts whose joined bytes rank lowest merge,
    /// leftmost first.
    fn tiktoken_merge(ranks: &FxMap<Vec<u8>, u32>, piece: &[u8], max_rank: u32) -> Vec<u32> {
        let mut parts: Vec<Vec<u8>> = piece.iter().map(|&b| vec![b]).collect();
        loop {
            let best = (0..parts.len().saturating_sub(1))
                .filter_map(|i| {
                    let joined = [parts[i].as_slice(), parts[i + 1].as_slice()].concat();
                    ranks
                        .get(&joined)
                        .filter(|&&r| r < max_rank)
                        .map(|&r| (r, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            let right = parts.remove(i + 1);
            parts[i].extend(right);
        }
        parts.iter().map(|p| ranks[p]).collect()
    }

    /// Random rank files over four letters, each token two earlier ones joined (some
    /// are made of parts that their own bytes never merge into): every text merges
    /// as tiktoken merges it, with and without a rank limit.
    #[test]
    fn ranks_merge_as_tiktoken() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..300 {
            let mut ranks: Vec<(Vec<u8>, u32)> =
                (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
            let mut made: Vec<Vec<u8>> = b"abcd".iter().map(|&b| vec![b]).collect();
            for _ in 0..next(40) {
                let joined = [made[next(made.len())].as_slice(), &made[next(made.len())]].concat();
                if joined.len() <= 12 && !made.contains(&joined) {
                    ranks.push((joined.clone(), ranks.len() as u32));
                    made.push(joined);
                }
            }
            let map: FxMap<Vec<u8>, u32> = ranks.iter().cloned().collect();
            let bpe = Bpe::from_ranks(ranks.clone()).unwrap();
            let mut scratch = crate::encode::vocab::Scratch::default();
            for _ in 0..30 {
                let text: Vec<u8> = (0..1 + next(30)).map(|_| b"abcd"[next(4)]).collect();
                let limit = [NONE, 256 + next(40) as u32][next(2)];
                let mut out = Vec::new();
                crate::encode::vocab::merge_piece(&bpe, &text, limit, &mut scratch, &mut out)
                    .unwrap();
                assert_eq!(
                    out,
                    tiktoken_merge(&map, &text, limit),
                    "{ranks:?} {text:?} {limit}"
                );
            }
        }
    }

    #[test]
    fn ranks_with_a_token_twice_are_an_error_naming_both() {
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        ranks.push((b"ab".to_vec(), 256));
        ranks.push((b"ab".to_vec(), 257));
        let err = Bpe::from_ranks(ranks).unwrap_err().to_string();
        assert!(err.contains("\"ab\" has two ranks, 256 and 257"), "{err}");
    }

    /// Every pair of tokens merges exactly when their bytes joined are a token (into
    /// that token), whatever the lengths of the parts: short, long, or both.
    #[test]
    fn ranks_pair_every_split_into_short_and_long_parts() {
        let (a, b) = (
            b"abcdefghijklmnopqrs".to_vec(),
            b"0123456789ABCDEFGH".to_vec(),
        );
        let x = |n: usize| vec![b'x'; n];
        let mut tokens: Vec<Vec<u8>> = (2..=200).map(x).collect();
        tokens.extend((1..=40).map(|k| b"ab".repeat(k)));
        for t in [
            [&a[..], &b].concat(),
            [&b[..], &a].concat(),
            [&a[..], &b, &a].concat(),
            [&a[..], &x(20)].concat(),
            [&x(20)[..], &b].concat(),
            [&x(3)[..], &b].concat(),
            a.clone(),
            b.clone(),
        ] {
            if !tokens.contains(&t) {
                tokens.push(t);
            }
        }
        let mut ranks = byte_ranks();
        ranks.extend(tokens.into_iter().zip(256..));
        let bpe = Bpe::from_ranks(ranks.clone()).unwrap();
        for (left, l) in &ranks {
            for (right, r) in &ranks {
                let joined = bpe.id_of(&[&left[..], right].concat());
                assert_eq!(bpe.pair(*l, *r), joined.map(|id| (id, id)), "{l} {r}");
            }
        }
    }

    /// The splits of a long token were looked up by hashing each part, quadratic in
    /// its length: a token of 1 MB took ~23 s (optimised), now milliseconds.
    #[test]
    fn ranks_with_a_token_of_1_mb_load_in_linear_time() {
        let mut ranks = byte_ranks();
        ranks.push((vec![b'x'; 500_000], 256));
        ranks.push((vec![b'x'; 1_000_000], 257));
        ranks.push((vec![b'y'; 1_000_000], 258));
        let bpe = finishes_within(2.0, "ranks with 1 MB tokens", move || {
            Bpe::from_ranks(ranks).unwrap()
        });
        assert_eq!(bpe.pair(256, 256), Some((257, 257)));
        assert_eq!(bpe.pair(256, u32::from(b'x')), None);
    }
}
