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
//! in huge pages where the kernel allows: the en corpus needs a 32 MB table, whose
//! 8192 ordinary pages are more than the TLB holds (warm, gpt2: ~360 -> ~380 MB/s;
//! with o200k ~320 -> ~340; en-small, 8 MB, +1-3%). An earlier measurement on this VM
//! had found them 10% slower; on 2026-11-21 they were faster with an idle page
//! cache and with 20 GB of it filled, first calls included.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::error::{Error, Result};
use crate::hugemem::{Zeroable, ZeroedBuf};
use crate::piecekey;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m128i, _mm_cvtsi128_si32, _mm_shuffle_epi32, _mm_storeu_si128};

/// Ids held in a slot; a piece with more keeps them in the table's spill arena.
pub const SHORT_IDS: usize = 3;

/// One entry: `key` as built by [`piecekey::key_of`] (0: empty), the ids, and their count.
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

    /// The first word: for a spilled entry, where its ids start in the spill arena.
    #[inline(always)]
    pub fn first(self) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe {
            _mm_cvtsi128_si32(self.0) as u32
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self.0[0]
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

/// Reading and writing lines that other threads may be reading or filling.
///
/// A table shared by the threads of a file encode is read and filled with no lock.
/// On x86_64 each slot's 16-byte halves are moved by single aligned SSE
/// instructions, written ids first and key last, and a line is read keys first: x86
/// keeps stores in order and loads in order, and CPUs with AVX move aligned 16 bytes
/// atomically (Intel SDM 8.1.1, AMD APM 7.3.2), so a reader that sees a key sees its
/// ids. Writers racing for a free slot claim it by a 16-byte compare-and-swap of its
/// ids half against zero (the count in it is never zero), so one of them wins; a
/// claimed slot is not free to others, and its key is 0, so no reader matches it
/// until the key is stored. The moves are inline assembly, outside Rust's memory
/// model, so the compiler neither splits nor reorders them. Elsewhere the plain
/// reads and writes are only used by one thread ([`ShortTable::share`] is x86_64
/// only).
mod line {
    use super::{Pair, Slot};

    /// The two keys and the two slots' words of the line at `p`.
    pub struct Line {
        pub keys: [u128; 2],
        pub words: [[u32; 4]; 2],
    }

    /// # Safety
    /// `p` must point to a live `Pair`.
    #[inline(always)]
    pub unsafe fn load(p: *const Pair) -> Line {
        #[cfg(target_arch = "x86_64")]
        {
            let [ka, kb, wa, wb] = super::sse2::load_line(p);
            // SAFETY: plain 16-byte values.
            let (ka, kb, wa, wb) = unsafe {
                use std::mem::transmute;
                (
                    transmute::<std::arch::x86_64::__m128i, u128>(ka),
                    transmute::<std::arch::x86_64::__m128i, u128>(kb),
                    transmute::<std::arch::x86_64::__m128i, [u32; 4]>(wa),
                    transmute::<std::arch::x86_64::__m128i, [u32; 4]>(wb),
                )
            };
            Line {
                keys: [ka, kb],
                words: [wa, wb],
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let [a, b] = unsafe { std::ptr::read(p) }.0;
            Line {
                keys: [a.key, b.key],
                words: [a.words().0, b.words().0],
            }
        }
    }

    /// Writes `slot` at `p`: ids and count first, then the key that publishes them.
    ///
    /// # Safety
    /// `p` must point to a live, 32-byte aligned `Slot` that no other thread writes.
    #[inline]
    pub unsafe fn store(p: *mut Slot, slot: Slot) {
        let (words, _) = slot.words();
        #[cfg(target_arch = "x86_64")]
        unsafe {
            use std::arch::x86_64::__m128i;
            let words: __m128i = std::mem::transmute(words);
            let key: __m128i = std::mem::transmute(slot.key);
            std::arch::asm!(
                "movdqa xmmword ptr [{p} + 16], {words}",
                "movdqa xmmword ptr [{p}], {key}",
                p = in(reg) p,
                words = in(xmm_reg) words,
                key = in(xmm_reg) key,
                options(nostack, preserves_flags),
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        unsafe {
            let _ = words;
            std::ptr::write(p, slot);
        }
    }

    /// Claims the slot at `p` for `slot` if no writer has (its ids half is still
    /// zero), then publishes it as [`store`] does; false if another writer got it.
    ///
    /// # Safety
    /// `p` must point to a live, 32-byte aligned `Slot`; on x86_64 the CPU must have
    /// `cmpxchg16b` ([`super::ShortTable::can_share`]).
    #[inline]
    pub unsafe fn claim(p: *mut Slot, slot: Slot) -> bool {
        #[cfg(target_arch = "x86_64")]
        unsafe {
            let (words, _) = slot.words();
            let words: u128 = std::mem::transmute(words);
            debug_assert!(words != 0);
            if cas16(p.cast::<u128>().add(1), 0, words) != 0 {
                return false;
            }
            let key: std::arch::x86_64::__m128i = std::mem::transmute(slot.key);
            std::arch::asm!(
                "movdqa xmmword ptr [{p}], {key}",
                p = in(reg) p,
                key = in(xmm_reg) key,
                options(nostack, preserves_flags),
            );
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        unsafe {
            store(p, slot);
            true
        }
    }

    /// Swaps `new` into `*p` if it holds `old`; returns what it held.
    ///
    /// # Safety
    /// `p` must be live and 16-byte aligned, and the CPU must have `cmpxchg16b`.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn cas16(p: *mut u128, old: u128, new: u128) -> u128 {
        let (lo, hi): (u64, u64);
        // SAFETY: per the caller. `rbx` is reserved by the compiler, so the new low
        // half goes through another register and `rbx` is restored after. (The
        // `cmpxchg16b` intrinsic, inlined outside a function with the target
        // feature, became a call to a libatomic function the build does not link.)
        unsafe {
            std::arch::asm!(
                "xchg {tmp}, rbx",
                "lock cmpxchg16b xmmword ptr [{p}]",
                "mov rbx, {tmp}",
                p = in(reg) p,
                tmp = inout(reg) new as u64 => _,
                inout("rax") old as u64 => lo,
                inout("rdx") (old >> 64) as u64 => hi,
                in("rcx") (new >> 64) as u64,
                options(nostack),
            );
        }
        u128::from(lo) | (u128::from(hi) << 64)
    }
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

    /// Key A, key B, words A, words B of the line at `p`, loaded in that order (see
    /// the `line` module).
    ///
    /// # Safety
    /// `p` must point to a live `Pair` (64-byte aligned).
    #[inline(always)]
    pub unsafe fn load_line(p: *const Pair) -> [__m128i; 4] {
        let (ka, kb, wa, wb): (__m128i, __m128i, __m128i, __m128i);
        // SAFETY: four aligned 16-byte loads inside the caller's `Pair`.
        unsafe {
            std::arch::asm!(
                "movdqa {ka}, xmmword ptr [{p}]",
                "movdqa {kb}, xmmword ptr [{p} + 32]",
                "movdqa {wa}, xmmword ptr [{p} + 16]",
                "movdqa {wb}, xmmword ptr [{p} + 48]",
                p = in(reg) p,
                ka = out(xmm_reg) ka,
                kb = out(xmm_reg) kb,
                wa = out(xmm_reg) wa,
                wb = out(xmm_reg) wb,
                options(nostack, preserves_flags, readonly, pure),
            );
        }
        [ka, kb, wa, wb]
    }

    /// # Safety
    /// `p` must point to a live `Pair`; the CPU must have SSE2 (every x86_64 does).
    #[inline(always)]
    pub unsafe fn probe_pair(p: *const Pair, key: &u128) -> (Words, bool) {
        let [key_a, key_b, words_a, words_b] = load_line(p);
        let k = _mm_loadu_si128((key as *const u128).cast());
        let hit_a = eq128(key_a, k);
        let hit_b = eq128(key_b, k);
        let words = _mm_or_si128(
            _mm_and_si128(hit_a, words_a),
            _mm_andnot_si128(hit_a, words_b),
        );
        let found = _mm_movemask_epi8(_mm_or_si128(hit_a, hit_b)) != 0;
        (Words(words), found)
    }
}

// SAFETY: all-zero bytes are a valid `Pair`: two empty slots.
unsafe impl Zeroable for Pair {}

/// What the handles of one table share: the lines and the spill arena, whose
/// capacities never change (growing makes a new store).
struct Store {
    pairs: ZeroedBuf<Pair>,
    /// The most entries an insert may add ([`entry_limit`]).
    max_len: usize,
    /// Kept when the table grows.
    spill: Arc<Spill>,
    fill: CachePadded<Fill>,
}

/// What inserts write, on lines of their own ([`CachePadded`]).
///
/// Why: every lookup reads the store's table pointer and size. When the insert count
/// shared their cache line, each insert by one thread of a shared table took that
/// line from the other thread's core, and the other's next lookup waited for it.
#[derive(Debug, Default)]
struct Fill {
    /// Entries held.
    len: AtomicUsize,
    /// Set when an insert found the table at its load limit.
    full: AtomicBool,
    /// The next 2 MiB block of `pairs` for [`ShortTable::populate`] to fault in.
    next_block: AtomicUsize,
}

/// The ids of pieces with more than [`SHORT_IDS`]. Writers reserve their range with
/// an atomic add (the stores of a grown table and its predecessor share it), then
/// write it before they publish the slot that points to it.
struct Spill {
    words: Box<[AtomicU32]>,
    /// Apart from `words`, which emits of spilled pieces read (see [`Fill`]).
    len: CachePadded<AtomicUsize>,
}

impl Spill {
    /// `None` where the memory cannot be had.
    fn try_new(capacity: usize) -> Option<Self> {
        // Zeroed by the allocator (fresh pages, untouched until used), unlike a
        // `Box<[AtomicU32]>` built value by value.
        let zeros: Box<[u32]> = crate::hugemem::try_zeroed_u32s(capacity)?;
        // SAFETY: `AtomicU32` has the size, alignment and bit validity of `u32`.
        let words = unsafe { Box::from_raw(Box::into_raw(zeros) as *mut [AtomicU32]) };
        Some(Self {
            words,
            len: CachePadded::new(AtomicUsize::new(0)),
        })
    }

    /// Reserves `n` words; their start, or `None` when they do not fit.
    fn reserve(&self, n: usize) -> Option<usize> {
        let cap = self.words.len().min(u32::MAX as usize);
        self.len
            .fetch_update(Relaxed, Relaxed, |len| (len + n <= cap).then_some(len + n))
            .ok()
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("pairs", &self.pairs.len())
            .field("len", &self.fill.len)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// `None` where the memory cannot be had.
    fn try_new(pairs: usize, max_pairs: usize, spill: Arc<Spill>) -> Option<Self> {
        Some(Self {
            pairs: ZeroedBuf::try_huge(pairs)?,
            max_len: entry_limit(pairs, max_pairs),
            spill,
            fill: CachePadded::default(),
        })
    }

    #[inline(always)]
    fn line(&self, i: usize) -> *const Pair {
        debug_assert!(i < self.pairs.len());
        // SAFETY: callers mask `i` into the table.
        unsafe { self.pairs.as_ptr().add(i) }
    }

    /// The slot of `key` if the store holds it: its line index and slot (0 or 1).
    fn find(&self, key: u128, home: usize) -> Option<(usize, usize, [u32; 4])> {
        let mask = self.pairs.len() - 1;
        let mut i = home;
        loop {
            // SAFETY: `i` is masked into the table.
            let line = unsafe { line::load(self.line(i)) };
            for s in 0..2 {
                if line.keys[s] == key {
                    return Some((i, s, line.words[s]));
                }
            }
            // Inserts fill the first free slot of the walk, so a free slot ends it. A
            // slot with ids and no key yet is not free: another thread is publishing
            // it, and a piece inserted after it was claimed lies further on (ending
            // the walk there lost a thread's own insert until the other published).
            if line.keys[1] == 0 && line.words[1] == [0; 4] {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Writes `slot` into the first free slot of its walk; false if, `racing` other
    /// writers, one of them added its key first. Without `racing` the caller holds
    /// the only handle.
    fn put(&self, slot: Slot, home: usize, racing: bool) -> bool {
        let mask = self.pairs.len() - 1;
        let mut i = home;
        loop {
            // SAFETY: `i` is masked into the table.
            let line = unsafe { line::load(self.line(i)) };
            for s in 0..2 {
                // Slots are 32 bytes into a 64-byte aligned line.
                let p = self.line(i).cast_mut().cast::<Slot>().wrapping_add(s);
                if !racing {
                    if line.keys[s] == 0 {
                        // SAFETY: the slot is free and only this writer fills it.
                        unsafe { line::store(p, slot) };
                        return true;
                    }
                    continue;
                }
                if line.keys[s] == slot.key {
                    return false;
                }
                // A slot with ids but no key yet is being filled by another writer.
                // SAFETY: `p` is a live slot of this table; sharing checked the CPU.
                if line.keys[s] == 0 && line.words[s] == [0; 4] && unsafe { line::claim(p, slot) } {
                    return true;
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds `key` with `ids` if there is room ([`entry_limit`], and the
    /// spill's capacity); true if the key is in the store afterwards. `racing`: other
    /// threads may be inserting too (a shared table); else the caller holds the only
    /// handle.
    fn insert(&self, key: u128, hash: u64, ids: &[u32], racing: bool) -> bool {
        let home = (hash as usize) & (self.pairs.len() - 1);
        if self.find(key, home).is_some() {
            return true;
        }
        let len = self.fill.len.load(Relaxed);
        if len + 1 > self.max_len {
            self.fill.full.store(true, Relaxed);
            return false;
        }
        let mut slot = Slot {
            key,
            ids: [0; SHORT_IDS],
            n: ids.len() as u32,
        };
        if ids.len() <= SHORT_IDS {
            slot.ids[..ids.len()].copy_from_slice(ids);
        } else {
            let Some(start) = self.spill.reserve(ids.len()) else {
                return false;
            };
            for (word, &id) in self.spill.words[start..].iter().zip(ids) {
                word.store(id, Relaxed);
            }
            slot.ids[0] = start as u32;
        }
        if self.put(slot, home, racing) {
            self.fill.len.fetch_add(1, Relaxed);
        }
        true
    }
}

/// The most entries a store of `pairs` pairs takes: one per pair (half its slots)
/// while it may still double, as at 3/4 walks past the home pair made en-small 20%
/// slower; 5/8 of its slots once it is at its size limit, where a piece left out is
/// looked up in the long cache, or merged again, at every occurrence, and the pieces
/// the extra room takes are the rarest (added last). With o200k the en corpus has
/// 579K distinct short pieces, more than the 524K of a 32 MB table at 1/2: warm
/// encodes of en, 310 -> 326 MB/s (`encode_bench`, medians of 4 alternating runs).
fn entry_limit(pairs: usize, max_pairs: usize) -> usize {
    match pairs >= max_pairs {
        true => pairs + pairs / 4,
        false => pairs,
    }
}

/// A handle on a short table: the owner's (which may grow it), or one of the
/// handles of a table shared by several threads ([`ShortTable::share`]).
#[derive(Debug)]
pub struct ShortTable {
    store: Arc<Store>,
    max_pairs: usize,
    /// Other threads read and fill this store (racing inserts), and it never grows.
    shared: bool,
}

impl ShortTable {
    /// A table of `pairs` pairs (a power of two) that may double up to `max_pairs`,
    /// with room for `spill` ids of many-id pieces. A table with `pairs == max_pairs`
    /// never allocates after it is made.
    pub fn new(pairs: usize, max_pairs: usize, spill: usize) -> Self {
        Self::try_new(pairs, max_pairs, spill)
            .unwrap_or_else(|e| panic!("{e}; use ShortTable::try_new for sizes from input"))
    }

    /// [`ShortTable::new`], or an error where the memory cannot be had.
    pub fn try_new(pairs: usize, max_pairs: usize, spill: usize) -> Result<Self> {
        let pairs = pairs
            .max(1)
            .checked_next_power_of_two()
            .unwrap_or(usize::MAX);
        let oom = || Error::out_of_memory::<Pair>("a piece cache", pairs);
        let spill = Arc::new(Spill::try_new(spill).ok_or_else(oom)?);
        Ok(Self {
            store: Arc::new(Store::try_new(pairs, max_pairs.max(pairs), spill).ok_or_else(oom)?),
            max_pairs: max_pairs.max(pairs),
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
            max_pairs: self.max_pairs,
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
        (hash as usize) & (self.store.pairs.len() - 1)
    }

    /// Asks the CPU to start loading the line a lookup of `hash` reads first.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the index is masked into the table; a prefetch never faults.
        unsafe {
            let p = self.store.line(self.home(hash));
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
        let p = self.store.line(self.home(hash));
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `p` is a line of the table; SSE2 is part of the x86_64 baseline.
        unsafe {
            sse2::probe_pair(p, key)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            // SAFETY: `p` is a line of the table.
            let line = unsafe { line::load(p) };
            let hit_a = line.keys[0] == *key;
            let words = if hit_a { line.words[0] } else { line.words[1] };
            (Words(words), hit_a | (line.keys[1] == *key))
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
        let full = self.store.fill.len.load(Relaxed) + 1 > self.store.pairs.len();
        if full && self.store.pairs.len() < self.max_pairs {
            self.grow();
        }
        self.store.insert(key, hash, ids, false)
    }

    /// Whether the table may still double (it stops where memory ran out).
    pub fn can_grow(&self) -> bool {
        self.store.pairs.len() < self.max_pairs
    }

    /// Whether an insert found this table full while it could still grow: a shared
    /// table is replaced by a larger copy ([`Self::grown`]) between chunks.
    pub fn wants_growth(&self) -> bool {
        self.store.fill.full.load(Relaxed) && self.store.pairs.len() < self.max_pairs
    }

    /// A copy of this shared table, twice the size, made while other threads may
    /// still read and insert (an entry added meanwhile may be left out: it is a
    /// cache). Handles on the old table keep it alive until they are replaced.
    ///
    /// Where the memory cannot be had, a handle on this table that never asks to
    /// grow again: a cache that stops growing only costs merges.
    pub fn grown(&self) -> Self {
        match self.store.doubled(self.max_pairs) {
            Some(store) => Self {
                store: Arc::new(store),
                max_pairs: self.max_pairs,
                shared: self.shared,
            },
            None => Self {
                store: Arc::clone(&self.store),
                max_pairs: self.store.pairs.len(),
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
    /// 2-thread encode of the 116 MB English corpus on the 2-core test VM, waiting
    /// for those flushes took from nothing to 5% of the CPU time, by the host's load
    /// (perf, gpt2).
    pub fn populate(&self) {
        let (pairs, next) = (&self.store.pairs, &self.store.fill.next_block);
        let blocks = pairs.blocks();
        // A load first: a populated table's line is not written again.
        while next.load(Relaxed) < blocks {
            let block = next.fetch_add(1, Relaxed);
            if block < blocks && !pairs.populate_block(block) {
                // The kernel cannot: leave the rest to ordinary faults.
                next.store(blocks, Relaxed);
            }
        }
    }

    /// Makes an own table at least `pairs` pairs (within its limit) now, rather than
    /// doubling as it fills: an empty one is replaced, a filled one grown. Shared
    /// tables are left as they are.
    ///
    /// Why: each doubling rehashes every entry into fresh memory; a cold encode of
    /// en-small grew 2 -> 8 MB in two steps and rehashed 96K entries.
    pub fn reserve_pairs(&mut self, pairs: usize) {
        let pairs = pairs.min(self.max_pairs).next_power_of_two();
        if self.shared || self.capacity_pairs() >= pairs {
            return;
        }
        if self.is_empty() {
            if let Ok(t) = Self::try_new(pairs, self.max_pairs, self.store.spill.words.len()) {
                *self = t;
            }
            return;
        }
        while self.capacity_pairs() < pairs && self.capacity_pairs() < self.max_pairs {
            self.grow();
        }
    }

    /// Doubles the table; where the memory cannot be had, it stays as it is and
    /// stops growing (a cache that stops growing only costs merges).
    #[cold]
    fn grow(&mut self) {
        match self.store.doubled(self.max_pairs) {
            Some(store) => self.store = Arc::new(store),
            None => self.max_pairs = self.store.pairs.len(),
        }
    }

    /// Pairs in the table now.
    pub fn capacity_pairs(&self) -> usize {
        self.store.pairs.len()
    }
}

impl Store {
    /// A store of twice the pairs holding this one's entries, with the same spill.
    fn doubled(&self, max_pairs: usize) -> Option<Self> {
        let old = self;
        let bigger = Store::try_new(old.pairs.len() * 2, max_pairs, Arc::clone(&old.spill))?;
        let mut copied = 0;
        for i in 0..old.pairs.len() {
            // SAFETY: `i` is a line of the old table; lines are read as the `line`
            // module allows while other threads fill free slots.
            let line = unsafe { line::load(old.line(i)) };
            for s in 0..2 {
                let key = line.keys[s];
                if key != 0 {
                    let [a, b, c, n] = line.words[s];
                    let slot = Slot {
                        key,
                        ids: [a, b, c],
                        n,
                    };
                    bigger.put(
                        slot,
                        (piecekey::hash(key) as usize) & (bigger.pairs.len() - 1),
                        false,
                    );
                    copied += 1;
                }
            }
        }
        bigger.fill.len.store(copied, Relaxed);
        Some(bigger)
    }
}

impl ShortTable {
    /// Empties the table; a handle of a shared table gets a fresh table of its own.
    pub fn clear(&mut self) {
        *self = Self::new(
            self.store.pairs.len(),
            self.max_pairs,
            self.store.spill.words.len(),
        );
    }

    pub fn len(&self) -> usize {
        self.store.fill.len.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_of(t: &ShortTable, piece: &[u8]) -> Option<Vec<u32>> {
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
    fn grows_keeps_everything_then_stops_at_limit() {
        let mut t = ShortTable::new(2, 64, 100);
        let pieces: Vec<Vec<u8>> = (0u32..200).map(|i| i.to_le_bytes().to_vec()).collect();
        let ids = |i: usize| -> Vec<u32> { (0..1 + i % 7).map(|j| (i * 10 + j) as u32).collect() };
        let mut added = Vec::new();
        for (i, p) in pieces.iter().enumerate() {
            let k = piecekey::key_of(p);
            let h = piecekey::hash(k);
            assert!(t.get_words(k, h).is_none());
            added.push(t.insert(k, h, &ids(i)));
        }
        // 64 pairs at their size limit hold 80 pieces; spilled ids fit in 100 words.
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
        t.clear();
        assert!(t.is_empty());
        assert_eq!(ids_of(&t, b"ab"), None);
    }

    #[test]
    fn threads_populate_a_shared_table_together_while_others_fill_it() {
        // 8 MiB of pairs: four 2 MiB blocks for the threads to split.
        let pairs = (8 << 20) / std::mem::size_of::<Pair>();
        let mut owner = ShortTable::new(pairs, pairs, 1 << 12);
        let k = piecekey::key_of(b"before");
        assert!(owner.insert(k, piecekey::hash(k), &[7]));
        let handles: Vec<ShortTable> = (0..3).filter_map(|_| owner.share()).collect();
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
        assert_eq!(store.pairs.blocks(), 4);
        assert!(store.fill.next_block.load(Relaxed) >= 4);
        assert_eq!(ids_of(&owner, b"before"), Some(vec![7]));
        if ShortTable::can_share() {
            for t in 0..3u8 {
                assert_eq!(ids_of(&owner, &[b'p', t]), Some(vec![u32::from(t)]));
            }
        }
    }

    #[test]
    fn shared_handles_insert_and_read_concurrently() {
        if !ShortTable::can_share() {
            return;
        }
        let mut owner = ShortTable::new(1 << 12, 1 << 12, 1 << 12);
        let handles: Vec<ShortTable> = (0..4).map(|_| owner.share().unwrap()).collect();
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
        let before = owner.capacity_pairs();
        for i in 0..5000u32 {
            let k = piecekey::key_of(&(i + 100_000).to_le_bytes());
            owner.insert(k, piecekey::hash(k), &[1]);
        }
        assert_eq!(owner.capacity_pairs(), before);
        assert!(!owner.insert(k, piecekey::hash(k), &[1]));
    }

    #[test]
    fn writers_racing_for_the_same_slots_lose_nothing() {
        if !ShortTable::can_share() {
            return;
        }
        let ids = |i: u32| -> Vec<u32> { (0..1 + i % 6).map(|j| i * 8 + j + 1).collect() };
        for round in 0..1500u32 {
            // A small table, so the threads' pieces share home lines and the threads
            // race for the same free slots. Threads 0-1 add the same pieces (a race of
            // equal entries), threads 2-3 pieces of their own (a race of different
            // ones, which a lost claim would corrupt or drop).
            let mut owner = ShortTable::new(256, 256, 1 << 12);
            let handles: Vec<ShortTable> = (0..4).map(|_| owner.share().unwrap()).collect();
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
        pairs: usize,
        max_pairs: usize,
        spill: usize,
    ) -> Option<(ShortTable, ShortTable)> {
        let mut owner = ShortTable::new(pairs, max_pairs, spill);
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
        assert_eq!(bigger.capacity_pairs(), 32);
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
        let mut t = ShortTable::new(4, 64, 100);
        t.reserve_pairs(16);
        assert_eq!(t.capacity_pairs(), 16);
        let keys: Vec<u128> = (0u32..10)
            .map(|i| piecekey::key_of(&i.to_le_bytes()))
            .collect();
        for (i, &k) in keys.iter().enumerate() {
            assert!(t.insert(k, piecekey::hash(k), &[i as u32]));
        }
        t.reserve_pairs(1000);
        assert_eq!(t.capacity_pairs(), 64);
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(
                t.get_words(k, piecekey::hash(k)).map(|(w, _)| w[0]),
                Some(i as u32)
            );
        }
        t.reserve_pairs(8);
        assert_eq!(t.capacity_pairs(), 64);
    }

    #[test]
    fn fixed_table_never_reallocates() {
        let mut t = ShortTable::new(8, 8, 20);
        let spill = t.store.spill.words.as_ptr();
        for i in 0u32..100 {
            let k = piecekey::key_of(&i.to_le_bytes());
            t.insert(k, piecekey::hash(k), &[i; 6]);
        }
        assert_eq!(t.capacity_pairs(), 8);
        assert_eq!(t.store.spill.words.as_ptr(), spill);
        assert_eq!(t.len(), 3); // 20 spill words hold three pieces of six ids
    }
}
