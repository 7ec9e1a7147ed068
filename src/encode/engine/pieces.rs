//! A batch of pieces for the encode loop (`batch`): their byte ranges from the
//! scanner, then their keys and hashes, with their short-table lines prefetched.

use crate::encode::cache::{long_hash, Lines, LongCache};
use crate::piecekey;

/// Pieces per batch.
const BATCH: usize = 256;

/// Flags in the top bits of the loop's keys, which no entry has (a real key's top
/// byte is its length, 1 to 15): a piece longer than [`piecekey::KEY_LEN`], and a special
/// token (its id in the low bits). Both miss the probe and go the slow way.
pub(super) const LONG_KEY: u128 = 1 << 127;
pub(super) const SPECIAL_KEY: u128 = 1 << 126;

/// A batch of pieces: their byte ranges (a special token's is `(SPECIAL_START, id)`),
/// then (once keyed) their keys and hashes.
#[derive(Debug)]
pub(super) struct Batch {
    pub(super) spans: [(usize, usize); BATCH],
    pub(super) keys: [u128; BATCH],
    /// With [`NEAR`] more, which the emit prefetches past the last piece: stale or
    /// zero, they only ask for a line that is not needed.
    pub(super) hashes: [u64; BATCH + NEAR],
    /// The `long_hash` of each long piece (others' are stale).
    pub(super) long_hashes: [u64; BATCH],
    pub(super) len: usize,
}

/// The start of a special token's span, which no text piece has.
const SPECIAL_START: usize = usize::MAX;

impl Default for Batch {
    fn default() -> Self {
        Self {
            spans: [(0, 0); BATCH],
            keys: [0; BATCH],
            hashes: [0; BATCH + NEAR],
            long_hashes: [0; BATCH],
            len: 0,
        }
    }
}

impl Batch {
    /// Records the piece at `start..end` of the text; true when the batch is full.
    #[inline(always)]
    pub(super) fn push(&mut self, start: usize, end: usize) -> bool {
        if let Some(slot) = self.spans.get_mut(self.len) {
            *slot = (start, end);
            self.len += 1;
        }
        self.len == BATCH
    }

    /// Records a special token (a piece of its own); true when the batch is full.
    pub(super) fn push_special(&mut self, id: u32) -> bool {
        self.push(SPECIAL_START, id as usize)
    }

    pub(super) fn clear(&mut self) {
        self.len = 0;
    }

    /// The most ids emitting this batch can add, with the emit's room for four words
    /// at every write: every id covers at least a byte of its piece, and the text
    /// pieces lie in order between the first one's start and the last one's end.
    pub(super) fn max_ids(&self) -> usize {
        let spans = &self.spans[..self.len];
        let text = |s: &&(usize, usize)| s.0 != SPECIAL_START;
        let bytes = match (spans.iter().find(text), spans.iter().rev().find(text)) {
            (Some(first), Some(last)) => last.1.saturating_sub(first.0),
            _ => 0,
        };
        bytes + 4 * self.len + 8
    }
}

/// The loop's key of a piece less than 16 bytes from the end of the text, or of a
/// special token.
#[cold]
#[inline(never)]
fn rare_key(bytes: &[u8], start: usize, end: usize) -> u128 {
    if start == SPECIAL_START {
        return SPECIAL_KEY | end as u128;
    }
    match bytes.get(start..end).map_or(0, piecekey::key_of) {
        0 => LONG_KEY,
        key => key,
    }
}

impl Batch {
    /// Keys every piece and prefetches its table line into L2; a long piece's, too,
    /// in the long cache. Then asks for the text two batches on ([`prefetch_text`]).
    /// The long-piece branch costs little: on the multilingual corpus, where 7% of the
    /// pieces are long, a long-cache hit waited on memory for 12% of a warm encode
    /// before its slot was prefetched.
    ///
    /// Why a loop of its own, before the emit of the previous batch rather than
    /// interleaved with it: the two together kept more values than there are
    /// registers, and ran ~120 instructions a piece, a sixth of them stack loads and
    /// stores (callgrind, o200k, warm).
    #[inline(always)]
    pub(super) fn key_all(&mut self, bytes: &[u8], short: Lines<'_>, long: &LongCache) {
        let n = self.len;
        // A piece that starts before this has 16 bytes of text from its start.
        const _: () = assert!(piecekey::KEY_LEN + 1 == 16);
        let window_end = bytes.len().saturating_sub(piecekey::KEY_LEN);
        let spans = &self.spans[..n];
        let (keys, hashes) = (&mut self.keys[..n], &mut self.hashes[..n]);
        for i in 0..n {
            let (start, end) = spans[i];
            let len = end.wrapping_sub(start);
            // Away from the end of the text the key is one load and a mask.
            let key = if start < window_end {
                // SAFETY: `start + 16 <= bytes.len()`, as `start < window_end`.
                let window = unsafe { &*bytes.as_ptr().add(start).cast::<[u8; 16]>() };
                piecekey::key_in(window, len) | (u128::from(len > piecekey::KEY_LEN) << 127)
            } else {
                rare_key(bytes, start, end)
            };
            let hash = piecekey::hash(key);
            short.prefetch_l2(hash);
            if key & LONG_KEY != 0 {
                let h = long_hash(bytes.get(start..end).unwrap_or_default());
                long.prefetch(h);
                self.long_hashes[i] = h;
            }
            keys[i] = key;
            hashes[i] = hash;
        }
        // A batch that ends with a special token has no text end to measure from (its
        // span holds the token's id); one that starts with one asks for the most.
        if let (Some(&(start, _)), Some(&(last, end))) = (spans.first(), spans.last()) {
            if last != SPECIAL_START {
                let covered = match start {
                    SPECIAL_START => TEXT_MOST,
                    _ => end.saturating_sub(start),
                };
                prefetch_text(bytes, end, covered);
            }
        }
    }
}

/// How far past the end of a keyed batch its text is asked for: about two batches of
/// English (4 bytes a piece). 4 KiB measured the same.
#[cfg(target_arch = "x86_64")]
const TEXT_AHEAD: usize = 2048;
/// The most text asked for after one batch.
const TEXT_MOST: usize = 4096;

/// Asks for the text the scanner reads two batches on, into L1: from [`TEXT_AHEAD`]
/// past `end`, as many bytes as this batch covered (`covered`, at most
/// [`TEXT_MOST`]) and the line after them.
///
/// Why: in a warm encode of text that is not in the cache, the scanner's samples
/// waited on the load of its next 64 bytes: 45% of them in `encode_bench` of the en
/// corpus (a 116 MB text), 22% in `encode_file` of owt-1G (a chunk after its UTF-8
/// check). Each batch's 256 table lines pass through L2 between the scanner's reads,
/// and the hardware's prefetch of the text did not keep up. Asked for here, 6% of
/// them in `encode_file` (perf, gpt2). `encode_bench` on en (one thread, two builds
/// run at once on the two cores, 24 runs each): 227 -> 260 MB/s. `encode_file` of
/// owt-1G on 2 threads, 3 alternating fresh processes: first call 254-347 -> 336-392
/// MB/s, second call 370-421 -> 396-440.
#[inline(always)]
fn prefetch_text(bytes: &[u8], end: usize, covered: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let from = end.saturating_add(TEXT_AHEAD);
        let to = from
            .saturating_add(covered.min(TEXT_MOST) + 64)
            .min(bytes.len());
        let mut at = from;
        while at < to {
            // SAFETY: `at < bytes.len()`, so the address is inside `bytes`; a
            // prefetch only asks for a line, and never faults.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    bytes.as_ptr().add(at).cast::<i8>(),
                );
            }
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, end, covered);
}

/// How many pieces ahead of its emit a piece's line is moved from L2 into L1.
pub(super) const NEAR: usize = 4;
