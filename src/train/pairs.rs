//! The merge loop's pair counts, in shards by pair, and the changes one merge makes
//! to them.
//!
//! A merge's changes are gathered per thread ([`Deltas`]) and then added to the
//! counts. With one map that addition is serial: on the 12 GB corpus with two threads
//! it was 0.8 s of the large merges' 8 s, and it grows with the threads (each adds
//! its own table). In shards, each shard's changes from every thread are added by
//! one thread, and the shards share no pair, so no lock is taken and the counts are
//! the same whatever the number of shards.

use hashbrown::hash_map::Entry;
use rayon::prelude::*;
use smallvec::SmallVec;

use crate::count::FxMap;
use crate::ids::Pair;

/// Words that hold a pair. Most pairs are rare (of the 12 GB corpus's 2.4 M pairs,
/// most are in a few words): up to 4 words are held inline, in the space a `Vec`
/// takes, so those pairs cost no allocation to make, grow or free.
pub(crate) type Postings = SmallVec<[u32; 4]>;
const _: () = assert!(std::mem::size_of::<Postings>() == std::mem::size_of::<Vec<u32>>());

/// What the merge loop knows about a pair.
#[derive(Default)]
pub(crate) struct PairStats {
    pub(crate) count: u64,
    /// Words that held the pair when it was last seen; may hold stale or
    /// repeated entries, which the merge skips.
    pub(crate) postings: Postings,
}

/// One shard: the pairs whose [`shard_of`] is its index.
pub(crate) type Shard = FxMap<Pair, PairStats>;

/// The shard of pair `p` among `mask + 1` shards (a power of two). The bits taken
/// are not those the maps' own hash indexes by (FxHash, another multiplier), so each
/// shard's table stays evenly filled. One shard (one thread) skips the hash: a
/// predictable branch costs less than the multiply, and the loop on one thread looks
/// up shards a few million times (cachegrind, en-small's counts to 10,000 tokens).
#[inline(always)]
pub(crate) fn shard_of(p: Pair, mask: usize) -> usize {
    if mask == 0 {
        return 0;
    }
    (p.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask
}

/// The shards a pool of `threads` threads uses: one per thread, rounded up to a power
/// of two. One thread has one shard, the plain map.
pub(crate) fn shards_for(threads: usize) -> usize {
    threads.max(1).next_power_of_two()
}

/// Every pair's count and postings, in shards.
pub(crate) struct PairCounts {
    shards: Vec<Shard>,
    mask: usize,
}

impl PairCounts {
    /// Adds up `parts`, each the counts of a consecutive run of words in shards,
    /// in order, so that each pair's postings stay in word order. Shards are added
    /// up in parallel.
    pub(crate) fn from_parts(mut parts: Vec<Vec<Shard>>, n_shards: usize) -> Self {
        debug_assert!(n_shards.is_power_of_two());
        debug_assert!(parts.iter().all(|p| p.len() == n_shards));
        let mut columns: Vec<Vec<Shard>> = (0..n_shards).map(|_| Vec::new()).collect();
        for part in &mut parts {
            for (s, shard) in part.drain(..).enumerate() {
                columns[s].push(shard);
            }
        }
        let shards = columns
            .into_par_iter()
            .map(|column| {
                let mut column = column.into_iter();
                let mut sum = column.next().unwrap_or_default();
                for part in column {
                    for (p, s) in part {
                        let e = sum.entry(p).or_default();
                        e.count += s.count;
                        e.postings.extend_from_slice(&s.postings);
                    }
                }
                sum
            })
            .collect();
        Self {
            shards,
            mask: n_shards - 1,
        }
    }

    pub(crate) fn n_shards(&self) -> usize {
        self.shards.len()
    }

    pub(crate) fn get(&self, p: Pair) -> Option<&PairStats> {
        self.shards[shard_of(p, self.mask)].get(&p)
    }

    pub(crate) fn remove(&mut self, p: Pair) -> Option<PairStats> {
        self.shards[shard_of(p, self.mask)].remove(&p)
    }

    /// Every pair with its count.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (Pair, u64)> + '_ {
        self.shards
            .iter()
            .flat_map(|s| s.iter().map(|(&p, s)| (p, s.count)))
    }

    /// Adds the changes of one thread to the shards, on the calling thread; the
    /// pairs that grew go to `grown`.
    pub(crate) fn apply(&mut self, d: &mut Deltas, grown: &mut Vec<Pair>) {
        let mask = self.mask;
        for (p, c) in d.dec.drain() {
            sub(&mut self.shards[shard_of(p, mask)], p, c);
        }
        for (p, (c, words)) in d.inc.drain() {
            add(&mut self.shards[shard_of(p, mask)], p, c, words);
            grown.push(p);
        }
    }

    /// Adds the changes of `deltas`, which [`Deltas::split`] sorted by shard, one
    /// thread per shard; the pairs that grew go to `grown`.
    pub(crate) fn apply_split(&mut self, deltas: &mut [Deltas], grown: &mut Vec<Pair>) {
        let n = self.shards.len();
        // Each shard's changes from every thread, in thread order, so each pair's
        // new postings come in word order. Moved, not copied; given back after.
        let mut columns: Vec<Vec<ShardDeltas>> = (0..n)
            .map(|s| {
                deltas
                    .iter_mut()
                    .map(|d| std::mem::take(&mut d.split[s]))
                    .collect()
            })
            .collect();
        let grew: Vec<Vec<Pair>> = self
            .shards
            .par_iter_mut()
            .zip(columns.par_iter_mut())
            .map(|(shard, column)| {
                let mut grew = Vec::new();
                for part in column.iter_mut() {
                    for (p, c) in part.dec.drain(..) {
                        sub(shard, p, c);
                    }
                }
                for part in column.iter_mut() {
                    for (p, c, words) in part.inc.drain(..) {
                        add(shard, p, c, words);
                        grew.push(p);
                    }
                }
                grew
            })
            .collect();
        for (s, column) in columns.into_iter().enumerate() {
            for (d, part) in deltas.iter_mut().zip(column) {
                d.split[s] = part;
            }
        }
        for g in grew {
            grown.extend_from_slice(&g);
        }
    }
}

/// `c` fewer of pair `p`, which holds no new token.
#[inline(always)]
fn sub(shard: &mut Shard, p: Pair, c: u64) {
    if let Some(e) = shard.get_mut(&p) {
        e.count -= c;
        if e.count == 0 {
            // Only pairs with the new token ever grow, so this pair is gone for good.
            shard.remove(&p);
        }
    }
}

/// `c` more of pair `p`, which holds the new token, in `words`.
#[inline(always)]
fn add(shard: &mut Shard, p: Pair, c: u64, words: Postings) {
    match shard.entry(p) {
        // Another thread's part of the same merge added the pair already.
        Entry::Occupied(e) => {
            let e = e.into_mut();
            e.count += c;
            e.postings.extend_from_slice(&words);
        }
        Entry::Vacant(e) => {
            e.insert(PairStats {
                count: c,
                postings: words,
            });
        }
    }
}

/// What one merge changes in the pair counts, gathered apart from the shared counts
/// and added to them once per pair. A merge's words hold few distinct pairs many times
/// over (the first merges of a 12 GB corpus touch millions of words and a few
/// thousand pairs): counted in a small table that stays in cache, the shared counts
/// are looked up once per pair rather than once per occurrence.
#[derive(Default)]
pub(crate) struct Deltas {
    /// Pairs that lose occurrences (none holds the new token), and how many.
    pub(crate) dec: FxMap<Pair, u64>,
    /// Pairs that gain occurrences (all hold the new token, so none existed before):
    /// how many, and the words that now hold them.
    pub(crate) inc: FxMap<Pair, (u64, Postings)>,
    /// The same changes sorted by shard ([`Deltas::split`]); kept between merges for
    /// the lists' capacity.
    split: Vec<ShardDeltas>,
}

/// One thread's changes to one shard.
#[derive(Default)]
struct ShardDeltas {
    dec: Vec<(Pair, u64)>,
    inc: Vec<(Pair, u64, Postings)>,
}

impl Deltas {
    /// Moves the changes into lists by shard, for [`PairCounts::apply_split`].
    pub(crate) fn split(&mut self, n_shards: usize) {
        self.split.resize_with(n_shards, ShardDeltas::default);
        let mask = n_shards - 1;
        for (p, c) in self.dec.drain() {
            self.split[shard_of(p, mask)].dec.push((p, c));
        }
        for (p, (c, words)) in self.inc.drain() {
            self.split[shard_of(p, mask)].inc.push((p, c, words));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::pack;

    #[test]
    fn shards_are_even_and_stable() {
        // Pairs as the merge loop makes them: small left and right ids.
        for n in [2usize, 4, 16, 64] {
            let mut sizes = vec![0usize; n];
            for a in 0..300u32 {
                for b in 0..300u32 {
                    sizes[shard_of(pack(a, b), n - 1)] += 1;
                }
            }
            let mean = 90_000 / n;
            assert!(
                sizes.iter().all(|&s| s.abs_diff(mean) < mean / 10),
                "{n} shards: {sizes:?}"
            );
        }
        assert_eq!(shard_of(pack(3, 4), 0), 0);
        assert_eq!(shards_for(0), 1);
        assert_eq!(shards_for(3), 4);
    }

    fn stats(count: u64, words: &[u32]) -> PairStats {
        PairStats {
            count,
            postings: words.iter().copied().collect(),
        }
    }

    /// The counts as one sorted list, whatever the shards.
    fn flat(c: &PairCounts) -> Vec<(Pair, u64, Vec<u32>)> {
        let mut v: Vec<_> = c
            .shards
            .iter()
            .flat_map(|s| s.iter().map(|(&p, s)| (p, s.count, s.postings.to_vec())))
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn split_apply_equals_serial_apply_for_any_shards() {
        let initial = |n: usize| {
            let mut part: Vec<Shard> = (0..n).map(|_| Shard::default()).collect();
            for (p, count, words) in [(pack(1, 2), 5, &[0u32, 3][..]), (pack(2, 3), 2, &[3])] {
                part[shard_of(p, n - 1)].insert(p, stats(count, words));
            }
            PairCounts::from_parts(vec![part], n)
        };
        let changes = |d: &mut Deltas, k: u64| {
            d.dec.insert(pack(1, 2), 1 + k);
            d.dec.insert(pack(2, 3), 1);
            d.inc
                .insert(pack(9, 3), (k + 1, [k as u32].into_iter().collect()));
        };
        let mut want = initial(1);
        let mut grown_serial = Vec::new();
        for k in 0..2 {
            let mut d = Deltas::default();
            changes(&mut d, k);
            want.apply(&mut d, &mut grown_serial);
        }
        for n in [1, 2, 4, 8] {
            let mut got = initial(n);
            let mut deltas: Vec<Deltas> = (0..2).map(|_| Deltas::default()).collect();
            for (k, d) in deltas.iter_mut().enumerate() {
                changes(d, k as u64);
                d.split(n);
            }
            let mut grown = Vec::new();
            got.apply_split(&mut deltas, &mut grown);
            assert_eq!(flat(&got), flat(&want), "{n} shards");
            // (2, 3) fell to 0 and is gone; (9, 3) grew once per thread.
            assert_eq!(flat(&got).len(), 2);
            assert_eq!(grown, [pack(9, 3), pack(9, 3)]);
            assert!(deltas.iter().all(|d| d.split.len() == n));
        }
    }

    #[test]
    fn parts_add_up_in_word_order() {
        for n in [1, 2, 4] {
            let part = |count: u64, words: &[u32]| {
                let mut part: Vec<Shard> = (0..n).map(|_| Shard::default()).collect();
                part[shard_of(pack(1, 2), n - 1)].insert(pack(1, 2), stats(count, words));
                part
            };
            let c = PairCounts::from_parts(vec![part(2, &[0, 1]), part(3, &[5, 6])], n);
            assert_eq!(flat(&c), [(pack(1, 2), 5, vec![0, 1, 5, 6])]);
            assert_eq!(c.get(pack(1, 2)).map(|s| s.count), Some(5));
            assert_eq!(c.counts().count(), 1);
        }
    }
}
