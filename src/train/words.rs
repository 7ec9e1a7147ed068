//! The words being merged, their pair counts, and the postings that say which
//! words hold a pair, with the fine-grained update of one merge.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::Relaxed;

use rayon::prelude::*;

use super::pairs::{shard_of, Deltas, PairCounts, PairStats, Shard};
use crate::ids::{pack, Pair};

/// One word's place in the arena and its count. Kept together because a merge
/// reads all of them for each posting: one cache miss instead of four. `len` and
/// `stamp` are atomics because the threads of a large merge share the slice: the
/// thread that swaps a word's stamp to the merge's number owns the word for that
/// merge (postings may name a word twice, in two threads' runs).
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

/// Postings a merge splits among threads from this many on: below it, a fork-join
/// costs about what it saves. On the 12 GB corpus (32K merges), the 31K merges below
/// 16K postings took 2-3 s on one thread; below 2K, 0.7 s.
const PARALLEL_POSTINGS: usize = 2 << 10;

/// The arena and the words' places, shared by the threads of one large merge. Each
/// word is written by the one thread that claimed it (its stamp), and words do not
/// overlap in the arena.
struct SharedArena {
    syms: *mut u32,
    len: usize,
}

// SAFETY: a thread writes only the words it claimed, and each word is claimed by one
// thread per merge (an atomic swap of its stamp).
unsafe impl Sync for SharedArena {}

impl Words {
    /// Words of one byte never form a pair, so they are left out.
    pub(crate) fn new<'a>(words: impl Iterator<Item = (&'a [u8], u64)>) -> Self {
        let mut list: Vec<(&[u8], u64)> = words.filter(|(b, _)| b.len() >= 2).collect();
        // Sorted so that words sharing a prefix, and so most of their pairs, sit side
        // by side: a merge's postings then walk the arena nearly in order (measured:
        // 25-40% faster merging than map order on en/en-small).
        list.par_sort_unstable();
        // The places are a prefix sum; the arena is filled a run of words per task
        // (the caller checked that the words' bytes fit in a u32).
        let mut starts: Vec<u32> = Vec::with_capacity(list.len());
        let mut total = 0usize;
        for (bytes, _) in &list {
            starts.push(total as u32);
            total += bytes.len();
        }
        let meta: Vec<WordMeta> = list
            .par_iter()
            .zip(starts.par_iter())
            .map(|(&(bytes, count), &start)| WordMeta {
                count,
                start,
                len: AtomicU32::new(bytes.len() as u32),
                stamp: AtomicU32::new(u32::MAX),
            })
            .collect();
        let mut syms = vec![0u32; total];
        let per = list
            .len()
            .div_ceil(4 * rayon::current_num_threads())
            .max(1 << 14);
        let mut runs = Vec::with_capacity(list.len().div_ceil(per));
        let mut rest = syms.as_mut_slice();
        for run in list.chunks(per) {
            let n: usize = run.iter().map(|(b, _)| b.len()).sum();
            let (here, after) = rest.split_at_mut(n);
            runs.push((run, here));
            rest = after;
        }
        runs.into_par_iter().for_each(|(run, mut out)| {
            for (bytes, _) in run {
                let (here, after) = out.split_at_mut(bytes.len());
                for (o, &b) in here.iter_mut().zip(bytes.iter()) {
                    *o = u32::from(b);
                }
                out = after;
            }
        });
        Words { syms, meta }
    }

    /// Every pair's count and the words that hold it (each word once, in word
    /// order), in `n_shards` shards. Counted over consecutive runs of words in
    /// parallel, then each shard added up in order, so each pair's postings stay in
    /// word order.
    pub(crate) fn count_pairs(&self, n_shards: usize) -> PairCounts {
        let per = self
            .meta
            .len()
            .div_ceil(rayon::current_num_threads())
            .max(1 << 16);
        let parts: Vec<Vec<Shard>> = self
            .meta
            .par_chunks(per)
            .enumerate()
            .map(|(k, chunk)| self.count_pairs_of(k * per, chunk, n_shards))
            .collect();
        PairCounts::from_parts(parts, n_shards)
    }

    /// [`Words::count_pairs`] of the words `first..` whose places are `meta`.
    fn count_pairs_of(&self, first: usize, meta: &[WordMeta], n_shards: usize) -> Vec<Shard> {
        let mut shards: Vec<Shard> = (0..n_shards).map(|_| Shard::default()).collect();
        match shards.as_mut_slice() {
            // One thread: the plain map, without a shard to pick per pair.
            [one] => self.add_pairs(first, meta, One(one)),
            many => self.add_pairs(first, meta, Many(many)),
        }
        shards
    }

    /// Adds the pairs of the words `first..` whose places are `meta` to the shards.
    #[inline(always)]
    fn add_pairs(&self, first: usize, meta: &[WordMeta], mut shards: impl PickShard) {
        for (k, m) in meta.iter().enumerate() {
            let w = (first + k) as u32;
            let len = m.len.load(Relaxed);
            let s = &self.syms[m.start as usize..(m.start + len) as usize];
            for p in s.windows(2) {
                let p = pack(p[0], p[1]);
                let e: &mut PairStats = shards.pick(p).entry(p).or_default();
                e.count += m.count;
                if e.postings.last() != Some(&w) {
                    e.postings.push(w);
                }
            }
        }
    }

    /// Replaces every `(a, b)` in the words of `postings` by `new`, left to right,
    /// updating only the pair counts that change. Afterwards `pairs` holds no `(a, b)`.
    /// Pairs that gain count (all contain `new`) are appended to `grown`. A merge of
    /// [`PARALLEL_POSTINGS`] words or more is split among the pool's threads, and its
    /// changes are added to the counts a shard per thread; the counts are sums, so the
    /// result is the same.
    pub(crate) fn merge(
        &mut self,
        postings: &[u32],
        Merge {
            a,
            b,
            new,
            no: merge_no,
        }: Merge,
        pairs: &mut PairCounts,
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
            unsafe { merge_words::<false>(meta, &arena, postings, ids, merge_no, &mut deltas[0]) };
            pairs.apply(&mut deltas[0], grown);
            return;
        }
        // Each thread takes one run of the postings and merges the words it claims
        // (a word named in two runs is merged by the thread that claims it first).
        // Runs rather than ranges of word ids: no thread reads every posting to find
        // its own, and the postings, mostly in word order, give each thread nearby
        // words.
        let n_shards = pairs.n_shards();
        let per = postings.len().div_ceil(threads);
        deltas[..threads]
            .par_iter_mut()
            .zip(postings.par_chunks(per))
            .for_each(|(d, run)| {
                // SAFETY: this thread merges only the words it claims; `&mut self` is
                // held for the whole of the parallel section.
                unsafe { merge_words::<true>(meta, &arena, run, ids, merge_no, d) };
                d.split(n_shards);
            });
        pairs.apply_split(&mut deltas[..threads], grown);
    }
}

/// The shard a pair is counted in: the one map, or one of many.
trait PickShard {
    fn pick(&mut self, p: Pair) -> &mut Shard;
}

struct One<'a>(&'a mut Shard);

impl PickShard for One<'_> {
    #[inline(always)]
    fn pick(&mut self, _: Pair) -> &mut Shard {
        self.0
    }
}

struct Many<'a>(&'a mut [Shard]);

impl PickShard for Many<'_> {
    #[inline(always)]
    fn pick(&mut self, p: Pair) -> &mut Shard {
        let mask = self.0.len() - 1;
        &mut self.0[shard_of(p, mask)]
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

/// [`merge_word`] of each word of `postings`, prefetching ahead. Not inlined: inlined
/// into the merge loop it ran 1% more instructions for the whole training
/// (cachegrind, en-small's counts, 1 thread), its loop short of registers.
///
/// # Safety
/// As [`merge_word`], for every word of `postings`.
#[inline(never)]
unsafe fn merge_words<const SHARED: bool>(
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
        unsafe { merge_word::<SHARED>(meta, arena, w, ids, merge_no, d) };
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
/// already, adding the changes of its pairs to `d`. `SHARED`: other threads merge
/// words of the same merge, so the word is claimed by an atomic swap of its stamp
/// (alone, a plain load and store do, which cost less).
///
/// # Safety
/// `arena` points at the words' symbols, `meta` their places. Without `SHARED`, no
/// other thread may touch any word while this runs; with it, other threads may touch
/// only the words they claim through their stamps in the same way.
unsafe fn merge_word<const SHARED: bool>(
    meta: &[WordMeta],
    arena: &SharedArena,
    w: u32,
    (a, b, new): (u32, u32, u32),
    merge_no: u32,
    d: &mut Deltas,
) {
    let meta = &meta[w as usize];
    if SHARED {
        // One swap per word and merge: exactly one thread sees the old stamp.
        if meta.stamp.swap(merge_no, Relaxed) == merge_no {
            return;
        }
    } else {
        if meta.stamp.load(Relaxed) == merge_no {
            return;
        }
        meta.stamp.store(merge_no, Relaxed);
    }
    let c = meta.count;
    let start = meta.start as usize;
    let n = meta.len.load(Relaxed) as usize;
    let merged = pack(a, b);
    assert!(start + n <= arena.len);
    // SAFETY: this thread owns word `w` (its stamp, above), whose symbols are this
    // range.
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
