//! The words being merged, their pair counts, and the postings that say which
//! words hold a pair, with the fine-grained update of one merge.

use super::queue::{pack, Pair};
use crate::count::FxMap;

/// What the merge loop knows about a pair.
#[derive(Default)]
pub struct PairStats {
    pub count: u64,
    /// Words that held the pair when it was last seen; may hold stale or
    /// repeated entries, which the merge skips.
    pub postings: Vec<u32>,
}

/// All multi-symbol words in one arena: word `w` is `syms[start[w]..start[w] + len[w]]`.
pub struct Words {
    syms: Vec<u32>,
    start: Vec<u32>,
    len: Vec<u32>,
    count: Vec<u64>,
    /// The merge number that last touched each word, to skip repeated postings.
    stamp: Vec<u32>,
}

impl Words {
    /// Words of one byte never form a pair, so they are left out.
    pub fn new<'a>(words: impl Iterator<Item = (&'a [u8], u64)>) -> Self {
        let mut w = Words {
            syms: Vec::new(),
            start: Vec::new(),
            len: Vec::new(),
            count: Vec::new(),
            stamp: Vec::new(),
        };
        let mut list: Vec<(&[u8], u64)> = words.filter(|(b, _)| b.len() >= 2).collect();
        // A fixed order makes postings, and so the run, the same whatever the map order.
        list.sort_unstable();
        for (bytes, c) in list {
            w.start.push(w.syms.len() as u32);
            w.len.push(bytes.len() as u32);
            w.count.push(c);
            w.syms.extend(bytes.iter().map(|&b| u32::from(b)));
        }
        w.stamp = vec![u32::MAX; w.count.len()];
        w
    }

    pub fn count_pairs(&self) -> FxMap<Pair, PairStats> {
        let mut pairs: FxMap<Pair, PairStats> = FxMap::default();
        for w in 0..self.count.len() {
            let s = self.word(w);
            for p in s.windows(2) {
                let e = pairs.entry(pack(p[0], p[1])).or_default();
                e.count += self.count[w];
                if e.postings.last() != Some(&(w as u32)) {
                    e.postings.push(w as u32);
                }
            }
        }
        pairs
    }

    fn word(&self, w: usize) -> &[u32] {
        let s = self.start[w] as usize;
        &self.syms[s..s + self.len[w] as usize]
    }

    /// Replaces every `(a, b)` in the words of `postings` by `new`, left to right,
    /// updating only the pair counts that change. `pairs` no longer holds `(a, b)`.
    /// Pairs that gain count (all contain `new`) are appended to `grown`.
    #[allow(clippy::too_many_arguments)]
    pub fn merge(
        &mut self,
        postings: &[u32],
        a: u32,
        b: u32,
        new: u32,
        merge_no: u32,
        pairs: &mut FxMap<Pair, PairStats>,
        grown: &mut Vec<Pair>,
        scratch: &mut Vec<u32>,
    ) {
        let merged = pack(a, b);
        let dec = |pairs: &mut FxMap<Pair, PairStats>, p: Pair, c: u64| {
            if p == merged {
                return;
            }
            if let Some(e) = pairs.get_mut(&p) {
                e.count -= c;
                if e.count == 0 {
                    // Only pairs with the new token ever grow, so this pair is gone for good.
                    pairs.remove(&p);
                }
            }
        };
        let inc =
            |pairs: &mut FxMap<Pair, PairStats>, grown: &mut Vec<Pair>, p: Pair, c: u64, w: u32| {
                let e = pairs.entry(p).or_default();
                e.count += c;
                if e.postings.last() != Some(&w) {
                    e.postings.push(w);
                }
                grown.push(p);
            };
        for &w in postings {
            let wi = w as usize;
            if self.stamp[wi] == merge_no {
                continue;
            }
            self.stamp[wi] = merge_no;
            let c = self.count[wi];
            let start = self.start[wi] as usize;
            let n = self.len[wi] as usize;
            scratch.clear();
            scratch.extend_from_slice(&self.syms[start..start + n]);
            let old = &scratch[..];
            let out = &mut self.syms[start..start + n];
            let (mut i, mut j) = (0, 0);
            while i < n {
                if i + 1 < n && old[i] == a && old[i + 1] == b {
                    if i > 0 {
                        dec(pairs, pack(old[i - 1], a), c);
                        inc(pairs, grown, pack(out[j - 1], new), c, w);
                    }
                    if i + 2 < n {
                        // When another (a, b) follows at once, its left side owns the pair between.
                        let next_merges = i + 3 < n && old[i + 2] == a && old[i + 3] == b;
                        if !next_merges {
                            dec(pairs, pack(b, old[i + 2]), c);
                            inc(pairs, grown, pack(new, old[i + 2]), c, w);
                        }
                    }
                    out[j] = new;
                    i += 2;
                } else {
                    out[j] = old[i];
                    i += 1;
                }
                j += 1;
            }
            self.len[wi] = j as u32;
        }
    }
}
