//! Scanning steps that more than one named pattern shares.

use super::unicode::{class_at, last_char_start, letters_end, run_while, L, N, WS};

/// The end of the piece at `b[i]` when it is `" word"` or `"word"` in any script
/// (a letter, or a space then a letter, then letters): the most common pieces of
/// GPT-2's and cl100k's patterns, which both end them at the last letter.
#[inline(always)]
pub(crate) fn word_end(b: &[u8], i: usize) -> Option<usize> {
    let c = b[i];
    if c == b' ' {
        match b.get(i + 1) {
            Some(d) if d.is_ascii_alphabetic() => return Some(letters_end(b, i + 2)),
            Some(&d) if d >= 0x80 => {
                let (class, len) = class_at(b, i + 1);
                if class & L != 0 {
                    return Some(letters_end(b, i + 1 + len));
                }
            }
            _ => {}
        }
    } else if c.is_ascii_alphabetic() {
        return Some(letters_end(b, i + 1));
    }
    None
}

/// The contraction `'(?:[sdmt]|ll|ve|re)` at `b[i]` (which is `'`): where it ends.
///
/// With `ci`, letters match as `regex` and tiktoken match `(?i:...)`: simple case
/// folding, so `'S`, `'Ll` and `'ſ` (U+017F, which folds to `s`) count, and no other
/// non-ASCII letter folds to one of these. The curly `’` is never a contraction.
#[inline(always)]
pub(crate) fn contraction(b: &[u8], i: usize, ci: bool) -> Option<usize> {
    let fold = |c: u8| if ci { c.to_ascii_lowercase() } else { c };
    let c1 = fold(*b.get(i + 1)?);
    if matches!(c1, b's' | b'd' | b'm' | b't') {
        return Some(i + 2);
    }
    if ci && b.get(i + 1..i + 3) == Some("ſ".as_bytes()) {
        return Some(i + 3);
    }
    let c2 = fold(*b.get(i + 2)?);
    match (c1, c2) {
        (b'l', b'l') | (b'v', b'e') | (b'r', b'e') => Some(i + 3),
        _ => None,
    }
}

/// The whitespace run that starts at `i`: where it ends, and where its last `\r` or
/// `\n` is (the `\s*[\r\n]` rules of cl100k and o200k end right after it).
#[inline(always)]
pub(crate) fn ws_run(b: &[u8], mut i: usize) -> (usize, Option<usize>) {
    let mut last_newline = None;
    while i < b.len() {
        let (class, len) = class_at(b, i);
        if class & WS == 0 {
            break;
        }
        if b[i] == b'\n' || b[i] == b'\r' {
            last_newline = Some(i);
        }
        i += len;
    }
    (i, last_newline)
}

/// `\s+(?!\S)|\s+` for the run `b[i..j]` (j is the run's end): at the end of the text
/// the whole run; before a non-space, all but its last character (left to start the
/// next piece, where a plain space may join a word), or the one character it has.
#[inline(always)]
pub(crate) fn ws_before_nonspace(b: &[u8], i: usize, j: usize) -> usize {
    if j == b.len() {
        return j;
    }
    let last = last_char_start(b, j);
    if last > i {
        last
    } else {
        j
    }
}

/// `\p{N}{1,3}`: up to three number characters from `i` (which is one).
#[inline(always)]
pub(crate) fn up_to_three_numbers(b: &[u8], i: usize) -> usize {
    let mut end = i;
    for _ in 0..3 {
        match b.get(end) {
            Some(_) => {
                let (k, len) = class_at(b, end);
                if k & N == 0 {
                    break;
                }
                end += len;
            }
            None => break,
        }
    }
    end
}

/// `[^\s\p{L}\p{N}]+` followed by any run of the ASCII bytes `tail` accepts
/// (`[\r\n]*` in cl100k, `[\r\n/]*` in o200k): the punctuation pieces.
#[inline(always)]
pub(crate) fn other_run_then(b: &[u8], i: usize, tail: impl Fn(u8) -> bool) -> usize {
    let mut end = run_while(b, i, is_other);
    while b.get(end).is_some_and(|&c| tail(c)) {
        end += 1;
    }
    end
}

/// `[^\s\p{L}\p{N}]`: neither whitespace, letter nor number (marks are "other").
#[inline(always)]
pub(crate) fn is_other(class: u8) -> bool {
    class & (L | N | WS) == 0
}

/// Splits `text`, calling `f(start, end)` with each piece's byte range: 64-byte
/// blocks of ASCII at once where possible (`block_starts`), else one piece at a time
/// with `piece_end`. `None` if a scanner broke its promise (an empty piece or one not
/// on character boundaries).
///
/// `block_starts(b, w)` gives the piece starts in `b[w..w + 64]` as bits, given that a
/// piece starts at `w` (bit 0), or `Err(i)`: no block before byte `i`. Only the
/// pieces between two starts are emitted: the last one may run past the block.
/// Ranges rather than `&str` pieces: the encoder needs only the offsets, and a block's
/// boundaries are ASCII bytes, so only `piece_end`'s need checking.
#[inline(always)]
pub(crate) fn scan_blocks(
    text: &str,
    mut f: impl FnMut(usize, usize),
    block_starts: impl Fn(&[u8], usize) -> Result<u64, usize>,
    piece_end: impl Fn(&[u8], usize) -> usize,
) -> Option<()> {
    let b = text.as_bytes();
    let mut start = 0;
    // Blocks are skipped until `start` passes the last non-ASCII byte seen.
    let mut scalar_until = 0;
    while start < b.len() {
        if start >= scalar_until {
            match block_starts(b, start) {
                Ok(starts) if starts != 1 => {
                    let mut rest = starts & !1;
                    let mut from = start;
                    while rest != 0 {
                        let to = start + rest.trailing_zeros() as usize;
                        f(from, to);
                        from = to;
                        rest &= rest - 1;
                    }
                    start = from;
                    continue;
                }
                Ok(_) => {}
                Err(next) => scalar_until = next + 1,
            }
        }
        let end = piece_end(b, start);
        if end <= start || !text.is_char_boundary(end) {
            return None;
        }
        f(start, end);
        start = end;
    }
    Some(())
}
