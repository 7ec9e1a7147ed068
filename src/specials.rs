//! Special tokens: found in text leftmost-longest, so overlapping tokens such as
//! `<|a|>` and `<|a|><|a|>` match the longest whatever order they were given in.

use std::sync::OnceLock;

use aho_corasick::{packed, AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
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

/// Up to this many tokens, a packed searcher is tried (Teddy's fast range).
const PACKED_MAX_TOKENS: usize = 64;

/// One piece of text between special tokens, or one special token (its index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'t> {
    Text(&'t str),
    Special(usize),
}

#[derive(Clone, Debug, Default)]
pub struct SpecialMatcher {
    tokens: Vec<String>,
    /// Leftmost-longest: the matches a text is split at.
    automaton: Option<AhoCorasick>,
    /// For finding tokens in text, where some start with a byte common in text: a
    /// packed (Teddy) searcher, whose SIMD filter looks at each place's first bytes
    /// together. The automaton's own filter looks for the tokens' first bytes alone,
    /// and for GPT-NeoX's runs of spaces that stopped at every space: its added-token
    /// scan took ~12% of a per-document encode of English text.
    packed: Option<Box<packed::Searcher>>,
    /// Every occurrence, overlapping ones included, for [`SpecialMatcher::covers`]:
    /// made on first use (only cutting a text needs it); `None` inside where it
    /// cannot be built, and the tokens are compared one by one instead.
    overlapping: OnceLock<Option<AhoCorasick>>,
    /// The longest token's length in bytes (0 without tokens).
    max_len: usize,
    /// The first bytes of the tokens, a bit each.
    first_bytes: [u64; 4],
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
        let automaton = if tokens.is_empty() {
            None
        } else {
            Some(
                build_automaton(tokens, MatchKind::LeftmostLongest).map_err(|e| {
                    Error::invalid(format!("cannot build special-token matcher: {e}"))
                })?,
            )
        };
        let common_start = tokens.iter().any(|t| {
            let b = t.as_bytes()[0];
            b.is_ascii_alphanumeric() || b.is_ascii_whitespace()
        });
        let packed = match common_start && tokens.len() <= PACKED_MAX_TOKENS {
            true => packed::Config::new()
                .match_kind(packed::MatchKind::LeftmostLongest)
                .builder()
                .extend(tokens)
                .build()
                .map(Box::new),
            false => None,
        };
        let mut first_bytes = [0u64; 4];
        for t in tokens {
            let b = t.as_bytes()[0];
            first_bytes[usize::from(b >> 6)] |= 1 << (b & 63);
        }
        Ok(Self {
            tokens: tokens.to_vec(),
            automaton,
            packed,
            overlapping: OnceLock::new(),
            max_len: tokens.iter().map(String::len).max().unwrap_or(0),
            first_bytes,
        })
    }

    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    pub(crate) fn max_len(&self) -> usize {
        self.max_len
    }

    /// Whether some token starts with the byte `b`.
    #[inline]
    pub(crate) fn is_first_byte(&self, b: u8) -> bool {
        self.first_bytes[usize::from(b >> 6)] & (1 << (b & 63)) != 0
    }

    /// Whether an occurrence of a token begins at `bytes[p]`. Reads at most the
    /// longest token's length from `p`.
    pub(crate) fn starts_at(&self, bytes: &[u8], p: usize) -> bool {
        let (Some(ac), Some(rest)) = (&self.automaton, bytes.get(p..)) else {
            return false;
        };
        // Leftmost: a match that starts anywhere else means none starts at `p`.
        let window = &rest[..rest.len().min(self.max_len)];
        ac.find(window).is_some_and(|m| m.start() == 0)
    }

    /// Whether an occurrence of a token, wherever it begins (overlapping ones
    /// included), holds both `bytes[p - 1]` and `bytes[p]`: where none does, the
    /// leftmost-longest matches of `bytes` are those of `bytes[..p]` and `bytes[p..]`.
    /// Reads the bytes within the longest token's length of `p`: one search of those,
    /// whatever the number of tokens.
    ///
    /// ```text
    /// tokens "<|a|>", "b\nc":  "ab\nc" covers 3 (inside "b\nc"), not 2 or 4
    /// ```
    pub(crate) fn covers(&self, bytes: &[u8], p: usize) -> bool {
        if self.max_len < 2 || p == 0 || p >= bytes.len() {
            return false;
        }
        let lo = p + 1 - self.max_len.min(p + 1);
        let hi = (p + self.max_len - 1).min(bytes.len());
        match self.overlapping() {
            Some(ac) => ac
                .find_overlapping_iter(&bytes[lo..hi])
                .any(|m| lo + m.start() < p && p < lo + m.end()),
            None => self.covers_by_comparing(bytes, p),
        }
    }

    /// [`SpecialMatcher::covers`] by comparing each token at each offset: the
    /// fallback where the overlapping automaton cannot be built, and the tests' oracle.
    fn covers_by_comparing(&self, bytes: &[u8], p: usize) -> bool {
        self.tokens.iter().any(|t| {
            let t = t.as_bytes();
            (1..t.len()).any(|j| p >= j && bytes.get(p - j..p - j + t.len()) == Some(t))
        })
    }

    fn overlapping(&self) -> Option<&AhoCorasick> {
        self.overlapping
            .get_or_init(|| build_automaton(&self.tokens, MatchKind::Standard).ok())
            .as_ref()
    }

    /// Calls `f` with the segments of `text` in order. Empty text segments are skipped.
    pub(crate) fn split<'t, F: FnMut(Segment<'t>)>(&self, text: &'t str, mut f: F) {
        let Some(ac) = &self.automaton else {
            if !text.is_empty() {
                f(Segment::Text(text));
            }
            return;
        };
        match &self.packed {
            Some(p) => split_at(text, p.find_iter(text), f),
            None => split_at(text, ac.find_iter(text), f),
        }
    }

    /// Byte ranges `(start, end, token index)` of every special token in `bytes`, in order.
    pub(crate) fn find_iter<'a>(
        &'a self,
        bytes: &'a [u8],
    ) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
        let (packed, automaton) = match (&self.packed, &self.automaton) {
            (Some(p), _) => (Some(p.find_iter(bytes)), None),
            (None, Some(ac)) => (None, Some(ac.find_iter(bytes))),
            (None, None) => (None, None),
        };
        packed
            .into_iter()
            .flatten()
            .chain(automaton.into_iter().flatten())
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
    }
}

/// `text` as the text between `matches` and the tokens they found, in order.
#[inline]
fn split_at<'t, F: FnMut(Segment<'t>)>(
    text: &'t str,
    matches: impl Iterator<Item = aho_corasick::Match>,
    mut f: F,
) {
    let mut last = 0;
    for m in matches {
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

/// The automaton of `tokens` (not empty) matching as `kind` says: aho-corasick's own
/// choice (a DFA for up to 100 tokens, else a contiguous NFA) where a DFA builds
/// quickly, else a contiguous NFA, or the noncontiguous one it is made from where the
/// contiguous one has too many states.
fn build_automaton(
    tokens: &[String],
    kind: MatchKind,
) -> std::result::Result<AhoCorasick, aho_corasick::BuildError> {
    let total: usize = tokens.iter().map(String::len).sum();
    let longest = tokens.iter().map(String::len).max().unwrap_or(0);
    let mut builder = AhoCorasickBuilder::new();
    builder.match_kind(kind);
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
    pub(crate) matcher: SpecialMatcher,
    pub(crate) ids: Vec<u32>,
}

impl Specials {
    pub(crate) fn new(tokens: Vec<(String, u32)>) -> Result<Self> {
        let (names, ids): (Vec<String>, Vec<u32>) = tokens.into_iter().unzip();
        Ok(Self {
            matcher: SpecialMatcher::new(&names)?,
            ids,
        })
    }

    pub(crate) fn tokens(&self) -> impl Iterator<Item = (&str, u32)> {
        self.matcher
            .tokens()
            .iter()
            .map(String::as_str)
            .zip(self.ids.iter().copied())
    }

    /// An error naming the first of these special tokens that occurs in `text`, if
    /// one does: the check of tiktoken's `disallowed_special`.
    pub(crate) fn refuse_in(&self, text: &str) -> Result<()> {
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
    fn packed_search_finds_what_the_automaton_finds() {
        // GPT-NeoX's added tokens: runs of 2 to 24 spaces, and tokens of other bytes.
        let mut tokens: Vec<String> = (2..=24).map(|n| " ".repeat(n)).collect();
        tokens.extend(toks(&["<|endoftext|>", "|||EMAIL|||", "ab", "abc d"]));
        let m = SpecialMatcher::new(&tokens).unwrap();
        assert!(m.packed.is_some(), "a token starts with a space");
        let mut by_automaton = m.clone();
        by_automaton.packed = None;
        let mut seed = 7u64;
        for len in [0, 1, 2, 5, 15, 16, 17, 31, 33, 64, 200, 1000] {
            for _ in 0..50 {
                let text: String = (0..len)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        [' ', ' ', ' ', 'a', 'b', 'c', 'd', '|', '<', '\n', 'é']
                            [(seed >> 33) as usize % 11]
                    })
                    .collect();
                let (mut a, mut b) = (Vec::new(), Vec::new());
                m.split(&text, |s| a.push(s));
                by_automaton.split(&text, |s| b.push(s));
                assert_eq!(a, b, "{text:?}");
                let found: Vec<_> = m.find_iter(text.as_bytes()).collect();
                let want: Vec<_> = by_automaton.find_iter(text.as_bytes()).collect();
                assert_eq!(found, want, "{text:?}");
            }
        }
        // Tokens that start with rarer bytes keep the automaton's filter.
        assert!(SpecialMatcher::new(&toks(&["<|a|>", "|x"]))
            .unwrap()
            .packed
            .is_none());
    }

    #[test]
    fn rejects_empty_and_duplicates() {
        assert!(SpecialMatcher::new(&toks(&[""])).is_err());
        assert!(SpecialMatcher::new(&toks(&["a", "a"])).is_err());
        let err = SpecialMatcher::new(&toks(&["a", "b", "c", "b", "a"])).unwrap_err();
        assert_eq!(err.to_string(), "special token \"b\" is given twice");
    }

    /// Building is linear in the number of tokens and in the length of a periodic
    /// token: comparing each token with those before it took ~2 s for 60K (opt-level
    /// 1), and aho-corasick's DFA ~27 s for `"x" * 100_000`; both take milliseconds.
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

    /// `covers` and `starts_at` search the bytes near a position once, whatever the
    /// number of tokens; they agree with comparing every token at every offset.
    #[test]
    fn covers_and_starts_at_agree_with_comparing_each_token() {
        let m = SpecialMatcher::new(&toks(&["<|a|>", "<|a|><|a|>", "b\nc", "aa", "a"])).unwrap();
        let mut rng = crate::testutil::Rng(0x1234_5678_9abc_def1);
        let alphabet = b"<|a>b\ncx";
        for _ in 0..2_000 {
            let text: Vec<u8> = (0..rng.below(24))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            for p in 0..=text.len() + 1 {
                assert_eq!(
                    m.covers(&text, p),
                    m.covers_by_comparing(&text, p),
                    "{text:?} {p}"
                );
                let starts = m
                    .tokens()
                    .iter()
                    .any(|t| text.get(p..).is_some_and(|r| r.starts_with(t.as_bytes())));
                assert_eq!(m.starts_at(&text, p), starts, "{text:?} {p}");
            }
        }
        assert!(m.covers(b"ab\nc", 3));
        assert!(!m.covers(b"ab\nc", 1));
        assert!(m.is_first_byte(b'<') && !m.is_first_byte(b'x'));
        let none = SpecialMatcher::default();
        assert!(!none.covers(b"ab", 1) && !none.starts_at(b"ab", 0) && !none.is_first_byte(b'a'));
    }

    /// With 60K tokens, deciding whether a position is covered reads the bytes near it
    /// once (comparing every token there took ~1 ms a position).
    #[test]
    fn covers_is_fast_with_many_tokens() {
        let many: Vec<String> = (0..60_000).map(|i| format!("<|s{i}|>")).collect();
        let m = SpecialMatcher::new(&many).unwrap();
        let text = "x<|s59999|>y\n".repeat(1_000);
        let covered = finishes_within(2.0, "covers with 60K tokens", move || {
            (0..text.len())
                .filter(|&p| m.covers(text.as_bytes(), p))
                .count()
        });
        assert_eq!(covered, 1_000 * 9);
    }
}
