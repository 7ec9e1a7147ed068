//! Class bitmasks of 64 ASCII bytes at once (bit k is byte k), for scanners that find
//! all piece boundaries of a block with a few bit operations instead of a branch
//! per character.

/// Which of 64 bytes are in each class. Only meaningful where `non_ascii` is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Masks {
    pub non_ascii: u64,
    pub letter: u64,
    /// `A-Z`.
    pub upper: u64,
    pub digit: u64,
    /// `\s` among ASCII: `\t \n \v \f \r` and space.
    pub ws: u64,
    pub space: u64,
    /// `\r` and `\n`.
    pub newline: u64,
    pub apostrophe: u64,
}

/// The masks of `block`.
#[inline(always)]
pub fn masks(block: &[u8; 64]) -> Masks {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of the x86_64 baseline, so the CPU has it.
        unsafe { sse2::masks(block) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        scalar_masks(block)
    }
}

/// The reference (and the fallback on other targets): one byte at a time.
#[cfg(any(test, not(target_arch = "x86_64")))]
pub fn scalar_masks(block: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (k, &c) in block.iter().enumerate() {
        let bit = 1u64 << k;
        let set = |mask: &mut u64, yes: bool| *mask |= if yes { bit } else { 0 };
        set(&mut m.non_ascii, c >= 0x80);
        set(&mut m.letter, c.is_ascii_alphabetic());
        set(&mut m.upper, c.is_ascii_uppercase());
        set(&mut m.digit, c.is_ascii_digit());
        set(&mut m.ws, c == b' ' || (9..=13).contains(&c));
        set(&mut m.space, c == b' ');
        set(&mut m.newline, c == b'\r' || c == b'\n');
        set(&mut m.apostrophe, c == b'\'');
    }
    m
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::Masks;
    use std::arch::x86_64::*;

    /// Bytes with `x + add` (wrapping) below `limit` as signed bytes: a range test in
    /// two instructions (SSE2 has only signed byte compares).
    #[inline(always)]
    unsafe fn in_range(x: __m128i, add: i8, limit: i8) -> __m128i {
        _mm_cmplt_epi8(_mm_add_epi8(x, _mm_set1_epi8(add)), _mm_set1_epi8(limit))
    }

    #[inline(always)]
    unsafe fn bits(v: __m128i) -> u64 {
        _mm_movemask_epi8(v) as u16 as u64
    }

    /// # Safety
    /// The CPU must have SSE2 (every x86_64 CPU does).
    #[target_feature(enable = "sse2")]
    pub unsafe fn masks(block: &[u8; 64]) -> Masks {
        let mut m = Masks::default();
        for (i, part) in block.chunks_exact(16).enumerate() {
            let x = _mm_loadu_si128(part.as_ptr().cast());
            let shift = 16 * i;
            // Letters: (x | 0x20) in 'a'..='z', i.e. (x | 0x20) + 31 in 128..=153.
            let folded = _mm_or_si128(x, _mm_set1_epi8(0x20));
            let letter = in_range(
                folded,
                128u8.wrapping_sub(b'a') as i8,
                (128 + 26 - 256) as i8,
            );
            let upper = in_range(x, 128u8.wrapping_sub(b'A') as i8, (128 + 26 - 256) as i8);
            let digit = in_range(x, 128u8.wrapping_sub(b'0') as i8, (128 + 10 - 256) as i8);
            let space = _mm_cmpeq_epi8(x, _mm_set1_epi8(b' ' as i8));
            let controls = in_range(x, 128u8.wrapping_sub(9) as i8, (128 + 5 - 256) as i8);
            let ws = _mm_or_si128(space, controls);
            let newline = _mm_or_si128(
                _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\r' as i8)),
                _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\n' as i8)),
            );
            let apostrophe = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\'' as i8));
            m.non_ascii |= bits(x) << shift;
            m.letter |= bits(letter) << shift;
            m.upper |= bits(upper) << shift;
            m.digit |= bits(digit) << shift;
            m.ws |= bits(ws) << shift;
            m.space |= bits(space) << shift;
            m.newline |= bits(newline) << shift;
            m.apostrophe |= bits(apostrophe) << shift;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simd_masks_equal_scalar_masks() {
        for start in 0..=192u8 {
            let block: [u8; 64] = std::array::from_fn(|k| start.wrapping_add(k as u8));
            assert_eq!(masks(&block), scalar_masks(&block), "{start}");
        }
        let text = *b"It's 12 o'clock\t\r\n  x\x0b\x0c\x1c{z}[a]@`/:09AZaz\x7f\xff\xc3\xa9 the end. don't 'LL!";
        assert_eq!(masks(&text), scalar_masks(&text));
    }
}
