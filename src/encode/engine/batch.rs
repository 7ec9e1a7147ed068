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

use super::miss::encode_slow;
use super::pieces::{Batch, LONG_KEY, NEAR, SPECIAL_KEY};
use super::workspace::Workspace;
use crate::encode::cache::SHORT_IDS;
use crate::encode::vocab::Bpe;
use crate::error::{Error, Result};

/// Where the emit writes: `out`'s buffer and length, kept in registers between slow
/// pieces (through `out` they were reloaded after every store).
struct Emit {
    dst: *mut u32,
    written: usize,
}

impl Emit {
    /// Room for four words at every write (a fast piece adds at most three) for
    /// `pieces` more pieces.
    #[inline(always)]
    fn open(out: &mut Vec<u32>, pieces: usize) -> Self {
        out.reserve(pieces * SHORT_IDS + 4);
        Self {
            dst: out.as_mut_ptr(),
            written: out.len(),
        }
    }

    #[inline(always)]
    fn close(&self, out: &mut Vec<u32>) {
        // SAFETY: every word below `written` was written, within the capacity.
        unsafe { out.set_len(self.written) };
    }
}

/// Emits piece `i` of `batch` (keyed) onto `out`, of which `emit` holds the end.
#[inline(always)]
fn emit_piece(
    bpe: &Bpe,
    batch: &Batch,
    i: usize,
    bytes: &[u8],
    ws: &mut Workspace,
    out: &mut Vec<u32>,
    emit: &mut Emit,
) {
    let (words, found) = ws.short.probe_home(&batch.keys[i], batch.hashes[i]);
    let n = words.count();
    let fast = found & (n <= SHORT_IDS);
    // SAFETY: `written + 4 <= capacity`, as `Emit::open` reserved. Only the `n`
    // words of a fast piece become part of the vector.
    unsafe { words.write(emit.dst.add(emit.written)) };
    emit.written += if fast { n } else { 0 };
    if !fast {
        emit.close(out);
        let (start, end) = batch.spans[i];
        let key = batch.keys[i];
        if found {
            // At home with more than three ids, in the spill arena: runs of spaces
            // after a newline (2.6% of the pieces of the en corpus with gpt2) no
            // longer look their entry up again on the slow path.
            ws.short.extend_spilled_from(words.first(), n, out);
        } else if key & SPECIAL_KEY != 0 {
            out.push(end as u32);
        } else {
            let (key, hash) = match key & LONG_KEY {
                0 => (key, batch.hashes[i]),
                _ => (0, batch.long_hashes[i]),
            };
            // A piece the table lacks is most likely one of a run of new pieces (a
            // cold encode), each looked up as a whole token before it is merged: the
            // next pieces' lookups are asked for now, to arrive while this one merges.
            if bpe.whole_piece_lookup() {
                for &h in batch
                    .hashes
                    .get(i + 1..batch.len.min(i + 3))
                    .unwrap_or_default()
                {
                    bpe.prefetch_short(h);
                }
            }
            encode_slow(bpe, &bytes[start..end], key, hash, ws, out);
        }
        *emit = Emit::open(out, batch.len - i - 1);
    }
}

/// Keys and prefetches the pieces of `next` while it emits those of `ready`
/// (keyed by the previous step) onto `out`; then `ready` is done and `next`
/// becomes the batch to emit.
///
/// `out` gets room for all of `ready`'s ids first, fallibly, so that no write
/// below grows it (a failed growth would abort the process). An error (out of
/// memory; Ctrl-C in a watched job) leaves `out` partly written.
#[inline(never)]
pub(super) fn step(
    bpe: &Bpe,
    bytes: &[u8],
    next: &mut Batch,
    ready: &Batch,
    ws: &mut Workspace,
    out: &mut Vec<u32>,
) -> Result<()> {
    let need = ready.max_ids();
    if out.capacity() - out.len() < need {
        out.try_reserve(need)
            .map_err(|_| Error::out_of_memory::<u32>("token ids", out.len() + need))?;
    }
    let (n_new, n_old) = (next.len, ready.len);
    ws.prefault.ahead(out, n_old * SHORT_IDS + 4);
    let both = n_new.min(n_old);
    let mut emit = Emit::open(out, n_old);
    for &h in &ready.hashes[..n_old.min(NEAR)] {
        ws.short.prefetch(h);
    }
    for i in 0..both {
        next.key(i, bytes, &ws.short, &ws.long);
        ready.prefetch_near(i, &ws.short);
        emit_piece(bpe, ready, i, bytes, ws, out, &mut emit);
    }
    for i in both..n_new {
        next.key(i, bytes, &ws.short, &ws.long);
    }
    for i in both..n_old {
        ready.prefetch_near(i, &ws.short);
        emit_piece(bpe, ready, i, bytes, ws, out, &mut emit);
    }
    emit.close(out);
    ws.take_failure()?;
    match crate::progress::interrupted() {
        true => Err(Error::Cancelled),
        false => Ok(()),
    }
}
