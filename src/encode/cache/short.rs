//! The short cache: every piece of 1 to 15 bytes seen so far -> its ids, in one
//! open-addressing table whose entries are self-contained for up to three ids.
//!
//! Why this shape (perf, en-small, gpt2, one thread): nine pieces in ten are short and
//! encode to one id, so the lookup of a short piece is the encoder's inner loop. A
//! general map (hashbrown plus key arenas) reads three cache lines per hit, spread
//! over megabytes; here a 32-byte slot holds the key (the piece's bytes and length in
//! one `u128`, compared in one instruction) and the ids, two slots share a 64-byte
//! line, and a lookup that lands in its home line reads exactly that line. The
//! encoder computes the key and hash a batch of pieces ahead and prefetches the line,
//! so a lookup rarely waits on memory. The table keeps every short piece (it grows up
//! to a limit), so after the first occurrence a piece is never merged again. It is
//! in huge pages where the kernel allows: the en corpus needs a 32 MB table, whose
//! 8192 ordinary pages are more than the TLB holds (warm, gpt2: ~360 -> ~380 MB/s;
//! with o200k ~320 -> ~340; en-small, 8 MB, +1-3%), with an idle page cache and with
//! 20 GB of it filled, first calls included.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

#[cfg(not(target_arch = "x86_64"))]
use super::line;
#[cfg(target_arch = "x86_64")]
use super::line::sse2;
use super::line::{CachedIds, Line};
use super::store::{Spill, Store};
use crate::error::{Error, Result};

/// An own table grows fourfold while it stays within this many lines (32 MB), and
/// doubles past it.
///
/// Why: every growth moves the entries into fresh memory, which the kernel zeroes
/// on first touch. A first per-document pass over the multilingual corpus grew the
/// table 2 -> 32 MB, and zeroing the 62 MB of new pages was ~10% of that pass
/// (perf, OLMo 2; this VM zeroes ~0.6 GB/s); grown 2 -> 8 -> 32 MB, 42 MB are
/// zeroed and a quarter as many entries are moved. The cost: a text that needs just
/// over a quarter of a grown table holds up to twice the memory it would when
/// doubling (at most 16 MB more).
const FOURFOLD_UP_TO: usize = (32 << 20) / std::mem::size_of::<Line>();

/// How many times larger an own table of `lines` lines grows (up to `max_lines`).
fn growth(lines: usize, max_lines: usize) -> usize {
    match lines.saturating_mul(4) <= max_lines.min(FOURFOLD_UP_TO) {
        true => 4,
        false => 2,
    }
}

/// A handle on a short cache: the owner's (which may grow it), or one of the
/// handles of a table shared by several threads ([`ShortCache::share`]).
#[derive(Debug)]
pub struct ShortCache {
    store: Arc<Store>,
    max_lines: usize,
    /// Other threads read and fill this store (racing inserts), and it never grows.
    shared: bool,
}

impl ShortCache {
    /// A table of `lines` lines (a power of two) that may grow up to `max_lines`,
    /// with room for `spill` ids of many-id pieces. A table with `lines == max_lines`
    /// never allocates after it is made.
    #[cfg(test)]
    pub fn new(lines: usize, max_lines: usize, spill: usize) -> Self {
        Self::try_new(lines, max_lines, spill)
            .unwrap_or_else(|e| panic!("{e}; use ShortCache::try_new for sizes from input"))
    }

    /// [`ShortCache::new`], or an error where the memory cannot be had.
    pub fn try_new(lines: usize, max_lines: usize, spill: usize) -> Result<Self> {
        let lines = lines
            .max(1)
            .checked_next_power_of_two()
            .unwrap_or(usize::MAX);
        let oom = || Error::out_of_memory::<Line>("a piece cache", lines);
        let spill = Arc::new(Spill::try_new(spill).ok_or_else(oom)?);
        Ok(Self {
            store: Arc::new(Store::try_new(lines, max_lines.max(lines), spill).ok_or_else(oom)?),
            max_lines: max_lines.max(lines),
            shared: false,
        })
    }

    /// Whether tables can be shared between threads on this machine: x86_64 with
    /// AVX, whose aligned 16-byte moves are atomic, and `cmpxchg16b` (see the `line`
    /// module).
    pub fn can_share() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx")
                && std::arch::is_x86_feature_detected!("cmpxchg16b")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// A handle for another thread on this table, which from now on never grows;
    /// `None` where tables cannot be shared ([`Self::can_share`]).
    pub fn share(&mut self) -> Option<Self> {
        if !Self::can_share() {
            return None;
        }
        self.shared = true;
        Some(Self {
            store: Arc::clone(&self.store),
            max_lines: self.max_lines,
            shared: true,
        })
    }

    /// The ids of a spilled entry, from the words [`Self::get_words`] gave, appended
    /// to `out`.
    #[inline]
    pub fn extend_spilled(&self, words: [u32; 4], n: usize, out: &mut Vec<u32>) {
        self.extend_spilled_from(words[0], n, out);
    }

    /// The `n` spilled ids that start at `start` of the spill arena, appended to `out`.
    #[inline]
    pub fn extend_spilled_from(&self, start: u32, n: usize, out: &mut Vec<u32>) {
        let start = start as usize;
        let words = &self.store.spill.words[start..start + n];
        out.extend(words.iter().map(|w| w.load(Relaxed)));
    }

    #[inline(always)]
    fn home(&self, hash: u64) -> usize {
        (hash as usize) & (self.store.lines.len() - 1)
    }

    /// The table's lines as they are now, for a loop that looks up many pieces while
    /// nothing is added (an insert may move the table, so the borrow lasts until then).
    ///
    /// Why: reached through the handle, the table's address and size were loaded
    /// again (two pointers deep) for every piece, as the loop's stores might have
    /// changed them; in locals they stay in registers.
    #[inline(always)]
    pub fn lines(&self) -> Lines<'_> {
        Lines {
            base: self.store.line(0),
            mask: self.store.lines.len() - 1,
            _table: std::marker::PhantomData,
        }
    }

    /// The ids of `key` (non-zero, from [`piecekey::key_of`]) as [`Slot::words`] gives
    /// them, if the table holds it.
    #[inline]
    pub fn get_words(&self, key: u128, hash: u64) -> Option<([u32; 4], usize)> {
        let (_, _, words) = self.store.find(key, self.home(hash))?;
        Some((words, words[3] as usize))
    }

    /// Adds `key` (non-zero) with `ids` (at least one); false if it was not added.
    /// Past the size limit nothing is added: the first pieces of a text are the
    /// frequent ones. Handles of a shared table insert with no lock (see the `line`
    /// module): with a lock, a cold 2-thread encode of the 116 MB English corpus
    /// waited for it 24 ms (gpt2) to 64 ms (o200k), 6-11% of a thread's time, as a
    /// holder preempted by the file writer kept it for a whole time slice.
    pub fn insert(&mut self, key: u128, hash: u64, ids: &[u32]) -> bool {
        debug_assert!(key != 0 && !ids.is_empty());
        if self.shared {
            return self.store.insert(key, hash, ids, true);
        }
        let full = self.store.fill.len.load(Relaxed) + 1 > self.store.lines.len();
        if full && self.store.lines.len() < self.max_lines {
            self.grow();
        }
        self.store.insert(key, hash, ids, false)
    }

    /// Whether the table may still grow (it stops where memory ran out).
    pub fn can_grow(&self) -> bool {
        self.store.lines.len() < self.max_lines
    }

    /// Whether an insert found this table full while it could still grow: a shared
    /// table is replaced by a larger copy ([`Self::grown`]) between chunks.
    pub fn wants_growth(&self) -> bool {
        self.store.fill.full.load(Relaxed) && self.store.lines.len() < self.max_lines
    }

    /// A copy of this shared table, twice the size, made while other threads may
    /// still read and insert (an entry added meanwhile may be left out: it is a
    /// cache). Handles on the old table keep it alive until they are replaced.
    ///
    /// Where the memory cannot be had, a handle on this table that never asks to
    /// grow again: a cache that stops growing only costs merges.
    pub fn grown(&self) -> Self {
        match self.store.grown(2, self.max_lines) {
            Some(store) => Self {
                store: Arc::new(store),
                max_lines: self.max_lines,
                shared: self.shared,
            },
            None => Self {
                store: Arc::clone(&self.store),
                max_lines: self.store.lines.len(),
                shared: self.shared,
            },
        }
    }

    /// Faults in the table's memory before it is used, taking 2 MiB blocks no other
    /// thread has taken, so the threads that share a table split the work; returns
    /// when every block is taken.
    ///
    /// Why: a fresh table is read before it is written, so each of its huge pages was
    /// first mapped to the shared zero page and then copied on its first insert, and
    /// that copy flushes the page from the TLB of every core running the process: an
    /// interrupt to the other core, which a VM's host may not be running. In a cold
    /// 2-thread encode of the 116 MB English corpus on a 2-core VM, waiting for those
    /// flushes took up to 5% of the CPU time, by the host's load (perf, gpt2).
    pub fn populate(&self) {
        self.store.populate();
    }

    /// Spill-arena words for a table of at most `max_lines` lines: two a line (4 MB
    /// for a 32 MB table). Zeroed memory, so only what fills is ever touched.
    pub fn spill_for(max_lines: usize) -> usize {
        max_lines.saturating_mul(2)
    }

    /// Makes an own table at least `lines` lines now, rather than doubling as it
    /// fills: an empty one is replaced, a filled one grown. Its limit rises to
    /// `lines` where that is more (an input that needs a larger table). Shared tables
    /// are left as they are.
    ///
    /// Why: each doubling rehashes every entry into fresh memory; a cold encode of
    /// en-small grew 2 -> 8 MB in two steps and rehashed 96K entries.
    pub fn reserve_lines(&mut self, lines: usize) {
        let lines = lines.max(1).next_power_of_two();
        if self.shared || self.capacity_lines() >= lines {
            return;
        }
        self.max_lines = self.max_lines.max(lines);
        if self.is_empty() {
            let spill = Self::spill_for(self.max_lines).max(self.store.spill.words.len());
            if let Ok(t) = Self::try_new(lines, self.max_lines, spill) {
                *self = t;
            }
            return;
        }
        while self.capacity_lines() < lines && self.capacity_lines() < self.max_lines {
            // To the size asked for, not past it.
            let now = self.capacity_lines();
            self.grow_by(growth(now, self.max_lines).min(lines / now));
        }
    }

    /// Grows the table fourfold while small, else twofold ([`FOURFOLD_UP_TO`]); where
    /// the memory cannot be had, it stays as it is and stops growing (a cache that
    /// stops growing only costs merges).
    #[cold]
    fn grow(&mut self) {
        self.grow_by(growth(self.store.lines.len(), self.max_lines));
    }

    /// Grows the table `factor` times (2 or 4), as [`Self::grow`].
    #[cold]
    fn grow_by(&mut self, factor: usize) {
        match self.store.grown(factor, self.max_lines) {
            Some(store) => self.store = Arc::new(store),
            None => self.max_lines = self.store.lines.len(),
        }
    }

    /// The most lines the table may grow to.
    pub fn max_lines(&self) -> usize {
        self.max_lines
    }

    /// Pairs in the table now.
    pub fn capacity_lines(&self) -> usize {
        self.store.lines.len()
    }
}

/// The lines of a short table, borrowed from its handle ([`ShortCache::lines`]).
#[derive(Clone, Copy)]
pub(crate) struct Lines<'a> {
    base: *const Line,
    mask: usize,
    _table: std::marker::PhantomData<&'a ShortCache>,
}

impl Lines<'_> {
    /// The line a lookup of `hash` reads first.
    #[inline(always)]
    fn home(self, hash: u64) -> *const Line {
        // SAFETY: the index is masked into the table, which outlives `self`.
        unsafe { self.base.add(hash as usize & self.mask) }
    }

    /// Asks the CPU to start loading the line a lookup of `hash` reads first, into
    /// the L1 cache.
    #[inline(always)]
    pub(crate) fn prefetch(self, hash: u64) {
        self.prefetch_into::<3>(hash);
    }

    /// [`Self::prefetch`] into the L2 cache only.
    #[inline(always)]
    pub(crate) fn prefetch_l2(self, hash: u64) {
        self.prefetch_into::<2>(hash);
    }

    /// Prefetches with x86's locality `HINT` (3: `_MM_HINT_T0`, 2: `_MM_HINT_T1`).
    #[inline(always)]
    fn prefetch_into<const HINT: i32>(self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch never faults, and the line is in the table anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<HINT>(self.home(hash).cast::<i8>());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }

    /// The emit loop's probe: the words ([`Slot::words`]) of `key` from its home line,
    /// and whether it was there, with no branch at all: the words of a miss are
    /// another entry's. `key` must not be 0 (it would match an empty slot).
    #[inline(always)]
    pub(crate) fn probe_home(self, key: &u128, hash: u64) -> (CachedIds, bool) {
        let p = self.home(hash);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `p` is a line of the table, which outlives `self`.
        unsafe {
            sse2::probe_line(p, key)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            // SAFETY: `p` is a line of the table.
            let line = unsafe { line::load(p) };
            let hit_a = line.keys[0] == *key;
            let words = if hit_a { line.words[0] } else { line.words[1] };
            (CachedIds(words), hit_a | (line.keys[1] == *key))
        }
    }
}

impl ShortCache {
    pub fn len(&self) -> usize {
        self.store.fill.len.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::super::line::{self, Slot};
    use super::*;
    use crate::encode::cache::SHORT_IDS;
    use crate::piecekey;

    fn ids_of(t: &ShortCache, piece: &[u8]) -> Option<Vec<u32>> {
        let k = piecekey::key_of(piece);
        let (words, n) = t.get_words(k, piecekey::hash(k))?;
        Some(match n <= SHORT_IDS {
            true => words[..n].to_vec(),
            false => {
                let mut v = Vec::new();
                t.extend_spilled(words, n, &mut v);
                v
            }
        })
    }

    #[test]
    fn a_table_in_huge_pages_grows_faulted_in_and_keeps_the_pieces() {
        // 2 MB of lines: mapped fresh, in huge pages where the kernel has them.
        let lines = 1 << 15;
        let mut t = ShortCache::new(lines, 4 * lines, 8 * lines);
        let n = lines as u32 + 100;
        for i in 0..n {
            let k = piecekey::key_of(&i.to_le_bytes());
            assert!(t.insert(k, piecekey::hash(k), &[i, i + 1]));
        }
        assert_eq!((t.capacity_lines(), t.len()), (4 * lines, n as usize));
        for i in (0..n).step_by(97) {
            assert_eq!(ids_of(&t, &i.to_le_bytes()), Some(vec![i, i + 1]), "{i}");
        }
        // Its blocks are all taken: a populate has nothing left to do.
        let blocks = t.store.lines.blocks();
        assert_eq!((blocks, t.store.fill.next_block.load(Relaxed)), (4, 4));
    }

    #[test]
    fn a_small_table_grows_fourfold_and_a_large_one_doubles() {
        let big = FOURFOLD_UP_TO;
        // Fourfold while the grown table stays within both limits.
        assert_eq!(growth(1 << 10, 1 << 20), 4);
        assert_eq!(growth(big / 4, 4 * big), 4);
        // Past 32 MB, or past the table's own limit: doubled.
        assert_eq!(growth(big / 2, 4 * big), 2);
        assert_eq!(growth(big, 4 * big), 2);
        assert_eq!(growth(1 << 10, 1 << 11), 2);
        assert_eq!(growth(1 << 10, 3 << 10), 2);
        // Filled past its load: 2 lines -> 8 -> 16 under a limit of 16.
        let mut t = ShortCache::new(2, 16, 64);
        let mut sizes = vec![t.capacity_lines()];
        for i in 0u32..17 {
            let k = piecekey::key_of(&i.to_le_bytes());
            assert!(t.insert(k, piecekey::hash(k), &[i]));
            if sizes.last() != Some(&t.capacity_lines()) {
                sizes.push(t.capacity_lines());
            }
        }
        assert_eq!(sizes, [2, 8, 16]);
        for i in 0u32..17 {
            assert_eq!(ids_of(&t, &i.to_le_bytes()), Some(vec![i]), "{i}");
        }
        // Reserved, a filled table grows to the size asked for, not past it.
        let mut t = ShortCache::new(2, 64, 64);
        let k = piecekey::key_of(b"kept");
        assert!(t.insert(k, piecekey::hash(k), &[7]));
        t.reserve_lines(16);
        assert_eq!(t.capacity_lines(), 16);
        assert_eq!(ids_of(&t, b"kept"), Some(vec![7]));
    }

    #[test]
    fn reserve_raises_the_limit_and_keeps_the_pieces() {
        let mut t = ShortCache::new(2, 4, 8);
        let k = piecekey::key_of(b"kept");
        assert!(t.insert(k, piecekey::hash(k), &[1, 2, 3, 4]));
        // Past its limit of 4 lines: grown to 16, which it may now fill.
        t.reserve_lines(10);
        assert_eq!((t.capacity_lines(), t.max_lines()), (16, 16));
        assert_eq!(ids_of(&t, b"kept"), Some(vec![1, 2, 3, 4]));
        let added = (0u32..19)
            .filter(|i| {
                let k = piecekey::key_of(&i.to_le_bytes());
                t.insert(k, piecekey::hash(k), &[*i])
            })
            .count();
        assert_eq!((added, t.len()), (19, 20));
        // An empty one is made again at the size, its spill arena two words a line.
        let mut e = ShortCache::new(2, 4, 8);
        e.reserve_lines(64);
        assert_eq!((e.capacity_lines(), e.max_lines()), (64, 64));
        assert_eq!(e.store.spill.words.len(), ShortCache::spill_for(64));
    }

    #[test]
    fn grows_keeps_everything_then_stops_at_limit() {
        let mut t = ShortCache::new(2, 64, 100);
        let pieces: Vec<Vec<u8>> = (0u32..200).map(|i| i.to_le_bytes().to_vec()).collect();
        let ids = |i: usize| -> Vec<u32> { (0..1 + i % 7).map(|j| (i * 10 + j) as u32).collect() };
        let mut added = Vec::new();
        for (i, p) in pieces.iter().enumerate() {
            let k = piecekey::key_of(p);
            let h = piecekey::hash(k);
            assert!(t.get_words(k, h).is_none());
            added.push(t.insert(k, h, &ids(i)));
        }
        // 64 lines at their size limit hold 80 pieces; spilled ids fit in 100 words.
        assert_eq!(t.len(), added.iter().filter(|&&a| a).count());
        assert_eq!(t.len(), 80);
        assert!(added
            .iter()
            .enumerate()
            .any(|(i, &a)| !a && ids(i).len() > SHORT_IDS));
        for (i, p) in pieces.iter().enumerate() {
            let want = if added[i] { Some(ids(i)) } else { None };
            assert_eq!(ids_of(&t, p), want, "piece {i}");
        }
    }

    #[test]
    fn threads_populate_a_shared_table_together_while_others_fill_it() {
        // 8 MiB of lines: four 2 MiB blocks for the threads to split.
        let lines = (8 << 20) / std::mem::size_of::<Line>();
        let mut owner = ShortCache::new(lines, lines, 1 << 12);
        let k = piecekey::key_of(b"before");
        assert!(owner.insert(k, piecekey::hash(k), &[7]));
        let handles: Vec<ShortCache> = (0..3).filter_map(|_| owner.share()).collect();
        std::thread::scope(|s| {
            for (t, mut h) in handles.into_iter().enumerate() {
                s.spawn(move || {
                    h.populate();
                    let k = piecekey::key_of(&[b'p', t as u8]);
                    assert!(h.insert(k, piecekey::hash(k), &[t as u32]));
                });
            }
        });
        owner.populate();
        let store = &owner.store;
        assert_eq!(store.lines.blocks(), 4);
        assert!(store.fill.next_block.load(Relaxed) >= 4);
        assert_eq!(ids_of(&owner, b"before"), Some(vec![7]));
        if ShortCache::can_share() {
            for t in 0..3u8 {
                assert_eq!(ids_of(&owner, &[b'p', t]), Some(vec![u32::from(t)]));
            }
        }
    }

    #[test]
    fn shared_handles_insert_and_read_concurrently() {
        if !ShortCache::can_share() {
            return;
        }
        let mut owner = ShortCache::new(1 << 12, 1 << 12, 1 << 12);
        let handles: Vec<ShortCache> = (0..4).map(|_| owner.share().unwrap()).collect();
        // Each id list is a function of the piece, so every reader can check what
        // it finds, whichever thread inserted it (and some pieces spill).
        let ids = |i: u32| -> Vec<u32> { (0..1 + i % 5).map(|j| i * 8 + j).collect() };
        std::thread::scope(|s| {
            for (t, mut h) in handles.into_iter().enumerate() {
                s.spawn(move || {
                    for round in 0..3u32 {
                        for i in 0..1500u32 {
                            // Threads walk the pieces in different orders.
                            let i = (i * (2 * t as u32 + 1) + round * 7) % 1500;
                            let k = piecekey::key_of(&i.to_le_bytes());
                            let h_ = piecekey::hash(k);
                            match ids_of(&h, &i.to_le_bytes()) {
                                Some(found) => assert_eq!(found, ids(i), "piece {i}"),
                                None => assert!(h.insert(k, h_, &ids(i))),
                            }
                        }
                    }
                });
            }
        });
        // Two writers adding the same piece at once may each take a slot.
        assert!((1500..1500 + 3 * 1500).contains(&owner.len()));
        for i in 0..1500u32 {
            assert_eq!(ids_of(&owner, &i.to_le_bytes()), Some(ids(i)));
        }
        // A shared table no longer grows: past its load limit inserts fail.
        let k = piecekey::key_of(b"one more");
        let before = owner.capacity_lines();
        for i in 0..5000u32 {
            let k = piecekey::key_of(&(i + 100_000).to_le_bytes());
            owner.insert(k, piecekey::hash(k), &[1]);
        }
        assert_eq!(owner.capacity_lines(), before);
        assert!(!owner.insert(k, piecekey::hash(k), &[1]));
    }

    #[test]
    fn writers_racing_for_the_same_slots_lose_nothing() {
        if !ShortCache::can_share() {
            return;
        }
        let ids = |i: u32| -> Vec<u32> { (0..1 + i % 6).map(|j| i * 8 + j + 1).collect() };
        for round in 0..1500u32 {
            // A small table, so the threads' pieces share home lines and the threads
            // race for the same free slots. Threads 0-1 add the same pieces (a race of
            // equal entries), threads 2-3 pieces of their own (a race of different
            // ones, which a lost claim would corrupt or drop).
            let mut owner = ShortCache::new(256, 256, 1 << 12);
            let handles: Vec<ShortCache> = (0..4).map(|_| owner.share().unwrap()).collect();
            let start = std::sync::Barrier::new(4);
            let piece = |i: u32| (i + round * 1000).to_le_bytes();
            let mine = |t: u32, j: u32| if t < 2 { j } else { 100 * t + j };
            std::thread::scope(|s| {
                for (t, mut h) in handles.into_iter().enumerate() {
                    let start = &start;
                    s.spawn(move || {
                        start.wait();
                        for j in 0..50u32 {
                            let i = mine(t as u32, j);
                            let k = piecekey::key_of(&piece(i));
                            assert!(h.insert(k, piecekey::hash(k), &ids(i)));
                            assert_eq!(ids_of(&h, &piece(i)), Some(ids(i)), "piece {i}");
                        }
                    });
                }
            });
            for t in 0..4 {
                for j in 0..50u32 {
                    let i = mine(t, j);
                    assert_eq!(
                        ids_of(&owner, &piece(i)),
                        Some(ids(i)),
                        "round {round}, piece {i}"
                    );
                }
            }
            assert!(owner.len() >= 150);
        }
    }

    /// A table and one shared handle on it (`None` where tables cannot be shared).
    fn shared_table(
        lines: usize,
        max_lines: usize,
        spill: usize,
    ) -> Option<(ShortCache, ShortCache)> {
        let mut owner = ShortCache::new(lines, max_lines, spill);
        let handle = owner.share()?;
        Some((owner, handle))
    }

    #[test]
    fn a_slot_being_published_does_not_end_a_walk() {
        let Some((owner, mut handle)) = shared_table(16, 16, 100) else {
            return;
        };
        // Three pieces with the same home line.
        let pieces: Vec<[u8; 4]> = (0u32..)
            .map(u32::to_le_bytes)
            .filter(|p| owner.home(piecekey::hash(piecekey::key_of(p))) == 0)
            .take(3)
            .collect();
        let key = |i: usize| piecekey::key_of(&pieces[i]);
        assert!(handle.insert(key(0), piecekey::hash(key(0)), &[1]));
        // Slot 1 of the home line as another writer leaves it between its claim and
        // its publication: ids in place, key not yet stored.
        let claimed = Slot {
            key: 0,
            ids: [2, 0, 0],
            n: 1,
        };
        // SAFETY: slot 1 of line 0 of a live table, written as a claim writes it.
        unsafe {
            line::store(
                owner.store.line(0).cast_mut().cast::<Slot>().add(1),
                claimed,
            )
        };
        // The third piece goes past the claimed slot, and must be found there.
        assert!(handle.insert(key(2), piecekey::hash(key(2)), &[3]));
        assert_eq!(ids_of(&handle, &pieces[2]), Some(vec![3]));
        assert_eq!(ids_of(&handle, &pieces[0]), Some(vec![1]));
        // Until the claim is published its piece is simply not there yet.
        assert_eq!(ids_of(&handle, &pieces[1]), None);
    }

    #[test]
    fn a_full_shared_table_is_grown_by_copy() {
        let Some((owner, mut handle)) = shared_table(16, 64, 100) else {
            return;
        };
        let ids = |i: u32| -> Vec<u32> { (0..1 + i % 6).map(|j| i * 8 + j).collect() };
        let added: Vec<u32> = (0..40u32)
            .filter(|&i| {
                let k = piecekey::key_of(&i.to_le_bytes());
                handle.insert(k, piecekey::hash(k), &ids(i))
            })
            .collect();
        assert_eq!(added.len(), 16);
        assert!(owner.wants_growth() && handle.wants_growth());
        let mut bigger = owner.grown();
        assert_eq!(bigger.capacity_lines(), 32);
        assert!(!bigger.wants_growth());
        let mut handle2 = bigger.share().unwrap();
        for &i in &added {
            assert_eq!(ids_of(&handle2, &i.to_le_bytes()), Some(ids(i)));
        }
        // The copy takes new entries; spilled ids of both tables stay apart.
        for i in 40..50u32 {
            let k = piecekey::key_of(&i.to_le_bytes());
            assert!(handle2.insert(k, piecekey::hash(k), &ids(i)));
        }
        for i in added.iter().copied().chain(40..50) {
            assert_eq!(
                ids_of(&handle2, &i.to_le_bytes()),
                Some(ids(i)),
                "piece {i}"
            );
        }
    }

    #[test]
    fn reserve_pairs_keeps_entries_and_limits() {
        let mut t = ShortCache::new(4, 64, 100);
        t.reserve_lines(16);
        assert_eq!(t.capacity_lines(), 16);
        let keys: Vec<u128> = (0u32..10)
            .map(|i| piecekey::key_of(&i.to_le_bytes()))
            .collect();
        for (i, &k) in keys.iter().enumerate() {
            assert!(t.insert(k, piecekey::hash(k), &[i as u32]));
        }
        // Past the limit of 64: the limit rises with it.
        t.reserve_lines(1000);
        assert_eq!(t.capacity_lines(), 1024);
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(
                t.get_words(k, piecekey::hash(k)).map(|(w, _)| w[0]),
                Some(i as u32)
            );
        }
        t.reserve_lines(8);
        assert_eq!(t.capacity_lines(), 1024);
    }

    #[test]
    fn fixed_table_never_reallocates() {
        let mut t = ShortCache::new(8, 8, 20);
        let spill = t.store.spill.words.as_ptr();
        for i in 0u32..100 {
            let k = piecekey::key_of(&i.to_le_bytes());
            t.insert(k, piecekey::hash(k), &[i; 6]);
        }
        assert_eq!(t.capacity_lines(), 8);
        assert_eq!(t.store.spill.words.as_ptr(), spill);
        assert_eq!(t.len(), 3); // 20 spill words hold three pieces of six ids
    }
}
