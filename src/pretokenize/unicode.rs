//! Character classes of the named patterns (Unicode 16.0, as the `regex` package
//! reports them), and UTF-8 decoding for the scanners.
//!
//! Each code point has one class byte made of the flags below; the byte is exact
//! (Lu, Ll, Lt, Lm, Lo, M, N, White_Space and "other" each have a distinct value), so
//! a scanner tests one flag with one AND. ASCII is a 128-entry table; other code
//! points go through a two-level table (two loads), fast enough for CJK text.

use super::unicode_tables as tables;
pub use super::unicode_tables::{
    L, LOWERISH, MARK, MODIFIER, N, TITLE, UNICODE_VERSION, UPPERISH, WS,
};

/// The class byte of ASCII byte `c` (< 0x80).
#[inline(always)]
pub fn ascii_class(c: u8) -> u8 {
    tables::ASCII[usize::from(c & 0x7f)]
}

/// The class byte of code point `cp` (any `u32`; surrogates and values past
/// U+10FFFF are "other", class 0).
#[inline(always)]
pub fn class(cp: u32) -> u8 {
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

/// Decodes the character whose lead byte is `b[i]` (`b` is valid UTF-8, `i < b.len()`):
/// its code point and its length in bytes.
#[inline(always)]
pub fn decode(b: &[u8], i: usize) -> (u32, usize) {
    let b0 = u32::from(b[i]);
    if b0 < 0x80 {
        (b0, 1)
    } else if b0 < 0xe0 {
        (((b0 & 0x1f) << 6) | cont(b, i + 1), 2)
    } else if b0 < 0xf0 {
        (
            ((b0 & 0x0f) << 12) | (cont(b, i + 1) << 6) | cont(b, i + 2),
            3,
        )
    } else {
        (
            ((b0 & 0x07) << 18) | (cont(b, i + 1) << 12) | (cont(b, i + 2) << 6) | cont(b, i + 3),
            4,
        )
    }
}

/// Class byte and byte length of the character starting at `b[i]`.
#[inline(always)]
pub fn class_at(b: &[u8], i: usize) -> (u8, usize) {
    let c = b[i];
    if c < 0x80 {
        (ascii_class(c), 1)
    } else {
        let (cp, len) = decode(b, i);
        (class(cp), len)
    }
}

/// Class byte of the character starting at `b[i]`, or `None` at the end.
#[inline(always)]
pub fn class_at_opt(b: &[u8], i: usize) -> Option<u8> {
    (i < b.len()).then(|| class_at(b, i).0)
}

/// Start of the last character of `b[..j]` (`j > 0`, at a character boundary).
#[inline(always)]
pub fn last_char_start(b: &[u8], j: usize) -> usize {
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
        is(L | UPPERISH | TITLE, L | UPPERISH),
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
pub fn run_while(b: &[u8], mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
    while let Some(&c) = b.get(i) {
        if c < 0x80 {
            if !keep(ascii_class(c)) {
                break;
            }
            i += 1;
        } else {
            let (cp, len) = decode(b, i);
            if !keep(class(cp)) {
                break;
            }
            i += len;
        }
    }
    i
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
    fn decode_matches_std() {
        let s = "a\u{e9}\u{4e2d}\u{1f600}";
        let mut i = 0;
        for ch in s.chars() {
            assert_eq!(decode(s.as_bytes(), i), (ch as u32, ch.len_utf8()));
            i += ch.len_utf8();
        }
        assert_eq!(last_char_start(s.as_bytes(), s.len()), s.len() - 4);
    }
}
