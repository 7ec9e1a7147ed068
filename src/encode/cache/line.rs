//! Reading and writing lines that other threads may be reading or filling.
//!
//! A table shared by the threads of a file encode is read and filled with no lock.
//! On x86_64 each slot's 16-byte halves are moved by single aligned SSE
//! instructions, written ids first and key last, and a line is read keys first: x86
//! keeps stores in order and loads in order, and CPUs with AVX move aligned 16 bytes
//! atomically (Intel SDM 8.1.1, AMD APM 7.3.2), so a reader that sees a key sees its
//! ids. Writers racing for a free slot claim it by a 16-byte compare-and-swap of its
//! ids half against zero (the count in it is never zero), so one of them wins; a
//! claimed slot is not free to others, and its key is 0, so no reader matches it
//! until the key is stored. The moves are inline assembly, outside Rust's memory
//! model, so the compiler neither splits nor reorders them. Elsewhere the plain
//! reads and writes are only used by one thread ([`ShortCache::share`](super::ShortCache::share) is
//! x86_64 only).
//!
//! A line holds two 32-byte slots; each slot is a piece's key and up to
//! [`SHORT_IDS`] ids with their count, so a lookup that lands in its home line reads
//! exactly one cache line.

use crate::hugemem::Zeroable;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m128i, _mm_cvtsi128_si32, _mm_shuffle_epi32, _mm_storeu_si128};

/// Ids held in a slot; a piece with more keeps them in the table's spill arena.
pub(crate) const SHORT_IDS: usize = 3;

/// One entry: `key` as built by [`piecekey::key_of`] (0: empty), the ids, and their count.
/// `ids` and `n` are adjacent so an emit copies all four words in one store. When
/// `n > SHORT_IDS`, `ids[0]` is where the ids start in the spill arena (runs of spaces
/// after a newline are 4-15 ids with gpt2: 2% of the pieces of the en corpus).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(super) struct Slot {
    pub(super) key: u128,
    pub(super) ids: [u32; SHORT_IDS],
    pub(super) n: u32,
}

impl Slot {
    /// The three id words and the count, for an emit that writes all four and then
    /// advances by the count (no loop, no branch on the count). A count above
    /// [`SHORT_IDS`] means the ids are spilled: see [`super::ShortCache::extend_spilled`].
    #[inline]
    pub(super) fn words(&self) -> ([u32; 4], usize) {
        (
            [self.ids[0], self.ids[1], self.ids[2], self.n],
            self.n as usize,
        )
    }
}

/// A slot's three id words and count as the emit loop's probe gives them: kept in a
/// vector register on x86_64 (as a `[u32; 4]` the compiler split its store in three).
#[derive(Clone, Copy)]
pub(crate) struct CachedIds(
    #[cfg(target_arch = "x86_64")] __m128i,
    #[cfg(not(target_arch = "x86_64"))] [u32; 4],
);

impl CachedIds {
    /// The id count (more than [`SHORT_IDS`]: the ids are spilled).
    #[inline(always)]
    pub(crate) fn count(self) -> usize {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on has
        // it; the intrinsics only compute on a register value.
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
    pub(crate) fn first(self) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `count`: SSE2 is baseline, and this reads only a register.
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
    pub(crate) unsafe fn write(self, dst: *mut u32) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller gives 16 writable bytes at `dst`; `storeu` needs no
        // alignment, and SSE2 is part of the x86_64 baseline.
        unsafe {
            _mm_storeu_si128(dst.cast(), self.0)
        };
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: the caller gives 16 writable bytes at `dst`; unaligned is allowed.
        unsafe {
            dst.cast::<[u32; 4]>().write_unaligned(self.0)
        };
    }
}

/// Two slots in one cache line: a probe reads both at the cost of one miss.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
pub(super) struct Line(pub(super) [Slot; 2]);

// SAFETY: all-zero bytes are a valid `Line`: two empty slots.
unsafe impl Zeroable for Line {}

/// The two keys and the two slots' words of the line at `p`.
pub(super) struct LineView {
    pub(super) keys: [u128; 2],
    pub(super) words: [[u32; 4]; 2],
}

/// # Safety
/// `p` must point to a live `Line`.
#[inline(always)]
pub(super) unsafe fn load(p: *const Line) -> LineView {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the caller gives a live `Line`.
        let [ka, kb, wa, wb] = unsafe { sse2::load_line(p) };
        // SAFETY: `__m128i`, `u128` and `[u32; 4]` are all 16 bytes of plain data
        // with no invalid bit patterns.
        let (ka, kb, wa, wb) = unsafe {
            use std::mem::transmute;
            (
                transmute::<std::arch::x86_64::__m128i, u128>(ka),
                transmute::<std::arch::x86_64::__m128i, u128>(kb),
                transmute::<std::arch::x86_64::__m128i, [u32; 4]>(wa),
                transmute::<std::arch::x86_64::__m128i, [u32; 4]>(wb),
            )
        };
        LineView {
            keys: [ka, kb],
            words: [wa, wb],
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: the caller gives a live `Line`, and no other thread writes it
        // (sharing a table between threads is x86_64 only).
        let [a, b] = unsafe { std::ptr::read(p) }.0;
        LineView {
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
pub(super) unsafe fn store(p: *mut Slot, slot: Slot) {
    let (words, _) = slot.words();
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller gives a live, 32-byte aligned `Slot`, so both aligned
    // 16-byte stores are inside it; the transmutes are between 16-byte plain-data
    // types.
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
    // SAFETY: the caller gives a live `Slot` that no other thread touches.
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
/// `cmpxchg16b` ([`super::ShortCache::can_share`]).
#[inline]
pub(super) unsafe fn claim(p: *mut Slot, slot: Slot) -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller gives a live, 32-byte aligned `Slot` and a CPU with
    // `cmpxchg16b`: its ids half at `p + 16` is 16-byte aligned for `cas16`, and the
    // key store is an aligned 16 bytes inside it. The transmutes are between
    // 16-byte plain-data types.
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
    // SAFETY: per the caller; without sharing no other writer races for the slot.
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

/// The pair probe in SSE2 registers. Plain Rust compiled the choice between the two
/// slots into a branch (which of them holds a piece is a coin flip, so it was
/// mispredicted half the time) or a select of addresses followed by a dependent load.
#[cfg(target_arch = "x86_64")]
pub(super) mod sse2 {
    use super::{CachedIds, Line};
    use std::arch::x86_64::*;

    /// All ones where the 128-bit `a` and `b` are equal, else all zeros.
    #[inline(always)]
    fn eq128(a: __m128i, b: __m128i) -> __m128i {
        // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on has
        // it; the intrinsics only compute on register values.
        unsafe {
            let e = _mm_cmpeq_epi32(a, b);
            let e = _mm_and_si128(e, _mm_shuffle_epi32::<0b01_00_11_10>(e));
            _mm_and_si128(e, _mm_shuffle_epi32::<0b10_11_00_01>(e))
        }
    }

    /// Key A, key B, words A, words B of the line at `p`, loaded in that order (see
    /// this module).
    ///
    /// # Safety
    /// `p` must point to a live `Line` (64-byte aligned).
    #[inline(always)]
    pub(super) unsafe fn load_line(p: *const Line) -> [__m128i; 4] {
        let (ka, kb, wa, wb): (__m128i, __m128i, __m128i, __m128i);
        // SAFETY: the caller gives a live, 64-byte aligned `Line`: four aligned
        // 16-byte loads inside it.
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

    /// The words of the slot of the line at `p` whose key is `key`, and whether
    /// there is one.
    ///
    /// # Safety
    /// `p` must point to a live `Line`.
    #[inline(always)]
    pub(crate) unsafe fn probe_line(p: *const Line, key: &u128) -> (CachedIds, bool) {
        // SAFETY: per the caller.
        let [key_a, key_b, words_a, words_b] = unsafe { load_line(p) };
        // SAFETY: `key` is 16 readable bytes, and `loadu` needs no alignment.
        let k = unsafe { _mm_loadu_si128((key as *const u128).cast()) };
        let hit_a = eq128(key_a, k);
        let hit_b = eq128(key_b, k);
        // SAFETY: SSE2 is part of the x86_64 baseline; only register values.
        let (words, found) = unsafe {
            let words = _mm_or_si128(
                _mm_and_si128(hit_a, words_a),
                _mm_andnot_si128(hit_a, words_b),
            );
            (words, _mm_movemask_epi8(_mm_or_si128(hit_a, hit_b)) != 0)
        };
        (CachedIds(words), found)
    }
}
