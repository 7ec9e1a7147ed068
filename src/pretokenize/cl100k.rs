//! Scanner for tiktoken's cl100k_base pattern:
//! `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
//!
//! Unlike gpt2, any one character that is not a letter, number, `\r` or `\n` (so
//! punctuation, a tab, a no-break space...) joins the letters after it; numbers come
//! in groups of up to three; punctuation takes the line breaks after it; and a
//! whitespace run ends after its last line break. The possessive quantifiers change
//! nothing here (no alternative could backtrack into them), and `$` is the end of
//! the text: a whitespace run followed by a final `\n` cannot stop before it.

use super::common::{
    contraction, is_other, other_run_then, up_to_three_numbers, ws_before_nonspace, ws_run,
};
use super::unicode::{class_at, class_at_opt, letters_end, L, N, WS};

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
    if end == b.len() {
        return end;
    }
    if let Some(k) = last_newline {
        return k + 1;
    }
    ws_before_nonspace(b, i, end)
}
