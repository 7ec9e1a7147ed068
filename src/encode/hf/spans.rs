//! Offsets through the front: each id's span in the original text, as `tokenizers`
//! gives it. An added token spans what it matched (with the whitespace `lstrip` and
//! `rstrip` took); the ids of a text part span the original characters their
//! normalized bytes stand for; the prefix space stands for the part's first character.

use super::added::Part;
use super::align::{Align, Aligned};
use super::Front;
use crate::encode::engine::{char_ceil, char_floor, space_ends, token_spans};
use crate::encode::engine::{Chars, Cut, Engine, Span, Spans, Workspace};
use crate::error::{Error, Result};
use crate::specials::Specials;

/// How the bytes of a normalized text stand for the original text.
enum Map<'a> {
    /// Unchanged: each byte is the original's byte `base` further on, standing for
    /// its character.
    Same { original: &'a [u8], base: usize },
    /// Changed: each byte's original range, from `base`.
    Table { align: &'a [Align], base: usize },
}

impl Map<'_> {
    /// The original byte span of normalized bytes `start..end` (not empty).
    fn bytes(&self, start: usize, end: usize) -> Span {
        match *self {
            Map::Same { original, base } => [
                char_floor(original, base + start),
                char_ceil(original, base + end),
            ],
            Map::Table { align, base } => {
                let (s, e) = Aligned::original(align, start, end);
                [base + s, base + e]
            }
        }
    }
}

/// Where `part`, a slice of `whole`, starts in it.
pub(super) fn offset_in(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize)
}

/// Records an added token that matched `value` (its text in the text it was found in)
/// and spans `span` of the original, in characters.
pub(super) fn push_added(id: u32, value: &str, span: Span, out: &mut Vec<u32>, spans: &mut Spans) {
    let (lead, trail) = space_ends(value);
    spans.ends.push((out.len(), lead, trail));
    spans.spans.push(span);
    out.push(id);
}

/// A token of a part encoded with a space before it, in characters of the original
/// from `base` (the part's first character): the space stands for that character,
/// and the spaced text's character k > 0 is the part's k - 1.
fn spaced(base: usize, c: Cut) -> Span {
    let first = if c.start == 0 { 0 } else { c.first - 1 };
    [base + first, base + (c.last - 1).max(1)]
}

/// Normalized bytes `start..end` of a part encoded with a space before it: byte 0 is
/// the space, which stands for the part's first byte; byte k > 0 is the part's k - 1.
fn unspaced(start: usize, end: usize) -> (usize, usize) {
    (start.saturating_sub(1), (end - 1).max(1))
}

impl Front {
    /// [`Front::encode_into`], with each id's character span in `text` pushed onto
    /// `spans`; `chars` counts the characters of `text`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn encode_spans(
        &self,
        engine: &Engine,
        text: &str,
        allowed: &Specials,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
        spans: &mut Spans,
        chars: &mut Chars<'_>,
    ) -> Result<()> {
        if engine.pretok.may_remove_text() {
            return Err(Error::invalid(
                "offsets of a pre-tokenizer that removes text (a Split with behavior \
                 Removed) are not supported",
            ));
        }
        if engine.bpe.chars().is_some() {
            return self.char_spans(engine, text, allowed, ws, out, spans, chars);
        }
        let recognise = |id: u32| allowed.ids.contains(&id);
        let any = !allowed.ids.is_empty();
        let original = text.as_bytes();
        self.raw.split(text, recognise, |part| match part {
            Part::Token(id, r) => {
                let span = chars.span([r.start, r.end]);
                push_added(id, &text[r], span, out, spans);
                Ok(())
            }
            Part::Text(t) => {
                let base = offset_in(text, t);
                let Some(a) = self.normalizer.apply_aligned(t)? else {
                    let map = Map::Same { original, base };
                    return self.normalized_spans(engine, t, &map, any, ws, out, spans, chars);
                };
                let align = &a.align;
                let map = Map::Table { align, base };
                self.normalized_spans(engine, &a.text, &map, any, ws, out, spans, chars)
            }
        })
    }

    /// [`Front::normalized_part`] with spans: `text` is normalized, and `map` says
    /// what of the original its bytes stand for.
    #[allow(clippy::too_many_arguments)]
    fn normalized_spans(
        &self,
        engine: &Engine,
        text: &str,
        map: &Map<'_>,
        specials: bool,
        ws: &mut Workspace,
        out: &mut Vec<u32>,
        spans: &mut Spans,
        chars: &mut Chars<'_>,
    ) -> Result<()> {
        let recognise = |_: u32| specials;
        self.normalized.split(text, recognise, |part| match part {
            Part::Token(id, r) => {
                let span = chars.span(map.bytes(r.start, r.end));
                push_added(id, &text[r], span, out, spans);
                Ok(())
            }
            Part::Text(t) => {
                let at = offset_in(text, t);
                let first = out.len();
                let with_space = self.prefix_space && !t.starts_with(' ');
                let len = match with_space {
                    true => {
                        let spaced_text = format!(" {t}");
                        engine.encode_into(&spaced_text, &self.none, ws, out)?;
                        spaced_text.len()
                    }
                    false => {
                        engine.encode_into(t, &self.none, ws, out)?;
                        t.len()
                    }
                };
                let (bpe, lens, ids) = (&engine.bpe, &engine.lens, &out[first..]);
                let spans = &mut spans.spans;
                match (map, with_space) {
                    (Map::Same { base, .. }, false) => {
                        let b = chars.at(base + at);
                        token_spans(bpe, lens, ids, len, spans, |c| [b + c.first, b + c.last])
                    }
                    (Map::Same { base, .. }, true) => {
                        let b = chars.at(base + at);
                        token_spans(bpe, lens, ids, len, spans, |c| spaced(b, c))
                    }
                    (Map::Table { .. }, false) => token_spans(bpe, lens, ids, len, spans, |c| {
                        chars.span(map.bytes(at + c.start, at + c.end))
                    }),
                    (Map::Table { .. }, true) => token_spans(bpe, lens, ids, len, spans, |c| {
                        let (s, e) = unspaced(c.start, c.end);
                        chars.span(map.bytes(at + s, at + e))
                    }),
                }
            }
        })
    }
}
