//! Line cuts: places where a text may be split in two, each part pre-tokenized on its
//! own, with exactly the pieces of the whole text. Files are encoded and counted in
//! chunks that end at such cuts (`corpus`), and `encode_iterable` emits what lies
//! before one (`encode::text`'s final prefix).
//!
//! Only the named patterns have them (a custom regex gets no line cuts). With `y` a
//! character that is not whitespace (nor `/`, for cl100k and o200k), a newline before
//! `y` gives a cut, whatever precedes it:
//!
//! - cl100k and o200k: right after the `\n`. The whitespace run that ends in it is one
//!   piece up to its last newline (`\s*[\r\n]`, `\s*[\r\n]+`), or a punctuation run
//!   takes the newlines (`[^\s\p{L}\p{N}]++[\r\n]*+`, `[^\s\p{L}\p{N}]+[\r\n/]*`:
//!   hence `y` not `/`); either way the piece ends at the cut, and at the end of a part
//!   it is the same piece (cl100k's `\s++$` takes the same run there).
//! - gpt2: right before the `\n`. A run of whitespace before `y` is split into all but
//!   its last character (`\s+(?!\S)`) and the last, here the `\n` alone (`\s+`); a
//!   part that ends in the rest of the run gives it as one piece too. Cut after the
//!   `\n`, a part ending in `\r\n` or `\n\n` would give the run whole: not a cut.
//!
//! No piece takes a newline as the prefix of what follows, so the part after the cut
//! starts its pieces as the whole text does. This gives cuts at the line ends of JSON
//! lines, CRLF text, paragraphs separated by blank lines and text in any script. `y`
//! must be valid UTF-8: under `errors="ignore"` an invalid byte disappears, and the
//! character after it might be whitespace. (What precedes the newline does not
//! matter, and decoding never joins bytes across a `\n`.)

use super::unicode::{class, WS};
use super::Kind;

/// The cut at the newline `data[q]`, if that newline gives one under `kind`.
/// `special_at(p)`: whether a special token the text is split on may start at `p`; a
/// document ends there, so what follows the newline is the end of the text, where
/// gpt2's `\s+(?!\S)` takes the run whole (cl100k's and o200k's cut is that start).
pub(crate) fn cut_at_newline(
    data: &[u8],
    q: usize,
    kind: Kind,
    special_at: impl Fn(usize) -> bool,
) -> Option<usize> {
    if data.get(q) != Some(&b'\n') {
        return None;
    }
    let y = char_after(data, q + 1)?;
    if is_space(y) {
        return None;
    }
    match kind {
        Kind::Gpt2 => (!special_at(q + 1)).then_some(q),
        Kind::Cl100k | Kind::O200k => (y != '/').then_some(q + 1),
        Kind::Custom => None,
    }
}

/// Whether `p` is a cut under `kind` in a text without special tokens.
#[cfg(test)]
fn is_cut(data: &[u8], p: usize, kind: Kind) -> bool {
    [p.checked_sub(1), Some(p)]
        .into_iter()
        .flatten()
        .any(|q| cut_at_newline(data, q, kind, |_| false) == Some(p))
}

/// Whitespace as the patterns' `\s` sees it, and the separators U+001C..U+001F that
/// Python's `str.isspace` counts too (a cut is only made before a non-space, so
/// counting more as space only makes fewer cuts).
fn is_space(c: char) -> bool {
    class(c as u32) & WS != 0 || ('\x1c'..='\x1f').contains(&c) || c.is_whitespace()
}

/// The character that starts at `start`, if the bytes there begin with valid UTF-8.
fn char_after(data: &[u8], start: usize) -> Option<char> {
    let rest = data.get(start..)?;
    (1..=rest.len().min(4))
        .find_map(|len| std::str::from_utf8(&rest[..len]).ok())
        .and_then(|s| s.chars().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuts(text: &str, kind: Kind) -> Vec<usize> {
        (0..=text.len())
            .filter(|&p| is_cut(text.as_bytes(), p, kind))
            .collect()
    }

    #[test]
    fn line_ends_between_non_spaces() {
        let text = "ab\ncd\n\nef \ngh\n/ij\n{k}\né\nß";
        for kind in [Kind::Cl100k, Kind::O200k] {
            assert_eq!(cuts(text, kind), vec![3, 7, 11, 18, 22, 25], "{kind:?}");
        }
        assert_eq!(cuts(text, Kind::Gpt2), vec![2, 6, 10, 13, 17, 21, 24]);
        assert_eq!(cuts(text, Kind::Custom), Vec::<usize>::new());
    }

    #[test]
    fn cuts_before_any_non_space_in_any_script() {
        let cut = |t: &str, p| is_cut(t.as_bytes(), p, Kind::Cl100k);
        assert!(cut("a\nb", 2));
        assert!(cut("。\n中", 4));
        assert!(cut(".\n.", 2));
        assert!(!cut(".\n/usr", 2));
        assert!(!cut("a\n b", 2));
        assert!(cut("a \nb", 3));
        assert!(!cut("a\n\nb", 2));
        assert!(cut("a\n\nb", 3));
        assert!(cut("a\u{3000}\nb", 5));
        assert!(!cut("a\n\x1cb", 2));
        assert!(!cut("a\n", 2));
    }

    #[test]
    fn crlf_cuts_depend_on_the_pattern() {
        let text = "ab\r\ncd \r\nef\r\n\r\ngh";
        assert_eq!(cuts(text, Kind::Gpt2), vec![3, 8, 14]);
        assert_eq!(cuts(text, Kind::Cl100k), vec![4, 9, 15]);
        assert_eq!(cuts(text, Kind::O200k), vec![4, 9, 15]);
    }

    #[test]
    fn gpt2_makes_no_cut_before_a_newline_that_ends_a_document() {
        let text = b" \n<|e|>";
        let special_at = |p: usize| text[p..].starts_with(b"<|e|>");
        assert_eq!(cut_at_newline(text, 1, Kind::Gpt2, special_at), None);
        assert_eq!(cut_at_newline(text, 1, Kind::O200k, special_at), Some(2));
    }

    #[test]
    fn no_cut_before_invalid_utf8() {
        assert!(is_cut(b"a\nb", 2, Kind::O200k));
        assert!(is_cut(b"\xff\nb", 2, Kind::O200k));
        assert!(!is_cut(b"a\n\xe2\x82", 2, Kind::O200k));
        assert!(!is_cut(b"a\n\xffb", 2, Kind::O200k));
        assert!(is_cut("a\n\u{20ac}".as_bytes(), 2, Kind::O200k));
    }
}
