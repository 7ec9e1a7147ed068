//! Scanner for GPT-2's pattern (CS336's `PAT`):
//! `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!
//! Every character is a letter, a number, whitespace or "other", and each piece is
//! one run of a single kind, except that a plain space joins the non-space run after
//! it and a contraction (lowercase only) is cut off at a piece's start. An apostrophe
//! that does not start a contraction is "other".

use super::common::{contraction, ws_before_nonspace, ws_run};
use super::unicode::{class_at, letters_end, run_while, L, N, WS};

/// End of the piece that starts at `b[i]` (`b` valid UTF-8, `i < b.len()`).
#[inline(always)]
pub fn piece_end(b: &[u8], i: usize) -> usize {
    let c = b[i];
    // Fast path for the most common pieces of English, " word" and "word".
    if c == b' ' {
        if b.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
            return letters_end(b, i + 2);
        }
    } else if c.is_ascii_alphabetic() {
        return letters_end(b, i + 1);
    }
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
