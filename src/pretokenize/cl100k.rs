//! Scanner for tiktoken's cl100k_base pattern:
//! `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
//!
//! Unlike gpt2, any one character that is not a letter, number, `\r` or `\n` (so
//! punctuation, a tab, a no-break space...) joins the letters after it; numbers come
//! in groups of up to three; punctuation takes the line breaks after it; and a
//! whitespace run ends after its last line break. The possessive quantifiers change
//! nothing here (no alternative could backtrack into them), and `$` is the end of
//! the text: a whitespace run followed by a final `\n` cannot stop before it.
//!
//! As for gpt2, `block_starts` finds every piece start of 64 bytes of plain ASCII at
//! once, and `piece_end` serves everything else.
//!
//! The same scanner serves the pattern cl100k had before tiktoken made it possessive,
//! which Llama 3 and OLMo 2 ship (`patterns::LLAMA3`):
//! `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
//! It splits every text as cl100k does but one: lacking `\s++$`, a whitespace run
//! that ends the text and holds a line break ends after its last line break, as it
//! does anywhere else (`LEGACY`). Inside a 64-byte block no run ends the text, so the
//! block rule is shared.

use super::ascii_block::{
    digit_group_starts, line_break_runs, load, punctuation_and_word_starts, whitespace_starts,
    Classify,
};
use super::common::{
    contraction, is_other, other_run_then, scan_blocks, up_to_three_numbers, word_end,
    ws_before_nonspace, ws_run,
};
use super::unicode::{class_at, class_at_opt, letters_end, L, N, WS};

/// End of the piece that starts at `b[i]` (`b` valid UTF-8, `i < b.len()`);
/// `LEGACY`: under the pattern without `\s++$` (see the module docs).
#[inline(always)]
pub(crate) fn piece_end<const LEGACY: bool>(b: &[u8], i: usize) -> usize {
    if let Some(end) = word_end(b, i) {
        return end;
    }
    let c = b[i];
    if c == b'\'' {
        if let Some(end) = contraction(b, i, true) {
            return end;
        }
    }
    let (class, len) = class_at(b, i);
    let is_letter = |k: u8| k & L != 0;
    if is_letter(class) {
        return letters_end(b, i + len);
    }
    if class & N != 0 {
        return up_to_three_numbers(b, i);
    }
    let next = class_at_opt(b, i + len);
    if c != b'\r' && c != b'\n' && next.is_some_and(is_letter) {
        return letters_end(b, i + len);
    }
    let newline = |c: u8| c == b'\r' || c == b'\n';
    if class & WS == 0 {
        return other_run_then(b, i, newline);
    }
    if c == b' ' && next.is_some_and(is_other) {
        return other_run_then(b, i + 1, newline);
    }
    let (end, last_newline) = ws_run(b, i);
    if end == b.len() && !(LEGACY && last_newline.is_some()) {
        return end;
    }
    if let Some(k) = last_newline {
        return k + 1;
    }
    ws_before_nonspace(b, i, end)
}

/// Splits `text`, calling `f(start, end)` with each piece's byte range (`None` if a
/// scanner broke its promise).
// Closures, not the functions themselves: passed as fn items they were called
// through a shim that was not inlined into the SIMD kernels' copies of the loop.
#[allow(clippy::redundant_closure)]
#[inline(always)]
pub(crate) fn scan<C: Classify, const LEGACY: bool>(
    text: &str,
    f: impl FnMut(usize, usize),
) -> Option<()> {
    scan_blocks(
        text,
        f,
        |b, w| block_starts::<C>(b, w),
        |b, i| piece_end::<LEGACY>(b, i),
    )
}

/// Where pieces start in `b[w..w + 64]` (bit k: at `w + k`), given that one starts at
/// `w`; `Err` as in `scan_blocks`. The patterns have no lookbehind, so from a known
/// start the text before `w` does not matter. For plain ASCII, with L, D, O the
/// letters, digits and other characters, S the space, T `\t \v \f`, NL `\r \n`:
/// - a run of O starts a piece, or the space before it does (` ?[^\s\p{L}\p{N}]++`);
///   the piece takes the line breaks right after the run (`[\r\n]*+`);
/// - a run of L starts a piece unless the one character before it joins: S or T
///   always (it is the last of its whitespace run), and a lone O not joined to a
///   space before it; a lone `'` is a contraction instead when `s d m t ll ve re`
///   (any case) follows;
/// - a run of D starts a piece every three digits;
/// - a whitespace run (after any line breaks an O run took) starts a piece, and so do
///   the character after its last line break and, when what is left after that has
///   two or more characters, its last character.
///
/// A whitespace run that reaches past the block (where it ends decides its pieces)
/// ends the block's starts where it begins.
#[inline(always)]
fn block_starts<C: Classify>(b: &[u8], w: usize) -> Result<u64, usize> {
    let blk = load::<C>(b, w)?;
    let (mut starts, after_lone_other) = punctuation_and_word_starts(&blk);
    // A lone `'` before letters is a contraction when they allow.
    let mut quotes = (after_lone_other >> 1) & blk.m.apostrophe;
    while quotes != 0 {
        let k = quotes.trailing_zeros() as usize;
        quotes &= quotes - 1;
        if let Some(end) = contraction(b, w + k, true) {
            let next = end - w;
            if next < 64 {
                starts |= 1 << next;
            }
        }
    }
    starts |= digit_group_starts(blk.m.digit);
    starts |= whitespace_starts(&blk);
    let starts = line_break_runs(&blk, starts, 64).unwrap_or_else(|cut| cut);
    Ok(starts | 1)
}
