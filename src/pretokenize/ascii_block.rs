//! Class bitmasks of 64 ASCII bytes at once (bit k is byte k), for scanners that find
//! all piece boundaries of a block with a few bit operations instead of a branch
//! per character, and the rules the scanners' `block_starts` share.

use super::unicode::{ascii_class, class_at, WS};

/// Which of 64 bytes are in each class. Only meaningful where `non_ascii` is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Masks {
    pub(crate) non_ascii: u64,
    pub(crate) letter: u64,
    /// `A-Z`.
    pub(crate) upper: u64,
    pub(crate) digit: u64,
    /// `\s` among ASCII: `\t \n \v \f \r` and space.
    pub(crate) ws: u64,
    pub(crate) space: u64,
    /// `\r` and `\n`.
    pub(crate) newline: u64,
    pub(crate) apostrophe: u64,
}

/// A way to compute the [`Masks`] of a block. The scanners are generic over it so
/// that each kernel is inlined into a copy of the whole scan loop compiled for its
/// instruction set (see `pretokenize::scan_named`).
pub(crate) trait Classify {
    fn masks(block: &[u8; 64]) -> Masks;
}

/// The kernel every CPU of the target has: SSE2 on x86_64, else one byte at a time.
pub(crate) struct Baseline;

impl Classify for Baseline {
    #[inline(always)]
    fn masks(block: &[u8; 64]) -> Masks {
        #[cfg(target_arch = "x86_64")]
        {
            sse2::masks(block)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            scalar_masks(block)
        }
    }
}

/// AVX-512BW: one compare into a mask register per class for all 64 bytes (SSE2
/// needs four compares and four mask moves per class). Only for code compiled with
/// `avx512f,avx512bw` enabled, on a CPU that has them.
#[cfg(target_arch = "x86_64")]
pub(crate) struct Avx512;

#[cfg(target_arch = "x86_64")]
impl Classify for Avx512 {
    #[inline(always)]
    fn masks(block: &[u8; 64]) -> Masks {
        // SAFETY: `Avx512` is only used inside functions compiled with AVX-512BW,
        // which run only after the CPU was checked for it.
        unsafe { avx512::masks(block) }
    }
}

/// AVX2: two 32-byte halves, one compare and one mask move per class and half (SSE2
/// needs four of each). Only for code compiled with `avx2` enabled, on a CPU that has
/// it.
#[cfg(target_arch = "x86_64")]
pub(crate) struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Classify for Avx2 {
    #[inline(always)]
    fn masks(block: &[u8; 64]) -> Masks {
        // SAFETY: `Avx2` is only used inside functions compiled with AVX2, which run
        // only after the CPU was checked for it.
        unsafe { avx2::masks(block) }
    }
}

/// The reference (and the fallback on other targets): one byte at a time.
#[cfg(any(test, not(target_arch = "x86_64")))]
pub(crate) fn scalar_masks(block: &[u8; 64]) -> Masks {
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
    use crate::pretokenize::ascii_block::Masks;
    use std::arch::x86_64::*;

    /// Bytes with `x + add` (wrapping) below `limit` as signed bytes: a range test in
    /// two instructions (SSE2 has only signed byte compares).
    #[inline(always)]
    fn in_range(x: __m128i, add: i8, limit: i8) -> __m128i {
        // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on has
        // it; these intrinsics only compute on register values.
        unsafe { _mm_cmplt_epi8(_mm_add_epi8(x, _mm_set1_epi8(add)), _mm_set1_epi8(limit)) }
    }

    #[inline(always)]
    fn bits(v: __m128i) -> u64 {
        // SAFETY: as in `in_range`: SSE2 is baseline, and this reads only a register.
        unsafe { _mm_movemask_epi8(v) as u16 as u64 }
    }

    /// Safe although the intrinsics need SSE2: every x86_64 CPU has it. Not
    /// `#[target_feature]` (which would make it callable only in `unsafe`): SSE2 is
    /// the x86_64 baseline, and the attribute kept this from being inlined into the
    /// scanners (a call per 64 bytes, with the masks passed through memory).
    #[inline(always)]
    pub(crate) fn masks(block: &[u8; 64]) -> Masks {
        let mut m = Masks::default();
        for (i, part) in block.chunks_exact(16).enumerate() {
            // SAFETY: `part` is 16 readable bytes, and `loadu` needs no alignment.
            let x = unsafe { _mm_loadu_si128(part.as_ptr().cast()) };
            let shift = 16 * i;
            // SAFETY: SSE2 is part of the x86_64 baseline; only register values.
            let (folded, space, newline, apostrophe) = unsafe {
                (
                    _mm_or_si128(x, _mm_set1_epi8(0x20)),
                    _mm_cmpeq_epi8(x, _mm_set1_epi8(b' ' as i8)),
                    _mm_or_si128(
                        _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\r' as i8)),
                        _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\n' as i8)),
                    ),
                    _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\'' as i8)),
                )
            };
            // Letters: (x | 0x20) in 'a'..='z', i.e. (x | 0x20) + 31 in 128..=153.
            let letter = in_range(
                folded,
                128u8.wrapping_sub(b'a') as i8,
                (128 + 26 - 256) as i8,
            );
            let upper = in_range(x, 128u8.wrapping_sub(b'A') as i8, (128 + 26 - 256) as i8);
            let digit = in_range(x, 128u8.wrapping_sub(b'0') as i8, (128 + 10 - 256) as i8);
            let controls = in_range(x, 128u8.wrapping_sub(9) as i8, (128 + 5 - 256) as i8);
            // SAFETY: as above.
            let ws = unsafe { _mm_or_si128(space, controls) };
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use crate::pretokenize::ascii_block::Masks;
    use std::arch::x86_64::*;

    /// Bytes with `x + add` (wrapping) below `limit` as signed bytes: a range test in
    /// two instructions (AVX2 has only signed byte compares).
    ///
    /// # Safety
    /// As [`masks`]: the CPU must have AVX2.
    #[inline(always)]
    unsafe fn in_range(x: __m256i, add: i8, limit: i8) -> __m256i {
        // SAFETY: the caller guarantees AVX2; only register values.
        unsafe {
            _mm256_cmpgt_epi8(
                _mm256_set1_epi8(limit),
                _mm256_add_epi8(x, _mm256_set1_epi8(add)),
            )
        }
    }

    /// The bytes of `x` equal to `c`.
    ///
    /// # Safety
    /// As [`masks`]: the CPU must have AVX2.
    #[inline(always)]
    unsafe fn eq(x: __m256i, c: u8) -> __m256i {
        // SAFETY: the caller guarantees AVX2; only register values.
        unsafe { _mm256_cmpeq_epi8(x, _mm256_set1_epi8(c as i8)) }
    }

    /// # Safety
    /// As [`masks`]: the CPU must have AVX2.
    #[inline(always)]
    unsafe fn bits(v: __m256i) -> u64 {
        // SAFETY: the caller guarantees AVX2; only a register.
        unsafe { _mm256_movemask_epi8(v) as u32 as u64 }
    }

    /// Unsafe, as the AVX-512 kernel is: AVX2 is not in the baseline.
    ///
    /// # Safety
    /// The CPU must have AVX2, and the caller be compiled with it (so that the
    /// intrinsics are inlined).
    #[inline(always)]
    pub(crate) unsafe fn masks(block: &[u8; 64]) -> Masks {
        let mut m = Masks::default();
        for (i, half) in block.chunks_exact(32).enumerate() {
            let shift = 32 * i;
            // SAFETY: the caller guarantees AVX2 (for this and the helpers above);
            // `half` is 32 readable bytes, and `loadu` needs no alignment.
            unsafe {
                let x = _mm256_loadu_si256(half.as_ptr().cast());
                let folded = _mm256_or_si256(x, _mm256_set1_epi8(0x20));
                let space = eq(x, b' ');
                // As in the SSE2 kernel: `x + (128 - low)` below `count - 128`.
                let letter = in_range(
                    folded,
                    128u8.wrapping_sub(b'a') as i8,
                    (128 + 26 - 256) as i8,
                );
                let upper = in_range(x, 128u8.wrapping_sub(b'A') as i8, (128 + 26 - 256) as i8);
                let digit = in_range(x, 128u8.wrapping_sub(b'0') as i8, (128 + 10 - 256) as i8);
                let controls = in_range(x, 128u8.wrapping_sub(9) as i8, (128 + 5 - 256) as i8);
                m.non_ascii |= bits(x) << shift;
                m.letter |= bits(letter) << shift;
                m.upper |= bits(upper) << shift;
                m.digit |= bits(digit) << shift;
                m.ws |= bits(_mm256_or_si256(space, controls)) << shift;
                m.space |= bits(space) << shift;
                m.newline |= bits(_mm256_or_si256(eq(x, b'\r'), eq(x, b'\n'))) << shift;
                m.apostrophe |= bits(eq(x, b'\'')) << shift;
            }
        }
        m
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use crate::pretokenize::ascii_block::Masks;
    use std::arch::x86_64::*;

    /// Bytes `x` with `x - low` below `count` (unsigned): `low..low + count`.
    ///
    /// # Safety
    /// As [`masks`]: the CPU must have AVX-512F and AVX-512BW.
    #[inline(always)]
    unsafe fn in_range(x: __m512i, low: u8, count: u8) -> u64 {
        // SAFETY: the caller guarantees AVX-512F/BW; only register values.
        unsafe {
            _mm512_cmplt_epu8_mask(
                _mm512_sub_epi8(x, _mm512_set1_epi8(low as i8)),
                _mm512_set1_epi8(count as i8),
            )
        }
    }

    /// The bytes of `x` equal to `c`.
    ///
    /// # Safety
    /// As [`masks`]: the CPU must have AVX-512F and AVX-512BW.
    #[inline(always)]
    unsafe fn eq(x: __m512i, c: u8) -> u64 {
        // SAFETY: the caller guarantees AVX-512F/BW; only register values.
        unsafe { _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8(c as i8)) }
    }

    /// Unsafe, unlike the SSE2 kernel, because AVX-512 is not in the baseline; and
    /// not `#[target_feature]`, which cannot be combined with `#[inline(always)]`.
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX-512BW, and the caller be compiled with them
    /// (so that the intrinsics are inlined).
    #[inline(always)]
    pub(crate) unsafe fn masks(block: &[u8; 64]) -> Masks {
        // SAFETY: the caller guarantees AVX-512F/BW (for this and the helpers below);
        // `block` is 64 readable bytes, and `loadu` needs no alignment.
        unsafe {
            let x = _mm512_loadu_si512(block.as_ptr().cast());
            let folded = _mm512_or_si512(x, _mm512_set1_epi8(0x20));
            let space = eq(x, b' ');
            Masks {
                non_ascii: _mm512_movepi8_mask(x),
                letter: in_range(folded, b'a', 26),
                upper: in_range(x, b'A', 26),
                digit: in_range(x, b'0', 10),
                ws: space | in_range(x, 9, 5),
                space,
                newline: eq(x, b'\r') | eq(x, b'\n'),
                apostrophe: eq(x, b'\''),
            }
        }
    }
}

/// A block of 64 plain-ASCII bytes with its class masks, as the `block_starts` of the
/// scanners see it.
pub(crate) struct Block {
    pub(crate) m: Masks,
    /// Neither letter, digit nor whitespace.
    pub(crate) other: u64,
    /// Whether the byte after the block is whitespace (it decides where a whitespace
    /// run that reaches the block's end stops).
    pub(crate) after_ws: bool,
}

/// Bit k of `x` moved to k + 1: "the byte before is in `x`".
#[inline(always)]
pub(crate) fn prev(x: u64) -> u64 {
    x << 1
}

/// The block at `b[w..w + 64]`, or `Err` as `scan_blocks` wants it: `Err(b.len())` when
/// fewer than 65 bytes are left, else `Err(i)` with `i` the block's last non-ASCII byte
/// (in CJK or Cyrillic text that skips whole blocks, not one character).
#[inline(always)]
pub(crate) fn load<C: Classify>(b: &[u8], w: usize) -> Result<Block, usize> {
    let Some(block) = b.get(w..).and_then(|r| r.first_chunk::<64>()) else {
        return Err(b.len());
    };
    let Some(&after) = b.get(w + 64) else {
        return Err(b.len());
    };
    let m = C::masks(block);
    if m.non_ascii != 0 {
        return Err(w + 63 - m.non_ascii.leading_zeros() as usize);
    }
    let after_ws = if after < 0x80 {
        ascii_class(after) & WS != 0
    } else {
        class_at(b, w + 64).0 & WS != 0
    };
    Ok(Block {
        other: !(m.letter | m.digit | m.ws),
        m,
        after_ws,
    })
}

/// Whitespace runs that `\s+(?!\S)|\s+` splits: each starts a piece, and so does its
/// last character when it has two or more and a non-space follows.
#[inline(always)]
pub(crate) fn whitespace_starts(blk: &Block) -> u64 {
    let ws = blk.m.ws;
    let next_ws = (ws >> 1) | (u64::from(blk.after_ws) << 63);
    (ws & !prev(ws)) | (ws & prev(ws) & !next_ws)
}

/// cl100k's and o200k's punctuation and letter runs: a punctuation run starts a piece,
/// or the space before it does; a letter run starts one unless the character before
/// it joins (a space, `\t \v \f`, or a lone punctuation mark not joined to a space).
/// Returns the starts and the letter runs a lone punctuation mark joined.
#[inline(always)]
pub(crate) fn punctuation_and_word_starts(blk: &Block) -> (u64, u64) {
    let m = &blk.m;
    let other_starts = blk.other & !prev(blk.other);
    let mut starts = (other_starts & !prev(m.space)) | ((other_starts & prev(m.space)) >> 1);
    let tab_like = m.ws & !m.space & !m.newline;
    let letter_starts = m.letter & !prev(m.letter);
    let after_blank = letter_starts & prev(m.space | tab_like);
    let after_lone_other =
        letter_starts & prev(blk.other) & !prev(prev(blk.other)) & !prev(prev(m.space));
    starts |= letter_starts & !after_blank & !after_lone_other;
    (starts, after_lone_other)
}

/// `\p{N}{1,3}`: each digit run starts a piece every three digits.
#[inline(always)]
pub(crate) fn digit_group_starts(digit: u64) -> u64 {
    let mut runs = digit & !prev(digit);
    let mut starts = runs;
    while runs != 0 {
        let k = runs.trailing_zeros() as usize;
        runs &= runs - 1;
        let run = (digit >> k).trailing_ones() as usize;
        for group in (k + 3..k + run).step_by(3) {
            starts |= 1 << group;
        }
    }
    starts
}

/// Redoes, in `starts`, the whitespace runs below bit `limit` that hold a line break
/// (a few per block), for `\s*[\r\n]` (cl100k) and `\s*[\r\n]+` (o200k): the line
/// breaks right after a punctuation run belong to it; then the run starts a piece, the
/// character after its last line break does, and its last character does when two or
/// more follow that break. `Err(starts)` cut before a run that reaches past the block,
/// since where it ends decides its pieces.
#[inline(always)]
pub(crate) fn line_break_runs(blk: &Block, mut starts: u64, limit: usize) -> Result<u64, u64> {
    let (ws, newline) = (blk.m.ws, blk.m.newline);
    let below_limit = if limit >= 64 { !0 } else { (1u64 << limit) - 1 };
    let mut breaks = newline & below_limit;
    while breaks != 0 {
        let k = breaks.trailing_zeros() as usize;
        let below = !ws & ((1u64 << k) - 1);
        let run_start = if below == 0 {
            0
        } else {
            64 - below.leading_zeros() as usize
        };
        let run_end = k + (ws >> k).trailing_ones() as usize;
        let from_start = !0u64 << run_start;
        let run = from_start & (!0u64).checked_shl(run_end as u32).map_or(!0, |x| !x);
        breaks &= !run;
        starts &= !run;
        if run_end == 64 && blk.after_ws {
            return Err(starts & !from_start);
        }
        let mut p = run_start;
        if p > 0 && blk.other & (1 << (p - 1)) != 0 {
            while p < run_end && newline & (1 << p) != 0 {
                p += 1;
            }
        }
        if p == run_end {
            continue;
        }
        starts |= 1 << p;
        let breaks_left = newline & run & (!0u64 << p);
        let rest = if breaks_left == 0 {
            p
        } else {
            let last = 63 - breaks_left.leading_zeros() as usize;
            if last + 1 < run_end {
                starts |= 1 << (last + 1);
            }
            last + 1
        };
        if run_end - rest >= 2 {
            starts |= 1 << (run_end - 1);
        }
    }
    Ok(starts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simd_masks_equal_scalar_masks() {
        let mut blocks: Vec<[u8; 64]> = (0..=255u8)
            .map(|start| std::array::from_fn(|k| start.wrapping_add(k as u8)))
            .collect();
        blocks.push(*b"It's 12 o'clock\t\r\n  x\x0b\x0c\x1c{z}[a]@`/:09AZaz\x7f\xff\xc3\xa9 the end. don't 'LL!");
        for block in &blocks {
            let want = scalar_masks(block);
            assert_eq!(Baseline::masks(block), want);
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                assert_eq!(unsafe { avx2_masks(block) }, want);
            }
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx512bw") {
                // SAFETY: the CPU has AVX-512BW (and so AVX-512F).
                assert_eq!(unsafe { avx512_masks(block) }, want);
            }
        }
    }

    /// [`Avx2::masks`] compiled with the feature it needs.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn avx2_masks(block: &[u8; 64]) -> Masks {
        Avx2::masks(block)
    }

    /// [`Avx512::masks`] compiled with the features it needs.
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX-512BW.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn avx512_masks(block: &[u8; 64]) -> Masks {
        Avx512::masks(block)
    }
}
