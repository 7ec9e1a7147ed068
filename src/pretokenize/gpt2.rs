//! Scanner for GPT-2's pattern (CS336's `PAT`):
//! `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!
//! Every character is a letter, a number, whitespace or "other", and each piece is
//! one run of a single kind, except that a plain space joins the non-space run after
//! it and a contraction (lowercase only) is cut off at a piece's start. An apostrophe
//! that does not start a contraction is "other".
//!
//! Two paths give the same pieces: `piece_end` finds one piece at a time for any
//! text, and `block_starts` finds every piece start of 64 bytes of plain ASCII at
//! once with bit operations on class masks. Why both: English prose is ~4.4 bytes per
//! piece, and one piece at a time costs a few mispredicted branches each (~680 MB/s
//! on one core); the block path has no per-character branch and about doubles that.
//! cl100k and o200k do the same.

use super::ascii_block::{load, prev, whitespace_starts, Classify};
use super::common::{contraction, scan_blocks, word_end, ws_before_nonspace, ws_run};
use super::unicode::{class_at, letters_end, run_while, L, N, WS};

/// End of the piece that starts at `b[i]` (`b` valid UTF-8, `i < b.len()`).
#[inline(always)]
pub(crate) fn piece_end(b: &[u8], i: usize) -> usize {
    if let Some(end) = word_end(b, i) {
        return end;
    }
    let c = b[i];
    if c == b'\'' {
        if let Some(end) = contraction(b, i, false) {
            return end;
        }
    }
    // ` ?X+`: a space joins the run that follows it, unless that is more whitespace
    // (or the end of the text), which the whitespace rules below handle.
    let (start, class) = if c == b' ' {
        match b.get(i + 1) {
            Some(_) => match class_at(b, i + 1).0 {
                k if k & WS != 0 => return whitespace(b, i),
                k => (i + 1, k),
            },
            None => return i + 1,
        }
    } else {
        match class_at(b, i).0 {
            k if k & WS != 0 => return whitespace(b, i),
            k => (i, k),
        }
    };
    if class & L != 0 {
        letters_end(b, start)
    } else if class & N != 0 {
        run_while(b, start, |k| k & N != 0)
    } else {
        run_while(b, start, |k| k & (L | N | WS) == 0)
    }
}

/// `\s+(?!\S)|\s+` from a whitespace character at `i`.
#[inline(always)]
fn whitespace(b: &[u8], i: usize) -> usize {
    let (end, _) = ws_run(b, i);
    ws_before_nonspace(b, i, end)
}

/// Splits `text`, calling `f(start, end)` with each piece's byte range (`None` if a
/// scanner broke its promise).
// Closures, not the functions themselves: passed as fn items they were called
// through a shim that was not inlined into the SIMD kernels' copies of the loop.
#[allow(clippy::redundant_closure)]
#[inline(always)]
pub(crate) fn scan<C: Classify>(text: &str, f: impl FnMut(usize, usize)) -> Option<()> {
    scan_blocks(
        text,
        f,
        |b, w| block_starts::<C>(b, w),
        |b, i| piece_end(b, i),
    )
}

/// Where pieces start in `b[w..w + 64]` (bit k: at `w + k`), given that one starts
/// at `w`; or `Err(offset of its last non-ASCII byte)` when the block is not plain ASCII
/// (or too close to the end, `Err(len)`). Bits are exact: each depends only on bytes
/// `w + k - 2 ..= w + k + 3`, all inside the block or its lookahead.
///
/// With L, N, W the letters, digits and whitespace, and O everything else:
/// - a run of one class among L, N, O starts a piece, or the space before it does;
/// - a whitespace run starts a piece, and so does its last character if it has two
///   or more and is followed by a non-space (that character is either the space that
///   joins the next run, or a `\n`-like character that stands alone);
/// - an apostrophe that starts a piece and is followed by `s d m t ll ve re` ends
///   its piece after those letters (a contraction).
#[inline(always)]
fn block_starts<C: Classify>(b: &[u8], w: usize) -> Result<u64, usize> {
    let blk = load::<C>(b, w)?;
    let m = &blk.m;
    let run_starts =
        (m.letter & !prev(m.letter)) | (m.digit & !prev(m.digit)) | (blk.other & !prev(blk.other));
    let after_space = prev(m.space);
    let mut starts = (run_starts & !after_space) | ((run_starts & after_space) >> 1);
    starts |= whitespace_starts(&blk);
    let mut quotes = m.apostrophe & starts;
    while quotes != 0 {
        let k = quotes.trailing_zeros() as usize;
        quotes &= quotes - 1;
        if let Some(end) = contraction(b, w + k, false) {
            // The letters after the apostrophe started a run: they are in its piece.
            starts &= !(2u64 << k);
            let len = end - (w + k);
            if k + len < 64 {
                starts |= 1 << (k + len);
            }
        }
    }
    Ok(starts | 1)
}
