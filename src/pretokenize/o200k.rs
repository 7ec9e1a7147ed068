//! Scanner for tiktoken's o200k_base pattern:
//! ```text
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//! The two word alternatives backtrack, and their outcome is worked out here once.
//! Call Lu and Lt "upper", Ll "lower", and Lm, Lo and marks "both" (they are in both
//! classes). A word is a run R of letters and marks, maybe after one prefix
//! character (anything but a letter, number, `\r` or `\n`; marks included):
//! - the first alternative takes R's upper/both prefix and then the lower/both run
//!   that follows, if R has a lower letter after that prefix (camelCase splits
//!   before the C); otherwise it ends right after R's last "both" character;
//! - failing that (R is all upper, or empty), a prefix that is a mark is a word by
//!   itself (it is "both"), else the second alternative takes all of R;
//! - an optional case-insensitive contraction follows.
//!
//! As for gpt2 and cl100k, `block_starts` finds every piece start of 64 bytes of
//! plain ASCII at once, and `piece_end` serves everything else.

use super::ascii_block::{
    digit_group_starts, line_break_runs, load, prev, punctuation_and_word_starts,
    whitespace_starts, Block, Classify, Masks,
};
use super::common::{
    contraction, is_other, other_run_then, scan_blocks, up_to_three_numbers, ws_before_nonspace,
    ws_run,
};
use super::unicode::{
    ascii_run, class_at, class_at_opt, run_fast, run_while, L, LOWERISH, MARK, N, UPPERISH, WS,
};

/// End of the piece that starts at `b[i]` (`b` valid UTF-8, `i < b.len()`).
#[inline(always)]
pub(crate) fn piece_end(b: &[u8], i: usize) -> usize {
    let c = b[i];
    let (class, len) = class_at(b, i);
    if let Some(end) = word(b, i, c, class, len) {
        let after = if b.get(end) == Some(&b'\'') {
            contraction(b, end, true)
        } else {
            None
        };
        return after.unwrap_or(end);
    }
    if class & N != 0 {
        return up_to_three_numbers(b, i);
    }
    let tail = |c: u8| c == b'\r' || c == b'\n' || c == b'/';
    if class & WS == 0 {
        return other_run_then(b, i, tail);
    }
    if c == b' ' && class_at_opt(b, i + 1).is_some_and(is_other) {
        return other_run_then(b, i + 1, tail);
    }
    let (end, last_newline) = ws_run(b, i);
    if let Some(k) = last_newline {
        return k + 1;
    }
    ws_before_nonspace(b, i, end)
}

/// End of the word (before any contraction) that starts at `i`, if one does.
#[inline(always)]
fn word(b: &[u8], i: usize, c: u8, class: u8, len: usize) -> Option<usize> {
    let upper_only = |k: u8| k & (UPPERISH | LOWERISH) == UPPERISH;
    if class & L != 0 {
        return Some(first_alternative(b, i).unwrap_or_else(|| run_while(b, i, upper_only)));
    }
    if class & N != 0 || c == b'\r' || c == b'\n' {
        return None;
    }
    // `b[i]` is a possible prefix.
    let start = i + len;
    if let Some(end) = first_alternative(b, start) {
        return Some(end);
    }
    if class & MARK != 0 {
        return Some(start);
    }
    let end = run_while(b, start, upper_only);
    (end > start).then_some(end)
}

/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` from `start`, as a
/// backtracking engine matches it: where it ends, if it matches.
#[inline(always)]
fn first_alternative(b: &[u8], start: usize) -> Option<usize> {
    let lowerish = |x: u8| x & LOWERISH != 0;
    // Fast path: a word that starts with an ASCII lowercase letter is its lower run.
    if b.get(start).is_some_and(u8::is_ascii_lowercase) {
        return Some(run_fast::<b'a', b'z', false>(b, start + 1, lowerish));
    }
    // ASCII capitals are upper only: skip them eight at a time.
    let mut k = ascii_run::<b'A', b'Z', false>(b, start);
    let mut after_last_both = None;
    while k < b.len() {
        let (class, len) = class_at(b, k);
        match class & (UPPERISH | LOWERISH) {
            UPPERISH => k += len,
            LOWERISH => return Some(run_fast::<b'a', b'z', false>(b, k, lowerish)),
            0 => break,
            _ => {
                k += len;
                after_last_both = Some(k);
            }
        }
    }
    after_last_both
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

/// Where pieces start in `b[w..w + 64]` (bit k: at `w + k`), given that one starts at
/// `w`; `Err` as in `scan_blocks`. For plain ASCII the rules are cl100k's (see
/// `cl100k::block_starts`) except that:
/// - a letter run also starts a piece where a capital follows a small letter
///   (camelCase), and a contraction is a suffix: `'s 't 're 've 'm 'll 'd` in any case
///   right after a letter run belongs to its last word;
/// - a punctuation run takes `[\r\n/]*` after it ([`takes`]).
#[inline(always)]
fn block_starts<C: Classify>(b: &[u8], w: usize) -> Result<u64, usize> {
    let blk = load::<C>(b, w)?;
    let m = &blk.m;
    let taken = takes(b, w, &blk);

    let (mut starts, _) = punctuation_and_word_starts(&blk);
    // camelCase: a capital after a small letter starts a word.
    starts |= m.upper & prev(m.letter & !m.upper);
    // Contractions after a letter run belong to its last word, unless those letters
    // were themselves a contraction's (`'s's`: the second `'` starts a piece).
    let mut quotes = m.apostrophe & prev(m.letter);
    let mut after_contraction = usize::MAX;
    while quotes != 0 {
        let k = quotes.trailing_zeros() as usize;
        quotes &= quotes - 1;
        if k == after_contraction {
            continue;
        }
        if let Some(end) = contraction(b, w + k, true) {
            // No piece starts inside it (`'lL` is no camelCase) ...
            after_contraction = end - w;
            let from_end = (!0u64).checked_shl(after_contraction as u32).unwrap_or(0);
            starts &= !((!0u64 << k) & !from_end);
            // ... and one starts right after it.
            if after_contraction < 64 {
                starts |= 1 << after_contraction;
            }
        }
    }
    starts |= digit_group_starts(m.digit);
    starts |= whitespace_starts(&blk);
    // No piece starts inside what a punctuation run took, one starts right after;
    // and those line breaks are not whitespace runs of their own.
    starts = (starts & !taken.inside) | taken.after;
    let untaken = Block {
        m: Masks {
            newline: m.newline & !taken.inside,
            ..*m
        },
        ..blk
    };
    let starts = match line_break_runs(&untaken, starts, taken.limit) {
        Ok(starts) => starts,
        Err(cut) => return Ok(cut | 1),
    };
    let below_limit = if taken.limit == 64 {
        !0u64
    } else {
        (1u64 << taken.limit) - 1
    };
    let starts = starts & below_limit;
    Ok(match taken.resume {
        Some(a) if a < 64 => starts | 1 | (1 << a),
        _ => starts | 1,
    })
}

/// The line breaks that punctuation runs of a block take (`[\r\n/]*` after
/// `[^\s\p{L}\p{N}]+`), as bit masks.
struct Taken {
    /// The bytes taken: no piece starts among them.
    inside: u64,
    /// The byte after each take: a piece starts there.
    after: u64,
    /// The block's rules hold below this offset; a take they cannot express starts
    /// here (64: none).
    limit: usize,
    /// Where the piece after that take starts, if there is one.
    resume: Option<usize>,
}

/// The takes of `blk` (at `b[w..]`) that the block rules can handle, up to the first
/// that they cannot.
///
/// Why each take need not end the block: English has a line break after
/// punctuation every ~120 bytes (`.\n`), and ending the block at each one made
/// o200k's blocks 20% shorter than gpt2's on en-small, so more of them.
///
/// A take of `\r\n` bytes ending before a letter, digit or punctuation byte is
/// exact with the masks as they are: no piece starts inside it, one starts right
/// after it, and no rule for a later byte looks back at a line break (the rules look
/// back for letters, digits, punctuation, spaces and tabs). The block ends at a take
/// followed by whitespace (its run would start after the take, not at it), at one
/// ending in `/` (punctuation, which the bytes after it would see), and at one
/// reaching the block's end.
#[inline(always)]
fn takes(b: &[u8], w: usize, blk: &Block) -> Taken {
    let mut taken = Taken {
        inside: 0,
        after: 0,
        limit: 64,
        resume: None,
    };
    let mut pending = blk.m.newline & prev(blk.other);
    while pending != 0 {
        let e = pending.trailing_zeros() as usize;
        let mut a = e;
        while matches!(b.get(w + a), Some(b'\r' | b'\n' | b'/')) {
            a += 1;
        }
        let clean = a < 64
            && b[w + a - 1] != b'/'
            && (blk.m.letter | blk.m.digit | blk.other) & (1 << a) != 0;
        if !clean {
            taken.limit = e;
            taken.resume = Some(a);
            break;
        }
        let run = (!0u64 << e) & ((1u64 << a) - 1);
        taken.inside |= run;
        taken.after |= 1 << a;
        pending &= !0u64 << a;
    }
    taken
}
