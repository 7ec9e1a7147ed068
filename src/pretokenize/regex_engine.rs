//! The generic engine: any pattern, through fancy-regex (lookaround, possessive
//! quantifiers). It is also the slow reference the scanners are checked against.

use crate::error::{Error, Result};

#[derive(Clone, Debug)]
pub(crate) struct RegexSplitter {
    regex: fancy_regex::Regex,
}

impl RegexSplitter {
    pub(crate) fn new(pattern: &str) -> Result<Self> {
        let regex = fancy_regex::Regex::new(pattern).map_err(|e| {
            Error::invalid(format!("invalid pre-tokenizer pattern {pattern:?}: {e}"))
        })?;
        Ok(Self { regex })
    }

    /// The matches, and the text between them as pieces of their own: a pattern
    /// that does not cover the text never drops any (HF tokenizers' `Split` with
    /// `Isolated` behaves so). Empty matches give no piece.
    ///
    /// Why not `regex.findall`'s skipping: with `\d` as the pattern, "abc 12 def"
    /// encoded as "12" alone, and a vocabulary trained so never saw the rest.
    pub(crate) fn for_each_piece<'t, F: FnMut(&'t str)>(
        &self,
        text: &'t str,
        mut f: F,
    ) -> Result<()> {
        let mut end = 0;
        for m in self.regex.find_iter(text) {
            let m = m.map_err(|e| Error::Regex(e.to_string()))?;
            if m.start() > end {
                f(&text[end..m.start()]);
            }
            if !m.as_str().is_empty() {
                f(m.as_str());
            }
            end = end.max(m.end());
        }
        if end < text.len() {
            f(&text[end..]);
        }
        Ok(())
    }
}

impl RegexSplitter {
    /// Calls `f(start, end)` with each match, empty ones included (HF's `Split` folds
    /// them with the text around).
    pub(crate) fn for_each_match(&self, text: &str, mut f: impl FnMut(usize, usize)) -> Result<()> {
        for m in self.regex.find_iter(text) {
            let m = m.map_err(|e| Error::Regex(e.to_string()))?;
            f(m.start(), m.end());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(pattern: &str, text: &str) -> Vec<String> {
        let mut v = Vec::new();
        RegexSplitter::new(pattern)
            .unwrap()
            .for_each_piece(text, |p| v.push(p.to_owned()))
            .unwrap();
        v
    }

    #[test]
    fn text_between_matches_is_kept_as_pieces() {
        assert_eq!(pieces(r"\d", "abc 12 def"), ["abc ", "1", "2", " def"]);
        assert_eq!(pieces(r"\d+", "12"), ["12"]);
        assert_eq!(pieces(r"x", ""), Vec::<String>::new());
        assert_eq!(pieces(r"x", "abc"), ["abc"]);
        // Empty matches split nothing off on their own.
        assert_eq!(pieces(r"\d*", "a1b"), ["a", "1", "b"]);
        assert_eq!(pieces(r"(?=b)", "abab"), ["a", "ba", "b"]);
    }
}
