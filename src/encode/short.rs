//! The short-piece table: every piece of 1 to 15 bytes seen so far -> its ids, in one
//! open-addressing table whose entries are self-contained for up to three ids.
//!
//! Why this shape (perf, en-small, gpt2, one thread): nine pieces in ten are short and
//! encode to one id, so the lookup of a short piece is the encoder's inner loop. A
//! general map (hashbrown plus key arenas) reads three cache lines per hit, spread
//! over megabytes; here a 32-byte slot holds the key (the piece's bytes and length in
//! one `u128`, compared in one instruction) and the ids, two slots share a 64-byte
//! line, and a lookup that lands in its home pair reads exactly that line. The
//! encoder computes the key and hash a few pieces ahead and prefetches the line, so a
//! lookup rarely waits on memory. The table keeps every short piece (it doubles up
//! to a limit), so after the first occurrence a piece is never merged again. It is
//! in ordinary pages: huge pages made warm lookups 10% slower on the test VM.

use crate::hugemem::{Zeroable, ZeroedBuf};
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m128i, _mm_cvtsi128_si32, _mm_shuffle_epi32, _mm_storeu_si128};

pub use crate::piecekey::{key_in as short_key_in, key_of as short_key, KEY_LEN as SHORT_LEN};

/// Ids held in a slot; a piece with more keeps them in the table's spill arena.
pub const SHORT_IDS: usize = 3;

/// One entry: `key` as built by [`short_key`] (0: empty), the ids, and their count.
/// `ids` and `n` are adjacent so an emit copies all four words in one store. When
/// `n > SHORT_IDS`, `ids[0]` is where the ids start in the spill arena (runs of spaces
/// after a newline are 4-15 ids with gpt2: 2% of the pieces of the en corpus).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct Slot {
    key: u128,
    ids: [u32; SHORT_IDS],
    n: u32,
}

impl Slot {
    /// The three id words and the count, for an emit that writes all four and then
    /// advances by the count (no loop, no branch on the count). A count above
    /// [`SHORT_IDS`] means the ids are spilled: see [`ShortTable::spilled`].
    #[inline]
    pub fn words(&self) -> ([u32; 4], usize) {
        (
            [self.ids[0], self.ids[1], self.ids[2], self.n],
            self.n as usize,
        )
    }
}

/// A slot's three id words and count as the emit loop's probe gives them: kept in a
/// vector register on x86_64 (as a `[u32; 4]` the compiler split its store in three).
#[derive(Clone, Copy)]
pub struct Words(
    #[cfg(target_arch = "x86_64")] __m128i,
    #[cfg(not(target_arch = "x86_64"))] [u32; 4],
);

impl Words {
    /// The id count (more than [`SHORT_IDS`]: the ids are spilled).
    #[inline(always)]
    pub fn count(self) -> usize {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe {
            _mm_cvtsi128_si32(_mm_shuffle_epi32::<0b11_11_11_11>(self.0)) as u32 as usize
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self.0[3] as usize
        }
    }

    /// Writes the four words at `dst`.
    ///
    /// # Safety
    /// `dst` must be valid for writing four `u32`s.
    #[inline(always)]
    pub unsafe fn write(self, dst: *mut u32) {
        #[cfg(target_arch = "x86_64")]
        _mm_storeu_si128(dst.cast(), self.0);
        #[cfg(not(target_arch = "x86_64"))]
        dst.cast::<[u32; 4]>().write_unaligned(self.0);
    }
}

/// Two slots in one cache line: a probe reads both at the cost of one miss.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Pair([Slot; 2]);

/// The hash of a key; the table uses its low bits. A folded multiply (the high and
/// low halves of one 64x64-bit product, XORed): one multiply where two were used.
#[inline]
pub fn short_hash(key: u128) -> u64 {
    let lo = key as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let hi = (key >> 64) as u64 ^ 0xc2b2_ae3d_27d4_eb4f;
    let product = u128::from(lo) * u128::from(hi);
    product as u64 ^ (product >> 64) as u64
}

/// The pair probe in SSE2 registers. Plain Rust compiled the choice between the two
/// slots into a branch (which of them holds a piece is a coin flip, so it was
/// mispredicted half the time) or a select of addresses followed by a dependent load.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::{Pair, Words};
    use std::arch::x86_64::*;

    /// All ones where the 128-bit `a` and `b` are equal, else all zeros.
    #[inline(always)]
    unsafe fn eq128(a: __m128i, b: __m128i) -> __m128i {
        let e = _mm_cmpeq_epi32(a, b);
        let e = _mm_and_si128(e, _mm_shuffle_epi32::<0b01_00_11_10>(e));
        _mm_and_si128(e, _mm_shuffle_epi32::<0b10_11_00_01>(e))
    }

    /// # Safety
    /// The CPU must have SSE2 (every x86_64 CPU does).
    #[inline(always)]
    pub unsafe fn probe_pair(pair: &Pair, key: &u128) -> (Words, bool) {
        let p = (pair as *const Pair).cast::<__m128i>();
        let k = _mm_loadu_si128((key as *const u128).cast());
        // A slot is its key then its words: 16 + 16 bytes.
        let hit_a = eq128(_mm_load_si128(p), k);
        let hit_b = eq128(_mm_load_si128(p.add(2)), k);
        let words = _mm_or_si128(
            _mm_and_si128(hit_a, _mm_load_si128(p.add(1))),
            _mm_andnot_si128(hit_a, _mm_load_si128(p.add(3))),
        );
        let found = _mm_movemask_epi8(_mm_or_si128(hit_a, hit_b)) != 0;
        (Words(words), found)
    }
}

// SAFETY: all-zero bytes are a valid `Pair`: two empty slots.
unsafe impl Zeroable for Pair {}

#[derive(Debug)]
pub struct ShortTable {
    pairs: ZeroedBuf<Pair>,
    len: usize,
    max_pairs: usize,
    /// The ids of pieces with more than [`SHORT_IDS`]; never grows past its capacity.
    spill: Vec<u32>,
}

impl ShortTable {
    /// A table of `pairs` pairs (a power of two) that may double up to `max_pairs`,
    /// with room for `spill` ids of many-id pieces. A table with `pairs == max_pairs`
    /// never allocates after it is made.
    pub fn new(pairs: usize, max_pairs: usize, spill: usize) -> Self {
        let pairs = pairs.max(1).next_power_of_two();
        Self {
            pairs: ZeroedBuf::new(pairs),
            len: 0,
            max_pairs: max_pairs.max(pairs),
            spill: Vec::with_capacity(spill),
        }
    }

    /// The ids of a spilled entry, from the words [`Self::get_words`] gave.
    #[inline]
    pub fn spilled(&self, words: [u32; 4], n: usize) -> &[u32] {
        let start = words[0] as usize;
        &self.spill[start..start + n]
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash as usize) & (self.pairs.len() - 1)
    }

    /// Asks the CPU to start loading the line a lookup of `hash` reads first.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the index is masked into the table; a prefetch never faults.
        unsafe {
            let p = self.pairs.as_ptr().add(self.home(hash));
            std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }

    /// The emit loop's probe: the words ([`Slot::words`]) of `key` from its home pair,
    /// and whether it was there, with no branch at all: the words of a miss are
    /// another entry's. `key` must not be 0 (it would match an empty slot).
    #[inline(always)]
    pub fn probe_home(&self, key: &u128, hash: u64) -> (Words, bool) {
        let home = self.home(hash);
        // SAFETY: `home` is masked by `len - 1` and `len` is a power of two.
        let pair = unsafe { self.pairs.as_slice().get_unchecked(home) };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe {
            sse2::probe_pair(pair, key)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let [a, b] = &pair.0;
            let hit_a = a.key == *key;
            let (words, _) = if hit_a { a.words() } else { b.words() };
            (Words(words), hit_a | (b.key == *key))
        }
    }

    /// The ids of `key` (non-zero, from [`short_key`]) as [`Slot::words`] gives
    /// them, if the table holds it. The home pair is checked without a branch on which
    /// of its two slots matches (a coin flip the CPU mispredicts).
    #[inline(always)]
    pub fn get_words(&self, key: u128, hash: u64) -> Option<([u32; 4], usize)> {
        let [a, b] = &self.pairs.as_slice()[self.home(hash)].0;
        let (wa, na) = a.words();
        let (wb, nb) = b.words();
        let hit_a = a.key == key;
        if hit_a | (b.key == key) {
            return Some(if hit_a { (wa, na) } else { (wb, nb) });
        }
        if b.key == 0 {
            return None;
        }
        self.get(key, hash).map(Slot::words)
    }

    /// The slot of `key` (non-zero, from [`short_key`]) if the table holds it.
    #[inline]
    pub fn get(&self, key: u128, hash: u64) -> Option<&Slot> {
        let pairs = self.pairs.as_slice();
        let mask = pairs.len() - 1;
        let mut i = self.home(hash);
        loop {
            let [a, b] = &pairs[i].0;
            if a.key == key {
                return Some(a);
            }
            if b.key == key {
                return Some(b);
            }
            // Inserts fill the first free slot of the walk, so a free slot ends it.
            if b.key == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds `key` (absent, non-zero) with `ids` (at least one); false if it was not
    /// added. Past the size limit nothing is added: the first pieces of a text are
    /// the frequent ones.
    pub fn insert(&mut self, key: u128, hash: u64, ids: &[u32]) -> bool {
        debug_assert!(key != 0 && !ids.is_empty());
        // Load at most 1/2: at 3/4, walks past the home pair made en-small 20%
        // slower.
        if (self.len + 1) * 2 > self.pairs.len() * 2 {
            if self.pairs.len() >= self.max_pairs {
                return false;
            }
            self.grow();
        }
        let mut slot = Slot {
            key,
            ids: [0; SHORT_IDS],
            n: ids.len() as u32,
        };
        if ids.len() <= SHORT_IDS {
            slot.ids[..ids.len()].copy_from_slice(ids);
        } else {
            let start = self.spill.len();
            if ids.len() > self.spill.capacity() - start || start > u32::MAX as usize {
                return false;
            }
            self.spill.extend_from_slice(ids);
            slot.ids[0] = start as u32;
        }
        self.put(slot, hash);
        self.len += 1;
        true
    }

    fn put(&mut self, slot: Slot, hash: u64) {
        let mut i = self.home(hash);
        let pairs = self.pairs.as_mut_slice();
        let mask = pairs.len() - 1;
        loop {
            for s in &mut pairs[i].0 {
                if s.key == 0 {
                    *s = slot;
                    return;
                }
            }
            i = (i + 1) & mask;
        }
    }

    #[cold]
    fn grow(&mut self) {
        let bigger = ZeroedBuf::new(self.pairs.len() * 2);
        let old = std::mem::replace(&mut self.pairs, bigger);
        for pair in old.as_slice() {
            for s in pair.0 {
                if s.key != 0 {
                    self.put(s, short_hash(s.key));
                }
            }
        }
    }

    pub fn clear(&mut self) {
        self.pairs.as_mut_slice().fill(Pair::default());
        self.spill.clear();
        self.len = 0;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_of(t: &ShortTable, piece: &[u8]) -> Option<Vec<u32>> {
        let k = short_key(piece);
        let (words, n) = t.get_words(k, short_hash(k))?;
        Some(match n <= SHORT_IDS {
            true => words[..n].to_vec(),
            false => t.spilled(words, n).to_vec(),
        })
    }

    #[test]
    fn grows_keeps_everything_then_stops_at_limit() {
        let mut t = ShortTable::new(2, 64, 100);
        let pieces: Vec<Vec<u8>> = (0u32..200).map(|i| i.to_le_bytes().to_vec()).collect();
        let ids = |i: usize| -> Vec<u32> { (0..1 + i % 7).map(|j| (i * 10 + j) as u32).collect() };
        let mut added = Vec::new();
        for (i, p) in pieces.iter().enumerate() {
            let k = short_key(p);
            let h = short_hash(k);
            assert!(t.get(k, h).is_none());
            added.push(t.insert(k, h, &ids(i)));
        }
        // 64 pairs at load 1/2 hold 64 pieces; spilled ids fit in 100 words.
        assert_eq!(t.len(), added.iter().filter(|&&a| a).count());
        assert_eq!(t.len(), 64);
        assert!(added
            .iter()
            .enumerate()
            .any(|(i, &a)| !a && ids(i).len() > SHORT_IDS));
        for (i, p) in pieces.iter().enumerate() {
            let want = if added[i] { Some(ids(i)) } else { None };
            assert_eq!(ids_of(&t, p), want, "piece {i}");
        }
        t.clear();
        assert!(t.is_empty());
        assert_eq!(ids_of(&t, b"ab"), None);
    }

    #[test]
    fn fixed_table_never_reallocates() {
        let mut t = ShortTable::new(8, 8, 20);
        let spill = t.spill.as_ptr();
        for i in 0u32..100 {
            let k = short_key(&i.to_le_bytes());
            t.insert(k, short_hash(k), &[i; 6]);
        }
        assert_eq!(t.pairs.len(), 8);
        assert_eq!(t.spill.as_ptr(), spill);
        assert_eq!(t.len(), 3); // 20 spill words hold three pieces of six ids
    }
}
