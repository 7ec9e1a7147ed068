//! Normalizers as HF `tokenizers` applies them to the text between added tokens:
//! Unicode normal forms (through the crate `tokenizers` itself uses, so its Unicode
//! tables are the same), lowercase character by character, replace, prepend.

use std::borrow::Cow;
use std::ops::Range;

use unicode_normalization_alignments::{IsNormalized, UnicodeNormalization};

use super::align::Aligned;
use super::quick::{quick, NormalForm};
use crate::error::{Error, Result};

/// One normalizer, as the Python side describes it.
#[derive(Clone, Debug)]
pub enum NormSpec {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
    Lowercase,
    /// Every match of `pattern` (a regex, or a string when `literal`) becomes `content`.
    Replace {
        pattern: String,
        literal: bool,
        content: String,
    },
    /// `prefix` before a text that is not empty.
    Prepend(String),
}

#[derive(Clone, Debug)]
enum Step {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
    Lowercase,
    Replace {
        regex: Option<fancy_regex::Regex>,
        literal: String,
        content: String,
    },
    Prepend(String),
}

/// A sequence of normalizers (none: the text as it is).
#[derive(Clone, Debug, Default)]
pub(crate) struct Normalizer {
    steps: Vec<Step>,
}

impl Normalizer {
    pub(crate) fn new(specs: &[NormSpec]) -> Result<Self> {
        let steps = specs
            .iter()
            .map(|spec| {
                Ok(match spec {
                    NormSpec::Nfc => Step::Nfc,
                    NormSpec::Nfd => Step::Nfd,
                    NormSpec::Nfkc => Step::Nfkc,
                    NormSpec::Nfkd => Step::Nfkd,
                    NormSpec::Lowercase => Step::Lowercase,
                    NormSpec::Replace {
                        pattern,
                        literal,
                        content,
                    } => {
                        if pattern.is_empty() {
                            return Err(Error::invalid("a Replace's pattern is empty"));
                        }
                        let regex = match literal {
                            true => None,
                            false => Some(replace_regex(pattern)?),
                        };
                        Step::Replace {
                            regex,
                            literal: pattern.clone(),
                            content: content.clone(),
                        }
                    }
                    NormSpec::Prepend(p) => Step::Prepend(p.clone()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { steps })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Whether normalizing the two sides of a line cut apart gives the normalized
    /// whole: the normal forms and lowercase do (a `\n` never composes, and marks
    /// after it reorder only among themselves), a replace or a prepend may not.
    pub(crate) fn keeps_line_cuts(&self) -> bool {
        self.steps.iter().all(|s| {
            matches!(
                s,
                Step::Nfc | Step::Nfd | Step::Nfkc | Step::Nfkd | Step::Lowercase
            )
        })
    }

    /// `(prefix, rep)` where these steps only put `rep` for each space and `prefix`
    /// before a text that is not empty (Llama's old `Prepend("▁")` and `Replace(" ",
    /// "▁")`, Gemma's `Replace`), in either order: each byte of the result then stands
    /// for one character of the text, read forward ([`super::space_map`]).
    pub(crate) fn space_marks(&self) -> Option<(&str, &str)> {
        let (mut prefix, mut rep) = (None, None);
        for step in &self.steps {
            match step {
                Step::Prepend(p) if prefix.is_none() && !p.contains(' ') => prefix = Some(p),
                Step::Replace {
                    regex: None,
                    literal,
                    content,
                } if rep.is_none()
                    && literal == " "
                    && !content.is_empty()
                    && !content.contains(' ') =>
                {
                    rep = Some(content)
                }
                _ => return None,
            }
        }
        Some((prefix.map_or("", String::as_str), rep?.as_str()))
    }

    /// `text` normalized; borrowed where no step changes it (checked quickly: ASCII is
    /// in every normal form).
    pub(crate) fn apply<'t>(&self, text: &'t str) -> Result<Cow<'t, str>> {
        let mut cur: Cow<'t, str> = Cow::Borrowed(text);
        for step in &self.steps {
            if let Some(changed) = step.apply(&cur)? {
                cur = Cow::Owned(changed);
            }
        }
        Ok(cur)
    }
}

/// For each byte of a changed text, the byte range of the original text it comes
/// from: what maps a token's span in normalized text back to the input (offsets).
pub(crate) type ByteMap = Vec<(usize, usize)>;

impl Normalizer {
    /// [`Normalizer::apply`] with the [`ByteMap`] of the result (ranges in `text`), or
    /// `None` where a step changes `text` in a way not mapped here (a normal form that
    /// changes it). Aligned as `tokenizers` aligns them: a replacement's bytes with the
    /// whole match, a prepended string with the first character, a lowercased
    /// character's bytes with that character.
    #[allow(dead_code)] // the offsets' driver reads it
    pub(crate) fn apply_mapped(&self, text: &str) -> Result<Option<(String, ByteMap)>> {
        let mut cur = text.to_owned();
        let mut map: ByteMap = (0..text.len()).map(|i| (i, i + 1)).collect();
        for step in &self.steps {
            let Some(changed) = step.apply(&cur)? else {
                continue;
            };
            let mut next = ByteMap::with_capacity(changed.len());
            // The original range of `cur[s..e]`.
            let span = |s: usize, e: usize| match (map.get(s), map.get(e.max(s + 1) - 1)) {
                (Some(a), Some(b)) => (a.0, b.1),
                _ => (text.len(), text.len()),
            };
            match step {
                Step::Lowercase => {
                    for (i, c) in cur.char_indices() {
                        let n: usize = c.to_lowercase().map(char::len_utf8).sum();
                        next.extend(std::iter::repeat_n(span(i, i + c.len_utf8()), n));
                    }
                }
                Step::Prepend(p) => {
                    let first = cur.chars().next().map_or(0, char::len_utf8);
                    next.extend(std::iter::repeat_n(span(0, first), p.len()));
                    next.extend_from_slice(&map);
                }
                Step::Replace {
                    regex,
                    literal,
                    content,
                } => {
                    let matches: Vec<(usize, usize)> = match regex {
                        Some(r) => r
                            .find_iter(&cur)
                            .map(|m| m.map(|m| (m.start(), m.end())))
                            .collect::<std::result::Result<_, _>>()
                            .map_err(|e| Error::Regex(e.to_string()))?,
                        None => cur
                            .match_indices(literal.as_str())
                            .map(|(s, m)| (s, s + m.len()))
                            .collect(),
                    };
                    let mut last = 0;
                    for (s, e) in matches {
                        next.extend_from_slice(&map[last..s]);
                        next.extend(std::iter::repeat_n(span(s, e), content.len()));
                        last = e;
                    }
                    next.extend_from_slice(&map[last..]);
                }
                Step::Nfc | Step::Nfd | Step::Nfkc | Step::Nfkd => return Ok(None),
            }
            debug_assert_eq!(next.len(), changed.len());
            (cur, map) = (changed, next);
        }
        Ok(Some((cur, map)))
    }
}

/// A `Replace` regex, refused where it may match the empty string: `tokenizers`
/// gives such matches no consistent meaning. With `x*` its `normalize_str` gives
/// "ZaZbZ" for "ab" while `encode` panics (index out of bounds); with `^`, `\b` or
/// `(?=a)` the `encode` of 0.22 puts the replacement in twice at the start of the
/// text, and that of 0.23 panics. No real `tokenizer.json` has one (they replace runs
/// of spaces, control characters and the like).
fn replace_regex(pattern: &str) -> Result<fancy_regex::Regex> {
    let regex = fancy_regex::Regex::new(pattern)
        .map_err(|e| Error::invalid(format!("invalid Replace pattern {pattern:?}: {e}")))?;
    let tree = fancy_regex::Expr::parse_tree(pattern)
        .map_err(|e| Error::invalid(format!("invalid Replace pattern {pattern:?}: {e}")))?;
    if min_len(&tree.expr) == 0 {
        return Err(Error::invalid(format!(
            "the Replace pattern {pattern:?} can match the empty string, which is not supported \
             (tokenizers replaces such matches inconsistently); make it match at least one character"
        )));
    }
    Ok(regex)
}

/// The fewest bytes a match of `expr` can have; 0 for what this does not look into
/// (zero-width assertions, back-references, conditions): erring low only refuses.
fn min_len(expr: &fancy_regex::Expr) -> usize {
    use fancy_regex::{AstNode, Expr};
    match expr {
        Expr::Any { .. } | Expr::GeneralNewline { .. } | Expr::Delegate { .. } => 1,
        Expr::Literal { val, .. } => val.len(),
        Expr::LiteralBytes { bytes } => bytes.len(),
        Expr::Concat(parts) => parts.iter().map(min_len).fold(0, usize::saturating_add),
        Expr::Alt(parts) => parts.iter().map(min_len).min().unwrap_or(0),
        Expr::Group(inner) => min_len(inner),
        Expr::AtomicGroup(inner) => min_len(inner),
        Expr::AstNode(AstNode::AstGroup { inner, .. }, _) => min_len(inner),
        Expr::Repeat { child, lo, .. } => lo.saturating_mul(min_len(child)),
        Expr::Conditional {
            true_branch,
            false_branch,
            ..
        } => min_len(true_branch).min(min_len(false_branch)),
        _ => 0,
    }
}

impl Step {
    /// The text this step makes of `text`, or `None` where it is unchanged.
    fn apply(&self, text: &str) -> Result<Option<String>> {
        let unchanged = |form| quick(text, form) == IsNormalized::Yes;
        Ok(match self {
            Step::Nfc if unchanged(NormalForm::Nfc) => None,
            Step::Nfc => Some(text.nfc().map(|(c, _)| c).collect()),
            Step::Nfd if unchanged(NormalForm::Nfd) => None,
            Step::Nfd => Some(text.nfd().map(|(c, _)| c).collect()),
            Step::Nfkc if unchanged(NormalForm::Nfkc) => None,
            Step::Nfkc => Some(text.nfkc().map(|(c, _)| c).collect()),
            Step::Nfkd if unchanged(NormalForm::Nfkd) => None,
            Step::Nfkd => Some(text.nfkd().map(|(c, _)| c).collect()),
            Step::Lowercase => {
                if text
                    .bytes()
                    .all(|b| !b.is_ascii_uppercase() && b.is_ascii())
                {
                    None
                } else {
                    // Character by character (no final-sigma rule), as `tokenizers`
                    // lowercases.
                    Some(text.chars().flat_map(char::to_lowercase).collect())
                }
            }
            Step::Replace { content, .. } => {
                let matches = self.matches(text)?;
                if matches.is_empty() {
                    return Ok(None);
                }
                let mut out = String::with_capacity(text.len());
                let mut last = 0;
                for m in matches {
                    out.push_str(&text[last..m.start]);
                    out.push_str(content);
                    last = m.end;
                }
                Some(out + &text[last..])
            }
            Step::Prepend(p) if !text.is_empty() => Some(format!("{p}{text}")),
            Step::Prepend(_) => None,
        })
    }
}

/// A normal form or lowercase as `tokenizers` feeds it to `transform`: each character
/// of the result with its change.
type Form = fn(&str) -> Vec<(char, isize)>;

impl Step {
    /// A replace's matches in `text`, in order (none for other steps).
    fn matches(&self, text: &str) -> Result<Vec<Range<usize>>> {
        let Step::Replace { regex, literal, .. } = self else {
            return Ok(Vec::new());
        };
        match regex {
            Some(r) => r
                .find_iter(text)
                .map(|m| {
                    let m = m.map_err(|e| Error::Regex(e.to_string()))?;
                    if m.start() == m.end() {
                        // `replace_regex` refuses what can match empty; were one let
                        // through, an error beats ids `tokenizers` does not give.
                        return Err(Error::invalid(format!(
                            "the Replace pattern {:?} matched the empty string at byte {}",
                            r.as_str(),
                            m.start()
                        )));
                    }
                    Ok(m.start()..m.end())
                })
                .collect(),
            None => Ok(text
                .match_indices(literal.as_str())
                .map(|(s, m)| s..s + m.len())
                .collect()),
        }
    }

    /// This step on `a`, its alignments kept as `tokenizers` keeps them; false where
    /// the step leaves the text as it is (and `a` untouched).
    fn apply_aligned(&self, a: &mut Option<Aligned>, text: &str) -> Result<bool> {
        let cur = a.as_ref().map_or(text, |a| a.text.as_str());
        let unchanged = |form| quick(cur, form) == IsNormalized::Yes;
        let form: Option<Form> = match self {
            Step::Nfc if unchanged(NormalForm::Nfc) => return Ok(false),
            Step::Nfc => Some(|t| t.nfc().collect()),
            Step::Nfd if unchanged(NormalForm::Nfd) => return Ok(false),
            Step::Nfd => Some(|t| t.nfd().collect()),
            Step::Nfkc if unchanged(NormalForm::Nfkc) => return Ok(false),
            Step::Nfkc => Some(|t| t.nfkc().collect()),
            Step::Nfkd if unchanged(NormalForm::Nfkd) => return Ok(false),
            Step::Nfkd => Some(|t| t.nfkd().collect()),
            Step::Lowercase if cur.bytes().all(|b| !b.is_ascii_uppercase() && b.is_ascii()) => {
                return Ok(false)
            }
            Step::Lowercase => Some(|t| {
                t.chars()
                    .flat_map(|c| {
                        c.to_lowercase()
                            .enumerate()
                            .map(|(i, l)| (l, isize::from(i > 0)))
                    })
                    .collect()
            }),
            Step::Prepend(_) if cur.is_empty() => return Ok(false),
            Step::Prepend(_) | Step::Replace { .. } => None,
        };
        let matches = self.matches(cur)?;
        if matches!(self, Step::Replace { .. }) && matches.is_empty() {
            return Ok(false);
        }
        let a = a.get_or_insert_with(|| Aligned::new(text));
        match (self, form) {
            (_, Some(form)) => {
                let dest = form(&a.text);
                a.transform(dest);
            }
            (Step::Prepend(p), None) => a.prepend(p),
            (Step::Replace { content, .. }, None) => a.replace(&matches, content),
            _ => {}
        }
        Ok(true)
    }
}

impl Normalizer {
    /// `text` normalized with its alignments; `None` where no step changes it (each
    /// byte then stands for its own character).
    pub(crate) fn apply_aligned(&self, text: &str) -> Result<Option<Aligned>> {
        let mut aligned = None;
        for step in &self.steps {
            step.apply_aligned(&mut aligned, text)?;
        }
        Ok(aligned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(specs: &[NormSpec], text: &str) -> String {
        Normalizer::new(specs)
            .unwrap()
            .apply(text)
            .unwrap()
            .into_owned()
    }

    #[test]
    fn normal_forms_lowercase_replace_prepend() {
        assert_eq!(norm(&[NormSpec::Nfc], "e\u{301}"), "\u{e9}");
        assert_eq!(norm(&[NormSpec::Nfd], "\u{e9}"), "e\u{301}");
        assert_eq!(norm(&[NormSpec::Nfkc], "\u{fb01}"), "fi");
        assert_eq!(norm(&[NormSpec::Lowercase], "ÀB ΣΑΣ"), "àb σασ");
        let replace = NormSpec::Replace {
            pattern: " ".into(),
            literal: true,
            content: "\u{2581}".into(),
        };
        let prepend = NormSpec::Prepend("\u{2581}".into());
        assert_eq!(
            norm(&[replace, prepend.clone()], "a b"),
            "\u{2581}a\u{2581}b"
        );
        assert_eq!(norm(&[prepend], ""), "");
        let regex = NormSpec::Replace {
            pattern: r"\d+".into(),
            literal: false,
            content: "#".into(),
        };
        assert_eq!(norm(&[regex], "a12b3"), "a#b#");
    }

    #[test]
    fn mapped_bytes_lead_back_to_the_original() {
        let specs = [
            NormSpec::Prepend("\u{2581}".into()),
            NormSpec::Replace {
                pattern: " ".into(),
                literal: true,
                content: "\u{2581}".into(),
            },
            NormSpec::Lowercase,
        ];
        let n = Normalizer::new(&specs).unwrap();
        let (out, map) = n.apply_mapped("A b").unwrap().unwrap();
        assert_eq!(out, "\u{2581}a\u{2581}b");
        assert_eq!(map.len(), out.len());
        assert_eq!(&map[..4], &[(0, 1); 4]);
        assert_eq!(&map[4..], &[(1, 2), (1, 2), (1, 2), (2, 3)]);
        assert!(Normalizer::new(&[NormSpec::Nfkc])
            .unwrap()
            .apply_mapped("\u{fb01}")
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_replace_that_can_match_empty_is_refused() {
        let replace = |pattern: &str| {
            Normalizer::new(&[NormSpec::Replace {
                pattern: pattern.into(),
                literal: false,
                content: "Z".into(),
            }])
        };
        for empty in [
            "x*", "x?", "x|", "^", "$", r"\b", "(?=a)", "(x*)", "(?:a|)", "a{0,3}",
        ] {
            assert!(replace(empty).is_err(), "{empty:?} can match empty");
        }
        for nonempty in [
            "x+",
            " {2,}",
            r"\s+",
            "[\u{0}-\u{1f}]",
            "(ab)|c",
            "(?=a)a",
            r"(a)\1",
            r"\p{L}",
        ] {
            assert!(
                replace(nonempty).is_ok(),
                "{nonempty:?} matches a character"
            );
        }
    }
}
