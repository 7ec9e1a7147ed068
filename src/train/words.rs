//! The words being merged, their pair counts, and the postings that say which
//! words hold a pair, with the fine-grained update of one merge.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::Relaxed;

use rayon::prelude::*;
use smallvec::SmallVec;

use crate::count::FxMap;
use crate::ids::{pack, Pair};

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

/// One word's place in the arena and its count. Kept together because a merge
/// reads all of them for each posting: one cache miss instead of four. `len` and
/// `stamp` are atomics, read and written with plain loads and stores, because the
/// threads of a large merge share the slice: each writes only the words of its own
/// range of ids.
struct WordMeta {
    count: u64,
    start: u32,
    len: AtomicU32,
    /// The merge number that last touched the word, to skip repeated postings.
    stamp: AtomicU32,
}

/// All multi-symbol words in one arena: word `w` is `syms[start..start + len]`.
pub(crate) struct Words {
    syms: Vec<u32>,
    meta: Vec<WordMeta>,
}

/// What one merge changes in the pair counts, gathered apart from the shared map and
/// added to it once per pair ([`Deltas::apply`]). A merge's words hold few distinct
/// pairs many times over (the first merges of a 12 GB corpus touch millions of words
/// and a few thousand pairs): counted in a small table that stays in cache, the
/// shared map is looked up once per pair rather than once per occurrence.
#[derive(Default)]
pub(crate) struct Deltas {
    /// Pairs that lose occurrences (none holds the new token), and how many.
    dec: FxMap<Pair, u64>,
    /// Pairs that gain occurrences (all hold the new token, so none existed before):
    /// how many, and the words that now hold them.
    inc: FxMap<Pair, (u64, Postings)>,
    /// The words a thread merges (kept between merges for its capacity).
    words: Vec<u32>,
}

impl Deltas {
    /// Adds the changes to `pairs`; the pairs that grew go to `grown`.
    fn apply(&mut self, pairs: &mut FxMap<Pair, PairStats>, grown: &mut Vec<Pair>) {
        for (p, c) in self.dec.drain() {
            if let Some(e) = pairs.get_mut(&p) {
                e.count -= c;
                if e.count == 0 {
                    // Only pairs with the new token ever grow, so this pair is gone for good.
                    pairs.remove(&p);
                }
            }
        }
        for (p, (c, words)) in self.inc.drain() {
            let e = pairs.entry(p).or_default();
            e.count += c;
            if e.postings.is_empty() {
                e.postings = words;
            } else {
                e.postings.extend_from_slice(&words);
            }
            grown.push(p);
        }
    }
}

/// Postings a merge splits among threads from this many on: below it, a fork-join
/// costs about what it saves. On the 12 GB corpus (32K merges), the 31K merges below
/// 16K postings took 2-3 s on one thread; below 2K, 0.7 s.
const PARALLEL_POSTINGS: usize = 2 << 10;

/// The arena and the words' places, shared by the threads of one large merge. Each
/// word is written by the one thread whose range of ids holds it, and words
/// do not overlap in the arena.
struct SharedArena {
    syms: *mut u32,
    len: usize,
}

// SAFETY: threads write only the words of their own ids, which are disjoint ranges.
unsafe impl Sync for SharedArena {}

impl Words {
    /// Words of one byte never form a pair, so they are left out.
    pub(crate) fn new<'a>(words: impl Iterator<Item = (&'a [u8], u64)>) -> Self {
        let mut w = Words {
            syms: Vec::new(),
            meta: Vec::new(),
        };
        let mut list: Vec<(&[u8], u64)> = words.filter(|(b, _)| b.len() >= 2).collect();
        // Sorted so that words sharing a prefix, and so most of their pairs, sit side
        // by side: a merge's postings then walk the arena nearly in order (measured:
        // 25-40% faster merging than map order on en/en-small).
        list.par_sort_unstable();
        for (bytes, c) in list {
            w.meta.push(WordMeta {
                count: c,
                start: w.syms.len() as u32,
                len: AtomicU32::new(bytes.len() as u32),
                stamp: AtomicU32::new(u32::MAX),
            });
            w.syms.extend(bytes.iter().map(|&b| u32::from(b)));
        }
        w
    }

    /// Every pair's count and the words that hold it (each word once, in word
    /// order). Counted over consecutive runs of words in parallel, then added up in
    /// order, so each pair's postings stay in word order.
    pub(crate) fn count_pairs(&self) -> FxMap<Pair, PairStats> {
        let per = self
            .meta
            .len()
            .div_ceil(rayon::current_num_threads())
            .max(1 << 16);
        let mut parts: Vec<FxMap<Pair, PairStats>> = self
            .meta
            .par_chunks(per)
            .enumerate()
            .map(|(k, chunk)| self.count_pairs_of(k * per, chunk))
            .collect();
        let mut pairs = match parts.is_empty() {
            true => return FxMap::default(),
            false => parts.remove(0),
        };
        for part in parts {
            for (p, s) in part {
                let e = pairs.entry(p).or_default();
                e.count += s.count;
                e.postings.extend_from_slice(&s.postings);
            }
        }
        pairs
    }

    /// [`Words::count_pairs`] of the words `first..` whose places are `meta`.
    fn count_pairs_of(&self, first: usize, meta: &[WordMeta]) -> FxMap<Pair, PairStats> {
        let mut pairs: FxMap<Pair, PairStats> = FxMap::default();
        for (k, m) in meta.iter().enumerate() {
            let w = (first + k) as u32;
            let len = m.len.load(Relaxed);
            let s = &self.syms[m.start as usize..(m.start + len) as usize];
            for p in s.windows(2) {
                let e = pairs.entry(pack(p[0], p[1])).or_default();
                e.count += m.count;
                if e.postings.last() != Some(&w) {
                    e.postings.push(w);
                }
            }
        }
        pairs
    }

    /// Replaces every `(a, b)` in the words of `postings` by `new`, left to right,
    /// updating only the pair counts that change. Afterwards `pairs` holds no `(a, b)`.
    /// Pairs that gain count (all contain `new`) are appended to `grown`. A merge of
    /// [`PARALLEL_POSTINGS`] words or more is split among the pool's threads; the
    /// counts are sums, so the result is the same.
    pub(crate) fn merge(
        &mut self,
        postings: &[u32],
        Merge {
            a,
            b,
            new,
            no: merge_no,
        }: Merge,
        pairs: &mut FxMap<Pair, PairStats>,
        deltas: &mut [Deltas],
        grown: &mut Vec<Pair>,
    ) {
        let threads = rayon::current_num_threads().min(deltas.len()).max(1);
        let arena = SharedArena {
            syms: self.syms.as_mut_ptr(),
            len: self.syms.len(),
        };
        let meta = &self.meta;
        let ids = (a, b, new);
        if threads < 2 || postings.len() < PARALLEL_POSTINGS {
            // SAFETY: `&mut self`: no other thread touches the words.
            unsafe { merge_words(meta, &arena, postings, ids, merge_no, &mut deltas[0]) };
            deltas[0].apply(pairs, grown);
            return;
        }
        // Each thread takes the words of one range of ids, so no two threads ever
        // touch one word (postings may name a word twice). The ranges split a sample
        // of the postings evenly.
        let step = (postings.len() / 256).max(1);
        let mut sample: Vec<u32> = postings.iter().step_by(step).copied().collect();
        sample.sort_unstable();
        let bounds: Vec<u32> = (0..=threads)
            .map(|t| match t {
                0 => 0,
                t if t == threads => u32::MAX,
                t => sample[t * sample.len() / threads],
            })
            .collect();
        deltas[..threads]
            .par_iter_mut()
            .enumerate()
            .for_each(|(t, d)| {
                let (lo, hi) = (bounds[t], bounds[t + 1]);
                let mut mine = std::mem::take(&mut d.words);
                mine.clear();
                mine.extend(postings.iter().copied().filter(|&w| (lo..hi).contains(&w)));
                // SAFETY: this thread alone merges the words of ids lo..hi; `&mut self`
                // is held for the whole of the parallel section.
                unsafe { merge_words(meta, &arena, &mine, ids, merge_no, d) };
                d.words = mine;
            });
        for d in &mut deltas[..threads] {
            d.apply(pairs, grown);
        }
    }
}

/// One merge: `(a, b)` becomes `new`; `no` numbers it, so that a word listed twice
/// in the postings is merged once (its stamp).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Merge {
    pub(crate) a: u32,
    pub(crate) b: u32,
    pub(crate) new: u32,
    pub(crate) no: u32,
}

/// Postings looked ahead: a word's place is fetched `2 * AHEAD` postings before it is
/// merged, its symbols `AHEAD` before. A merge is two cache misses per word (its place,
/// then its symbols: 35% and 50% of merging's samples on the 12 GB corpus), which the
/// prefetches overlap.
const AHEAD: usize = 8;

/// [`merge_word`] of each word of `postings`, prefetching ahead.
///
/// # Safety
/// As [`merge_word`], for every word of `postings`.
unsafe fn merge_words(
    meta: &[WordMeta],
    arena: &SharedArena,
    postings: &[u32],
    ids: (u32, u32, u32),
    merge_no: u32,
    d: &mut Deltas,
) {
    for (k, &w) in postings.iter().enumerate() {
        if let Some(&far) = postings.get(k + 2 * AHEAD) {
            prefetch(&meta[far as usize] as *const WordMeta);
        }
        if let Some(&near) = postings.get(k + AHEAD) {
            let start = meta[near as usize].start as usize;
            if start < arena.len {
                prefetch(arena.syms.wrapping_add(start));
            }
        }
        // SAFETY: the caller's.
        unsafe { merge_word(meta, arena, w, ids, merge_no, d) };
    }
}

#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Merges `(a, b)` into `new` in word `w`, unless another posting of this merge did
/// already, adding the changes of its pairs to `d`.
///
/// # Safety
/// `arena` points at the words' symbols, `meta` their places; no other thread may
/// touch word `w` while this runs (each thread of a merge owns a range of ids).
unsafe fn merge_word(
    meta: &[WordMeta],
    arena: &SharedArena,
    w: u32,
    (a, b, new): (u32, u32, u32),
    merge_no: u32,
    d: &mut Deltas,
) {
    let meta = &meta[w as usize];
    if meta.stamp.load(Relaxed) == merge_no {
        return;
    }
    meta.stamp.store(merge_no, Relaxed);
    let c = meta.count;
    let start = meta.start as usize;
    let n = meta.len.load(Relaxed) as usize;
    let merged = pack(a, b);
    assert!(start + n <= arena.len);
    // SAFETY: this thread owns word `w` (above), whose symbols are this range.
    let s = unsafe { std::slice::from_raw_parts_mut(arena.syms.add(start), n) };
    let Deltas {
        dec: decs,
        inc: incs,
        ..
    } = d;
    let mut dec = |p: Pair| {
        if p != merged {
            *decs.entry(p).or_default() += c;
        }
    };
    let mut inc = |p: Pair| {
        let e = incs.entry(p).or_default();
        e.0 += c;
        if e.1.last() != Some(&w) {
            e.1.push(w);
        }
    };
    // In place: the write index j never passes the read index i, and s[i - 1]
    // still holds the old left neighbour (if j == i nothing merged yet, so the
    // prefix is unchanged; if j < i, position i - 1 is not yet written).
    let (mut i, mut j) = (0, 0);
    while i < n {
        if i + 1 < n && s[i] == a && s[i + 1] == b {
            if i > 0 {
                dec(pack(s[i - 1], a));
                inc(pack(s[j - 1], new));
            }
            if i + 2 < n {
                // When another (a, b) follows at once, its left side owns the pair between.
                let next_merges = i + 3 < n && s[i + 2] == a && s[i + 3] == b;
                if !next_merges {
                    dec(pack(b, s[i + 2]));
                    inc(pack(new, s[i + 2]));
                }
            }
            s[j] = new;
            i += 2;
        } else {
            s[j] = s[i];
            i += 1;
        }
        j += 1;
    }
    meta.len.store(j as u32, Relaxed);
}
