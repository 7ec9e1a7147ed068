//! Encoding text held as an array of code points (a Python `str`'s Latin-1, UCS-2 or
//! UCS-4 storage), transcoded to UTF-8 a round at a time into one reused buffer.
//!
//! Why: the encoder reads UTF-8, and a `str` with any character above U+00FF has none
//! until asked. CPython then encodes the whole text to a new bytes object and copies
//! it into a cache kept with the string: for the 116 MB English corpus (UCS-4, one
//! emoji is enough) that was 163 ms and 232 MB of fresh pages, a sixth of a first
//! encode. Here each round of [`ROUND`] code points becomes UTF-8 in a buffer that
//! stays in the cache, and the buffer's final prefix (the rule `encode_iterable`
//! uses, [`FinalPrefix`]) is encoded, so the ids are those of the whole text.

use super::final_prefix::FinalPrefix;
use crate::encode::encoder::Encoder;
use crate::encode::engine::{output_buffer, short_lines_for, Prefault, Workspace};
use crate::error::{Error, Result};
use crate::specials::Specials;

/// `push_utf8`'s error where the buffer cannot grow (out of memory).
const NO_ROOM: usize = usize::MAX;

/// Code points transcoded per round: 64-256 KB of UTF-8.
pub(crate) const ROUND: usize = 1 << 16;

/// A text as the encoder can take it: UTF-8, or code points to transcode.
#[derive(Clone, Copy, Debug)]
pub enum Text<'a> {
    Utf8(&'a str),
    Wide(Wide<'a>),
}

impl Text<'_> {
    /// Bytes of UTF-8, or code points: what the caches and buffers are sized by.
    pub fn len(&self) -> usize {
        match self {
            Text::Utf8(s) => s.len(),
            Text::Wide(w) => w.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A text as fixed-width code points.
#[derive(Clone, Copy, Debug)]
pub enum Wide<'a> {
    Latin1(&'a [u8]),
    Ucs2(&'a [u16]),
    Ucs4(&'a [u32]),
}

impl Wide<'_> {
    /// Code points.
    pub fn len(&self) -> usize {
        match self {
            Wide::Latin1(s) => s.len(),
            Wide::Ucs2(s) => s.len(),
            Wide::Ucs4(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the UTF-8 of code points `range` to `buf`; `Err(i)` at the first code
    /// point that has none (a surrogate, or above U+10FFFF), whose index it gives;
    /// `Err(usize::MAX)` where `buf` cannot grow ([`NO_ROOM`]).
    fn push_utf8(
        &self,
        range: std::ops::Range<usize>,
        buf: &mut Vec<u8>,
    ) -> std::result::Result<(), usize> {
        let base = range.start;
        let shift = |r: std::result::Result<(), usize>| r.map_err(|i| base.saturating_add(i));
        match self {
            Wide::Latin1(s) => shift(push_utf8(&s[range], buf)),
            Wide::Ucs2(s) => shift(push_utf8(&s[range], buf)),
            Wide::Ucs4(s) => shift(push_utf8(&s[range], buf)),
        }
    }
}

/// A fixed-width code unit.
trait CodePoint: Copy {
    fn get(self) -> u32;
    /// The ASCII bytes of `src[i..]`'s first [`BLOCK`] code points written at `dst`,
    /// if they are all ASCII.
    ///
    /// # Safety
    /// `i + BLOCK <= src.len()`, and `dst` is valid for writing [`BLOCK`] bytes.
    unsafe fn narrow_block(src: &[Self], i: usize, dst: *mut u8) -> bool;
}

/// Code points narrowed at a time while they are ASCII: one 16-byte store.
const BLOCK: usize = 16;

impl CodePoint for u8 {
    #[inline(always)]
    fn get(self) -> u32 {
        u32::from(self)
    }

    #[inline(always)]
    unsafe fn narrow_block(src: &[u8], i: usize, dst: *mut u8) -> bool {
        // SAFETY: the caller gives `i + BLOCK <= src.len()`; unaligned is allowed.
        let block = unsafe { src.as_ptr().add(i).cast::<[u8; BLOCK]>().read_unaligned() };
        let ascii = u128::from_ne_bytes(block) & 0x8080_8080_8080_8080_8080_8080_8080_8080 == 0;
        // SAFETY: the caller gives `BLOCK` writable bytes at `dst`.
        unsafe { dst.cast::<[u8; BLOCK]>().write_unaligned(block) };
        ascii
    }
}

impl CodePoint for u16 {
    #[inline(always)]
    fn get(self) -> u32 {
        u32::from(self)
    }

    #[inline(always)]
    unsafe fn narrow_block(src: &[u16], i: usize, dst: *mut u8) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: the caller gives `i + BLOCK <= src.len()`: the 32 bytes of
            // `src[i..i + BLOCK]`, and `loadu` needs no alignment.
            let (a, b) = unsafe {
                let p = src.as_ptr().add(i).cast::<__m128i>();
                (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)))
            };
            // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on
            // has it; these intrinsics only compute on register values.
            let (ascii, narrow) = unsafe {
                // Every unit below 0x80: the signed saturating pack is then exact.
                let high = _mm_or_si128(a, b);
                let ascii = _mm_movemask_epi8(_mm_cmpeq_epi16(
                    _mm_and_si128(high, _mm_set1_epi16(!0x7f)),
                    _mm_setzero_si128(),
                )) == 0xffff;
                (ascii, _mm_packs_epi16(a, b))
            };
            // SAFETY: the caller gives `BLOCK` (16) writable bytes at `dst`; `storeu`
            // needs no alignment.
            unsafe { _mm_storeu_si128(dst.cast(), narrow) };
            ascii
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: the caller gives `BLOCK` writable bytes at `dst`.
        unsafe {
            narrow_portable(&src[i..i + BLOCK], dst)
        }
    }
}

impl CodePoint for u32 {
    #[inline(always)]
    fn get(self) -> u32 {
        self
    }

    #[inline(always)]
    unsafe fn narrow_block(src: &[u32], i: usize, dst: *mut u8) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: the caller gives `i + BLOCK <= src.len()`: the 64 bytes of
            // `src[i..i + BLOCK]`, and `loadu` needs no alignment.
            let (a, b, c, d) = unsafe {
                let p = src.as_ptr().add(i).cast::<__m128i>();
                (
                    _mm_loadu_si128(p),
                    _mm_loadu_si128(p.add(1)),
                    _mm_loadu_si128(p.add(2)),
                    _mm_loadu_si128(p.add(3)),
                )
            };
            // SAFETY: SSE2 is part of the x86_64 baseline, so every CPU this runs on
            // has it; these intrinsics only compute on register values.
            let (ascii, narrow) = unsafe {
                // Every unit below 0x80: the signed saturating packs are then exact.
                let high = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
                let ascii = _mm_movemask_epi8(_mm_cmpeq_epi32(
                    _mm_and_si128(high, _mm_set1_epi32(!0x7f)),
                    _mm_setzero_si128(),
                )) == 0xffff;
                let narrow = _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
                (ascii, narrow)
            };
            // SAFETY: the caller gives `BLOCK` (16) writable bytes at `dst`; `storeu`
            // needs no alignment.
            unsafe { _mm_storeu_si128(dst.cast(), narrow) };
            ascii
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: the caller gives `BLOCK` writable bytes at `dst`.
        unsafe {
            narrow_portable(&src[i..i + BLOCK], dst)
        }
    }
}

/// [`CodePoint::narrow_block`] one code point at a time.
///
/// # Safety
/// `dst` must be valid for writing [`BLOCK`] bytes.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn narrow_portable<T: CodePoint>(block: &[T], dst: *mut u8) -> bool {
    let narrow: [u8; BLOCK] = std::array::from_fn(|k| block[k].get() as u8);
    // SAFETY: per the caller; unaligned is allowed.
    unsafe { dst.cast::<[u8; BLOCK]>().write_unaligned(narrow) };
    block.iter().all(|c| c.get() < 0x80)
}

/// Appends the UTF-8 of `src` to `buf`; `Err(i)` at the first code point `src[i]`
/// that has none.
///
/// A block of [`BLOCK`] code points that is not all ASCII is transcoded whole, one
/// code point at a time, before the next block is tried: retrying the block test
/// before every code point of non-Latin text was 12% of a warm per-document encode
/// of the multilingual corpus (OLMo 2, perf), a failed 32-byte test per character.
fn push_utf8<T: CodePoint>(src: &[T], buf: &mut Vec<u8>) -> std::result::Result<(), usize> {
    // Room for the longest encoding of every code point and then some, so the loop
    // writes through a pointer: ASCII blocks store 16 bytes, and every code point
    // stores four bytes and advances by its length.
    // The buffer holds what is not encoded yet: a text with no safe cut, whole.
    if buf.try_reserve(4 * src.len() + BLOCK).is_err() {
        return Err(NO_ROOM);
    }
    let start = buf.len();
    let dst = buf.as_mut_ptr();
    let mut len = start;
    let mut i = 0;
    let result = loop {
        let block_end = i + BLOCK;
        if block_end <= src.len() {
            // SAFETY: `i + BLOCK <= src.len()`, and `len + BLOCK` bytes are within
            // the capacity: at most 4 bytes were written per code point before `i`.
            if unsafe { T::narrow_block(src, i, dst.add(len)) } {
                i = block_end;
                len += BLOCK;
                continue;
            }
        }
        let stop = block_end.min(src.len());
        if i == stop {
            break Ok(());
        }
        // SAFETY: `len + 4 * (stop - i)` bytes are within the capacity, as above.
        match unsafe { push_scalar(&src[i..stop], dst.add(len)) } {
            Ok(n) => len += n,
            Err(k) => break Err(i + k),
        }
        i = stop;
    };
    // SAFETY: the bytes below `len` are written (UTF-8 of the code points before
    // `i`); on an error they are dropped.
    unsafe { buf.set_len(if result.is_ok() { len } else { start }) };
    result
}

/// Writes the UTF-8 of `src` at `dst`: the bytes written, or `Err(k)` at the first
/// code point `src[k]` that has none (a surrogate, or above U+10FFFF).
///
/// # Safety
/// `dst` must be valid for writing `4 * src.len()` bytes.
#[inline(always)]
unsafe fn push_scalar<T: CodePoint>(src: &[T], dst: *mut u8) -> std::result::Result<usize, usize> {
    let mut len = 0;
    for (k, c) in src.iter().enumerate() {
        let c = c.get();
        // Each branch stores four bytes (little-endian: the first byte lowest) and
        // keeps the first `n`; the rest are overwritten or beyond the final length.
        let (word, n) = if c < 0x80 {
            (c, 1)
        } else if c < 0x800 {
            (0x80c0 | (c >> 6) | ((c & 0x3f) << 8), 2)
        } else if c < 0x1_0000 {
            if c & 0xf800 == 0xd800 {
                return Err(k);
            }
            (
                0x80_80e0 | (c >> 12) | (((c >> 6) & 0x3f) << 8) | ((c & 0x3f) << 16),
                3,
            )
        } else if c < 0x11_0000 {
            (
                0x8080_80f0
                    | (c >> 18)
                    | (((c >> 12) & 0x3f) << 8)
                    | (((c >> 6) & 0x3f) << 16)
                    | ((c & 0x3f) << 24),
                4,
            )
        } else {
            return Err(k);
        };
        // SAFETY: at most 4 bytes were written per code point before this one, and
        // the caller gives 4 per code point.
        unsafe {
            dst.add(len)
                .cast::<[u8; 4]>()
                .write_unaligned(word.to_le_bytes())
        };
        len += n;
    }
    Ok(len)
}

/// The ids of `text`, recognising the special tokens of `allowed`; one of
/// `disallowed` in the text is an error, as in `encode`. `Ok(None)` when a code
/// point has no UTF-8 (a lone surrogate): the caller reports it as its runtime does.
pub fn encode_wide(
    encoder: &Encoder,
    text: Wide<'_>,
    allowed: &Specials,
    disallowed: Option<&Specials>,
) -> Result<Option<Vec<u32>>> {
    let mut ws = encoder.lease()?;
    // UTF-8 is at least a byte per code point: a size for the table and the ids.
    ws.short.reserve_lines(short_lines_for(text.len()));
    ws.short.populate();
    let mut out = output_buffer(text.len())?;
    ws.prefault = Prefault::new(&out);
    let mut buf = Vec::new();
    let encoded = encode_wide_into(
        encoder, text, allowed, disallowed, &mut ws, &mut buf, &mut out,
    );
    ws.prefault = Prefault::default();
    Ok(encoded?.then_some(out))
}

/// Appends the ids of `text` to `out` through `buf` (emptied first); false, with
/// `out` partly written, when a code point has no UTF-8.
pub(crate) fn encode_wide_into(
    encoder: &Encoder,
    text: Wide<'_>,
    allowed: &Specials,
    disallowed: Option<&Specials>,
    ws: &mut Workspace,
    buf: &mut Vec<u8>,
    out: &mut Vec<u32>,
) -> Result<bool> {
    let mut cut = FinalPrefix::new(encoder);
    buf.clear();
    let mut done = 0;
    loop {
        let end = (done + ROUND).min(text.len());
        match text.push_utf8(done..end, buf) {
            Ok(()) => {}
            Err(NO_ROOM) => return Err(Error::out_of_memory::<u8>("text", 4 * ROUND + buf.len())),
            Err(_) => return Ok(false),
        }
        done = end;
        // SAFETY: `push_utf8` appends only whole UTF-8 encodings of chars, and
        // `buf` starts empty and loses only a prefix ending at a char boundary.
        let utf8 = unsafe { std::str::from_utf8_unchecked(buf) };
        if let Some(d) = disallowed {
            d.refuse_in(utf8)?;
        }
        if done == text.len() {
            encoder.encode_into(utf8, allowed, ws, out)?;
            return Ok(true);
        }
        if !cut.due(buf.len()) {
            continue;
        }
        if let Some(end) = cut.take(utf8, allowed) {
            encoder.encode_into(&utf8[..end], allowed, ws, out)?;
            buf.drain(..end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{long_text, pattern_encoder as encoder};

    fn wides(text: &str) -> (Vec<u8>, Vec<u16>, Vec<u32>) {
        let ucs4: Vec<u32> = text.chars().map(u32::from).collect();
        let ucs2 = ucs4.iter().map(|&c| c as u16).collect();
        let latin1 = ucs4.iter().map(|&c| c as u8).collect();
        (latin1, ucs2, ucs4)
    }

    #[test]
    fn transcodes_every_width_like_the_standard_library() {
        let texts = [
            "",
            "plain ascii text, longer than one block of sixteen",
            "café naïve Ünïcödé, ÿ",
            "日本語のテキスト and Ελληνικά — “quotes”",
            "emoji 🙃🙃 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 past the BMP\u{10FFFF}",
        ];
        let utf8 = |w: Wide<'_>| {
            let mut buf = Vec::new();
            w.push_utf8(0..w.len(), &mut buf).unwrap();
            buf
        };
        for text in texts {
            let (latin1, ucs2, ucs4) = wides(text);
            assert_eq!(utf8(Wide::Ucs4(&ucs4)), text.as_bytes());
            if text.chars().all(|c| (c as u32) < 0x10000) {
                assert_eq!(utf8(Wide::Ucs2(&ucs2)), text.as_bytes());
            }
            if text.chars().all(|c| (c as u32) < 0x100) {
                assert_eq!(utf8(Wide::Latin1(&latin1)), text.as_bytes());
            }
        }
    }

    #[test]
    fn transcodes_every_code_point_in_every_position() {
        // Every scalar value, in runs of each length class with ASCII between them at
        // shifting distances, so that each lands in mixed and uniform blocks alike.
        let mut text = String::new();
        for (n, ch) in (0..=0x10ffff).filter_map(char::from_u32).enumerate() {
            text.push(ch);
            if n % 7 == 0 {
                text.push_str(&"a".repeat(n % 23));
            }
        }
        let (_, _, ucs4) = wides(&text);
        let mut buf = vec![b'x'];
        Wide::Ucs4(&ucs4)
            .push_utf8(0..ucs4.len(), &mut buf)
            .unwrap();
        assert_eq!(&buf[1..], text.as_bytes());
        let bmp: String = text.chars().filter(|&c| (c as u32) < 0x1_0000).collect();
        let (_, ucs2, _) = wides(&bmp);
        let mut buf = Vec::new();
        Wide::Ucs2(&ucs2)
            .push_utf8(0..ucs2.len(), &mut buf)
            .unwrap();
        assert_eq!(buf, bmp.as_bytes());
    }

    #[test]
    fn a_code_point_without_utf8_is_found_among_non_ascii_ones() {
        for at in [0, 5, 15, 16, 17, 31, 38] {
            for bad in [0xD800u32, 0xDBFF, 0xDC00, 0xDFFF, 0x11_0000] {
                let mut ucs4: Vec<u32> = "é中🙃a".chars().cycle().take(40).map(u32::from).collect();
                ucs4[at] = bad;
                let mut buf = b"kept".to_vec();
                let got = Wide::Ucs4(&ucs4).push_utf8(0..40, &mut buf);
                assert_eq!(got, Err(at), "{bad:x} at {at}");
                assert_eq!(buf, b"kept");
                if bad < 0x1_0000 {
                    let ucs2: Vec<u16> = ucs4.iter().map(|&c| c as u16).collect();
                    let got = Wide::Ucs2(&ucs2).push_utf8(0..40, &mut Vec::new());
                    assert_eq!(got, Err(at), "{bad:x} at {at}, UCS-2");
                }
            }
        }
    }

    #[test]
    fn a_code_point_without_utf8_is_reported_where_it_is() {
        let mut text: Vec<u32> = "x".repeat(40).chars().map(u32::from).collect();
        for bad in [0xD800, 0xDFFF, 0x11_0000] {
            text[37] = bad;
            let mut buf = Vec::new();
            assert_eq!(Wide::Ucs4(&text).push_utf8(0..40, &mut buf), Err(37));
            assert_eq!(Wide::Ucs4(&text).push_utf8(30..40, &mut buf), Err(37));
        }
        let ucs2: Vec<u16> = vec![0x61, 0xDC00];
        assert_eq!(Wide::Ucs2(&ucs2).push_utf8(0..2, &mut Vec::new()), Err(1));
    }

    #[test]
    fn equals_encode_of_the_utf8_for_every_pattern() {
        let text = long_text();
        let (_, _, ucs4) = wides(&text);
        for pattern in ["gpt2", "cl100k", "o200k", r"\S+|\s+"] {
            let e = encoder(pattern);
            let all = e.specials().clone();
            let want = e.encode(&text, &all).unwrap();
            let got = encode_wide(&e, Wide::Ucs4(&ucs4), &all, None).unwrap();
            assert_eq!(got, Some(want), "{pattern}");
            let none = Specials::default();
            let want = e.encode(&text, &none).unwrap();
            let got = encode_wide(&e, Wide::Ucs4(&ucs4), &none, None).unwrap();
            assert_eq!(got, Some(want), "{pattern}, no specials");
        }
    }

    #[test]
    fn narrow_storage_and_short_texts() {
        let e = encoder("gpt2");
        let all = e.specials().clone();
        for text in [
            "",
            "x",
            "café<|eot|>\nthe",
            &"Ünïcödé line\n".repeat(30_000),
        ] {
            let (latin1, ucs2, _) = wides(text);
            let want = Some(e.encode(text, &all).unwrap());
            assert_eq!(
                encode_wide(&e, Wide::Latin1(&latin1), &all, None).unwrap(),
                want
            );
            assert_eq!(
                encode_wide(&e, Wide::Ucs2(&ucs2), &all, None).unwrap(),
                want
            );
        }
    }

    #[test]
    fn disallowed_specials_are_found_across_rounds() {
        let e = encoder("gpt2");
        let eot = e.subset(&["<|eot|>".to_string()]).unwrap();
        let none = Specials::default();
        // A special token straddling the end of the first round.
        let mut text = "word\n".repeat(ROUND / 5);
        text.truncate(ROUND - 3);
        text.push_str("<|eot|> tail\n");
        let (_, _, ucs4) = wides(&text);
        let err = encode_wide(&e, Wide::Ucs4(&ucs4), &none, Some(&eot)).unwrap_err();
        assert!(
            err.to_string().contains("disallowed special token"),
            "{err}"
        );
        let plain: Vec<u32> = "no specials here\n".chars().map(u32::from).collect();
        assert!(encode_wide(&e, Wide::Ucs4(&plain), &none, Some(&eot))
            .unwrap()
            .is_some());
    }

    #[test]
    fn a_surrogate_gives_none() {
        let e = encoder("gpt2");
        let mut text: Vec<u32> = "line\n".repeat(ROUND).chars().map(u32::from).collect();
        text[ROUND + 10] = 0xD800;
        let got = encode_wide(&e, Wide::Ucs4(&text), &Specials::default(), None).unwrap();
        assert_eq!(got, None);
    }
}
