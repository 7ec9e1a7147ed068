//! Pre-tokenizers as HF `tokenizers` chains them: a sequence of steps, each splitting
//! every piece the step before it gave. A step finds matches in a piece (a regex, a
//! literal string, or each numeric character) and, like `tokenizers`'
//! `NormalizedString::split`, turns the matches and the text between them into pieces
//! by its [`Behavior`], after swapping the two when `invert`.
//!
//! `Pretokenizer::from_steps` gives a named pattern's scanner instead where a chain is
//! one such pattern's split (the common case: GPT-2's `ByteLevel`, Llama 3's and OLMo
//! 2's `Split`), so this generic path serves only chains no scanner covers.

use std::sync::Arc;

use super::regex_engine::RegexSplitter;
use crate::error::{Error, Result};

/// A splitter whose pieces cover any text: a named pattern's scanner (the
/// pre-tokenizer implements it; this file does not depend on it).
pub(crate) trait Spans: std::fmt::Debug + Send + Sync {
    fn spans(&self, text: &str, f: &mut dyn FnMut(usize, usize)) -> Result<()>;
}

/// What a step does with its matches and the text between them (`tokenizers`'
/// `SplitDelimiterBehavior`; the matches are the delimiters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    /// Dropped.
    Removed,
    /// Pieces of their own.
    Isolated,
    /// Joined to the piece before.
    MergedWithPrevious,
    /// Joined to the piece after.
    MergedWithNext,
    /// Runs of them joined into one piece.
    Contiguous,
}

impl Behavior {
    /// From `tokenizers`' name of it.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "Removed" => Behavior::Removed,
            "Isolated" => Behavior::Isolated,
            "MergedWithPrevious" => Behavior::MergedWithPrevious,
            "MergedWithNext" => Behavior::MergedWithNext,
            "Contiguous" => Behavior::Contiguous,
            other => {
                return Err(Error::invalid(format!(
                    "unknown split behavior {other:?}; the behaviors are Removed, Isolated, \
                     MergedWithPrevious, MergedWithNext and Contiguous"
                )))
            }
        })
    }
}

/// What a step matches.
#[derive(Clone, Debug)]
pub(crate) enum Matcher {
    /// A regex (a named pattern's scanner where it is one: its pieces are its matches,
    /// and they cover any text).
    Regex(Arc<dyn Spans>),
    /// Regex matches on the generic engine.
    Generic(RegexSplitter),
    /// A literal string, matched left to right without overlaps.
    Literal(String),
    /// Each character Rust's `char::is_numeric` holds (`tokenizers`' `Digits`).
    Numeric,
}

/// One step of a chain.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub(crate) matcher: Matcher,
    pub(crate) behavior: Behavior,
    pub(crate) invert: bool,
}

impl Step {
    /// The matches in `text` and the text between them, `(start, end, is_match)`, in
    /// order and covering `text`, as `tokenizers`' `Pattern::find_matches` gives them.
    fn find_matches(&self, text: &str, out: &mut Vec<(usize, usize, bool)>) -> Result<()> {
        out.clear();
        if text.is_empty() {
            out.push((0, 0, false));
            return Ok(());
        }
        let mut prev = 0;
        let mut push = |start: usize, end: usize, out: &mut Vec<(usize, usize, bool)>| {
            if prev != start {
                out.push((prev, start, false));
            }
            out.push((start, end, true));
            prev = end;
        };
        match &self.matcher {
            Matcher::Regex(p) => p.spans(text, &mut |s, e| push(s, e, out))?,
            Matcher::Generic(r) => r.for_each_match(text, |s, e| push(s, e, out))?,
            Matcher::Literal(lit) => {
                for (s, _) in text.match_indices(lit.as_str()) {
                    push(s, s + lit.len(), out);
                }
            }
            Matcher::Numeric => {
                for (s, c) in text.char_indices().filter(|(_, c)| c.is_numeric()) {
                    push(s, s + c.len_utf8(), out);
                }
            }
        }
        if prev != text.len() {
            out.push((prev, text.len(), false));
        }
        Ok(())
    }

    /// The pieces of `text` (non-empty byte ranges), as `NormalizedString::split` gives
    /// them under this step's behavior.
    fn split(&self, text: &str, pieces: &mut Vec<(usize, usize)>) -> Result<()> {
        let mut found = Vec::new();
        self.find_matches(text, &mut found)?;
        if self.invert {
            for m in &mut found {
                m.2 = !m.2;
            }
        }
        // `(start, end, remove)`, folded exactly as `tokenizers` folds them.
        let mut acc: Vec<(usize, usize, bool)> = Vec::with_capacity(found.len());
        let mut previous = false;
        match self.behavior {
            Behavior::Isolated => acc.extend(found.iter().map(|&(s, e, _)| (s, e, false))),
            Behavior::Removed => acc = found,
            Behavior::Contiguous => {
                for (s, e, is_match) in found {
                    match acc.last_mut() {
                        Some(last) if is_match == previous => last.1 = e,
                        _ => acc.push((s, e, false)),
                    }
                    previous = is_match;
                }
            }
            Behavior::MergedWithPrevious => {
                for (s, e, is_match) in found {
                    match acc.last_mut() {
                        Some(last) if is_match && !previous => last.1 = e,
                        _ => acc.push((s, e, false)),
                    }
                    previous = is_match;
                }
            }
            Behavior::MergedWithNext => {
                for (s, e, is_match) in found.into_iter().rev() {
                    match acc.last_mut() {
                        Some(last) if is_match && !previous => last.0 = s,
                        _ => acc.push((s, e, false)),
                    }
                    previous = is_match;
                }
                acc.reverse();
            }
        }
        pieces.clear();
        pieces.extend(
            acc.into_iter()
                .filter(|&(s, e, remove)| !remove && s < e)
                .map(|(s, e, _)| (s, e)),
        );
        Ok(())
    }
}

/// Calls `f(start, end)` with the byte range of each piece the chain `steps` makes of
/// `text` (offset by `base`), in order.
pub(crate) fn for_each_span(
    steps: &[Step],
    text: &str,
    base: usize,
    f: &mut dyn FnMut(usize, usize),
) -> Result<()> {
    let Some((step, rest)) = steps.split_first() else {
        if !text.is_empty() {
            f(base, base + text.len());
        }
        return Ok(());
    };
    let mut pieces = Vec::new();
    step.split(text, &mut pieces)?;
    for (s, e) in pieces {
        for_each_span(rest, &text[s..e], base + s, f)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(pattern: &str, behavior: Behavior, invert: bool) -> Step {
        Step {
            matcher: Matcher::Literal(pattern.into()),
            behavior,
            invert,
        }
    }

    fn pieces(steps: &[Step], text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_span(steps, text, 0, &mut |s, e| out.push(text[s..e].to_owned())).unwrap();
        out
    }

    /// `tokenizers`' own examples for `NormalizedString::split` on "The-final--countdown".
    #[test]
    fn behaviors_split_as_tokenizers_documents() {
        let text = "The-final--countdown";
        let cases: [(Behavior, &[&str]); 5] = [
            (Behavior::Removed, &["The", "final", "countdown"]),
            (
                Behavior::Isolated,
                &["The", "-", "final", "-", "-", "countdown"],
            ),
            (
                Behavior::MergedWithPrevious,
                &["The-", "final-", "-", "countdown"],
            ),
            (
                Behavior::MergedWithNext,
                &["The", "-final", "-", "-countdown"],
            ),
            (
                Behavior::Contiguous,
                &["The", "-", "final", "--", "countdown"],
            ),
        ];
        for (behavior, want) in cases {
            assert_eq!(
                pieces(&[step("-", behavior, false)], text),
                want,
                "{behavior:?}"
            );
        }
        // Inverted, the dashes are kept and the words are the delimiters.
        assert_eq!(
            pieces(&[step("-", Behavior::Removed, true)], text),
            ["-", "-", "-"]
        );
        let digits = Step {
            matcher: Matcher::Numeric,
            behavior: Behavior::Contiguous,
            invert: false,
        };
        assert_eq!(pieces(&[digits], "ab123c4٣"), ["ab", "123", "c", "4٣"]);
    }
}
