//! Pre-tokenizers: split text into the pieces that BPE merges never cross.
//!
//! [`Pretokenizer`] is what training and encoding call. Named patterns (gpt2,
//! cl100k, o200k) may be served by a hand-written scanner; any other pattern goes
//! through the generic regex engine, so a custom pattern is never ignored.

pub mod patterns;
mod regex_engine;

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
    regex: RegexSplitter,
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
        Ok(Self {
            kind,
            pattern: text.to_owned(),
            regex: RegexSplitter::new(text)?,
        })
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The regex text this pre-tokenizer is exactly equivalent to.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Calls `f` with each piece of `text`, in order; the pieces concatenate to `text`.
    pub fn for_each_piece<'t, F: FnMut(&'t str)>(&self, text: &'t str, f: F) -> Result<()> {
        self.regex.for_each_piece(text, f)
    }

    /// All pieces of `text` (for inspection and tests; hot paths use `for_each_piece`).
    pub fn pieces<'t>(&self, text: &'t str) -> Result<Vec<&'t str>> {
        let mut out = Vec::new();
        self.for_each_piece(text, |p| out.push(p))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt2_splits_like_cs336() {
        let p = Pretokenizer::new("gpt2").unwrap();
        assert_eq!(p.kind(), Kind::Gpt2);
        assert_eq!(
            p.pieces("some text that i'll pre-tokenize  x\n\n").unwrap(),
            ["some", " text", " that", " i", "'ll", " pre", "-", "tokenize", " ", " x", "\n\n"]
        );
    }

    #[test]
    fn custom_pattern_is_used() {
        let p = Pretokenizer::new(r"\S+|\s+").unwrap();
        assert_eq!(p.kind(), Kind::Custom);
        assert_eq!(p.pieces("ab  cd").unwrap(), ["ab", "  ", "cd"]);
    }

    #[test]
    fn bad_pattern_is_an_error() {
        assert!(Pretokenizer::new("(").is_err());
        assert!(Pretokenizer::new("").is_err());
    }
}
