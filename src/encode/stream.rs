//! `encode_iterable`: text arrives in pieces of any size; ids leave as soon as no
//! later text can change them, and exactly as `encode` of the whole text gives them.
//!
//! The text is buffered. A prefix of the buffer is final when it ends at a *cut*:
//!
//! - the start of a special-token match at least `max_special_len` bytes before the
//!   end of the buffer (no later text can make an earlier or longer match win), or
//! - for the named patterns, a line cut (`pretokenize::cuts`: a line end between
//!   two non-whitespace characters, `\n` or `\r\n`) at that same distance from the
//!   end and not inside a special-token match.
//!
//! Everything before the last cut is encoded and emitted; the tail is kept. When no
//! cut is found the next search waits until the buffer has doubled, so searching
//! stays linear overall. All buffers are reserved up front and reused, so iterating
//! allocates nothing once the buffer has reached the size of the longest stretch
//! between cuts.

use std::sync::Arc;

use super::encoder::{Encoder, Workspace};
use crate::error::Result;
use crate::pretokenize::{cuts, Kind};
use crate::specials::Specials;

/// The caches of a stream: small (a 128 KB short table holding 3K pieces, 8K long
/// pieces) and reserved once, since iterating may not allocate.
const STREAM_SHORT_PAIRS: usize = 1 << 11;
const STREAM_LONG_ENTRIES: usize = 1 << 13;

pub struct StreamEncoder {
    encoder: Arc<Encoder>,
    allowed: Specials,
    disallowed: Specials,
    buf: String,
    ws: Workspace,
    out: Vec<u32>,
    next_try: usize,
    cutter: Cutter,
}

/// Finds the last cut of a buffer (see the module docs) for an encoder's pattern and
/// special tokens.
#[derive(Clone, Copy, Debug)]
pub struct Cutter {
    /// The pattern, whose line cuts ([`cuts`]) are cuts here too.
    kind: Kind,
    /// The longest special token of the encoder, allowed or not.
    max_special: usize,
}

impl Cutter {
    pub fn new(encoder: &Encoder) -> Self {
        Self {
            kind: encoder.pretokenizer().kind(),
            max_special: encoder.specials().matcher.max_len(),
        }
    }

    /// The last position before which `buf` is final, recognising the special tokens
    /// of `allowed` (0: none).
    pub fn last_cut(&self, buf: &str, allowed: &Specials) -> usize {
        let bytes = buf.as_bytes();
        let limit = bytes.len().saturating_sub(self.max_special);
        let matches: Vec<(usize, usize, usize)> = allowed.matcher.find_iter(bytes).collect();
        let mut cut = matches
            .iter()
            .map(|&(s, _, _)| s)
            .filter(|&s| s <= limit)
            .max()
            .unwrap_or(0);
        if self.kind != Kind::Custom && cut < limit {
            for i in memchr::memrchr_iter(b'\n', &bytes[cut..limit]) {
                let special_at = |p: usize| matches.iter().any(|&(s, _, _)| s == p);
                let Some(p) = cuts::cut_at_newline(bytes, cut + i, self.kind, special_at) else {
                    continue;
                };
                if p <= limit && !matches.iter().any(|&(s, e, _)| s < p && p < e) {
                    cut = cut.max(p);
                    break;
                }
            }
        }
        cut
    }
}

impl StreamEncoder {
    /// Recognises the special tokens in `allowed`; one of `disallowed` in the text is
    /// an error (as in `encode`).
    /// An error where its fixed workspace cannot be had.
    pub fn new(encoder: Arc<Encoder>, allowed: Specials, disallowed: Specials) -> Result<Self> {
        Ok(Self {
            cutter: Cutter::new(&encoder),
            encoder,
            allowed,
            disallowed,
            buf: String::with_capacity(1 << 16),
            ws: Workspace::fixed(STREAM_SHORT_PAIRS, STREAM_LONG_ENTRIES)?,
            out: Vec::with_capacity(1 << 14),
            next_try: 0,
        })
    }

    /// Adds `text`; returns the ids that became final.
    pub fn feed(&mut self, text: &str) -> Result<&[u32]> {
        self.out.clear();
        self.buf.push_str(text);
        if self.buf.len() < self.next_try {
            return Ok(&self.out);
        }
        self.check_disallowed()?;
        let cut = self.cutter.last_cut(&self.buf, &self.allowed);
        if cut == 0 {
            self.next_try = self.buf.len() * 2;
            return Ok(&self.out);
        }
        self.next_try = 0;
        self.encoder
            .encode_into(&self.buf[..cut], &self.allowed, &mut self.ws, &mut self.out)?;
        self.buf.drain(..cut);
        Ok(&self.out)
    }

    /// Ends the text; returns the ids of what was still buffered.
    pub fn finish(&mut self) -> Result<&[u32]> {
        self.out.clear();
        self.check_disallowed()?;
        self.encoder
            .encode_into(&self.buf, &self.allowed, &mut self.ws, &mut self.out)?;
        self.buf.clear();
        self.next_try = 0;
        Ok(&self.out)
    }

    /// Bytes buffered and not yet encoded.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    fn check_disallowed(&self) -> Result<()> {
        self.disallowed.refuse_in(&self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoder() -> Arc<Encoder> {
        let vocab: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (u32::from(b), vec![b])).collect();
        let specials = vec!["<|eot|>".to_string(), "<|eot|><|eot|>".to_string()];
        Arc::new(Encoder::from_merges(vocab, &[], specials, "gpt2").unwrap())
    }

    #[test]
    fn any_split_gives_encode_of_whole() {
        let e = encoder();
        let text = "Hello there.\nWorld  <|eot|><|eot|> and\n\nmore<|eot|>x\nYes  \n";
        let all = e.specials().clone();
        let expected = e.encode(text, &all).unwrap();
        for step in 1..text.len() {
            let mut s = StreamEncoder::new(e.clone(), all.clone(), Specials::default()).unwrap();
            let mut got = Vec::new();
            let mut i = 0;
            while i < text.len() {
                let mut j = (i + step).min(text.len());
                while !text.is_char_boundary(j) {
                    j += 1;
                }
                got.extend_from_slice(s.feed(&text[i..j]).unwrap());
                i = j;
            }
            got.extend_from_slice(s.finish().unwrap());
            assert_eq!(got, expected, "step {step}");
        }
    }
}
