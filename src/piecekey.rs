//! Pieces of 1 to 15 bytes as `u128` keys: the bytes little-endian, zero-padded, with
//! the length in the top byte. Equal pieces give equal keys, pieces that differ only
//! by trailing NULs do not, and no key is 0 (free slots are 0). Counting and encoding
//! both key their piece tables this way: a key compares in one instruction and, for
//! a piece inside a larger text, is one unaligned load and a mask.

/// The longest piece that has a key.
pub(crate) const KEY_LEN: usize = 15;

/// The table key of `piece`: its bytes little-endian with the length in byte 15, or
/// 0 (never a real key) when the piece is empty or longer than [`KEY_LEN`]. Built
/// from a few fixed-size loads rather than a variable-length copy, which compiled to
/// a `memcpy` call per piece (perf: 16% of encoding).
#[inline]
pub fn key_of(piece: &[u8]) -> u128 {
    let n = piece.len();
    if n == 0 || n > KEY_LEN {
        return 0;
    }
    let u32_at = |i: usize| {
        u64::from(u32::from_le_bytes([
            piece[i],
            piece[i + 1],
            piece[i + 2],
            piece[i + 3],
        ]))
    };
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&piece[i..i + 8]);
        u64::from_le_bytes(b)
    };
    // Overlapping loads: the bytes they share are equal, so OR-ing them is exact.
    let (lo, hi) = if n >= 8 {
        let hi = if n > 8 {
            u64_at(n - 8) >> ((16 - n) * 8)
        } else {
            0
        };
        (u64_at(0), hi)
    } else if n >= 4 {
        (u32_at(0) | (u32_at(n - 4) << ((n - 4) * 8)), 0)
    } else {
        let b = |i: usize| u64::from(piece[i]) << (i * 8);
        (b(0) | b(n / 2) | b(n - 1), 0)
    };
    u128::from(lo) | (u128::from(hi) << 64) | ((n as u128) << 120)
}

/// [`key_of`] of the `n` bytes at the start of `window`, which holds at least 16
/// bytes of text: one unaligned load and a mask from a table, with no branch on the
/// length (the length was the most mispredicted branch of encoding).
#[inline]
pub(crate) fn key_in(window: &[u8; 16], n: usize) -> u128 {
    /// The masks of the first `n` bytes and the length tag, by `n` (0 for 0 and > 15).
    const MASKS: [(u128, u128); 17] = {
        let mut m = [(0u128, 0u128); 17];
        let mut n = 1;
        while n <= KEY_LEN {
            m[n] = ((1u128 << (8 * n)) - 1, (n as u128) << 120);
            n += 1;
        }
        m
    };
    let (mask, tag) = MASKS[n.min(16)];
    (u128::from_le_bytes(*window) & mask) | tag
}

/// [`key_of`] of `piece`, read with one load from `text` when `piece` is a slice of
/// `text` with 16 bytes of it from its start.
#[inline(always)]
pub(crate) fn key_at(text: &[u8], piece: &[u8]) -> u128 {
    let offset = (piece.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    let window = text
        .get(offset..)
        .filter(|rest| rest.as_ptr() == piece.as_ptr())
        .and_then(<[u8]>::first_chunk::<16>);
    match window {
        Some(window) => key_in(window, piece.len()),
        None => key_of(piece),
    }
}

/// The hash of a key. A folded multiply (the high and low halves of one 64x64-bit
/// product, XORed): one multiply, and both its low bits (the encoder's tables) and its
/// top bits (the counter's shards) depend on every bit of the key.
#[inline]
pub fn hash(key: u128) -> u64 {
    let lo = key as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let hi = (key >> 64) as u64 ^ 0xc2b2_ae3d_27d4_eb4f;
    let product = u128::from(lo) * u128::from(hi);
    product as u64 ^ (product >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_bytes_and_length() {
        for n in 1..=KEY_LEN {
            let piece: Vec<u8> = (0..n as u8)
                .map(|i| i.wrapping_mul(37).wrapping_add(1))
                .collect();
            let mut want = [0u8; 16];
            want[..n].copy_from_slice(&piece);
            want[15] = n as u8;
            assert_eq!(key_of(&piece), u128::from_le_bytes(want), "length {n}");
        }
        assert_eq!(key_of(b""), 0);
        assert_eq!(key_of(&[0u8; 16]), 0);
        // A piece of zero bytes still has a non-zero key (its length).
        assert_ne!(key_of(&[0u8]), 0);
        let text = *b"0123456789abcdefXYZ";
        let window: &[u8; 16] = text[..16].try_into().unwrap();
        for n in 0..=16 {
            assert_eq!(key_in(window, n), key_of(&text[..n]), "length {n}");
        }
    }

    #[test]
    fn key_at_equals_key_of() {
        let text = b"ab\0ab\0\0abcdefghijklmnopqrstuvwxyz abcdefghijklmno";
        for start in 0..text.len() {
            for end in start..=text.len() {
                let piece = &text[start..end];
                assert_eq!(key_at(text, piece), key_of(piece), "{start}..{end}");
            }
        }
        assert_eq!(key_at(b"", b"abc"), key_of(b"abc"));
    }
}
