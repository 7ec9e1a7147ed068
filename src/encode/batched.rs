//! The encoder's inner loop: pieces from the scanner are keyed, their short-table
//! lines prefetched, and looked up and emitted a batch later.
//!
//! Why this shape (perf, en-small, gpt2, one thread, all lines warm in the table):
//! - the scanner's callback only records each piece's range, so it is inlined into
//!   the scanner's loops; a callback that also keyed the piece and emitted full
//!   batches was compiled as a call per piece, with its registers saved each time.
//! - one loop keys and prefetches the new batch's pieces while it emits the previous
//!   batch's, so each line has a whole batch of work to arrive in and the prefetches
//!   are spread out (a burst of 64 waited on the CPU's few outstanding-miss slots).
//! - the emit writes four id words whatever the piece and advances by its count; the
//!   one branch per piece is "was it found at home with at most three ids".

use super::encoder::{Encoder, Workspace};
use super::short::{short_hash, short_key, short_key_in, SHORT_IDS, SHORT_LEN};

/// Pieces per batch.
pub const BATCH: usize = 64;

/// The loop's key of every piece longer than [`SHORT_LEN`]: no entry has it, since a
/// real key's top byte is its length (1 to 15).
const LONG_KEY_FLAG: u128 = 1 << 127;

/// A batch of pieces: their byte ranges, then (once keyed) their keys and hashes.
pub struct Batch {
    spans: [(usize, usize); BATCH],
    keys: [u128; BATCH],
    hashes: [u64; BATCH],
    len: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Self {
            spans: [(0, 0); BATCH],
            keys: [0; BATCH],
            hashes: [0; BATCH],
            len: 0,
        }
    }
}

impl Batch {
    /// Records a piece; true when the batch is full.
    #[inline(always)]
    pub fn push(&mut self, start: usize, end: usize) -> bool {
        if let Some(span) = self.spans.get_mut(self.len) {
            *span = (start, end);
            self.len += 1;
        }
        self.len == BATCH
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }
}

impl Encoder {
    /// Keys and prefetches the pieces of `next` while it emits those of `ready`
    /// (keyed by the previous step) onto `out`; then `ready` is done and `next`
    /// becomes the batch to emit.
    #[inline(never)]
    pub(super) fn step(
        &self,
        bytes: &[u8],
        next: &mut Batch,
        ready: &Batch,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) {
        let (n_new, n_old) = (next.len, ready.len);
        // Room for four words at every write: a fast piece adds at most three.
        out.reserve(n_old * SHORT_IDS + 4);
        let mut written = out.len();
        let mut dst = out.as_mut_ptr();
        for i in 0..n_new.max(n_old) {
            if i < n_new {
                let (start, end) = next.spans[i];
                let len = end - start;
                // Away from the end of the text the key is one load and a mask.
                let key = match bytes.get(start..).and_then(<[u8]>::first_chunk::<16>) {
                    Some(window) => short_key_in(window, len),
                    None => bytes.get(start..end).map_or(0, short_key),
                };
                let key = key | (u128::from(len > SHORT_LEN) << 127);
                let hash = short_hash(key);
                ws.short.prefetch(hash);
                next.keys[i] = key;
                next.hashes[i] = hash;
            }
            if i < n_old {
                let (words, found) = ws.short.probe_home(&ready.keys[i], ready.hashes[i]);
                let n = words[3] as usize;
                let fast = found & (n <= SHORT_IDS);
                // SAFETY: `written + 4 <= capacity`: reserved above for the whole
                // batch and again after any slow piece. Only the `n` words of a fast
                // piece become part of the vector.
                unsafe { dst.add(written).cast::<[u32; 4]>().write_unaligned(words) };
                written += if fast { n } else { 0 };
                if !fast {
                    // SAFETY: every word below `written` was written.
                    unsafe { out.set_len(written) };
                    let (start, end) = ready.spans[i];
                    let key = match ready.keys[i] & LONG_KEY_FLAG {
                        0 => ready.keys[i],
                        _ => 0,
                    };
                    self.encode_slow(&bytes[start..end], key, ready.hashes[i], ws, out);
                    out.reserve((n_old - i) * SHORT_IDS + 4);
                    written = out.len();
                    dst = out.as_mut_ptr();
                }
            }
        }
        // SAFETY: every word below `written` was written.
        unsafe { out.set_len(written) };
    }
}
