//! The hot loop: text -> ids with a thread's [`Workspace`]. The pre-tokenizer's spans
//! go into batches (`batch`); each piece is looked up in the short cache a batch
//! after its line was prefetched, and a piece the probe does not settle takes the
//! slow path (`miss`).
//!
//! Files, lowest first: `pieces` (a batch of pieces, keyed), `workspace`, `prefault`,
//! `leases` (the pool of workspaces), `miss`, `batch`, then the [`Engine`] here,
//! `profile` and `spans` (offsets).

mod batch;
mod leases;
mod miss;
mod pieces;
mod prefault;
mod profile;
mod spans;
mod workspace;

pub(crate) use leases::{Lease, Workspaces};
pub(crate) use prefault::Prefault;
pub use spans::Trim;
pub(crate) use spans::{
    char_ceil, char_floor, space_ends, token_spans, trim, Chars, Cut, Span, Spans, TokenLens,
};
pub(crate) use workspace::{output_buffer, short_lines_for, Workspace};
#[cfg(test)]
pub(crate) use workspace::{BIG_SHORT_LINES, SHORT_LINES};

use crate::encode::cache::long_hash;
use crate::encode::vocab::Bpe;
use crate::error::{Error, Result};
use crate::piecekey;
use crate::pretokenize::Pretokenizer;
use crate::specials::{Segment, Specials};
use pieces::Batch;

/// A vocabulary and a pre-tokenizer: what encoding a text needs besides a workspace.
#[derive(Debug)]
pub(crate) struct Engine {
    pub(crate) bpe: Bpe,
    pub(crate) pretok: Pretokenizer,
    /// The tokens' lengths, for offsets.
    pub(crate) lens: TokenLens,
}

impl Engine {
    /// Appends the ids of one pre-token (outside the batched loop: for profiling).
    pub(crate) fn encode_piece(&self, piece: &[u8], ws: &mut Workspace, out: &mut Vec<u32>) {
        let key = piecekey::key_of(piece);
        let hash = match key {
            0 => long_hash(piece),
            _ => piecekey::hash(key),
        };
        miss::encode_slow(&self.bpe, piece, key, hash, ws, out);
    }

    /// Appends the ids of `text`, recognising the special tokens in `allowed`.
    ///
    /// The scanner only records each piece's range (a special token is a piece of its
    /// own); full batches go through [`batch::step`], which keys and prefetches one
    /// batch and then emits the one before, so each table line has a whole batch of
    /// work (~2 us) to arrive in. The batches run on across special tokens: ending
    /// them at each document cost the first batch of every document its prefetches.
    pub(crate) fn encode_into(
        &self,
        text: &str,
        allowed: &Specials,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        // The workspace's batches (24 KB): two new ones for every call (6 KB zeroed, at
        // 64 pieces a batch) were 12% of the instructions of a per-document encode with
        // GPT-NeoX, whose runs of spaces are added tokens that cut a document into ~270
        // texts.
        let mut pair = ws.batches.take().unwrap_or_default();
        let [a, b] = &mut *pair;
        a.clear();
        b.clear();
        let result = self.encode_batches(text, allowed, a, b, ws, out);
        ws.batches = Some(pair);
        result
    }

    fn encode_batches<'b>(
        &self,
        text: &str,
        allowed: &Specials,
        mut next: &'b mut Batch,
        mut ready: &'b mut Batch,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        let bytes = text.as_bytes();
        let mut result = Ok(());
        // Why the batches stopped (out of memory, Ctrl-C): the scanner runs on to the
        // end of its segment, but no batch is looked up or emitted after it.
        let mut halt = None;
        allowed.matcher.split(text, |seg| match seg {
            Segment::Text(t) if result.is_ok() => {
                // Spans of a segment, made spans of `text`.
                let base = (t.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize);
                // Captured by `move`, as references made here: borrowed by the
                // closure, two of them lived on the stack and were loaded again for
                // every piece (callgrind, gpt2: +1% instructions).
                let (next, ready, halt, ws, out) =
                    (&mut next, &mut ready, &mut halt, &mut *ws, &mut *out);
                result = self.pretok.for_each_span(t, move |start, end| {
                    if next.push(base + start, base + end) {
                        self.turn(bytes, next, ready, ws, out, halt);
                    }
                });
            }
            Segment::Text(_) => {}
            Segment::Special(i) => {
                if next.push_special(allowed.ids[i]) {
                    self.turn(bytes, &mut next, &mut ready, ws, out, &mut halt);
                }
            }
        });
        result?;
        halt.map_or(Ok(()), Err)?;
        batch::step(&self.bpe, bytes, next, ready, ws, out)?;
        ready.clear();
        batch::step(&self.bpe, bytes, ready, next, ws, out)
    }

    /// Appends the ids of `text` (recognising the special tokens in `allowed`) and
    /// their character spans in it, which `chars` counts.
    pub(crate) fn encode_spans(
        &self,
        text: &str,
        allowed: &Specials,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
        spans: &mut Vec<Span>,
        chars: &mut Chars<'_>,
    ) -> Result<()> {
        let none = Specials::default();
        let mut result = Ok(());
        let mut at = 0;
        allowed.matcher.split(text, |seg| {
            if result.is_err() {
                return;
            }
            match seg {
                Segment::Text(t) => {
                    at = (t.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
                    let first = out.len();
                    let base = chars.at(at);
                    result = self.encode_into(t, &none, ws, out).and_then(|()| {
                        let ids = &out[first..];
                        token_spans(&self.bpe, &self.lens, ids, t.len(), spans, |c| {
                            [base + c.first, base + c.last]
                        })
                    });
                    at += t.len();
                }
                Segment::Special(i) => {
                    let len = allowed.matcher.tokens()[i].len();
                    out.push(allowed.ids[i]);
                    spans.push(chars.span([at, at + len]));
                    at += len;
                }
            }
        });
        result
    }

    /// A full `next` batch: key it, emit `ready`, then the two trade places (by
    /// reference: by value, a swap copies 12 KB) and the new `next` starts empty.
    /// After a failure (kept in `halt`) batches are only dropped.
    #[inline(always)]
    fn turn<'b>(
        &self,
        bytes: &[u8],
        next: &mut &'b mut Batch,
        ready: &mut &'b mut Batch,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
        halt: &mut Option<Error>,
    ) {
        if halt.is_none() {
            *halt = batch::step(&self.bpe, bytes, next, ready, ws, out).err();
        }
        std::mem::swap(next, ready);
        next.clear();
    }
}
