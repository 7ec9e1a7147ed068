//! Pre-tokenizers: split text into the pieces that BPE merges never cross.
//!
//! [`Pretokenizer`] is what training and encoding call. Named patterns (gpt2,
//! cl100k, o200k) are served by hand-written scanners that give exactly the pieces
//! the `regex` package gives for their pattern text, 4-58x faster than the regex
//! engine (`benchmarks/RESULTS.md`); any other pattern goes through the generic
//! regex engine, so a custom pattern is never ignored. (To time the regex engine on
//! a named pattern, wrap its text in `(?:...)`.)
//!
//! Each scanner has `piece_end(bytes, start) -> end` for any text and
//! `block_starts` for 64 bytes of plain ASCII at once (`common::scan_blocks` drives
//! both): the pieces are byte ranges of the input, found without allocating. Character classes come from `unicode_tables.rs`, generated
//! from the pinned `regex` package by `scripts/gen_unicode_tables.py`.

mod ascii_block;
mod cl100k;
mod common;
mod gpt2;
mod o200k;
pub mod patterns;
mod regex_engine;
pub mod unicode;
mod unicode_tables;

#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use regex_engine::RegexSplitter;

/// Which engine splits the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gpt2,
    Cl100k,
    O200k,
    Custom,
}

#[derive(Clone, Debug)]
pub struct Pretokenizer {
    kind: Kind,
    pattern: String,
    /// Only for `Kind::Custom`: the scanners need no compiled regex.
    regex: Option<RegexSplitter>,
}

impl Pretokenizer {
    /// `spec` is a name from [`patterns::NAMED`] or a regex. A regex whose text is
    /// exactly a named pattern's gets that pattern's engine.
    pub fn new(spec: &str) -> Result<Self> {
        let text = patterns::NAMED
            .iter()
            .find(|(name, _)| *name == spec)
            .map_or(spec, |(_, text)| *text);
        let kind = match text {
            patterns::GPT2 => Kind::Gpt2,
            patterns::CL100K => Kind::Cl100k,
            patterns::O200K => Kind::O200k,
            _ => Kind::Custom,
        };
        if text.is_empty() {
            return Err(Error::invalid("pre-tokenizer pattern is empty"));
        }
        let regex = match kind {
            Kind::Custom => Some(RegexSplitter::new(text)?),
            _ => None,
        };
        Ok(Self {
            kind,
            pattern: text.to_owned(),
            regex,
        })
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The regex text this pre-tokenizer is exactly equivalent to.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Calls `f(start, end)` with the byte range of each piece of `text`, in order.
    /// With a named pattern the pieces are contiguous and cover `text`; a custom
    /// pattern skips what it does not match, as `regex.findall` does.
    pub fn for_each_span<F: FnMut(usize, usize)>(&self, text: &str, mut f: F) -> Result<()> {
        match (self.kind, &self.regex) {
            (_, Some(regex)) => regex.for_each_piece(text, |p| {
                let start = (p.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
                f(start, start + p.len());
            }),
            (Kind::Gpt2, None) => gpt2::scan(text, f).ok_or_else(|| scanner_bug(text)),
            (Kind::Cl100k, None) => cl100k::scan(text, f).ok_or_else(|| scanner_bug(text)),
            (Kind::O200k, None) => o200k::scan(text, f).ok_or_else(|| scanner_bug(text)),
            (Kind::Custom, None) => Err(Error::invalid("custom pattern without a regex")),
        }
    }

    /// Calls `f` with each piece of `text`, in order.
    #[inline(always)]
    pub fn for_each_piece<'t, F: FnMut(&'t str)>(&self, text: &'t str, mut f: F) -> Result<()> {
        self.for_each_span(text, |start, end| {
            // Every span is on character boundaries (checked by the scanners' scalar
            // path; block boundaries are ASCII bytes), so `get` always succeeds.
            if let Some(piece) = text.get(start..end) {
                f(piece);
            }
        })
    }

    /// All pieces of `text` (for inspection and tests; hot paths use `for_each_piece`).
    pub fn pieces<'t>(&self, text: &'t str) -> Result<Vec<&'t str>> {
        let mut out = Vec::new();
        self.for_each_piece(text, |p| out.push(p))?;
        Ok(out)
    }
}

/// The error for a scanner that broke its promise (a piece that is empty or not on
/// character boundaries): never expected, but reported rather than a panic or a hang.
#[cold]
fn scanner_bug(text: &str) -> Error {
    let head: String = text.chars().take(80).collect();
    Error::Regex(format!(
        "pre-tokenizer scanner failed on a text starting {head:?}: please report this input"
    ))
}
