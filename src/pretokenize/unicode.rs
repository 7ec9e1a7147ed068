//! Character classes of the named patterns (Unicode 16.0, as the `regex` package
//! reports them), and UTF-8 decoding for the scanners.
//!
//! Each code point has one class byte made of the flags below; the byte is exact
//! (Lu, Ll, Lt, Lm, Lo, M, N, White_Space and "other" each have a distinct value), so
//! a scanner tests one flag with one AND. ASCII is a 128-entry table; other code
//! points go through a two-level table (two loads).
//!
//! `class_at`, which every scanner loop calls per character, reads a two-byte
//! character (Latin, Greek, Cyrillic, Hebrew, Arabic...) with one load from the
//! table's first 2048 bytes, which are the classes of U+0000..U+07FF in order.
//! Measured with callgrind on 4 MB of the multilingual benchmark text, this and
//! running non-ASCII words straight through `run_while` (see `letters_end`) took
//! the scanners from 26.0 to 19.7 instructions per byte (cl100k; o200k 29.4 to
//! 24.8); in time, cl100k and gpt2 6-15% faster there, o200k within noise. A per-chunk shortcut
//! for three-byte characters (class of each 64 code points when uniform, keyed by
//! the first two bytes) cut instructions on CJK text by a quarter but lost 17% of
//! the time on Japanese: kana chunks are mixed and kanji ones uniform, so the
//! branch between the two mispredicted; the two-level lookup has no branch.

use super::unicode_tables as tables;
pub use super::unicode_tables::UNICODE_VERSION;
pub(crate) use super::unicode_tables::{L, LOWERISH, MARK, MODIFIER, N, TITLE, UPPERISH, WS};

/// The class byte of ASCII byte `c` (< 0x80).
#[inline(always)]
pub(crate) fn ascii_class(c: u8) -> u8 {
    tables::ASCII[usize::from(c & 0x7f)]
}

/// The class byte of code point `cp` (any `u32`; surrogates and values past
/// U+10FFFF are "other", class 0).
#[inline(always)]
pub(crate) fn class(cp: u32) -> u8 {
    if cp < 0x80 {
        return tables::ASCII[cp as usize];
    }
    if cp < tables::TABLE_END {
        let block = usize::from(tables::INDEX[(cp >> tables::SHIFT) as usize]);
        let offset = cp as usize & ((1 << tables::SHIFT) - 1);
        return tables::BLOCKS[(block << tables::SHIFT) | offset];
    }
    class_high(cp)
}

#[cold]
fn class_high(cp: u32) -> u8 {
    tables::HIGH
        .iter()
        .find(|&&(first, last, _)| (first..=last).contains(&cp))
        .map_or(0, |&(_, _, class)| class)
}

/// The low 6 bits of the continuation byte at `b[i]` (0 past the end, which valid
/// UTF-8 never reaches: this keeps decoding panic-free without a branch that matters).
#[inline(always)]
fn cont(b: &[u8], i: usize) -> u32 {
    b.get(i).map_or(0, |&x| u32::from(x & 0x3f))
}

/// Class byte and byte length of the character starting at `b[i]` (`b` valid UTF-8,
/// `i < b.len()`; see the module docs for the two-byte shortcut). Any
/// bytes give some class: the tables are indexed in bounds whatever the input.
///
/// Byte by byte: reading the four bytes from `i` as one word saved the continuation
/// bytes' bounds checks but not an instruction per character in the letter loop,
/// and the larger code kept `piece_end` from being inlined into the scan loop
/// (cl100k: 20.7 -> 25.2 instructions per byte of Cyrillic).
#[inline(always)]
pub(crate) fn class_at(b: &[u8], i: usize) -> (u8, usize) {
    let c = b[i];
    if c < 0x80 {
        (ascii_class(c), 1)
    } else if c < 0xe0 {
        // U+0080..U+07FF: `BLOCKS[cp]` (the generator checks that the first blocks are
        // not shared); `cp < 0x800`, so the index is in bounds.
        let cp = (u32::from(c & 0x1f) << 6) | cont(b, i + 1);
        (tables::BLOCKS[cp as usize], 2)
    } else if c < 0xf0 {
        let cp = (u32::from(c & 0x0f) << 12) | (cont(b, i + 1) << 6) | cont(b, i + 2);
        (class(cp), 3)
    } else {
        let cp = (u32::from(c & 0x07) << 18)
            | (cont(b, i + 1) << 12)
            | (cont(b, i + 2) << 6)
            | cont(b, i + 3);
        (class(cp), 4)
    }
}

/// Class byte of the character starting at `b[i]`, or `None` at the end.
#[inline(always)]
pub(crate) fn class_at_opt(b: &[u8], i: usize) -> Option<u8> {
    (i < b.len()).then(|| class_at(b, i).0)
}

/// Start of the last character of `b[..j]` (`j > 0`, at a character boundary).
#[inline(always)]
pub(crate) fn last_char_start(b: &[u8], j: usize) -> usize {
    let mut k = j - 1;
    while k > 0 && b[k] & 0xc0 == 0x80 {
        k -= 1;
    }
    k
}

/// Regex-style class bitmask of `cp`, for tests and the Python `_char_classes` helper:
/// bit 0 `\p{L}`, 1 `\p{N}`, 2 `\p{Lu}`, 3 `\p{Ll}`, 4 `\p{Lt}`, 5 `\p{Lm}`, 6 `\p{Lo}`,
/// 7 `\p{M}`, 8 `\s`.
pub fn regex_classes(cp: u32) -> u16 {
    let c = class(cp);
    let is = |flags: u8, exact: u8| (c & flags) == exact;
    let bits = [
        c & L != 0,
        c & N != 0,
        is(L | UPPERISH | LOWERISH | TITLE, L | UPPERISH),
        is(L | UPPERISH | LOWERISH, L | LOWERISH),
        c & TITLE != 0,
        c & MODIFIER != 0,
        is(L | UPPERISH | LOWERISH | MODIFIER, L | UPPERISH | LOWERISH),
        c & MARK != 0,
        c & WS != 0,
    ];
    bits.iter()
        .enumerate()
        .fold(0, |m, (i, &b)| m | (u16::from(b) << i))
}

/// Run of characters from `i` whose class byte satisfies `keep`: returns where it ends.
#[inline(always)]
pub(crate) fn run_while(b: &[u8], mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
    while i < b.len() {
        let (class, len) = class_at(b, i);
        if !keep(class) {
            break;
        }
        i += len;
    }
    i
}

/// End of the run of ASCII bytes in `LO..=HI` that starts at `i` (`FOLD`: also their
/// uppercase forms, for letters). Eight bytes at a time: words end at a
/// data-dependent place, and a per-byte loop pays a mispredicted branch there; a
/// byte mask and one `trailing_zeros` do not. Stops at any non-ASCII byte.
#[inline(always)]
pub(crate) fn ascii_run<const LO: u8, const HI: u8, const FOLD: bool>(
    b: &[u8],
    mut i: usize,
) -> usize {
    const fn splat(x: u8) -> u64 {
        u64::from_le_bytes([x; 8])
    }
    while let Some(chunk) = b.get(i..).and_then(|rest| rest.first_chunk::<8>()) {
        let w = u64::from_le_bytes(*chunk);
        // Each byte's low 7 bits (plus 0x20 to fold case) stay below 0x80, so the adds
        // below never carry into the next byte; bit 7 then says "at least LO" / "above HI".
        let low7 = (w & splat(0x7f)) | if FOLD { splat(0x20) } else { 0 };
        let at_least_lo = low7 + splat(0x80 - LO);
        let above_hi = low7 + splat(0x7f - HI);
        let inside = at_least_lo & !above_hi & !w & splat(0x80);
        let outside = !inside & splat(0x80);
        if outside != 0 {
            return i + (outside.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        let c = if FOLD { c | 0x20 } else { c };
        if !(LO..=HI).contains(&c) {
            break;
        }
        i += 1;
    }
    i
}

/// `run_while(b, i, keep)` for a class whose ASCII members are exactly the bytes
/// `ascii_run::<LO, HI, FOLD>` accepts: the ASCII part eight bytes at a time, the
/// rest (a non-ASCII character inside or after it) one character at a time.
#[inline(always)]
pub(crate) fn run_fast<const LO: u8, const HI: u8, const FOLD: bool>(
    b: &[u8],
    i: usize,
    keep: impl Fn(u8) -> bool,
) -> usize {
    let j = ascii_run::<LO, HI, FOLD>(b, i);
    match b.get(j) {
        Some(&c) if c >= 0x80 => run_while(b, j, keep),
        _ => j,
    }
}

/// End of the `\p{L}` run that starts at `i`. A run that starts with a non-ASCII
/// character goes straight to the per-character loop: words of other scripts
/// rarely hold ASCII letters, and the eight-byte step would stop at once.
#[inline(always)]
pub(crate) fn letters_end(b: &[u8], i: usize) -> usize {
    let is_letter = |k: u8| k & L != 0;
    match b.get(i) {
        Some(&c) if c >= 0x80 => run_while(b, i, is_letter),
        _ => run_fast::<b'a', b'z', true>(b, i, is_letter),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_classes() {
        assert_eq!(class('a' as u32), L | LOWERISH);
        assert_eq!(class('A' as u32), L | UPPERISH);
        assert_eq!(class('ǅ' as u32), L | UPPERISH | TITLE);
        assert_eq!(class('ʰ' as u32), L | UPPERISH | LOWERISH | MODIFIER);
        assert_eq!(class('中' as u32), L | UPPERISH | LOWERISH);
        assert_eq!(class(0x301), UPPERISH | LOWERISH | MARK);
        assert_eq!(class(0xe0100), UPPERISH | LOWERISH | MARK);
        for c in ['7', '٣', '²', 'Ⅻ', '５'] {
            assert_eq!(class(c as u32), N, "{c:?}");
        }
        for cp in [0x9, 0x20, 0x85, 0xa0, 0x2028, 0x3000] {
            assert_eq!(class(cp), WS, "U+{cp:04X}");
        }
        for cp in [
            0x1c, 0x1f, 0x180e, 0x200b, 0xfeff, 0xd800, 0x10ffff, 0x110000,
        ] {
            assert_eq!(class(cp), 0, "U+{cp:04X}");
        }
    }

    #[test]
    fn class_at_matches_class_for_every_character() {
        // Alone (the end of the text is within four bytes) and followed by more text.
        let mut buf = [0u8; 4];
        for ch in (0..=0x10ffff).filter_map(char::from_u32) {
            let b = ch.encode_utf8(&mut buf).as_bytes();
            let want = (class(ch as u32), ch.len_utf8());
            assert_eq!(class_at(b, 0), want, "U+{:04X}", ch as u32);
            assert_eq!(run_while(b, 0, |k| k == want.0), b.len());
            let longer = format!("{ch}\u{ffff}!");
            assert_eq!(class_at(longer.as_bytes(), 0), want, "U+{:04X}", ch as u32);
        }
    }

    #[test]
    fn ascii_run_finds_the_end() {
        for text in [
            "",
            "abc",
            "abcdefghXYZijklmnop!",
            "abcdefgh",
            "ab\u{e9}cd",
            "zzzzzzzzzzzzzzzz{",
        ] {
            let b = text.as_bytes();
            for start in 0..b.len() {
                let want = start
                    + b[start..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphabetic())
                        .count();
                assert_eq!(ascii_run::<b'a', b'z', true>(b, start), want, "{text:?}");
                let lower = start
                    + b[start..]
                        .iter()
                        .take_while(|c| c.is_ascii_lowercase())
                        .count();
                assert_eq!(ascii_run::<b'a', b'z', false>(b, start), lower, "{text:?}");
            }
        }
    }

    #[test]
    fn last_char_start_finds_the_lead_byte() {
        let s = "a\u{e9}\u{4e2d}\u{1f600}";
        assert_eq!(last_char_start(s.as_bytes(), s.len()), s.len() - 4);
        assert_eq!(last_char_start(s.as_bytes(), s.len() - 4), s.len() - 7);
    }
}
