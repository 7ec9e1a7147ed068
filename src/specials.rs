//! Special tokens: found in text leftmost-longest, so overlapping tokens such as
//! `<|a|>` and `<|a|><|a|>` match the longest whatever order they were given in.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use rustc_hash::FxHashSet;

use crate::error::{Error, Result};

/// The most `total bytes x longest token` of special tokens that aho-corasick may
/// build a DFA for (it does for up to 100 tokens). Its DFA builder follows failure
/// links without memoizing them, so a state can walk a chain as long as its depth:
/// one periodic token `"x" * 100_000` took ~27 s (`"x" * 25_000`: 1.8 s, ~3 ns a
/// step). Under this bound the walk is at most ~256 x 2^18 steps (~0.2 s, reached
/// only by contrived tokens; `<|endoftext|>` and tiktoken's sets stay far below);
/// past it the contiguous NFA, built in linear time, is used: `"x" * 100_000` then
/// builds in a few ms.
const DFA_MAX_WORK: usize = 1 << 18;

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
    ///
    /// Linear in the tokens' total size: duplicates are found with a set (comparing
    /// each token with those before it took ~2 s for 60K tokens, minutes for the
    /// ~200K that a vocab.json without merges may hold), and see [`DFA_MAX_WORK`].
    pub fn new(tokens: &[String]) -> Result<Self> {
        let mut seen = FxHashSet::default();
        seen.reserve(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            if t.is_empty() {
                return Err(Error::invalid(format!("special token #{i} is empty")));
            }
            if !seen.insert(t.as_str()) {
                return Err(Error::invalid(format!(
                    "special token {t:?} is given twice"
                )));
            }
        }
        let automaton =
            if tokens.is_empty() {
                None
            } else {
                Some(build_automaton(tokens).map_err(|e| {
                    Error::invalid(format!("cannot build special-token matcher: {e}"))
                })?)
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

/// The leftmost-longest automaton of `tokens` (not empty): aho-corasick's own choice
/// (a DFA for up to 100 tokens, else a contiguous NFA) where a DFA builds quickly,
/// else a contiguous NFA, or the noncontiguous one it is made from where the
/// contiguous one has too many states.
fn build_automaton(
    tokens: &[String],
) -> std::result::Result<AhoCorasick, aho_corasick::BuildError> {
    let total: usize = tokens.iter().map(String::len).sum();
    let longest = tokens.iter().map(String::len).max().unwrap_or(0);
    let mut builder = AhoCorasickBuilder::new();
    builder.match_kind(MatchKind::LeftmostLongest);
    if total.saturating_mul(longest) <= DFA_MAX_WORK {
        return builder.build(tokens);
    }
    builder
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .build(tokens)
        .or_else(|_| {
            builder
                .kind(Some(AhoCorasickKind::NoncontiguousNFA))
                .build(tokens)
        })
}

/// A set of special tokens with their ids, matched longest first.
#[derive(Clone, Debug, Default)]
pub struct Specials {
    pub matcher: SpecialMatcher,
    pub ids: Vec<u32>,
}

impl Specials {
    pub fn new(tokens: Vec<(String, u32)>) -> Result<Self> {
        let (names, ids): (Vec<String>, Vec<u32>) = tokens.into_iter().unzip();
        Ok(Self {
            matcher: SpecialMatcher::new(&names)?,
            ids,
        })
    }

    pub fn tokens(&self) -> impl Iterator<Item = (&str, u32)> {
        self.matcher
            .tokens()
            .iter()
            .map(String::as_str)
            .zip(self.ids.iter().copied())
    }

    /// An error naming the first of these special tokens that occurs in `text`, if
    /// one does: the check of tiktoken's `disallowed_special`.
    pub fn refuse_in(&self, text: &str) -> Result<()> {
        let mut found = None;
        self.matcher.split(text, |s| {
            if let (None, Segment::Special(i)) = (found, s) {
                found = Some(i);
            }
        });
        match found {
            Some(i) => Err(Error::DisallowedSpecial {
                token: self.matcher.tokens()[i].clone(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::finishes_within;

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
        let err = SpecialMatcher::new(&toks(&["a", "b", "c", "b", "a"])).unwrap_err();
        assert_eq!(err.to_string(), "special token \"b\" is given twice");
    }

    /// Building was quadratic in the number of tokens (~2 s for 60K, opt-level 1:
    /// the duplicate check) and in the length of a periodic token (~27 s for
    /// `"x" * 100_000`: aho-corasick's DFA); both now take milliseconds.
    #[test]
    fn many_or_long_tokens_build_in_linear_time() {
        let many: Vec<String> = (0..60_000).map(|i| format!("<|s{i}|>")).collect();
        let m = finishes_within(2.0, "60K special tokens", move || {
            SpecialMatcher::new(&many).unwrap()
        });
        let mut out = Vec::new();
        m.split("a<|s59999|><|s7|>", |s| out.push(s));
        let expected = [
            Segment::Text("a"),
            Segment::Special(59_999),
            Segment::Special(7),
        ];
        assert_eq!(out, expected);

        let long = vec!["x".repeat(100_000), "xy".to_string()];
        let m = finishes_within(2.0, "a special token of 100 KB", move || {
            SpecialMatcher::new(&long).unwrap()
        });
        let text = format!("{}y{}", "x".repeat(200_001), "x".repeat(99_999));
        let mut out = Vec::new();
        m.split(&text, |s| out.push(s));
        let expected = [
            Segment::Special(0),
            Segment::Special(0),
            Segment::Special(1),
            Segment::Text(&text[200_002..]),
        ];
        assert_eq!(out, expected);
    }
}
