//! Encoding text held as an array of code points (a Python `str`'s Latin-1, UCS-2 or
//! UCS-4 storage), transcoded to UTF-8 a round at a time into one reused buffer.
//!
//! Why: the encoder reads UTF-8, and a `str` with any character above U+00FF has none
//! until asked. CPython then encodes the whole text to a new bytes object and copies
//! it into a cache kept with the string: for the 116 MB English corpus (UCS-4, one
//! emoji is enough) that was 163 ms and 232 MB of fresh pages, a sixth of a first
//! encode. Here each round of [`ROUND`] code points becomes UTF-8 in a buffer that
//! stays in the cache, and everything before the buffer's last cut (the rule
//! `encode_iterable` uses, [`Cutter`]) is encoded, so the ids are those of the whole
//! text.

use rayon::prelude::*;

use super::encoder::{output_buffer, short_pairs_for, Encoder, Workspace};
use super::prefault::Prefault;
use super::stream::Cutter;
use crate::error::{Error, Result};
use crate::pool::run_in_pool;
use crate::specials::Specials;

/// `push_utf8`'s error where the buffer cannot grow (out of memory).
const NO_ROOM: usize = usize::MAX;

/// Code points transcoded per round: 64-256 KB of UTF-8.
const ROUND: usize = 1 << 16;

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
        let block = src.as_ptr().add(i).cast::<[u8; BLOCK]>().read_unaligned();
        let ascii = u128::from_ne_bytes(block) & 0x8080_8080_8080_8080_8080_8080_8080_8080 == 0;
        dst.cast::<[u8; BLOCK]>().write_unaligned(block);
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
            let p = src.as_ptr().add(i).cast::<__m128i>();
            let (a, b) = (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)));
            // Every unit below 0x80: the signed saturating pack is then exact.
            let high = _mm_or_si128(a, b);
            let ascii = _mm_movemask_epi8(_mm_cmpeq_epi16(
                _mm_and_si128(high, _mm_set1_epi16(!0x7f)),
                _mm_setzero_si128(),
            )) == 0xffff;
            _mm_storeu_si128(dst.cast(), _mm_packs_epi16(a, b));
            ascii
        }
        #[cfg(not(target_arch = "x86_64"))]
        narrow_portable(&src[i..i + BLOCK], dst)
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
            let p = src.as_ptr().add(i).cast::<__m128i>();
            let (a, b) = (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)));
            let (c, d) = (_mm_loadu_si128(p.add(2)), _mm_loadu_si128(p.add(3)));
            // Every unit below 0x80: the signed saturating packs are then exact.
            let high = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
            let ascii = _mm_movemask_epi8(_mm_cmpeq_epi32(
                _mm_and_si128(high, _mm_set1_epi32(!0x7f)),
                _mm_setzero_si128(),
            )) == 0xffff;
            let narrow = _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
            _mm_storeu_si128(dst.cast(), narrow);
            ascii
        }
        #[cfg(not(target_arch = "x86_64"))]
        narrow_portable(&src[i..i + BLOCK], dst)
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn narrow_portable<T: CodePoint>(block: &[T], dst: *mut u8) -> bool {
    let narrow: [u8; BLOCK] = std::array::from_fn(|k| block[k].get() as u8);
    dst.cast::<[u8; BLOCK]>().write_unaligned(narrow);
    block.iter().all(|c| c.get() < 0x80)
}

/// Appends the UTF-8 of `src` to `buf`; `Err(i)` at the first code point `src[i]`
/// that has none.
fn push_utf8<T: CodePoint>(src: &[T], buf: &mut Vec<u8>) -> std::result::Result<(), usize> {
    // Room for the longest encoding of every code point, so the loop writes through
    // a pointer: ASCII blocks store 16 bytes and advance by 16, or store and then
    // fall back to one code point at a time.
    // The buffer holds what is not encoded yet: a text with no safe cut, whole.
    if buf.try_reserve(4 * src.len() + BLOCK).is_err() {
        return Err(NO_ROOM);
    }
    let start = buf.len();
    let dst = buf.as_mut_ptr();
    let mut len = start;
    let mut i = 0;
    let result = loop {
        // SAFETY: `i + BLOCK <= src.len()`, and `len + BLOCK` bytes are within the
        // capacity: at most 4 bytes were written per code point before `i`.
        while i + BLOCK <= src.len() && unsafe { T::narrow_block(src, i, dst.add(len)) } {
            i += BLOCK;
            len += BLOCK;
        }
        let Some(&c) = src.get(i) else { break Ok(()) };
        let c = c.get();
        let Some(ch) = char::from_u32(c) else {
            break Err(i);
        };
        // SAFETY: as above, with at most 4 bytes for this code point.
        let room = unsafe { std::slice::from_raw_parts_mut(dst.add(len), 4) };
        len += ch.encode_utf8(room).len();
        i += 1;
    };
    // SAFETY: the bytes below `len` are written (UTF-8 of the code points before
    // `i`); on an error they are dropped.
    unsafe { buf.set_len(if result.is_ok() { len } else { start }) };
    result
}

impl Encoder {
    /// The ids of `text`, recognising the special tokens of `allowed`; one of
    /// `disallowed` in the text is an error, as in `encode`. `Ok(None)` when a code
    /// point has no UTF-8 (a lone surrogate): the caller reports it as its runtime does.
    pub fn encode_wide(
        &self,
        text: Wide<'_>,
        allowed: &Specials,
        disallowed: Option<&Specials>,
    ) -> Result<Option<Vec<u32>>> {
        let mut ws = self.lease()?;
        // UTF-8 is at least a byte per code point: a size for the table and the ids.
        ws.short.reserve_pairs(short_pairs_for(text.len()));
        ws.short.populate();
        let mut out = output_buffer(text.len())?;
        ws.prefault = Prefault::new(&out);
        let mut buf = Vec::new();
        let encoded = self.encode_wide_into(text, allowed, disallowed, &mut ws, &mut buf, &mut out);
        ws.prefault = Prefault::default();
        Ok(encoded?.then_some(out))
    }

    /// Each text's ids, in parallel on `num_threads` threads (0: all cores), as
    /// [`Encoder::encode_wide`] gives them for code points and `encode` (with the same
    /// check of `disallowed`) for UTF-8. The error is that of the first text in order
    /// that has one.
    pub fn encode_texts(
        &self,
        texts: &[Text<'_>],
        allowed: &Specials,
        disallowed: Option<&Specials>,
        num_threads: usize,
    ) -> Result<Vec<Option<Vec<u32>>>> {
        let work = || {
            if rayon::current_num_threads() > 1 {
                self.size_shared_for(texts.iter().map(Text::len).sum());
            }
            texts
                .par_iter()
                .map_init(
                    || {
                        let ws = match rayon::current_num_threads() {
                            1 => self.lease(),
                            _ => self.lease_shared(),
                        };
                        if let Ok(ws) = &ws {
                            ws.short.populate();
                        }
                        (ws, Vec::new())
                    },
                    |(ws, buf), text| {
                        // A workspace that could not be made fails each of its texts.
                        let ws = match ws {
                            Ok(ws) => ws,
                            Err(_) => {
                                return Err(Error::out_of_memory::<u8>("a workspace", 1 << 22))
                            }
                        };
                        self.refresh_shared(ws);
                        let mut out = Vec::new();
                        out.try_reserve(text.len() / 3 + 1).map_err(|_| {
                            Error::out_of_memory::<u32>("token ids", text.len() / 3)
                        })?;
                        ws.prefault = Prefault::new(&out);
                        let done = match *text {
                            Text::Utf8(t) => match disallowed.map_or(Ok(()), |d| d.refuse_in(t)) {
                                Err(e) => Err(e),
                                Ok(()) => self.encode_into(t, allowed, ws, &mut out).map(|()| true),
                            },
                            Text::Wide(w) => {
                                self.encode_wide_into(w, allowed, disallowed, ws, buf, &mut out)
                            }
                        };
                        ws.prefault = Prefault::default();
                        Ok(done?.then_some(out))
                    },
                )
                .collect::<Vec<Result<Option<Vec<u32>>>>>()
                .into_iter()
                .collect()
        };
        run_in_pool(num_threads, work)?
    }

    /// Appends the ids of `text` to `out` through `buf` (emptied first); false, with
    /// `out` partly written, when a code point has no UTF-8.
    fn encode_wide_into(
        &self,
        text: Wide<'_>,
        allowed: &Specials,
        disallowed: Option<&Specials>,
        ws: &mut Workspace,
        buf: &mut Vec<u8>,
        out: &mut Vec<u32>,
    ) -> Result<bool> {
        let cutter = Cutter::new(self);
        buf.clear();
        let mut done = 0;
        // Searching for a cut again only once the buffer has doubled keeps a text
        // with no cuts linear.
        let mut next_try = 0;
        loop {
            let end = (done + ROUND).min(text.len());
            match text.push_utf8(done..end, buf) {
                Ok(()) => {}
                Err(NO_ROOM) => {
                    return Err(Error::out_of_memory::<u8>("text", 4 * ROUND + buf.len()))
                }
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
                self.encode_into(utf8, allowed, ws, out)?;
                return Ok(true);
            }
            if buf.len() < next_try {
                continue;
            }
            let cut = cutter.last_cut(utf8, allowed);
            if cut == 0 {
                next_try = 2 * buf.len();
                continue;
            }
            next_try = 0;
            self.encode_into(&utf8[..cut], allowed, ws, out)?;
            buf.drain(..cut);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn encoder(pattern: &str) -> Encoder {
        let vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        let mut merges = Vec::new();
        let mut vocab = vocab;
        let e_acute = [&b"\xc3"[..], b"\xa9"];
        // Merges across most of the test text, so that a cut inside a piece changes ids.
        let pairs: [(&[u8], &[u8]); 16] = [
            (b"t", b"h"),
            (b"th", b"e"),
            (b" ", b"a"),
            (b"\n", b"\n"),
            (e_acute[0], e_acute[1]),
            ("é".as_bytes(), b"t"),
            (b"c", b"a"),
            (b"ca", b"t"),
            (b"i", b"n"),
            (b"d", b"e"),
            (b"n", b"t"),
            (b"e", b"d"),
            (b"l", b"i"),
            (b"n", b"e"),
            (b"a", b"a"),
            (b"aa", b"aa"),
        ];
        for (a, b) in pairs {
            let id = vocab.len() as u32;
            vocab.push((id, [a, b].concat()));
            merges.push((a.to_vec(), b.to_vec()));
        }
        let specials = vec!["<|eot|>".to_string(), "<|eot|><|eot|>".to_string()];
        Encoder::from_merges(vocab, &merges, specials, pattern).unwrap()
    }

    /// Text over several rounds, with cuts, stretches without any, specials across
    /// round ends, and characters of every width.
    fn long_text() -> String {
        let mut text = String::new();
        for i in 0..40_000 {
            text.push_str(match i % 7 {
                0 => "the cat\n",
                1 => "été 🙃 日本\n",
                2 => "  indented line\n",
                3 => "<|eot|><|eot|>",
                4 => "x",
                5 => "\n\n",
                _ => "théâtre<|eot|>",
            });
        }
        text.push_str(&"a".repeat(3 * ROUND));
        text
    }

    #[test]
    fn equals_encode_of_the_utf8_for_every_pattern() {
        let text = long_text();
        let (_, _, ucs4) = wides(&text);
        for pattern in ["gpt2", "cl100k", "o200k", r"\S+|\s+"] {
            let e = encoder(pattern);
            let all = e.specials().clone();
            let want = e.encode(&text, &all).unwrap();
            let got = e.encode_wide(Wide::Ucs4(&ucs4), &all, None).unwrap();
            assert_eq!(got, Some(want), "{pattern}");
            let none = Specials::default();
            let want = e.encode(&text, &none).unwrap();
            let got = e.encode_wide(Wide::Ucs4(&ucs4), &none, None).unwrap();
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
                e.encode_wide(Wide::Latin1(&latin1), &all, None).unwrap(),
                want
            );
            assert_eq!(e.encode_wide(Wide::Ucs2(&ucs2), &all, None).unwrap(), want);
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
        let err = e
            .encode_wide(Wide::Ucs4(&ucs4), &none, Some(&eot))
            .unwrap_err();
        assert!(
            err.to_string().contains("disallowed special token"),
            "{err}"
        );
        let plain: Vec<u32> = "no specials here\n".chars().map(u32::from).collect();
        assert!(e
            .encode_wide(Wide::Ucs4(&plain), &none, Some(&eot))
            .unwrap()
            .is_some());
    }

    #[test]
    fn batches_of_both_forms_equal_encode_of_each() {
        let e = encoder("o200k");
        let all = e.specials().clone();
        let docs: Vec<String> = (0..40)
            .map(|i| match i % 4 {
                0 => format!("the cat {i}\n"),
                1 => "été 🙃<|eot|> the\n".repeat(i * 300),
                2 => long_text().chars().take((i * 7919) % 200_000).collect(),
                _ => String::new(),
            })
            .collect();
        let wides: Vec<Vec<u32>> = docs
            .iter()
            .map(|d| d.chars().map(u32::from).collect())
            .collect();
        let texts: Vec<Text<'_>> = docs
            .iter()
            .zip(&wides)
            .enumerate()
            .map(|(i, (d, w))| match i % 3 {
                0 => Text::Utf8(d),
                _ => Text::Wide(Wide::Ucs4(w)),
            })
            .collect();
        let want: Vec<Option<Vec<u32>>> = docs
            .iter()
            .map(|d| Some(e.encode(d, &all).unwrap()))
            .collect();
        for threads in [1, 2] {
            assert_eq!(e.encode_texts(&texts, &all, None, threads).unwrap(), want);
        }
        // A text without UTF-8 gives None; the error is that of the first text with one
        // (texts[1] holds "<|eot|>", `double` the longer special).
        let mut bad = wides[4].clone();
        bad[3] = 0xDFFF;
        let none = Specials::default();
        let got = e
            .encode_texts(&[texts[0], Text::Wide(Wide::Ucs4(&bad))], &none, None, 2)
            .unwrap();
        assert_eq!(got[1], None);
        let double = Text::Utf8("x<|eot|><|eot|>");
        for (order, named) in [
            ([texts[0], texts[1], double], "<|eot|>"),
            ([texts[0], double, texts[1]], "<|eot|><|eot|>"),
        ] {
            for threads in [1, 2] {
                let err = e
                    .encode_texts(&order, &none, Some(&all), threads)
                    .unwrap_err();
                assert!(
                    matches!(&err, Error::DisallowedSpecial { token } if token == named),
                    "{err}"
                );
            }
        }
    }

    #[test]
    fn a_surrogate_gives_none() {
        let e = encoder("gpt2");
        let mut text: Vec<u32> = "line\n".repeat(ROUND).chars().map(u32::from).collect();
        text[ROUND + 10] = 0xD800;
        let got = e
            .encode_wide(Wide::Ucs4(&text), &Specials::default(), None)
            .unwrap();
        assert_eq!(got, None);
    }
}
