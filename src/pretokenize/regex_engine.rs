//! The generic engine: any pattern, through fancy-regex (lookaround, possessive
//! quantifiers). It is also the slow reference the scanners are checked against.

use crate::error::{Error, Result};

#[derive(Clone, Debug)]
pub struct RegexSplitter {
    regex: fancy_regex::Regex,
}

impl RegexSplitter {
    pub fn new(pattern: &str) -> Result<Self> {
        let regex = fancy_regex::Regex::new(pattern).map_err(|e| {
            Error::invalid(format!("invalid pre-tokenizer pattern {pattern:?}: {e}"))
        })?;
        Ok(Self { regex })
    }

    /// Like `regex.findall`: the pieces are the matches; text the pattern does not
    /// match is skipped, exactly as the reference does.
    pub fn for_each_piece<'t, F: FnMut(&'t str)>(&self, text: &'t str, mut f: F) -> Result<()> {
        for m in self.regex.find_iter(text) {
            let m = m.map_err(|e| Error::Regex(e.to_string()))?;
            if !m.as_str().is_empty() {
                f(m.as_str());
            }
        }
        Ok(())
    }
}
