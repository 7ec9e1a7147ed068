//! Special tokens: found in text leftmost-longest, so overlapping tokens such as
//! `<|a|>` and `<|a|><|a|>` match the longest whatever order they were given in.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use crate::error::{Error, Result};

/// One piece of text between special tokens, or one special token (its index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'t> {
    Text(&'t str),
    Special(usize),
}

#[derive(Clone, Debug, Default)]
pub struct SpecialMatcher {
    tokens: Vec<String>,
    automaton: Option<AhoCorasick>,
}

impl SpecialMatcher {
    /// Rejects empty and duplicate tokens: both are always a caller's mistake.
    pub fn new(tokens: &[String]) -> Result<Self> {
        for (i, t) in tokens.iter().enumerate() {
            if t.is_empty() {
                return Err(Error::invalid(format!("special token #{i} is empty")));
            }
            if tokens[..i].contains(t) {
                return Err(Error::invalid(format!(
                    "special token {t:?} is given twice"
                )));
            }
        }
        let automaton = if tokens.is_empty() {
            None
        } else {
            let ac = AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(tokens)
                .map_err(|e| Error::invalid(format!("cannot build special-token matcher: {e}")))?;
            Some(ac)
        };
        Ok(Self {
            tokens: tokens.to_vec(),
            automaton,
        })
    }

    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn max_len(&self) -> usize {
        self.tokens.iter().map(String::len).max().unwrap_or(0)
    }

    /// Calls `f` with the segments of `text` in order. Empty text segments are skipped.
    pub fn split<'t, F: FnMut(Segment<'t>)>(&self, text: &'t str, mut f: F) {
        let Some(ac) = &self.automaton else {
            if !text.is_empty() {
                f(Segment::Text(text));
            }
            return;
        };
        let mut last = 0;
        for m in ac.find_iter(text) {
            if m.start() > last {
                f(Segment::Text(&text[last..m.start()]));
            }
            f(Segment::Special(m.pattern().as_usize()));
            last = m.end();
        }
        if last < text.len() {
            f(Segment::Text(&text[last..]));
        }
    }

    /// Byte ranges `(start, end, token index)` of every special token in `bytes`, in order.
    pub fn find_iter<'a>(
        &'a self,
        bytes: &'a [u8],
    ) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
        self.automaton
            .iter()
            .flat_map(move |ac| ac.find_iter(bytes))
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn longest_match_wins_in_any_order() {
        let m = SpecialMatcher::new(&toks(&["<|a|>", "<|a|><|a|>"])).unwrap();
        let mut out = Vec::new();
        m.split("x<|a|><|a|>y<|a|>", |s| out.push(s));
        assert_eq!(
            out,
            [
                Segment::Text("x"),
                Segment::Special(1),
                Segment::Text("y"),
                Segment::Special(0)
            ]
        );
    }

    #[test]
    fn rejects_empty_and_duplicates() {
        assert!(SpecialMatcher::new(&toks(&[""])).is_err());
        assert!(SpecialMatcher::new(&toks(&["a", "a"])).is_err());
    }
}
