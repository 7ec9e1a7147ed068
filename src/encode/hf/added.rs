//! Added tokens as HF `tokenizers`' `AddedVocabulary` finds them in a text: the
//! leftmost-longest matches of their contents, each kept or extended by the token's
//! `single_word`, `lstrip` and `rstrip`, special tokens skipped where a call does not
//! recognise them (`tokenizers`' `encode_special_tokens`).

use rustc_hash::FxHashSet;

use crate::error::{Error, Result};
use crate::specials::SpecialMatcher;

/// An added token as `tokenizer.json` gives it.
#[derive(Clone, Debug)]
pub struct AddedToken {
    pub content: String,
    pub id: u32,
    pub special: bool,
    pub single_word: bool,
    pub lstrip: bool,
    pub rstrip: bool,
    pub normalized: bool,
}

impl AddedToken {
    /// Whether what decides a match of this token lies outside it (the text around it).
    pub(crate) fn looks_around(&self) -> bool {
        self.single_word || self.lstrip || self.rstrip
    }
}

/// A part of a text: text, or an added token's id and the range of the text it
/// took (its content, and the whitespace its `lstrip` and `rstrip` took).
pub(crate) enum Part<'t> {
    Text(&'t str),
    Token(u32, std::ops::Range<usize>),
}

/// The added tokens matched in one kind of text (the raw text, or the normalized).
///
/// Matched as special tokens are (leftmost-longest, in time linear in their size):
/// aho-corasick's default DFA walks failure links unmemoized, and one periodic token
/// "Q" * 20_000 took 1.5 s to load, 4x that for twice the length. The matcher of the
/// raw text is also the encoder's special tokens' ([`AddedSet::matcher`]): built once.
#[derive(Clone, Debug, Default)]
pub(crate) struct AddedSet {
    matcher: SpecialMatcher,
    /// By index in the matcher: the token (its content may be normalized).
    tokens: Vec<AddedToken>,
}

impl AddedSet {
    /// Empty contents never match; of tokens of one content (normalized tokens may
    /// normalize to one) the first is kept, the one leftmost-longest matching found.
    pub(crate) fn new(tokens: Vec<AddedToken>) -> Result<Self> {
        let mut seen = FxHashSet::default();
        let tokens: Vec<AddedToken> = tokens
            .into_iter()
            .filter(|t| !t.content.is_empty() && seen.insert(t.content.clone()))
            .collect();
        let contents: Vec<String> = tokens.iter().map(|t| t.content.clone()).collect();
        Ok(Self {
            matcher: SpecialMatcher::new(&contents)?,
            tokens,
        })
    }

    pub(crate) fn tokens(&self) -> &[AddedToken] {
        &self.tokens
    }

    /// The matcher of the tokens' contents, by index in [`AddedSet::tokens`].
    pub(crate) fn matcher(&self) -> &SpecialMatcher {
        &self.matcher
    }

    /// Calls `f` with the parts of `text` in order: the text between tokens (never
    /// empty) and each token's id. `recognise(id)` says whether a special token counts.
    /// Follows `AddedVocabulary::find_matches` step by step, including its quirk of a
    /// match that starts inside the whitespace an `rstrip` token before it took (taken
    /// again; with `lstrip`, nothing), and its failure where such a match ends before
    /// that whitespace does.
    pub(crate) fn split<'t>(
        &self,
        text: &'t str,
        recognise: impl Fn(u32) -> bool,
        mut f: impl FnMut(Part<'t>) -> Result<()>,
    ) -> Result<()> {
        let mut start_offset = 0;
        for (start, stop, index) in self.matcher.find_iter(text.as_bytes()) {
            let token = &self.tokens[index];
            let (mut start, mut stop) = (start, stop);
            if token.special && !recognise(token.id) {
                continue;
            }
            if token.single_word {
                let start_space = start == 0 || !ends_with_word(&text[..start]);
                let stop_space = stop == text.len() || !starts_with_word(&text[stop..]);
                if !start_space || !stop_space {
                    continue;
                }
            }
            if token.lstrip {
                start = start_offset.max(trailing_space_start(&text[..start]));
            }
            if token.rstrip {
                stop += leading_space_len(&text[stop..]);
            }
            if start > stop {
                // An lstrip match inside the whitespace an rstrip token before it took
                // past its end: tokenizers panics on its reversed range ("bad split").
                return Err(Error::invalid(format!(
                    "added token {:?} matched inside the whitespace the added token before it \
                     took (HF tokenizers fails on this text too)",
                    token.content
                )));
            }
            if start_offset < start {
                f(Part::Text(&text[start_offset..start]))?;
            }
            // Empty where an lstrip match lies inside that whitespace: tokenizers drops
            // empty splits, so no token.
            if start < stop {
                f(Part::Token(token.id, start..stop))?;
            }
            start_offset = stop;
        }
        if start_offset < text.len() {
            f(Part::Text(&text[start_offset..]))?;
        }
        Ok(())
    }
}

/// Whether `c` is a word character as the `regex` crate's `\w` (Unicode) has it: what
/// `tokenizers` tests `single_word` with.
fn is_word(c: char) -> bool {
    use std::sync::OnceLock;
    static WORD: OnceLock<Option<fancy_regex::Regex>> = OnceLock::new();
    let word = WORD.get_or_init(|| fancy_regex::Regex::new(r"^\w$").ok());
    let mut buf = [0u8; 4];
    word.as_ref()
        .is_some_and(|w| w.is_match(c.encode_utf8(&mut buf)).unwrap_or(false))
}

fn ends_with_word(text: &str) -> bool {
    text.chars().next_back().is_some_and(is_word)
}

fn starts_with_word(text: &str) -> bool {
    text.chars().next().is_some_and(is_word)
}

/// Where the whitespace that ends `text` starts (`\s*$`; Rust's `char::is_whitespace`
/// is Unicode's White_Space, as `\s` is).
fn trailing_space_start(text: &str) -> usize {
    text.len()
        - text
            .chars()
            .rev()
            .take_while(|c| c.is_whitespace())
            .map(char::len_utf8)
            .sum::<usize>()
}

/// The length of the whitespace that starts `text` (`^\s*`).
fn leading_space_len(text: &str) -> usize {
    text.chars()
        .take_while(|c| c.is_whitespace())
        .map(char::len_utf8)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(content: &str, id: u32) -> AddedToken {
        AddedToken {
            content: content.into(),
            id,
            special: false,
            single_word: false,
            lstrip: false,
            rstrip: false,
            normalized: false,
        }
    }

    fn parts(set: &AddedSet, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        set.split(
            text,
            |_| true,
            |p| {
                out.push(match p {
                    Part::Text(t) => t.to_owned(),
                    Part::Token(id, _) => format!("<{id}>"),
                });
                Ok(())
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn flags_shape_the_matches() {
        let mut word = token("cat", 1);
        word.single_word = true;
        let mut strip = token("<s>", 2);
        (strip.lstrip, strip.rstrip) = (true, true);
        let set = AddedSet::new(vec![word, strip, token("<s>x", 3)]).unwrap();
        assert_eq!(
            parts(&set, "a cat scatter cat"),
            ["a ", "<1>", " scatter ", "<1>"]
        );
        assert_eq!(parts(&set, "a  <s>  b<s>xy"), ["a", "<2>", "b", "<3>", "y"]);
        assert_eq!(parts(&set, ""), Vec::<String>::new());
    }

    #[test]
    fn matches_inside_the_whitespace_an_rstrip_took_are_as_tokenizers_has_them() {
        let strip = |content: &str, id, lstrip, rstrip| AddedToken {
            lstrip,
            rstrip,
            ..token(content, id)
        };
        // tokenizers' ids: [1]; [1]; [1, 88] ("x" is text here); [1, 2, "x"].
        let newline = AddedSet::new(vec![strip("\n", 1, true, true)]).unwrap();
        assert_eq!(parts(&newline, "\n\n"), ["<1>"]);
        let set = AddedSet::new(vec![
            strip("ab", 1, false, true),
            strip("\n", 2, true, false),
        ])
        .unwrap();
        assert_eq!(parts(&set, "ab\n"), ["<1>"]);
        let set = AddedSet::new(vec![
            strip("<m>", 1, false, true),
            strip("  ", 2, true, false),
        ])
        .unwrap();
        assert_eq!(parts(&set, "<m>  x"), ["<1>", "x"]);
        let set = AddedSet::new(vec![strip("ab", 1, false, true), token("  ", 2)]).unwrap();
        assert_eq!(parts(&set, "ab  x"), ["<1>", "<2>", "x"]);
        // Ending before the whitespace taken does: tokenizers panics ("bad split").
        let set = AddedSet::new(vec![
            strip("Hark", 1, false, true),
            strip("  ", 2, true, false),
        ])
        .unwrap();
        let err = set.split("Hark  \n", |_| true, |_| Ok(())).unwrap_err();
        assert!(
            err.to_string().contains("matched inside the whitespace"),
            "{err}"
        );
    }
}
