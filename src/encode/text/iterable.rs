//! `encode_iterable`: text arrives in pieces of any size; ids leave as soon as no
//! later text can change them ([`FinalPrefix`]), exactly as `encode` of the whole text
//! gives them. All buffers are reserved up front and reused, so iterating allocates
//! nothing once the buffer has reached the size of the longest stretch between cuts.

use std::sync::Arc;

use super::final_prefix::FinalPrefix;
use crate::encode::encoder::Encoder;
use crate::encode::engine::Workspace;
use crate::error::Result;
use crate::specials::Specials;

/// The caches of an iterable's encoder: small (a 128 KB short table holding 3K
/// pieces, 8K long pieces) and reserved once, since iterating may not allocate.
const ITERABLE_SHORT_LINES: usize = 1 << 11;
const ITERABLE_LONG_ENTRIES: usize = 1 << 13;

pub struct StreamEncoder {
    encoder: Arc<Encoder>,
    allowed: Specials,
    disallowed: Specials,
    buf: String,
    ws: Workspace,
    out: Vec<u32>,
    cut: FinalPrefix,
}

impl StreamEncoder {
    /// Recognises the special tokens in `allowed`; one of `disallowed` in the text is
    /// an error (as in `encode`).
    /// An error where its fixed workspace cannot be had.
    pub fn new(encoder: Arc<Encoder>, allowed: Specials, disallowed: Specials) -> Result<Self> {
        Ok(Self {
            cut: FinalPrefix::new(&encoder),
            encoder,
            allowed,
            disallowed,
            buf: String::with_capacity(1 << 16),
            ws: Workspace::fixed(ITERABLE_SHORT_LINES, ITERABLE_LONG_ENTRIES)?,
            out: Vec::with_capacity(1 << 14),
        })
    }

    /// Adds `text`; returns the ids that became final.
    pub fn feed(&mut self, text: &str) -> Result<&[u32]> {
        self.out.clear();
        self.buf.push_str(text);
        if !self.cut.due(self.buf.len()) {
            return Ok(&self.out);
        }
        self.check_disallowed()?;
        if let Some(end) = self.cut.take(&self.buf, &self.allowed) {
            self.encoder.encode_into(
                &self.buf[..end],
                &self.allowed,
                &mut self.ws,
                &mut self.out,
            )?;
            self.buf.drain(..end);
        }
        Ok(&self.out)
    }

    /// Ends the text; returns the ids of what was still buffered.
    pub fn finish(&mut self) -> Result<&[u32]> {
        self.out.clear();
        self.check_disallowed()?;
        self.encoder
            .encode_into(&self.buf, &self.allowed, &mut self.ws, &mut self.out)?;
        self.buf.clear();
        self.cut = FinalPrefix::new(&self.encoder);
        Ok(&self.out)
    }

    /// The ids the last `feed` or `finish` gave.
    pub fn ids(&self) -> &[u32] {
        &self.out
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
