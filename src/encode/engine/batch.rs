//! The encoder's inner loop: pieces from the scanner are keyed, their short-table
//! lines prefetched, and looked up and emitted a batch later.
//!
//! Why this shape (perf and callgrind, en-small and TinyStories, one thread, all
//! lines warm in the table):
//! - the scanner's callback only records each piece's range, so it is inlined into
//!   the scanner's loops; a callback that also keyed the piece and emitted full
//!   batches was compiled as a call per piece, with its registers saved each time.
//! - a batch is keyed (its lines asked for into L2) and then the previous batch is
//!   emitted, so each line has a whole batch of work to arrive in. Keying 64 pieces
//!   within the emit of 64 others spread their prefetches out, but kept too many
//!   values for the registers; the burst of 256 prefetches that keying now makes was
//!   measured faster (see `Batch::key_all`), warm and cold, on tables in L3 and in
//!   memory.
//! - the emit writes four id words whatever the piece and advances by its count; the
//!   one branch per piece is "was it found at home with at most three ids".

use super::miss::encode_slow;
use super::pieces::{Batch, LONG_KEY, NEAR, SPECIAL_KEY};
use super::workspace::Workspace;
use crate::encode::cache::{CachedIds, SHORT_IDS};
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

/// The slow way for piece `i` of `batch`, which the probe did not settle (`words`
/// and `found` are what it gave): ids spilled, a special token, a long piece, or one
/// the table lacks.
#[inline(always)]
fn emit_slow(
    bpe: &Bpe,
    batch: &Batch,
    i: usize,
    bytes: &[u8],
    (words, found): (CachedIds, bool),
    ws: &mut Workspace,
    out: &mut Vec<u32>,
) {
    let (start, end) = batch.spans[i];
    let key = batch.keys[i];
    if found {
        // At home with more than three ids, in the spill arena: runs of spaces
        // after a newline (2.6% of the pieces of the en corpus with gpt2) no
        // longer look their entry up again on the slow path.
        ws.short
            .extend_spilled_from(words.first(), words.count(), out);
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
}

/// Emits the pieces of `batch` (keyed) onto `out`: each line moved into L1 [`NEAR`]
/// pieces ahead, probed, and its four id words written whatever the piece, `out`
/// advancing by the count; the one branch per piece is "was it found at home with at
/// most three ids".
#[inline(always)]
fn emit_all(bpe: &Bpe, batch: &Batch, bytes: &[u8], ws: &mut Workspace, out: &mut Vec<u32>) {
    let n = batch.len;
    let (keys, hashes) = (&batch.keys[..n], &batch.hashes[..n + NEAR]);
    let mut emit = Emit::open(out, n);
    let mut lines = ws.short.lines();
    for &h in &hashes[..NEAR] {
        lines.prefetch(h);
    }
    for i in 0..n {
        lines.prefetch(hashes[i + NEAR]);
        let (words, found) = lines.probe_home(&keys[i], hashes[i]);
        let count = words.count();
        let fast = found & (count <= SHORT_IDS);
        // SAFETY: `written + 4 <= capacity`, as `Emit::open` reserved. Only the
        // `count` words of a fast piece become part of the vector.
        unsafe { words.write(emit.dst.add(emit.written)) };
        emit.written += if fast { count } else { 0 };
        if !fast {
            emit.close(out);
            emit_slow(bpe, batch, i, bytes, (words, found), ws, out);
            emit = Emit::open(out, n - i - 1);
            // The slow way may have added pieces, and moved the table.
            lines = ws.short.lines();
        }
    }
    emit.close(out);
}

/// Keys and prefetches the pieces of `next`, then emits those of `ready` (keyed by
/// the previous step) onto `out`, while `next`'s lines arrive; then `ready` is done
/// and `next` becomes the batch to emit.
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
    ws.prefault.ahead(out, ready.len * SHORT_IDS + 4);
    next.key_all(bytes, ws.short.lines(), &ws.long);
    emit_all(bpe, ready, bytes, ws, out);
    ws.take_failure()?;
    match crate::progress::interrupted() {
        true => Err(Error::Cancelled),
        false => Ok(()),
    }
}
