//! The pair table: `(left, right)` -> the rank of their merge, built once per
//! vocabulary and read by every piece that no cache holds yet.
//!
//! Why this shape (`tools/miss_bench.rs`, the 526k distinct pieces of the 116 MB
//! English corpus, in the order they first occur): merging them is the cost of a
//! cold encode, and nearly all of it is pair lookups that miss the L1 cache. A
//! hashbrown map of `u64 -> (rank, id)` read a control group and then a 16-byte
//! bucket: two dependent loads in tables of 5 MB (gpt2) to 40 MB (o200k, whose
//! tiktoken ranks give 1.4M pairs, one per split of each token). Here:
//!
//! - the first lookups of a piece are between single bytes, and read a dense
//!   256 x 256 grid indexed by the bytes themselves (256 KB, warm in L2);
//! - every other lookup reads one `u64` slot (`rank | left | right` packed) of a
//!   linear-probing table at load under 0.7, so it nearly always touches one line;
//! - the merged id is looked up only for the pair that merges (for tiktoken ranks
//!   it is the rank itself, and for most `tokenizer.json` files the rank plus a
//!   constant, which needs no table either).

use crate::error::{Error, Result};
use crate::hugemem::ZeroedBuf;

use crate::ids::{ID_BITS, NONE};

const KEY_MASK: u64 = (1 << (2 * ID_BITS)) - 1;
/// A free slot. Its key bits are `(2^21 - 1, 2^21 - 1)`, which no pair of valid ids
/// has, so a lookup's key comparison never matches it.
const EMPTY: u64 = u64::MAX;
pub use crate::ids::MAX_IDS;

#[inline]
fn packed_key(left: u32, right: u32) -> u64 {
    (u64::from(left) << ID_BITS) | u64::from(right)
}

/// `NONE` as stored in a [`PairCache`] slot's 22 rank bits (no real rank reaches it).
const RANK_NONE: u32 = (1 << 22) - 1;

/// Filter bits per pair of a [`PairTable`] (with two bits set a pair, about 1 in 12
/// pairs that do not merge reads as "may"), up to [`FILTER_MAX_WORDS`].
const FILTER_BITS_PER_PAIR: usize = 8;
/// 1 MB: o200k's 1.4M pairs get 5.7 bits each (1 in 7).
const FILTER_MAX_WORDS: usize = 1 << 17;

/// `log2` of a [`PairCache`]'s slots: 256 KB, which stays in L2.
const CACHE_BITS: u32 = 15;

/// Recent pair lookups of one thread, found or not, direct-mapped.
///
/// Why: a cold encode merges each new piece, and nearly all of that time is pair
/// lookups that miss the caches: o200k's table is 16 MB. The pairs of common
/// fragments recur from piece to piece, and a small table of recent answers serves
/// them from L2 (`miss_bench`, en-small, o200k: merge ~480 -> ~420 ns a piece; a
/// first `encode` of en-small ~132 -> ~143 MB/s; gpt2, whose table is 4 MB,
/// unchanged).
#[derive(Debug)]
pub struct PairCache {
    /// `rank << 42 | left << 21 | right` (rank [`RANK_NONE`] when the pair does not
    /// merge), or [`PairCache::EMPTY`].
    slots: Box<[u64]>,
    /// The [`PairTable::id`] these answers came from (0: none), so that a cache is
    /// never read for another table.
    owner: u64,
}

impl PairCache {
    /// Key bits of no valid pair: an empty slot never matches.
    const EMPTY: u64 = u64::MAX;

    /// Forgets every answer unless they came from `table`.
    #[inline]
    pub fn bind(&mut self, table: &PairTable) {
        if self.owner != table.id {
            self.slots.fill(Self::EMPTY);
            self.owner = table.id;
        }
    }
}

impl PairCache {
    /// A cache, or `None` where its memory cannot be had.
    pub fn try_new() -> Option<Self> {
        let mut slots = Vec::new();
        slots.try_reserve_exact(1 << CACHE_BITS).ok()?;
        slots.resize(1 << CACHE_BITS, Self::EMPTY);
        Some(Self {
            slots: slots.into_boxed_slice(),
            owner: 0,
        })
    }
}

impl Default for PairCache {
    fn default() -> Self {
        Self::try_new().unwrap_or_else(|| panic!("out of memory for a pair cache"))
    }
}

/// The id each rank's merge makes.
#[derive(Debug)]
enum Merged {
    /// The rank plus this (0 for tiktoken ranks, where the rank is the id; 256 for
    /// OLMo 2's `tokenizer.json`, 245 for GPT-NeoX's).
    Offset(u32),
    /// Any other order, by rank.
    Ids(Vec<u32>),
}

impl Merged {
    /// `ids` (`None`: the rank is the id) as an offset where every id is its rank
    /// plus one constant.
    ///
    /// Why: the merged id was the one load of a merge that no cache served (an array
    /// of 400 KB for OLMo 2, read at random), 11% of the merge loop's samples in a
    /// cold encode of the multilingual corpus.
    fn new(ids: Option<Vec<u32>>) -> Self {
        let Some(ids) = ids else {
            return Self::Offset(0);
        };
        let offset = ids.first().map_or(0, |&id| id);
        let same = ids
            .iter()
            .enumerate()
            .all(|(rank, &id)| u64::from(id) == rank as u64 + u64::from(offset));
        match same {
            true => Self::Offset(offset),
            false => Self::Ids(ids),
        }
    }
}

static NEXT_TABLE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

#[derive(Debug)]
pub struct PairTable {
    /// Rank of merging the tokens of bytes `a` and `b`, at `a << 8 | b` (`NONE`: none).
    byte_pairs: Box<[u32]>,
    /// `rank << 42 | left << 21 | right`, or [`EMPTY`], stored XOR [`EMPTY`] so that
    /// zeroed (huge) pages are free slots.
    slots: ZeroedBuf<u64>,
    /// `64 - log2(slots.len())`: the hash keeps the top bits of a product.
    shift: u32,
    /// The id each rank's merge makes.
    merged: Merged,
    /// Unique to this table in the process, never 0 (for [`PairCache::bind`]).
    id: u64,
    /// Which pairs may merge, as two bits of one word each (a blocked Bloom filter):
    /// a pair with either bit clear is in no slot, and needs no probe of the table.
    ///
    /// Why: most lookups of a merge are of pairs that do not merge (the new
    /// neighbours of a merged part), and those the pair cache has not seen probed a
    /// table of megabytes (2 MB for OLMo 2, 16 MB for o200k) that sits in L3 at best;
    /// the filter, 8 bits a pair up to 1 MB, is read from L2.
    filter: Box<[u64]>,
    /// `64 - log2(filter.len())`.
    filter_shift: u32,
}

impl PairTable {
    /// From `(left, right, rank)` with no pair twice; `merged[rank]` is the id that
    /// rank makes (`None`: the rank is the id). `byte_ids` are the ids of the bytes.
    pub fn new(
        pairs: &[(u32, u32, u32)],
        merged: Option<Vec<u32>>,
        byte_ids: &[u32; 256],
    ) -> Result<Self> {
        Self::from_parts(&[pairs], merged, byte_ids)
    }

    /// [`PairTable::new`] of the pairs of all `parts`, in order (the parts found in
    /// parallel, inserted without first being copied into one list).
    pub fn from_parts<P: AsRef<[(u32, u32, u32)]>>(
        parts: &[P],
        merged: Option<Vec<u32>>,
        byte_ids: &[u32; 256],
    ) -> Result<Self> {
        let pairs = parts.iter().flat_map(|p| p.as_ref());
        let n_pairs: usize = parts.iter().map(|p| p.as_ref().len()).sum();
        let too_big = |what: &str, n: u32| {
            Error::invalid(format!(
                "{what} {n} is too large: vocabularies of up to {MAX_IDS} tokens are supported"
            ))
        };
        let n_slots = (n_pairs * 10 / 7 + 1).next_power_of_two().max(16);
        let filter_words = (n_pairs * FILTER_BITS_PER_PAIR / 64)
            .next_power_of_two()
            .clamp(2, FILTER_MAX_WORDS);
        let mut table = Self {
            byte_pairs: vec![NONE; 1 << 16].into_boxed_slice(),
            slots: ZeroedBuf::huge(n_slots),
            shift: 64 - n_slots.trailing_zeros(),
            merged: Merged::new(merged),
            id: NEXT_TABLE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            filter: vec![0; filter_words].into_boxed_slice(),
            filter_shift: 64 - filter_words.trailing_zeros(),
        };
        for &(left, right, rank) in pairs {
            for id in [left, right] {
                if id as usize >= MAX_IDS {
                    return Err(too_big("token id", id));
                }
            }
            // Ranks are below 2^22 - 1 with ids below 2^21 - 1, so a slot never
            // equals EMPTY.
            if rank as usize >= 2 * MAX_IDS {
                return Err(too_big("merge rank", rank));
            }
            let key = packed_key(left, right);
            let (word, bits) = table.filter_bits(key);
            table.filter[word] |= bits;
            let mut i = table.home(key);
            let slots = table.slots.as_mut_slice();
            while slots[i] != 0 {
                i = (i + 1) & (n_slots - 1);
            }
            slots[i] = ((u64::from(rank) << (2 * ID_BITS)) | key) ^ EMPTY;
        }
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let (l, r) = (byte_ids[a as usize], byte_ids[b as usize]);
                // A vocabulary of characters may lack a byte's token.
                let rank = match l == NONE || r == NONE {
                    true => NONE,
                    false => table.rank(l, r),
                };
                table.byte_pairs[(usize::from(a) << 8) | usize::from(b)] = rank;
            }
        }
        Ok(table)
    }

    /// The filter word of `key` and its two bits there.
    #[inline(always)]
    fn filter_bits(&self, key: u64) -> (usize, u64) {
        let h = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let word = (h >> self.filter_shift) as usize;
        (word, (1 << (h & 63)) | (1 << ((h >> 6) & 63)))
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The rank of merging `left` and `right` (valid ids), or `NONE`.
    #[inline]
    pub fn rank(&self, left: u32, right: u32) -> u32 {
        debug_assert!((left as usize) < MAX_IDS && (right as usize) < MAX_IDS);
        let key = packed_key(left, right) & KEY_MASK;
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            // SAFETY: `i` is masked into the table, whose length is a power of two.
            let slot = unsafe { *self.slots.as_slice().get_unchecked(i) } ^ EMPTY;
            if slot & KEY_MASK == key {
                return (slot >> (2 * ID_BITS)) as u32;
            }
            if slot == EMPTY {
                return NONE;
            }
            i = (i + 1) & mask;
        }
    }

    /// [`PairTable::rank`] through `cache` (bound to this table with
    /// [`PairCache::bind`]).
    #[inline]
    pub fn rank_cached(&self, left: u32, right: u32, cache: &mut PairCache) -> u32 {
        debug_assert_eq!(cache.owner, self.id);
        let key = packed_key(left, right) & KEY_MASK;
        let i = cache_index(key);
        // SAFETY: `cache_index` is below 2^CACHE_BITS, the cache's length.
        let slot = unsafe { cache.slots.get_unchecked_mut(i) };
        if *slot & KEY_MASK == key {
            let rank = (*slot >> (2 * ID_BITS)) as u32;
            return if rank == RANK_NONE { NONE } else { rank };
        }
        let (word, bits) = self.filter_bits(key);
        // SAFETY: `filter_bits` keeps the top bits of a product, fewer than the
        // filter's length in words.
        let rank = match unsafe { *self.filter.get_unchecked(word) } & bits == bits {
            true => self.rank(left, right),
            false => NONE,
        };
        let stored = if rank == NONE { RANK_NONE } else { rank };
        *slot = (u64::from(stored) << (2 * ID_BITS)) | key;
        rank
    }

    /// Starts loading what [`PairTable::rank_cached`] of `left` and `right` reads: its
    /// slot of `cache` and, for a pair the cache lacks, its filter word and its home
    /// slot of the table.
    ///
    /// Why: in a cold encode nearly all of the merge loop's time is these loads, and
    /// a merge looks up two pairs (the merged part with each neighbour), one after
    /// the other. Asked for together, before the parts are moved, the second pair's
    /// loads no longer wait for the first's. The filter word is asked for too: o200k's
    /// filter is 1 MB, beside the 256 KB cache and grid in a 512 KB L2, and its load
    /// was a quarter of the merge loop's samples (perf, `miss_bench`, the distinct
    /// pieces of ml); prefetched, those merges took ~4% less time (8 alternations in
    /// one process, o200k, cl100k and r50k).
    #[inline(always)]
    pub fn prefetch_cached(&self, left: u32, right: u32, cache: &PairCache) {
        #[cfg(target_arch = "x86_64")]
        {
            let key = packed_key(left, right) & KEY_MASK;
            let i = cache_index(key);
            // SAFETY: a prefetch never faults and changes nothing; the addresses lie
            // inside their tables (`cache_index`, `home` and `filter_bits` are below
            // their lengths).
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch(cache.slots.as_ptr().wrapping_add(i).cast(), _MM_HINT_T0);
                let home = self.slots.as_ptr().wrapping_add(self.home(key));
                _mm_prefetch(home.cast(), _MM_HINT_T0);
                let (word, _) = self.filter_bits(key);
                let filter = self.filter.as_ptr().wrapping_add(word);
                _mm_prefetch(filter.cast(), _MM_HINT_T0);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (left, right, cache);
    }

    /// The rank of merging the tokens of the single bytes `a` and `b`, or `NONE`.
    #[inline]
    pub fn byte_rank(&self, a: u8, b: u8) -> u32 {
        self.byte_pairs[(usize::from(a) << 8) | usize::from(b)]
    }

    /// The id a merge of rank `rank` (a rank the table gave) makes.
    #[inline]
    pub fn merged_id(&self, rank: u32) -> u32 {
        match &self.merged {
            Merged::Offset(offset) => rank + offset,
            Merged::Ids(ids) => ids[rank as usize],
        }
    }

    /// Number of pairs held.
    pub fn len(&self) -> usize {
        self.slots.as_slice().iter().filter(|&&s| s != 0).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The [`PairCache`] slot of a packed pair: the top [`CACHE_BITS`] bits of a product.
#[inline(always)]
fn cache_index(key: u64) -> usize {
    (key.wrapping_mul(0xd6e8_feb8_6659_fd93) >> (64 - CACHE_BITS)) as usize
}

/// The left and right ids of a packed slot (for tests and debugging).
#[cfg(test)]
fn unpack(slot: u64) -> (u32, u32) {
    (
        ((slot >> ID_BITS) & ((1 << ID_BITS) - 1)) as u32,
        (slot & ((1 << ID_BITS) - 1)) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity_bytes() -> [u32; 256] {
        std::array::from_fn(|b| b as u32)
    }

    /// 5000 distinct pairs `(left, right, rank)` spread over the id range.
    fn sample_pairs() -> Vec<(u32, u32, u32)> {
        (0..5000u32)
            .map(|i| (i * 7 % 3001, i * 13 % 4099 + 300, i))
            .collect()
    }

    #[test]
    fn finds_every_pair_and_nothing_else() {
        let pairs = sample_pairs();
        let t = PairTable::new(&pairs, None, &identity_bytes()).unwrap();
        assert_eq!(t.len(), pairs.len());
        for &(l, r, rank) in &pairs {
            assert_eq!(t.rank(l, r), rank);
            assert_eq!(t.merged_id(rank), rank);
        }
        assert_eq!(t.rank(5, 5), NONE);
        assert_eq!(t.rank(MAX_IDS as u32 - 1, MAX_IDS as u32 - 1), NONE);
        for &s in t.slots.as_slice().iter().filter(|&&s| s != 0) {
            let (l, r) = unpack(s ^ EMPTY);
            assert!(pairs.iter().any(|&(a, b, _)| (a, b) == (l, r)));
        }
    }

    #[test]
    fn cached_ranks_equal_table_ranks() {
        let pairs = sample_pairs();
        let a = PairTable::new(&pairs, None, &identity_bytes()).unwrap();
        let shifted: Vec<(u32, u32, u32)> = pairs.iter().map(|&(l, r, k)| (l, r, k + 7)).collect();
        let b = PairTable::new(&shifted, None, &identity_bytes()).unwrap();
        let mut cache = PairCache::default();
        // Every pair twice (the second time from the cache), pairs that do not merge,
        // and pairs whose slots collide in the cache; then the same cache for another
        // table, which must not answer from the first.
        for table in [&a, &b, &a] {
            cache.bind(table);
            for round in 0..2 {
                for &(l, r, _) in &pairs {
                    for (x, y) in [(l, r), (r, l), (l, l + round)] {
                        assert_eq!(table.rank_cached(x, y, &mut cache), table.rank(x, y));
                    }
                }
            }
        }
        let top = MAX_IDS as u32 - 1;
        assert_eq!(a.rank_cached(top, top, &mut cache), NONE);
    }

    #[test]
    fn the_filter_passes_every_pair_and_stops_most_others() {
        let pairs = sample_pairs();
        let t = PairTable::new(&pairs, None, &identity_bytes()).unwrap();
        let passes = |l: u32, r: u32| {
            let (word, bits) = t.filter_bits(packed_key(l, r));
            t.filter[word] & bits == bits
        };
        assert!(pairs.iter().all(|&(l, r, _)| passes(l, r)));
        let others = (0..10_000u32).filter(|&i| passes(i + 5000, i)).count();
        assert!(
            others < 1500,
            "{others} of 10000 pairs that do not merge pass"
        );
    }

    #[test]
    fn merged_ids_by_offset_or_by_table() {
        let pairs = [(1, 2, 0), (3, 4, 1), (5, 6, 2)];
        let ids = identity_bytes();
        let offset = PairTable::new(&pairs, Some(vec![300, 301, 302]), &ids).unwrap();
        assert!(matches!(offset.merged, Merged::Offset(300)));
        let table = PairTable::new(&pairs, Some(vec![300, 302, 301]), &ids).unwrap();
        assert!(matches!(table.merged, Merged::Ids(_)));
        for (rank, want) in [(0, 300), (1, 302), (2, 301)] {
            assert_eq!(table.merged_id(rank), want);
            assert_eq!(offset.merged_id(rank), 300 + rank);
        }
        let ranks = PairTable::new(&pairs, None, &ids).unwrap();
        assert_eq!(ranks.merged_id(2), 2);
    }

    #[test]
    fn byte_grid_follows_byte_ids() {
        // Byte b has id 255 - b; the pair of ids (155, 154) is bytes (100, 101).
        let byte_ids: [u32; 256] = std::array::from_fn(|b| 255 - b as u32);
        let t = PairTable::new(&[(155, 154, 0)], Some(vec![256]), &byte_ids).unwrap();
        assert_eq!(t.byte_rank(100, 101), 0);
        assert_eq!(t.merged_id(0), 256);
        assert_eq!(t.byte_rank(101, 100), NONE);
    }

    #[test]
    fn the_largest_ids_and_ranks_fit_and_larger_ones_are_errors() {
        let top = MAX_IDS as u32 - 1;
        let t = PairTable::new(&[(top, top, 2 * top)], None, &identity_bytes()).unwrap();
        assert_eq!(t.rank(top, top), 2 * top);
        let e = PairTable::new(&[(top + 1, 0, 0)], None, &identity_bytes()).unwrap_err();
        assert!(e.to_string().contains("token id 2097151"), "{e}");
    }
}
